"""Check functions (OmniaBench's check_func contract) and task programs (`solve(call)`)."""

from __future__ import annotations

import pytest

from agentomnia.sandbox import Bundle, Sandbox


def test_check_func_sees_initial_state_and_returns_a_verdict(sandbox: Sandbox, mock: Bundle) -> None:
    code = (
        "def check_func(final_state):\n"
        "    added = set(final_state['tasks']) - set(initial_state['tasks'])\n"
        "    return any(final_state['tasks'][t]['title'] == 'Ship it' for t in added)\n"
    )
    with sandbox.open(mock) as session:
        initial = session.state()
        assert sandbox.run_check(code, initial, session.state()).passed is False
        session.call("create_task", {"user_id": "user_2", "title": "Ship it"})
        verdict = sandbox.run_check(code, initial, session.state())
    assert verdict.passed is True and verdict.ok


@pytest.mark.parametrize(
    ("code", "error_code"),
    [
        ("def check_func(final_state):\n    return 1\n", "bad_return"),
        ("def check(final_state):\n    return True\n", "missing_function"),
        ("def check_func(final_state):\n    return final_state['missing']\n", "check_raised"),
        ("import os\ndef check_func(final_state):\n    return True\n", "policy_violation"),
    ],
)
def test_check_errors_are_results_not_exceptions(sandbox: Sandbox, code: str, error_code: str) -> None:
    result = sandbox.run_check(code, {"a": 1}, {"a": 2})
    assert result.passed is None
    assert result.error is not None and result.error.code == error_code, result


def test_check_cannot_mutate_the_callers_states(sandbox: Sandbox) -> None:
    initial, final = {"items": [1]}, {"items": [1, 2]}
    code = "def check_func(final_state):\n    final_state['items'].clear()\n    initial_state.clear()\n    return True\n"
    assert sandbox.run_check(code, initial, final).passed is True
    assert initial == {"items": [1]} and final == {"items": [1, 2]}


PROGRAM = """
def solve(call):
    tasks = call("list_tasks", user_id="user_1")["data"]
    done = []
    for task in tasks:
        if task["status"] != "done":
            result = call("update_task_status", task_id=task["task_id"], status="done")
            done.append(result["data"]["task_id"])
    missing = call("get_user", user_id="nobody")
    return {"closed": done, "missing_error": missing["error"]["code"]}
"""


def test_program_calls_tools_through_the_session_and_is_recorded(sandbox: Sandbox, mock: Bundle) -> None:
    with sandbox.open(mock) as session:
        result = sandbox.run_program(PROGRAM, session)
        assert result.ok, result.error
        assert result.answer == {"closed": ["task_1", "task_2"], "missing_error": "not_found"}
        assert [c.tool for c in result.calls] == [
            "list_tasks",
            "update_task_status",
            "update_task_status",
            "get_user",
        ]
        assert result.calls[-1].result.ok is False
        statuses = {t["status"] for t in session.state()["tasks"].values()}
        assert statuses == {"done"}


def test_program_errors_keep_completed_calls(sandbox: Sandbox, mock: Bundle) -> None:
    code = "def solve(call):\n    call('create_task', user_id='user_1', title='one')\n    raise ValueError('halfway')\n"
    with sandbox.open(mock) as session:
        result = sandbox.run_program(code, session)
        assert (
            result.error is not None
            and result.error.code == "program_raised"
            and "halfway" in result.error.message
        )
        assert len(result.calls) == 1
        assert "task_4" in session.state()["tasks"]


def test_program_output_and_policy(sandbox: Sandbox, mock: Bundle) -> None:
    with sandbox.open(mock) as session:
        printed = sandbox.run_program("def solve(call):\n    print('hello', 42)\n    return None\n", session)
        assert printed.stdout == "hello 42\n" and printed.answer is None
        refused = sandbox.run_program("import socket\ndef solve(call):\n    return 1\n", session)
        assert refused.error is not None and refused.error.code == "policy_violation"
        bad = sandbox.run_program("def solve(call):\n    return {1, 2}\n", session)
        assert bad.error is not None and bad.error.code == "bad_return"
