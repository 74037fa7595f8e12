"""The rollout loop: one agent, one task, one sandbox session, OpenAI-format messages throughout.

Each assistant turn may call tools; every call is parsed, checked against the tool list, run in the
session and recorded with its ToolResult and the state hash right after it. A run stops on a final
answer (an assistant turn without tool calls that the user, if any, does not answer), on the turn
budget, or after repeated invalid calls. A policy that raises is recorded as a run that stopped with
`error`: a bad rollout is data, not a crash. Synthesis and evaluation use this same loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentomnia.records import ToolResult
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.errors import INVALID_ARGUMENTS, UNKNOWN_TOOL
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.models import ReferenceCall, Task
from agentomnia.trajectories.agents import Agent
from agentomnia.trajectories.messages import (
    parse_answer,
    parse_arguments,
    system_message,
    tool_message,
    tool_names,
    user_message,
)
from agentomnia.trajectories.models import RolloutResult, Step, StopReason
from agentomnia.trajectories.users import UserSimulator

INVALID_CODES = frozenset({INVALID_ARGUMENTS, UNKNOWN_TOOL})
ANSWER_FORMAT = (
    "When the request is done, reply without tool calls; if the user asked for information, put it in "
    "a ```json block as one object."
)


def system_prompt(bundle: Bundle) -> str:
    spec = bundle.spec or {}
    about = str(spec.get("description") or spec.get("name") or bundle.class_name)
    return (
        f"You are an assistant operating a system through its tools. System: {about}\n"
        "Use the tools to look up facts and make changes; never guess ids or values. "
        "If a detail you need is missing, ask the user. " + ANSWER_FORMAT
    )


def _normalise(reply: Mapping[str, Any], turn: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": str(reply.get("content") or "")}
    calls = []
    for i, call in enumerate(reply.get("tool_calls") or []):
        if isinstance(call, Mapping):
            calls.append({**call, "id": str(call.get("id") or f"call_{turn}_{i}"), "type": "function"})
    if calls:
        message["tool_calls"] = calls
    return message


def rollout(
    task: Task,
    bundle: Bundle,
    sandbox: Sandbox,
    agent: Agent,
    *,
    user: UserSimulator | None = None,
    max_steps: int = 30,
    max_invalid: int = 3,
    prompt: str | None = None,
) -> RolloutResult:
    """Run `agent` on `task` in a fresh session from the task's init_config. `max_steps` bounds
    assistant turns; `max_invalid` consecutive invalid calls (unparsable, unknown tool, arguments
    the tool refuses as invalid) end the run."""
    tools = [dict(t) for t in bundle.tools]
    names = set(tool_names(tools))
    session = sandbox.open(bundle, task.init_config)
    messages: list[dict[str, Any]] = [
        system_message(prompt or system_prompt(bundle)),
        user_message(user.opening() if user is not None else task.query),
    ]
    steps: list[Step] = []
    stop: StopReason = "budget"
    error: str | None = None
    try:
        initial_hash = current = session.state_hash()
        invalid = 0
        for turn in range(max_steps):
            try:
                reply = _normalise(agent.act(messages, tools), turn)
            except Exception as exc:  # the policy's failure ends this run only
                stop, error = "error", f"{type(exc).__name__}: {exc}"
                break
            messages.append(reply)
            calls = reply.get("tool_calls") or []
            if not calls:
                try:
                    follow_up = user.reply(messages) if user is not None else None
                except Exception as exc:  # the simulated user's failure ends this run only
                    stop, error = "error", f"user simulator: {type(exc).__name__}: {exc}"
                    break
                if follow_up:
                    messages.append(user_message(follow_up))
                    continue
                stop = "answer"
                break
            for call in calls:
                name, args, problem = parse_arguments(call)
                valid = problem is None and name in names
                if not valid:
                    result = ToolResult.failure(
                        INVALID_ARGUMENTS if problem else UNKNOWN_TOOL,
                        problem or f"tool `{name}` does not exist; pick one of the listed tools",
                    )
                else:
                    result = session.call(name, args or {})
                    current = session.state_hash()
                code = result.error.code if result.error is not None else None
                invalid = 0 if result.ok else invalid + int(not valid or code in INVALID_CODES)
                steps.append(
                    Step(index=len(steps), turn=len(messages) - 1, tool=name, arguments=args or {}, ok=result.ok,
                         error_code=code, state_hash=current, valid=valid)
                )  # fmt: skip
                messages.append(tool_message(str(call["id"]), name, result))
            if invalid >= max_invalid:
                stop = "invalid_calls"
                break
        final_state = session.state()
    finally:
        session.close()
    final = next(
        (m for m in reversed(messages) if m["role"] == "assistant" and not m.get("tool_calls")), None
    )
    answer = parse_answer(str(final["content"])) if final is not None and stop == "answer" else {}
    return RolloutResult(
        messages=messages, steps=steps, initial_hash=initial_hash, final_state=final_state,
        answer=answer, stop_reason=stop, error=error,
    )  # fmt: skip


def reference_plan(task: Task, bundle: Bundle, sandbox: Sandbox) -> list[ReferenceCall]:
    """The calls a teacher follows: the task's reference calls, or for program tasks the calls its
    reference program makes when run in a scratch session (so the teacher still acts through tools)."""
    if task.reference_calls:
        return list(task.reference_calls)
    if not task.reference_program:
        return []
    session = sandbox.open(bundle, task.init_config)
    try:
        result = sandbox.run_program(task.reference_program, session)
    finally:
        session.close()
    return [ReferenceCall(tool=c.tool, args=dict(c.arguments)) for c in result.calls if c.result.ok]


def replay(
    task: Task, bundle: Bundle, sandbox: Sandbox, calls: Sequence[tuple[str, Mapping[str, Any]]]
) -> tuple[list[str], dict[str, Any]]:
    """State hashes after each call and the final state, replaying `calls` from the task's init_config."""
    session = sandbox.open(bundle, task.init_config)
    try:
        hashes = []
        for tool, args in calls:
            session.call(tool, dict(args))
            hashes.append(session.state_hash())
        return hashes, session.state()
    finally:
        session.close()
