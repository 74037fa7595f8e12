"""A small task-tracker state, rubric items and a task builder shared by the reward tests."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from agentomnia.tasks.models import Check, RubricItem, Task
from agentomnia.taxonomy import Coordinate

S0: dict[str, Any] = {
    "tasks": {"task_1": {"task_id": "task_1", "user_id": "user_1", "status": "open"}},
    "users": {"user_1": {"user_id": "user_1"}},
}
STATUS_DONE = RubricItem(
    id="T1", text="task_1 is done", scope="task",
    check=Check(kind="field_equals", table="tasks", key="task_1", field="status", value="done"),
)  # fmt: skip
OPEN_ITEM = RubricItem(id="G1", text="The reply is polite", scope="general")


def make_task(*items: RubricItem, **fields: Any) -> Task:
    coordinate = Coordinate(
        split="tob", taxonomy_id=20096, l1="Logistics", l2="Logistics Specialist",
        capabilities=("tool_use",), difficulty=1, primary_difficulty="ambiguous_goal",
    )  # fmt: skip
    return Task(env_id="mock", kind="dag_standard", coordinate=coordinate, init_config=S0, query="Close task_1.",
                rubric=items, **fields)  # fmt: skip


def done_state() -> dict[str, Any]:
    return {
        "tasks": {"task_1": {"task_id": "task_1", "user_id": "user_1", "status": "done"}},
        "users": S0["users"],
    }


@pytest.fixture
def cases() -> SimpleNamespace:
    """s0, done_state(), status_done (a checked item), open_item (an unchecked one), make_task(...)."""
    return SimpleNamespace(
        s0=S0, done_state=done_state, status_done=STATUS_DONE, open_item=OPEN_ITEM, make_task=make_task
    )
