"""Program tasks on an environment built in this test session: synthesis, oracle, replay, leakage."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from agentomnia.envs.build import BuiltEnv
from agentomnia.envs.state import state_violations
from agentomnia.llm.protocol import LLMResponse, Usage
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.models import Task
from agentomnia.tasks.program import (
    check_program_task,
    control_flow,
    propose_plans,
    query_problems,
    render,
    render_query,
    synthesize_program_tasks,
)


@pytest.fixture(scope="module")
def synthesized(parcel_bundle: Path, sandbox: Sandbox) -> tuple[list[Task], list[Any]]:
    return synthesize_program_tasks(parcel_bundle, sandbox, n=3, seed=0)


def test_tasks_have_loops_branches_and_clean_queries(
    synthesized: tuple[list[Task], list[Any]], parcel_env: BuiltEnv
) -> None:
    tasks, _ = synthesized
    assert len(tasks) == 3
    for task in tasks:
        assert task.kind == "program" and task.reference_program
        flow = control_flow(task.reference_program)
        assert flow.loops >= 1 and flow.branches >= 1
        assert query_problems(task.query, parcel_env.spec) == []
        assert task.expected_answer["changed"] and task.expected_answer["count"] == len(
            task.expected_answer["changed"]
        )
        assert state_violations(parcel_env.spec, task.init_config) == []
        assert task.coordinate.primary_difficulty == "dynamic_planning"
        assert "iterate_over_items" in task.metadata["levers"]
    # arguments are grounded: ids written come from earlier outputs, not invented
    writes = {t.name for t in parcel_env.spec.tools if t.kind == "write"}
    for task in tasks:
        for call in task.reference_calls:
            if call.tool in writes:
                assert any(src.startswith(("out:", "s0:")) for src in call.sources.values()), call


def test_queries_name_every_checked_answer_field_and_vary_with_the_plan(
    synthesized: tuple[list[Task], list[Any]], parcel_env: BuiltEnv
) -> None:
    tasks, _ = synthesized
    for task in tasks:
        checked = [i.check.field for i in task.rubric if i.check and i.check.kind == "answer_equals"]
        assert checked and all(f'"{f}"' in task.query for f in checked), task.query
    import random

    plans = propose_plans(parcel_env.spec, parcel_env.s0, random.Random(0))
    queries = {render_query(parcel_env.spec, p) for p in plans}
    assert len(queries) == len(plans)
    # the same plan is always worded the same way; different plans are opened differently
    assert render_query(parcel_env.spec, plans[0]) == render_query(parcel_env.spec, plans[0])
    if len(plans) >= 4:
        assert len({q.split(".")[0] for q in queries}) >= 2


def test_oracle_reference_passes_empty_and_one_wrong_item_fail(
    synthesized: tuple[list[Task], list[Any]], parcel_bundle: Path, sandbox: Sandbox
) -> None:
    bundle = Bundle.load(parcel_bundle)
    for task in synthesized[0]:
        report = check_program_task(task, sandbox, bundle)
        assert report.passed and report.reference_passes and report.empty_fails and report.wrong_item_fails, (
            report
        )


def test_reexecution_from_init_config_reproduces_calls_and_answer(
    synthesized: tuple[list[Task], list[Any]], parcel_bundle: Path, sandbox: Sandbox
) -> None:
    bundle = Bundle.load(parcel_bundle)
    task = synthesized[0][0]
    session = sandbox.open(bundle, task.init_config)
    result = sandbox.run_program(task.reference_program or "", session)
    final = session.state()
    session.close()
    assert result.answer == task.expected_answer
    assert [(c.tool, c.arguments) for c in result.calls] == [(c.tool, c.args) for c in task.reference_calls]
    # an extra record changed the same way fails too (collateral change)
    changed = {(d["table"], d["key"]) for d in task.expected_diff}
    d0 = task.expected_diff[0]
    other = next(k for k in sorted(final[d0["table"]]) if (d0["table"], k) not in changed)
    broken = copy.deepcopy(final)
    broken[d0["table"]][other][d0["field"]] = d0["after"]
    if broken != final:
        assert sandbox.run_check(task.verifier_code or "", task.init_config, broken).passed is False


def test_every_rejection_says_why(synthesized: tuple[list[Task], list[Any]]) -> None:
    for rejection in synthesized[1]:
        assert rejection.kind == "program" and rejection.stage and len(rejection.reason) > 10


def test_leakage_checker_fails_tool_names_keys_and_steps(parcel_env: BuiltEnv) -> None:
    spec = parcel_env.spec
    tool = next(t for t in spec.tools if "_" in t.name)
    key = next(p for t in spec.tools for p in t.parameters.get("properties", {}) if "_" in p)
    assert query_problems(f"Please run {tool.name} on every record.", spec)
    assert query_problems(f"Set {key} for every late record.", spec)
    assert query_problems("Step 1: list the claims. Step 2: approve them.", spec)
    plan = propose_plans(spec, parcel_env.s0, __import__("random").Random(3))[0]
    assert query_problems(render_query(spec, plan), spec) == []


def test_debug_loop_repairs_a_refused_move_or_drops_with_reason(
    parcel_env: BuiltEnv, parcel_bundle: Path, sandbox: Sandbox
) -> None:
    import random

    from agentomnia.tasks.program import debug_program
    from agentomnia.tasks.program.plan import Predicate

    spec, s0 = parcel_env.spec, parcel_env.s0
    plans = [
        p
        for p in propose_plans(spec, s0, random.Random(0))
        if p.template == "filter_write" and p.write.allowed_from
    ]
    assert plans, "the parcel environment has a guarded transition to exercise"
    plan = plans[0]
    everything = Predicate(attr=plan.predicate.attr, op=">=", value="0000-01-01" if plan.predicate.kind == "date" else -1e12,
                           kind=plan.predicate.kind)  # fmt: skip
    plan = plan.model_copy(update={"predicate": everything, "list_args": {"limit": plan.list_args["limit"]}})
    bundle = Bundle.load(parcel_bundle)
    result = debug_program(sandbox, bundle, spec, s0, plan=plan, budget=3)
    assert not isinstance(result, str), result
    assert result.attempts[-1].error is None
    # some records cannot make the move from their status: the first run's trace drove a repair
    assert len(result.attempts) > 1 and result.attempts[0].failed_calls and result.attempts[0].repair
    dropped = debug_program(
        sandbox, bundle, spec, s0, source="def solve(call):\n    raise ValueError('broken')\n", budget=2
    )
    assert isinstance(dropped, str) and "unresolved" in dropped and "broken" in dropped


def test_control_flow_counts_loops_and_branches() -> None:
    assert not control_flow("def solve(call):\n    return call('x')\n").ok
    flow = control_flow("def solve(call):\n    out = [i for i in range(3) if i]\n    return out\n")
    assert flow.loops == 1 and flow.branches == 1


class TemplateModel:
    """Stands in for a model: proposes a template program as if it had written it."""

    model = "template-stub"

    def __init__(self, spec: Any, plan: Any) -> None:
        self.naive = render(plan)  # raises on a refused write
        self.plan = plan.model_copy(update={"record_refusals": True, "guard_status": True})
        self.spec = spec
        self.repairs = 0

    def complete(self, messages: Sequence[Mapping[str, Any]], **_: Any) -> LLMResponse:
        prompt = str(messages[-1]["content"])
        if "It failed" in prompt:  # asked to repair from a trace: answer with the robust program
            self.repairs += 1
            return LLMResponse(text="```python\n" + render(self.plan) + "```", request_hash="stub")
        data = {"query": render_query(self.spec, self.plan), "intent": "join rule", "program": self.naive}
        return LLMResponse(text=json.dumps(data), data=data, request_hash="stub")

    @property
    def usage(self) -> Usage:
        return Usage()


def test_model_proposed_program_goes_through_the_same_checks(
    parcel_env: BuiltEnv, parcel_bundle: Path, sandbox: Sandbox
) -> None:
    import random

    # joins whose write some records refuse (a guarded transition): the naive program fails on them
    plans = [
        p
        for seed in range(5, 40)
        for p in propose_plans(parcel_env.spec, parcel_env.s0, random.Random(seed))
        if p.template == "join_write" and p.write.allowed_from
    ]
    assert plans, "the parcel environment has a guarded join to exercise"
    tried = []
    for plan in plans[:12]:  # the first whose robust program changes something in this state
        model = TemplateModel(parcel_env.spec, plan)
        tasks, rejections = synthesize_program_tasks(parcel_bundle, sandbox, n=1, seed=1, llm=model)
        if tasks and tasks[0].metadata.get("template") == "llm" and model.repairs:
            break
        tried.append([r.reason for r in rejections])
    else:
        raise AssertionError(tried)
    assert tasks[0].internal_spec["template"] == "llm" and tasks[0].metadata["template"] == "llm"
    assert tasks[0].metadata["repairs"] >= 1  # the trace drove a model-written repair
    assert check_program_task(tasks[0], sandbox, Bundle.load(parcel_bundle)).passed


def test_yes_no_writes_and_sums_are_said_as_a_person_would() -> None:
    from agentomnia.tasks.program.query import _flag_action, _summed

    for digest in ("a", "b", "c", "d"):
        assert _flag_action("opened", True, digest) in ("mark it opened", "mark it as opened")
        assert _flag_action("is_verified", False, digest) in (
            "mark it not verified",
            "mark it as not verified",
        )
        assert _flag_action("away_mode", True, digest) in ("turn its away mode on", "switch its away mode on")
        assert "yes" not in _flag_action("auto_renew", False, digest)
    for digest in ("a", "b", "c", "d"):  # an adjective is a state the record is in, not a setting
        assert _flag_action("serious", True, digest) in ("mark it serious", "mark it as serious")
        assert _flag_action("is_billable", False, digest) in (
            "mark it not billable",
            "mark it as not billable",
        )
        assert _flag_action("signature_captured", True, digest) == "mark its signature as captured"
        assert _flag_action("notice_sent", False, digest) == "mark its notice as not sent"
    assert _summed("total") == "their combined total"
    assert _summed("precip_mm") == "their total precip in mm"
    assert _summed("runtime_seconds") == "their total runtime in seconds"
    assert _summed("markup_pct") == "their total markup percentage"


def test_thresholds_and_dates_are_said_as_a_person_would() -> None:
    """'at least 10', never 'at least 10.4239'; 42,000, never 4.2e+04; 'issued before November 13, 2025',
    never 'whose issued on is before'; the fallback is 'the one submitted most recently'."""
    import random

    from agentomnia.envs.values import written_figure as figure
    from agentomnia.tasks.program.query import _rule
    from agentomnia.tasks.program.templates import Predicate, _threshold, roundest

    assert roundest(9.87, 10.4239, closed="high") == 10 and roundest(41877.2, 42267.7, closed="high") == 42000
    assert roundest(42267.7, 43000.5, closed="low") == 43000 and roundest(0.31, 0.34, closed="high") == 0.34
    values = [8.5, 9.87, 10.4239, 11.2, 30.1]
    for seed in range(6):
        op, level = _threshold(values, random.Random(seed), "number")
        picked = [v for v in values if (v > level if op == ">" else v >= level)]
        assert picked in ([10.4239, 11.2, 30.1], [11.2, 30.1]) and level in (10, 11), (op, level)
    assert [figure(v) for v in (42000.0, 2500000, 10.4239, 7)] == ["42,000", "2,500,000", "10.4239", "7"]
    issued = Predicate(attr="issued_on", op="<", value="2025-11-13", kind="date")
    assert _rule(issued, "") == "issued before November 13, 2025"
    due = Predicate(attr="due_date", op=">=", value="2025-11-13", kind="date")
    assert _rule(due, "") == "whose due date is on or after November 13, 2025"
    # a field named by what it counts is compared as a count, on the record or on its parent
    reschedules = Predicate(attr="reschedules", op=">=", value=2, kind="number")
    assert _rule(reschedules, "", "int") == "with at least 2 reschedules"
    assert _rule(reschedules, "appointment's ", "int") == "whose appointment has at least 2 reschedules"
    affected = Predicate(attr="households_affected", op=">", value=4600, kind="number")
    assert _rule(affected, "", "int") == "with more than 4,600 households affected"
    # none and any are said as words: never "more than 0 reschedules" or "fewer than 1 categories"
    assert _rule(Predicate(attr="reschedules", op=">", value=0, kind="number"), "", "int") == (
        "with at least one reschedule"
    )
    assert (
        _rule(Predicate(attr="categories", op="<", value=1, kind="number"), "", "int") == "with no categories"
    )
    fewer = Predicate(attr="guests", op="<", value=3, kind="number")
    assert _rule(fewer, "", "int") == "with fewer than 3 guests"
    minutes = Predicate(attr="estimated_minutes", op=">=", value=15, kind="number")
    assert _rule(minutes, "", "int") == "whose estimated time is at least 15 minutes"  # a measure
    status = Predicate(attr="status", op="==", value="tue", kind="enum")
    assert _rule(status, "") == "whose status is Tuesday"  # a weekday as an enum writes it short
    committed = Predicate(attr="committed", op=">", value=500000, kind="number")
    assert (
        _rule(committed, "OTB budget's ", "money") == "whose OTB budget's committed amount is above 500,000"
    )


def test_only_figures_that_add_up_are_summed_and_no_rule_picks_everything() -> None:
    """ "their total and average version" means nothing; "at least 0" of counts that start at 0 picks
    every record, so the rule says "more than 0" there."""
    import random

    from agentomnia.tasks.program.templates import _threshold, additive

    assert additive("premium") and additive("paid_amount") and additive("reschedules")
    assert not any(additive(n) for n in ("version", "sop_version", "rank", "model_year", "priority"))
    for seed in range(8):
        op, level = _threshold([0, 0, 0, 2, 5], random.Random(seed), "number")
        assert (op, level) != (">=", 0) and (op == ">" and level >= 0 or op == ">=" and level > 0)


def test_a_date_that_records_the_move_never_picks_the_records_to_move() -> None:
    """ "every filing granted before March: switch it to granted" grants what its date says was
    granted; a filing date picks filings to grant, a grant date does not."""
    from agentomnia.tasks.program.plan import Write
    from agentomnia.tasks.program.templates import _records_the_move

    grant = Write(tool="grant_filing", key_param="filing_id", op="transition", attr="status", value="granted")
    assert _records_the_move("granted_on", grant) and _records_the_move("granted_date", grant)
    assert not _records_the_move("filed_on", grant) and not _records_the_move("priority_date", grant)


def test_a_prd_rounds_task_guidance_is_in_what_the_model_is_asked(
    parcel_bundle: Path, sandbox: Sandbox
) -> None:
    """In a PRD-guided round the model reads the PRDs' task guidance when it proposes a program task;
    in any other round nothing is added."""

    class Recorder:
        model = "recorder"

        def __init__(self) -> None:
            self.prompts: list[str] = []

        def complete(self, messages: Sequence[Mapping[str, Any]], **_: Any) -> LLMResponse:
            self.prompts.append(str(messages[-1]["content"]))
            return LLMResponse(text="{}", data={}, request_hash="stub")  # unusable: the templates go on

        @property
        def usage(self) -> Usage:
            return Usage()

    guided, plain = Recorder(), Recorder()
    guidance = ("Ask for a change to every record of one state, and a total of the records changed.",)
    synthesize_program_tasks(parcel_bundle, sandbox, n=1, seed=1, llm=guided, guidance=guidance)  # type: ignore[arg-type]
    synthesize_program_tasks(parcel_bundle, sandbox, n=1, seed=1, llm=plain)  # type: ignore[arg-type]
    assert guided.prompts and all(guidance[0] in p and "product requirements" in p for p in guided.prompts)
    assert plain.prompts and not any("product requirements" in p for p in plain.prompts)
