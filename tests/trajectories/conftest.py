"""Fixtures: the parcel environment's hand-written tasks and the trajectories generated on them.

`parcel`, `sandbox` and `tasks` come from tests/fixtures; the tasks themselves are written in
tests/fixtures/parcel.py. The names below are re-exported only for tests/omniabench/test_policies.py,
which still imports them from here; new code imports tests.fixtures.parcel.
"""

from __future__ import annotations

import pytest

from agentomnia.tasks.models import Task
from tests.fixtures.parcel import Parcel, approve_task, assign_task, count_task, program_task, reject_task

__all__ = ["Parcel", "approve_task", "assign_task", "count_task", "program_task", "reject_task"]


@pytest.fixture(scope="session")
def guided(tasks: list[Task], parcel: Parcel):  # type: ignore[no-untyped-def]
    from agentomnia.trajectories import generate_trajectories

    return generate_trajectories(tasks, {parcel.env_id: parcel.bundle}, parcel.sandbox, guidance=True)


@pytest.fixture(scope="session")
def unguided(tasks: list[Task], parcel: Parcel):  # type: ignore[no-untyped-def]
    from agentomnia.trajectories import generate_trajectories

    return generate_trajectories(tasks, {parcel.env_id: parcel.bundle}, parcel.sandbox, guidance=False)
