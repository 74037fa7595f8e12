"""Re-checking a stored solver task: the checks `build_task` kept it by, run again from the task alone.

A solver task carries what its oracle needs: the initial state (the instance with the flawed draft),
the reference calls and plan, the verifier code and the solver's objective. The re-check replays the
reference in the task's bundle, runs the verifier on the reference, the untouched draft and the optimum
with one decision flipped, and repeats the leakage and initial-state checks. It does not use the DAG
consistency checker: a solver request states goals and constraints, not the writes that reach them.
"""

from __future__ import annotations

from typing import Any, cast

from pydantic import BaseModel, Field

from agentomnia.envs.spec import EnvSpec
from agentomnia.envs.state import state_violations
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.leakage import leakage_problems
from agentomnia.tasks.models import Task
from agentomnia.tasks.solver.families import FAMILIES
from agentomnia.tasks.solver.family import Plan, State
from agentomnia.tasks.solver.synthesize import solver_oracle


class SolverCheckReport(BaseModel):
    task_id: str
    reference_passes: bool
    empty_fails: bool
    flip_fails: bool
    problems: list[str] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.reference_passes and self.empty_fails and self.flip_fails and not self.problems


def check_solver_task(task: Task, sandbox: Sandbox, bundle: Bundle) -> SolverCheckReport:
    """The solver oracle, leakage and initial-state checks on one stored solver task."""
    name = task.internal_spec.get("family")
    family = FAMILIES.get(str(name))
    plan: Any = task.expected_answer.get("plan")
    if family is None or not isinstance(plan, dict) or not task.verifier_code:
        missing = (
            f"its problem family {name!r} is not one of {sorted(FAMILIES)}"
            if family is None
            else "it has no reference plan (expected_answer.plan)"
            if not isinstance(plan, dict)
            else "it has no verifier code"
        )
        return SolverCheckReport(
            task_id=task.id, reference_passes=False, empty_fails=False, flip_fails=False,
            problems=[f"not a checkable solver task: {missing}"],
        )  # fmt: skip
    spec = EnvSpec.model_validate(bundle.spec) if bundle.spec else family.spec()
    s0 = cast(State, task.init_config)
    optimum = (task.internal_spec.get("artifact") or {}).get("objective")
    oracle = solver_oracle(
        sandbox, family, bundle, s0, cast(Plan, plan), task.reference_calls, task.verifier_code, s0, optimum
    )
    problems = [oracle.problem] if oracle.problem else []
    problems += [
        f"the query gives away too much: {p}" for p in leakage_problems(task.query, spec, forbid_ids=True)
    ]
    problems += [
        f"the initial state breaks the environment's invariants: {p}" for p in state_violations(spec, s0)[:5]
    ]
    return SolverCheckReport(
        task_id=task.id,
        reference_passes=oracle.reference_passes,
        empty_fails=oracle.empty_fails,
        flip_fails=oracle.flip_fails,
        problems=problems,
    )
