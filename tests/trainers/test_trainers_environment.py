"""Bundles as TRL tool environments: generated tool methods, prefix replay, fault detection."""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest
from transformers.utils import get_json_schema

from agentomnia.records import ToolResult
from agentomnia.sandbox import fixture_bundle, open_local
from trainers.environment import environment_class, golden_turns, prefix_calls, prefix_messages


def _env() -> Any:
    cls = environment_class(fixture_bundle("mock"), "mock")
    return cls(lambda bundle, config: open_local(bundle, config))


def test_tool_methods_render_the_bundle_schemas() -> None:
    env = _env()
    schema = get_json_schema(env.update_task_status)["function"]
    assert schema["name"] == "update_task_status"
    assert schema["parameters"]["required"] == ["task_id", "status"]
    assert schema["parameters"]["properties"]["status"]["enum"] == ["open", "in_progress", "done"]
    optional = get_json_schema(env.list_tasks)["function"]["parameters"]
    assert optional["required"] == ["user_id"]
    public = sorted(n for n in dir(type(env)) if not n.startswith("_") and callable(getattr(type(env), n)))
    assert public == sorted(["reset", *fixture_bundle("mock").tool_names])


def test_reset_replays_the_golden_prefix_without_crediting_the_policy(rows: Any) -> None:
    row = rows[1][0]  # create a task, then mark it in progress
    golden = row["golden"]
    assert len(golden_turns(golden)) == 3
    assert [c[0] for c in prefix_calls(golden, 1)] == ["create_task"]
    assert [m["role"] for m in prefix_messages(golden, 1)] == ["assistant", "tool"]
    env = _env()
    env.reset(**{**row, "golden": json.dumps(golden), "prefix_turns": 1})
    assert env.replayed_calls == [("create_task", {"user_id": "user_1", "title": "Draft the budget"})]
    assert env.policy_calls == [] and env.fault is None
    reply = ToolResult.model_validate_json(env.update_task_status(task_id="task_4", status="in_progress"))
    assert reply.ok and env.policy_calls == [
        ("update_task_status", {"task_id": "task_4", "status": "in_progress"})
    ]
    assert env._final_state()["tasks"]["task_4"]["status"] == "in_progress"
    env.reset(**{**row, "prefix_turns": 0})
    assert "task_4" not in env._final_state()["tasks"] and env.replayed_calls == []


def test_agent_errors_are_observations_but_environment_faults_are_flagged(rows: Any) -> None:
    env = _env()
    env.reset(**rows[1][0])
    bad = ToolResult.model_validate_json(env.update_task_status(task_id="task_9", status="done"))
    assert not bad.ok and env.fault is None

    class Broken:
        def call(self, tool: str, args: dict) -> ToolResult:
            return ToolResult.failure("tool_raised", "KeyError in generated code")

        def reset(self, config: dict) -> None:
            return None

    env._session = Broken()
    env.get_user(user_id="user_1")
    assert env.fault is not None and "tool_raised" in env.fault


def test_tools_that_collide_with_the_protocol_are_refused() -> None:
    bundle = fixture_bundle("mock")
    renamed = [
        dict(t, function={**t["function"], "name": "reset"}) if i == 0 else t
        for i, t in enumerate(bundle.tools)
    ]
    with pytest.raises(ValueError, match="collides"):
        environment_class(bundle.model_copy(update={"tools": renamed}), "bad")


def test_a_seed_argument_that_is_no_identifier_is_offered_under_an_alias_and_sent_under_its_own_name() -> (
    None
):
    from trainers.environment import _tool_method

    schema = {"function": {"name": "listClockEvents", "description": "Clock events in a window.", "parameters": {
        "type": "object", "properties": {"from": {"type": "string"}, "page-size": {"type": "integer"}},
        "required": ["from"]}}}  # fmt: skip
    method = _tool_method(schema)
    signature = inspect.signature(method)
    assert list(signature.parameters) == ["self", "from_", "page_size"]
    assert signature.parameters["from_"].default is inspect.Parameter.empty  # `from` is required

    class Recorder:
        def _tool(self, name: str, args: dict) -> tuple[str, dict]:  # type: ignore[type-arg]
            return name, args

    assert method(Recorder(), from_="2026-03-01", page_size=5) == (
        "listClockEvents",
        {"from": "2026-03-01", "page-size": 5},
    )
