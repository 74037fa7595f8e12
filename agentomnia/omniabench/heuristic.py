"""A model-free baseline policy: tool retrieval by embedding and argument filling by pattern.

A benchmark is only informative if a policy with no understanding scores low on it for visible
reasons, while tasks that really are one lookup or one write with the ids spelled out stay within
its reach. This policy sees exactly what a model sees (the messages and the tool schemas, never the
task's ground truth) and acts by simple rules:

- Retrieval: tools are ranked by the cosine similarity of their text (name, description, parameter
  names) to the user's request. A write tool is a candidate only when the request names its verb
  ("approve", "assign"), so a tool that merely mentions the same noun is never written with.
- Arguments: ids that match the environment's id pattern and the prefix the schemas show for that
  parameter, enum values that appear in the request (an optional filter only when it qualifies the
  tool's noun, as in "lost claims"), dates, numbers next to the parameter's name, quoted strings,
  and values seen in earlier tool results under the parameter's name, used only when the latest
  result holding that key has exactly one value for it (an ambiguous list is not guessed from).
- Planning: the goal is each named write in rank order, or the best fillable read for a question.
  A goal missing an id first triggers a read/list/search tool about that id's entity that can be
  filled from the request; an identical call is never repeated; the run stops when no candidate is
  left above the score threshold or after `max_calls` calls.
- Answer: a ```json block of the fields the request names ("claim count", "total amount", "ids of
  every claim"), filled from the observations (a value under that key, a count, a sum, the list of
  ids), and only when the value is unambiguous.

It has no way to ask the user, follow a chain longer than one lookup, check a constraint or
disambiguate a reference by its description: the tasks that need those are where it fails.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentomnia.embeddings import Embedder
from agentomnia.records import canonical_json
from agentomnia.trajectories.evidence import DATE_PATTERN, ID_PATTERN, NUMBER_PATTERN
from agentomnia.trajectories.messages import answer_block, assistant_message, parse_arguments, tool_call

READ_VERBS = frozenset(
    {"get", "list", "find", "search", "summarize", "track", "lookup", "show", "count", "check", "view",
     "fetch", "query", "describe", "read", "calculate", "compute", "request"}
)  # fmt: skip
# Words that never name an answer field or qualify a tool.
STOPWORDS = frozenset(
    {"a", "an", "the", "of", "for", "to", "on", "in", "at", "by", "and", "or", "with", "without", "from",
     "is", "are", "was", "were", "be", "been", "it", "its", "their", "they", "them", "this", "that",
     "these", "those", "my", "me", "i", "we", "our", "you", "your", "please", "what", "which", "who",
     "how", "many", "much", "do", "does", "did", "give", "tell", "show", "let", "know", "there", "any",
     "every", "each", "all", "up", "add", "record", "just", "also", "then", "so", "if", "not", "no",
     "can", "could", "would", "should", "will", "want", "need", "into", "about", "as", "have", "has"}
)  # fmt: skip
_WORD = re.compile(r"[a-z0-9]+")
_EXAMPLE_ID = re.compile(r"e\.g\.\s*([A-Z][A-Z0-9]{1,7})-\d{2,}")
_QUOTED = re.compile(r"\"([^\"]{1,200})\"|“([^”]{1,200})”|(?<![A-Za-z])'([^']{1,200})'(?![A-Za-z])")
_OF_PHRASE = re.compile(r"\b([a-z]+) of (?:the |every |each |all |their |its )?([a-z]+)\b")
_NEVER_FILLED = frozenset({"limit", "offset", "page", "cursor"})
MIN_SCORE = 0.05  # below this cosine a tool is unrelated to the request
RELATIVE_SCORE = 0.5  # a candidate must score at least this share of the best tool's score
FILLED_BONUS = 0.15  # per argument filled from the request: a read that can be aimed beats a vague one


def words_of(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ses", "xes")) and len(word) > 4:
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def verb_named(verb: str, request_words: Iterable[str]) -> bool:
    """Whether the request uses the verb in any inflection ("approve" ~ "approved", "approval")."""
    stem = verb if len(verb) <= 4 else verb[: len(verb) - 1]
    return any(w.startswith(stem) for w in request_words)


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


# ------------------------------------------------------------------ tools


@dataclass(frozen=True)
class ToolView:
    """What the heuristic reads from one tool schema."""

    name: str
    description: str
    properties: dict[str, dict[str, Any]]
    required: tuple[str, ...]
    read: bool

    @property
    def verb(self) -> str:
        return self.name.split("_")[0].casefold()

    @property
    def nouns(self) -> frozenset[str]:
        return frozenset(singular(w) for w in words_of(" ".join(self.name.split("_")[1:])))

    @property
    def text(self) -> str:
        params = " ".join(p.replace("_", " ") for p in self.properties)
        return f"{self.name.replace('_', ' ')}. {self.description} Parameters: {params}"


def tool_views(tools: Sequence[Mapping[str, Any]], read_tools: Iterable[str] = ()) -> list[ToolView]:
    reads = set(read_tools)
    views: list[ToolView] = []
    for tool in tools:
        function = tool.get("function", tool)
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            continue
        schema = function.get("parameters") or {}
        name = str(function["name"])
        views.append(
            ToolView(
                name=name,
                description=str(function.get("description") or ""),
                properties={str(k): dict(v) for k, v in dict(schema.get("properties") or {}).items()},
                required=tuple(str(r) for r in schema.get("required") or ()),
                read=name in reads or name.split("_")[0].casefold() in READ_VERBS,
            )
        )
    return views


def id_prefixes(tools: Sequence[ToolView]) -> dict[str, str]:
    """Parameter -> the id prefix its schema shows ("id of the claim (e.g. CLA-001)" -> CLA)."""
    out: dict[str, str] = {}
    for tool in tools:
        for param, schema in tool.properties.items():
            found = _EXAMPLE_ID.search(str(schema.get("description") or ""))
            if found and param not in out:
                out[param] = found.group(1)
    return out


class ToolIndex:
    """Tool texts embedded once per tool list; ranks them against a request."""

    def __init__(self, tools: Sequence[ToolView], embedder: Embedder) -> None:
        self.tools = list(tools)
        self.embedder = embedder
        self.vectors = embedder.embed([t.text for t in self.tools]) if self.tools else np.zeros((0, 1))
        self.prefixes = id_prefixes(self.tools)

    def rank(self, request: str) -> list[tuple[ToolView, float]]:
        if not self.tools:
            return []
        query = self.embedder.embed([request])[0]
        scores = self.vectors @ query
        order = np.argsort(-scores, kind="stable")
        return [(self.tools[i], float(scores[i])) for i in order]


# ------------------------------------------------------------------ what the run has seen


@dataclass
class Observation:
    tool: str
    arguments: dict[str, Any]
    ok: bool
    data: Any


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
            name, args = calls.get(str(m.get("tool_call_id")), (str(m.get("name", "")), {}))
            try:
                result = json.loads(str(m.get("content") or "{}"))
            except json.JSONDecodeError:
                result = {}
            ok = bool(result.get("ok")) if isinstance(result, Mapping) else False
            data = result.get("data") if isinstance(result, Mapping) else None
            out.append(Observation(tool=name, arguments=args, ok=ok, data=data))
    return out, made


def signature(name: str, args: Mapping[str, Any]) -> str:
    return name + canonical_json(dict(args))


def _values_under(data: Any, keys: frozenset[str]) -> list[Any]:
    found: list[Any] = []
    if isinstance(data, Mapping):
        for k, v in data.items():
            if str(k) in keys and _scalar(v):
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
    """The request text and the successful observations, with the lookups the heuristic needs."""

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


# ------------------------------------------------------------------ argument filling


def _is_id(param: str, schema: Mapping[str, Any]) -> bool:
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


def candidates(tool: ToolView, param: str, seen: Seen) -> list[Any]:
    """Values the request or the observations offer for one parameter, best first."""
    schema = tool.properties.get(param, {})
    required = param in tool.required
    kind = str(schema.get("type") or "string")
    if param in _NEVER_FILLED:
        return []
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return _enum_candidates(tool, param, enum, seen, required)
    out: list[Any] = []
    if _is_id(param, schema):
        prefix = seen.prefixes.get(param)
        claimed = set(seen.prefixes.values())
        for found in dict.fromkeys(ID_PATTERN.findall(seen.request)):
            owner = found.rsplit("-", 1)[0]
            if owner == prefix or (prefix is None and required and owner not in claimed):
                out.append(found)
        return out or (seen.observed(param) if required else [])
    if _is_date(param, schema):
        if required or seen.mentions(param):
            out.extend(dict.fromkeys(DATE_PATTERN.findall(seen.request)))
        return out or (seen.observed(param) if required else [])
    if kind in ("number", "integer"):
        masked = DATE_PATTERN.sub(" ", ID_PATTERN.sub(" ", seen.request))
        numbers = [(m.start(), m.group(0)) for m in NUMBER_PATTERN.finditer(masked)]
        close = [n for pos, n in numbers if seen.near(param, pos)]
        chosen = close or ([n for _, n in numbers] if required else [])
        out.extend(int(n) if kind == "integer" and n.lstrip("-").isdigit() else float(n) for n in chosen)
        return out or (seen.observed(param) if required else [])
    if kind == "boolean":
        return []
    if required or seen.mentions(param):
        out.extend(next(g for g in m.groups() if g) for m in _QUOTED.finditer(seen.request))
    return out or (seen.observed(param) if required else [])


@dataclass(frozen=True)
class Filled:
    tool: ToolView
    args: dict[str, Any]
    from_request: int  # how many arguments came from the request text


def fill(tool: ToolView, seen: Seen, made: set[str]) -> tuple[Filled | None, list[str]]:
    """A call of `tool` not made before, or the required parameters nothing could fill."""
    order = list(tool.required) + [p for p in tool.properties if p not in tool.required]
    options: list[tuple[str, list[Any]]] = []
    missing: list[str] = []
    for param in order:
        values = candidates(tool, param, seen)[:3]
        if values:
            options.append((param, values))
        elif param in tool.required:
            missing.append(param)
    if missing:
        return None, missing
    request_text = seen.request.casefold()
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


# ------------------------------------------------------------------ answers


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
            ids = [r[key] for r in records if _scalar(r.get(key))]
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


# ------------------------------------------------------------------ the agent


class HeuristicAgent:
    """The retrieval-and-patterns baseline; one per rollout (it counts its own calls)."""

    name = "baseline:heuristic"

    def __init__(
        self,
        index: ToolIndex,
        *,
        max_calls: int = 6,
        max_lookups: int = 2,
        min_score: float = MIN_SCORE,
        relative_score: float = RELATIVE_SCORE,
    ) -> None:
        self.index = index
        self.max_calls = max_calls
        self.max_lookups = max_lookups
        self.min_score = min_score
        self.relative_score = relative_score
        self._calls = 0
        self._lookups = 0
        self._read_done = False  # one read answers a question; more would only wander

    def _goals(
        self, ranked: list[tuple[ToolView, float]], seen: Seen, made: set[str], results: list[Observation]
    ) -> list[ToolView]:
        """Named writes in rank order; then, while no write has been made, the best aimed read."""
        if not ranked:
            return []
        floor = max(self.min_score, self.relative_score * ranked[0][1])
        eligible = [(t, s) for t, s in ranked if s >= floor]
        writes = [t for t, _ in eligible if not t.read and verb_named(t.verb, seen.words)]
        names = {t.name for t in writes}
        if any(o.tool in names for o in results) or self._read_done:
            return writes
        aimed = []
        for tool, score in eligible:
            if not tool.read:
                continue
            filled, _ = fill(tool, seen, made)
            # A read that nothing in the request aims is only worth it as the best match overall.
            if filled is not None and (filled.from_request or tool is ranked[0][0]):
                aimed.append((score + FILLED_BONUS * filled.from_request, tool))
        if aimed:
            return [*writes, max(aimed, key=lambda a: a[0])[1]]
        return [*writes, *[t for t, _ in eligible if t.read][:1]]

    def _lookup(
        self, goal: ToolView, param: str, ranked: list[tuple[ToolView, float]], seen: Seen, made: set[str]
    ) -> Filled | None:
        """A read about the entity `param` refers to that can be aimed with what the request gives."""
        entity = {singular(w) for w in param.removesuffix("_id").split("_") if w}
        options: list[tuple[float, Filled]] = []
        for tool, score in ranked:
            if tool is goal or not tool.read or param in tool.required or not entity <= tool.nouns:
                continue
            filled, _ = fill(tool, seen, made)
            if filled is None or (not filled.args and tool.verb != "list"):
                continue
            options.append((score + FILLED_BONUS * filled.from_request, filled))
        return max(options, key=lambda o: o[0])[1] if options else None

    def _call(self, filled: Filled, reason: str) -> dict[str, Any]:
        self._calls += 1
        args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in sorted(filled.args.items()))
        call = tool_call(f"call_{self._calls}", filled.tool.name, filled.args)
        return assistant_message(f"{reason} `{filled.tool.name}`({args}).", [call])

    def act(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        request = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")
        results, made = observations(messages)
        ok_results = [o for o in results if o.ok]
        seen = Seen(request, ok_results, dict(self.index.prefixes))
        if self._calls < self.max_calls:
            ranked = self.index.rank(request)
            for goal in self._goals(ranked, seen, made, results):
                filled, missing = fill(goal, seen, made)
                if filled is not None:
                    self._read_done = self._read_done or goal.read
                    return self._call(filled, "The request asks for this, so I call")
                for param in missing:
                    if not _is_id(param, goal.properties.get(param, {})) or self._lookups >= self.max_lookups:
                        continue
                    support = self._lookup(goal, param, ranked, seen, made)
                    if support is not None:
                        self._lookups += 1
                        return self._call(support, f"`{goal.name}` needs the {param}, so first I call")
        answer = build_answer(request, ok_results)
        done = sum(o.ok for o in results)
        return assistant_message(
            f"I made {len(results)} tool calls ({done} succeeded). " + answer_block(answer)
        )
