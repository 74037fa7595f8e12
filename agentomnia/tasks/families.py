"""The task-family registry: the one place that says what each family of tasks is and does.

A family (as inspect_ai's Task is a dataset + solver + scorer) is what a task kind belongs to:
`dag` (dag_standard, dag_challenge), `program` and `solver` (solver_anchored, solver_guided). Each
declares its kinds, the benchmark route it poses a task on, how it synthesizes tasks, how it
re-checks a stored task (`validate`: the same checks synthesis keeps a task by, so a task synthesis
keeps passes `tasks check`), and what makes one of its items challenging. Code that treats kinds
differently asks the registry (`family_of(task)`), never compares kind strings.

    family = family_of(task)                      # or family_of("dag_challenge"), family_of("solver")
    made = family.synthesize(sandbox, kind="dag_challenge", n=4, env=bundle_dir, out=folder)
    report = family.validate(task, sandbox, bundle)  # report.passed, report.problems
    family.route(task), family.challenging(task)

The synthesizers and checkers are imported when called, so reading a kind's route or family costs
nothing beyond the task model.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from agentomnia.rejection import Rejection
from agentomnia.tasks.models import TASK_KINDS, Task, TaskKind

if TYPE_CHECKING:
    from agentomnia.llm import LLM
    from agentomnia.sandbox.bundle import Bundle
    from agentomnia.sandbox.sandbox import Sandbox

# Benchmark routes (the paper's four ways a task is posed):
#   dag      multi-turn DAG tasks with a simulated user
#   dag_s    single-turn DAG tasks that change state
#   program  program-based tasks (loops and branches over the tools)
#   solver   solver-based optimisation tasks
# OmniaBench's own route ids (route1..route4) are derived from these in agentomnia.interop.omniabench.
Route = Literal["dag", "dag_s", "program", "solver"]
ROUTES: tuple[Route, ...] = ("dag", "dag_s", "program", "solver")

#: a task whose difficulty profile sets at least this many atoms is challenging, whatever its family
CHALLENGING_MIN_ATOMS = 3


class TaskReport(BaseModel):
    """A stored task re-checked by its family: does the reference pass, does an empty run fail, and
    every other problem the family's checks found (each one fails the task)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    kind: TaskKind
    reference_passes: bool
    empty_fails: bool
    problems: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.reference_passes and self.empty_fails and not self.problems

    @property
    def reason(self) -> str:
        """The problems in one line ('' when the task passes)."""
        if self.passed:
            return ""
        return "; ".join(self.problems) or "oracle failed"


@dataclass(frozen=True)
class Synthesis:
    """What one `synthesize` call made: the kept tasks, the rejected candidates, and the environment
    bundle folder each kept task runs on (by env id)."""

    tasks: list[Task]
    rejected: list[Rejection]
    env_dirs: Mapping[str, Path] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


class TaskFamily(ABC):
    """One family of tasks. Subclasses set the class attributes and implement the three methods."""

    name: str
    kinds: tuple[TaskKind, ...]
    #: the benchmark routes `route` answers with
    routes: tuple[Route, ...]
    #: the kind `synthesize` makes when asked for the family by name
    default_kind: TaskKind
    #: kinds whose every item is challenging (see `challenging`)
    challenging_kinds: frozenset[TaskKind] = frozenset()
    #: synthesis builds on a given environment bundle (else it writes its own bundles)
    needs_env: bool = True

    @abstractmethod
    def route(self, task: Task) -> Route:
        """The benchmark route the task is posed on."""

    @abstractmethod
    def synthesize(
        self,
        sandbox: Sandbox,
        *,
        kind: TaskKind | None = None,
        n: int,
        seed: int = 0,
        env: Path | None = None,
        out: Path,
        llm: LLM | None = None,
    ) -> Synthesis:
        """Up to `n` verified tasks of `kind` (default: `default_kind`). `env` is the bundle folder
        to build on (families that `needs_env`); `out` is where new bundles may be written."""

    @abstractmethod
    def validate(self, task: Task, sandbox: Sandbox, bundle: Bundle) -> TaskReport:
        """Re-run on a stored task the checks synthesis kept it by."""

    def challenging(self, task: Task) -> bool:
        """The fixed challenging-subset rule: a challenging kind (DAG-Challenge: entities named only by
        description; solver-guided: no proven optimum to anchor on), any multi-turn task (the agent
        must ask for what the user withholds), or a difficulty profile with at least three atoms."""
        return (
            task.kind in self.challenging_kinds
            or task.interaction == "multi"
            or len(task.coordinate.atoms) >= CHALLENGING_MIN_ATOMS
        )

    def _kind(self, kind: TaskKind | None) -> TaskKind:
        chosen = kind or self.default_kind
        if chosen not in self.kinds:
            raise ValueError(f"the {self.name} family makes {list(self.kinds)}, not {chosen!r}")
        return chosen

    def _env(self, env: Path | None) -> Path:
        if env is None:
            raise ValueError(f"{self.name} tasks are built on an environment: pass the bundle folder as env")
        return Path(env)

    def __repr__(self) -> str:
        return f"TaskFamily({self.name!r}, kinds={list(self.kinds)})"


class DagFamily(TaskFamily):
    """Tasks sampled from the tool-dependency graph and run in the sandbox (paper §4.4.1)."""

    name = "dag"
    kinds = ("dag_standard", "dag_challenge")
    routes = ("dag", "dag_s")
    default_kind = "dag_standard"
    challenging_kinds = frozenset({"dag_challenge"})

    def route(self, task: Task) -> Route:
        return "dag" if task.interaction == "multi" else "dag_s"

    def synthesize(
        self,
        sandbox: Sandbox,
        *,
        kind: TaskKind | None = None,
        n: int,
        seed: int = 0,
        env: Path | None = None,
        out: Path,
        llm: LLM | None = None,
    ) -> Synthesis:
        from agentomnia.tasks.dag.synth import synthesize_dag_tasks

        folder = self._env(env)
        tasks, rejected = synthesize_dag_tasks(
            folder, sandbox, variant=self._kind(kind), n=n, seed=seed, llm=llm
        )
        return Synthesis(tasks, rejected, {t.env_id: folder for t in tasks})

    def validate(self, task: Task, sandbox: Sandbox, bundle: Bundle) -> TaskReport:
        from agentomnia.tasks.dag.synth import check_task

        result = check_task(task, sandbox, bundle)
        problems = (
            result.consistency + result.leakage + result.state + ([result.detail] if result.detail else [])
        )
        return TaskReport(
            task_id=task.id,
            kind=task.kind,
            reference_passes=result.replay_ok and result.oracle_pass,
            empty_fails=result.empty_fail,
            problems=tuple(problems),
        )


class ProgramFamily(TaskFamily):
    """Solution programs with loops and branches, debugged by execution in the sandbox."""

    name = "program"
    kinds = ("program",)
    routes = ("program",)
    default_kind = "program"

    def route(self, task: Task) -> Route:
        return "program"

    def synthesize(
        self,
        sandbox: Sandbox,
        *,
        kind: TaskKind | None = None,
        n: int,
        seed: int = 0,
        env: Path | None = None,
        out: Path,
        llm: LLM | None = None,
    ) -> Synthesis:
        from agentomnia.tasks.program import synthesize_program_tasks

        self._kind(kind)
        folder = self._env(env)
        tasks, rejected = synthesize_program_tasks(folder, sandbox, n=n, seed=seed, llm=llm)
        return Synthesis(tasks, rejected, {t.env_id: folder for t in tasks})

    def validate(self, task: Task, sandbox: Sandbox, bundle: Bundle) -> TaskReport:
        from agentomnia.tasks.program import check_program_task

        report = check_program_task(task, sandbox, bundle)
        return TaskReport(
            task_id=task.id,
            kind=task.kind,
            reference_passes=report.reference_passes,
            empty_fails=report.empty_fails,
            problems=tuple(report.details),  # a detail is written only for a failed part of the oracle
        )


class SolverFamily(TaskFamily):
    """Optimisation instances solved by a MILP solver, each with its own verified bundle."""

    name = "solver"
    kinds = ("solver_anchored", "solver_guided")
    routes = ("solver",)
    default_kind = "solver_anchored"
    challenging_kinds = frozenset({"solver_guided"})
    needs_env = False

    def route(self, task: Task) -> Route:
        return "solver"

    def synthesize(
        self,
        sandbox: Sandbox,
        *,
        kind: TaskKind | None = None,
        n: int,
        seed: int = 0,
        env: Path | None = None,
        out: Path,
        llm: LLM | None = None,
    ) -> Synthesis:
        """`n` tasks spread over the problem families (at least one each); bundles go to `out/envs`."""
        from agentomnia.tasks.solver import FAMILIES as PROBLEM_FAMILIES
        from agentomnia.tasks.solver import synthesize_guided_tasks, synthesize_solver_tasks

        per_family = max(1, n // len(PROBLEM_FAMILIES))
        notes: list[str] = []
        if self._kind(kind) == "solver_guided":
            tasks, dirs, rejected, notes = synthesize_guided_tasks(
                sandbox, llm, per_family=per_family, seed=seed, out_dir=out / "envs"
            )
        else:
            tasks, dirs, rejected = synthesize_solver_tasks(
                sandbox, per_family=per_family, seed=seed, out_dir=out / "envs", llm=llm
            )
        return Synthesis(
            tasks, rejected, {t.env_id: d for t, d in zip(tasks, dirs, strict=True)}, tuple(notes)
        )

    def validate(self, task: Task, sandbox: Sandbox, bundle: Bundle) -> TaskReport:
        from agentomnia.tasks.solver.check import check_solver_task

        report = check_solver_task(task, sandbox, bundle)
        return TaskReport(
            task_id=task.id,
            kind=task.kind,
            reference_passes=report.reference_passes,
            empty_fails=report.empty_fails,
            problems=tuple(report.problems),
        )


DAG = DagFamily()
PROGRAM = ProgramFamily()
SOLVER = SolverFamily()
TASK_FAMILIES: dict[str, TaskFamily] = {f.name: f for f in (DAG, PROGRAM, SOLVER)}
_BY_KIND: dict[str, TaskFamily] = {k: f for f in TASK_FAMILIES.values() for k in f.kinds}
_BY_ROUTE: dict[str, TaskFamily] = {r: f for f in TASK_FAMILIES.values() for r in f.routes}
assert set(_BY_KIND) == set(TASK_KINDS), "every task kind belongs to exactly one family"
assert set(_BY_ROUTE) == set(ROUTES), "every benchmark route belongs to exactly one family"


def family_of(item: Task | str) -> TaskFamily:
    """The family of a task, a task kind (`dag_challenge`, `dag-challenge`) or a family name (`solver`)."""
    key = item.kind if isinstance(item, Task) else item.replace("-", "_")
    family = _BY_KIND.get(key) or TASK_FAMILIES.get(key)
    if family is None:
        raise KeyError(
            f"unknown task kind or family {item!r}; use one of {list(TASK_KINDS)} or a family {list(TASK_FAMILIES)}"
        )
    return family


def requested_kind(request: str) -> tuple[TaskFamily, TaskKind]:
    """A synthesis request (a kind or a family name, `-` or `_`) as its family and the kind to make."""
    family = family_of(request)
    key = request.replace("-", "_")
    return family, (key if key in family.kinds else family.default_kind)  # type: ignore[return-value]


def family_for_route(route: Route) -> TaskFamily:
    """The family whose tasks are posed on a benchmark route."""
    return _BY_ROUTE[route]


def route_of(task: Task) -> Route:
    """The benchmark route a task is posed on (the paper's DAG, DAG-S, Program and Solver)."""
    return family_of(task).route(task)


def is_challenging(task: Task) -> bool:
    """Whether the task is in the benchmark's challenging subset (see `TaskFamily.challenging`)."""
    return family_of(task).challenging(task)


def is_challenging_kind(kind: str) -> bool:
    """Whether every task of this kind is challenging (what the kind alone says; False for a kind
    no family owns)."""
    family = _BY_KIND.get(kind.replace("-", "_"))
    return family is not None and kind.replace("-", "_") in family.challenging_kinds
