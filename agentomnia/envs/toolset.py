"""Tool-set synthesis (paper §4.2.3): candidate operations -> refined, normalised, diversified tools.

Candidates come from three places, in priority order: the seed's own tools (names and parameter
names kept, so a real MCP or OpenAPI spec survives as executable tools), the domain knowledge
base's typical operations, and generated coverage (read and write access to every entity, every
lifecycle transition a rule allows, every reference). A validator then keeps each candidate
grounded in the state (every parameter binds to an attribute or a known filter), merges
redundant ones, and makes sure multi-step chains are possible (whatever a write needs an id of
can be found by a read). Diversification adds the hard shapes the paper names: mode-selector
tools, tools with constraints across parameters, structured multi-field outputs and confusable
near-twins. Every candidate's fate — kept, merged, split, rewritten, removed — is recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentomnia.envs import naming
from agentomnia.envs.naming import plural, snake
from agentomnia.envs.resources import http_resource
from agentomnia.envs.spec import (
    JSON_TYPES,
    OP_KIND,
    AttributeSpec,
    EntitySpec,
    EnvSpec,
    ParamConstraint,
    ToolOp,
    ToolSpec,
)
from agentomnia.envs.state_space import FILTER_PARAMS, schema_type
from agentomnia.seeds.inference import tool_entity
from agentomnia.seeds.models import Seed, SeedTool
from agentomnia.taxonomy import load_knowledge

Fate = Literal["kept", "merged", "split", "rewritten", "removed"]


class ToolsetConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    min_tools: int = 8
    max_tools: int = 56
    diversify: bool = True
    max_diversified_entities: int = 4


class Normalization(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    candidate: str
    origin: str
    fate: Fate
    tool: str | None = None
    reason: str = ""


class Toolset(BaseModel):
    tools: list[ToolSpec]
    table: list[Normalization] = Field(default_factory=list)


LIMIT_PARAM: dict[str, Any] = {
    "type": "integer",
    "minimum": 1,
    "maximum": 100,
    "description": "at most this many records (default 20)",
}


def _obj(props: dict[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": sorted(set(required)),
        "additionalProperties": False,
    }


def _mutable(e: EntitySpec) -> list[AttributeSpec]:
    status = e.status_attribute
    return [
        a
        for a in e.attributes
        if a.name != e.key and a.type != "ref" and (status is None or a.name != status.name)
    ]


def _record_schema(e: EntitySpec) -> dict[str, Any]:
    return {"type": "object", "properties": {a.name: a.json_schema() for a in e.attributes}}


def _list_result(e: EntitySpec) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"items": {"type": "array", "items": _record_schema(e)}, "count": {"type": "integer"}},
    }


def _human(e: EntitySpec) -> str:
    return e.name.replace("_", " ")


def _key_schema(e: EntitySpec) -> dict[str, Any]:
    key = e.attribute(e.key)
    declared = (key.declared if key is not None else None) or {}
    # the seed's own id format (an integer, a SID, a UUID); a plain string id shows an example instead
    if set(declared) - {"type", "description"} or declared.get("type", "string") != "string":
        return {**declared, "description": f"id of the {_human(e)}"}
    return {"type": "string", "description": f"id of the {_human(e)} (e.g. {e.id_prefix}-001)"}


# -- generated operations ----------------------------------------------------------------------


def gen_get(e: EntitySpec) -> ToolSpec:
    return ToolSpec(
        name=f"get_{e.name}", description=f"Get one {_human(e)} by its id, with every field.", kind="read", op="get", entity=e.name,
        parameters=_obj({e.key: _key_schema(e)}, [e.key]), result=_record_schema(e), binding={"key": e.key},
    )  # fmt: skip


def gen_list(e: EntitySpec, name: str | None = None) -> ToolSpec:
    filters = {a.name: a.json_schema() for a in e.attributes if a.type in ("enum", "bool", "ref")}
    return ToolSpec(
        name=name or f"list_{e.table}",
        description=f"List {_human(e)} records, optionally filtered by exact field values ({', '.join(filters) or 'none'}).",
        kind="read", op="list", entity=e.name, parameters=_obj({**filters, "limit": LIMIT_PARAM}),
        result=_list_result(e), binding={"filters": {k: k for k in filters}},
    )  # fmt: skip


def gen_search(e: EntitySpec) -> ToolSpec | None:
    texts = [a.name for a in e.attributes if a.type in ("str", "text") and a.name != e.key]
    if not texts:
        return None
    return ToolSpec(
        name=f"search_{e.table}",
        description=(
            f"Search {_human(e)} records whose text fields ({', '.join(texts[:4])}) contain the query, case-insensitive. "
            f"Unlike list_{e.table}, this matches words, not exact field values."
        ),
        kind="read", op="search", entity=e.name,
        parameters=_obj({"query": {"type": "string", "minLength": 1}, "limit": LIMIT_PARAM}, ["query"]),
        result=_list_result(e), binding={"text_fields": texts},
    )  # fmt: skip


def gen_create(e: EntitySpec) -> ToolSpec:
    props, required = {}, []
    for a in e.attributes:
        if a.name == e.key:
            continue
        props[a.name] = a.json_schema()
        if not a.nullable and a.default is None and a.type not in ("bool", "list", "object"):
            required.append(a.name)
    return ToolSpec(
        name=f"create_{e.name}", description=f"Create a {_human(e)}; its id is assigned and returned.", kind="write",
        op="create", entity=e.name, parameters=_obj(props, required), result=_record_schema(e),
        binding={"fields": {k: k for k in props}},
    )  # fmt: skip


def gen_update(e: EntitySpec) -> ToolSpec | None:
    fields = {a.name: a.json_schema() for a in _mutable(e)}
    if not fields:
        return None
    return ToolSpec(
        name=f"update_{e.name}",
        description=f"Change fields of a {_human(e)} (at least one of {', '.join(list(fields)[:6])}{', ...' if len(fields) > 6 else ''}).",
        kind="write", op="update", entity=e.name, parameters=_obj({e.key: _key_schema(e), **fields}, [e.key]),
        result=_record_schema(e), binding={"key": e.key, "fields": {k: k for k in fields}},
    )  # fmt: skip


def gen_transition(e: EntitySpec, value: str, name: str | None = None) -> ToolSpec:
    status = e.status_attribute
    if status is None:
        raise ValueError(f"{e.name} has no lifecycle attribute to move")
    verb = next(
        (v for v, targets in naming.TRANSITION_VERBS.items() if targets and targets[0] == value), None
    )
    default = f"{verb}_{e.name}" if verb else f"set_{e.name}_{value}"
    return ToolSpec(
        name=(name or default)[:64],
        description=f"Move a {_human(e)} to {status.name} '{value}' (only from a state the lifecycle allows).",
        kind="write", op="transition", entity=e.name, parameters=_obj({e.key: _key_schema(e)}, [e.key]),
        result=_record_schema(e), binding={"key": e.key, "attr": status.name, "value": value},
    )  # fmt: skip


def gen_assign(e: EntitySpec, ref: AttributeSpec) -> ToolSpec:
    target = ref.ref or ""
    stem = ref.name.removesuffix("_id")
    return ToolSpec(
        name=f"set_{e.name}_{stem}"[:64],
        description=f"Point a {_human(e)}'s {stem.replace('_', ' ')} at another {target.replace('_', ' ')}.",
        kind="write", op="assign", entity=e.name,
        parameters=_obj({e.key: _key_schema(e), ref.name: ref.json_schema()}, [e.key, ref.name]),
        result=_record_schema(e), binding={"key": e.key, "attr": ref.name, "param": ref.name},
    )  # fmt: skip


def gen_delete(e: EntitySpec) -> ToolSpec:
    return ToolSpec(
        name=f"delete_{e.name}",
        description=f"Delete a {_human(e)}. Refused while other records still refer to it.",
        kind="write", op="delete", entity=e.name, parameters=_obj({e.key: _key_schema(e)}, [e.key]),
        result={"type": "object", "properties": {"deleted": {"type": "string"}}}, binding={"key": e.key},
    )  # fmt: skip


# -- diversified shapes ------------------------------------------------------------------------


def gen_manage(e: EntitySpec, transitions: Sequence[str]) -> ToolSpec:
    actions = ["create", "update", *transitions]
    fields = {a.name: a.json_schema() for a in _mutable(e)}
    return ToolSpec(
        name=f"manage_{e.name}",
        description=(
            f"One entry point for {_human(e)} changes: `action` selects create, update or a status move "
            f"({', '.join(transitions)}). `{e.key}` is required for every action except create."
        ),
        kind="write", op="manage", entity=e.name,
        parameters=_obj({"action": {"type": "string", "enum": actions}, e.key: _key_schema(e), **fields}, ["action"]),
        result=_record_schema(e), binding={"key": e.key, "fields": {k: k for k in fields}, "transitions": list(transitions)},
        constraints=(ParamConstraint(kind="required_if", params=(e.key,), when={"action": "!create"}, text=f"{e.key} is required unless action is create"),),
        origin="diversified",
    )  # fmt: skip


def gen_range(e: EntitySpec, attr: AttributeSpec) -> ToolSpec:
    fmt = {"type": "string", "format": "date", "description": "ISO date"}
    return ToolSpec(
        name=f"list_{e.table}_by_{attr.name}"[:64],
        description=f"{e.table.replace('_', ' ').capitalize()} whose {attr.name.replace('_', ' ')} lies between start and end (inclusive; start must not be after end).",
        kind="read", op="range", entity=e.name, parameters=_obj({"start": fmt, "end": fmt, "limit": LIMIT_PARAM}, ["start", "end"]),
        result=_list_result(e), binding={"attr": attr.name},
        constraints=(ParamConstraint(kind="less_equal", params=("start", "end"), text="start must not be after end"),),
        origin="diversified",
    )  # fmt: skip


def gen_lookup(e: EntitySpec) -> ToolSpec | None:
    label = e.label_attribute
    if label is None:
        return None
    return ToolSpec(
        name=f"find_{e.name}",
        description=f"Find exactly one {_human(e)} by its id or by its exact {label.name.replace('_', ' ')} (give exactly one of the two).",
        kind="read", op="lookup", entity=e.name,
        parameters=_obj({e.key: _key_schema(e), label.name: {"type": "string"}}),
        result=_record_schema(e), binding={"key": e.key, "label": label.name},
        constraints=(ParamConstraint(kind="exactly_one", params=(e.key, label.name), text=f"give exactly one of {e.key} and {label.name}"),),
        origin="diversified",
    )  # fmt: skip


def gen_overview(spec: EnvSpec, e: EntitySpec) -> ToolSpec | None:
    children = [
        (c.table, a.name)
        for c in spec.entities
        for a in c.attributes
        if a.type == "ref" and a.ref == e.name and c.name != e.name
    ]
    if not children:
        return None
    return ToolSpec(
        name=f"get_{e.name}_overview",
        description=f"A {_human(e)} with the ids and counts of the records that refer to it ({', '.join(t for t, _ in children[:4])}).",
        kind="read", op="overview", entity=e.name, parameters=_obj({e.key: _key_schema(e)}, [e.key]),
        result={"type": "object", "properties": {"record": _record_schema(e), "related": {"type": "object"}, "counts": {"type": "object"}}},
        binding={"key": e.key, "children": [list(c) for c in children]}, origin="diversified",
    )  # fmt: skip


def gen_aggregate(e: EntitySpec) -> ToolSpec | None:
    groups = [a.name for a in e.attributes if a.type in ("enum", "bool")]
    numbers = [a.name for a in e.attributes if a.type in ("int", "float", "money") and a.name != e.key]
    if not groups:
        return None
    props: dict[str, Any] = {"group_by": {"type": "string", "enum": groups}}
    if numbers:
        props["sum_of"] = {
            "type": "string",
            "enum": numbers,
            "description": "a numeric field to total per group",
        }
    return ToolSpec(
        name=f"summarize_{e.table}",
        description=f"Count {_human(e)} records per value of a field, optionally totalling a numeric field per group.",
        kind="read", op="aggregate", entity=e.name, parameters=_obj(props, ["group_by"]),
        result={"type": "object", "properties": {"groups": {"type": "object"}, "total": {"type": "integer"}}},
        binding={}, origin="diversified",
    )  # fmt: skip


# -- from the seed and the knowledge base ----------------------------------------------------------


def _op_for(
    name: str, kind_hint: str | None, has_key: bool, has_other_ref: bool, entity: EntitySpec
) -> tuple[ToolOp, str | None]:
    words = snake(name).split("_")
    verb = words[0]
    if verb in naming.DELETE_VERBS:
        return "delete", None
    if verb in naming.ASSIGN_VERBS and has_key and has_other_ref:
        return "assign", None
    if verb in naming.AGG_VERBS:
        return "aggregate", None
    status = entity.status_attribute
    compound = "_".join(words[:2])
    for v in (compound, verb):
        if v in naming.TRANSITION_VERBS and v not in ("schedule",) and has_key:
            targets = naming.TRANSITION_VERBS[v] or tuple(
                w for w in words[1:] if status is not None and w in status.enum
            )
            legal = [t for t in targets if status is not None and t in status.enum]
            return "transition", (legal[0] if legal else (targets[0] if targets else None))
    if verb in naming.LIST_VERBS or (verb in naming.READ_VERBS and not has_key):
        return ("search" if verb == "search" else "list"), None
    if verb in naming.READ_VERBS or kind_hint == "read":
        return ("get" if has_key else "list"), None
    if verb in naming.CREATE_VERBS and not has_key:
        return "create", None
    if verb in naming.UPDATE_VERBS or has_key:
        return "update", None
    return "create", None


def _key_param(tool_props: dict[str, Any], e: EntitySpec) -> str | None:
    for p in tool_props:
        if snake(p) in (e.key, "id", f"{e.name}_id"):
            return p
    return None


QUERY_PARAMS = ("query", "q", "search", "keyword", "term")


def from_seed_tool(
    t: SeedTool, spec: EnvSpec, tool_entities: dict[str, str]
) -> tuple[ToolSpec | None, Normalization]:
    """A seed's tool as the environment runs it: the seed's name, description and parameter schema
    exactly as declared; what it does to the state read from its HTTP method and path (REST
    semantics) or, for MCP tools, from its name and schema. A tool whose behaviour cannot be read
    is kept with a generic behaviour on its entity and flagged (`inferred=False`), never dropped."""
    res = http_resource(t)
    ent_name = (
        tool_entities.get(t.name)
        or (res.entity if res else None)
        or tool_entity(t, {e.name for e in spec.entities})
    )
    e = next((x for x in spec.entities if x.name == ent_name), None)
    notes: list[str] = []
    if e is None and spec.entities:
        e = spec.entities[0]
        notes.append(f"acts on {ent_name!r}, which the state does not hold: generic behaviour on {e.name}")
    if e is None:
        return None, Normalization(candidate=t.name, origin="seed", fate="removed",
                                   reason="the environment holds no entity for it to act on")  # fmt: skip
    props: dict[str, Any] = dict(t.input_schema.get("properties") or {})
    is_read = t.read_only is True or (t.method or "").upper() in ("GET", "HEAD")
    parent_param: str | None = None
    target: str | None = None
    if res is not None:
        key_param, op_or_none = res.key_param, res.op
        parent_param = res.parent[1] if res.parent else None
        if op_or_none == "transition":
            verb = snake(res.action or "").split("_")[0]
            status = e.status_attribute
            targets = [v for v in naming.TRANSITION_VERBS.get(verb, ()) if status and v in status.enum]
            target = targets[0] if targets else None
    else:
        key_param = _key_param(props, e)
        other_refs = [
            p for p in props if p != key_param and getattr(e.attribute(snake(p)), "type", None) == "ref"
        ]
        op_or_none, target = _op_for(
            t.name, "read" if is_read else None, key_param is not None, bool(other_refs), e
        )
        if op_or_none == "aggregate":
            op_or_none = "list"  # an aggregate takes a group_by the seed does not declare
        if op_or_none == "assign" and other_refs:
            parent_param = None
    inferred = op_or_none is not None and not notes
    op: ToolOp = op_or_none or ("list" if is_read else "create")
    if op_or_none is None:
        notes.append(f"behaviour not readable from the operation: generic {op} on {e.name}")
    if op in ("get", "update", "transition", "assign", "delete") and key_param is None:
        op = "list" if OP_KIND[op] == "read" else "create"
        inferred = False
        notes.append(f"takes no id of the {_human(e)}: generic {op}")
    if op == "transition" and (target is None or e.status_attribute is None):
        op = "update"
        notes.append("no lifecycle value for this verb: treated as an update")
    binding: dict[str, Any] = {"fields": {}, "filters": {}}
    if key_param is not None and op != "create" and op != "list":
        binding["key"] = key_param
    elif key_param is not None and op == "list":
        binding["filters"][key_param] = e.key
    unbound: list[str] = []
    read = OP_KIND[op] == "read"
    for p in props:
        if p == key_param:
            continue
        attr = e.attribute(snake(p))
        if p == parent_param and attr is None:
            attr = next((a for a in e.attributes if a.type == "ref" and snake(p) in (a.name,)), None) or next(
                (a for a in e.attributes if a.type == "ref" and res is not None and res.parent
                 and a.ref == res.parent[0]), None)  # fmt: skip
        if op == "list" and snake(p) in QUERY_PARAMS and "query" not in binding:
            texts = [a.name for a in e.attributes if a.type in ("str", "text") and a.name != e.key]
            if texts:
                op, binding["query"], binding["text_fields"] = "search", p, texts
                continue
        if op == "assign" and attr is not None and attr.type == "ref" and "param" not in binding:
            binding.update({"attr": attr.name, "param": p})
            continue
        if op == "create" and "key_field" not in binding and _names_new_key(p, props[p], e, props):
            binding["key_field"] = p  # the client names the new record (a username, an id it chose)
            continue
        if attr is not None and attr.name != e.key and _fits(props[p], attr):
            binding["filters" if read else "fields"][p] = attr.name
        elif snake(p) not in FILTER_PARAMS:
            unbound.append(p)
    if op == "assign" and "param" not in binding:
        op = "update"
    if op == "transition":
        binding.update({"attr": e.status_attribute.name, "value": target})  # type: ignore[union-attr]
    if unbound:
        notes.append(f"accepted without effect on the state: {', '.join(unbound[:6])}")
    spec_tool = ToolSpec(
        name=t.name,
        description=t.description or f"{t.method or op.capitalize()} {t.path or _human(e)}",
        kind=OP_KIND[op],
        op=op,
        entity=e.name,
        parameters=_seed_parameters(t),
        result=_list_result(e) if op in ("list", "search") else _record_schema(e),
        binding=binding,
        origin="seed",
        seed_tool=t.name,
        inferred=inferred,
    )
    return spec_tool, Normalization(
        candidate=t.name,
        origin="seed",
        fate="kept",
        tool=t.name,
        reason="; ".join([f"{op} on {e.name}", *notes]),
    )


def _fits(schema: Any, attr: AttributeSpec) -> bool:
    """Whether a parameter's values can be stored in (or compared with) an attribute."""
    typ, _ = schema_type(schema)
    if typ is None or attr.type == "ref":
        return True
    want = JSON_TYPES[attr.type]
    return typ == want or (typ == "integer" and want == "number")


def _names_new_key(param: str, schema: Any, e: EntitySpec, props: dict[str, Any]) -> bool:
    """A create's parameter that names the new record: the key itself, or an `id` of the key's type."""
    key = e.attribute(e.key)
    if key is None or not _fits(schema, key):
        return False
    if snake(param) == e.key:
        return True
    return snake(param) == "id" and not any(snake(p) == e.key for p in props)


def _seed_parameters(t: SeedTool) -> dict[str, Any]:
    """The seed's own input schema: what the agent sees is what the seed declares."""
    schema = dict(t.input_schema)
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def from_kb_operation(
    name: str, entity: str, kind: str, description: str, spec: EnvSpec
) -> tuple[ToolSpec | None, Normalization]:
    e = next((x for x in spec.entities if x.name == entity), None)
    if e is None:
        return None, Normalization(
            candidate=name, origin="kb", fate="removed", reason=f"entity {entity!r} not in this environment"
        )
    others = [a for a in e.attributes if a.type == "ref"]
    op, target = _op_for(
        name, kind, kind == "write" and not name.startswith(tuple(naming.CREATE_VERBS)), bool(others), e
    )
    if kind == "read" and OP_KIND[op] == "write":
        op = "list"
    if kind == "write" and OP_KIND[op] == "read":
        op = "update"
    base: ToolSpec | None
    if op == "transition" and target and e.status_attribute and target in e.status_attribute.enum:
        base = gen_transition(e, target, name=name)
    elif op == "assign" and others:
        base = gen_assign(e, others[0])
    elif op in ("get", "lookup"):
        base = gen_get(e)
    elif op in ("list", "search", "range", "overview"):
        base = gen_list(e)
    elif op == "aggregate":
        base = gen_aggregate(e) or gen_list(e)
    elif op == "delete":
        base = gen_delete(e)
    elif op == "create":
        base = gen_create(e)
    else:
        base = gen_update(e)
    if base is None:
        return None, Normalization(
            candidate=name, origin="kb", fate="removed", reason=f"nothing of {e.name} for a {op} to change"
        )
    tool = base.model_copy(update={"name": name[:64], "description": description, "origin": "kb"})
    return tool, Normalization(
        candidate=name, origin="kb", fate="kept", tool=tool.name, reason=f"{tool.op} on {e.name}"
    )


def _signature(t: ToolSpec) -> tuple[Any, ...]:
    b = t.binding
    return (
        t.op,
        t.entity,
        b.get("attr"),
        b.get("value"),
        tuple(sorted(t.parameters.get("properties", {}))) if t.op in ("list", "search") else None,
    )


def _coverage(spec: EnvSpec, offer: Any) -> None:
    """Generated coverage: reads of everything, writes where the domain writes."""
    transitions: dict[str, list[str]] = {}
    for rule in spec.rules:
        if rule.kind == "transition" and rule.entity and rule.attr:
            transitions.setdefault(rule.entity, []).extend(v for vs in rule.allowed.values() for v in vs)
    for e in spec.entities:
        offer(gen_get(e), None)
        offer(gen_list(e), None)
    for e in spec.entities:
        offer(gen_create(e), None)
        offer(gen_update(e), None)
        status = e.status_attribute
        if status is not None:
            for value in dict.fromkeys(transitions.get(e.name, []) or list(status.enum[1:3])):
                if value in status.enum:
                    offer(gen_transition(e, value), None)
        for a in e.attributes:
            if a.type == "ref":
                offer(gen_assign(e, a), None)
    referenced = {a.ref for x in spec.entities for a in x.attributes if a.type == "ref"}
    for e in spec.entities:
        if e.name not in referenced:
            offer(gen_delete(e), None)


def synthesize_toolset(
    spec: EnvSpec,
    seeds: Sequence[Seed],
    tool_entities: dict[str, str],
    cfg: ToolsetConfig | None = None,
    *,
    kb_used: bool = True,
) -> Toolset:
    """`tool_entities` is the state-space stage's decision of which entity each seed tool acts on.
    Every seed tool is kept; the tool bound and diversification apply only to the tools added here."""
    cfg = cfg or ToolsetConfig()
    table: list[Normalization] = []
    chosen: dict[str, ToolSpec] = {}
    signatures: dict[tuple[Any, ...], str] = {}

    def offer(tool: ToolSpec | None, note: Normalization | None) -> None:
        if tool is None:
            if note is not None:
                table.append(note)
            return
        sig = _signature(tool)
        if tool.name in chosen or (sig in signatures and tool.origin != "seed"):
            into = chosen.get(tool.name) or chosen[signatures[sig]]
            table.append(
                Normalization(
                    candidate=tool.name,
                    origin=tool.origin,
                    fate="merged",
                    tool=into.name,
                    reason=f"same operation as {into.name}",
                )
            )
            return
        chosen[tool.name] = tool
        signatures.setdefault(sig, tool.name)
        table.append(
            note
            or Normalization(
                candidate=tool.name,
                origin=tool.origin,
                fate="kept",
                tool=tool.name,
                reason=f"{tool.op} on {tool.entity}",
            )
        )

    for seed in seeds:
        for seed_tool in seed.tools:
            offer(*from_seed_tool(seed_tool, spec, tool_entities))
    kb = load_knowledge().get(spec.coordinate.taxonomy_id) if kb_used else None
    for op in kb.operations if kb else ():
        offer(*from_kb_operation(op.name, op.entity, op.kind, op.description, spec))

    # A seed of a service the knowledge base does not know (a real API outside its domains) that
    # brings a service's worth of operations is mirrored, not embellished: the platform adds only the
    # reads a chain needs where the seed has none (a get or a list of an entity), so an agent trained
    # here meets the real service's tools. A seed within a known domain, or a small one, is filled out
    # with the domain's coverage and the diversified shapes.
    seed_led = not kb_used and sum(1 for t in chosen.values() if t.origin == "seed") >= cfg.min_tools
    if seed_led:
        for e in spec.entities:
            ops = {t.op for t in chosen.values() if t.entity == e.name}
            if not ops & {"get", "lookup"}:
                offer(gen_get(e), None)
            if not ops & {"list", "search", "range"}:
                offer(gen_list(e), None)
    else:
        _coverage(spec, offer)

    if cfg.diversify and not seed_led:
        ranked = sorted(
            spec.entities,
            key=lambda e: (
                -sum(1 for t in chosen.values() if t.entity == e.name and t.origin == "seed"),
                e.name,
            ),
        )
        for e in ranked[: cfg.max_diversified_entities]:
            status = e.status_attribute
            if status is not None:
                offer(gen_manage(e, [v for v in status.enum[1:3]]), None)
            date_attr = next((a for a in e.attributes if a.type == "date"), None)
            if date_attr is not None:
                offer(gen_range(e, date_attr), None)
            offer(gen_lookup(e), None)
            offer(gen_overview(spec, e), None)
            offer(gen_aggregate(e), None)
            search = gen_search(e)
            offer(search.model_copy(update={"origin": "diversified"}) if search else None, None)

    kept_tools = list(chosen.values())
    if len(kept_tools) > cfg.max_tools:
        priority = {"seed": 0, "kb": 1, "diversified": 2, "generated": 3}
        ordered = sorted(kept_tools, key=lambda t: (priority[t.origin], t.kind == "write", t.name))
        keep = {t.name for t in ordered[: cfg.max_tools]} | {t.name for t in kept_tools if t.origin == "seed"}
        # reads that writes depend on stay: every entity keeps its get_ and list_ tool
        for t in kept_tools:
            if t.name in (f"get_{t.entity}", f"list_{plural(t.entity)}"):
                keep.add(t.name)
        for t in kept_tools:
            if t.name not in keep:
                table.append(
                    Normalization(
                        candidate=t.name,
                        origin=t.origin,
                        fate="removed",
                        reason=f"over the {cfg.max_tools}-tool bound",
                    )
                )
        kept_tools = [t for t in kept_tools if t.name in keep]
        table = [n for n in table if not (n.fate == "kept" and n.tool not in keep)]
    return Toolset(tools=sorted(kept_tools, key=lambda t: t.name), table=table)
