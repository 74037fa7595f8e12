"""Sentence frames of DAG requests: records named once and then "that X", plain answer formats."""

from __future__ import annotations

import random
from typing import Any

from agentomnia.envs.naming import article
from agentomnia.envs.spec import AttributeSpec, EntitySpec
from agentomnia.tasks.dag.describe import words
from agentomnia.tasks.dag.phrasing import (
    answer_format,
    ask,
    count_question,
    flag_question,
    is_handle,
    key_words,
    possessive,
)


def test_a_short_handle_takes_a_possessive_and_a_long_phrase_does_not() -> None:
    assert possessive("that order", "customer") == "that order's customer"
    assert possessive("the new invoice", "vendor") == "the new invoice's vendor"
    long = "whichever of that artist's tracks has the highest plays"
    assert not is_handle(long)
    assert possessive(long, "album") == f"the album of {long}"


def test_counts_are_asked_as_questions() -> None:
    assert count_question("the tracks with status active") == "how many tracks with status active there are"
    assert count_question("the tracks that are not released") == "how many tracks are not released"
    assert count_question("the employees of that timesheet's employee") == (
        "how many employees of that timesheet's employee there are"
    )
    assert count_question("the tracks whose genre is jazz") == "how many tracks there are whose genre is jazz"
    assert count_question("the author queries for that correction's job that are not answered") == (
        "how many author queries for that correction's job are not answered"
    )
    assert count_question("that artist's tracks") == "how many tracks that artist has"
    assert count_question("all tracks") == "how many tracks there are in total"


def test_a_yes_no_field_is_asked_as_whether() -> None:
    assert flag_question("that picker", "active") == "whether that picker is active"
    assert flag_question("the new user", "is_verified") == "whether the new user is verified"
    assert flag_question("that account", "has_overdraft") == "whether that account has overdraft"
    assert flag_question("that request", "issue_resolved") == "whether that request's issue is resolved"
    assert flag_question("that listing", "pets_allowed") == "whether that listing's pets are allowed"
    assert (
        flag_question("that invoice", "fee_paid") == "whether that invoice's fee is paid"
    )  # "paid" is no "-ed"
    assert flag_question("that plan", "auto_renew") == "whether that plan has auto renew turned on"
    # a flag named by where or for whom a record is: never "has for everyone turned on"
    assert flag_question("that message", "for_everyone") == "whether that message is for everyone"
    assert flag_question("that item", "in_stock") == "whether that item is in stock"
    # a question frame, so it is never asked as "the active of ..."
    for seed in range(20):
        asked = ask(random.Random(seed), flag_question("that picker", "active"), "active")
        assert "the active" not in asked and '"active"' in asked


def test_every_ask_names_its_field_in_double_quotes() -> None:
    for seed in range(30):
        rng = random.Random(seed)
        assert '"track_count"' in ask(rng, "how many tracks that artist has", "track_count")
        assert '"duration"' in ask(rng, "that track's duration", "duration")
        # a question is never forced into a noun frame ("I need whether ...")
        assert not ask(rng, "whether it is late", "late").startswith(("I need whether", "Put whether"))


def test_the_format_sentence_lists_every_field_once() -> None:
    text = answer_format(random.Random(1), ["a", "b", "c"])
    assert all(text.count(f'"{k}"') == 1 for k in "abc")
    assert answer_format(random.Random(1), ["only"]).count('"only"') == 1


def test_field_names_and_articles() -> None:
    assert key_words("work order", "count") == "work_order_count"
    assert key_words("K-12 class") == "k_12_class"
    assert article("invoice") == "an invoice" and article("budget") == "a budget"
    assert (
        article("alarm panel") == "an alarm panel"
        and article("user") == "a user"
        and article("hour") == "an hour"
    )
    assert article("information gathering") == "an information gathering" and article("unit") == "a unit"
    assert article("SLA report") == "an SLA report" and article("KPI") == "a KPI"
    # a one-letter prefix is hyphenated as people write it, and only there
    assert words("e_filing") == "e-filing" and article(words("e_filing")) == "an e-filing"
    assert words("grade_e_count") == "grade e count" and words("ebook_id") == "ebook ID"
    # abbreviations a field name uses are written out: "the cut version with version number 4"
    assert words("version_no") == "version number" and words("num_guests") == "number of guests"
    assert words("order_qty") == "order quantity" and words("po_num") == "PO number"
    assert words("no_show") == "no show" and words("yes_no") == "yes no"
    assert words("desc") == "desc"  # a sort order's value as often as a description


def test_a_chain_that_comes_back_to_a_named_record_calls_it_by_its_handle() -> None:
    """plan -> its only subscriber account -> that account's plan is the plan already named: "that plan"."""
    from types import SimpleNamespace

    from agentomnia.envs.spec import EntitySpec
    from agentomnia.tasks.dag.generate import Executed, Generated, Generator

    gen = Generator.__new__(Generator)
    gen.out = Generated(clauses=["Look at plan PLA-001 (Ad-Free Plus)."])
    plan = Executed(
        0,
        SimpleNamespace(op="get", entity="plan", binding={}),
        {},
        {},
        {},
        ("plan", "PLA-001"),
        "plan PLA-001 (Ad-Free Plus)",
        "that plan",
    )
    gen.out.calls.append(plan)
    gen._marks = {0: (1, "plan")}
    gen.out.clauses.append("That plan's only subscriber account can be marked cancelled now.")
    entity = EntitySpec(
        name="plan", table="plans", key="plan_id", attributes=(), description="A plan.", id_prefix="PLA"
    )
    assert gen._named(entity, "PLA-001") == "that plan"
    assert gen._named(entity, "PLA-002") is None  # another plan keeps its own description
    gen.out.clauses.append("Take the plan named 'Family'.")  # another plan was named since
    assert gen._named(entity, "PLA-001") is None


def test_a_domain_operation_is_asked_for_as_itself() -> None:
    """'End playback' is not 'update its device': a tool that does more than edit fields is asked for by
    its own description, with the record put where the description names one."""
    from types import SimpleNamespace

    from agentomnia.tasks.dag.generate import operation_clause

    def clause(name: str, description: str, entity: str, phrase: str) -> str | None:
        return operation_clause(
            SimpleNamespace(name=name, description=description),  # type: ignore[arg-type]
            SimpleNamespace(name=entity),  # type: ignore[arg-type]
            phrase,
        )

    assert clause(
        "pay_citation", "Pay a citation. Also sets the status to paid.", "citation", "citation CIT-3"
    ) == ("Pay citation CIT-3")
    assert (
        clause("check_in_attendee", "Check an attendee in.", "attendee", "that attendee")
        == "Check that attendee in"
    )
    assert (
        clause(
            "decide_package_review",
            "Approve a pending package review and record when.",
            "package_review",
            "it",
        )
        == "Approve it and record when"
    )
    assert (
        clause("stop_stream", "End playback.", "stream_session", "stream STR-7")
        == "end playback for stream STR-7"
    )
    assert clause("update_plan_item", "Change fields of a plan item.", "plan_item", "that plan item") is None
    # a long record comes after the verb's particle; a short one before it
    long = "whichever of the mute sanctions has the highest duration"
    assert clause("end_sanction", "End a sanction early.", "sanction", long) == f"End early {long}"
    assert clause("end_sanction", "End a sanction early.", "sanction", "that sanction") == (
        "End that sanction early"
    )
    # an aside is left out, and the period of "e.g." ends no clause (it had read "... that automation's
    # scene (e.g, and make sure its icon is 'lock'.")
    assert (
        clause(
            "disable_scene_automations",
            "Disable every enabled automation that runs a scene (e.g. while on holiday).",
            "scene",
            "that automation's scene",
        )
        == "Disable every enabled automation that runs that automation's scene"
    )
    assert (
        clause("quarantine_lot", "Take a lot out of dispensing.", "inventory_lot", "that fill's lot")
        == "Take that fill's lot out of dispensing"  # was "Take a lot out of dispensing for that fill's lot"
    )
    assert clause(
        "withdraw_approval",
        "Withdraw a supplier's approval and cancel its orders that are not yet confirmed.",
        "supplier",
        "that supplier quote's supplier",
    ) == (
        "Withdraw the approval of that supplier quote's supplier and cancel its orders that are not yet confirmed"
    )  # was "Withdraw that supplier quote's supplier's approval and ..."
    assert (
        clause("withdraw_approval", "Withdraw a supplier's approval.", "supplier", "supplier SUP-3")
        == "Withdraw supplier SUP-3's approval"
    )
    assert (
        clause("pause_watches", "Pause every active watch of a user, e.g. one over the limit.", "user", "Ann")
        == "Pause every active watch of Ann"
    )


def test_a_figure_is_checked_against_a_round_level() -> None:
    from agentomnia.tasks.dag.generate import round_figure

    assert round_figure(1586, 1584) == 1500 and round_figure(1586, 1589) == 2000  # not 1,584 or 1,589
    assert round_figure(134.75, 133) == 100 and round_figure(134.75, 135) == 150
    assert round_figure(7, 5) == 5 and round_figure(250, 250) == 250  # small counts and round figures stay


def test_a_record_picked_by_its_latest_event_is_the_one_done_most_recently() -> None:
    from agentomnia.tasks.dag.describe import done_when
    from agentomnia.tasks.dag.generate import _whichever

    assert done_when("reported_at") == "reported" and done_when("last_serviced_on") == "serviced"
    assert done_when("collected_date") == "collected"
    assert done_when("eaten_on") == "eaten"  # "the meal most recently eaten", never "the latest eaten on"
    # a date of what is due or planned, or no event at all, keeps "the latest"
    assert (
        done_when("due_date") is None and done_when("scheduled_at") is None and done_when("born_on") is None
    )
    assert done_when("start_date") is None and done_when("opened") is None
    assert (
        _whichever("those leak reports", "most recently reported")
        == "whichever of those leak reports was reported most recently"
    )
    assert (
        _whichever("the tracks", "with the highest plays") == "whichever of the tracks has the highest plays"
    )


def _picking_generator(named: bool):  # type: ignore[no-untyped-def]
    """A generator one step into "pressure zone PRE-3 -> its leak reports", for `_resolve`."""
    import random
    from types import SimpleNamespace

    from agentomnia.envs.spec import AttributeSpec, EntitySpec
    from agentomnia.tasks.dag.generate import Executed, Generated, Generator

    zone = EntitySpec(
        name="pressure_zone", table="pressure_zones", key="pressure_zone_id", id_prefix="PRE",
        attributes=(AttributeSpec(name="pressure_zone_id", type="str"),), description="A zone.",
    )  # fmt: skip
    report = EntitySpec(
        name="leak_report", table="leak_reports", key="leak_report_id", id_prefix="LEA",
        attributes=(
            AttributeSpec(name="leak_report_id", type="str"),
            AttributeSpec(name="pressure_zone_id", type="ref", ref="pressure_zone"),
            AttributeSpec(name="reported_at", type="datetime"),
        ),
        description="A leak report.",
    )  # fmt: skip
    gen = Generator.__new__(Generator)
    gen.spec = SimpleNamespace(entity={"pressure_zone": zone, "leak_report": report}.__getitem__)
    gen.wording = random.Random(1)
    gen.out = Generated(clauses=["It concerns pressure zone PRE-3."])
    gen._marks = {}
    items = [
        {"leak_report_id": "LEA-1", "pressure_zone_id": "PRE-3", "reported_at": "2026-03-01T08:00:00"},
        {"leak_report_id": "LEA-2", "pressure_zone_id": "PRE-3", "reported_at": "2026-03-02T08:00:00"},
    ]
    if named:
        gen.out.calls.append(
            Executed(
                0,
                SimpleNamespace(op="get", entity="pressure_zone", binding={}),
                {},
                {},
                {},
                ("pressure_zone", "PRE-3"),
                "pressure zone PRE-3",
                "that zone",
            )
        )
        gen._marks[0] = (1, "zone")
    listing = Executed(
        len(gen.out.calls), SimpleNamespace(op="list", entity="leak_report", binding={}), {}, {}, {"items": items}, None,
        "that zone's leak reports",
    )  # fmt: skip
    return gen, listing


def test_a_pick_by_date_reads_as_what_was_done_most_recently() -> None:
    gen, listing = _picking_generator(named=False)
    seen = set()
    for _ in range(12):
        value, concrete, phrase = gen._resolve(listing, "out.items[].pressure_zone_id", "pressure_zone")
        assert (value, concrete) == ("PRE-3", "data.items[1].pressure_zone_id")
        assert "latest" not in phrase and "reported at" not in phrase, phrase
        seen.add(phrase)
    assert (
        seen
        <= {
            "the pressure zone of whichever of that zone's leak reports was reported most recently",
            "the pressure zone of the most recently reported of that zone's leak reports",
        }
        and len(seen) == 2
    ), seen


def test_a_pick_that_comes_back_to_the_named_record_calls_it_by_its_handle() -> None:
    """zone -> its latest leak report -> that report's zone is the zone already named: "that zone",
    never "the pressure zone of whichever of that zone's leak reports ..."."""
    gen, listing = _picking_generator(named=True)
    for _ in range(6):
        assert gen._resolve(listing, "out.items[].pressure_zone_id", "pressure_zone")[2] == "that zone"


def test_a_request_never_ends_a_quoted_sentence_twice() -> None:
    from agentomnia.tasks.dag.synth import _STOP_AFTER_QUOTE

    text = "Add a macro with actions 'Set on hold.'. Then name it 'X'. Is it 'Done!'."
    assert (
        _STOP_AFTER_QUOTE.sub(r"\1'", text)
        == "Add a macro with actions 'Set on hold.' Then name it 'X'. Is it 'Done!'"
    )


def test_a_new_records_long_detail_comes_last() -> None:
    from agentomnia.tasks.dag.generate import _details

    made = _details(
        ["support team: the support team of whichever of the agents with presence offline has full name 'Jo Reed'",
         "email 'kim@example.com'", "full name 'Kim Lee'"]
    )  # fmt: skip
    assert made == (
        "email 'kim@example.com', full name 'Kim Lee' and the support team of whichever of the agents with "
        "presence offline has full name 'Jo Reed'"
    )


def test_a_new_records_start_comes_before_its_end() -> None:
    from agentomnia.tasks.dag.generate import _details

    made = _details(
        ["end time March 13, 2026 at 5:00 PM", "room 'Oak'", "start time March 13, 2026 at 11:45 AM"]
    )
    assert made.index("start time") < made.index("end time") and made.startswith("room 'Oak'")


def test_a_new_record_that_happened_is_said_to_have_happened() -> None:
    """ "a new tracking event that occurred on March 1", never "a new tracking event occurred on"."""
    from agentomnia.tasks.dag.generate import new_record

    noun, _ = new_record("new clock event", ["occurred on March 1, 2026 at 10:45 AM", "event type clock out"])
    assert noun == "new clock event that occurred on March 1, 2026 at 10:45 AM"
    noun, _ = new_record("new filing", ["filed on February 27, 2026", "jurisdiction 'SG'"])
    assert noun == "new filing filed on February 27, 2026"


def test_details_that_are_lists_themselves_are_kept_apart_by_semicolons() -> None:
    from agentomnia.tasks.dag.generate import _details

    made = _details(
        ["amount 744.43", "proof job: the proof job with stage first proof, status assigned and pass number 3",
         "proofreader: the proofreader of whichever of those proof jobs has the highest pages"]
    )  # fmt: skip
    assert made == (
        "amount 744.43; the proof job with stage first proof, status assigned and pass number 3; and the "
        "proofreader of whichever of those proof jobs has the highest pages"
    )
    # a comma inside a quoted value is the value's own
    assert (
        _details(["note 'Late, again'", "code 'A1'", "amount 5"])
        == "note 'Late, again', code 'A1' and amount 5"
    )


def test_a_chain_that_comes_back_to_the_new_record_calls_it_the_new_one() -> None:
    """new rate quote -> its carrier -> that carrier's only rate quote is the new rate quote, never
    "the new rate quote's carrier's only rate quote"; with two new rate quotes it is neither."""
    from types import SimpleNamespace

    from agentomnia.envs.spec import EntitySpec
    from agentomnia.tasks.dag.generate import Executed, Generated, Generator

    quote = EntitySpec(name="rate_quote", table="rate_quotes", key="rate_quote_id", attributes=(),
                       description="A quote.", id_prefix="RAT")  # fmt: skip
    made = SimpleNamespace(op="create", entity="rate_quote", binding={})
    gen = Generator.__new__(Generator)
    gen.out = Generated(clauses=["Create a rate quote with amount 120."])
    gen._marks = {}
    gen.out.calls.append(Executed(0, made, {}, {}, {}, ("rate_quote", "RAT-9"), "the new rate quote"))
    assert gen._named(quote, "RAT-9") == "the new rate quote"
    gen.out.calls.append(Executed(1, made, {}, {}, {}, ("rate_quote", "RAT-10"), "the new rate quote"))
    assert gen._named(quote, "RAT-9") is None


def test_a_comparison_names_its_field_without_its_unit() -> None:
    """ "Whichever of those sections has the highest price", not "the highest price cents"; a value
    beside its field keeps the unit ("water temp (°C)")."""
    from agentomnia.tasks.dag.describe import compared_label, field_label

    assert compared_label("price_cents") == "price" and compared_label("unit_price_pence") == "unit price"
    assert compared_label("water_temp_c") == "water temp" and field_label("water_temp_c") == "water temp (°C)"
    assert compared_label("rotation_length_days") == "rotation length" and compared_label("plays") == "plays"


def test_a_count_of_the_records_with_a_value_is_keyed_as_a_person_would() -> None:
    from agentomnia.tasks.dag.generate import _filtered_count_keys

    # it had been keyed "equipments_generator" and "payment_runs_true"
    assert _filtered_count_keys("equipment", "kind", "generator")[0] == "generator equipment count"
    assert _filtered_count_keys("payment_run", "take_early_payment_discounts", True) == (
        "payment_run count with take_early_payment_discounts",
    )
    assert _filtered_count_keys("listing", "pets_allowed", False) == ("listing count without pets_allowed",)


def _entity(name: str, *attrs: tuple[str, str]) -> EntitySpec:
    return EntitySpec(
        name=name, table=f"{name}s", description="", key="id", id_prefix="X",
        attributes=(AttributeSpec(name="id", type="str"), *(
            AttributeSpec(name=n, type=t, enum=("scheduled", "on_hold", "crew_on_site", "new", "deposit"))  # type: ignore[arg-type]
            if t == "enum" else AttributeSpec(name=n, type=t)  # type: ignore[arg-type]
            for n, t in attrs
        )),
    )  # fmt: skip


def test_a_record_is_singled_out_as_a_person_says_it_not_as_a_field_list() -> None:
    """A state before the noun, a number with its measure, text with its label, a date or a person
    that the field's words introduce after it; never "with status scheduled and total 65.77"."""
    from agentomnia.tasks.dag.describe import singled_out

    order = _entity(
        "laundry_order", ("status", "enum"), ("total", "money"), ("garment_note", "str"),
        ("administered_by", "str"), ("guests", "int"), ("sealed", "bool"), ("needs_accommodation", "bool"),
        ("has_receipt", "bool"), ("kind", "enum"), ("reason", "enum"), ("lap_no", "int"), ("eaten_on", "date"),
        ("receipt_required_over", "money"),
    )  # fmt: skip

    def said(record: dict[str, object], *cues: str, many: bool = False) -> str:
        return singled_out(order, record, list(cues), many=many)

    assert said({"status": "scheduled", "total": 65.77}, "status", "total") == (
        "the scheduled laundry order with a total of 65.77"
    )
    assert said({"status": "on_hold"}, "status") == "the laundry order on hold"
    assert said({"status": "crew_on_site"}, "status") == "the laundry order whose status is crew on site"
    assert said({"status": "new"}, "status") == "the laundry order whose status is new"  # not "the new ..."
    assert (
        said({"garment_note": "Small tear"}, "garment_note")
        == "the laundry order with the garment note 'Small tear'"
    )
    assert said({"administered_by": "Rebekah Bruce"}, "administered_by") == (
        "the laundry order administered by 'Rebekah Bruce'"
    )
    assert said({"eaten_on": "2026-02-15"}, "eaten_on") == "the laundry order eaten on February 15, 2026"
    assert said({"guests": 1}, "guests") == "the laundry order with 1 guest"
    assert said({"guests": 3}, "guests") == "the laundry order with 3 guests"
    assert said({"lap_no": 2}, "lap_no") == "the laundry order with lap number 2"
    assert said({"receipt_required_over": 10}, "receipt_required_over") == (
        "the laundry order with receipt required over 10"  # never "a receipt required over of 10"
    )
    assert said({"sealed": True, "kind": "deposit"}, "sealed", "kind") == "the sealed deposit laundry order"
    assert (
        said({"sealed": False, "total": 5}, "sealed", "total")
        == "the laundry order with a total of 5 that is not sealed"
    )
    assert said({"needs_accommodation": False}, "needs_accommodation") == (
        "the laundry order that does not need accommodation"
    )
    assert said({"has_receipt": False}, "has_receipt") == "the laundry order without receipt"
    assert said({"reason": "deposit", "total": 5}, "reason", "total") == (
        "the laundry order with a total of 5, whose reason is deposit"
    )
    # the records that share a value
    assert said({"sealed": False}, "sealed", many=True) == "the laundry orders that are not sealed"
    assert said({"kind": "deposit"}, "kind", many=True) == "the deposit laundry orders"


def test_how_many_of_a_list_are_said_by_what_they_share() -> None:
    from agentomnia.tasks.dag.describe import predicate

    order = _entity("order", ("status", "enum"), ("sealed", "bool"), ("needs_accommodation", "bool"),
                    ("data_sharing_consent", "bool"), ("reason", "enum"))  # fmt: skip
    assert predicate(order, "status", "scheduled") == "are scheduled"
    assert predicate(order, "sealed", False) == "are not sealed"
    assert predicate(order, "needs_accommodation", True) == "need accommodation"
    assert predicate(order, "data_sharing_consent", False) == "do not have data sharing consent"
    assert predicate(order, "reason", "deposit") == "have reason deposit"


def test_a_pick_from_a_list_filtered_by_a_record_names_that_record_as_the_request_did() -> None:
    """A leak report of the leak reports of "the new work order's zone" has that zone: the request says
    "the new work order's zone" again, never "the pressure zone of whichever of those leak reports"."""
    from types import SimpleNamespace

    gen, listing = _picking_generator(named=False)
    listing.tool = SimpleNamespace(
        op="list", entity="leak_report", binding={"filters": {"zone": "pressure_zone_id"}}
    )
    listing.args, listing.sources = {"zone": "PRE-3"}, {"zone": "out:0.data.pressure_zone_id"}
    gen._filtered_by = {(listing.index, "zone"): "the new work order's zone"}
    for _ in range(6):
        assert gen._resolve(listing, "out.items[].pressure_zone_id", "pressure_zone")[2] == (
            "the new work order's zone"
        )
    listing.sources = {"zone": "query"}  # a filter the request stated is no record it named
    assert (
        gen._resolve(listing, "out.items[].pressure_zone_id", "pressure_zone")[2]
        != "the new work order's zone"
    )


def test_a_sentence_that_introduced_a_list_nothing_uses_is_taken_back() -> None:
    gen, listing = _picking_generator(named=False)
    gen.out.clauses += ["Pull up that zone's leak reports.", "Close the new work order's zone."]
    listing.handle = "those leak reports"
    gen._marks[listing.index] = (2, "leak reports")
    gen._drop_unused(listing, 1)
    assert gen.out.clauses == ["It concerns pressure zone PRE-3.", "Close the new work order's zone."]
    assert listing.handle is None and listing.index not in gen._marks
    gen.out.clauses += ["Pull up that zone's leak reports.", "Close the only such leak report."]
    listing.handle = "those leak reports"
    gen._drop_unused(listing, 2)
    assert len(gen.out.clauses) == 4 and listing.handle == "those leak reports"


def test_a_record_is_described_by_the_fewest_facts_that_single_it_out() -> None:
    """One fact that no other record shares beats three that narrow it down one by one."""
    from types import SimpleNamespace

    from agentomnia.tasks.dag.describe import describe_record

    player = _entity("player", ("status", "enum"), ("kind", "enum"), ("nickname", "str"))
    spec = SimpleNamespace(entity={"player": player}.__getitem__)
    state = {
        "players": {
            "P1": {"id": "P1", "status": "scheduled", "kind": "deposit", "nickname": "robertsamber"},
            "P2": {"id": "P2", "status": "scheduled", "kind": "new", "nickname": "kim"},
            "P3": {"id": "P3", "status": "on_hold", "kind": "deposit", "nickname": "jo"},
        }
    }
    said = describe_record(spec, state, "player", "P1", allow_ids=False)  # type: ignore[arg-type]
    assert said == "the player with the nickname 'robertsamber'"
    state["players"]["P2"]["nickname"] = state["players"]["P3"]["nickname"] = "robertsamber"
    said = describe_record(spec, state, "player", "P1", allow_ids=False)  # type: ignore[arg-type]
    assert said == "the scheduled deposit player"


def test_a_request_never_undoes_what_it_just_created() -> None:
    """ "Create it in Receipts ... now switch its folder to Business Cards" and "open a new entry ...
    the new entry can go, so delete it" are not requests a person writes."""
    from types import SimpleNamespace

    from agentomnia.tasks.dag.generate import Executed, Generated, Generator

    gen = Generator.__new__(Generator)
    gen.out = Generated()
    create = SimpleNamespace(
        op="create", kind="write", binding={"fields": {"folder": "folder_id", "title": "title"}}
    )
    gen.out.calls.append(
        Executed(0, create, {"folder": "F1", "title": "Bill"}, {}, {}, ("doc", "D1"), "the new doc")
    )  # type: ignore[arg-type]
    assign = SimpleNamespace(op="assign", kind="write", binding={"attr": "folder_id", "fields": {}})
    assert gen._overwrites(assign, {"doc_id": "D1"}, ("doc", "D1")) == ["folder_id"]  # type: ignore[arg-type]
    assert gen._overwrites(assign, {"doc_id": "D2"}, ("doc", "D2")) == []  # type: ignore[arg-type]
    assert gen._written_here(("doc", "D1")) == "created" and gen._written_here(("doc", "D2")) is None


def test_a_record_reached_through_a_reference_is_called_by_that_reference_after() -> None:
    """ "the owner of the only such account" is "that owner" after, never "that sales user", which the
    request never said."""
    from agentomnia.tasks.dag.generate import _role

    assert _role("the owner of the only such account") == "owner"
    assert _role("that account's owner") == "owner"
    assert _role("the only rate quote of that invoice's carrier") is None
    assert _role("the sealed bag") is None


def test_a_reference_named_by_a_deed_is_said_as_who_did_it() -> None:
    """ "the employee who counted the new cash count" (`counted_by`), never "the new cash count's
    counted by"; a deed with an agent noun keeps it ("that bill's payer"), a plain reference its
    record ("that invoice's carrier"), and the records named by a deed are "counted by" someone."""
    from agentomnia.tasks.dag.generate import _role, in_role, ref_phrase

    said = ref_phrase("the new cash count", "counted_by", "employee")
    assert said == "the employee who counted the new cash count"
    assert _role(said) is None  # later "that employee", the kind the request said
    assert ref_phrase("that ticket", "picked_up_by", "agent") == "the agent who picked up that ticket"
    assert ref_phrase("that order", "last_changed_by", None) == "the person who last changed that order"
    assert ref_phrase("that bill", "paid_by", "member") == "that bill's payer"
    assert ref_phrase("that invoice", "carrier_id", "carrier") == "that invoice's carrier"
    assert ref_phrase("that line", "ro_number", "repair_order") == "that line's repair order"
    counts = EntitySpec(
        name="cash_count", table="cash_counts", key="count_id", description="A till count.", id_prefix="CAS",
        attributes=[AttributeSpec(name="count_id", type="str"),
                    AttributeSpec(name="counted_by", type="str", ref="employee")],
    )  # fmt: skip
    assert in_role(counts, "counted_by", "the employee named 'Zoe Goodman'") == (
        "the cash counts counted by the employee named 'Zoe Goodman'"
    )


def test_a_count_keeps_the_article_of_its_possessor() -> None:
    """ "the number of the new vehicle's repair orders", never "the number of new vehicle's repair
    orders"; a plain subject loses its article ("the number of open rent charges")."""
    from agentomnia.tasks.dag.generate import _no_article

    assert _no_article("the new vehicle's repair orders") == "the new vehicle's repair orders"
    assert _no_article("the open rent charges") == "open rent charges"
    assert (
        _no_article("the open tickets of the customer's account") == "open tickets of the customer's account"
    )


def test_a_change_to_a_yes_no_setting_says_what_the_record_is() -> None:
    """ "make sure it is not finished", never "make sure its finished is no"."""
    from agentomnia.tasks.dag.generate import _its

    flags = {"finished": False, "auto renew": True}
    assert _its("finished", "no", flags) == "it is not finished"
    assert _its("finished", "no", flags, should=True) == "it should not be finished"
    assert _its("auto renew", "yes", flags) == "its auto renew is turned on"
    assert _its("amount", "29.99", flags) == "its amount is 29.99"
    assert _its("amount", "29.99", flags, should=True) == "its amount should be 29.99"
    # a plural field is "are", a word that only ends in s is not plural
    assert (
        _its("operational restrictions", "'No flights'", flags)
        == "its operational restrictions are 'No flights'"
    )
    assert (
        _its("status", "'ok'", flags) == "its status is 'ok'"
        and _its("address", "'x'", flags) == "its address is 'x'"
    )
    assert _its("approved by", "'Vincent Wilkerson'", flags) == "it is approved by 'Vincent Wilkerson'"
    # a person is "they": "make sure their phone is ...", never "its phone" of a patient
    assert _its("phone", "'555-0100'", flags, person=True) == "their phone is '555-0100'"
    assert _its("finished", "no", flags, person=True) == "they are not finished"
    assert _its("finished", "no", flags, should=True, person=True) == "they should not be finished"
    assert _its("referred by", "'Dr Lee'", flags, person=True) == "they are referred by 'Dr Lee'"
    # a field named by what it counts is a count: "it has 3 guests", never "its guests is 3"
    assert (
        _its("guests", "3", flags) == "it has 3 guests" and _its("servings", "1", flags) == "it has 1 serving"
    )
    assert _its("guests", "2", flags, should=True) == "it should have 2 guests"
    assert (
        _its("status", "3", flags) == "its status is 3"
        and _its("guests", "'many'", flags) == "its guests are 'many'"
    )


def test_a_list_singled_out_by_a_code_no_two_records_share_is_never_counted() -> None:
    """ "how many stores with the store ID 'STR-892867' there are" is always one: a list filtered by a
    unique code is not counted; one filtered by a state, an owner, or a value records share, is."""
    from types import SimpleNamespace

    from agentomnia.tasks.dag.generate import Executed, Generator

    store = _entity(
        "store", ("store_code", "str"), ("region", "str"), ("status", "enum"), ("owner_id", "ref")
    )
    gen = Generator.__new__(Generator)
    gen.initial = {"stores": {f"S{i}": {"id": f"S{i}", "store_code": f"STR-{i}", "region": "north" if i % 2 else "south", "status": "new", "owner_id": f"O{i}"} for i in range(5)}}  # fmt: skip
    tool = SimpleNamespace(op="list", kind="read", binding={"filters": {"code": "store_code", "region": "region", "status": "status", "owner": "owner_id"}})  # fmt: skip

    def step(**args: str) -> Executed:
        return Executed(0, tool, args, {}, {}, None, "the stores")  # type: ignore[arg-type]

    assert gen._unique_filter(step(code="STR-3"), store) == "store_code"
    assert gen._unique_filter(step(region="north"), store) is None
    assert gen._unique_filter(step(status="new"), store) is None
    assert gen._unique_filter(step(owner="O2"), store) is None  # "how many stores that owner has"


def test_a_new_record_is_called_by_the_fields_that_lead_into_their_values() -> None:
    """ "Can you open a new meal eaten on '2026-02-15'? It should have slot dinner", never "It should
    have eaten on '2026-02-15', slot dinner ..."."""
    from agentomnia.tasks.dag.generate import new_record

    assert new_record("meal", ["eaten on '2026-02-15'", "slot dinner"]) == (
        "meal eaten on '2026-02-15'",
        "slot dinner",
    )
    assert new_record("meal", ["eaten on '2026-02-15'"]) == ("meal eaten on '2026-02-15'", "")
    # a verb as its -ing form, a start before its end: never "a new appointment ends on April 3, 2026
    # starts on March 2, 2026" or "a new job posting expires on ... posted on ..."
    assert new_record(
        "appointment", ["ends on March 2, 2026 at 9:30 PM", "starts on March 2, 2026 at 4:30 PM"]
    ) == ("appointment starting on March 2, 2026 at 4:30 PM and ending on March 2, 2026 at 9:30 PM", "")
    assert new_record(
        "job posting",
        ["expires on April 29, 2026", "posted on February 7, 2026", "requisition: that requisition"],
    ) == ("job posting posted on February 7, 2026 and expiring on April 29, 2026 for that requisition", "")
    # a field whose words do not lead into a value stays a detail ("weight (kg) 72.7"); the one record
    # the new one belongs to follows the noun: "a new weight entry for that dieter with weight ..."
    assert new_record("weight entry", ["weight (kg) 72.7", "dieter: that dieter"]) == (
        "weight entry for that dieter",
        "weight (kg) 72.7",
    )
    assert new_record("sync run", ["sync job: that sync job"]) == ("sync run for that sync job", "")
    # the noun's own verb is not said again: never "a new purchase purchased on ..."
    assert new_record("purchase", ["purchased on February 28, 2026 at 2:30 PM"]) == (
        "purchase made on February 28, 2026 at 2:30 PM",
        "",
    )
    assert new_record("order", ["ordered on March 1, 2026"])[0] == "order made on March 1, 2026"
    # a long one stays the last detail: "... for the user of the vault members whose permission is
    # read with name 'X'" would read the name as the members'
    long = "the user of the most recently added of the vault members whose permission is read"
    assert new_record("device", [f"user: {long}", "name 'Mac'"]) == ("device", f"name 'Mac' and {long}")
    # two records, or one said by its role (grantee), stay details
    assert new_record("order", ["vendor: that vendor", "store: the store named 'Annex'"]) == (
        "order",
        "that vendor and the store named 'Annex'",
    )
    assert new_record("contact", ["wait (days) 1", "grantee: the user whose plan is premium"]) == (
        "contact",
        "wait (days) 1 and grantee set to the user whose plan is premium",
    )


def test_a_question_about_a_plural_field_asks_what_they_are() -> None:
    """ "What are the open queries of that manuscript?", never "What is the open queries ..."."""
    from agentomnia.tasks.dag.phrasing import ask

    for noun, verb in (
        ("the open queries of the new stage transition's manuscript", "What are"),
        ("that order's line items", "What are"),
        ("the status of that order", "What is"),
        ("the duration in hours of course COU-008", "What is"),
        ("that lap's time in seconds", "What is"),
        ("the number of open tickets", "What is"),
    ):
        asked = [ask(random.Random(seed), noun, "k") for seed in range(60)]
        questions = [a for a in asked if a.startswith("What ")]
        assert questions and all(q.startswith(f"{verb} {noun}?") for q in questions), questions


def test_plural_field_words_are_told_apart_and_inflect_loads_without_its_import_time_checks() -> None:
    """A plural noun ends a field's words ("operational restrictions"), a word that only ends in s
    does not ("status", "address"). inflect is loaded with typeguard's decorator as the identity (1.3 s
    of recompiling at import), which is put back afterwards."""
    import subprocess
    import sys

    import typeguard

    from agentomnia.tasks.dag.describe import is_plural

    before = typeguard.typechecked
    assert [is_plural(w) for w in ("operational restrictions", "orders", "status", "address", "basis")] == [
        True, True, False, False, False,
    ]  # fmt: skip
    assert typeguard.typechecked is before
    code = (
        "from agentomnia.tasks.dag.describe import _english; _english(); import inflect; "
        "print(inflect.engine.singular_noun.__code__.co_names)"
    )
    names = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "typeguard" not in names and "_sinoun" in names, names


def test_threads_that_ask_for_inflect_at_once_all_get_a_whole_engine() -> None:
    """DAG tasks are made on threads: threads asking for the first time, 5 ms apart, each get an engine,
    never the module half made by another thread's import (was: AttributeError in dag_tasks)."""
    import subprocess
    import sys

    code = """
import threading, time
from agentomnia.tasks.dag.describe import _english
gate, errors = threading.Barrier(24), []
def ask(i):
    gate.wait()
    time.sleep(0.005 * i)  # one thread imports while the others ask, at every stage of its import
    try:
        assert _english().singular_noun("orders") == "order"
    except BaseException as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=ask, args=(i,)) for i in range(24)]
[t.start() for t in threads]
[t.join() for t in threads]
print(errors)
"""
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        assert out.strip() == "[]", out


def test_a_command_is_asked_for_by_its_own_alternative_never_by_a_noun_that_shares_its_word() -> None:
    """`lock_door(action=lock)`, "Lock or unlock a smart lock.": the lock in "a smart lock" is the
    record, so locking is not asked as "unlock a smart lock for device DEV-3"."""
    from types import SimpleNamespace

    from agentomnia.tasks.dag.generate import command_clause

    def tool(name: str, description: str, *values: str) -> Any:
        command = {"param": "action", "targets": dict.fromkeys(values, "")}
        return SimpleNamespace(name=name, description=description,
                               binding={"compound": {"steps": [{}], "command": command}})  # fmt: skip

    door = tool(
        "lock_door", "Lock or unlock a smart lock. Unlocking requires the owner's PIN.", "lock", "unlock"
    )
    device = SimpleNamespace(name="device")
    assert command_clause(door, device, "device DEV-3", "lock") == "lock device DEV-3"
    assert command_clause(door, device, "device DEV-3", "unlock").startswith("unlock ")
    hold = tool("setInvoiceHold", "Put an invoice on hold or release it.", "hold", "release")
    invoice = SimpleNamespace(name="invoice")
    assert command_clause(hold, invoice, "invoice INV-3", "hold") == "Put invoice INV-3 on hold"
    assert command_clause(hold, invoice, "invoice INV-3", "release") == "release invoice INV-3"
    serial = tool("setInvoiceHold", "Put an invoice on hold, or release it.", "hold", "release")
    assert command_clause(serial, invoice, "invoice INV-3", "release") == "release invoice INV-3"
    # a list of verbs is a list of alternatives (it had read "approve, reject for expense report EXP-2")
    decide = tool(
        "decide_expense_report", "Approve, reject or return a submitted report.", "approve", "reject"
    )
    report = SimpleNamespace(name="expense_report")
    assert command_clause(decide, report, "expense report EXP-2", "reject") == "reject expense report EXP-2"


def test_a_list_kept_to_one_state_says_its_owner_and_its_state() -> None:
    """A read of one record's records in one state ("list_open_defects" of an aircraft) is asked for
    with both: "the scheduled defects of aircraft N123", "caseload CAS-2's alerts that are not
    acknowledged"; a phrase without the state unchanged where there is none."""
    from types import SimpleNamespace

    from agentomnia.tasks.dag.generate import Generator

    defect = _entity("defect", ("status", "enum"), ("acknowledged", "bool"))
    tool = SimpleNamespace(name="list_open_defects")
    kept = Generator._kept_to
    assert kept(tool, defect, {"status": "scheduled"}, "the defects of aircraft N123") == (  # type: ignore[arg-type]
        "the scheduled defects of aircraft N123"
    )
    assert kept(tool, defect, {"acknowledged": False}, "caseload CAS-2's defects") == (  # type: ignore[arg-type]
        "caseload CAS-2's defects that are not acknowledged"
    )
    assert kept(tool, defect, {}, "the defects of aircraft N123") == "the defects of aircraft N123"  # type: ignore[arg-type]
