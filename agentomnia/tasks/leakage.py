"""Leakage checks on a public task query: what the text gives away that the agent should work out.

A query that names the tool to call, spells a parameter key, lists the steps or quotes a record id
turns a planning task into a transcription exercise. Each variant forbids some of these (DAG-Challenge
forbids ids too: entities are referred to by description). The checks work from the spec alone, so
every synthesizer (DAG, program, solver) and every asset check uses the same rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

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


def _word(literal: str) -> str:
    return rf"(?<![A-Za-z0-9_]){re.escape(literal)}(?![A-Za-z0-9_])"


@lru_cache(maxsize=8192)
def _compiled(source: str) -> re.Pattern[str]:
    return re.compile(source, re.IGNORECASE)


# The only non-ASCII characters `re.IGNORECASE` matches to an ASCII one (İ, ı, ſ and the Kelvin
# sign); folded onto their letters, a lower-cased query contains every ASCII literal the case-blind
# patterns below could find in it. tests/tasks/test_leakage_probes.py re-derives the list.
_ASCII_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def _folded(query: str) -> str:
    return query.lower() if query.isascii() else query.translate(_ASCII_FOLD).lower()


@dataclass(frozen=True)
class _Probe:
    """One literal a query must not contain in some form, compiled only when the query might.

    Every form of the pattern contains the literal itself, so a query whose folded text lacks an
    ASCII literal cannot match and the regex is never built; most queries are clean, so most of the
    ~100 patterns of a spec never are.
    """

    literal: str
    source: str
    needle: str | None = None  # the literal lower-cased, when it is ASCII

    @classmethod
    def of(cls, literal: str, source: str) -> _Probe:
        return cls(literal, source, literal.lower() if literal.isascii() else None)

    def found(self, query: str, folded: str) -> bool:
        if self.needle is not None and self.needle not in folded:
            return False
        return _compiled(self.source).search(query) is not None


_Patterns = tuple[list[_Probe], list[_Probe], re.Pattern[str] | None]
_CACHE: dict[str, _Patterns] = {}  # by spec id: specs are content-hashed, so the id fixes the patterns


def _patterns(spec: EnvSpec) -> _Patterns:
    """(tool-name probes, parameter-key probes, id pattern) for one spec, made once."""
    cached = _CACHE.get(spec.id)
    if cached is not None:
        return cached
    tools: list[_Probe] = []
    for t in spec.tools:
        if "_" in t.name:
            tools.append(_Probe.of(t.name, _word(t.name)))
        else:  # a one-word tool name (`refund`) is also plain English: only its code form leaks
            tools.append(_Probe.of(t.name, rf"(?:`{re.escape(t.name)}`|\b{re.escape(t.name)}\s*\()"))
    keys: dict[str, _Probe] = {}
    for t in spec.tools:
        for p in t.parameters.get("properties", {}):
            if p in keys:
                continue
            if "_" in p:
                keys[p] = _Probe.of(p, _word(p))
            else:  # `status`, `amount` are words; they leak only as code (`status`, status=)
                keys[p] = _Probe.of(p, rf"(?:`{re.escape(p)}`|(?<![A-Za-z0-9_]){re.escape(p)}\s*=)")
    prefixes = sorted({re.escape(e.id_prefix) for e in spec.entities if e.id_prefix}, key=len, reverse=True)
    ids = re.compile(rf"(?<![A-Za-z0-9])(?:{'|'.join(prefixes)})-\d+\b") if prefixes else None
    if len(_CACHE) > 512:
        _CACHE.clear()
    _CACHE[spec.id] = (tools, [keys[k] for k in sorted(keys)], ids)
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
    folded = _folded(query)
    problems: list[str] = []
    if forbid_tool_names:
        for probe in tools:
            if probe.found(query, folded):
                problems.append(
                    f"names tool `{probe.literal}`: describe the goal, not the tool that reaches it"
                )
    if forbid_param_keys:
        for probe in keys:
            if probe.found(query, folded):
                problems.append(
                    f"spells parameter key `{probe.literal}`: say what the value means in plain words"
                )
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
