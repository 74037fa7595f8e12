"""The tool dependency graph of one environment (paper §4.4.1, step 1).

Nodes are tools; a typed edge u -> v says u can come before v for a reason:

- `parameter`: a field u returns can supply an argument of v that is not v's subject (a reference
  field: the album u returned names the artist v's new record should point at);
- `entity_anchor`: u identifies or disambiguates the record v acts on (v's key parameter);
- `state_transition`: u writes state that v reads afterwards (an update, then a read of the record).

Candidates come from three sources — schemas and bindings (what a tool returns, what it takes), the
operation kinds (a write precedes a read of its entity) and descriptions (a tool that mentions
another's entity) — and optional proposals from a model. A deterministic filter then drops
self-loops, duplicates, kinds outside the three and candidates below a confidence floor, and every
kept edge records its evidence. Description-only candidates carry low confidence on purpose: the
words suggest an order but no field carries it, so they are dropped unless something stronger holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import networkx as nx
from pydantic import BaseModel, ConfigDict, Field

from agentomnia.envs.spec import EntitySpec, EnvSpec, ToolSpec
from agentomnia.llm.protocol import list_answer

EdgeKind = Literal["parameter", "entity_anchor", "state_transition"]
EDGE_KINDS: tuple[EdgeKind, ...] = ("parameter", "entity_anchor", "state_transition")
MIN_CONFIDENCE = 0.5

# How a read's output carries records: one record, a list of them, or a record with related ids.
_SINGLE = {"get", "lookup", "create", "update", "transition", "assign", "manage"}
_MANY = {"list", "search", "range"}


class EdgeCandidate(BaseModel):
    """A proposed dependency before filtering; `param` and `path` say which field feeds which argument."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str
    target: str
    kind: str
    confidence: float = Field(ge=0.0, le=1.0)
    evidence: str
    param: str | None = None  # the target's argument that the source supplies
    path: str | None = None  # where in the source's output the value sits
    entity: str | None = None  # the entity whose key travels along the edge
    origin: Literal["schema", "operation", "description", "model"] = "schema"


class GraphReport(BaseModel):
    kept: int
    dropped: dict[str, int]  # reason -> count
    by_kind: dict[str, int]


def output_paths(spec: EnvSpec, tool: ToolSpec) -> dict[str, str]:
    """Entity name -> where a key of that entity sits in the tool's output (`data.x`, `data.items[].x`)."""
    e = spec.entity(tool.entity)
    out: dict[str, str] = {}
    if tool.op in _SINGLE:
        base = "data"
    elif tool.op in _MANY:
        base = "data.items[]"
    elif tool.op == "overview":
        base = "data.record"
        for table, _attr in tool.binding.get("children", []):
            child = next((c for c in spec.entities if c.table == table), None)
            if child is not None:
                out.setdefault(child.name, f"data.related.{table}[]")
    else:
        return out
    out[e.name] = f"{base}.{e.key}"
    for a in e.attributes:
        if a.type == "ref" and a.ref and a.ref not in out:
            out[a.ref] = f"{base}.{a.name}"
    return out


def key_needs(spec: EnvSpec, tool: ToolSpec) -> list[tuple[str, str, bool]]:
    """(param, entity, is_subject) for every argument that takes a key: the tool's own key parameter
    (its subject) and parameters bound to reference attributes."""
    e = spec.entity(tool.entity)
    props = tool.parameters.get("properties", {})
    out: list[tuple[str, str, bool]] = []
    key = tool.binding.get("key")
    if key and key in props:
        out.append((key, e.name, True))
    bound: dict[str, str] = {**tool.binding.get("fields", {}), **tool.binding.get("filters", {})}
    if tool.op == "assign":
        bound[tool.binding.get("param", "")] = tool.binding.get("attr", "")
    for param, attr_name in bound.items():
        attr = e.attribute(attr_name)
        if param in props and param != key and attr is not None and attr.type == "ref" and attr.ref:
            out.append((param, attr.ref, False))
    return out


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 3}


def propose_candidates(spec: EnvSpec) -> list[EdgeCandidate]:
    """Every candidate edge the spec suggests, before filtering (duplicates and self-loops included)."""
    out: list[EdgeCandidate] = []
    tools = list(spec.tools)
    # per-tool facts the pair loop below asks for again and again, worked out once
    needs = [key_needs(spec, t) for t in tools]
    entities: dict[str, EntitySpec] = {}
    for e in spec.entities:
        entities.setdefault(e.name, e)  # the first of a name, as `spec.entity` finds it
    owner = [entities.get(t.entity) or spec.entity(t.entity) for t in tools]
    reads = [{t.entity} | {c for c, _ in t.binding.get("children", [])} for t in tools]
    described = [t.description.lower() for t in tools]
    vocab: dict[int, set[str]] = {}

    def words_of(i: int) -> set[str]:
        if i not in vocab:
            vocab[i] = _words(tools[i].description)
        return vocab[i]

    for i, u in enumerate(tools):
        provides = output_paths(spec, u)
        u_entity = owner[i]
        u_mention = u_entity.name.replace("_", " ")
        u_feeds_reads = u.kind == "write" and u.op != "delete"
        for j, v in enumerate(tools):
            for param, entity, subject in needs[j]:
                path = provides.get(entity)
                if path is None:
                    continue
                # an identifying read that returns one record is the surest anchor; a list needs a pick
                conf = 0.95 if u.op in _SINGLE or u.op == "overview" else 0.8
                out.append(
                    EdgeCandidate(
                        source=u.name, target=v.name, kind="entity_anchor" if subject else "parameter",
                        confidence=conf, param=param, path=path, entity=entity,
                        evidence=f"{u.name} returns {entity} keys at {path}; {v.name} takes one as `{param}`",
                    )
                )  # fmt: skip
            if u_feeds_reads and v.kind == "read" and (u.entity in reads[j] or u_entity.table in reads[j]):
                key = next((p for p, ent, s in needs[j] if s and ent == u.entity), None)
                out.append(
                    EdgeCandidate(
                        source=u.name, target=v.name, kind="state_transition", confidence=0.9,
                        param=key, path=f"data.{u_entity.key}" if key else None,
                        entity=u.entity, origin="operation",
                        evidence=f"{u.name} ({u.op}) changes {u.entity} records that {v.name} ({v.op}) reads",
                    )
                )  # fmt: skip
            if u.name != v.name and u_mention in described[j]:
                shared = words_of(i) & words_of(j)
                out.append(
                    EdgeCandidate(
                        source=u.name, target=v.name, kind="parameter", confidence=min(0.45, 0.2 + 0.05 * len(shared)),
                        origin="description", entity=u.entity,
                        evidence=f"{v.name}'s description mentions {u.entity} ({len(shared)} shared words)",
                    )
                )  # fmt: skip
    return out


# what an edge stores: the candidate's fields but its endpoints (the edge itself says those)
_EDGE_FIELDS = tuple(f for f in EdgeCandidate.model_fields if f not in ("source", "target"))


def build_tool_graph(
    spec: EnvSpec,
    extra: Iterable[EdgeCandidate] = (),
    *,
    min_confidence: float = MIN_CONFIDENCE,
) -> tuple[nx.MultiDiGraph, GraphReport]:
    """The filtered, typed dependency graph. Parallel edges of different kinds are kept (one per kind)."""
    graph = nx.MultiDiGraph(env=spec.name)
    names = {t.name for t in spec.tools}
    for t in spec.tools:
        graph.add_node(t.name, op=t.op, kind=t.kind, entity=t.entity)
    dropped: dict[str, int] = {}
    best: dict[tuple[str, str, str], EdgeCandidate] = {}

    def drop(reason: str) -> None:
        dropped[reason] = dropped.get(reason, 0) + 1

    for c in [*propose_candidates(spec), *extra]:
        if c.source == c.target:
            drop("self-loop")
        elif c.source not in names or c.target not in names:
            drop("unknown tool")
        elif c.kind not in EDGE_KINDS:
            drop("unsupported kind")
        elif c.confidence < min_confidence:
            drop("low confidence")
        else:
            slot = (c.source, c.target, c.kind)
            held = best.get(slot)
            if held is not None:
                drop("duplicate")
                if (c.confidence, c.param or "") <= (held.confidence, held.param or ""):
                    continue
            best[slot] = c
    by_kind: dict[str, int] = {}
    for (u, v, kind), c in sorted(best.items()):
        graph.add_edge(u, v, key=kind, **{f: getattr(c, f) for f in _EDGE_FIELDS})
        by_kind[kind] = by_kind.get(kind, 0) + 1
    return graph, GraphReport(kept=sum(by_kind.values()), dropped=dropped, by_kind=by_kind)


def carries_value(edge: Mapping[str, Any]) -> bool:
    """Whether an edge says which output field feeds which argument (a `state_transition` onto a
    list, or a description-only hint, orders two tools without passing anything along)."""
    return bool(edge.get("param") and edge.get("path") and edge.get("entity"))


def edge_data(graph: nx.MultiDiGraph, u: str, v: str) -> list[dict[str, Any]]:
    """All kept edges u -> v, strongest first."""
    found = graph.get_edge_data(u, v) or {}
    return sorted(found.values(), key=lambda d: -float(d["confidence"]))


MODEL_CONFIDENCE = 0.7  # above the floor, below what a schema shows: where both propose, the schema's stands
_MODEL_EDGE_SCHEMA = list_answer(
    "edges",
    {
        "source": {"type": "string"},
        "target": {"type": "string"},
        "param": {"type": "string"},
        "entity": {"type": "string"},
    },
    max_items=40,
)


def model_edge_prompt(spec: EnvSpec) -> str:
    lines = [
        "These are the tools of one environment. A tool's call can need a value another tool returns: the id "
        "of a record it found, listed or created. List such dependencies as edges: `source` returns a key of "
        "`entity`, and `target` takes that key as its argument `param`. Only name tools, parameters and "
        "entities listed here.",
        "",
    ]
    for t in spec.tools:
        params = ", ".join(sorted(t.parameters.get("properties", {}))) or "none"
        returns = ", ".join(sorted(output_paths(spec, t))) or "nothing keyed"
        lines.append(f"- {t.name}: {t.description[:160]} | takes: {params} | returns keys of: {returns}")
    return "\n".join(lines)


def model_edges(llm: Any, spec: EnvSpec) -> list[EdgeCandidate]:
    """Dependencies a model proposes, each checked against the spec before it becomes a candidate:
    the tools exist, the target takes the parameter, and the source's output carries a key of the
    entity (the path the value travels along is the schema's, never the model's). What fails a check
    is counted on the model's ledger as refused; a bad or missing answer costs only these proposals."""
    from agentomnia.llm import LLMError
    from agentomnia.llm.ledger import fallback, verdict

    try:
        answer = llm.complete(
            [{"role": "user", "content": model_edge_prompt(spec)}], schema=_MODEL_EDGE_SCHEMA,
            schema_name="dependency_edges",
        )  # fmt: skip
    except LLMError:
        fallback(llm, "dependency_edges")  # a bad answer: the schema's edges stand alone
        return []
    tools = {t.name: t for t in spec.tools}
    out: list[EdgeCandidate] = []
    refused = 0
    for e in (answer.data or {}).get("edges", []):
        source, target = tools.get(e["source"]), tools.get(e["target"])
        path = output_paths(spec, source).get(e["entity"]) if source is not None else None
        needs = {p: (entity, subject) for p, entity, subject in key_needs(spec, target)} if target else {}
        if source is None or target is None or source is target or path is None:
            refused += 1
            continue
        schema = target.parameters.get("properties", {}).get(e["param"])
        bound = needs.get(e["param"])
        # a parameter the bindings tie to an entity takes that entity's keys only; another must be able
        # to hold a key (text or a whole number), and execution decides the rest
        if not isinstance(schema, dict) or (bound is not None and bound[0] != e["entity"]):
            refused += 1
            continue
        if bound is None and schema.get("type") not in ("string", "integer"):
            refused += 1
            continue
        subject = bound[1] if bound is not None else False
        out.append(
            EdgeCandidate(
                source=source.name, target=target.name, kind="entity_anchor" if subject else "parameter",
                confidence=MODEL_CONFIDENCE, param=e["param"], path=path, entity=e["entity"], origin="model",
                evidence=f"the model: {source.name} returns {e['entity']} keys at {path}; {target.name} takes one "
                f"as `{e['param']}`",
            )
        )  # fmt: skip
    verdict(llm, "dependency_edges", True, len(out))
    verdict(llm, "dependency_edges", False, refused)
    return out
