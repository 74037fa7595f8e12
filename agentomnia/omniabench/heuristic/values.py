"""Value filling: observations of earlier calls, argument candidates from the request and the
results, and answers read from the results."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentomnia.omniabench.heuristic.tools import ToolView
from agentomnia.omniabench.heuristic.words import QUOTED, STOPWORDS, name_words, singular, words_of
from agentomnia.records import canonical_json
from agentomnia.trajectories.evidence import DATE_PATTERN, ID_PATTERN, NUMBER_PATTERN, number_of
from agentomnia.trajectories.messages import parse_arguments

_OF_PHRASE = re.compile(r"\b([a-z]+) of (?:the |every |each |all |their |its )?([a-z]+)\b")
_NEVER_FILLED = frozenset({"limit", "offset", "page", "cursor"})  # paging: the tool's default is right


def is_paging(param: str) -> bool:
    return bool(set(name_words(param)) & _NEVER_FILLED)


def is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


@dataclass
class Observation:
    tool: str
    arguments: dict[str, Any]
    ok: bool
    data: Any
    call_id: str = ""


def observations(messages: Sequence[Mapping[str, Any]]) -> tuple[list[Observation], set[str]]:
    """Tool results in order, and the signatures of every call made (valid or not)."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    made: set[str] = set()
    out: list[Observation] = []
    for m in messages:
        if m.get("role") == "assistant":
            for call in m.get("tool_calls") or []:
                name, args, _ = parse_arguments(call)
                calls[str(call.get("id"))] = (name, args or {})
                made.add(signature(name, args or {}))
        elif m.get("role") == "tool":
            call_id = str(m.get("tool_call_id"))
            name, args = calls.get(call_id, (str(m.get("name", "")), {}))
            try:
                result = json.loads(str(m.get("content") or "{}"))
            except json.JSONDecodeError:
                result = {}
            ok = bool(result.get("ok")) if isinstance(result, Mapping) else False
            data = result.get("data") if isinstance(result, Mapping) else None
            out.append(Observation(tool=name, arguments=args, ok=ok, data=data, call_id=call_id))
    return out, made


def signature(name: str, args: Mapping[str, Any]) -> str:
    return name + canonical_json(dict(args))


def _values_under(data: Any, keys: frozenset[str]) -> list[Any]:
    found: list[Any] = []
    if isinstance(data, Mapping):
        for k, v in data.items():
            if str(k) in keys and is_scalar(v):
                found.append(v)
            elif isinstance(v, (Mapping, list)):
                found.extend(_values_under(v, keys))
    elif isinstance(data, list):
        for v in data:
            found.extend(_values_under(v, keys))
    return found


def _records(data: Any) -> list[Mapping[str, Any]]:
    """The list of records in an observation (`items`, or the first list of objects found)."""
    if isinstance(data, list):
        return [r for r in data if isinstance(r, Mapping)]
    if isinstance(data, Mapping):
        for v in data.values():
            if isinstance(v, list) and any(isinstance(r, Mapping) for r in v):
                return [r for r in v if isinstance(r, Mapping)]
    return []


def key_variants(name: str) -> frozenset[str]:
    """Keys that carry a parameter's value: the name, its singular, and `<name>_id` for an entity."""
    base = singular(name)
    return frozenset({name, base, f"{base}_id", f"{name}_id"})


@dataclass
class Seen:
    """A text to take values from (a clause or the whole request) and the successful observations."""

    request: str
    results: list[Observation]
    prefixes: dict[str, str]
    words: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.words = words_of(self.request)
        for obs in self.results:  # ids seen under a key teach that key's prefix
            for key, value in _pairs(obs.data):
                if key.endswith("_id") and isinstance(value, str) and ID_PATTERN.fullmatch(value):
                    self.prefixes.setdefault(key, value.rsplit("-", 1)[0])

    def observed(self, name: str) -> list[Any]:
        """The value under `name` in the latest result that has that key, if it is unambiguous."""
        keys = key_variants(name)
        for obs in reversed(self.results):
            values = _values_under(obs.data, keys)
            if values:
                distinct = {canonical_json(v) for v in values}
                return [values[0]] if len(distinct) == 1 else []
        return []

    def mentions(self, param: str) -> bool:
        return all(w in self.words or singular(w) in self.words for w in words_of(param.replace("_", " ")))

    def near(self, param: str, position: int, window: int = 4) -> bool:
        """Whether the parameter's words appear within `window` words before a character position."""
        before = words_of(self.request[:position])[-window:]
        return any(w in before or singular(w) in before for w in words_of(param.replace("_", " ")))


def _pairs(data: Any) -> Iterable[tuple[str, Any]]:
    if isinstance(data, Mapping):
        for k, v in data.items():
            yield str(k), v
            yield from _pairs(v)
    elif isinstance(data, list):
        for v in data:
            yield from _pairs(v)


def is_id(param: str, schema: Mapping[str, Any]) -> bool:
    return param.endswith("_id") or param == "id" or "id of" in str(schema.get("description") or "")


def _is_date(param: str, schema: Mapping[str, Any]) -> bool:
    fmt = str(schema.get("format") or "")
    return (
        fmt.startswith("date") or param in ("start", "end", "from", "to") or param.endswith(("_on", "_date"))
    )


def _enum_candidates(
    tool: ToolView, param: str, enum: Sequence[Any], seen: Seen, required: bool
) -> list[Any]:
    hits: list[tuple[int, Any]] = []
    for value in enum:
        if not isinstance(value, str):
            continue
        phrase = r"\b" + re.escape(value.replace("_", " ").casefold()) + r"\b"
        for match in re.finditer(phrase, seen.request.casefold()):
            after = words_of(seen.request[match.end() :])[:2]
            # An optional filter is applied only when it qualifies the tool's noun ("lost claims")
            # or follows the parameter's name ("status approved"); otherwise a stray word narrows it.
            qualifies = any(singular(w) in tool.nouns for w in after) or seen.near(param, match.start(), 2)
            if required or qualifies:
                hits.append((match.start(), value))
                break
    return [v for _, v in sorted(hits, key=lambda h: h[0])]


def text_candidates(tool: ToolView, param: str, seen: Seen) -> list[Any]:
    """Values the text offers for one parameter, best first (observations not consulted)."""
    schema = tool.properties.get(param, {})
    required = param in tool.required
    kind = str(schema.get("type") or "string")
    if is_paging(param):
        return []
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return _enum_candidates(tool, param, enum, seen, required)
    if is_id(param, schema):
        prefix = seen.prefixes.get(param)
        claimed = set(seen.prefixes.values())
        out = []
        for found in dict.fromkeys(ID_PATTERN.findall(seen.request)):
            owner = found.rsplit("-", 1)[0]
            if owner == prefix or (prefix is None and required and owner not in claimed):
                out.append(found)
        return out
    if _is_date(param, schema):
        return (
            list(dict.fromkeys(DATE_PATTERN.findall(seen.request)))
            if required or seen.mentions(param)
            else []
        )
    if kind in ("number", "integer"):
        masked = DATE_PATTERN.sub(" ", ID_PATTERN.sub(" ", seen.request))
        numbers = [(m.start(), m.group(0)) for m in NUMBER_PATTERN.finditer(masked)]
        close = [n for pos, n in numbers if seen.near(param, pos)]
        chosen = close or ([n for _, n in numbers] if required else [])
        # "381,918,413" is one number (`number_of`); a whole one for an integer parameter
        return [int(v) if kind == "integer" and "." not in n else v for n in chosen for v in [number_of(n)]]
    if kind == "boolean":
        return []
    if required or seen.mentions(param):
        return [next(g for g in m.groups() if g) for m in QUOTED.finditer(seen.request)]
    return []


def candidates(tool: ToolView, param: str, seen: Seen) -> list[Any]:
    """Values the request or, for a required parameter, the observations offer, best first."""
    found = text_candidates(tool, param, seen)
    if found or param not in tool.required or is_paging(param):
        return found
    schema = tool.properties.get(param, {})
    if str(schema.get("type") or "string") == "boolean" or schema.get("enum"):
        return []
    return seen.observed(param)


@dataclass(frozen=True)
class Filled:
    tool: ToolView
    args: dict[str, Any]
    from_request: int  # how many arguments came from the request text


def fill(
    tool: ToolView, seen: Seen, made: set[str], fallback: Seen | None = None
) -> tuple[Filled | None, list[str]]:
    """A call of `tool` not made before, or the required parameters nothing could fill. Values come
    from `seen` first, then from `fallback` (the whole request when `seen` is one clause)."""
    order = list(tool.required) + [p for p in tool.properties if p not in tool.required]
    options: list[tuple[str, list[Any]]] = []
    missing: list[str] = []
    for param in order:
        values = text_candidates(tool, param, seen)
        if not values and fallback is not None and param in tool.required:
            values = text_candidates(tool, param, fallback)
        if not values:
            values = candidates(tool, param, seen) if param in tool.required else []
        if values:
            options.append((param, values[:3]))
        elif param in tool.required:
            missing.append(param)
    if missing:
        return None, missing
    request_text = (fallback or seen).request.casefold()
    for combo in itertools.product(*(values for _, values in options)):
        keys = [canonical_json(v) for v in combo]
        if len(set(keys)) != len(keys) and any(isinstance(v, str) for v in combo):
            continue  # one request value serves one parameter of a call (a start date is not the end)
        args = {param: value for (param, _), value in zip(options, combo, strict=True)}
        if signature(tool.name, args) in made:
            continue
        from_request = sum(str(v).casefold() in request_text for v in combo)
        return Filled(tool, args, from_request), []
    return None, []  # every combination was made already, or needs one value twice


def field_names(request: str) -> list[str]:
    """Snake-case field names the request may be asking for: word pairs ("claim count"), "X of Y"
    phrases ("ids of every claim" -> claim_ids), and single words."""
    text = request.casefold()
    tokens = words_of(text)
    names: list[str] = []
    for a, b in _OF_PHRASE.findall(text):
        if a not in STOPWORDS and b not in STOPWORDS:
            names.append(f"{singular(b)}_{a}")
    for a, b in itertools.pairwise(tokens):
        if a not in STOPWORDS and b not in STOPWORDS and not a.isdigit() and not b.isdigit():
            names.append(f"{a}_{b}")
    names.extend(t for t in tokens if t not in STOPWORDS and not t.isdigit())
    return list(dict.fromkeys(names))


def resolve_field(name: str, results: Sequence[Observation]) -> Any:
    """The value of a named field in the latest result that can supply it, or None."""
    parts = name.split("_")
    for obs in reversed(results):
        records = _records(obs.data)
        if name.endswith("ids") and records:
            key = singular(name)  # claim_ids -> claim_id
            ids = [r[key] for r in records if is_scalar(r.get(key))]
            if ids:
                return sorted(ids)
        if "count" in parts or "number" in parts:
            count = obs.data.get("count") if isinstance(obs.data, Mapping) else None
            if isinstance(count, int) and not isinstance(count, bool):
                return count
            if records:
                return len(records)
        totals = {"total", "sum"} & set(parts)
        if totals and records:
            rest = [p for p in parts if p not in totals]
            key = singular("_".join(rest))
            nums = [float(r[key]) for r in records if isinstance(r.get(key), (int, float))]
            if nums:
                return round(sum(nums), 2)
        values = _values_under(obs.data, frozenset({name, singular(name)}))
        if values:
            distinct = {canonical_json(v) for v in values}
            return values[0] if len(distinct) == 1 else None
    return None


def build_answer(request: str, results: Sequence[Observation]) -> dict[str, Any]:
    answer: dict[str, Any] = {}
    covered: set[str] = set()
    for name in field_names(request):
        if name in covered:
            continue
        value = resolve_field(name, results)
        if value is not None:
            answer[name] = value
            covered.update(name.split("_"))  # "claim count" answered: "claim" and "count" are not fields
    return answer
