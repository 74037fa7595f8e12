"""The offline teacher's narration of its calls."""

from __future__ import annotations

from tests.fixtures.parcel import Parcel


def test_the_teacher_says_what_a_call_is_for_with_a_verb() -> None:
    """A tool described by a noun phrase takes its name's verb ("list episodes of ..."), never
    "to episodes of a series"; a description that opens with a verb keeps it, in the base form."""
    from agentomnia.trajectories.agents import _purpose

    assert (
        _purpose("Episodes of a series by season", "list_episodes") == "list episodes of a series by season"
    )
    assert _purpose("Returns pet inventories by status", "getInventory") == "return pet inventories by status"
    assert _purpose("End playback.", "stop_stream") == "end playback"
    assert _purpose("Weather for a city", "weather_now") == "look up weather for a city"
    # a verb no list holds is still a verb when its object follows: never "issue sanction a player"
    assert _purpose("Sanction a player", "issue_sanction") == "sanction a player"
    assert _purpose("Point a player's server at another server", "set_player_server").startswith("point a")
    assert _purpose("Credit or debit a player's currency", "grant_currency").startswith("credit or debit")
    # a word that is a noun as often, with no object after it, names what the tool's own verb does
    assert _purpose("Rate plans of a room type", "get_rate_plans") == "get rate plans of a room type"
    assert _purpose("Record a payment", "add_payment") == "record a payment"
    # a plural noun before a preposition is no verb: never "to show by artist, city and date"
    assert (
        _purpose("Shows by artist, city and date.", "search_concerts")
        == "search shows by artist, city and date"
    )
    assert _purpose("Search by name.", "search_pets") == "search by name"
    # a verb the tool's own verb means the same as stays the verb: never "update change fields of ..."
    assert _purpose("Change fields of a deviation.", "update_deviation") == "change fields of a deviation"


def test_the_teacher_asks_for_a_missing_detail_as_a_person_would_and_the_user_hears_it() -> None:
    """A record is asked for as which one, a date as the field it goes into, anything else as what it
    should be ("could you tell me the started at?" before); the scripted user recognises each question
    as being about that detail, a seed's camelCase id included, and not a word inside another."""
    from agentomnia.trajectories.agents import detail_question
    from agentomnia.trajectories.users import _asks_about

    cases = {
        "customer_id": "Before I continue, which customer is it?",
        "petId": "Before I continue, which pet is it?",
        "started_at": 'Before I continue, what date should I use for "started at"?',
        "visit_date": "Before I continue, what is the visit date?",
        "due": "Before I continue, when is it due?",
        "priority": "Before I continue, what should the priority be?",
        "raised_by": "Before I continue, who raised it?",
    }
    for key, question in cases.items():
        assert detail_question(key) == question
        assert _asks_about(question, key)
    assert not _asks_about("Before I continue, which carpet is it?", "pet_id")
    assert not _asks_about("Before I continue, which customer is it?", "priority")


def test_the_teacher_works_out_a_total_over_the_records_it_changed(parcel: Parcel) -> None:
    """A program task that asks for the total amount of the claims it approved gets that total worked
    out from the amounts the run read, with the working shown ("Total: 120 + 80.5 = 200.5"), and the
    grounding check follows the working step by step; a step count the run states of itself needs no
    tool result to hold it."""
    from agentomnia.envs.values import written_number
    from agentomnia.tasks.models import Check, RubricItem, Task
    from agentomnia.trajectories import generate_trajectories
    from agentomnia.trajectories.evidence import Evidence, ungrounded_numbers

    session = parcel.sandbox.open(parcel.bundle, parcel.s0)
    try:
        items = session.call("list_open_claims", {}).data["items"]
        approvable = [i for i in items if session.call("approve_claim", {"claim_id": i["claim_id"]}).ok]
    finally:
        session.close()
    # a rule that picks some claims, not all: at least the two largest that can be approved
    level = sorted({i["amount"] for i in approvable}, reverse=True)[1]
    session = parcel.sandbox.open(parcel.bundle, parcel.s0)
    try:
        big = [i for i in items if i["amount"] >= level]
        done = [i for i in big if session.call("approve_claim", {"claim_id": i["claim_id"]}).ok]
    finally:
        session.close()
    assert 2 <= len(done) < len(items)
    changed = sorted(i["claim_id"] for i in done)
    total = round(sum(i["amount"] for i in done), 2)
    program = (
        "def solve(call):\n"
        "    items = call('list_open_claims')['data']['items']\n"
        "    changed, total = [], 0\n"
        "    for item in items:\n"
        f"        if item['amount'] >= {level} and call('approve_claim', claim_id=item['claim_id'])['ok']:\n"
        "            changed.append(item['claim_id'])\n"
        "            total += item['amount']\n"
        "    return {'changed': sorted(changed), 'count': len(changed), 'total': round(total, 2)}\n"
    )
    task = Task(
        env_id=parcel.env_id, kind="program",
        coordinate=parcel.coordinate(["code_programmatic", "state_management"], ["structured_information"]),
        init_config=parcel.s0,
        query=f"Approve every open claim of {level} or more that can be approved. Tell me which ones you "
              "changed, how many, and their total amount, as JSON with \"changed\", \"count\" and \"total\".",
        reference_program=program,
        expected_answer={"changed": changed, "count": len(changed), "total": total},
        rubric=(
            RubricItem(id="T1", text="Names the claims approved.", scope="task",
                       check=Check(kind="answer_equals", field="changed", value=changed)),
            RubricItem(id="T2", text="Gives their total amount.", scope="task",
                       check=Check(kind="answer_equals", field="total", value=total, tolerance=0.01)),
        ),
        internal_spec={"key": "claim_id", "total_attr": "amount"},
    )  # fmt: skip
    (run,) = generate_trajectories([task], {parcel.env_id: parcel.bundle}, parcel.sandbox, guidance=True)
    final = str(run.messages[-1]["content"])
    assert run.verified, (run.verification, final)
    working = next((line for line in final.splitlines() if line.startswith("Total: ")), final)
    assert working.count(" + ") == len(done) - 1 and working.endswith(f" {written_number(total)}."), working
    # the checker: worked steps hold, a number that skips a step does not, a step count is known
    evidence = Evidence.from_tools([])
    evidence.add_text("61 58 60")
    assert ungrounded_numbers([61, 58, 119, 60, 179], evidence) == []
    assert ungrounded_numbers([61, 58, 60, 179], evidence) == [179]
    assert ungrounded_numbers([11], evidence, known=(11, 1)) == []


def test_an_aggregate_over_what_was_looked_at_adds_up_the_records_the_rule_picks(parcel: Parcel) -> None:
    """ "The total and average coins across all top-ups whose method is google play": the records the
    request's rule picks out of the run's listing, not the one record it changed."""
    import json

    from agentomnia.tasks.models import Check, RubricItem, Task
    from agentomnia.trajectories.agents import OfflineTeacher

    items = [
        {"topup_id": "TOP-001", "method": "google_play", "coins": 1200},
        {"topup_id": "TOP-002", "method": "card", "coins": 900},
        {"topup_id": "TOP-003", "method": "google_play", "coins": 3500},
        {"topup_id": "TOP-004", "method": "google_play", "coins": None},
    ]
    state = {"topups": {i["topup_id"]: i for i in items}}
    task = Task(
        env_id=parcel.env_id, kind="program", init_config=state,
        coordinate=parcel.coordinate(["data_analysis"], ["structured_information"]),
        query='The total and average coins of the google play top-ups ("total", "average"), and mark the '
              'largest completed ("changed", "considered").',
        expected_answer={"changed": ["TOP-003"], "considered": 2, "total": 4700, "average": 2350.0},
        rubric=(RubricItem(id="T1", text="Gives the total.", scope="task",
                           check=Check(kind="answer_equals", field="total", value=4700)),),
        internal_spec={"key": "topup_id", "total_attr": "coins",
                       "predicate": {"attr": "method", "op": "==", "value": "google_play", "kind": "enum"}},
    )  # fmt: skip
    teacher = OfflineTeacher(task, [])
    messages = [
        {"role": "user", "content": task.query},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"ok": True, "data": {"items": items}})},
    ]
    assert teacher._considered(messages) == ["TOP-001", "TOP-003"]
    assert teacher._worked("total", {"changed": ["TOP-003"]}, messages) == (
        4700,
        "Total: 1200 + 3500 = 4700.",
    )
    value, working = teacher._worked("average", {}, messages)  # type: ignore[misc]
    assert value == 2350 and working.endswith("4700 / 2 = 2350."), working
    # with the total worked out already, the average is one step from it
    assert teacher._worked("average", {"total": 4700}, messages) == (2350, "Average: 4700 / 2 = 2350.")


def test_a_guided_total_the_observations_support_is_still_worked_out(parcel: Parcel) -> None:
    """A total over the records the answer changed is said with its working ("Total: 1200 + 3500 =
    4700."), even where the figure could be read off what the run saw, so that the reward audit can
    follow where it came from; bare only where no working shows it."""
    import json

    from agentomnia.tasks.models import Check, RubricItem, Task
    from agentomnia.trajectories.agents import OfflineTeacher
    from agentomnia.trajectories.evidence import Evidence
    from agentomnia.trajectories.guidance import Guidance

    items = [
        {"topup_id": "TOP-001", "coins": 1200, "status": "pending"},
        {"topup_id": "TOP-003", "coins": 3500, "status": "pending"},
    ]
    task = Task(
        env_id=parcel.env_id, kind="program", init_config={"topups": {i["topup_id"]: i for i in items}},
        coordinate=parcel.coordinate(["data_analysis"], ["structured_information"]),
        query='Complete both top-ups and tell me which ones and their total coins ("changed", "total").',
        expected_answer={"changed": ["TOP-001", "TOP-003"], "total": 4700},
        rubric=(RubricItem(id="T1", text="Gives the total.", scope="task",
                           check=Check(kind="answer_equals", field="total", value=4700)),),
        internal_spec={"key": "topup_id", "total_attr": "coins"},
    )  # fmt: skip
    guidance = Guidance(
        kind="outcome", answer_fields=("changed", "total"), target_answer=dict(task.expected_answer)
    )
    seen = json.dumps({"ok": True, "data": {"items": items}})
    messages = [
        {"role": "user", "content": task.query},
        {"role": "tool", "tool_call_id": "c1", "content": seen},
    ]
    evidence = Evidence.from_tools([])
    evidence.add_text(task.query)
    evidence.add_observation(seen)
    assert evidence.supports(4700)  # the sum of two figures seen counts as seen
    final = OfflineTeacher(task, [], guidance)._final(messages, evidence)
    assert "Total: 1200 + 3500 = 4700." in final.splitlines(), final
    # where the records were never seen, the guided figure the evidence supports is said as it is
    bare = OfflineTeacher(task, [], guidance)._final(messages[:1], evidence)
    assert '"total": 4700' in bare and " + " not in bare, bare


def test_the_user_gives_a_withheld_figure_as_the_request_writes_figures() -> None:
    """ "The price is 603,241.", as the request wrote its other figures (never "603241"); a code
    stays as written ("The zip code is 90210.")."""
    from agentomnia.trajectories.evidence import numbers_in
    from agentomnia.trajectories.users import _detail

    assert _detail("price", 603241) == "The price is 603,241."
    assert _detail("weight_kg", 1250.5) == "The weight is 1,250.5 kg."
    assert _detail("zip_code", 90210) == "The zip code is 90210."
    assert numbers_in(_detail("price", 603241)) == [603241.0]
    # a count of things is said with its noun, and a correction names what was said before
    assert _detail("planned_stops", 63) == "63 planned stops."
    assert _detail("stars", 1) == "1 star."
    assert _detail("tags", "fragile") == "Tags: fragile."
    assert _detail("weight_kg", 72.7, 70) == "The weight is 72.7 kg, not 70 kg."
    # free text is quoted as the request quotes it, so its own full stop ends nothing twice
    assert (
        _detail("description", "Kerb rash on the left wheel.")
        == "The description is 'Kerb rash on the left wheel.'"
    )
    assert _detail("status", "approved") == "The status is approved."
    # a date a thing is due on is said as due: never "The response due is April 2, 2026."
    assert _detail("response_due", "2026-04-02") == "The response is due April 2, 2026."
    assert _detail("next_due", "2026-04-02") == "Next due: April 2, 2026."
    assert _detail("hs_code", "1038.11.22") == "The HS code is 1038.11.22."
