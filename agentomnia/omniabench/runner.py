"""Running a policy on the benchmark: K trials per task, each graded into one `EvalResult`.

A trial is the shared rollout loop (a simulated user on multi-turn tasks) followed by the task's
own grading (rubric checks, verifier code in the sandbox). The policy under test sees only what the
rollout shows it — the system prompt, the user's messages, tool schemas and results — never the
task record; a factory may give its agent privileged knowledge (the reference policy does), which
is that factory's business and visible in its name.

Failures are split by whose fault they are. When the environment or the harness breaks (the session
will not open, a worker dies or times out, the verifier cannot run, a model endpoint cannot be
reached) the result carries `infra_error` and is never counted for or against the agent. When the
agent itself breaks (its policy raises, it returns garbage) that is an ordinary failed trial.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from agentomnia.llm.protocol import LLM, LLMError, LLMOutputError
from agentomnia.omniabench.decoders import DecoderError
from agentomnia.omniabench.models import BenchmarkItem, EvalResult, FieldDiff
from agentomnia.omniabench.split import benchmark_item
from agentomnia.sandbox import errors as sandbox_errors
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.grading import Outcome, diff_states, grade, values_match
from agentomnia.tasks.models import Task
from agentomnia.trajectories.agents import Agent
from agentomnia.trajectories.rollout import rollout
from agentomnia.trajectories.users import make_user

PolicyFactory = Callable[[Task, Bundle, int], Agent]
"""(task, bundle, trial) -> a fresh agent for one trial. Only the factory sees the task."""

ResultCallback = Callable[[EvalResult], None]

# Tool-call failure codes that mean the worker, not the tool's logic, failed: the worker died, or
# the call ran past its wall-clock, CPU or memory budget. Such a trial says nothing about the agent.
INFRA_CODES = frozenset(
    {
        sandbox_errors.WORKER_CRASHED,
        sandbox_errors.TIMEOUT,
        sandbox_errors.CPU_LIMIT,
        sandbox_errors.MEMORY_LIMIT,
    }
)
WHOLE_RECORD = "*"  # FieldDiff.field for a record created or deleted as a whole


class _GuardedAgent:
    """Passes every turn to the agent and remembers an endpoint transport failure or a decoder
    process that failed, so the runner can tell "the model could not be reached" (infrastructure)
    from "the policy broke" (the agent)."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.name = agent.name
        self.transport_error: str | None = None

    def act(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        try:
            return self.agent.act(messages, tools)
        except LLMOutputError:
            raise  # the endpoint answered, with something unusable: the agent's failure
        except LLMError as exc:
            self.transport_error = f"the policy's model endpoint failed: {exc}"
            raise
        except DecoderError as exc:
            self.transport_error = f"the policy's decoder process failed: {exc}"
            raise

    def close(self) -> None:
        """Let the agent free what it holds for this trial (a decoder process's cache), if it can."""
        close = getattr(self.agent, "close", None)
        if callable(close):
            close()


class _SandboxVerifier:
    """Verifier code run in the sandbox (`Sandbox.run_check`, the same seam the trajectory checks
    use through `quality.sandbox_verifier`), keeping the error when the worker rather than the check
    failed, so such a grade is reported as an infrastructure error instead of a wrong outcome."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.infra_error: str | None = None

    def __call__(
        self, code: str, initial_state: Mapping[str, Any], final_state: Mapping[str, Any]
    ) -> bool | None:
        result = self.sandbox.run_check(code, initial_state, final_state)
        if result.error is not None and result.error.code in INFRA_CODES:
            self.infra_error = f"verifier code could not run: {result.error.code}: {result.error.message}"
        return result.passed


def _lookup(state: Mapping[str, Any], table: str, key: Any, field: str | None) -> Any:
    records = state.get(table)
    if not isinstance(records, Mapping):
        return None
    record = records.get(key)
    if field is None or not isinstance(record, Mapping):
        return record
    return record.get(field)


def end_state_diff(task: Task, final_state: Mapping[str, Any]) -> tuple[FieldDiff, ...]:
    """Where the end state disagrees with the task: each expected change that did not happen (with
    what the field holds instead) and each changed field the task did not ask for (expected: its
    initial value). Scalar attributes such as the logical clock are not records and are skipped."""
    initial = task.init_config
    expected = {(str(d.get("table")), d.get("key"), d.get("field")): d for d in task.expected_diff}
    out: list[FieldDiff] = []
    for (table, key, field), change in expected.items():
        if not isinstance(initial.get(table), Mapping) or key is None:
            continue
        actual = _lookup(final_state, table, key, field)
        if not values_match(actual, change.get("after")):
            out.append(FieldDiff(
                table=table, key=str(key), field=field or WHOLE_RECORD,
                initial=change.get("before"), expected=change.get("after"), actual=actual,
            ))  # fmt: skip
    for d in diff_states(initial, final_state):
        if not isinstance(initial.get(d["table"]), Mapping) or d["key"] is None:
            continue
        if (d["table"], d["key"], d["field"]) in expected:
            continue
        if d["field"] is not None and (d["table"], d["key"], None) in expected:
            continue  # a field of a record the task creates or replaces as a whole
        out.append(FieldDiff(
            table=d["table"], key=str(d["key"]), field=d["field"] or WHOLE_RECORD,
            initial=d["before"], expected=d["before"], actual=d["after"],
        ))  # fmt: skip
    return tuple(out)


def _infra_result(
    task: Task, item: BenchmarkItem, *, policy_name: str, eval_id: str, trial: int, round_key: str,
    reason: str, started: float,
) -> EvalResult:  # fmt: skip
    return EvalResult(
        eval_id=eval_id, task_id=task.id, env_id=task.env_id, task_kind=task.kind, route=item.route,
        challenging=item.challenging, coordinate=task.coordinate, policy=policy_name, trial=trial,
        score=None, passed=False, infra_error=reason, stop_reason="error", round=round_key,
        seconds=round(time.monotonic() - started, 3),
    )  # fmt: skip


def run_trial(
    task: Task,
    item: BenchmarkItem,
    bundle: Bundle | None,
    sandbox: Sandbox,
    policy: PolicyFactory,
    *,
    policy_name: str,
    eval_id: str,
    trial: int,
    max_steps: int = 30,
    llm: LLM | None = None,
    round_key: str = "r0",
) -> EvalResult:
    """One graded trial. Never raises for a bad run: every outcome is an EvalResult."""
    started = time.monotonic()

    def infra(reason: str) -> EvalResult:
        return _infra_result(
            task, item, policy_name=policy_name, eval_id=eval_id, trial=trial, round_key=round_key,
            reason=reason, started=started,
        )  # fmt: skip

    if bundle is None:
        return infra(f"no bundle for environment {task.env_id}; build or load it before evaluating")
    try:
        agent = _GuardedAgent(policy(task, bundle, trial))
    except Exception as exc:  # a factory that cannot build its agent is a harness failure
        return infra(f"the policy could not be built: {type(exc).__name__}: {exc}")
    try:
        run = rollout(task, bundle, sandbox, agent, user=make_user(task, llm), max_steps=max_steps)
    except Exception as exc:  # the session, the worker or the user simulator failed, not the agent
        return infra(f"the run could not complete: {type(exc).__name__}: {exc}")
    finally:
        agent.close()
    infra_error = agent.transport_error if run.stop_reason == "error" else None
    crashed = next((s for s in run.steps if s.error_code in INFRA_CODES), None)
    if infra_error is None and crashed is not None:
        infra_error = f"step {crashed.index} (`{crashed.tool}`) hit a sandbox failure: {crashed.error_code}"
    verifier = _SandboxVerifier(sandbox)
    calls = [(s.tool, dict(s.arguments)) for s in run.steps if s.valid]
    score = grade(
        task, Outcome(final_state=run.final_state, answer=run.answer, calls=calls), verifier=verifier
    )
    infra_error = infra_error or verifier.infra_error
    return EvalResult(
        eval_id=eval_id, task_id=task.id, env_id=task.env_id, task_kind=task.kind, route=item.route,
        challenging=item.challenging, coordinate=task.coordinate, policy=policy_name, trial=trial,
        score=score.value, passed=score.passed and infra_error is None,
        components={i.id: i.passed for i in score.items}, details={i.id: i.detail for i in score.items},
        infra_error=infra_error, error=run.error if infra_error is None else None,
        stop_reason=run.stop_reason, state_diff=end_state_diff(task, run.final_state), answer=run.answer,
        messages=tuple(run.messages), steps=tuple(run.steps), initial_hash=run.initial_hash,
        round=round_key,
        seconds=round(time.monotonic() - started, 3),
    )  # fmt: skip


def evaluate(
    tasks: Sequence[Task],
    split_items: Mapping[str, BenchmarkItem],
    bundles: Mapping[str, Bundle],
    sandbox: Sandbox,
    policy: PolicyFactory,
    *,
    policy_name: str,
    eval_id: str,
    trials: int = 3,
    max_steps: int = 30,
    llm: LLM | None = None,
    workers: int = 2,
    on_result: ResultCallback | None = None,
    round_key: str = "r0",
) -> list[EvalResult]:
    """`trials` graded runs of `policy` on every task, ordered by task (input order) then trial.

    Trials run on `workers` threads (the sandbox pool is thread-safe; each trial has its own
    session). `llm` backs the user simulator of multi-turn tasks (scripted when None). A task
    missing from `split_items` gets its route and challenging flag from the split rules.
    `on_result` is called in the calling thread as each result arrives, in completion order.
    """
    if trials < 1:
        raise ValueError(f"trials must be at least 1, got {trials}")
    units = [(t, k) for t in tasks for k in range(trials)]

    def one(task: Task, trial: int) -> EvalResult:
        item = split_items.get(task.id) or benchmark_item(task)
        return run_trial(
            task, item, bundles.get(task.env_id), sandbox, policy, policy_name=policy_name,
            eval_id=eval_id, trial=trial, max_steps=max_steps, llm=llm, round_key=round_key,
        )  # fmt: skip

    results: list[EvalResult | None] = [None] * len(units)
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="omniabench") as pool:
        futures = {pool.submit(one, task, trial): n for n, (task, trial) in enumerate(units)}
        for future in as_completed(futures):
            result = future.result()
            results[futures[future]] = result
            if on_result is not None:
                on_result(result)
    return [r for r in results if r is not None]
