"""DAG task synthesis end to end on the freight environment: kept tasks are replayable, graded by
outcome, leak nothing their variant forbids, and Challenge tasks are larger than Standard ones."""

from __future__ import annotations

import copy
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from agentomnia.envs.spec import EnvSpec
from agentomnia.llm.protocol import LLMResponse, Usage
from agentomnia.rejection import Rejection
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.dag import check_task, summarize_tasks, synthesize_dag_tasks
from agentomnia.tasks.grading import Outcome, grade
from agentomnia.tasks.leakage import id_literals
from agentomnia.tasks.models import ReferenceCall, Task
from agentomnia.tasks.quality import consistency_problems, grounding_problems
from agentomnia.tasks.wording import query_metrics

Synth = tuple[list[Task], list[Rejection]]


@pytest.fixture(scope="module")
def standard(freight_dir: Path, freight_sandbox: Sandbox) -> Synth:
    return synthesize_dag_tasks(freight_dir, freight_sandbox, variant="dag-standard", n=5, seed=0)


@pytest.fixture(scope="module")
def challenge(freight_dir: Path, freight_sandbox: Sandbox) -> Synth:
    return synthesize_dag_tasks(freight_dir, freight_sandbox, variant="dag-challenge", n=4, seed=0)


def test_both_variants_keep_tasks_and_explain_every_rejection(standard: Synth, challenge: Synth) -> None:
    for (tasks, rejected), kind in ((standard, "dag_standard"), (challenge, "dag_challenge")):
        assert len(tasks) >= 3, [r.reason for r in rejected][:5]
        assert {t.kind for t in tasks} == {kind}
        assert len({t.id for t in tasks}) == len(tasks)
        assert all(r.stage and r.reason for r in rejected)


def test_every_kept_task_passes_its_recheck_in_a_fresh_session(
    standard: Synth, challenge: Synth, freight_sandbox: Sandbox, freight_bundle: Bundle, freight_spec: EnvSpec
) -> None:
    for task in standard[0] + challenge[0]:
        result = check_task(task, freight_sandbox, freight_bundle, freight_spec)
        assert result.passed, result
        assert result.replay_ok and result.oracle_pass and result.empty_fail


def test_arguments_are_grounded_with_provenance(standard: Synth, challenge: Synth) -> None:
    for task in standard[0] + challenge[0]:
        assert task.reference_calls
        for call in task.reference_calls:
            assert set(call.sources) == set(call.args), call
        assert grounding_problems(task) == []
        assert (
            any(s.startswith("out:") for c in task.reference_calls for s in c.sources.values())
            or len(task.reference_calls) == 1
        )


def test_descriptions_leak_no_tools_or_keys_and_challenge_quotes_no_ids(
    standard: Synth, challenge: Synth, freight_spec: EnvSpec
) -> None:
    names = {t.name for t in freight_spec.tools}
    for task in standard[0] + challenge[0]:
        assert not any(n in task.query for n in names), task.query
        for field, value in task.expected_answer.items():
            assert f'"{field}"' in task.query  # the description says what to report
            # and never says the answer itself ("the name of the stop named 'Depot'")
            assert not (isinstance(value, str) and len(value) >= 3 and f"'{value}'" in task.query), (
                field,
                task.query,
            )
    assert all(id_literals(t.query, freight_spec) == [] for t in challenge[0])


def test_requests_read_as_a_person_writes_them(standard: Synth, challenge: Synth) -> None:
    tasks = standard[0] + challenge[0]
    metrics = query_metrics(t.query for t in tasks)
    assert metrics["chained_of_sentences"] == 0, metrics
    # nor a chain said backwards ("that shipment's carrier's shipments"), nor "the only one of those
    # X" where the last sentence described them ("the only such X")
    from agentomnia.tasks.wording import sentences, stacked_possessive

    stacked = [s for t in tasks for s in sentences(t.query) if stacked_possessive(s)]
    assert metrics["stacked_possessive_sentences"] == 0, stacked
    assert not any("the only one of those " in t.query for t in tasks)
    assert metrics["mean_sentence_words"] < 22, metrics
    assert len({t.query.split(".")[0] for t in tasks}) >= 3  # openings vary from task to task
    for task in tasks:
        # answer fields say what they hold: no numbered repeats ("count2"), each asked once in its
        # own sentence and listed once in the format sentence
        for field in task.expected_answer:
            assert not re.fullmatch(r"[a-z]+\d+", field), field
            assert task.query.count(f'"{field}"') >= 2, (field, task.query)
        # no question adds up or subtracts figures of different kinds
        for text in task.internal_spec["answers"].values():
            assert " minus the " not in text and "the sum of the" not in text, text


def test_challenge_tasks_are_longer_and_deeper(standard: Synth, challenge: Synth) -> None:
    calls = [statistics.mean(t.metadata["calls"] for t in s[0]) for s in (standard, challenge)]
    depth = [statistics.mean(t.metadata["depth"] for t in s[0]) for s in (standard, challenge)]
    assert calls[1] >= 1.5 * calls[0], calls
    assert depth[1] > depth[0], depth
    assert all(len(t.metadata["chain_lengths"]) >= 2 for t in challenge[0])


def test_coordinates_tag_capabilities_and_a_primary_atom(standard: Synth, challenge: Synth) -> None:
    for task in standard[0] + challenge[0]:
        c = task.coordinate
        assert c.taxonomy_id == 20096 and "tool_use" in c.capabilities
        assert c.primary_difficulty in c.atoms
    assert all("ambiguous_goal" in t.coordinate.atoms for t in challenge[0])


def test_rubric_grades_outcomes_not_call_order(
    standard: Synth, freight_sandbox: Sandbox, freight_bundle: Bundle
) -> None:
    task = next(t for t in standard[0] if t.expected_answer)
    session = freight_sandbox.open(freight_bundle, task.init_config)
    try:
        session.call_many([(c.tool, c.args) for c in task.reference_calls])
        final = session.state()
    finally:
        session.close()
    calls = [(c.tool, dict(c.args)) for c in reversed(task.reference_calls)]
    assert grade(task, Outcome(final_state=final, answer=dict(task.expected_answer), calls=calls)).passed
    assert all(i.check is not None and i.check.kind not in ("called", "not_called") for i in task.rubric)
    wrong = {
        k: (v + 1 if isinstance(v, (int, float)) and not isinstance(v, bool) else "nope")
        for k, v in task.expected_answer.items()
    }
    assert not grade(task, Outcome(final_state=final, answer=wrong)).passed
    # changing a record nobody asked about fails the general item
    initial = task.init_config
    table, key = next(
        (t, k)
        for t, v in sorted(final.items())
        if isinstance(v, dict)
        for k in sorted(v, reverse=True)
        if k in (initial.get(t) or {})
        and v[k] == initial[t][k]
        and any(
            isinstance(x, str) and f.endswith(("name", "note", "description", "city", "title"))
            for f, x in v[k].items()
        )
    )
    field = next(
        f
        for f in final[table][key]
        if isinstance(final[table][key][f], str)
        and f.endswith(("name", "note", "description", "city", "title"))
        or f == "zzz"
    )
    meddled = {**final, table: {**final[table], key: {**final[table][key], field: "meddled"}}}
    score = grade(task, Outcome(final_state=meddled, answer=dict(task.expected_answer)))
    assert not score.passed and any(i.id == "G1" and i.passed is False for i in score.items)


def _rebuilt(task: Task, **changes: Any) -> Task:
    data = task.model_dump(exclude={"id"})
    data.update(changes)
    return Task.model_validate(data)


def test_consistency_rejects_unrelated_writes_and_ungrounded_arguments(
    standard: Synth, freight_spec: EnvSpec
) -> None:
    task = standard[0][0]
    assert consistency_problems(task, freight_spec) == []
    table = "carriers"
    key = sorted(task.init_config[table])[0]
    # a write the task has no objective for: a delete of a record it never names
    delete = next(
        t
        for t in freight_spec.tools
        if t.op == "delete" and t.name not in {c.tool for c in task.reference_calls}
    )
    param = freight_spec.entity(delete.entity).key
    stray = ReferenceCall(tool=delete.name, args={param: "X"}, sources={param: "literal"})
    diff = {"table": table, "key": key, "field": "name", "before": "a", "after": "b"}
    tampered = _rebuilt(
        task, reference_calls=[*task.reference_calls, stray], expected_diff=[*task.expected_diff, diff]
    )
    problems = consistency_problems(tampered, freight_spec)
    assert any("no objective in the description asks for it" in p for p in problems)
    assert any("which no objective names" in p for p in problems)
    for source in ("s0", "query"):
        i, call = next(
            (i, c)
            for t in standard[0]
            for i, c in enumerate(t.reference_calls)
            if any(v.startswith(source) for v in c.sources.values()) and (task := t)
        )
        param = next(p for p, v in call.sources.items() if v.startswith(source))
        forged = ReferenceCall(tool=call.tool, args={**call.args, param: "FORGED-1"}, sources=call.sources)
        calls = list(task.reference_calls)
        calls[i] = forged
        problems = grounding_problems(_rebuilt(task, reference_calls=calls))
        assert problems and "FORGED-1" in problems[0]


def test_a_list_argument_is_stated_when_every_value_it_holds_is(standard: Synth) -> None:
    """A filter a seed's parameter takes as a list (`status: ['available']`) comes from the description
    when the description states each value."""
    task, i, call, param = next(
        (t, i, c, p)
        for t in standard[0]
        for i, c in enumerate(t.reference_calls)
        for p, v in c.sources.items()
        if v == "query" and isinstance(c.args[p], str)
    )
    for value, stated in (([call.args[param]], True), ([call.args[param], "ZZ-UNSAID"], False), ([], False)):
        calls = list(task.reference_calls)
        calls[i] = ReferenceCall(tool=call.tool, args={**call.args, param: value}, sources=call.sources)
        problems = grounding_problems(_rebuilt(task, reference_calls=calls))
        assert (problems == []) is stated, (value, problems)


def test_an_integer_id_passed_as_text_is_grounded_in_the_record_it_names(standard: Synth) -> None:
    """A seed's integer key (a pet's id 9) given to a domain tool that takes ids as text ('9') is the
    record's value; another number is not."""
    task, i, call, param = next(
        (t, i, c, p)
        for t in standard[0]
        for i, c in enumerate(t.reference_calls)
        for p, v in c.sources.items()
        if v.startswith("s0:")
    )
    table, key, field = call.sources[param].removeprefix("s0:").split(".", 2)
    init = copy.deepcopy(task.init_config)
    init[table][key][field] = 9
    for passed, grounded in (("9", True), ("10", False), (9.5, False)):
        calls = list(task.reference_calls)
        calls[i] = ReferenceCall(tool=call.tool, args={**call.args, param: passed}, sources=call.sources)
        problems = grounding_problems(_rebuilt(task, init_config=init, reference_calls=calls))
        assert (problems == []) is grounded, (passed, problems)


def test_synthesis_is_deterministic_for_a_seed(
    freight_dir: Path, freight_sandbox: Sandbox, standard: Synth
) -> None:
    again, _ = synthesize_dag_tasks(freight_dir, freight_sandbox, variant="dag-standard", n=5, seed=0)
    assert [t.id for t in again] == [t.id for t in standard[0]]
    other, _ = synthesize_dag_tasks(freight_dir, freight_sandbox, variant="dag-standard", n=2, seed=7)
    assert {t.id for t in other} != {t.id for t in standard[0][:2]}


class _Rephraser:
    """A stand-in model: returns the query with a prefix, or with a leak if told to."""

    model = "fake"

    def __init__(self, leak: str | None) -> None:
        self.leak = leak
        self.seen = 0

    def complete(self, messages: Any, **kwargs: Any) -> LLMResponse:
        self.seen += 1
        text = messages[-1]["content"]
        new = f"Hi there! {text}" + (f" Use {self.leak}." if self.leak else "")
        return LLMResponse(text=new, data={"query": new}, request_hash=str(self.seen))

    @property
    def usage(self) -> Usage:
        return Usage()


def test_llm_phrasing_is_used_only_when_it_passes_the_checks(
    freight_dir: Path, freight_sandbox: Sandbox
) -> None:
    clean = _Rephraser(None)
    tasks, _ = synthesize_dag_tasks(freight_dir, freight_sandbox, variant="dag-standard", n=1, llm=clean)
    assert (
        clean.seen >= 1
        and tasks[0].query.startswith("Hi there!")
        and tasks[0].metadata["phrased_by"] == "llm"
    )
    leaky = _Rephraser("get_consignment")
    tasks, _ = synthesize_dag_tasks(freight_dir, freight_sandbox, variant="dag-standard", n=1, llm=leaky)
    assert "get_consignment" not in tasks[0].query and tasks[0].metadata["phrased_by"] == "template"


def test_summary_counts_what_an_asset_shows(standard: Synth, challenge: Synth) -> None:
    tasks = standard[0] + challenge[0]
    summary = summarize_tasks(tasks, standard[1] + challenge[1])
    assert summary["kept"] == len(tasks) and summary["by_variant"]["dag_challenge"] == len(challenge[0])
    assert sum(summary["depth"].values()) == len(tasks)
    assert sum(summary["rejected_by_stage"].values()) == len(standard[1]) + len(challenge[1])


def test_a_request_never_sets_a_field_of_one_record_twice() -> None:
    """'Mark change order CHA-008 rejected ... now set that change order to approved' undoes its own
    step: the second write of the same field of the same record is refused (another chain is tried)."""
    from types import SimpleNamespace

    from agentomnia.tasks.dag.generate import Executed, Generated, Generator, Reject

    def tool(op: str, **binding: object) -> SimpleNamespace:
        return SimpleNamespace(name=f"{op}_order", kind="write", op=op, binding=binding, parameters={})

    reject, approve = (
        tool("transition", attr="status", value="rejected"),
        tool("transition", attr="status", value="approved"),
    )
    update = tool("update", key="order_id", fields={"approver": "approver", "note": "note"})
    gen = Generator.__new__(Generator)
    gen.out = Generated()
    gen.out.calls.append(
        Executed(0, reject, {"order_id": "CHA-008"}, {}, {}, ("change_order", "CHA-008"), None)
    )  # type: ignore[arg-type]
    assert gen._overwrites(approve, {}, ("change_order", "CHA-008")) == ["status"]  # type: ignore[arg-type]
    assert gen._overwrites(approve, {}, ("change_order", "CHA-009")) == []  # type: ignore[arg-type]
    assert gen._overwrites(update, {"approver": "Wes Reed"}, ("change_order", "CHA-008")) == []  # type: ignore[arg-type]
    gen.out.calls.append(
        Executed(1, update, {"approver": "Wes Reed"}, {}, {}, ("change_order", "CHA-008"), None)
    )  # type: ignore[arg-type]
    assert gen._overwrites(update, {"approver": "M. Wong", "note": "ok"}, ("change_order", "CHA-008")) == [
        "approver"
    ]  # type: ignore[arg-type]
    try:
        gen.call(approve, {}, {}, ("change_order", "CHA-008"), None)  # type: ignore[arg-type]
    except Reject as exc:
        assert exc.stage == "redundant" and "status" in exc.reason
    else:
        raise AssertionError("a second status change of CHA-008 was not refused")
    # "set CHA-008 to rejected ... remove that change order": a record the request changed is not
    # then deleted (nor one it created); another record may be
    delete = tool("delete", key="order_id")
    assert gen._written_here(("change_order", "CHA-008")) == "changed"
    assert gen._written_here(("change_order", "CHA-009")) is None
    with pytest.raises(Reject, match="which this request changed") as refused:
        gen.call(delete, {}, {}, ("change_order", "CHA-008"), None)  # type: ignore[arg-type]
    assert refused.value.stage == "redundant"


def test_a_request_never_asks_back_a_figure_it_gave() -> None:
    """'Set up a stop with sequence 4 ... tell me the new stop's sequence' asks the user for what they
    said themselves: a field an earlier write of this request set, and that still holds that value,
    is no question; one a later step moved on, or another record's, still is."""
    from types import SimpleNamespace

    from agentomnia.tasks.dag.generate import Executed, Generated, Generator

    create = SimpleNamespace(
        name="create_stop", kind="write", op="create", binding={"fields": {"sequence": "sequence"}}
    )
    get = SimpleNamespace(name="get_stop", kind="read", op="get", binding={"key": "stop_id"})
    gen = Generator.__new__(Generator)
    gen.out = Generated()
    gen.out.calls.append(Executed(0, create, {"sequence": 4}, {}, {}, ("stop", "STO-009"), None))  # type: ignore[arg-type]
    read = Executed(1, get, {"stop_id": "STO-009"}, {}, {}, ("stop", "STO-009"), None)  # type: ignore[arg-type]
    other = Executed(1, get, {"stop_id": "STO-002"}, {}, {}, ("stop", "STO-002"), None)  # type: ignore[arg-type]
    assert gen._given_here(read, "sequence", 4)
    assert not gen._given_here(read, "sequence", 5)  # a later step moved it on: worth asking
    assert not gen._given_here(other, "sequence", 4)
    assert not gen._given_here(read, "eta", "2026-06-11T08:30:00")


def test_who_did_a_thing_and_when_it_was_done_read_as_a_person_says_them() -> None:
    """ "Record the watchlist entry ... as listed by the analyst named 'Whitney Scott'" (never "... should
    go to her as its listed by"); "the date the milestone called 'Beta' was achieved" (never "the
    achieved on of ..."); a plain reference and a planned date keep their wordings."""
    from agentomnia.envs.spec import AttributeSpec
    from agentomnia.tasks.dag.generate import assign_wordings, when_done

    said = [w.format(p="the watchlist entry", P="The watchlist entry", a="listed by", t="that analyst")
            for w in assign_wordings("listed by")]  # fmt: skip
    assert said and all(" as its " not in w and "listed by that analyst" in w for w in said), said
    assert "Reassign {p} so its {a} is {t}." in assign_wordings("carrier")
    milestone = "the milestone called 'Beta'"
    assert when_done(milestone, AttributeSpec(name="achieved_on", type="date")) == (
        "the date the milestone called 'Beta' was achieved"
    )
    assert when_done("that fault", AttributeSpec(name="reported_at", type="datetime")) == (
        "the time that fault was reported"
    )
    assert when_done(milestone, AttributeSpec(name="due_date", type="date")) is None
    assert when_done(milestone, AttributeSpec(name="approved_on", type="str")) is None


def test_what_later_steps_do_to_a_new_record_is_graded(freight_spec: EnvSpec, freight_bundle: Bundle) -> None:
    # create a record, then move its status and write a note on it: the record check asks for those
    # too, not only for what the create was given; a date the clock stamped is left out
    from agentomnia.tasks.dag.generate import Executed, Generated
    from agentomnia.tasks.dag.synth import _created_fields

    tool, entity = next(
        (t, e)
        for t in freight_spec.tools
        if t.op == "create"
        and (e := freight_spec.entity(t.entity)).status_attribute is not None
        and e.status_attribute.name not in t.binding["fields"].values()
    )
    status = entity.status_attribute
    assert status is not None
    fields = tool.binding["fields"]
    born = dict(next(iter(freight_bundle.s0[entity.table].values())))
    born[entity.key] = "NEW-099"
    given = {p: born[a] for p, a in fields.items() if a in born}
    later = {**born, status.name: next(v for v in status.enum if v != born.get(status.name))}
    dated = next((a for a in entity.attributes if a.type in ("date", "datetime")), None)
    if dated is not None:
        later[dated.name] = "2031-01-01"
    out = Generated(calls=[Executed(0, tool, given, {}, born, None, None)])
    (asked,) = _created_fields(freight_spec, out, {entity.table: {"NEW-099": later}})[entity.table]
    assert asked == {**{fields[p]: v for p, v in given.items()}, status.name: later[status.name]}


def test_a_yes_no_check_states_the_level_as_the_persons_rule(standard: Synth, challenge: Synth) -> None:
    from agentomnia.envs.values import written_figure
    from agentomnia.tasks.dag.generate import _WHY_A_LEVEL

    checked = [t for t in standard[0] + challenge[0] if "VALIDATE" in t.metadata["virtual"]]
    assert checked
    for task in checked:
        keys = [k for k in task.expected_answer if "_at_least_" in k]
        assert keys, task.expected_answer
        for key in keys:
            level = key.rpartition("_at_least_")[2].replace("_", ".")
            said = written_figure(int(level) if level.isdigit() else float(level))  # "6,000"
            rules = [w.format(t=said) for w in _WHY_A_LEVEL]
            assert any(r in task.query for r in rules) is (level != "1"), task.query
            figure = task.expected_answer[key.partition("_at_least_")[0]]
            assert task.expected_answer[key] is (figure >= float(level))
    # the figure checked is named as what it is ("whether the number of open shipments is at least
    # 3"), not only by its answer field ("whether "shipment_count" is at least 3")
    asks = [
        next(s for s in re.split(r"(?<=[.?!])\s+", t.query) if f'"{k}"' in s)
        for t in checked
        for k in t.expected_answer
        if "_at_least_" in k
    ]
    assert any(s.count('"') == 2 for s in asks), asks


def test_a_search_uses_a_word_that_finds_a_few_records(
    standard: Synth, challenge: Synth, freight_spec: EnvSpec, freight_dir: Path, freight_sandbox: Sandbox
) -> None:
    from agentomnia.tasks.dag.generate import _FILLER_WORDS

    # a sample of its own beside the shared ones, so that some task searches whatever the world holds
    more = []
    for seed in range(7, 27):
        more += synthesize_dag_tasks(freight_dir, freight_sandbox, variant="dag-standard", n=12, seed=seed)[0]
    searches = [
        (t, c)
        for t in standard[0] + challenge[0] + more
        for c in t.reference_calls
        if freight_spec.tool(c.tool).op == "search" and "query" in c.args
    ]
    assert len(searches) >= 2, len(searches)
    for task, call in searches:
        word = str(call.args["query"])
        assert len(word) >= 3 and word.casefold() not in _FILLER_WORDS, word
        tool = freight_spec.tool(call.tool)
        table = freight_spec.entity(tool.entity).table
        fields = tool.binding["text_fields"]
        found = [
            r
            for r in task.init_config[table].values()
            if any(word.casefold() in str(r.get(f) or "").casefold() for f in fields)
        ]
        assert 1 <= len(found) <= 3, (word, len(found), task.metadata.get("hardening_used"), task.id)


def test_counts_say_what_they_count_so_only_like_counts_are_combined(freight_spec: EnvSpec) -> None:
    from agentomnia.tasks.dag.generate import Executed, _counted_by

    def step(tool: str, **args: Any) -> Executed:
        return Executed(0, freight_spec.tool(tool), args, {}, {}, None, None)

    assert _counted_by(step("list_handling_units", type="pallet", hazardous=True)) == "hazardous+type"
    assert _counted_by(step("list_handling_units", type="crate")) == "type"
    assert _counted_by(step("list_bills")) == "all"
    assert _counted_by(step("search_carriers", query="Ridge")) == "search"
