"""Leakage checks on a public task query: what the text gives away that the agent should work out.

A query that names the tool to call, spells a parameter key, lists the steps or quotes a record id
turns a planning task into a transcription exercise. Each variant forbids some of these (DAG-Challenge
forbids ids too: entities are referred to by description). The checks work from the spec alone, so
every synthesizer (DAG, program, solver) and every asset check uses the same rules.
"""

from __future__ import annotations

import re

from agentomnia.envs.spec import EnvSpec

# Phrases that turn a request into a recipe: numbered steps, sequencing words at clause starts,
# or talk about tools and calls themselves.
_STEP_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("numbered step", re.compile(r"(?im)^\s*(?:step\s*)?\d+[.)]\s+\S")),
    ("'step N'", re.compile(r"(?i)\bstep\s+\d+\b")),
    ("'first ... then' recipe", re.compile(r"(?is)\bfirst\b[^.?!]{0,160}\bthen\b[^.?!]{0,160}\b(?:finally|after that)\b")),
    ("mentions calling a tool", re.compile(r"(?i)\b(?:call|invoke|use|run)\s+(?:the\s+)?(?:\w+\s+)?(?:tool|function|endpoint|api)\b")),
    ("names a tool or function", re.compile(r"(?i)\b(?:tool|function)\s+[`'\"]?[a-z]+_[a-z_]+")),
)  # fmt: skip


def _word(literal: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9_]){re.escape(literal)}(?![A-Za-z0-9_])", re.IGNORECASE)


_Patterns = tuple[
    list[tuple[str, re.Pattern[str]]], list[tuple[str, re.Pattern[str]]], re.Pattern[str] | None
]
_CACHE: dict[str, _Patterns] = {}  # by spec id: specs are content-hashed, so the id fixes the patterns


def _patterns(spec: EnvSpec) -> _Patterns:
    """(tool-name patterns, parameter-key patterns, id pattern) for one spec, compiled once."""
    cached = _CACHE.get(spec.id)
    if cached is not None:
        return cached
    tools: list[tuple[str, re.Pattern[str]]] = []
    for t in spec.tools:
        if "_" in t.name:
            tools.append((t.name, _word(t.name)))
        else:  # a one-word tool name (`refund`) is also plain English: only its code form leaks
            tools.append((t.name, re.compile(rf"(?i)(?:`{re.escape(t.name)}`|\b{re.escape(t.name)}\s*\()")))
    keys: dict[str, re.Pattern[str]] = {}
    for t in spec.tools:
        for p in t.parameters.get("properties", {}):
            if p in keys:
                continue
            if "_" in p:
                keys[p] = _word(p)
            else:  # `status`, `amount` are words; they leak only as code (`status`, status=)
                keys[p] = re.compile(rf"(?i)(?:`{re.escape(p)}`|(?<![A-Za-z0-9_]){re.escape(p)}\s*=)")
    prefixes = sorted({re.escape(e.id_prefix) for e in spec.entities if e.id_prefix}, key=len, reverse=True)
    ids = re.compile(rf"(?<![A-Za-z0-9])(?:{'|'.join(prefixes)})-\d+\b") if prefixes else None
    if len(_CACHE) > 512:
        _CACHE.clear()
    _CACHE[spec.id] = (tools, sorted(keys.items()), ids)
    return _CACHE[spec.id]


def id_literals(text: str, spec: EnvSpec) -> list[str]:
    """Record identifiers (`LIS-004`, and codes in the same shape) quoted in a text."""
    ids = _patterns(spec)[2]
    return sorted(set(ids.findall(text))) if ids is not None else []


def leakage_problems(
    query: str,
    spec: EnvSpec,
    *,
    forbid_ids: bool,
    forbid_tool_names: bool = True,
    forbid_param_keys: bool = True,
    forbid_steps: bool = True,
) -> list[str]:
    """Everything the query gives away that its variant forbids; an empty list means it is clean.

    Each message names the literal found and what to write instead, so a synthesizer can log it as
    a rejection reason and a person can fix a hand-written query.
    """
    tools, keys, _ = _patterns(spec)
    problems: list[str] = []
    if forbid_tool_names:
        for name, pattern in tools:
            if pattern.search(query):
                problems.append(f"names tool `{name}`: describe the goal, not the tool that reaches it")
    if forbid_param_keys:
        for key, pattern in keys:
            if pattern.search(query):
                problems.append(f"spells parameter key `{key}`: say what the value means in plain words")
    if forbid_steps:
        for what, pattern in _STEP_PATTERNS:
            if pattern.search(query):
                problems.append(f"dictates steps ({what}): state the outcome and let the agent plan")
    if forbid_ids:
        found = id_literals(query, spec)
        if found:
            problems.append(
                f"quotes identifier(s) {', '.join(found[:5])}: refer to the records by what distinguishes them"
            )
    return problems
