"""Running check functions and task programs (OmniaBench's two code contracts) in a worker.

`run_check`: the code defines `check_func(final_state) -> bool` with `initial_state` in scope.
`run_program`: the code defines `solve(call)` and drives one environment session through `call`.
Both run in a fresh guarded namespace under a wall-clock budget; whatever goes wrong becomes an
error with a code, never an exception out of the worker.
"""

from __future__ import annotations

import json
import types
from typing import Any

from agentomnia.sandbox import errors, views
from agentomnia.sandbox.deadlines import Deadlines, running
from agentomnia.sandbox.envsession import EnvSession, classify_exception, describe_exception, failure
from agentomnia.sandbox.guards import Namespace, Output


def _fresh_namespace(extra: dict[str, Any], seed: int = 0) -> Namespace:
    return Namespace(views.Ambient(seed), Output(), extra_globals=extra)


def run_check(
    code: types.CodeType,
    initial_state_json: str,
    final_state_json: str,
    deadlines: Deadlines,
    timeout_s: float | None,
) -> dict[str, Any]:
    """OmniaBench's check contract: the code defines `check_func(final_state) -> bool`, `initial_state` in scope."""
    namespace = _fresh_namespace({"initial_state": json.loads(initial_state_json)})
    try:
        with running(deadlines, namespace, timeout_s):
            with namespace.module_visible():
                exec(code, namespace.globals)
            check = namespace.globals.get("check_func")
            if not callable(check):
                return {
                    "passed": None,
                    "error": {
                        "code": "missing_function",
                        "message": "the code defines no `check_func(final_state)`",
                    },
                }
            verdict = check(json.loads(final_state_json))
    except BaseException as exc:
        code_name = classify_exception(exc)
        return {
            "passed": None,
            "error": {
                "code": "check_raised" if code_name == errors.TOOL_RAISED else code_name,
                "message": describe_exception(exc),
            },
        }
    if type(verdict) is not bool:
        return {
            "passed": None,
            "error": {
                "code": errors.BAD_RETURN,
                "message": f"check_func returned a {type(verdict).__name__}; it must return True or False",
            },
        }
    return {"passed": verdict, "error": None}


class ProgramCallLimit(Exception):
    """A program made more tool calls than its budget allows."""


def run_program(session: EnvSession, code: types.CodeType, timeout_s: float | None) -> dict[str, Any]:
    """Run a task program against a session.

    Contract: the code defines `solve(call)`; `call(tool_name, **arguments)` runs one tool call
    against the session (same validation and rollback as any call) and returns the ToolResult as a
    fresh dict; `solve` returns the answer (any JSON value, usually a dict). Each call is recorded.
    """
    calls: list[list[Any]] = []
    limits = session.limits

    def call(tool_name: str, **arguments: Any) -> dict[str, Any]:
        if len(calls) >= limits.max_program_calls:
            raise ProgramCallLimit(f"the program made more than {limits.max_program_calls} tool calls")
        try:
            args_text = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            text, ok = failure(errors.INVALID_ARGUMENTS, f"arguments are not JSON: {exc}"), False
            args_text = "{}"
        else:
            text, ok = session.call(tool_name, json.loads(args_text))
        calls.append([str(tool_name), args_text, text, ok])
        result: dict[str, Any] = json.loads(text)
        return result

    namespace = _fresh_namespace({})
    answer: Any = None
    error: dict[str, str] | None = None
    try:
        with running(session.deadlines, namespace, timeout_s):
            with namespace.module_visible():
                exec(code, namespace.globals)
            solve = namespace.globals.get("solve")
            if not callable(solve):
                error = {"code": "missing_function", "message": "the program defines no `solve(call)`"}
            else:
                answer = solve(call)
    except BaseException as exc:
        kind = classify_exception(exc)
        error = {
            "code": "program_raised" if kind == errors.TOOL_RAISED else kind,
            "message": describe_exception(exc),
        }
    answer_text = "null"
    if error is None:
        try:
            answer_text = json.dumps(answer, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            error = {"code": errors.BAD_RETURN, "message": f"solve returned a value that is not JSON: {exc}"}
    return {
        "answer_json": answer_text,
        "calls": calls,
        "stdout": namespace.output.text(),
        "error": error,
    }
