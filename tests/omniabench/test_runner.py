"""The evaluation runner on the parcel-claims environment: real rollouts, real grading."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentomnia.llm.protocol import LLMError
from agentomnia.omniabench.metrics import report
from agentomnia.omniabench.models import EvalResult
from agentomnia.omniabench.runner import PolicyFactory, end_state_diff, evaluate
from agentomnia.omniabench.split import benchmark_item
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.models import RubricItem, Task
from agentomnia.trajectories.agents import Agent, OfflineTeacher, read_tool_tables
from agentomnia.trajectories.guidance import build_guidance
from agentomnia.trajectories.messages import assistant_message, tool_call
from agentomnia.trajectories.rollout import reference_plan
from tests.fixtures.benchmark import S0
from tests.fixtures.benchmark import make_task as small_task
from tests.fixtures.parcel import Parcel


def reference_policy(sandbox: Sandbox) -> PolicyFactory:
    """The privileged reference: the offline teacher with the task's plan and outcome guidance."""

    def make(task: Task, bundle: Bundle, trial: int) -> Agent:
        plan = reference_plan(task, bundle, sandbox)
        return OfflineTeacher(task, plan, build_guidance(task), read_tools=read_tool_tables(bundle))

    return make


class Scripted:
    """Plays fixed assistant turns, then answers "done"; `fail` raises on the first turn instead."""

    def __init__(self, turns: Sequence[dict[str, Any]] = (), fail: BaseException | None = None) -> None:
        self.turns = list(turns)
        self.fail = fail
        self.name = "scripted"

    def act(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        if self.fail is not None:
            raise self.fail
        return self.turns.pop(0) if self.turns else assistant_message("I am done.")


def scripted(turns: Sequence[dict[str, Any]] = (), fail: BaseException | None = None) -> PolicyFactory:
    return lambda task, bundle, trial: Scripted(turns, fail)


def _run(
    tasks: Sequence[Task], parcel: Parcel, policy: PolicyFactory, trials: int = 1, **kw: Any
) -> list[EvalResult]:
    items = {t.id: benchmark_item(t) for t in tasks}
    bundles = kw.pop("bundles", {parcel.env_id: parcel.bundle})
    return evaluate(tasks, items, bundles, parcel.sandbox, policy, policy_name=kw.pop("name", "test"),
                    eval_id="eval-1", trials=trials, **kw)  # fmt: skip


def test_reference_policy_passes_every_task(tasks: list[Task], parcel: Parcel) -> None:
    seen: list[EvalResult] = []
    results = _run(
        tasks, parcel, reference_policy(parcel.sandbox), trials=2, workers=2, on_result=seen.append
    )
    assert [(r.task_id, r.trial) for r in results] == [(t.id, k) for t in tasks for k in range(2)]
    assert sorted(r.id for r in seen) == sorted(r.id for r in results)
    failed = {r.task_kind: r.details for r in results if not r.passed}
    assert failed == {}
    assert all(r.score == 1.0 and r.infra_error is None for r in results)
    # the diff is taken against expected_diff: tasks that declare theirs end with nothing unmet or stray
    declared = {t.id for t in tasks if t.expected_diff or t.kind == "program"}
    assert declared and all(r.state_diff == () for r in results if r.task_id in declared)
    assert {r.route for r in results} == {"dag", "dag_s", "program", "solver"}
    assert all(all(v is True for v in r.components.values()) for r in results)
    rep = report(results)
    assert rep.overall.pass_at_1 == 1.0 and rep.overall.pass_hat_k == 1.0 and rep.k == 2
    approve = results[0]
    assert approve.steps and approve.messages[0]["role"] == "system" and approve.initial_hash


def test_doing_nothing_passes_nothing(tasks: list[Task], parcel: Parcel) -> None:
    results = _run(tasks, parcel, scripted(), name="noop")
    assert not any(r.passed for r in results) and all(r.infra_error is None for r in results)
    assert report(results).overall.pass_at_1 == 0.0
    approve = results[0]
    # the approve task expects one status change; it is reported as unmet, with what is there instead
    (diff,) = approve.state_diff
    assert (diff.table, diff.field, diff.expected) == ("claims", "status", "approved")
    assert diff.actual == diff.initial != "approved"
    assert approve.components["T1"] is False and "expected 'approved'" in approve.details["T1"]


def test_policy_errors_are_agent_failures_but_broken_infrastructure_is_not(
    tasks: list[Task], parcel: Parcel
) -> None:
    task = tasks[0]
    raised = _run([task], parcel, scripted(fail=ValueError("policy bug")))[0]
    assert raised.infra_error is None and not raised.passed
    assert raised.stop_reason == "error" and "policy bug" in (raised.error or "")

    unreachable = _run([task], parcel, scripted(fail=LLMError("connection refused")))[0]
    assert unreachable.infra_error is not None and "connection refused" in unreachable.infra_error

    broken = Bundle(source="class Broken:\n    def __init__(self, init_config):\n        raise RuntimeError('boom')\n",
                    class_name="Broken", tools=parcel.bundle.tools)  # fmt: skip
    crashed = _run([task], parcel, scripted(), bundles={parcel.env_id: broken})[0]
    assert crashed.infra_error is not None and "could not complete" in crashed.infra_error
    missing = _run([task], parcel, scripted(), bundles={})[0]
    assert missing.infra_error is not None and "no bundle" in missing.infra_error

    def unbuildable(task: Task, bundle: Bundle, trial: int) -> Agent:
        raise OSError("checkpoint folder not found")

    assert "could not be built" in (_run([task], parcel, unbuildable)[0].infra_error or "")
    rep = report([raised, unreachable, crashed, missing])
    assert rep.overall.trials == 1 and rep.overall.infra_errors == 3 and rep.overall.pass_at_1 == 0.0


SPIN_SOURCE = """
class Spin:
    def __init__(self, init_config):
        self.claims = dict(init_config.get("claims", {}))

    def spin(self):
        while True:  # hangs on purpose: only the sandbox's call timeout can end it
            continue
"""


def test_a_tool_that_hangs_is_an_infrastructure_error() -> None:
    tools = [{"type": "function", "function": {"name": "spin", "description": "Spin.", "parameters": {"type": "object", "properties": {}}}}]  # fmt: skip
    bundle = Bundle(source=SPIN_SOURCE, class_name="Spin", tools=tools)
    task = small_task("Please spin the wheel once.")
    with Sandbox(workers=1, call_timeout_s=0.5, cpu_seconds=2, idle_timeout_s=0) as box:
        results = evaluate(
            [task], {}, {task.env_id: bundle}, box,
            scripted([assistant_message("Spinning.", [tool_call("c1", "spin", {})])]),
            policy_name="spinner", eval_id="eval-spin", trials=1,
        )  # fmt: skip
    (result,) = results
    assert result.infra_error is not None and "timeout" in result.infra_error
    assert result.steps[0].error_code == "timeout"


def test_end_state_diff_reports_unmet_and_unexpected_changes() -> None:
    task = small_task("Approve the claim.").model_copy(
        update={"expected_diff": ({"table": "claims", "key": "CLA-001", "field": "status", "before": "open", "after": "approved"},)}
    )  # fmt: skip
    final = {
        "claims": {
            **S0["claims"],
            "CLA-002": {**S0["claims"]["CLA-002"], "status": "rejected"},
            "CLA-004": {"claim_id": "CLA-004", "status": "open"},
        },
        "shipments": S0["shipments"],
        "now": "2024-05-02",  # a scalar attribute (the clock) is not a record
    }
    diffs = {(d.key, d.field): d for d in end_state_diff(task, final)}
    assert set(diffs) == {("CLA-001", "status"), ("CLA-002", "status"), ("CLA-004", "*")}
    assert diffs["CLA-001", "status"].actual == "open" and diffs["CLA-001", "status"].expected == "approved"
    assert diffs["CLA-002", "status"].expected == "open" and diffs["CLA-002", "status"].actual == "rejected"
    assert diffs["CLA-004", "*"].initial is None
    done = {**final, "claims": {**S0["claims"], "CLA-001": {**S0["claims"]["CLA-001"], "status": "approved"}}}
    assert end_state_diff(task, done) == ()


def test_verifier_code_runs_in_the_sandbox(tasks: list[Task], parcel: Parcel) -> None:
    program = next(t for t in tasks if t.kind == "program")
    # deleting a claim breaks the program task's "leave every claim alone" verifier; the environment
    # refuses to delete a claim other records refer to, so the vandal takes the first it may delete
    for victim in sorted(parcel.s0["claims"]):
        vandal = scripted(
            [assistant_message("Deleting.", [tool_call("c1", "delete_claim", {"claim_id": victim})])]
        )
        result = _run([program], parcel, vandal)[0]
        if result.state_diff:
            break
    g1 = next(i for i in program.rubric if i.check is not None and i.check.kind == "verifier")
    assert result.components[g1.id] is False and "check_func returned False" in result.details[g1.id]
    assert any(d.key == victim for d in result.state_diff)


def test_multi_turn_tasks_get_the_scripted_user(tasks: list[Task], parcel: Parcel) -> None:
    multi = next(t for t in tasks if t.interaction == "multi" and t.kind == "dag_standard")
    asker = scripted([assistant_message("Which claim do you mean? Please give me the claim id.")])
    result = _run([multi], parcel, asker)[0]
    users = [m for m in result.messages if m["role"] == "user"]
    assert len(users) == 2 and result.route == "dag"  # the opening and the simulator's reply
    # the rubric of a task without a check item cannot be faked by a reply alone
    assert not result.passed


def test_unscored_items_keep_a_task_from_passing(parcel: Parcel, tasks: list[Task]) -> None:
    base = tasks[0]
    polite = RubricItem(id="T9", text="Is polite.", scope="task")  # no check and no judge: unscored
    task = Task.model_validate({**base.model_dump(exclude={"id"}), "rubric": [*base.rubric, polite]})
    result = _run([task], parcel, reference_policy(parcel.sandbox))[0]
    assert result.components["T9"] is None and result.score == 1.0 and not result.passed
