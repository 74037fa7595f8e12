"""The tool index: what each tool's schema says (reads, writes, record keys) and its embedding."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from agentomnia.embeddings import Embedder
from agentomnia.omniabench.heuristic.words import READ_VERBS, name_words, singular, words_of

_EXAMPLE_ID = re.compile(r"e\.g\.\s*([A-Z][A-Z0-9]{1,7})-\d{2,}")
_KEY_OF = re.compile(r"\bid of the ([a-z0-9_ ]+?)\s*\(e\.g\.", re.IGNORECASE)
_REF_OF = re.compile(r"\bid of an? ([a-z0-9_ ]+)", re.IGNORECASE)


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
