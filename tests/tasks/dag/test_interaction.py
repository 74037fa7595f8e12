"""Multi-turn DAG tasks: a withheld detail, the same oracle, and a teacher that has to ask for it."""

from __future__ import annotations

import random
import re
from pathlib import Path

from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.dag.interaction import (
    ASK_LATER,
    ASK_ME,
    _withheld_in_objectives,
    gap_phrase,
    gaps_in,
    labelled,
    make_multi_turn,
    says_gap,
    withholdable,
)
from agentomnia.tasks.dag.synth import check_task, synthesize_dag_tasks
from agentomnia.tasks.families import family_of
from agentomnia.trajectories import generate_trajectories


def test_multi_turn_tasks_keep_their_oracle_and_need_a_question(
    freight_dir: Path, freight_bundle: Bundle, freight_sandbox: Sandbox
) -> None:
    tasks = [
        t
        for variant in ("dag-standard", "dag-challenge")
        for t in synthesize_dag_tasks(freight_dir, freight_sandbox, variant=variant, n=6)[0]
    ]
    bundles = {t.env_id: freight_bundle for t in tasks}
    solved = [r.task_id for r in generate_trajectories(tasks, bundles, freight_sandbox) if r.verified]
    multi = [
        m for t in tasks if t.id in solved for m in [make_multi_turn(t, random.Random(1))] if m is not None
    ]
    assert multi, "no teacher-solved task had a literal detail to withhold"
    for task in multi:
        assert task.persona is not None and len(task.persona.withheld) == 1
        assert says_gap(task.query)
        assert "interactive_collaboration" in task.coordinate.capabilities
        assert "progressive_disclosure" in task.coordinate.atoms
        check = check_task(task, freight_sandbox, freight_bundle)
        assert check.replay_ok and check.oracle_pass and check.empty_fail, check.detail
    runs = generate_trajectories(multi, bundles, freight_sandbox)
    for run in runs:
        # the teacher solves it again, this time by asking the simulated user for the withheld detail
        assert run.verified, run.verification.failed_checks() if run.verification else run.stop_reason
        assert any(m["role"] == "user" for m in run.messages[2:])


def test_synthesis_poses_a_share_multi_turn(
    freight_dir: Path, freight_bundle: Bundle, freight_sandbox: Sandbox
) -> None:
    tasks, _ = synthesize_dag_tasks(freight_dir, freight_sandbox, variant="dag-standard", n=4, multi_turn=1.0)
    assert any(t.interaction == "multi" for t in tasks)
    assert all(t.interaction == "single" or t.persona is not None for t in tasks)
    # `tasks check` (the family's own check) keeps what synthesis kept: a withheld detail is not
    # "missing from the description", the simulated user gives it when asked
    for task in tasks:
        report = family_of(task).validate(task, freight_sandbox, freight_bundle)
        assert report.passed, report.reason


def test_conversion_needs_a_literal_request_detail(freight_dir: Path, freight_sandbox: Sandbox) -> None:
    tasks, _ = synthesize_dag_tasks(freight_dir, freight_sandbox, variant="dag-standard", n=3)
    assert all(t.interaction == "single" for t in tasks)
    for task in tasks:
        converted = make_multi_turn(task, random.Random(0))
        assert (converted is None) == (not withholdable(task))
        if converted is not None:
            assert converted.id != task.id and converted.reference_calls == task.reference_calls
            assert make_multi_turn(converted, random.Random(0)) is None  # already multi-turn


def test_a_withheld_detail_an_objective_names_is_withheld_there_too(
    freight_dir: Path, freight_bundle: Bundle, freight_sandbox: Sandbox
) -> None:
    from agentomnia.envs.spec import EnvSpec
    from agentomnia.tasks.quality import consistency_problems

    spec = EnvSpec.model_validate(freight_bundle.spec)
    tasks, _ = synthesize_dag_tasks(freight_dir, freight_sandbox, variant="dag-standard", n=4)
    task = next(t for t in tasks if withholdable(t) and t.internal_spec.get("objectives"))
    _, _, text = withholdable(task)[0]
    # an objective that picks its record by the detail, as "the alarm matching 'Ground'" does
    sentence = next(s for s in task.query.split(". ") if text in s)
    objectives = [
        {**task.internal_spec["objectives"][0], "mention": sentence},
        *task.internal_spec["objectives"][1:],
    ]
    picked = task.model_copy(update={"internal_spec": {**task.internal_spec, "objectives": objectives}})
    assert not [p for p in consistency_problems(picked, spec) if "not stated" in p]
    converted = next(
        m for seed in range(20)
        if (m := make_multi_turn(picked, random.Random(seed))) is not None and text not in m.query
    )  # fmt: skip
    assert says_gap(converted.internal_spec["objectives"][0]["mention"])
    assert not [p for p in consistency_problems(converted, spec) if "not stated" in p]


def test_the_gap_reads_as_a_person_would_leave_it() -> None:
    assert gap_phrase("Set the person name to 'Anna Garrett' now.", "'Anna Garrett'") == ASK_ME
    assert gap_phrase("The alarm matching 'Ground' needs updating.", "'Ground'") == ASK_ME
    assert gap_phrase("A new order: that item, quantity 40 and supplier 'Marsh'.", "40") == ASK_LATER
    assert gap_phrase("name 'Relay Finals', starts at noon", "'Relay Finals'") == ASK_LATER
    # after a word that takes an object, the kind of detail to come is said where it is known
    assert gap_phrase("Pull up the bookings matching 'Isabel'.", "'Isabel'", "query", "Isabel") == (
        "a word I will give you"
    )
    added = "a new album photo, added at '2026-02-05T13:00:00'"
    assert (
        gap_phrase(added, "'2026-02-05T13:00:00'", "added_at", "2026-02-05T13:00:00")
        == "a date and time I will give you"
    )
    assert gap_phrase("its promised date is '2026-02-25'", "'2026-02-25'", "promised_date", "2026-02-25") == (
        "a date I will give you"
    )
    assert (
        gap_phrase("set the photo quality to 0.78.", "0.78", "photo_quality", 0.78)
        == "a figure I will give you"
    )
    email = "its contact email is 'monica57@gmail.com'"
    assert gap_phrase(email, "'monica57@gmail.com'", "contact_email", "monica57@gmail.com") == (
        "an address I will send you"
    )
    assert gap_phrase("its reason is goodwill.", "goodwill", "reason", "goodwill") == ASK_ME
    raised = "a new data query raised by 'Dr. Lee' for that CRF entry"
    assert gap_phrase(raised, "'Dr. Lee'", "raised_by", "Dr. Lee") == "someone I will name"
    assert says_gap("the album matching a word I will give you")


def test_a_bare_word_before_its_noun_is_not_withheld() -> None:
    """ "how many occupied chargers" cannot become "how many still to be confirmed with me chargers":
    a bare value is withheld only after its field's label or a word that takes an object."""
    from agentomnia.tasks.dag.interaction import _stands_as_detail

    assert not _stands_as_detail(
        "Could you find out how many occupied chargers there are?", "occupied", "status"
    )
    assert _stands_as_detail("A new charger: connector chademo, status occupied.", "occupied", "status")
    assert _stands_as_detail("Make sure its status is occupied.", "occupied", "status")
    assert _stands_as_detail("how many 'Nissan' cars", "'Nissan'", "make")  # a quote reads as a value
    assert _stands_as_detail("the chargers rated 50 kW", "50", "power_kw")


def test_a_gap_for_a_quote_that_ended_its_sentence_ends_it_too() -> None:
    from agentomnia.tasks.dag.interaction import ended

    query = "End it, and make sure its note is 'All checks passed.' Look at the ledgers."
    assert ended(query, "'All checks passed.'", ASK_ME) == ASK_ME + "."
    assert ended("Its note is 'Done.'", "'Done.'", ASK_ME) == ASK_ME + "."
    assert ended("note 'Done.' and amount 5.", "'Done.'", ASK_ME) == ASK_ME  # the stop is the value's
    assert ended("its reason is 'goodwill' now.", "'goodwill'", ASK_ME) == ASK_ME


def test_a_withheld_figure_takes_its_unit_with_it(freight_dir: Path, freight_sandbox: Sandbox) -> None:
    """ "weight 72.7 kg" withheld reads "weight still to be confirmed with me", never "weight still to
    be confirmed with me kg"."""
    from agentomnia.tasks.dag.describe import unit_after

    tasks, _ = synthesize_dag_tasks(freight_dir, freight_sandbox, variant="dag-standard", n=4)
    task, param, text = next(
        (t, p, x) for t in tasks for p, v, x in withholdable(t) if isinstance(v, (int, float))
    )  # fmt: skip
    # the figure with its unit: as the request writes it, else with one written after it
    unit = unit_after(task.query[task.query.find(text) + len(text) :]) or " kg"
    measured = task
    if f"{text}{unit}" not in task.query:
        measured = task.model_copy(update={"query": task.query.replace(text, f"{text}{unit}", 1)})
    converted = next(
        m for seed in range(40)
        if (m := make_multi_turn(measured, random.Random(seed))) is not None and param in m.persona.withheld
    )  # fmt: skip
    assert says_gap(converted.query) and f"{text}{unit}" not in converted.query
    assert not re.search(rf"(me|you){re.escape(unit)}(?!\w)", converted.query), converted.query


def test_a_measured_figure_is_written_with_its_unit_after_it() -> None:
    from agentomnia.tasks.dag.describe import labelled, stated, unit_after

    assert stated("weight_kg", "72.7") == "weight 72.7 kg" and stated("wait_days", "1") == "wait 1 day"
    assert (
        stated("water_temp_c", "38.5") == "water temp 38.5°C"
        and stated("discount_pct", "15") == "discount 15%"
    )
    assert (
        stated("dose_mg_per_kg", "2.5") == "dose 2.5 mg/kg" and stated("voltage_kv", "25") == "voltage 25 kV"
    )
    assert labelled("rotation_length_days", "14") == ("rotation length", "14 days")
    # no unit, or no figure: as the field's label says it
    assert stated("price", "12") == "price 12" and stated("weight_kg", "'heavy'") == "weight (kg) 'heavy'"
    assert unit_after(" kg and 'x'") == " kg" and unit_after("°C, then") == "°C" and unit_after(" kgs") == ""
    assert unit_after(" mg/kg.") == " mg/kg" and unit_after(" units") == ""


def test_a_detail_after_its_label_is_left_for_later_with_the_label() -> None:
    """ "It should have a title I will give you", never "It should have title still to be confirmed
    with me"; a figure takes its unit along ("a height I will give you" for "height 5,152 px")."""
    query = (
        "Can you open a new album? It should have title 'Street Flex' and the owner of the only bw preset. "
        "Create a photo with file name '_DSF0212.RAF', height 5,152 px and format raw."
    )
    assert gap_phrase(query, "'Street Flex'", "title", "Street Flex") == ASK_LATER
    assert labelled(query, "'Street Flex'", "title") == ("title 'Street Flex'", "title")
    assert labelled(query, "'_DSF0212.RAF'", "file_name") == ("file name '_DSF0212.RAF'", "file name")
    assert labelled(query, "5,152 px", "height_px") == ("height 5,152 px", "height")
    assert labelled(query, "raw", "codec") is None
    said = "It should have a title I will give you and the owner of the only bw preset."
    assert says_gap(said) and gaps_in(said) == ["a title I will give you"]
    assert gaps_in("a review with the stars I will give you and that user") == ["the stars I will give you"]
    assert gaps_in("the album matching a word I will give you") == ["a word I will give you"]
    # an objective that starts at the value has the gap there, one that holds the label too likewise
    spec = {"objectives": [{"step": 0, "mention": "'Street Flex' and the owner of the only bw preset"},
                           {"step": 1, "mention": "have title 'Street Flex'"}]}  # fmt: skip
    reworded = _withheld_in_objectives(
        spec, "title 'Street Flex'", "a title I will give you", "'Street Flex'"
    )
    assert [o["mention"] for o in reworded["objectives"]] == [
        "a title I will give you and the owner of the only bw preset",
        "have a title I will give you",
    ]
