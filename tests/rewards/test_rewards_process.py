"""Process validation mid-trajectory: a forbidden call ends the rollout as failed, a loop ends its calls."""

from __future__ import annotations

from typing import Any

from agentomnia.records import ToolResult
from agentomnia.rewards import ProcessSettings, ProcessValidator
from agentomnia.tasks.models import Check, RubricItem, Task
from agentomnia.taxonomy import Coordinate


def _task(*checks: Check) -> Task:
    return Task(
        env_id="mock",
        kind="dag_standard",
        coordinate=Coordinate(
            split="tob", taxonomy_id=20096, l1="Logistics", l2="Logistics Specialist",
            capabilities=("tool_use", "state_management"), difficulty=2, primary_difficulty="tool_parameter_grounding",
        ),
        init_config={"tasks": {}},
        query="How many open tasks does user_1 have?",
        rubric=tuple(
            RubricItem(id=f"T{n + 1}", text="check", scope="task", check=c) for n, c in enumerate(checks)
        ),
    )  # fmt: skip


OK = ToolResult.success({"count": 1})
ANSWER = Check(kind="answer_equals", field="count", value=1)


def test_a_call_the_task_forbids_ends_the_rollout_as_failed_at_that_step() -> None:
    task = _task(
        Check(kind="answer_equals", field="count", value=1),
        Check(kind="not_called", tool="update_task_status"),
    )
    validator = ProcessValidator(task)
    assert validator.after_call("list_tasks", {"user_id": "user_1"}, OK) is None
    stop = validator.after_call("update_task_status", {"task_id": "task_1", "status": "done"}, OK)
    assert stop is not None and stop.fatal and stop.kind == "forbidden_call" and stop.step == 1
    assert "update_task_status" in stop.reason and "T2" in stop.reason
    # the stop stands whatever comes next, and later calls are refused with the reason
    assert validator.after_call("list_tasks", {"user_id": "user_1"}, OK) is stop
    refusal = stop.refusal()
    assert not refusal.ok and refusal.error is not None and "T2" in refusal.error.message


def test_a_forbidden_call_with_arguments_stops_only_that_call() -> None:
    task = _task(Check(kind="not_called", tool="assign_task", args={"user_id": "user_2"}))
    validator = ProcessValidator(task)
    assert validator.after_call("assign_task", {"task_id": "task_1", "user_id": "user_1"}, OK) is None
    stop = validator.after_call("assign_task", {"task_id": "task_1", "user_id": "user_2"}, OK)
    assert stop is not None and stop.fatal
    off = ProcessValidator(task, ProcessSettings(forbidden_calls=False))
    assert off.after_call("assign_task", {"task_id": "task_1", "user_id": "user_2"}, OK) is None


def test_the_same_call_and_result_three_times_in_a_row_stops_a_loop_but_is_not_fatal() -> None:
    validator = ProcessValidator(_task(ANSWER))
    args: dict[str, Any] = {"user_id": "user_1"}
    assert validator.after_call("get_user", args, OK) is None
    assert validator.after_call("get_user", args, OK) is None
    stop = validator.after_call("get_user", args, OK)
    assert stop is not None and stop.kind == "stuck" and not stop.fatal and stop.step == 2
    assert "3 times in a row" in stop.reason


def test_a_repeat_that_sees_the_state_move_or_changes_its_arguments_is_no_loop() -> None:
    validator = ProcessValidator(_task(ANSWER))
    args = {"task_id": "task_1"}
    for n in range(5):  # the same call, a different result each time: the state moved
        assert validator.after_call("get_task", args, ToolResult.success({"n": n})) is None
    for n in range(5):  # alternating arguments
        assert validator.after_call("get_task", {"task_id": f"task_{n % 2}"}, OK) is None
    never = ProcessValidator(_task(ANSWER), ProcessSettings(repeat_limit=None))
    assert all(never.after_call("get_task", args, OK) is None for _ in range(10))
