"""A model-free baseline policy: a request read clause by clause, tools chosen by overlap and embedding.

A benchmark is only informative if a policy with no understanding scores low on it for visible
reasons, while tasks whose every record is named outright stay within its reach. This policy sees
exactly what a model sees (the messages and the tool schemas, never the task's ground truth) and acts
by rules a reader can check:

- Clauses: the request is cut into sentences (quoted strings are masked first, so a period inside a
  quoted value never ends one). A sentence that says what to do in a recognisable form ("Create a X
  with a: ...; b 1.5", "Reassign X so its A is Y", "Point the A of X to Y", "Mark X as V",
  "Change the F to V of X", "Remove X", or an imperative tool verb such as "Approve claim CLA-1")
  becomes one write step; a sentence listing `"field": description` pairs asks for a JSON answer.
- Tools: for each step, write tools are scored by how many of the clause's named fields they take
  as parameters, whether they take the record the clause is about (its id prefix), whether their name
  carries the clause's verb or target state, and the embedding similarity of their text to the clause.
- Values: literals are typed by the JSON schema (numbers, booleans from yes/no, enum values, quoted
  strings); references are resolved through the observations: an id spelled out, "the new X" (the
  record an earlier step created), "the A of R" (field A of record R, read with R's get tool), "the X
  named 'N'" (a find tool). Writes run in request order.
- Answers: a requested field is read from a tool result: "the number of Xs of R / with A V / matching
  'q' / whose A is V / linked to R" (a list, search, summary or overview call), "the A of R" (a
  record field). Requests without a JSON spec fall back to one aimed read and answer the field names
  the request uses ("claim count", "total amount") from the observations.

What it cannot do is the point: it never asks the user, so a withheld detail stays missing; a record
named only by description ("the only plan matching 'X'", "the loan with the latest due date") is left
alone; it computes nothing (no checks, sums or differences of reported values); it checks no
constraint before writing. The final message names each step and field it skipped and why.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
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
# Verbs a tool that makes a new record tends to start with (its name or its description).
CREATE_VERBS = frozenset(
    {"create", "add", "register", "record", "log", "upload", "issue", "open", "file", "submit", "generate",
     "request", "book", "schedule", "new", "enroll", "make", "place", "raise", "post", "start"}
)  # fmt: skip
DELETE_VERBS = frozenset({"delete", "remove", "drop", "purge", "erase"})
# Words that never name an answer field or qualify a tool.
STOPWORDS = frozenset(
    {"a", "an", "the", "of", "for", "to", "on", "in", "at", "by", "and", "or", "with", "without", "from",
     "is", "are", "was", "were", "be", "been", "it", "its", "their", "they", "them", "this", "that",
     "these", "those", "my", "me", "i", "we", "our", "you", "your", "please", "what", "which", "who",
     "how", "many", "much", "do", "does", "did", "give", "tell", "show", "let", "know", "there", "any",
     "every", "each", "all", "up", "add", "record", "just", "also", "then", "so", "if", "not", "no",
     "can", "could", "would", "should", "will", "want", "need", "into", "about", "as", "have", "has"}
)  # fmt: skip
# Words that may open an imperative sentence before its verb ("Please now approve ...").
_LEAD_WORDS = frozenset({"please", "kindly", "now", "also", "then", "and", "just", "can", "could", "you"})
# A reference using one of these words picks a record by a property, an order or a count: the
# heuristic does not evaluate such descriptions, so the reference stays unresolved.
_DESCRIPTIVE = frozenset(
    {"only", "with", "among", "matching", "whose", "latest", "earliest", "highest", "lowest", "every", "each",
     "all", "any", "which", "that", "whether", "sum", "combined", "difference", "minus", "how"}
)  # fmt: skip
# Imperatives that ask for information in free text ("Tell me the amount"); a question word counts
# only in a sentence that ends with a question mark ("Here is what I need done" asks nothing).
_ASK_VERBS = frozenset({"tell", "give", "show", "list", "report"})
_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_EXAMPLE_ID = re.compile(r"e\.g\.\s*([A-Z][A-Z0-9]{1,7})-\d{2,}")
_KEY_OF = re.compile(r"\bid of the ([a-z0-9_ ]+?)\s*\(e\.g\.", re.IGNORECASE)
_REF_OF = re.compile(r"\bid of an? ([a-z0-9_ ]+)", re.IGNORECASE)
_QUOTED = re.compile(r"\"([^\"]{1,200})\"|“([^”]{1,200})”|(?<![A-Za-z])'([^']{1,200})'(?![A-Za-z])")
_OF_PHRASE = re.compile(r"\b([a-z]+) of (?:the |every |each |all |their |its )?([a-z]+)\b")
_NEVER_FILLED = frozenset({"limit", "offset", "page", "cursor"})  # paging: the tool's default is right
MIN_SCORE = 0.05  # below this cosine a tool is unrelated to the request
RELATIVE_SCORE = 0.5  # a candidate must score at least this share of the best tool's score
FILLED_BONUS = 0.15  # per argument filled from the request: a read that can be aimed beats a vague one


def words_of(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def name_words(name: str) -> list[str]:
    """Words of an identifier in snake or camel case ("listWorkOrders" -> list, work, orders)."""
    return words_of(_CAMEL.sub(" ", name).replace("_", " "))


def singular(word: str) -> str:
    """A plural noun's singular, by spelling ("stories", "addresses", "boxes", "purchases")."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")) and len(word) > 4:
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word


def same_stem(a: str, b: str) -> bool:
    """Two inflections of one word ("approve" ~ "approved", "active" ~ "activate"); short words match
    only exactly."""
    if a == b:
        return True
    shared = len(os.path.commonprefix([a, b]))
    return shared >= 4 and shared >= min(len(a), len(b)) - 2


def verb_named(verb: str, request_words: Iterable[str]) -> bool:
    """Whether the request uses the verb in any inflection ("approve" ~ "approved", "approval")."""
    stem = verb if len(verb) <= 4 else verb[: len(verb) - 1]
    return any(w.startswith(stem) for w in request_words)


def _paging(param: str) -> bool:
    return bool(set(name_words(param)) & _NEVER_FILLED)


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _id_prefix(value: Any) -> str | None:
    if isinstance(value, str) and ID_PATTERN.fullmatch(value):
        return value.rsplit("-", 1)[0]
    return None


# ------------------------------------------------------------------ tools


@dataclass(frozen=True)
class ToolView:
    """What the heuristic reads from one tool schema."""

    name: str
    description: str
    properties: dict[str, dict[str, Any]]
    required: tuple[str, ...]
    read: bool

    @cached_property
    def words(self) -> tuple[str, ...]:
        return tuple(name_words(self.name))

    @property
    def verb(self) -> str:
        return self.words[0] if self.words else ""

    @cached_property
    def nouns(self) -> frozenset[str]:
        return frozenset(singular(w) for w in self.words[1:])

    @cached_property
    def topic(self) -> frozenset[str]:
        """The nouns of its name and description: what records it is about ("List today's stories")."""
        return self.nouns | {singular(w) for w in words_of(self.description)}

    @property
    def text(self) -> str:
        params = " ".join(p.replace("_", " ") for p in self.properties)
        return f"{' '.join(self.words)}. {self.description} Parameters: {params}"


def tool_views(tools: Sequence[Mapping[str, Any]], read_tools: Iterable[str] = ()) -> list[ToolView]:
    reads = set(read_tools)
    views: list[ToolView] = []
    for tool in tools:
        function = tool.get("function", tool)
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            continue
        schema = function.get("parameters")
        schema = schema if isinstance(schema, Mapping) else {}
        properties = schema.get("properties")
        required = schema.get("required")
        name = str(function["name"])
        words = name_words(name)
        views.append(
            ToolView(
                name=name,
                description=str(function.get("description") or ""),
                properties={
                    str(k): dict(v) if isinstance(v, Mapping) else {}
                    for k, v in (properties.items() if isinstance(properties, Mapping) else ())
                },
                required=tuple(str(r) for r in required) if isinstance(required, (list, tuple)) else (),
                read=name in reads or (bool(words) and words[0] in READ_VERBS),
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


@dataclass(frozen=True)
class Entity:
    """A record type the tools expose: its name, its key parameter and the prefix of its ids."""

    words: tuple[str, ...]
    key: str
    prefix: str


class ToolIndex:
    """Tool texts embedded once per tool list, and what the schemas say about record types."""

    def __init__(self, tools: Sequence[ToolView], embedder: Embedder) -> None:
        self.tools = list(tools)
        self.embedder = embedder
        self.vectors = embedder.embed([t.text for t in self.tools]) if self.tools else np.zeros((0, 1))
        self.prefixes = id_prefixes(self.tools)
        self.entities: list[Entity] = []
        for tool in self.tools:
            for param, schema in tool.properties.items():
                desc = str(schema.get("description") or "")
                named, example = _KEY_OF.search(desc), _EXAMPLE_ID.search(desc)
                if named and example and all(e.key != param for e in self.entities):
                    words = tuple(singular(w) for w in words_of(named.group(1).replace("_", " ")))
                    self.entities.append(Entity(words, param, example.group(1)))
        self.reads = [t for t in self.tools if t.read]
        self.writes = [t for t in self.tools if not t.read]

    def rank(self, request: str) -> list[tuple[ToolView, float]]:
        if not self.tools:
            return []
        scores = self.similarity(request)
        order = np.argsort(-scores, kind="stable")
        return [(self.tools[i], float(scores[i])) for i in order]

    def similarity(self, text: str) -> np.ndarray:
        if not self.tools:
            return np.zeros(0)
        return self.vectors @ self.embedder.embed([text])[0]

    def similarities(self, text: str) -> dict[str, float]:
        """Tool name -> cosine similarity of its text to `text`."""
        return {t.name: float(s) for t, s in zip(self.tools, self.similarity(text), strict=True)}

    def param_prefix(self, tool: ToolView, param: str) -> str | None:
        """The id prefix a parameter takes: its own example, the type it names ("id of a tag"), or the
        example another tool gives for a parameter of the same name."""
        desc = str(tool.properties.get(param, {}).get("description") or "")
        found = _EXAMPLE_ID.search(desc)
        if found:
            return found.group(1)
        named = _REF_OF.search(desc)
        if named:
            entity = self.entity_named(words_of(named.group(1).replace("_", " ")))
            if entity is not None:
                return entity.prefix
        return self.prefixes.get(param)

    def is_key(self, tool: ToolView, param: str) -> bool:
        """Whether `param` picks the record the tool acts on ("id of the claim (e.g. ...)")."""
        return bool(_KEY_OF.search(str(tool.properties.get(param, {}).get("description") or "")))

    def entity_named(self, words: Sequence[str]) -> Entity | None:
        wanted = tuple(singular(w) for w in words)
        if not wanted:
            return None
        exact = [e for e in self.entities if e.words == wanted]
        if exact:
            return exact[0]
        tails = [
            e
            for e in self.entities
            if wanted[-len(e.words) :] == e.words or e.words[-len(wanted) :] == wanted
        ]
        return max(tails, key=lambda e: len(e.words)) if tails else None

    def record_tool(self, prefix: str) -> tuple[ToolView, str] | None:
        """The read that returns one record of the type whose ids carry `prefix`, and its key param."""
        options: list[tuple[float, ToolView, str]] = []
        for tool in self.reads:
            keys = [
                p for p in tool.properties if self.is_key(tool, p) and self.param_prefix(tool, p) == prefix
            ]
            if not keys or set(tool.required) - {keys[0]}:
                continue
            score = (2.0 if tool.required == (keys[0],) else 0.0) + (1.0 if tool.verb == "get" else 0.0)
            score -= 0.2 * len(tool.properties) + (0.5 if "overview" in tool.words else 0.0)
            options.append((score, tool, keys[0]))
        if not options:
            return None
        _, tool, key = max(options, key=lambda o: o[0])
        return tool, key


# ------------------------------------------------------------------ what the run has seen


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


# ------------------------------------------------------------------ argument filling from free text


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


def text_candidates(tool: ToolView, param: str, seen: Seen) -> list[Any]:
    """Values the text offers for one parameter, best first (observations not consulted)."""
    schema = tool.properties.get(param, {})
    required = param in tool.required
    kind = str(schema.get("type") or "string")
    if _paging(param):
        return []
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return _enum_candidates(tool, param, enum, seen, required)
    if _is_id(param, schema):
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
        return [int(n) if kind == "integer" and n.lstrip("-").isdigit() else float(n) for n in chosen]
    if kind == "boolean":
        return []
    if required or seen.mentions(param):
        return [next(g for g in m.groups() if g) for m in _QUOTED.finditer(seen.request)]
    return []


def candidates(tool: ToolView, param: str, seen: Seen) -> list[Any]:
    """Values the request or, for a required parameter, the observations offer, best first."""
    found = text_candidates(tool, param, seen)
    if found or param not in tool.required or _paging(param):
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


# ------------------------------------------------------------------ answers named in free text


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


# ------------------------------------------------------------------ reading the request


_TOKEN = re.compile(r"qv(\d+)qv")  # a masked quoted string: one word, never an id, date or number
_ID_NAME = re.compile(rf"({ID_PATTERN.pattern})\s*\([^()]*\)")  # "tag TAG-006 (Summit Tag 6)"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"“']|qv\d)")
_ANSWER_FIELD = re.compile(r"qv(\d+)qv\s*:\s*")
_SETTING = r"(?:,\s*setting the\s+(?P<sets>.+))?"
_STATE = r"(?P<value>[a-z][a-z0-9_ ]{0,40}?)"
_CLAUSES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (op, re.compile(pattern, re.IGNORECASE))
    for op, pattern in (
        ("create", r"^(?:please\s+)?(?:add|create|register|open|log|file)\s+(?:a|an)\s+(?:new\s+)?"
                   r"(?P<entity>[a-z0-9 &/-]+?)(?:\s+record)?"
                   r"(?:\s*\((?P<paren>.*)\)|\s*:\s*(?P<colon>.*)|\s+with\s+(?P<with>.*))?$"),
        ("delete", r"^(?:please\s+)?(?:remove|delete)\s+(?P<subject>.+?)(?:;\s*it is no longer needed)?$"),
        ("delete", r"^(?:please\s+)?take\s+(?P<subject>.+?)\s+out of the system$"),
        ("assign", r"^(?:please\s+)?reassign\s+(?P<subject>.+?)\s+so its\s+(?P<attr>.+?)\s+is\s+"
                   r"(?P<target>.+)$"),
        ("assign", r"^(?:please\s+)?point the\s+(?P<attr>.+?)\s+of\s+(?P<subject>.+?)\s+(?:to|at)\s+"
                   r"(?P<target>.+)$"),
        ("transition", rf"^(?:please\s+)?mark\s+(?P<subject>.+?)\s+as\s+{_STATE}{_SETTING}$"),
        ("transition", rf"^(?:please\s+)?move\s+(?P<subject>.+?)\s+to\s+{_STATE}{_SETTING}$"),
        ("transition", rf"^(?P<subject>.+?)\s+should now be\s+{_STATE}{_SETTING}$"),
        ("update", r"^(?:please\s+)?change the\s+(?P<sets>.+\s+to\s+\S+)\s+of\s+(?P<subject>.+)$"),
        ("update", r"^for\s+(?P<subject>.+?),\s*set the\s+(?P<sets>.+)$"),
        ("update", r"^(?:please\s+)?update\s+(?P<subject>.+?):\s*(?P<sets>.+)$"),
    )
)  # fmt: skip


@dataclass(frozen=True)
class Ref:
    """How a phrase points at a record or a value: `id` (spelled out), `new` (created by an earlier
    step), `attr` (field `words` of the record `inner` points at), `named` (a record by its label),
    or `opaque` (a description the heuristic does not evaluate)."""

    kind: str
    text: str
    words: tuple[str, ...] = ()
    value: str = ""
    inner: tuple[Ref, ...] = ()


def parse_ref(text: str, quoted: Sequence[str]) -> tuple[Ref, ...]:
    """The readings of a reference phrase, most likely first (several when "of" could split it
    more than one way, as in "the date of birth of patient PAT-001")."""
    phrase = text.strip().rstrip(".")
    lowered = phrase.casefold()
    spelled = ID_PATTERN.fullmatch(phrase.split()[-1]) if phrase.split() else None
    if spelled and not (set(words_of(lowered)) & _DESCRIPTIVE) and " of " not in f" {lowered} ":
        return (Ref("id", phrase, value=spelled.group(0)),)
    named = re.fullmatch(r"(?:the\s+)?(?P<e>[a-z0-9 ]+?)\s+(?:named|called)\s+qv(?P<q>\d+)qv", lowered)
    if named and " of " not in f" {named.group('e')} " and int(named.group("q")) < len(quoted):
        return (Ref("named", phrase, tuple(words_of(named.group("e"))), quoted[int(named.group("q"))]),)
    if set(words_of(lowered)) & _DESCRIPTIVE:
        return (Ref("opaque", phrase),)
    new = re.fullmatch(r"(?:the\s+)?new\s+(?P<e>[a-z0-9 ]+)", lowered)
    if new:
        return (Ref("new", phrase, tuple(words_of(new.group("e")))),)
    readings: list[Ref] = []
    if lowered.startswith("the "):
        body = phrase[4:]
        for match in re.finditer(r"\s+of\s+", body):
            attr, rest = body[: match.start()], body[match.end() :]
            inner = tuple(r for r in parse_ref(rest, quoted) if r.kind != "opaque")
            if inner and words_of(attr):
                readings.append(Ref("attr", phrase, tuple(words_of(attr)), inner=inner))
    return tuple(readings) or (Ref("opaque", phrase),)


@dataclass(frozen=True)
class Step:
    """One write the request asks for, in request order."""

    key: str  # the clause text: stable across turns, so progress survives a user's follow-up
    op: str  # create | delete | assign | transition | update | verb
    text: str  # the clause with its quoted strings restored
    subject: tuple[Ref, ...] = ()
    entity: tuple[str, ...] = ()  # create: the kind of record made
    pairs: tuple[tuple[tuple[str, ...], str], ...] = ()  # (field words, value phrase)
    target: tuple[str, ...] = ()  # transition: the state to move to
    verbs: tuple[str, ...] = ()  # verb: the write tools the sentence names


@dataclass(frozen=True)
class AnswerField:
    name: str
    text: str  # the masked description ("the number of the routes of driver DRI-005")


@dataclass(frozen=True)
class Plan:
    request: str
    quoted: tuple[str, ...]
    steps: tuple[Step, ...]
    fields: tuple[AnswerField, ...]
    questions: bool  # the request asks something in free text (no JSON spec)


def mask_quotes(text: str) -> tuple[str, list[str]]:
    quoted: list[str] = []

    def token(match: re.Match[str]) -> str:
        quoted.append(next(g for g in match.groups() if g is not None))
        return f"qv{len(quoted) - 1}qv"

    return _QUOTED.sub(token, text), quoted


def unmask(text: str, quoted: Sequence[str]) -> str:
    return _TOKEN.sub(lambda m: f"'{quoted[int(m.group(1))]}'", text)


def _detail_pairs(details: str) -> list[tuple[tuple[str, ...], str]]:
    """`tag: the trigger tag of interlock INT-004; level qv0qv; limit 325.36` -> (field, value) pairs."""
    pairs: list[tuple[tuple[str, ...], str]] = []
    for part in re.split(r"\s*;\s*", details.strip()):
        part = part.strip().rstrip(".")
        if not part:
            continue
        if ":" in part:
            label, value = part.split(":", 1)
        else:
            label, _, value = part.rpartition(" ")
        if words_of(label) and value.strip():
            pairs.append((tuple(words_of(label)), value.strip()))
    return pairs


def _set_pairs(sets: str) -> list[tuple[tuple[str, ...], str]]:
    """`severity to qv0qv and the impact description to qv1qv` -> (field, value) pairs."""
    pairs: list[tuple[tuple[str, ...], str]] = []
    for part in re.split(r"\s+and\s+(?:the\s+)?", sets.strip().rstrip(".")):
        label, sep, value = part.rpartition(" to ")
        if sep and words_of(label) and value.strip():
            pairs.append((tuple(words_of(label)), value.strip()))
    return pairs


def _imperative_verbs(sentence: str, writes: Sequence[ToolView]) -> tuple[str, ...]:
    """Write tools whose verb opens the sentence ("Please approve claim ..."): a verb deeper in a
    sentence ("a claim was filed on ...") describes the past, not an instruction."""
    words = words_of(sentence)
    while words and words[0] in _LEAD_WORDS:
        words = words[1:]
    head = words[:1]
    return tuple(t.name for t in writes if t.verb and any(same_stem(t.verb, w) for w in head))


def parse_request(request: str, writes: Sequence[ToolView] = ()) -> Plan:
    """Steps, answer fields and whether a free-text question is asked, from the user's words."""
    masked, quoted = mask_quotes(request)
    masked = _ID_NAME.sub(r"\1", masked)
    steps: list[Step] = []
    fields: list[AnswerField] = []
    questions = False
    for raw in _SENTENCE_END.split(masked.replace("\n", " ")):
        sentence = raw.strip()
        if not sentence:
            continue
        spec = list(_ANSWER_FIELD.finditer(sentence))
        named = [m for m in spec if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", quoted[int(m.group(1))])]
        if named:
            for m, nxt in itertools.zip_longest(named, named[1:]):
                end = nxt.start() if nxt is not None else len(sentence)
                text = sentence[m.end() : end].strip().rstrip(";.").strip()
                fields.append(AnswerField(quoted[int(m.group(1))], text))
            continue
        clause = sentence.rstrip(".!").strip()
        step = _step_of(clause, quoted, writes)
        if step is not None:
            steps.append(step)
        elif clause.endswith("?") or set(words_of(clause)[:3]) & _ASK_VERBS:  # "Either way, tell me ..."
            questions = True
    if not steps and not fields:
        questions = True
    return Plan(request, tuple(quoted), tuple(steps), tuple(fields), questions)


def _step_of(clause: str, quoted: Sequence[str], writes: Sequence[ToolView]) -> Step | None:
    text = unmask(clause, quoted)
    for op, pattern in _CLAUSES:
        m = pattern.match(clause)
        if m is None:
            continue
        groups = {k: v for k, v in m.groupdict().items() if v is not None}
        subject = parse_ref(groups["subject"], quoted) if "subject" in groups else ()
        if op == "create":
            details = groups.get("paren") or groups.get("colon") or groups.get("with") or ""
            entity = tuple(singular(w) for w in words_of(groups["entity"]))
            return Step(clause, op, text, entity=entity, pairs=tuple(_detail_pairs(details)))
        if op == "assign":
            pairs = ((tuple(words_of(groups["attr"])), groups["target"]),)
            return Step(clause, op, text, subject=subject, pairs=pairs)
        if op == "transition":
            sets = tuple(_set_pairs(groups["sets"])) if "sets" in groups else ()
            target = tuple(words_of(groups["value"]))
            return Step(clause, op, text, subject=subject, pairs=sets, target=target)
        if op == "update":
            return Step(clause, op, text, subject=subject, pairs=tuple(_set_pairs(groups["sets"])))
        return Step(clause, op, text, subject=subject)
    verbs = _imperative_verbs(clause, writes)
    if verbs:
        return Step(clause, "verb", text, verbs=verbs)
    return None


# ------------------------------------------------------------------ resolving references


class _Need(Exception):
    """A read must be made before the reference can be resolved."""

    def __init__(self, tool: ToolView, args: dict[str, Any], why: str) -> None:
        super().__init__(why)
        self.tool, self.arguments, self.why = tool, args, why  # `args` is taken by Exception


class _Unresolved(Exception):
    """The heuristic cannot resolve this; the message says what and why."""


def _coerce(value: Any, schema: Mapping[str, Any]) -> Any:
    """A literal typed by the parameter's schema; _Unresolved when it does not fit."""
    text = str(value).strip()
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        for option in enum:
            if (
                str(option).casefold() == text.casefold()
                or str(option).replace("_", " ").casefold() == text.casefold()
            ):
                return option
        raise _Unresolved(f"{text!r} is none of {enum}")
    kind = schema.get("type")
    if kind == "boolean":
        if text.casefold() in ("yes", "true"):
            return True
        if text.casefold() in ("no", "false"):
            return False
        raise _Unresolved(f"{text!r} is not yes or no")
    if kind in ("number", "integer"):
        try:
            number = float(text)
        except ValueError as exc:
            raise _Unresolved(f"{text!r} is not a number") from exc
        if kind == "integer":
            if not number.is_integer():
                raise _Unresolved(f"{text!r} is not a whole number")
            return int(number)
        return number
    return text


def _find_key(record: Mapping[str, Any], attr: Sequence[str]) -> str | None:
    """The key of `record` an attribute phrase names ("trigger tag" -> trigger_tag_id)."""
    wanted = [singular(w) for w in attr]
    for key in record:
        words = [singular(w) for w in name_words(str(key))]
        if words == wanted or words == [*wanted, "id"]:
            return str(key)
    return None


class Memory:
    """The run's observations, read for records that are still current."""

    def __init__(self, results: Sequence[Observation], index: ToolIndex) -> None:
        self.results = list(results)
        self.index = index
        names = {t.name: t for t in index.tools}
        self.tools = names
        last = -1
        for n, obs in enumerate(self.results):
            tool = names.get(obs.tool)
            if obs.ok and (tool is None or not tool.read):
                last = n
        # A write may change any record, so only what was read at or after the latest write is current.
        self.fresh = self.results[max(last, 0) :]

    def fetch(self, tool: ToolView, args: dict[str, Any], why: str) -> Any:
        """The data of a current read with these arguments, or _Need it; a failed one is final."""
        sig = signature(tool.name, args)
        for obs in reversed(self.fresh):
            if signature(obs.tool, obs.arguments) == sig:
                if not obs.ok:
                    raise _Unresolved(f"`{tool.name}` failed for {why}")
                return obs.data
        raise _Need(tool, args, why)

    def record(self, record_id: str) -> Mapping[str, Any]:
        """The current record with this id: from a result about it, else read with its get tool."""
        prefix = _id_prefix(record_id)
        for obs in reversed(self.fresh):
            found = self._own_record(obs, record_id)
            if found is not None:
                return found
        located = self.index.record_tool(prefix or "")
        if located is None:
            raise _Unresolved(f"no tool reads a record like {record_id}")
        tool, key = located
        data = self.fetch(tool, {key: record_id}, record_id)
        body = data.get("record", data) if isinstance(data, Mapping) else None
        if not isinstance(body, Mapping) or body.get(key) != record_id:
            raise _Unresolved(f"`{tool.name}` did not return {record_id}")
        return body

    def _own_record(self, obs: Observation, record_id: str) -> Mapping[str, Any] | None:
        if not obs.ok or not isinstance(obs.data, Mapping):
            return None
        tool = self.tools.get(obs.tool)
        body = obs.data.get("record", obs.data)
        if tool is None or not isinstance(body, Mapping):
            return None
        for param, value in obs.arguments.items():
            if value == record_id and self.index.is_key(tool, param) and body.get(param) == record_id:
                return body
        return None


# ------------------------------------------------------------------ the agent


class HeuristicAgent:
    """The clause-by-clause baseline; one per rollout (it counts its own calls)."""

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
        self._read_done = False  # one read answers a free-text question; more would only wander
        self._plans: dict[str, Plan] = {}
        self._purpose: dict[str, str] = {}  # call id -> the step key it writes for
        self._created: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {}  # step key -> (kind, args)
        self._request = ""
        self._skipped: dict[str, str] = {}  # step key or answer field -> why it was left undone
        self._answers: dict[str, Any] = {}

    # ---- plan and progress

    def _plan(self, request: str) -> Plan:
        if request not in self._plans:
            self._plans[request] = parse_request(request, self.index.writes)
        return self._plans[request]

    def _step_state(self, step: Step, results: Sequence[Observation]) -> str:
        mine = [o for o in results if self._purpose.get(o.call_id) == step.key]
        if any(o.ok for o in mine):
            return "done"
        if mine or step.key in self._skipped:
            return "failed"
        return "open"

    def _created_record(
        self, words: Sequence[str], results: Sequence[Observation]
    ) -> tuple[str, dict[str, Any]]:
        """(id, record) of the record an earlier create step made, by the kind the phrase names."""
        wanted = tuple(singular(w) for w in words)
        for obs in reversed(results):
            step_key = self._purpose.get(obs.call_id)
            if not obs.ok or step_key not in self._created:
                continue
            entity, args = self._created[step_key]
            if entity[-len(wanted) :] != wanted and wanted[-len(entity) :] != entity:
                continue
            data = obs.data.get("record", obs.data) if isinstance(obs.data, Mapping) else None
            if not isinstance(data, Mapping):
                continue
            # The new record's own id is the id in the result that the call did not pass in.
            passed = {v for v in args.values() if isinstance(v, str)}
            ids = [v for v in data.values() if _id_prefix(v) and v not in passed]
            known = self.index.entity_named(entity)
            if known is not None and _id_prefix(data.get(known.key)):
                return str(data[known.key]), dict(data)
            if len(ids) == 1:
                return str(ids[0]), dict(data)
            raise _Unresolved(f"cannot tell which id in the result is the new {' '.join(wanted)}")
        raise _Unresolved(f"no new {' '.join(wanted)} was created")

    # ---- references

    def _value_of(self, refs: Sequence[Ref], memory: Memory) -> Any:
        problems: list[str] = []
        for ref in refs:
            try:
                return self._value_of_one(ref, memory)
            except _Unresolved as exc:
                problems.append(str(exc))
        raise _Unresolved(problems[0] if problems else "nothing to resolve")

    def _value_of_one(self, ref: Ref, memory: Memory) -> Any:
        if ref.kind == "id":
            return ref.value
        if ref.kind == "new":
            return self._created_record(ref.words, memory.results)[0]
        if ref.kind == "attr":
            record = self._record_of(ref.inner, memory)
            key = _find_key(record, ref.words)
            if key is None:
                raise _Unresolved(f"the record has no field {' '.join(ref.words)!r} ({ref.text})")
            return record[key]
        if ref.kind == "named":
            entity = self.index.entity_named(ref.words)
            record = self._named_record(ref, memory)
            if entity is None or not _scalar(record.get(entity.key)):
                raise _Unresolved(f"cannot tell the id of {ref.text}")
            return record[entity.key]
        raise _Unresolved(f"{ref.text!r} describes a record instead of naming it")

    def _record_of(self, refs: Sequence[Ref], memory: Memory) -> Mapping[str, Any]:
        problems: list[str] = []
        for ref in refs:
            try:
                if ref.kind == "new":
                    return self._created_record(ref.words, memory.results)[1]
                if ref.kind == "named":
                    return self._named_record(ref, memory)
                value = self._value_of_one(ref, memory)
                if not _id_prefix(value):
                    raise _Unresolved(f"{ref.text!r} is not a record id ({value!r})")
                return memory.record(str(value))
            except _Unresolved as exc:
                problems.append(str(exc))
        raise _Unresolved(problems[0] if problems else "nothing to resolve")

    def _named_record(self, ref: Ref, memory: Memory) -> Mapping[str, Any]:
        """The record of the named kind whose label is exactly `ref.value`, through a find tool."""
        entity = self.index.entity_named(ref.words)
        if entity is None:
            raise _Unresolved(f"no record type called {' '.join(ref.words)!r}")
        for tool in self.index.reads:
            if tool.verb != "find" or entity.key not in tool.properties or tool.required:
                continue
            if entity.words[-1] not in tool.nouns:
                continue  # "find_available_vehicles" takes a route id but finds no route
            labels = [
                p
                for p, schema in tool.properties.items()
                if p != entity.key and not _paging(p) and not _is_id(p, schema)
                and schema.get("type", "string") == "string" and not schema.get("enum")
            ]  # fmt: skip
            if len(labels) != 1:
                continue
            data = memory.fetch(tool, {labels[0]: ref.value}, ref.text)
            body = data.get("record", data) if isinstance(data, Mapping) else None
            if isinstance(body, Mapping) and body.get(labels[0]) == ref.value:
                return body
        raise _Unresolved(f"no find tool looks up {ref.text}")

    def _typed(self, phrase: str, schema: Mapping[str, Any], quoted: Sequence[str], memory: Memory) -> Any:
        text = phrase.strip().rstrip(".")
        token = _TOKEN.fullmatch(text)
        if token:
            return _coerce(quoted[int(token.group(1))], schema)
        if (
            NUMBER_PATTERN.fullmatch(text)
            or DATE_PATTERN.fullmatch(text)
            or text.casefold() in ("yes", "no", "true", "false")
        ):
            return _coerce(text, schema)
        if ID_PATTERN.search(text) or text.casefold().startswith("the "):
            return _coerce(self._value_of(parse_ref(text, quoted), memory), schema)
        return _coerce(text, schema)

    # ---- writes

    def _rank_writes(self, step: Step, prefix: str | None) -> list[tuple[float, ToolView, str | None]]:
        """Write tools for a step, best first: (score, tool, the parameter that takes the subject)."""
        similarity = self.index.similarities(step.text)
        ranked: list[tuple[float, ToolView, str | None]] = []
        made = self.index.entity_named(step.entity) if step.op == "create" else None
        for tool in self.index.writes:
            key = None
            if step.op != "create":
                keys = [p for p in tool.properties if self.index.param_prefix(tool, p) == prefix]
                keys = [p for p in keys if self.index.is_key(tool, p)] or keys
                if not keys:
                    continue
                key = keys[0]
            elif made is not None and made.key in tool.required:
                continue  # it acts on a record of that kind that exists already
            matched = [_match_param(label, tool, key) for label, _ in step.pairs]
            covered = {m for m in matched if m is not None}
            uncovered = [p for p in tool.required if p != key and p not in covered]
            score = 2.0 * len(covered) - 2.0 * (len(matched) - len(covered)) - 3.0 * len(uncovered)
            score += self._cue(step, tool) + 0.5 * similarity[tool.name]
            ranked.append((score, tool, key))
        ranked.sort(key=lambda r: -r[0])
        return ranked

    def _cue(self, step: Step, tool: ToolView) -> float:
        """How strongly the tool's name and description say it does what the clause asks."""
        words = tool.words
        described = words_of(tool.description)[:1]
        if step.op == "create":
            head = 2.0 if step.entity and step.entity[-1] in tool.topic else 0.0
            verb = 1.0 if tool.verb in CREATE_VERBS or (described and described[0] in CREATE_VERBS) else 0.0
            return head + 0.5 * len(set(step.entity[:-1]) & tool.topic) + verb
        if step.op == "delete":
            return 3.0 if tool.verb in DELETE_VERBS or (described and described[0] in DELETE_VERBS) else -1.0
        if step.op == "transition":
            if step.target and all(any(same_stem(t, w) for w in words) for t in step.target):
                return 3.0
            quoted_state = "'" + "_".join(step.target) + "'"
            if quoted_state in tool.description.casefold():
                return 3.0
            enums = [s.get("enum") or [] for p, s in tool.properties.items() if p in tool.required]
            return 1.0 if any("_".join(step.target) in map(str, e) for e in enums) else -2.0
        if step.op == "assign":
            attr = step.pairs[0][0] if step.pairs else ()
            return 1.0 if attr and all(any(same_stem(a, w) for w in words) for a in attr) else 0.0
        if step.op == "update":
            # a tool named for a lifecycle move or a deletion does more than set the fields asked for
            return -1.0 if tool.verb in DELETE_VERBS else 0.0
        return 0.0

    def _write_for(
        self, step: Step, plan: Plan, memory: Memory, made: set[str]
    ) -> tuple[ToolView, dict[str, Any]]:
        if step.op == "verb":
            return self._verb_write(step, plan, memory, made)
        prefix = None
        subject: Any = None
        if step.op != "create":
            subject = self._value_of(step.subject, memory)
            prefix = _id_prefix(subject)
            if prefix is None:
                raise _Unresolved(f"{step.subject[0].text!r} is not a record id")
        ranked = self._rank_writes(step, prefix)
        if not ranked or ranked[0][0] <= 0:
            raise _Unresolved("no tool takes what the sentence gives")
        _, tool, key = ranked[0]
        args: dict[str, Any] = {key: subject} if key is not None else {}
        for label, phrase in step.pairs:
            param = _match_param(label, tool, key)
            if param is not None:
                args[param] = self._typed(phrase, tool.properties[param], plan.quoted, memory)
        if step.op == "transition":
            state = "_".join(step.target)
            for param in tool.required:
                enum = tool.properties.get(param, {}).get("enum") or []
                if param not in args and state in map(str, enum):
                    args[param] = state
        for param in [p for p in tool.required if p not in args]:
            args[param] = self._unnamed(tool, param, step, plan, memory)
        return tool, args

    def _unnamed(self, tool: ToolView, param: str, step: Step, plan: Plan, memory: Memory) -> Any:
        """A required value the clause does not label: from the clause's text, else an id or enum value
        of the right kind anywhere in the request, else the one value the observations show for it."""
        ok = [o for o in memory.results if o.ok]
        found = text_candidates(tool, param, Seen(step.text, [], dict(self.index.prefixes)))
        schema = tool.properties.get(param, {})
        if not found and (_is_id(param, schema) or schema.get("enum")):
            found = text_candidates(tool, param, Seen(plan.request, [], dict(self.index.prefixes)))
            found = found if len(found) == 1 else []  # two ids of that kind: which one is meant is unclear
        if not found and _is_id(param, schema):
            found = Seen(plan.request, ok, dict(self.index.prefixes)).observed(param)
        if not found:
            raise _Unresolved(f"`{tool.name}` needs {param}, which the request does not give")
        return found[0]

    def _verb_write(
        self, step: Step, plan: Plan, memory: Memory, made: set[str]
    ) -> tuple[ToolView, dict[str, Any]]:
        """A write named by its verb ("Approve claim CLA-001"): arguments from the sentence, then the
        whole request, then the observations; a missing id is first looked up with an aimed read."""
        ok = [o for o in memory.results if o.ok]
        clause = Seen(step.text, ok, dict(self.index.prefixes))
        whole = Seen(plan.request, ok, dict(self.index.prefixes))
        tools = [t for t in self.index.writes if t.name in step.verbs]
        similarity = self.index.similarities(step.text)
        tools.sort(key=lambda t: -similarity[t.name])
        problems: list[str] = []
        for tool in tools:
            filled, missing = fill(tool, clause, made, whole)
            if filled is not None:
                return tool, filled.args
            for param in missing:
                if _is_id(param, tool.properties.get(param, {})) and self._lookups < self.max_lookups:
                    support = self._lookup(tool, param, whole, made)
                    if support is not None:
                        raise _Need(support.tool, support.args, f"the {param} `{tool.name}` needs")
            problems.append(f"`{tool.name}` needs {', '.join(missing) or 'a new combination of values'}")
        raise _Unresolved("; ".join(problems) or "no tool matches the verb")

    def _lookup(self, goal: ToolView, param: str, seen: Seen, made: set[str]) -> Filled | None:
        """A read about the entity `param` refers to that can be aimed with what the request gives."""
        entity = {singular(w) for w in param.removesuffix("_id").split("_") if w}
        options: list[tuple[float, Filled]] = []
        for tool, score in self.index.rank(seen.request):
            if tool is goal or not tool.read or param in tool.required or not entity <= tool.nouns:
                continue
            filled, _ = fill(tool, seen, made)
            if filled is None or (not filled.args and tool.verb != "list"):
                continue
            options.append((score + FILLED_BONUS * filled.from_request, filled))
        return max(options, key=lambda o: o[0])[1] if options else None

    # ---- answers

    def _answer(self, spec: AnswerField, plan: Plan, memory: Memory) -> Any:
        text = spec.text.strip()
        lowered = text.casefold()
        count = re.fullmatch(r"the number of (?:the )?(?P<what>.+)", lowered)
        if count is None:
            if lowered.startswith("the "):
                return self._value_of(parse_ref(text, plan.quoted), memory)
            raise _Unresolved(f"{unmask(text, plan.quoted)!r} is not a value the tools report")
        what = text[len(text) - len(count.group("what")) :]
        return self._count(what, plan, memory)

    def _count(self, what: str, plan: Plan, memory: Memory) -> int:
        """How many records a phrase names, read from one list, search, summary or overview call."""
        lowered = what.casefold()
        if set(words_of(lowered)) & (_DESCRIPTIVE - {"with", "matching", "whose", "all"}):
            raise _Unresolved(f"{unmask(what, plan.quoted)!r} selects records by a description")
        linked = re.fullmatch(r"(?P<kind>.+?) linked to (?P<ref>.+)", what, re.IGNORECASE)
        if linked:
            record_id = self._value_of(parse_ref(linked.group("ref"), plan.quoted), memory)
            return self._linked_count(words_of(linked.group("kind")), record_id, memory)
        matching = re.fullmatch(r"(?P<kind>.+?) matching qv(?P<q>\d+)qv", lowered)
        if matching:
            tool = self._listings(words_of(matching.group("kind")), {"query"}, search=True)[0]
            return _count_of(memory.fetch(tool, {"query": plan.quoted[int(matching.group("q"))]}, what))
        whose = re.fullmatch(r"(?P<kind>.+?) whose (?P<attr>.+?) is (?P<value>\S+)", lowered)
        if whose:
            return self._group_count(whose, plan, memory)
        kind_words = words_of(lowered.removeprefix("all "))
        with_ = re.fullmatch(r"(?P<kind>.+?) with (?P<conds>.+)", what, re.IGNORECASE)
        if with_:
            filters: dict[str, str] = {}
            for cond in re.split(r"\s+and\s+", with_.group("conds")):
                label, _, value = cond.replace(" set to ", " ").rpartition(" ")
                filters["_".join(words_of(label))] = value
            problems: list[str] = []
            for tool in self._listings(words_of(with_.group("kind")), set(filters)):
                try:  # the first list whose filters accept the values ("announced" is a concert status)
                    args = {
                        p: self._typed(v, tool.properties[p], plan.quoted, memory) for p, v in filters.items()
                    }
                except _Unresolved as exc:
                    problems.append(f"`{tool.name}`: {exc}")
                    continue
                return _count_of(memory.fetch(tool, args, what))
            raise _Unresolved("; ".join(problems))
        for match in re.finditer(r"\s+of\s+", what):
            kind, rest = what[: match.start()], what[match.end() :]
            refs = parse_ref(rest, plan.quoted)
            if refs[0].kind == "opaque":
                continue
            record_id = self._value_of(refs, memory)
            prefix = _id_prefix(record_id)
            if prefix is None:
                raise _Unresolved(f"{rest!r} is not a record id")
            tool, param = self._listing_by(words_of(kind), prefix)
            return _count_of(memory.fetch(tool, {param: record_id}, what))
        return _count_of(memory.fetch(self._listings(kind_words, set())[0], {}, what))

    def _listings(self, kind: Sequence[str], filters: set[str], search: bool = False) -> list[ToolView]:
        """The reads that list records of a kind and take these filters, best first."""
        wanted = [singular(w) for w in kind]
        options: list[tuple[float, ToolView]] = []
        for tool in self.index.reads:
            if not filters <= set(tool.properties) or set(tool.required) - filters - {"limit"}:
                continue
            if ("query" in tool.properties) != search or {"start", "end"} & set(tool.required):
                continue
            if not wanted or wanted[-1] not in tool.topic:
                continue
            score = sum(w in tool.topic for w in wanted) + (1.0 if tool.verb in ("list", "search") else 0.0)
            options.append((score - 0.1 * len(tool.properties), tool))
        if not options:
            raise _Unresolved(f"no tool lists {' '.join(kind)} by {', '.join(sorted(filters)) or 'nothing'}")
        return [tool for _, tool in sorted(options, key=lambda o: -o[0])]

    def _listing_by(self, kind: Sequence[str], prefix: str) -> tuple[ToolView, str]:
        """A list of records of a kind filtered by a record id with this prefix, and that filter."""
        wanted = [singular(w) for w in kind]
        options: list[tuple[float, ToolView, str]] = []
        for tool in self.index.reads:
            params = [p for p in tool.properties if self.index.param_prefix(tool, p) == prefix]
            if not params or set(tool.required) - {params[0], "limit"} or "query" in tool.properties:
                continue
            if self.index.is_key(tool, params[0]):
                continue  # the tool reads that record itself, not the records that refer to it
            if not wanted or wanted[-1] not in tool.topic:
                continue
            score = sum(w in tool.topic for w in wanted) + (1.0 if tool.verb == "list" else 0.0)
            options.append((score - 0.1 * len(tool.properties), tool, params[0]))
        if not options:
            raise _Unresolved(f"no tool lists {' '.join(kind)} by a {prefix} record")
        _, tool, param = max(options, key=lambda o: o[0])
        return tool, param

    def _group_count(self, whose: re.Match[str], plan: Plan, memory: Memory) -> int:
        attr = "_".join(words_of(whose.group("attr")))
        wanted = [singular(w) for w in words_of(whose.group("kind"))]
        for tool in self.index.reads:
            options = tool.properties.get("group_by", {}).get("enum") or []
            if attr not in options or not wanted or wanted[-1] not in tool.topic:
                continue
            data = memory.fetch(tool, {"group_by": attr}, whose.group(0))
            groups = data.get("groups") if isinstance(data, Mapping) else None
            if not isinstance(groups, Mapping):
                raise _Unresolved(f"`{tool.name}` returned no groups")
            token = _TOKEN.fullmatch(whose.group("value"))
            label = plan.quoted[int(token.group(1))] if token else whose.group("value")
            for name, group in groups.items():
                if str(name).casefold() == label.casefold() and isinstance(group, Mapping):
                    return int(group.get("count") or 0)
            return 0
        raise _Unresolved(f"no tool counts {whose.group('kind')} by {attr}")

    def _linked_count(self, kind: Sequence[str], record_id: Any, memory: Memory) -> int:
        prefix = _id_prefix(record_id)
        wanted = [singular(w) for w in kind]
        for tool in self.index.reads:
            keys = [
                p
                for p in tool.properties
                if self.index.is_key(tool, p) and self.index.param_prefix(tool, p) == prefix
            ]
            if not keys or "overview" not in tool.words:
                continue
            data = memory.fetch(tool, {keys[0]: record_id}, f"the records linked to {record_id}")
            counts = data.get("counts") if isinstance(data, Mapping) else None
            for table, value in (counts or {}).items():
                if [singular(w) for w in name_words(str(table))] == wanted and isinstance(value, int):
                    return value
            raise _Unresolved(f"`{tool.name}` shows no count of {' '.join(kind)}")
        raise _Unresolved(f"no overview tool for {record_id}")

    # ---- turns

    def _call(
        self, tool: ToolView, args: dict[str, Any], reason: str, purpose: str | None = None
    ) -> dict[str, Any]:
        self._calls += 1
        call_id = f"call_{self._calls}"
        if purpose is not None:
            self._purpose[call_id] = purpose
        shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in sorted(args.items()))
        return assistant_message(f"{reason} `{tool.name}`({shown}).", [tool_call(call_id, tool.name, args)])

    def _free_read(self, plan: Plan, results: list[Observation], made: set[str]) -> dict[str, Any] | None:
        """The best aimed read for a free-text question, once, and only if no write was made."""
        if self._read_done or any(self._step_state(s, results) == "done" for s in plan.steps):
            return None
        ok = [o for o in results if o.ok]
        seen = Seen(plan.request, ok, dict(self.index.prefixes))
        ranked = self.index.rank(plan.request)
        if not ranked:
            return None
        floor = max(self.min_score, self.relative_score * ranked[0][1])
        aimed: list[tuple[float, Filled]] = []
        for tool, score in ranked:
            if score < floor or not tool.read:
                continue
            filled, _ = fill(tool, seen, made)
            # A read that nothing in the request aims is only worth it as the best match overall.
            if filled is not None and (filled.from_request or tool is ranked[0][0]):
                aimed.append((score + FILLED_BONUS * filled.from_request, filled))
        if aimed:
            best = max(aimed, key=lambda a: a[0])[1]
            self._read_done = True
            return self._call(best.tool, best.args, "The request asks for this, so I call")
        # No read can be aimed: the best one is, once the id it lacks is looked up.
        goal = next((t for t, score in ranked if score >= floor and t.read), None)
        if goal is None:
            return None
        filled, missing = fill(goal, seen, made)
        if filled is not None:
            self._read_done = True
            return self._call(filled.tool, filled.args, "The request asks for this, so I call")
        for param in missing:
            if _is_id(param, goal.properties.get(param, {})) and self._lookups < self.max_lookups:
                support = self._lookup(goal, param, seen, made)
                if support is not None:
                    self._lookups += 1
                    return self._call(
                        support.tool, support.args, f"`{goal.name}` needs the {param}, so first I call"
                    )
        return None

    def act(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        request = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")
        plan = self._plan(request)
        if request != self._request:  # the user said more: what was out of reach may not be now
            self._request = request
            self._skipped.clear()
            self._answers.clear()
        results, made = observations(messages)
        memory = Memory(results, self.index)
        if self._calls < self.max_calls:
            for step in plan.steps:
                if self._step_state(step, results) != "open":
                    continue
                try:
                    tool, args = self._write_for(step, plan, memory, made)
                except _Need as need:
                    if step.op == "verb":
                        self._lookups += 1
                    return self._call(need.tool, need.arguments, f"To resolve {need.why}, I first call")
                except _Unresolved as why:
                    self._skipped[step.key] = str(why)
                    continue
                if step.op == "create":
                    self._created[step.key] = (step.entity, dict(args))
                return self._call(tool, args, f'For "{step.text}" I call', purpose=step.key)
            for spec in plan.fields:
                if spec.name in self._answers or spec.name in self._skipped:
                    continue
                try:
                    self._answers[spec.name] = self._answer(spec, plan, memory)
                except _Need as need:
                    return self._call(need.tool, need.arguments, f'For "{spec.name}" ({need.why}) I call')
                except _Unresolved as why:
                    self._skipped[spec.name] = str(why)
            if plan.questions and not plan.fields:
                read = self._free_read(plan, results, made)
                if read is not None:
                    return read
        ok = [o for o in results if o.ok]
        answer = dict(self._answers) if plan.fields else build_answer(request, ok) if plan.questions else {}
        skipped = "".join(
            f" Not done: {unmask(k, plan.quoted)} ({unmask(v, plan.quoted)})."
            for k, v in self._skipped.items()
        )
        done = sum(o.ok for o in results)
        return assistant_message(
            f"I made {len(results)} tool calls ({done} succeeded).{skipped} " + answer_block(answer)
        )


def _match_param(label: Sequence[str], tool: ToolView, taken: str | None = None) -> str | None:
    """The parameter a field phrase names ("planned km" -> planned_km, "tag" -> tag_id); never
    `taken`, the parameter that already holds the record the clause is about."""
    wanted = [singular(w) for w in label]
    for param in tool.properties:
        words = [singular(w) for w in name_words(param)]
        if param != taken and (words == wanted or words == [*wanted, "id"]):
            return param
    return None


def _count_of(data: Any) -> int:
    if isinstance(data, Mapping):
        count = data.get("count")
        if isinstance(count, int) and not isinstance(count, bool):
            return count
        items = data.get("items")
        if isinstance(items, list):
            return len(items)
    raise _Unresolved("the result carries no count")
