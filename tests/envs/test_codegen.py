"""Code generation on the hand-written mock domain: the source passes the sandbox policy, and the
class it defines keeps every invariant the spec states."""

from __future__ import annotations

from typing import Any

import pytest

from agentomnia.envs.codegen import generate_source, tools_json
from agentomnia.envs.spec import EnvSpec, ToolSpec
from agentomnia.envs.state import generate_state, state_violations
from agentomnia.sandbox.policy import prepare, validate_source
from tests.fixtures.mock import TASK


def instantiate(spec: EnvSpec, state: dict[str, Any]) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(generate_source(spec), "<generated>", "exec"), namespace)
    return namespace[spec.class_name](state)


@pytest.fixture
def tracker(mock_spec: EnvSpec) -> Any:
    return instantiate(mock_spec, generate_state(mock_spec, seed=0))


def first(env: Any, table: str, **match: Any) -> str:
    return next(k for k, r in sorted(getattr(env, table).items()) if all(r[f] == v for f, v in match.items()))


def test_source_passes_the_sandbox_policy_and_defines_one_documented_method_per_tool(
    mock_spec: EnvSpec,
) -> None:
    source = generate_source(mock_spec)
    assert validate_source(source) == []
    assert prepare(source, "env").kind == "env"
    assert f"class {mock_spec.class_name}:" in source and mock_spec.id in source
    for tool in mock_spec.tools:
        assert f"    def {tool.name}(self" in source
    assert [t["function"]["name"] for t in tools_json(mock_spec)] == [t.name for t in mock_spec.tools]
    assert generate_source(mock_spec) == source  # deterministic: the bundle's id depends on it


def test_lifecycle_moves_only_where_the_transition_rule_allows(tracker: Any) -> None:
    task = first(tracker, "tasks", status="open")
    done = tracker.finish_task(task_id=task)
    assert done["ok"] and done["data"]["status"] == "done" and tracker.tasks[task]["status"] == "done"
    again = tracker.finish_task(task_id=task)
    assert not again["ok"] and again["error"]["code"] == "invalid_transition"


def test_writes_check_references_and_required_arguments_and_assign_keys(
    tracker: Any, mock_spec: EnvSpec
) -> None:
    before = {k: dict(v) for k, v in tracker.tasks.items()}
    dangling = tracker.create_task(user_id="USR-999", title="Plan the sprint")
    assert not dangling["ok"] and "points to no existing user" in dangling["error"]["message"]
    missing = tracker.create_task(title="Plan the sprint")
    assert missing["error"]["code"] == "invalid_arguments" and "`user_id`" in missing["error"]["message"]
    assert tracker.tasks == before  # a refused write changes nothing
    user = sorted(tracker.users)[0]
    made = tracker.create_task(user_id=user, title="Plan the sprint")
    assert made["ok"] and made["data"]["status"] == TASK.attribute("status").default  # type: ignore[union-attr]
    assert made["data"]["task_id"].startswith(TASK.id_prefix) and made["data"]["task_id"] not in before
    assert state_violations(mock_spec, {"users": tracker.users, "tasks": tracker.tasks}) == []


def test_reads_report_unknown_ids_and_filter_with_a_count(tracker: Any) -> None:
    assert tracker.get_user(user_id="nobody")["error"]["code"] == "not_found"
    listing = tracker.list_tasks(status="done", limit=1)
    done = [t for t in tracker.tasks.values() if t["status"] == "done"]
    assert listing["data"]["count"] == len(done) and len(listing["data"]["items"]) == min(1, len(done))


def test_a_parameter_named_by_a_python_keyword_arrives_through_extra(mock_spec: EnvSpec) -> None:
    listing = mock_spec.tool("list_tasks")
    props = {**listing.parameters["properties"], "from": {"type": "string", "format": "date"}}
    keyworded = ToolSpec.model_validate(
        {
            **listing.model_dump(),
            "name": "list_tasks_since",
            "parameters": {**listing.parameters, "properties": props},
        }
    )
    spec = mock_spec.model_copy(update={"tools": (*mock_spec.tools, keyworded)})
    source = generate_source(spec)
    assert validate_source(source) == [] and "from_ = extra.pop('from', None)" in source
    env = instantiate(spec, generate_state(spec, seed=0))
    assert env.list_tasks_since(**{"from": "2026-01-01"})["ok"]
    unknown = env.list_tasks_since(**{"from": "2026-01-01", "class": "x"})
    assert unknown["error"]["code"] == "invalid_arguments" and "`class`" in unknown["error"]["message"]


def test_tables_are_json_text_read_back_exactly_and_python_literals_where_json_would_change_them() -> None:
    import ast
    import datetime
    import json

    from agentomnia.envs.codegen import _table

    schemas = {
        "close_case": {
            "properties": {"note": {"type": "string", "description": 'says """done""" \\ twice'}},
            "required": ["case_id"],
        },
        "get_case": {"properties": {}, "required": []},
    }
    text = _table(schemas, 4)
    assert text.startswith('json.loads(r"""{\n        "close_case": {\n            "properties": ')
    tree = ast.parse(text, mode="eval")
    assert isinstance(tree.body, ast.Call) and isinstance(tree.body.args[0], ast.Constant)
    assert json.loads(tree.body.args[0].value) == schemas
    # a tuple, a date or an integer key would come back changed from JSON: they stay literals
    for value in ({"a": ("x", "y")}, {"a": datetime.date(2026, 1, 2)}, {1: "one"}, {"a": float("nan")}):
        assert not _table(value, 4).startswith("json.loads")


def test_a_nan_or_an_infinity_in_a_table_is_written_as_python_that_runs() -> None:
    import math

    from agentomnia.envs.codegen import _table

    value = {"price": {"maximum": float("inf"), "minimum": float("-inf")}, "gap": [float("nan"), 1.5]}
    back = eval(_table(value, 4), {"__builtins__": {"float": float}})  # our own literal
    assert back["price"] == {"maximum": math.inf, "minimum": -math.inf} and back["gap"][1] == 1.5
    assert math.isnan(back["gap"][0])
    validate_source(f"TABLE = {_table(value, 4)}\n")
