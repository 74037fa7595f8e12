"""Auxiliary rewards: format validity and the redundant-call penalty."""

from __future__ import annotations

from agentomnia.rewards import check_format, redundancy_penalty
from agentomnia.sandbox import fixture_bundle


def _call(name: str, args: object) -> dict:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": name, "arguments": args}}],
    }


def test_well_formed_rollout_passes() -> None:
    tools = fixture_bundle("mock").tools
    messages = [
        _call("get_user", '{"user_id": "user_1"}'),
        {"role": "tool", "content": "{}"},
        {"role": "assistant", "content": "Ada."},
    ]
    check = check_format(messages, tools)
    assert check.valid and check.calls == 1 and check.problems == ()


def test_unknown_tools_bad_arguments_and_empty_endings_are_named() -> None:
    tools = fixture_bundle("mock").tools
    check = check_format(
        [_call("drop_table", {}), _call("get_user", {"user": 1}), {"role": "assistant", "content": " "}],
        tools,
    )
    assert not check.valid
    assert any("unknown tool `drop_table`" in p for p in check.problems)
    assert any(p.startswith("`get_user`") for p in check.problems)
    assert "the last assistant turn is empty" in check.problems
    assert check_format([], tools).problems == ("no assistant turn",)


def test_redundancy_penalty_counts_identical_repeats_only() -> None:
    assert redundancy_penalty([]) == 0.0
    assert redundancy_penalty([("a", {"x": 1}), ("a", {"x": 2})]) == 0.0
    assert redundancy_penalty([("a", {"x": 1}), ("a", {"x": 1}), ("a", {"x": 1}), ("b", {})]) == 0.5
    assert redundancy_penalty([("a", {"x": 1}), ("a", {"x": 1})], free_repeats=1) == 0.0
