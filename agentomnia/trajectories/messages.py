"""OpenAI-format message helpers shared by the rollout loop, the agents and the dataset builders.

Trajectories keep tool-call arguments as JSON text (the OpenAI wire format); Hugging Face chat
templates want them as dicts. The final answer of a run is the JSON object in the last assistant
message without tool calls (a ```json block, or the last {...} in the text), so any policy — a
model, a baseline, the offline teacher — reports answers the same way.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from agentomnia.records import ToolResult, canonical_json

Message = dict[str, Any]
_FENCED = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


def system_message(text: str) -> Message:
    return {"role": "system", "content": text}


def user_message(text: str) -> Message:
    return {"role": "user", "content": text}


def tool_call(call_id: str, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {
            "name": name,
            "arguments": json.dumps(dict(arguments), ensure_ascii=False, sort_keys=True),
        },
    }


def assistant_message(content: str, calls: Sequence[dict[str, Any]] = ()) -> Message:
    message: Message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = list(calls)
    return message


def tool_message(call_id: str, name: str, result: ToolResult) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": observation_text(result)}


def observation_text(result: ToolResult) -> str:
    return canonical_json(result.model_dump(mode="json"))


_TOOL_NAME = re.compile(r"[A-Za-z_][\w.-]{0,79}")


def shown_name(name: str, limit: int = 40) -> str:
    """A tool name as a report or a PRD quotes it: as written where it is a name, else the start of
    what a model wrote in its place, on one line and without backticks (a small model's "tool name"
    can hold a whole reply, fences and all, which would break the Markdown it is quoted in)."""
    if _TOOL_NAME.fullmatch(name):
        return name
    flat = " ".join(name.replace("`", "'").split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


def parse_arguments(call: Mapping[str, Any]) -> tuple[str, dict[str, Any] | None, str | None]:
    """(tool name, arguments, problem): arguments is None when they do not parse to an object."""
    function = call.get("function") if isinstance(call.get("function"), Mapping) else call
    name = str(function.get("name", "")) if isinstance(function, Mapping) else ""
    raw = function.get("arguments", {}) if isinstance(function, Mapping) else None
    if isinstance(raw, Mapping):
        return name, dict(raw), None
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            return (
                name,
                None,
                f"arguments of `{shown_name(name)}` are not JSON: {exc.msg} at column {exc.colno}",
            )
        if isinstance(parsed, dict):
            return name, parsed, None
        return (
            name,
            None,
            f"arguments of `{shown_name(name)}` are a JSON {type(parsed).__name__}, not an object",
        )
    return name, None, f"arguments of `{shown_name(name)}` are missing or not text"


def parse_answer(text: str | None) -> dict[str, Any]:
    """The answer object in a final message; {} when there is none (a state-change task may not need one)."""
    if not text:
        return {}
    candidates = [m.group(1) for m in _FENCED.finditer(text)]
    if not candidates:
        start = text.rfind("{")
        while start != -1:
            try:
                value, _ = json.JSONDecoder().raw_decode(text[start:])
            except json.JSONDecodeError:
                start = text.rfind("{", 0, start)
                continue
            return value if isinstance(value, dict) else {}
        return {}
    try:
        value = json.loads(candidates[-1])
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def answer_block(answer: Mapping[str, Any]) -> str:
    return "Final answer:\n```json\n" + json.dumps(dict(answer), ensure_ascii=False, sort_keys=True) + "\n```"


def tool_names(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    names: list[str] = []
    for tool in tools:
        function = tool.get("function", tool)
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            names.append(function["name"])
    return names


def tool_schemas(tools: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for tool in tools:
        function = tool.get("function", tool)
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            out[function["name"]] = dict(function.get("parameters") or {"type": "object", "properties": {}})
    return out


def first_user_index(messages: Sequence[Mapping[str, Any]]) -> int:
    return next((i for i, m in enumerate(messages) if m.get("role") == "user"), len(messages) - 1)


ALL_WENT_THROUGH = (
    "All done; everything went through.",
    "That's taken care of.",
    "Done. The system accepted every step.",
    "Everything is in place now.",
)


def closing(done: Sequence[bool], key: str) -> str:
    """How the teacher closes a conversation, as a person reports back: that everything went through,
    or how many steps the system refused (never "I made 4 tool calls and 4 succeeded"). The wording is
    chosen by the task's `key`, so a trajectory is the same every time it is made."""
    refused = len(done) - sum(done)
    if not done:
        return "Nothing needed changing."
    if refused == 0:
        return ALL_WENT_THROUGH[zlib.crc32(key.encode()) % len(ALL_WENT_THROUGH)]
    if len(done) == 1:
        return "The system refused that step, so nothing changed."
    was, them = ("was", "it") if refused == 1 else ("were", "them")
    return (
        f"{refused} of the {len(done)} steps {was} refused by the system; I left {them} as the system has it."
    )
