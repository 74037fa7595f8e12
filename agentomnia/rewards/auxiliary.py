"""Auxiliary rewards: format validity and a penalty for redundant repeated calls.

They shape behaviour the binary task reward cannot see: a rollout whose tool calls do not parse or
name tools that do not exist, or one that repeats the same call over and over. Both are small terms
added to the task reward with their own weights (see `trainers.grpo`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from agentomnia.records import canonical_json
from agentomnia.rewards.rules import schema_errors


class FormatCheck(BaseModel):
    """Whether the assistant turns of a rollout are well formed, and what was wrong if not."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    valid: bool
    calls: int
    problems: tuple[str, ...] = ()


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


def tool_calls_of(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, Any]]:
    """(name, arguments) of every tool call in the assistant turns, arguments decoded from JSON text."""
    out: list[tuple[str, Any]] = []
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            function = call.get("function", call) if isinstance(call, Mapping) else {}
            out.append((str(function.get("name", "")), _arguments(function.get("arguments", {}))))
    return out


def check_format(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]) -> FormatCheck:
    """Every call names a declared tool with schema-valid arguments, and the rollout ends in a message
    with content or a call (an empty final turn means the model never finished)."""
    schemas = {t["function"]["name"]: t["function"].get("parameters", {}) for t in tools if "function" in t}
    problems: list[str] = []
    calls = tool_calls_of(messages)
    for name, args in calls:
        if name not in schemas:
            problems.append(f"unknown tool `{name}`")
            continue
        problems.extend(f"`{name}` {err}" for err in schema_errors(args, schemas[name])[:2])
    assistant = [m for m in messages if m.get("role") == "assistant"]
    if not assistant:
        problems.append("no assistant turn")
    elif not (str(assistant[-1].get("content") or "").strip() or assistant[-1].get("tool_calls")):
        problems.append("the last assistant turn is empty")
    return FormatCheck(valid=not problems, calls=len(calls), problems=tuple(problems))


def redundancy_penalty(calls: Sequence[tuple[str, Any]], *, free_repeats: int = 0) -> float:
    """Fraction of calls that repeat an earlier identical call (same tool, same arguments), beyond
    `free_repeats` allowed repeats per call; 0.0 for no redundancy, approaching 1.0 for a loop."""
    if not calls:
        return 0.0
    counts = Counter(canonical_json([name, args]) for name, args in calls)
    redundant = sum(max(0, n - 1 - free_repeats) for n in counts.values())
    return redundant / len(calls)
