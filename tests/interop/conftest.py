"""Fixtures for interoperability: tasks of every kind on small environments.

Two sets. `mock_tasks` are hand-written on the shipped mock task tracker (tests/fixtures/mock.py)
and cover every route and every way a rubric item is decided, in well under a second. `kinds` are the
real thing: the parcel fixture's hand-written tasks plus tasks the project's own synthesizers make
on small inputs (one DAG-Standard, one DAG-Challenge and one program task on the parcel environment,
one solver-anchored knapsack task and one solver-guided facility-selection task with a stub model),
so every task kind the platform produces goes through the export. `parcel`, `sandbox` and
`mock_bundle` come from tests/fixtures.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.dag import synthesize_dag_tasks
from agentomnia.tasks.models import Task
from agentomnia.tasks.program import synthesize_program_tasks
from agentomnia.tasks.solver import synthesize_guided_tasks, synthesize_solver_tasks
from tests.fixtures.mock import mock_tasks as hand_written_mock_tasks
from tests.fixtures.models import GreedyModel
from tests.fixtures.parcel import Parcel, parcel_tasks

SOLVER_SEED = 5  # which knapsack instance the solver draws; fixed so every run exports the same task


@pytest.fixture(scope="session")
def mock_tasks(mock_bundle: Bundle) -> list[Task]:
    return hand_written_mock_tasks(mock_bundle)


class Kinds:
    """Tasks of every kind and the bundles they run on."""

    def __init__(self, tasks: list[Task], bundles: dict[str, Bundle]) -> None:
        self.tasks = tasks
        self.bundles = bundles


@pytest.fixture(scope="session")
def kinds(parcel: Parcel, sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Kinds:
    tasks = parcel_tasks(parcel)
    for variant in ("dag-standard", "dag-challenge"):
        made, _ = synthesize_dag_tasks(parcel.folder, sandbox, variant=variant, n=1, seed=0)
        tasks += made
    made, _ = synthesize_program_tasks(parcel.folder, sandbox, n=1, seed=0)
    tasks += made
    out: Path = tmp_path_factory.mktemp("solver_envs")
    anchored, dirs, _ = synthesize_solver_tasks(
        sandbox, families=["knapsack"], per_family=1, out_dir=out, seed=SOLVER_SEED
    )
    guided, gdirs, _, _ = synthesize_guided_tasks(
        sandbox, GreedyModel(), families=["facility_selection"], per_family=1, out_dir=out
    )
    tasks += anchored + guided
    bundles = {parcel.env_id: parcel.bundle} | {d.name: Bundle.load(d) for d in dirs + gdirs}
    return Kinds(tasks, bundles)
