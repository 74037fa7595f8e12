"""Literal provenance tracking: what a run had seen by each point, and whether a value was among it.

Evidence is the task text (system and user messages), the tool schemas and every observation so
far. A string is supported when it occurs in that text as a whole token; a number when it occurs
literally or as a simple derivation of one observation (a list's length, a field's sum, minimum,
maximum or mean over a list of records). The offline teacher uses this to decide when it must look
something up or ask, and the quality checks use the same rules to find unsupported claims, so the
teacher cannot pass by a rule the checker does not share.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from agentomnia.dates import with_iso_dates

ID_PATTERN = re.compile(r"(?<![A-Za-z0-9_-])[A-Z][A-Z0-9]{1,7}-\d{2,}(?![A-Za-z0-9_])")
DATE_PATTERN = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?")
# a number as text writes it: 42, -3.5, or with its thousands separated (381,918,413), never the
# items of a list written without spaces ([100,200]); `number_of` reads one
NUMBER_PATTERN = re.compile(
    r"(?<![\w.,\[-])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w,-])|(?<![\w.-])-?\d+(?:\.\d+)?(?![\w-])"
)
# Integers this small count words and steps; attributing them to a source would only add noise.
SMALL_INT = 10
MIN_FACT_CHARS = 5


def _num_key(value: float) -> str:
    return f"{round(float(value), 2):.2f}"


def number_of(text: str) -> float:
    """The value of a number `NUMBER_PATTERN` found: "381,918,413" -> 381918413.0."""
    return float(text.replace(",", ""))


def numbers_in(text: str) -> list[float]:
    cleaned = DATE_PATTERN.sub(" ", ID_PATTERN.sub(" ", text))
    return [number_of(m.group(0)) for m in NUMBER_PATTERN.finditer(cleaned)]


def is_small(value: float) -> bool:
    return float(value).is_integer() and abs(value) <= SMALL_INT


def _derived(value: Any, out: set[str]) -> None:
    """Numbers a careful reader may state about one observation without further tool calls."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        out.add(_num_key(value))
        return
    if isinstance(value, str):
        for n in numbers_in(value):
            out.add(_num_key(n))
        return
    if isinstance(value, Mapping):
        out.add(_num_key(len(value)))
        for v in value.values():
            _derived(v, out)
        return
    if isinstance(value, list):
        out.add(_num_key(len(value)))
        records = [v for v in value if isinstance(v, Mapping)]
        fields = {
            k
            for r in records
            for k, v in r.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        for f in fields:
            nums = [
                float(r[f])
                for r in records
                if isinstance(r.get(f), (int, float)) and not isinstance(r.get(f), bool)
            ]
            if nums:
                out.update(_num_key(x) for x in (sum(nums), min(nums), max(nums), sum(nums) / len(nums)))
        for v in value:
            _derived(v, out)


def combines(value: float, grounded: Sequence[float]) -> bool:
    """Whether `value` is one arithmetic step (+, -, x, /) from two grounded numbers of the same message:
    a total or a difference of values the run already stated is derived, not invented."""
    target = float(value)
    for i, a in enumerate(grounded):
        for b in grounded[i + 1 :]:
            for candidate in (a + b, a - b, b - a, a * b, a / b if b else None, b / a if a else None):
                if candidate is not None and abs(candidate - target) <= max(0.005, 1e-6 * abs(target)):
                    return True
    return False


def ungrounded_numbers(
    stated: Sequence[float], evidence: Evidence, known: Sequence[float] = ()
) -> list[float]:
    """The numbers of one message that neither the evidence (nor `known`: what the run knows of
    itself, such as how many steps it took) holds nor arithmetic derives: a number is derived when it
    is one step (+, -, x, /) from two numbers the message grounds, and a number so derived grounds
    the next step, so worked arithmetic ("61 + 58 = 119, 119 + 60 = 179") holds however many terms
    it sums."""
    own = {float(k) for k in known}
    grounded = [n for n in stated if evidence.has_number(n) or n in own]
    pending = [n for n in stated if not (evidence.has_number(n) or n in own)]
    progress = True
    while pending and progress:
        progress = False
        for n in list(pending):
            if combines(n, grounded):
                grounded.append(n)
                pending.remove(n)
                progress = True
    return pending


_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def has_token(text: str, needle: str) -> bool:
    """Whether `needle` occurs in `text` as a whole token: no letter, digit, `_` or `-` just before it and
    no letter, digit or `_` just after it (`CLA-0012` does not hold `CLA-001`; "order 7." holds "7").
    Found by substring search: the run's text holds every tool schema, and a regular expression that
    tries each of its positions is many times slower than `str.find`."""
    if not needle:
        return False
    start = text.find(needle)
    while start >= 0:
        end = start + len(needle)
        if (start == 0 or (text[start - 1] not in _WORD and text[start - 1] != "-")) and (
            end == len(text) or text[end] not in _WORD
        ):
            return True
        start = text.find(needle, start + 1)
    return False


@lru_cache(maxsize=256)
def _schema_text(text: str) -> tuple[str, frozenset[str]]:
    """(masked text, its numbers) of a tool list's JSON, made once per tool list, not once per step."""
    masked = ID_PATTERN.sub("<id>", text)
    return masked, frozenset(_num_key(n) for n in numbers_in(masked))


class Evidence:
    """The text and numbers a run may rely on, added in the order the run saw them."""

    def __init__(self, schema_text: str = "") -> None:
        self._texts: list[tuple[str, str]] = []
        self._numbers: set[str] = set()
        self._blob = ""
        if schema_text:
            self.add_text(schema_text, "the tool schemas")

    @classmethod
    def from_tools(cls, tools: Sequence[Mapping[str, Any]]) -> Evidence:
        # Ids in schemas are format examples ("e.g. CLA-001"), not evidence that a record is the one
        # the user means; they are masked so only the request and observations can supply ids.
        masked, numbers = _schema_text(json.dumps(list(tools), sort_keys=True, default=str))
        evidence = cls()
        evidence._texts.append(("the tool schemas", masked))
        evidence._blob = "\n" + masked.casefold()
        evidence._numbers.update(numbers)
        return evidence

    def copy(self) -> Evidence:
        other = Evidence()
        other._texts, other._numbers, other._blob = list(self._texts), set(self._numbers), self._blob
        return other

    def add_text(self, text: str, label: str = "the request") -> None:
        iso = with_iso_dates(text)  # a date the text speaks ("March 13, 2026") supports 2026-03-13
        text = text if iso == text else f"{text}\n{iso}"
        self._texts.append((label, text))
        self._blob += "\n" + text.casefold()
        for n in numbers_in(text):
            self._numbers.add(_num_key(n))

    def add_observation(self, content: str, label: str = "a tool result") -> None:
        self.add_text(content, label)
        try:
            _derived(json.loads(content), self._numbers)
        except (json.JSONDecodeError, TypeError):
            return

    def where(self, value: Any) -> str | None:
        """Label of the most recent text that mentions `value` (for reasoning that cites its source)."""
        needle = str(value).strip().casefold()
        if not needle:
            return None
        # a figure as a person writes it counts too: the request's "5,152 px" is where 5152 came from
        figure = _num_key(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        for label, text in reversed(self._texts):
            if has_token(text.casefold(), needle) or (
                figure is not None and any(_num_key(n) == figure for n in numbers_in(text))
            ):
                return label
        return None

    def has_string(self, value: str) -> bool:
        return has_token(self._blob, value.strip().casefold())

    def has_number(self, value: float) -> bool:
        return is_small(value) or _num_key(value) in self._numbers

    def supports(self, value: Any) -> bool:
        """Whether an argument value is attributable to the evidence (recursing into lists/objects)."""
        if value is None or isinstance(value, bool):
            return True
        if isinstance(value, (int, float)):
            return self.has_number(value)
        if isinstance(value, str):
            return self.has_string(value) or (_is_number_text(value) and self.has_number(float(value)))
        if isinstance(value, Mapping):
            return all(self.supports(v) for v in value.values())
        if isinstance(value, list):
            return all(self.supports(v) for v in value)
        return self.has_string(str(value))


def _is_number_text(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def state_facts(state: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    """(record keys, other string values) of a state: the things a run could only know by looking."""
    keys: set[str] = set()
    facts: set[str] = set()
    for table in state.values():
        if not isinstance(table, Mapping):
            continue
        for key, record in table.items():
            keys.add(str(key))
            if isinstance(record, Mapping):
                for v in record.values():
                    if isinstance(v, str) and len(v) >= MIN_FACT_CHARS and not DATE_PATTERN.fullmatch(v):
                        facts.add(v)
    return keys, facts - keys


def record_index(state: Mapping[str, Any]) -> dict[str, str]:
    """Record key -> name of the field holding it (so a dict in an observation can be recognised)."""
    out: dict[str, str] = {}
    for table in state.values():
        if not isinstance(table, Mapping):
            continue
        for key, record in table.items():
            if isinstance(record, Mapping):
                field = next((f for f, v in record.items() if v == key), None)
                if field is not None:
                    out[str(key)] = field
    return out


def records_in(value: Any, index: Mapping[str, str]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    """(key, record) for every dict in an observation that is a record of a known key."""
    if isinstance(value, Mapping):
        for key_field in set(index.values()):
            key = value.get(key_field)
            if isinstance(key, str) and index.get(key) == key_field and len(value) >= 2:
                yield key, value
        for v in value.values():
            yield from records_in(v, index)
    elif isinstance(value, list):
        for v in value:
            yield from records_in(v, index)


def needs_support(value: Any, keys: set[str], facts: set[str]) -> bool:
    """Whether an argument value states something about the world (an id, a recorded fact, a
    number) and so must come from the evidence; free text the agent writes itself (a note) does not."""
    if value is None or isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return not is_small(value)
    if isinstance(value, str):
        return (
            bool(ID_PATTERN.fullmatch(value))
            or value in keys
            or value in facts
            or bool(DATE_PATTERN.fullmatch(value))
        )
    if isinstance(value, Mapping):
        return any(needs_support(v, keys, facts) for v in value.values())
    if isinstance(value, list):
        return any(needs_support(v, keys, facts) for v in value)
    return False
