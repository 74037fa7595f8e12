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

Compound tools carry the domain's behaviour across entities (`binding["compound"]`, see
`spec.compound_of`) while keeping a plain op (create, update, transition, assign, delete) for task
synthesis: the knowledge base's declared `effects` compile onto its operations (`from_behaviour`),
and where it declares none, structure gives honest generic ones (`guarded`): a record is created,
pointed or moved forward only under live parents whose references agree, a parent ends only with no
open children (or together with them, `close_with_children`), a parent's capacity bounds its open
children, and a parent's count of children (and a document's total of its lines) stays in step.
A seed-led environment keeps the seed's tools exactly and gets none of these.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentomnia.envs import naming
from agentomnia.envs.naming import gone_for_good, plural, snake
from agentomnia.envs.proposals import ProposedOperation
from agentomnia.envs.resources import Resource, http_resource
from agentomnia.envs.spec import (
    JSON_TYPES,
    OP_KIND,
    UNDO_VERBS,
    AttributeSpec,
    EntitySpec,
    EnvSpec,
    ParamConstraint,
    ToolOp,
    ToolSpec,
    command_targets,
    compound_of,
    held_flag,
    held_lifecycle,
    is_compound,
)
from agentomnia.envs.state_space import FILTER_PARAMS, schema_type
from agentomnia.seeds.inference import tool_entity
from agentomnia.seeds.models import Seed, SeedTool
from agentomnia.taxonomy import load_knowledge
from agentomnia.taxonomy.knowledge import Behaviour, Operation

Fate = Literal["kept", "merged", "split", "rewritten", "removed"]


# compound tools kept beyond a full toolset's share, for those verification may still drop
COMPOUND_MARGIN = 3


class ToolsetConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    min_tools: int = 8
    max_tools: int = 56
    diversify: bool = True
    max_diversified_entities: int = 4
    # the least share of tools with domain behaviour across entities (`spec.is_compound`) that plain
    # tools may bring an environment down to (the seed's tools and the reads every chain needs excepted)
    min_compound_share: float = 1 / 3


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
    """An entity's name as a description says it: "purchase order", "CRF entry" (never "crf entry")."""
    return _in_words(e.name)


def _in_words(name: str) -> str:
    """A field's or an entity's name as prose says it ("CRF entry", "PO line")."""
    from agentomnia.tasks.dag.describe import words

    return words(name)


def _records(e: EntitySpec) -> str:
    """ "invoice records", and "export records" for an `export_record` (never "export record records")."""
    said = _human(e)
    return f"{said}s" if said.endswith(" record") or said == "record" else f"{said} records"


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
        description=f"List {_records(e)}, optionally filtered by exact field values ({', '.join(filters) or 'none'}).",
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
            f"Search {_records(e)} whose text fields ({', '.join(texts[:4])}) contain the query, case-insensitive. "
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
        name=f"create_{e.name}", description=f"Create {naming.article(_human(e))}; its id is assigned and returned.", kind="write",
        op="create", entity=e.name, parameters=_obj(props, required), result=_record_schema(e),
        binding={"fields": {k: k for k in props}},
    )  # fmt: skip


def gen_update(e: EntitySpec) -> ToolSpec | None:
    fields = {a.name: a.json_schema() for a in _mutable(e)}
    if not fields:
        return None
    return ToolSpec(
        name=f"update_{e.name}",
        description=f"Change fields of {naming.article(_human(e))} (at least one of {', '.join(list(fields)[:6])}{', ...' if len(fields) > 6 else ''}).",
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
        description=f"Move {naming.article(_human(e))} to {status.name} '{value}' (only from a state the lifecycle allows).",
        kind="write", op="transition", entity=e.name, parameters=_obj({e.key: _key_schema(e)}, [e.key]),
        result=_record_schema(e), binding={"key": e.key, "attr": status.name, "value": value},
    )  # fmt: skip


def gen_assign(e: EntitySpec, ref: AttributeSpec) -> ToolSpec:
    target = ref.ref or ""
    stem = ref.name.removesuffix("_id")
    return ToolSpec(
        name=f"set_{e.name}_{stem}"[:64],
        description=f"Point {naming.article(_human(e))}'s {stem.replace('_', ' ')} at another {target.replace('_', ' ')}.",
        kind="write", op="assign", entity=e.name,
        parameters=_obj({e.key: _key_schema(e), ref.name: ref.json_schema()}, [e.key, ref.name]),
        result=_record_schema(e), binding={"key": e.key, "attr": ref.name, "param": ref.name},
    )  # fmt: skip


def gen_delete(e: EntitySpec) -> ToolSpec:
    return ToolSpec(
        name=f"delete_{e.name}",
        description=f"Delete {naming.article(_human(e))}. Refused while other records still refer to it.",
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
        description=f"{_span_text(e, attr)} (inclusive; start must not be after end).",
        kind="read", op="range", entity=e.name, parameters=_obj({"start": fmt, "end": fmt, "limit": LIMIT_PARAM}, ["start", "end"]),
        result=_list_result(e), binding={"attr": attr.name},
        constraints=(ParamConstraint(kind="less_equal", params=("start", "end"), text="start must not be after end"),),
        origin="diversified",
    )  # fmt: skip


def _span_text(e: EntitySpec, attr: AttributeSpec) -> str:
    """What a read over a span of one date lists, as a person says it: "ASNs shipped between start and
    end", "Equipment records whose inspection is due between start and end", "Passengers whose birth
    date lies between start and end" (never "Asns whose shipped on lies between")."""
    from agentomnia.tasks.dag.describe import field_label, plural, span_words

    many, said = plural(e.name), span_words(attr.name)
    if said is None:
        text = f"{many} whose {field_label(attr.name)} lies between start and end"
    else:
        text = f"{many} {said}{' lies' if said.endswith(' date') else ''} between start and end"
    return text[:1].upper() + text[1:]


def gen_lookup(e: EntitySpec) -> ToolSpec | None:
    label = e.label_attribute
    if label is None:
        return None
    return ToolSpec(
        name=f"find_{e.name}",
        description=f"Find exactly one {_human(e)} by its id or by its exact {_in_words(label.name)} (give exactly one of the two).",
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
        description=f"{naming.article(_human(e)).capitalize()} with the ids and counts of the records that refer to it ({', '.join(t for t, _ in children[:4])}).",
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
        description=f"Count {_records(e)} per value of a field, optionally totalling a numeric field per group.",
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
    """The parameter naming the record a seed's tool acts on: the entity's key, or the id of the
    seed's short name for it (`application_id` for the domain's `visa_application`)."""
    for p in tool_props:
        name = snake(p)
        short = name.removesuffix("_id")
        if name in (e.key, "id", f"{e.name}_id") or (name.endswith("_id") and e.name.endswith(f"_{short}")):
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
    held = _held_record(t, res, e)
    if held is not None:  # the parent's own record: written over, or ended (or removed)
        if (t.method or "").upper() != "DELETE":
            op_or_none = "create"
        elif held["end"] is not None:
            op_or_none, target = "transition", held["end"]
        else:
            op_or_none = "delete"
    inferred = op_or_none is not None and not notes
    if held is not None:
        notes.append(f"the {_human(spec.entity(held['parent']))}'s own {_human(e)}, found by {held['param']}")
    op: ToolOp = op_or_none or ("list" if is_read else "create")
    if op_or_none is None:
        notes.append(f"behaviour not readable from the operation: generic {op} on {e.name}")
    if op in ("get", "update", "transition", "assign", "delete") and key_param is None and held is None:
        op = "list" if OP_KIND[op] == "read" else "create"
        inferred = False
        notes.append(f"takes no id of the {_human(e)}: generic {op}")
    if op == "transition" and (target is None or e.status_attribute is None):
        op = "update"
        notes.append("no lifecycle value for this verb: treated as an update")
    binding: dict[str, Any] = {"fields": {}, "filters": {}}
    if held is not None:
        binding["parent"] = held
    if key_param is not None and op != "create" and op != "list":
        binding["key"] = key_param
    elif key_param is not None and op == "list":
        binding["filters"][key_param] = e.key
    unbound: list[str] = []
    read = OP_KIND[op] == "read"
    for p in props:
        if p == key_param or (held is not None and op != "create" and p == held["param"]):
            continue  # the parent's id finds the record: it is not a field the call writes
        attr = e.attribute(snake(p))
        if p == parent_param and attr is None:
            attr = next((a for a in e.attributes if a.type == "ref" and snake(p) in (a.name,)), None) or next(
                (a for a in e.attributes if a.type == "ref" and res is not None and res.parent
                 and a.ref == res.parent[0]), None)  # fmt: skip
        if op in ("list", "search") and snake(p) in QUERY_PARAMS and "query" not in binding:
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
    if op == "search" and "query" not in binding:
        op = "list"  # named a search, it takes no free text: it filters (`search_providers` by service and postcode)
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


HELD_DONE = ("returned", "completed", "done", "finished", "released", "unassigned")


def _held_record(t: SeedTool, res: Resource | None, e: EntitySpec) -> dict[str, Any] | None:
    """How a seed's tool finds the one record a parent holds at a path without an id of its own
    (`PUT /accounts/{n}/autopay`): the parent's id parameter, the record's reference to the parent,
    and the lifecycle values where such a record has ended (a cancelled autopay is not the account's
    autopay any more). None for any other tool, or where the record does not refer to its parent."""
    if res is None or not res.singleton or res.parent is None or e.name == res.parent[0]:
        return None
    ref = next((a for a in e.attributes if a.type == "ref" and a.ref == res.parent[0]), None)
    if ref is None:
        return None
    status = e.status_attribute
    # ended (cancelled), or done with for good where that is how it stops (a returned assignment), never
    # a value a record reaches by succeeding (an approved one)
    ended = [v for v in (status.enum if status else ()) if _ended(str(v)) or v in HELD_DONE]
    # the value a removal leaves it in: an ending one it does not start in (none: it is removed)
    end = next((v for v in ended if status is not None and v != status.enum[0]), None)
    return {"parent": res.parent[0], "param": res.parent[1], "attr": ref.name, "ended": ended, "end": end}


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
    name: str,
    entity: str,
    kind: str,
    description: str,
    spec: EnvSpec,
    *,
    origin: Literal["kb", "model"] = "kb",
) -> tuple[ToolSpec | None, Normalization]:
    """A knowledge-base operation (or one the model proposed, `origin="model"`) compiled onto the op
    its name and kind imply, over its entity."""
    e = next((x for x in spec.entities if x.name == entity), None)
    if e is None:
        return None, Normalization(
            candidate=name, origin=origin, fate="removed", reason=f"entity {entity!r} not in this environment"
        )
    others = [a for a in e.attributes if a.type == "ref"]
    op, target = _op_for(
        name, kind, kind == "write" and not name.startswith(tuple(naming.CREATE_VERBS)), bool(others), e
    )
    if kind == "read" and OP_KIND[op] == "write":
        op = "list"
    if kind == "write" and OP_KIND[op] == "read":
        op = "update"
    required: list[str] = []
    window: AttributeSpec | None = None
    if kind == "read" and op == "list" and origin == "kb":
        op, required = read_shape(description, e)
        window = read_window(description, e) if op == "list" and not required else None
    base: ToolSpec | None
    if window is not None:  # "List vaccinations due within a period": the records dated in it
        base = gen_range(e, window)
        required = ["start", "end"]
    elif op == "transition" and target and e.status_attribute and target in e.status_attribute.enum:
        base = gen_transition(e, target, name=name)
    elif op == "assign" and others:
        # the reference the name speaks of (`assign_model_portfolio` points `model_id`), else the first
        named = [a for a in others if (a.ref or "") in name or a.name.removesuffix("_id") in name]
        base = gen_assign(e, (named or others)[0])
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
            candidate=name, origin=origin, fate="removed", reason=f"nothing of {e.name} for a {op} to change"
        )
    tool = base.model_copy(update={"name": name[:64], "description": description, "origin": origin})
    where = read_state(name, description, e) if origin == "kb" and tool.op == "list" else {}
    if where:  # "List unacknowledged alerts": only those, and no filter that could ask for the others
        kept = {p: a for p, a in tool.binding.get("filters", {}).items() if a not in where}
        props = {
            p: s
            for p, s in tool.parameters["properties"].items()
            if tool.binding["filters"].get(p) not in where
        }
        tool = tool.model_copy(
            update={"parameters": _obj(props), "binding": {**tool.binding, "filters": kept, "where": where}}
        )
    if required:
        tool = tool.model_copy(update={"parameters": _obj(tool.parameters["properties"], required)})
    state = ", ".join(f"{a} {str(v).lower()}" for a, v in where.items())
    return tool, Normalization(
        candidate=name, origin=origin, fate="kept", tool=tool.name,
        reason=f"{tool.op} on {e.name}" + (f" of one {' or '.join(required)}" if required else "")
        + (f", only those with {state}" if state else ""),
    )  # fmt: skip


_DETERMINER = r"(?:a|an|the|one|each|any|given|single|specific|particular)"
_OWNING = r"(?:of|for|on|in|from|with|by|at|under|to|about|per|within|across)"
_SEARCHING = frozenset({"list", "find", "search", "browse", "filter", "show", "query", "scan"})


def _one(noun: str, text: str, *, owning: bool) -> bool:
    """Whether `text` speaks of one `noun` as the records' owner ("care entries for a pet", "a
    vehicle's past repair orders") or, without `owning`, as the record itself ("read a customer's
    tier", "a recipe with per-serving nutrition"); never one of two ("goals of an employee or cycle")."""
    noun = re.escape(noun)
    said = (
        rf"\b{_OWNING}\s+{_DETERMINER}\s+(?:given\s+)?{noun}\b(?!-)(?!'s)|\b{_DETERMINER}\s+{noun}'s\b"
        if owning
        else rf"\b{_DETERMINER}\s+(?:given\s+)?{noun}\b(?!-)"
    )
    for m in re.finditer(said, text):
        before, after = text[: m.start()].rstrip(), text[m.end() :]
        if not before.endswith((" or", " and")) and not re.match(r"\s+(?:or|and)\b", after):
            return True
    return False


def read_shape(description: str, e: EntitySpec) -> tuple[ToolOp, list[str]]:
    """The shape a knowledge-base read's description gives it: the records of one other record, with
    that record's reference required, of each where it names two ("Free slots of a doctor" takes
    `doctor_id`, "List a vehicle's past repair orders" `vehicle_id`); else one record of its own entity by its id ("Read a
    customer's tier, spend and manager", "A recipe with per-serving nutrition"); else a list with
    optional filters ("List open disputes")."""
    text = description.lower().replace("\u2019", "'")
    owners: dict[str, list[str]] = {}
    for a in e.attributes:
        if a.type != "ref" or not a.ref or a.name == e.key:
            continue
        nouns = {_words(snake(a.ref)), _words(snake(a.name).removesuffix("_id"))}
        for noun in nouns:
            owners.setdefault(noun, []).append(a.name)
    named = sorted(
        {attrs[0] for noun, attrs in owners.items() if len(set(attrs)) == 1 and _one(noun, text, owning=True)}
    )
    if named:  # "an employee's goals in a cycle": both are given
        return "list", named
    first = (re.findall(r"[a-z]+", text) or [""])[0]
    own = {_words(snake(e.name)), _words(snake(e.name)).split()[-1]}
    if first not in _SEARCHING and any(_one(n, text, owning=False) for n in own if len(n) > 3):
        return "get", []
    return "list", []


_WINDOW_WORDS = ("day", "date", "dates", "period", "week", "month", "year", "window", "range", "night")
_WINDOW = re.compile(
    rf"\b(?:for|on|in|within|during|over|between|across)\s+(?:{_DETERMINER}\s+|two\s+|some\s+)?"
    rf"(?:(?:date|time)\s+)?(?:{'|'.join(_WINDOW_WORDS)})s?\b"
)
# words of a date field's name that say only that it is a date, and the fields a window never picks by
_DATE_NAME_WORDS = frozenset({"at", "on", "date", "time", "datetime", "timestamp", "day", "ts"})
_NOT_WINDOWED = frozenset({"created", "updated", "modified", "deleted", "birth", "dob", "born", "closed",
                           "cancelled", "canceled", "end", "ends", "due", "expires", "expiry", "grace", "last",
                           "launched", "founded", "hired", "joined", "registered", "enrolled", "purchased",
                           "installed", "acquired", "opened", "serviced"})  # fmt: skip


def read_window(description: str, e: EntitySpec) -> AttributeSpec | None:
    """The date field a knowledge-base read picks its records by when its description asks for a span
    of time ("List vaccinations due within a period" reads `due_next`, "Read the log for a date"
    `log_date`, "Earnings reports in a date range" `report_date`): the one whose words the description
    uses, else the entity's one date field, else the one that says when the record happens; None when
    the description names no span or the entity has no date."""
    text = description.lower().replace("\u2019", "'")
    if _WINDOW.search(text) is None or re.search(r"\bnot\b", text):
        return None  # "gear not checked out on a date" asks what is free, not what is dated
    dates = [a for a in e.attributes if a.type in ("date", "datetime") and a.name != e.key]
    if not dates:
        return None
    said = {w for w in re.findall(r"[a-z]+", text) if len(w) > 2} - set(_WINDOW_WORDS) - _FUNCTION_WORDS

    def stems(a: AttributeSpec) -> list[str]:
        return [w for w in a.name.lower().split("_") if w not in _DATE_NAME_WORDS and len(w) > 2]

    named = [a for a in dates if any(t.startswith(w[:5]) or w.startswith(t) for w in stems(a) for t in said)]
    if named:
        return named[0]

    def rank(a: AttributeSpec) -> int:
        words_ = set(a.name.lower().split("_"))
        if words_ & _NOT_WINDOWED:
            return 3
        if a.name in ("date", "day") or a.name.endswith(("_date", "_day")) or a.name.startswith("for_"):
            return 0
        return 1 if a.name.startswith(("start", "scheduled", "occurred", "measured", "logged")) else 2

    best = min(dates, key=rank)
    return best if rank(best) < 3 else None  # a product's launch date never dates its sales


# what says that a read's records lack a state ("not yet paid", "unresolved", "awaiting approval")
_LACKING = (
    r"(?:\bnot\s+(?:yet\s+)?|\bno\s+|\bwithout\s+|\b(?:waiting|wait)\s+for\s+(?:an?\s+|the\s+)?"
    r"|\bawaiting\s+(?:an?\s+|the\s+)?|\b(?:un|in|non-?))"
)
_DENIED = re.compile(r"\b(?:not|no|never|without|except|excluding|other than)\b")
# where a description turns from the records it lists to what it lists them by or shows of them
_LISTED_BY = re.compile(r"\s(?:by|with|including|sorted|that|which|per|whether|plus)\s|[;(]")
_ALONGSIDE = re.compile(r"\s(?:and|or)\s|,")
_STATE_NAME_WORDS = frozenset({"is", "has", "was", "currently", "flag"})
_NOT_STATES = frozenset({"none", "other", "all", "any", "unknown", "na", "n/a", "standard", "default"})


def _states_said(e: EntitySpec, text: str) -> dict[str, list[Any]]:
    """The yes/no and choice values of `e` that `text` says its records have, by field."""
    own = set(_words(snake(e.name)).lower().split())
    found: dict[str, list[Any]] = {}
    for a in e.attributes:
        if a.name == e.key:
            continue
        if a.type == "bool":
            said = [w for w in a.name.lower().split("_") if w not in _STATE_NAME_WORDS]
            if len(said) != 1 or len(said[0]) < 4:
                continue  # "out_of_service" is said many ways; one word is said one way
            stem = re.escape(said[0][:6])
            if re.search(rf"{_LACKING}{stem}", text):
                found[a.name] = [False]
            elif re.search(rf"\b{stem}", text):
                found[a.name] = [True]
        elif a.type == "enum":
            for value in a.enum:
                said_value = _words(str(value)).lower()
                if len(said_value) < 3 or said_value in _NOT_STATES or set(said_value.split()) & own:
                    continue
                if re.search(rf"\b{re.escape(said_value)}\b(?!'s)", text):  # never "a member's tier"
                    found.setdefault(a.name, []).append(value)
    return found


def read_state(name: str, description: str, e: EntitySpec) -> dict[str, Any]:
    """The state a knowledge-base read's name or description keeps its records to: a yes/no field
    the words say ("find_available_technicians" lists `available` ones, "List unacknowledged alerts"
    those with `acknowledged` false) or the one choice of a choice field they name ("list_pending_checks"
    lists `verdict` pending, "List permits currently issued" `status` issued). Nothing when the words
    name none, or more than one ("received and scheduled orders"), or a choice only by what it is not
    ("RFIs not yet closed"), or only what the records are listed by ("cases by priority or automation")."""
    verb, *rest = snake(name).split("_")
    if verb not in _SEARCHING and verb not in ("get", "read", "view", "check"):
        return {}
    table = set(_words(e.table).lower().split()) | set(_words(snake(e.name)).lower().split())
    named = " ".join(w for w in rest if w not in table)
    listed = _LISTED_BY.split(description.lower().replace("\u2019", "'"))[0]
    wide = _states_said(e, f"{named} | {listed}")
    found = _states_said(e, f"{named} | {_ALONGSIDE.split(listed)[0]}")  # never "the latest cut and notes"
    if len(found) != 1 or any(len(wide.get(attr, ())) > 1 for attr in found):
        return {}
    ((attr, (value, *_)),) = found.items()
    if not isinstance(value, bool) and _DENIED.search(description.lower()):
        return {}  # "gear in good condition that is not checked out": more than the one choice
    return {attr: value}


# words of a description that name no field ("List the records for a given period")
_FUNCTION_WORDS = frozenset({"list", "the", "and", "for", "with", "within", "during", "over", "between", "across",
                             "read", "get", "show", "return", "find", "all", "its", "their", "given", "one",
                             "any", "each", "two", "some", "that", "which", "who", "are", "has", "have"})  # fmt: skip


def _signature(t: ToolSpec) -> tuple[Any, ...]:
    b = t.binding
    steps = (compound_of(t) or {}).get("steps") or ()
    return (
        t.op,
        t.entity,
        b.get("attr"),
        b.get("value"),
        tuple(sorted(t.parameters.get("properties", {}))) if t.op in ("list", "search", "range") else None,
        tuple(t.parameters.get("required", ()))
        if t.op in ("list", "range")
        else None,  # "of one pet" is its own read
        repr(steps) if steps else None,  # a tool with other effects is another operation
        tuple(sorted(b.get("where", {}).items())) or None,  # "the open tickets" are not all tickets
    )


# -- compound tools: cross-entity behaviour ----------------------------------------------------
# Lifecycle values that end a record's life (nothing more is added under it) and those that
# finish it (its work is done); the rest are open. Matched on the value's first word.
ENDED = (
    "closed", "cancelled", "canceled", "archived", "expired", "rejected", "declined", "terminated", "retired",
    "inactive", "suspended", "deleted", "void", "voided", "withdrawn", "revoked", "discontinued", "blocked",
    "banned", "dismissed", "failed", "lost", "dissolved", "deceased", "churned", "written", "denied", "abandoned",
    "disabled", "locked", "frozen", "obsolete", "retracted", "superseded", "cancel", "close", "ended",
    "demobilized", "decommissioned", "dormant", "discharged", "disposed", "scrapped", "sold", "vacated",
    "offboarded", "departed", "resigned", "defaulted", "foreclosed", "out", "offline", "paused", "hold",
    "unavailable", "lapsed", "closing", "stopped", "halted", "removed", "rescinded", "deprecated", "waived",
    "skipped", "exempted",
)  # fmt: skip
# Flags on a parent that say whether it takes new related records (true) or refuses them (false).
LIVE_FLAGS = (
    "active",
    "is_active",
    "enabled",
    "is_enabled",
    "available",
    "is_available",
    "approved",
    "is_approved",
    "verified",
    "is_verified",
    "kyc_verified",
    "certified",
    "licensed",
    "published",
    "is_published",
    "open",
)
DEAD_FLAGS = (
    "blocked", "is_blocked", "suspended", "archived", "is_archived", "deleted", "frozen", "closed", "inactive",
    "discontinued", "is_discontinued", "cancelled", "banned", "retired", "on_hold", "is_retired", "locked",
)  # fmt: skip
FINISHED = (
    "sent", "read", "succeeded", "successful", "answered", "responded", "replied", "received", "processed",
    "completed", "complete", "done", "resolved", "fulfilled", "delivered", "shipped", "filled", "settled",
    "paid", "approved", "accepted", "finished", "returned", "refunded", "issued", "executed", "signed",
    "published", "converted", "won", "reversed", "passed", "graded", "released", "confirmed",
)  # fmt: skip
# The values a parent is closed with, most preferred first, and those its open children take then.
CLOSING = ("closed", "cancelled", "canceled", "archived", "terminated", "retired", "completed", "resolved")
CHILD_CLOSING = ("cancelled", "canceled", "closed", "void", "voided", "withdrawn", "dismissed", "terminated")


def _ended(value: str) -> bool:
    return value in ENDED or any(w in ENDED for w in value.split("_"))


def _finished(value: str) -> bool:
    return not _ended(value) and (value in FINISHED or any(w in FINISHED for w in value.split("_")))


def open_values(e: EntitySpec) -> list[str]:
    """The lifecycle values under which a record takes new related records (neither ended nor done)."""
    status = e.status_attribute
    if status is None:
        return []
    return [v for v in status.enum if not _ended(v) and not _finished(v)]


def _words(name: str) -> str:
    return name.replace("_", " ")


def _or(values: Sequence[str]) -> str:
    values = [_words(str(v)) for v in values]
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " or " + values[-1]


def _requirement_text(e: EntitySpec, req: dict[str, Any]) -> str:
    if req["kind"] == "none":
        sel = req["select"]
        states = [(a, w["in"]) for a, w in sel["where"].items() if "in" in w]
        if not states:
            return f"no {_words(sel['entity'])} may be linked"
        what = " and ".join(
            f"still be {_or(values)}"
            if a in ("status", "state", "stage")
            else f"have {_words(a)} {_or(values)}"
            for a, values in states
        )
        return f"no {_words(sel['entity'])} may {what}"
    hops = [_words(h.removesuffix("_id")) for h in req["left"].split("->")]
    owners = hops[:-1] or [_words(e.name)]
    subject = " ".join([*[h + "'s" for h in owners], hops[-1]])
    right = req.get("right")
    if (
        req["kind"] == "compare"
        and req["op"] in ("==", "!=")
        and isinstance(right, dict)
        and isinstance(right.get("const"), bool)
    ):
        flag = hops[-1].removeprefix("is ")
        whose = " of the ".join(reversed(hops[:-1])) or e.name.replace("_", " ")
        positive = right["const"] == (req["op"] == "==")
        return f"the {whose} must {'' if positive else 'not '}be {flag}"
    if req["kind"] == "in":
        verb = "must be" if req["op"] == "in" else "must not be"
        return f"the {subject} {verb} {_or(req['right'])}"
    right = req["right"]
    shown = _value_text(right).removeprefix("its ")
    if "path" in right and not shown.startswith("the "):  # "the customer's current tier", never "the the"
        shown = "the " + shown
    words = {"<": "below", "<=": "at most", "==": "", "!=": "other than", ">=": "at least", ">": "above"}
    return f"the {subject} must be {words[req['op']] + ' ' if words[req['op']] else ''}{shown}".replace(
        "  ", " "
    )


def _guard(spec: EnvSpec, e: EntitySpec, refs: Sequence[AttributeSpec]) -> list[dict[str, Any]]:
    """Requirements that the records `refs` point at are alive: an open lifecycle, an active flag,
    and the domain's comparisons read through those references."""
    out: list[dict[str, Any]] = []
    for a in refs:
        parent = next((x for x in spec.entities if x.name == a.ref), None)
        if parent is None or parent.name == e.name:
            continue
        status = parent.status_attribute
        live = open_values(parent)
        if status is not None and live and len(live) < len(status.enum):
            out.append({"kind": "in", "left": f"{a.name}->{status.name}", "op": "in", "right": live})
        for flag in parent.attributes:
            if flag.type == "bool" and flag.name in LIVE_FLAGS + DEAD_FLAGS:
                live_flag = flag.name in LIVE_FLAGS
                out.append(
                    {
                        "kind": "compare",
                        "left": f"{a.name}->{flag.name}",
                        "op": "==",
                        "right": {"const": live_flag},
                    }
                )
        out += _capacity(spec, e, a, parent)
    names = {a.name for a in refs}
    for r in spec.rules:
        if r.kind != "compare" or not isinstance(r.left, str) or r.op is None:
            continue
        sides = [r.left, r.right] if isinstance(r.right, str) else [r.left]
        if not all(s.startswith(e.name + ".") for s in sides):
            continue
        paths = [s.split(".", 1)[1] for s in sides]
        if not any(p.split("->")[0] in names and "->" in p for p in paths):
            continue
        right: dict[str, Any] = {"path": paths[1]} if len(paths) == 2 else {"const": r.right}
        out.append({"kind": "compare", "left": paths[0], "op": r.op, "right": right, "text": r.text})
    for req in out:
        req.setdefault("text", _requirement_text(e, req)[:1].upper() + _requirement_text(e, req)[1:])
    return out


def _agreement(spec: EnvSpec, e: EntitySpec, refs: Sequence[AttributeSpec]) -> list[dict[str, Any]]:
    """Requirements that a record's references agree about what they share: a line's part belongs to
    the line's product (`cad_model_id->product_id == $product_id`), an order's recommendation is for
    the account's client (`recommendation_id->client_id == $account_id->client_id`). A reference
    left empty agrees with anything."""
    names = {x.name: x for x in spec.entities}
    all_refs = [a for a in e.attributes if a.type == "ref" and a.ref in names and a.ref != e.name]
    out: list[dict[str, Any]] = []
    for b in refs:
        if b not in all_refs:
            continue
        for a in all_refs:
            if a.name == b.name:
                continue
            target = names[b.ref or ""]
            # b's record points at the record a points at
            # (same role only: a field of the same name, so a payer is never taken for a group's owner)
            via = next(
                (
                    c
                    for c in target.attributes
                    if c.type == "ref" and c.ref == a.ref and c.name == a.name and c.ref != target.name
                ),
                None,
            )
            left, right = (f"{b.name}->{via.name}", {"path": a.name}) if via is not None else (None, None)
            if via is None:  # or both point at a shared parent
                other = names[a.ref or ""]
                shared = [
                    (c, d)
                    for c in target.attributes
                    for d in other.attributes
                    if c.type == "ref"
                    and d.type == "ref"
                    and c.ref == d.ref
                    and c.name == d.name
                    and c.ref not in (target.name, other.name, e.name)
                ]
                if len(shared) != 1:
                    continue
                c, d = shared[0]
                left, right = f"{b.name}->{c.name}", {"path": f"{a.name}->{d.name}"}
            text = f"The {_words(b.name.removesuffix('_id'))} must belong to the same {_words(str(left).split('->')[-1].removesuffix('_id'))} as the {_words(a.name.removesuffix('_id'))}"
            req = {
                "kind": "compare",
                "left": left,
                "op": "==",
                "right": right,
                "text": text,
                "skip_null": True,
            }
            if not any(r["left"] == req["left"] and r["right"] == req["right"] for r in out):
                out.append(req)
    return out[:3]


def _cross_rules(spec: EnvSpec, e: EntitySpec) -> list[dict[str, Any]]:
    """The domain's comparisons from this entity's fields to a referenced record's, as requirements
    (`reads`: the own fields they read, so a tool that writes one of them states the rule)."""
    out = []
    for r in spec.rules:
        if (
            r.kind != "compare"
            or not isinstance(r.left, str)
            or r.op is None
            or not r.left.startswith(e.name + ".")
        ):
            continue
        left = r.left.split(".", 1)[1]
        if not isinstance(r.right, str) or not r.right.startswith(e.name + ".") or "->" not in r.right + left:
            continue
        right = r.right.split(".", 1)[1]
        reads = {p.split("->")[0] for p in (left, right)}
        out.append(
            {
                "kind": "compare",
                "left": left,
                "op": r.op,
                "right": {"path": right},
                "text": r.text,
                "reads": reads,
            }
        )
    return out


def _frozen_under(spec: EnvSpec, e: EntitySpec) -> list[dict[str, Any]]:
    """Requirements that the records this one belongs to (its required references) have not ended."""
    out = []
    for a in e.attributes:
        parent = next((x for x in spec.entities if x.name == a.ref), None)
        if a.type != "ref" or a.nullable or parent is None or parent.name == e.name:
            continue
        status = parent.status_attribute
        ended = [v for v in status.enum if _ended(v)] if status is not None else []
        if status is not None and ended and len(ended) < len(status.enum):
            out.append({
                "kind": "in", "left": f"{a.name}->{status.name}", "op": "not in", "right": ended,
                "text": f"The {_words(a.name.removesuffix('_id'))} must not be {_or(ended)}",
            })  # fmt: skip
    return out


def _no_open_children(spec: EnvSpec, parent: EntitySpec) -> list[dict[str, Any]]:
    out = []
    for child in spec.entities:
        status = child.status_attribute
        live = open_values(child)
        link = next((a for a in child.attributes if a.type == "ref" and a.ref == parent.name), None)
        if (
            child.name == parent.name
            or link is None
            or status is None
            or not live
            or len(live) == len(status.enum)
        ):
            continue
        out.append(
            {
                "kind": "none",
                "select": {
                    "entity": child.name,
                    "where": {link.name: {"path": parent.key}, status.name: {"in": live}},
                },
                "text": f"No {_words(child.name)} of the {_words(parent.name)} may still be {_or(live)}",
            }
        )
    return out[:2]


def _capacity(spec: EnvSpec, e: EntitySpec, link: AttributeSpec, parent: EntitySpec) -> list[dict[str, Any]]:
    """A parent's `max_<children>` (or `capacity`) bounds how many records of this entity it holds:
    a new one is refused once the parent is full (only open ones count where there is a lifecycle)."""
    from agentomnia.seeds.inference import singular

    child_words = e.name.split("_")
    only_child = (
        sum(1 for x in spec.entities for a in x.attributes if a.type == "ref" and a.ref == parent.name) == 1
    )
    for attr in parent.attributes:
        if attr.type != "int":
            continue
        words = attr.name.split("_")
        named = words[0] == "max" and singular(words[-1]) in child_words
        if not named and not (
            attr.name in ("capacity", "max_capacity", "seats") and (only_child or e.status_attribute)
        ):
            continue
        where: dict[str, Any] = {link.name: {"path": link.name}}
        status = e.status_attribute
        live = open_values(e)
        if status is not None and live and len(live) < len(status.enum):
            where[status.name] = {"in": live}
        return [
            {
                "kind": "compare", "left": f"{link.name}->{attr.name}", "op": ">",
                "right": {"count": {"entity": e.name, "where": where}},
                "text": f"The {_words(parent.name)} already holds its maximum of open {_words(e.table)} ({_words(attr.name)})",
            }
        ]  # fmt: skip
    return []


def _tally_steps(
    spec: EnvSpec, e: EntitySpec, refs: Sequence[AttributeSpec], sign: str
) -> list[dict[str, Any]]:
    """Steps that keep a parent's count (and, for lines and items, its total) of this entity's records in step."""
    out: list[dict[str, Any]] = []
    for a in refs:
        parent = next((x for x in spec.entities if x.name == a.ref), None)
        if parent is None or parent.name == e.name:
            continue
        for attr in parent.attributes:
            words = attr.name.split("_")
            if attr.type != "int" or not (words[-1] == "count" or words[0] == "num"):
                continue
            if attr.enum or (attr.declared is not None and "enum" in attr.declared):
                continue  # a package's lesson_count of 5, 10 or 20 is its size, not a tally
            counted = "_".join(w for w in words if w not in ("count", "num", "total"))
            if counted and (
                counted in (e.name, e.table)
                or any(w.startswith(counted.rstrip("s")) for w in e.name.split("_"))
            ):
                out.append({"kind": sign, "path": f"{a.name}->{attr.name}", "value": {"const": 1}})
                break
        amount = next(
            (x for x in ("amount", "line_total") if getattr(e.attribute(x), "type", None) == "money"), None
        )
        total = next(
            (x for x in ("total_amount", "total") if getattr(parent.attribute(x), "type", None) == "money"),
            None,
        )
        # only lines and items make up their parent's total (a requisition's total is a budget)
        if amount and total and e.name.endswith(("_line", "_item", "line", "item")):
            out.append({"kind": sign, "path": f"{a.name}->{total}", "value": {"path": amount}})
    return out


def _with_compound(
    tool: ToolSpec, requires: list[dict[str, Any]], steps: list[dict[str, Any]], spec: EnvSpec
) -> ToolSpec:
    if not requires and not steps:
        return tool
    e = spec.entity(tool.entity)
    touches = {tool.entity}
    for s in steps:
        if s["kind"] == "create":
            touches.add(s["entity"])
        elif s["kind"] == "each":
            touches.add(s["select"]["entity"])
        else:
            owner = e.name
            for hop in s["path"].split("->")[:-1]:
                attr = spec.entity(owner).attribute(hop)
                owner = attr.ref if attr is not None and attr.ref else owner
            touches.add(owner)
    rules = [r["text"].rstrip(".") for r in requires]
    effects = [_step_text(spec, e, s) for s in steps]
    extra = ""
    if effects:
        extra += " Also " + "; ".join(effects) + "."
    if rules:
        extra += " Refused when any of these fails: " + "; ".join(r[:1].lower() + r[1:] for r in rules) + "."
    requires = [{k: v for k, v in r.items() if k != "reads"} for r in requires]
    binding = {**tool.binding, "compound": {"requires": requires, "steps": steps, "touches": sorted(touches)}}
    return tool.model_copy(
        update={"binding": binding, "description": (tool.description.rstrip() + extra)[:1000]}
    )


def _value_text(v: dict[str, Any]) -> str:
    if "const" in v:
        return _words(str(v["const"]).lower())
    if "path" in v:
        hops = [_words(h.removesuffix("_id")) for h in v["path"].split("->")]
        return (
            "its " + hops[0] if len(hops) == 1 else "the " + "".join(h + "'s " for h in hops[:-1]) + hops[-1]
        )
    if "clock" in v:
        return "the current time" if v["clock"] == "now" else "today's date"
    if "count" in v:
        return f"the number of matching {_words(v['count']['entity'])} records"
    if "sum" in v:
        return f"the total {_words(v['attr'])} of matching {_words(v['sum']['entity'])} records"
    spoken = {"+": "plus", "-": "minus", "*": "times", "/": "divided by"}
    return " ".join(_value_text(p) if isinstance(p, dict) else spoken.get(p, p) for p in v["expr"])


def _step_text(spec: EnvSpec, e: EntitySpec, s: dict[str, Any]) -> str:
    text = _plain_step_text(spec, e, s)
    when = s.get("when")
    return f"{text} when {_as_condition(when['text'])}" if when else text


def _as_condition(rule: str) -> str:
    """A rule ("the order's status must be open", "no line may still be open") as a condition."""
    text = rule[:1].lower() + rule[1:]
    for modal, plain in ((" must not be ", " is not "), (" must be ", " is "), (" may still be ", " is still "),
                         (" may have ", " has "), (" may be ", " is ")):  # fmt: skip
        text = text.replace(modal, plain)
    return text


def _plain_step_text(spec: EnvSpec, e: EntitySpec, s: dict[str, Any]) -> str:
    if s["kind"] == "create":
        return f"creates a {_words(s['entity'])} record"
    if s["kind"] == "each":
        sel = s["select"]
        sets = " and ".join(f"{_words(a)} {_value_text(v)}" for a, v in s["fields"].items())
        states = [f"{_or(w['in'])}" for w in sel["where"].values() if "in" in w]
        still = f" still {' and '.join(states)}" if states else ""
        return f"every {_words(sel['entity'])} of it{still} gets {sets}"
    hops = s["path"].split("->")
    where = " of the ".join(_words(h.removesuffix("_id")) for h in reversed(hops))
    if s["kind"] == "set":
        return f"sets the {where} to {_value_text(s['value'])}"
    verb = "raises" if s["kind"] == "add" else "lowers"
    return f"{verb} the {where} by {_value_text(s['value'])}"


def guarded(spec: EnvSpec, tool: ToolSpec) -> ToolSpec:
    """A generated create or assign that only links a record to live parents (and keeps their counts
    and totals in step); a delete of a child that gives its share of those back."""
    if compound_of(tool) is not None:
        return tool
    if tool.origin == "seed":
        e = spec.entity(tool.entity)
        commanded = _commanded_move(spec, tool, e.status_attribute, _frozen_under(spec, e))
        return commanded or _seed_behaviour(
            tool, guarded(spec, tool.model_copy(update={"origin": "generated"}))
        )
    e = spec.entity(tool.entity)
    if tool.op == "create":
        refs = [
            a for a in e.attributes if a.type == "ref" and a.name in tool.binding.get("fields", {}).values()
        ]
        return _with_compound(
            tool, _guard(spec, e, refs) + _agreement(spec, e, refs), _tally_steps(spec, e, refs, "add"), spec
        )
    if tool.op == "assign":
        refs = [a for a in e.attributes if a.name == tool.binding.get("attr")]
        return _with_compound(tool, _guard(spec, e, refs) + _agreement(spec, e, refs), [], spec)
    if tool.op in ("update", "delete"):
        # a record under an ended parent is frozen; an update states the cross-entity rules it must keep
        written = set(tool.binding.get("fields", {}).values())
        rules = [r for r in _cross_rules(spec, e) if r["reads"] & written] if tool.op == "update" else []
        steps = (
            _tally_steps(spec, e, [a for a in e.attributes if a.type == "ref"], "subtract")
            if tool.op == "delete"
            else []
        )
        return _with_compound(tool, _frozen_under(spec, e) + rules, steps, spec)
    if tool.op == "transition" and _ended(str(tool.binding.get("value"))):
        # a record ends only once nothing under it is still open (the `_and_open_` tools close both)
        return _with_compound(tool, _no_open_children(spec, e), [], spec)
    if tool.op == "transition" and not _ended(str(tool.binding.get("value"))):
        # work on a record moves forward only while what it belongs to is alive
        refs = [a for a in e.attributes if a.type == "ref" and not a.nullable]
        lifecycle = [r for r in _guard(spec, e, refs) if r["kind"] != "compare" or "->" in r["left"]]
        return _with_compound(tool, [r for r in lifecycle if "count" not in str(r.get("right"))], [], spec)
    return tool


def _declared_status(e: EntitySpec) -> AttributeSpec | None:
    """An entity's lifecycle, where the seed declares it (a status the platform made up says nothing
    about what the service refuses)."""
    status = e.status_attribute
    return status if status is not None and (status.source == "seed" or status.declared is not None) else None


def declared_behaviour(spec: EnvSpec, tool: ToolSpec) -> ToolSpec:
    """A seed tool of a service the knowledge base does not know, running what the seed's own structure
    declares, behind its declared interface (name, description and parameters unchanged):

    - a record is linked only to a parent that is not gone for good (`GONE`: a voided envelope takes
      no recipient), or to one in the state the tool's description names ("Approve a *matched*
      invoice");
    - its references agree about what they share (a booked slot is the practitioner's own);
    - a parent's declared `max_<children>` bounds how many it holds, and its `<child>_count` follows;
    - a tool named by a verb whose participle is a lifecycle value of the parent it links to moves that
      parent there, from a value before it (`approveInvoice` leaves the invoice `approved`,
      `assignAsset` the asset `assigned`), unless it may do only part of the work ("in full or in part");
    - a record that sends its parent somewhere moves it there (`transferAsset`'s `to_location_id`);
    - the records a new record lists by id move where its verb or description sends them
      (`_moves_listed`: a payment run schedules the approved invoices it lists).

    Each is what the service would answer with an error or a changed record; none is a rule of a domain
    the seed does not belong to."""
    flagged = _held_steps(spec, tool)
    e = spec.entity(tool.entity)
    commanded = _commanded_move(spec, tool, _declared_status(e), [], flagged)
    if commanded is not None:
        return commanded
    if tool.origin == "seed" and compound_of(tool) is None and tool.op == "transition" and flagged:
        return _behaved(tool, [], flagged, spec)
    if (
        tool.origin != "seed"
        or compound_of(tool) is not None
        or tool.op not in ("create", "assign", "delete")
    ):
        return tool
    written = set(tool.binding.get("fields", {}).values())
    if tool.op == "assign":
        refs = [a for a in e.attributes if a.name == tool.binding.get("attr")]
    else:
        refs = [a for a in e.attributes if a.type == "ref" and (tool.op == "delete" or a.name in written)]
    names = {x.name: x for x in spec.entities}
    requires: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    # the verbs of its name and of its description ("createPaymentRun": "Schedule a payment run ...")
    verbs = dict.fromkeys([snake(tool.name).split("_")[0], *re.findall(r"^[A-Za-z]+", tool.description)[:1]])
    moves = tuple(
        form
        for verb in (v.lower() for v in verbs)
        for form in (
            *naming.TRANSITION_VERBS.get(verb, ()),
            f"{verb}ed",
            f"{verb}d",
            f"{verb.removesuffix('e')}ed",
        )
    )
    partial = re.search(r"\b(in part|partial(ly)?)\b", tool.description, re.IGNORECASE) is not None
    command: dict[str, Any] | None = None
    for a in refs if tool.op != "delete" else ():
        parent = names.get(a.ref or "")
        if parent is None or parent.name == e.name:
            continue
        requires += _capacity(spec, e, a, parent)
        status = _declared_status(parent)
        if status is None:
            continue
        chosen = _command_moves(tool, e, parent, f"{a.name}->{status.name}") if command is None else None
        if chosen is not None:  # `approveTimesheet(decision=reject)` leaves the timesheet rejected
            requires += chosen[0]
            steps += chosen[1]
            command = chosen[2]
            continue
        noun = "|".join(re.escape(_words(n)) for n in {parent.name, a.name.removesuffix("_id")})
        named = [
            v for v in status.enum
            if re.search(rf"\b{re.escape(_words(v))}\s+(?:{noun})\b", tool.description, re.IGNORECASE)
        ]  # fmt: skip
        target = next((m for m in moves if m in status.enum), None) if tool.op == "create" else None
        left = f"{a.name}->{status.name}"
        if named:
            requires.append({"kind": "in", "left": left, "op": "in", "right": named})
        elif target is not None and not partial and status.enum.index(target) > 0:
            before = [v for v in status.enum[: status.enum.index(target)] if not gone_for_good(v)]
            if before:
                requires.append({"kind": "in", "left": left, "op": "in", "right": before})
        else:
            gone = [v for v in status.enum if gone_for_good(v)]
            if gone and len(gone) < len(status.enum):
                requires.append({
                    "kind": "in", "left": left, "op": "not in", "right": gone,
                    "text": f"The {_words(a.name.removesuffix('_id'))} must not be {_or(gone)}",
                })  # fmt: skip
        if target is not None and not partial:
            steps.append({"kind": "set", "path": left, "value": {"const": target}})
    steps += _moves_to(e, refs, names) if tool.op == "create" else []
    if tool.op == "create" and not partial:
        listed_reqs, listed_steps = _moves_listed(e, written, names, tool.description, moves)
        requires += listed_reqs
        steps += listed_steps
    if tool.op != "assign":
        steps += _tally_steps(spec, e, refs, "subtract" if tool.op == "delete" else "add")
    steps += flagged
    if tool.op != "delete":
        requires += _agreement(spec, e, refs)
    return _behaved(tool, requires, steps, spec, command=command)


# parameters whose value says which of a tool's moves to make (`decision: approve | deny`)
COMMAND_PARAMS = ("action", "decision", "verdict", "outcome", "resolution")
# command values that say yes to the move a tool is named for
YES_VERBS = ("approve", "accept", "pass", "confirm", "allow", "grant", "yes")


def _commanded_move(
    spec: EnvSpec,
    tool: ToolSpec,
    status: AttributeSpec | None,
    rules: list[dict[str, Any]],
    steps: Sequence[dict[str, Any]] = (),
) -> ToolSpec | None:
    """A seed's update or transition of one record whose command parameter picks the move
    (`decide_time_off(decision=deny)` leaves the request denied, `decide_expense_report(decision=
    return_for_changes)` the report returned), run as an update with those moves, after `rules`;
    None where the tool has no such parameter for `status`."""
    if tool.origin != "seed" or compound_of(tool) is not None or tool.op not in ("update", "transition"):
        return None
    e = spec.entity(tool.entity)
    if not tool.binding.get("key"):
        return None
    own = (_command_moves(tool, e, e, status.name) if status is not None else None) or _flag_moves(tool, e)
    if own is None:
        return None
    binding = {k: v for k, v in tool.binding.items() if k not in ("attr", "value")}
    plain = tool.model_copy(update={"op": "update", "binding": binding})
    return _behaved(plain, [*rules, *own[0]], [*own[1], *steps], spec, command=own[2])


def _command_moves(
    tool: ToolSpec, e: EntitySpec, owner: EntitySpec, left: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]] | None:
    """A command parameter the tool stores (`decision`, `action`) whose values move `owner`'s declared
    lifecycle at `left` (the record's own status, or its parent's through a reference): (requirements,
    one step per value that moves it, the command). `decision=approve` leaves it approved, `deny`
    denied; `hold` puts an invoice on hold and `release` takes it back. It must be where those moves
    start (or, for a command that undoes one, where that one ends). None where no such parameter is."""
    status = owner.status_attribute
    if status is None:
        return None
    for param, attr in tool.binding.get("fields", {}).items():
        a = e.attribute(attr)
        if snake(param) not in COMMAND_PARAMS or a is None or a.type != "enum":
            continue
        targets = command_targets(a.enum, status.enum)
        # a yes (`approve`) to a tool named for its move (`verify_prescription`) makes that move
        own = command_targets([snake(tool.name).split("_")[0]], status.enum)
        yes = next((v for v in a.enum if v in YES_VERBS and v not in targets), None)
        if yes is not None and own:
            targets[yes] = next(iter(own.values()))
        forward = [t for v, t in targets.items() if v not in UNDO_VERBS]
        if not forward:
            continue
        first = min(status.enum.index(t) for t in forward)
        before = [v for v in status.enum[:first] if not gone_for_good(v) and v not in forward]
        # "Approve, reject or return a *submitted* report": the moves start there alone
        noun = "|".join(re.escape(_words(n)) for n in {owner.name, owner.name.split("_")[-1]})
        before = [
            v for v in before
            if re.search(rf"\b{re.escape(_words(v))}\s+(?:{noun})\b", tool.description, re.IGNORECASE)
        ] or before  # fmt: skip
        ahead = [v for v in targets if v not in UNDO_VERBS]
        back = [v for v in targets if v in UNDO_VERBS]

        # a move starts where its lifecycle does; an undo (`release`) where the move it undoes ends
        requires = (
            [{"kind": "in", "left": left, "op": "in", "right": before, "when": _said(attr, ahead)}]
            if before
            else []
        )
        if back:
            requires.append(
                {"kind": "in", "left": left, "op": "in", "right": forward, "when": _said(attr, back)}
            )
        steps = [
            {"kind": "set", "path": left, "value": {"const": t}, "when": _said(attr, [v])}
            for v, t in targets.items()
        ]
        return requires, steps, {"param": param, "attr": attr, "targets": targets}
    return None


# a command value that clears what another sets, where the word does not say it with `un`
_CLEARS = {"disable": "enable", "deactivate": "activate", "close": "open", "hide": "show"}


def _flag_moves(
    tool: ToolSpec, e: EntitySpec
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]] | None:
    """A command parameter whose values set or clear a yes/no field of the record (requirements, one
    step per value, the command): `lock_door(action=lock|unlock)` leaves the lock's `locked` true or
    false; `mute`/`unmute` a `muted` flag, `enable`/`disable` an `enabled` one. None where no such
    parameter is."""
    flags = [a.name for a in e.attributes if a.type == "bool"]
    for param, attr in tool.binding.get("fields", {}).items():
        a = e.attribute(attr)
        if snake(param) not in COMMAND_PARAMS or a is None or a.type != "enum" or not flags:
            continue
        sets = command_targets(a.enum, flags)
        clears: dict[str, str] = {}
        for v in a.enum:
            undone = _CLEARS.get(str(v)) or (str(v)[2:] if str(v).startswith("un") else None)
            flag = command_targets([undone], flags).get(undone) if undone and v not in sets else None
            if flag is not None:
                clears[str(v)] = flag
        if not sets:
            continue
        steps = [
            {"kind": "set", "path": flag, "value": {"const": on}, "when": _said(attr, [v])}
            for on, moves in ((True, sets), (False, clears))
            for v, flag in moves.items()
        ]
        said = {**sets, **{v: f"not {flag}" for v, flag in clears.items()}}
        return [], steps, {"param": param, "attr": attr, "targets": said}
    return None


def _said(attr: str, values: list[str]) -> dict[str, Any]:
    """The condition that a command attribute holds one of `values`."""
    return {
        "kind": "in",
        "left": attr,
        "op": "in",
        "right": values,
        "text": f"The {_words(attr)} is {_or(values)}",
    }


def _behaved(
    tool: ToolSpec,
    requires: list[dict[str, Any]],
    steps: list[dict[str, Any]],
    spec: EnvSpec,
    *,
    command: dict[str, Any] | None = None,
) -> ToolSpec:
    """The seed's tool, as declared, running these requirements and steps; a command parameter that
    chooses the moves (`_command_moves`) is kept with them, so a request can ask for the move it makes."""
    e = spec.entity(tool.entity)
    for req in requires:
        req.setdefault("text", _requirement_text(e, req)[:1].upper() + _requirement_text(e, req)[1:])
    behaved = _with_compound(tool.model_copy(update={"origin": "generated"}), requires, steps, spec)
    made = _seed_behaviour(tool, behaved)
    found = compound_of(made)
    if found is None or command is None:
        return made
    return made.model_copy(update={"binding": {**made.binding, "compound": {**found, "command": command}}})


def _held_steps(spec: EnvSpec, tool: ToolSpec) -> list[dict[str, Any]]:
    """What writing or ending the record a parent holds (binding `parent`) does to the parent: its
    flag follows (`autopay_enabled`), and a parent whose lifecycle value names the held record
    (an asset `assigned` while its assignment lasts) goes back to where it was before when the record
    ends: returning an asset puts it back in stock."""
    parent = tool.binding.get("parent")
    if not parent:
        return []
    steps: list[dict[str, Any]] = []
    flag = held_flag(spec, tool)
    if flag is not None:
        steps.append(
            {"kind": "set", "path": f"{parent['attr']}->{flag.name}", "value": {"const": tool.op == "create"}}
        )
    lifecycle = held_lifecycle(spec, tool)
    if tool.op == "create" or lifecycle is None:
        return steps
    attr, held, before = lifecycle
    left = f"{parent['attr']}->{attr}"
    steps.append({
        "kind": "set", "path": left, "value": {"const": before},
        "when": {"kind": "in", "left": left, "op": "in", "right": [held],
                 "text": f"The {_words(parent['parent'])} is {_words(held)}"},
    })  # fmt: skip
    return steps


def _moves_listed(
    e: EntitySpec, written: set[str], names: dict[str, EntitySpec], description: str, moves: Sequence[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The records a new record lists by id (`invoice_ids`, `finding_ids`) move where the tool's verb
    or its description sends them, from a value before it: "Schedule a payment run for *approved*
    invoices" leaves them `scheduled` and takes approved ones only; "the findings move to
    in_remediation" says it outright."""
    from agentomnia.seeds.inference import _entity_from_id_param

    requires: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    for a in e.attributes:
        if a.type != "list" or a.name not in written or not a.name.endswith("_ids"):
            continue
        listed = names.get(_entity_from_id_param(a.name[:-1], set(names)) or "")
        status = _declared_status(listed) if listed is not None and listed.name != e.name else None
        if listed is None or status is None:
            continue
        noun = re.escape(_words(plural(listed.name)))
        said = re.search(rf"\b{noun}\s+(?:move|go)e?s?\s+to\s+([a-z_]+)", description, re.IGNORECASE)
        target = (
            said[1] if said and said[1] in status.enum else next((m for m in moves if m in status.enum), None)
        )
        if target is None or status.enum.index(target) == 0:
            continue
        named = [
            v for v in status.enum
            if v != target and re.search(rf"\b{re.escape(_words(v))}\s+{noun}\b", description, re.IGNORECASE)
        ]  # fmt: skip
        before = named or [v for v in status.enum[: status.enum.index(target)] if not gone_for_good(v)]
        where: dict[str, Any] = {listed.key: {"path": a.name}}
        past = [v for v in status.enum if v not in before]
        requires.append({
            "kind": "none",
            "select": {"entity": listed.name, "where": {**where, status.name: {"in": past}}},
            "text": f"Every {_words(listed.name)} it lists must be {_or(before)}",
        })  # fmt: skip
        steps.append(
            {
                "kind": "each",
                "select": {"entity": listed.name, "where": where},
                "fields": {status.name: {"const": target}},
            }
        )
    return requires, steps


def _moves_to(
    e: EntitySpec, refs: Sequence[AttributeSpec], names: dict[str, EntitySpec]
) -> list[dict[str, Any]]:
    """A record that sends its parent somewhere moves it there: a transfer's `to_location_id` becomes
    its asset's `location_id`, a reassignment's `new_owner_id` its account's `owner_id`."""
    out: list[dict[str, Any]] = []
    for dest in refs:
        role, _, rest = dest.name.partition("_")
        if role not in ("to", "new", "destination") or not rest:
            continue
        for a in refs:
            parent = names.get(a.ref or "")
            if a is dest or parent is None or parent.name == e.name:
                continue
            moved = parent.attribute(rest)
            if moved is not None and moved.type == "ref" and moved.ref == dest.ref:
                out.append({"kind": "set", "path": f"{a.name}->{rest}", "value": {"path": dest.name}})
    return out


def _seed_behaviour(seed: ToolSpec, behaved: ToolSpec) -> ToolSpec:
    """The seed's tool, exactly as declared (name, description, parameters), running `behaved`'s
    compound behaviour: a refused call says which rule it broke, as a real service's error does."""
    found = compound_of(behaved)
    if found is None:
        return seed
    return seed.model_copy(update={"binding": {**seed.binding, "compound": {**found, "from": "structure"}}})


def seed_plain(tool: ToolSpec) -> ToolSpec | None:
    """A seed's tool without the behaviour the platform put behind it (None: it has none)."""
    if tool.origin != "seed" or compound_of(tool) is None:
        return None
    return tool.model_copy(update={"binding": {k: v for k, v in tool.binding.items() if k != "compound"}})


def adopt_behaviour(seed: ToolSpec, domain: ToolSpec) -> ToolSpec | None:
    """A seed's tool that does what a domain operation with declared behaviour does (same entity and
    operation, merged into it by name or signature) runs that behaviour behind its own interface,
    where the behaviour fits it: a move to the same lifecycle value, and no field the behaviour
    derives that the seed lets the caller set. None where it does not fit, or nothing to adopt."""
    found, own = compound_of(domain), compound_of(seed)
    if seed.origin != "seed" or found is None or (own is not None and own.get("from") != "structure"):
        return None
    if seed.entity != domain.entity or seed.op != domain.op:
        return None
    if seed.op == "transition" and seed.binding.get("value") != domain.binding.get("value"):
        return None
    derived = {
        st["path"]
        for st in found.get("steps", [])
        if st["kind"] in ("set", "add", "subtract") and "->" not in st["path"]
    }
    if derived & set(seed.binding.get("fields", {}).values()):
        return None
    if seed.op == "create":
        # a new record names only what the seed's call gives it: a requirement read through a
        # reference it cannot give (the sender of a message the seed sends as whoever is signed in)
        # could never hold, and is left out
        given = set(seed.binding.get("fields", {}).values()) | {st["path"] for st in found.get("steps", [])}
        requires = [
            r
            for r in found.get("requires", [])
            if "->" not in str(r.get("left")) or r["left"].split("->")[0] in given
        ]
        found = {**found, "requires": requires}
    return seed.model_copy(update={"binding": {**seed.binding, "compound": {**found, "from": domain.name}}})


def close_with_children(spec: EnvSpec, limit: int = 6) -> list[ToolSpec]:
    """`close_<parent>_and_open_<children>`: a parent's lifecycle ends together with its open
    children (each moves to its own closing value, where its lifecycle allows)."""
    allowed: dict[str, dict[str, tuple[str, ...]]] = {
        r.entity: dict(r.allowed) for r in spec.rules if r.kind == "transition" and r.entity
    }
    out: list[ToolSpec] = []
    for parent in spec.entities:
        status = parent.status_attribute
        if status is None:
            continue
        moves = allowed.get(parent.name)
        closing = next(
            (
                v
                for v in CLOSING
                if v in status.enum and (moves is None or any(v in t for t in moves.values()))
            ),
            None,
        )
        if closing is None:
            continue
        for child in spec.entities:
            cstatus = child.status_attribute
            link = next((a for a in child.attributes if a.type == "ref" and a.ref == parent.name), None)
            if child.name == parent.name or cstatus is None or link is None:
                continue
            cmoves = allowed.get(child.name)
            end = next((v for v in CHILD_CLOSING if v in cstatus.enum), None)
            if end is None:
                continue
            live = [
                v for v in open_values(child) if v != end and (cmoves is None or end in cmoves.get(v, ()))
            ]
            if not live:
                continue
            base = gen_transition(parent, closing)
            verb = (
                base.name.removesuffix("_" + parent.name)
                if base.name.endswith("_" + parent.name)
                else "close"
            )
            name = f"{verb}_{parent.name}_and_open_{child.table}"[:64]
            tool = base.model_copy(
                update={
                    "name": name,
                    "description": f"{_words(verb).capitalize()} a {_words(parent.name)} together with its open {_words(child.table)}: "
                    f"the {_words(parent.name)} becomes {_words(closing)}.",
                }
            )
            step = {
                "kind": "each",
                "select": {
                    "entity": child.name,
                    "where": {link.name: {"path": parent.key}, cstatus.name: {"in": live}},
                },
                "fields": {cstatus.name: {"const": end}},
            }
            out.append(_with_compound(tool, [], [step], spec))
            if len(out) >= limit:
                return out
    return out


def from_behaviour(op: Operation, spec: EnvSpec) -> tuple[ToolSpec | None, Normalization]:
    """A knowledge-base operation with declared behaviour, compiled onto this environment's state. A
    behaviour that names what this state lacks falls back to the plain operation, with the reason."""
    b: Behaviour = op.effects  # type: ignore[assignment]
    tool, note = from_kb_operation(op.name, op.entity, op.kind, op.description, spec)
    e = next((x for x in spec.entities if x.name == op.entity), None)
    if e is None:
        return tool, note
    base: ToolSpec | None = tool
    if b.do == "transition" or b.to is not None:
        status = e.status_attribute
        base = gen_transition(e, b.to, name=op.name) if status is not None and b.to in status.enum else None
    elif b.do == "create" or (b.do is None and tool is not None and tool.op == "create"):
        base = gen_create(e)
    elif b.do == "update":
        base = gen_update(e) or gen_get(e).model_copy(update={"op": "update", "kind": "write"})
    elif b.do == "delete":
        base = gen_delete(e)
    if base is None:
        return tool, note.model_copy(
            update={"reason": note.reason + "; its behaviour does not fit this state"}
        )
    base = base.model_copy(update={"name": op.name[:64], "description": op.description, "origin": "kb"})
    requires = [r.model_dump(exclude_none=True) for r in b.requires]
    steps = [s.model_dump(exclude_none=True, exclude_defaults=True) | {"kind": s.kind} for s in b.steps]
    for step, declared in zip(steps, b.steps, strict=True):
        if declared.when is not None:
            step["when"] = declared.when.model_dump(exclude_none=True)
            step["when"]["text"] = step["when"].get("text") or _requirement_text(e, step["when"])
    # a field the steps derive on the target itself is computed, not given: it is no argument
    derived = {
        st["path"] for st in steps if st["kind"] in ("set", "add", "subtract") and "->" not in st["path"]
    }
    # a command with declared effects ("record that a patient has died") takes the record and the
    # fields its behaviour reads as given, never every field of the record: "record the death and
    # make sure its name is 'Milo'" is no request
    needed = _given_fields(requires, steps, e) - derived if b.do == "update" and steps else None
    given = None if needed is None else needed | (_described_fields(op.description, e) - derived)
    if (derived or given is not None) and base.op in ("create", "update"):
        props = {
            k: v
            for k, v in base.parameters.get("properties", {}).items()
            if base.binding.get("fields", {}).get(k) not in derived
            and (given is None or k == e.key or base.binding.get("fields", {}).get(k) in given)
        }
        fields = {k: v for k, v in base.binding.get("fields", {}).items() if v not in derived and k in props}
        required = [r for r in base.parameters.get("required", []) if r in props]
        if needed is not None:  # what the command reads is what it needs: "record a payment of what amount?"
            required += [k for k in props if k in needed and k not in required]
        params = {**base.parameters, "properties": props, "required": required}
        base = base.model_copy(update={"parameters": params, "binding": {**base.binding, "fields": fields}})
    # the parts of the behaviour that name what this state does not hold are left out, the rest kept
    lacking = [m for part in requires if (m := _missing(spec, e, [part], []))]
    lacking += [m for part in steps if (m := _missing(spec, e, [], [part]))]
    requires = [part for part in requires if not _missing(spec, e, [part], [])]
    steps = [part for part in steps if not _missing(spec, e, [], [part])]
    if lacking and not requires and not steps:
        return tool, note.model_copy(
            update={"reason": note.reason + f"; plain, since the state lacks {lacking[0]}"}
        )
    for req in requires:
        req["text"] = req.get("text") or _requirement_text(e, req)[:1].upper() + _requirement_text(e, req)[1:]
    compiled = _with_compound(base, requires, steps, spec)
    return compiled, Normalization(
        candidate=op.name, origin="kb", fate="kept", tool=compiled.name,
        reason=f"{compiled.op} on {e.name}"
        + (f" with effects on {', '.join(compiled.binding['compound']['touches'])}" if "compound" in compiled.binding else "")
        + (f"; without the parts naming what the state lacks ({', '.join(sorted(set(lacking)))})" if lacking else ""),
    )  # fmt: skip


_GENERIC_WORDS = frozenset(
    {"date", "time", "record", "records", "note", "notes", "flag", "type", "kind", "count"}
)


def _described_fields(description: str, e: EntitySpec) -> set[str]:
    """The target's fields an operation's description names as what it takes: "Counter an offer
    with a new amount" takes `amount`, "Record a delay on a departure" takes `delay_minutes`, "Change
    the body of a sent message" takes `body`."""
    said = set(re.findall(r"[a-z]+", description.lower()))
    said |= {w[:-1] for w in said if w.endswith("s")}
    return {
        a.name
        for a in e.attributes
        if a.name != e.key
        and a.type not in ("ref", "bool", "date", "datetime")  # "a sent message" says no sent_at is given
        and any(len(w) >= 4 and w not in _GENERIC_WORDS and w in said for w in a.name.lower().split("_"))
    }


def _given_fields(requires: list[dict[str, Any]], steps: list[dict[str, Any]], e: EntitySpec) -> set[str]:
    """The target's own fields a behaviour reads as the caller's input: those its steps' conditions
    test ("draft when decision == changes_requested"), those its steps' values take ("add amount to
    the account's balance"), and those its rules hold to a choice or to another field ("decision in
    [approved, changes_requested]", "amount_paid <= total"); never another record's, and never a
    rule against a fixed value ("amount > 0", "approved == true"), which the record already meets."""
    status = e.status_attribute
    tested = [(st.get("when") or {}).get("left") for st in steps] + [
        r.get("left")
        for r in requires
        if (r.get("kind") == "in" and (status is None or r.get("left") != status.name))
        or (isinstance(r.get("right"), dict) and "path" in r["right"])
    ]
    taken = [(st.get("value") or {}).get("path") for st in steps if isinstance(st.get("value"), dict)]
    return {
        name
        for name in (*tested, *taken)
        if isinstance(name, str) and "->" not in name and name != e.key and e.attribute(name) is not None
    }


def _missing(
    spec: EnvSpec, e: EntitySpec, requires: list[dict[str, Any]], steps: list[dict[str, Any]]
) -> str | None:
    """What a behaviour names that this state does not hold (an entity or attribute), if anything."""
    names = {x.name: x for x in spec.entities}

    def path_ok(path: str) -> bool:
        owner: EntitySpec | None = e
        for hop in path.split("->"):
            attr = owner.attribute(hop) if owner is not None else None
            if attr is None:
                return False
            owner = names.get(attr.ref or "") if attr.type == "ref" else None
        return True

    def value_ok(v: Any) -> bool:
        if not isinstance(v, dict):
            return True
        if "path" in v:
            return path_ok(v["path"])
        if "expr" in v:
            return all(value_ok(p) for p in v["expr"][0::2])
        sel = v.get("sum") or v.get("count")
        return (
            sel is None
            or sel_ok(sel)
            and ("sum" not in v or names[sel["entity"]].attribute(v["attr"]) is not None)
        )

    def sel_ok(sel: dict[str, Any]) -> bool:
        other = names.get(sel["entity"])
        return other is not None and all(
            other.attribute(a) is not None and ("in" in w or value_ok(w)) for a, w in sel["where"].items()
        )

    for r in requires:
        if r["kind"] == "none" and not sel_ok(r["select"]):
            return f"what requirement `none: {r['select']['entity']}` selects"
        if r["kind"] != "none" and (not path_ok(r["left"]) or not value_ok(r.get("right"))):
            return f"{r['left']}"
    for s in steps:
        when = s.get("when")
        if when and when["kind"] != "none" and (not path_ok(when["left"]) or not value_ok(when.get("right"))):
            return when["left"]
        if s["kind"] in ("set", "add", "subtract") and (not path_ok(s["path"]) or not value_ok(s["value"])):
            return s["path"]
        if s["kind"] == "create":
            side = names.get(s["entity"])
            if side is None or any(
                side.attribute(a) is None or not value_ok(v) for a, v in s["fields"].items()
            ):
                return f"the {s['entity']} fields"
        if s["kind"] == "each":
            other = names.get(s["select"]["entity"])
            if (
                not sel_ok(s["select"])
                or other is None
                or any(other.attribute(a) is None for a in s["fields"])
            ):
                return f"the {s['select']['entity']} selection"
    return None


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


def mirrors_service(seeds: Sequence[Seed], cfg: ToolsetConfig, *, kb_used: bool) -> bool:
    """Whether the seeds are a service the knowledge base does not know that bring a service's worth
    of tools: its toolset mirrors what they declare and is not embellished."""
    return not kb_used and sum(len(seed.tools) for seed in seeds) >= cfg.min_tools


def mirrors_seed(tools: Iterable[ToolSpec], cfg: ToolsetConfig, *, kb_used: bool) -> bool:
    """Whether a toolset mirrors its seed: a service the knowledge base does not know that brings a
    service's worth of operations, kept as declared, with only the reads a chain needs added."""
    return not kb_used and sum(1 for t in tools if t.origin == "seed") >= cfg.min_tools


def bounded(
    spec: EnvSpec, tools: Sequence[ToolSpec], cfg: ToolsetConfig, *, keep_share: bool = True
) -> tuple[list[ToolSpec], dict[str, str]]:
    """The tools an environment offers out of `tools`, and why each of the others is left out.

    The seed's tools always stay, and so do the reads that writes depend on (every entity's get_ and
    list_) and a way to make each entity's records. The rest fill up to `cfg.max_tools` in priority
    order: tools with domain behaviour across entities first, as many as hold their share of a full
    toolset; the diversified shapes of the first entities (so that every hard shape of a task stays
    represented) and the overviews; the rest of the domain behaviour; the domain's other operations; then the rest. With
    `keep_share`, a plain tool (one that acts on its own entity alone; an overview, the read that
    counts what refers to a record, is a lookup chains need and exempt) is admitted only while tools
    with domain behaviour stay at least `cfg.min_compound_share` of the toolset: an environment is
    its domain's behaviour with the lookups it needs, not a table editor with a few rules on the side.
    The share gives way below `cfg.min_tools`: a small seed's environment takes plain tools rather than
    being refused for having too few. The bound gives way to domain behaviour where the seed's tools and
    every entity's reads and create leave it no room for its share (a warehouse seed with 13 entities
    keeps 37 such tools: 59 tools, 21 with domain behaviour, instead of 56 with 18).
    """
    shaped = [t.name for t in tools if t.origin == "diversified"][:6]
    compound = {t.name for t in tools if is_compound(spec, t)}

    def rank(t: ToolSpec) -> int:
        if t.origin == "seed":
            return 0
        if t.name in compound:
            return 1
        if t.origin in ("kb", "model"):  # the domain's operations, known or proposed by the model
            return 2
        # a delete is an entity's only way to remove a record, an overview its one structured
        # multi-field read
        return 3 if t.op in ("delete", "overview") else 4 if t.origin == "diversified" else 5

    ordered = sorted(tools, key=lambda t: (rank(t), t.kind == "write", t.name))
    keep = {t.name for t in tools if t.origin == "seed"}
    for e in spec.entities:
        # its get and list by their plain names, or the tools those were merged into
        for op, plain in (("get", f"get_{e.name}"), ("list", f"list_{plural(e.name)}")):
            own = [t for t in ordered if t.entity == e.name and t.op == op]
            if own and not any(t.name in keep for t in own):
                keep.add(next((t.name for t in own if t.name == plain), own[0].name))
        creates = [t for t in ordered if t.entity == e.name and t.op == "create"]
        if creates and not any(c.name in keep for c in creates):
            keep.add(creates[0].name)
    share = cfg.min_compound_share if keep_share else 0.0
    # the hard shapes and the overviews (what a count question reads) come right after enough domain
    # behaviour to hold its share of a full toolset
    # (with a margin: a tool verification drops leaves the share short otherwise). Where the seed's tools
    # and every entity's reads and create fill so much of the bound that domain behaviour cannot hold its
    # share inside it, the bound gives way to domain behaviour alone, by as much as that share needs.
    margin = COMPOUND_MARGIN if share else 0
    fixed = len(keep - compound)
    stretched = (
        max(cfg.max_tools, math.ceil(fixed / (1 - share)) + margin) if 0 < share < 1 else cfg.max_tools
    )
    quota = math.ceil(share * cfg.max_tools) + margin - len(keep & compound)
    first = [t for t in ordered if t.name in compound and t.name not in keep][: max(quota, 0)]
    needed = [t for t in ordered if t not in first and (t.name in shaped or t.op == "overview")]
    ordered = first + needed + [t for t in ordered if t not in first and t not in needed]
    left_out: dict[str, str] = {}
    for t in ordered:
        if t.name in keep:
            continue
        if len(keep) >= (stretched if t.name in compound else cfg.max_tools):
            left_out[t.name] = f"over the {cfg.max_tools}-tool bound"
        elif (
            len(keep) >= cfg.min_tools  # below the floor an environment takes plain tools rather than none
            and t.name not in compound
            and t.op != "overview"
            and len(keep & compound) < share * (len(keep) + 1)
        ):
            left_out[t.name] = (
                f"a plain tool: the toolset keeps tools with domain behaviour at {share:.0%} or more"
            )
        else:
            keep.add(t.name)
    return [t for t in tools if t.name in keep], left_out


def with_left_out(
    table: Sequence[Normalization], tools: Sequence[ToolSpec], left_out: dict[str, str]
) -> list[Normalization]:
    """`table` once the tools named in `left_out` are removed, each with its reason: their rows and
    those of the candidates merged into them say so."""
    if not left_out:
        return list(table)
    rows: list[Normalization] = []
    for n in table:
        if n.fate == "kept" and n.tool in left_out:
            continue
        if n.fate == "merged" and n.tool in left_out:
            n = n.model_copy(
                update={"fate": "removed", "reason": f"{n.reason}, left out in turn: {left_out[n.tool]}"}
            )
        rows.append(n)
    return rows + [
        Normalization(candidate=t.name, origin=t.origin, fate="removed", reason=left_out[t.name])
        for t in tools
        if t.name in left_out
    ]


def synthesize_toolset(
    spec: EnvSpec,
    seeds: Sequence[Seed],
    tool_entities: dict[str, str],
    cfg: ToolsetConfig | None = None,
    *,
    kb_used: bool = True,
    proposed: Sequence[ProposedOperation] = (),
) -> Toolset:
    """`tool_entities` is the state-space stage's decision of which entity each seed tool acts on.
    Every seed tool is kept; the tool bound and diversification apply only to the tools added here.
    `proposed`: operations the model proposed (llm mode), offered after the knowledge base's and
    judged by the same refinement."""
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
        # a domain's named read of one record ("get_account_balance") stands beside the plain get of
        # its entity, which the platform adds: an agent looking up an account's status calls
        # get_service_account, not that (a named list keeps the plain list's filters, so it serves)
        beside = (
            sig in signatures
            and tool.origin == "generated"
            and tool.op == "get"
            and chosen[signatures[sig]].origin == "kb"
        )
        if tool.name in chosen or (sig in signatures and tool.origin != "seed" and not beside):
            into = chosen.get(tool.name) or chosen[signatures[sig]]
            adopted = adopt_behaviour(into, tool) if not seed_led_spec else None
            if adopted is not None:
                chosen[into.name] = adopted
            table.append(
                Normalization(
                    candidate=tool.name,
                    origin=tool.origin,
                    fate="merged",
                    tool=into.name,
                    reason=f"same operation as {into.name}"
                    + ("; its domain behaviour runs behind the seed's tool" if adopted is not None else ""),
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

    # a seed of a service the knowledge base does not know, that brings a service's worth of tools,
    # is mirrored as declared (see below); within a known domain its tools run the domain's behaviour
    seed_led_spec = mirrors_service(seeds, cfg, kb_used=kb_used)
    for seed in seeds:
        for seed_tool in seed.tools:
            made, note = from_seed_tool(seed_tool, spec, tool_entities)
            if made is not None:  # a known domain's rules, else what the seed's own structure declares
                made = guarded(spec, made) if kb_used else declared_behaviour(spec, made)
            offer(made, note)
    kb = load_knowledge().get(spec.coordinate.taxonomy_id) if kb_used else None
    for op in kb.operations if kb else ():
        if op.effects is not None:
            offer(*from_behaviour(op, spec))
        else:
            tool, note = from_kb_operation(op.name, op.entity, op.kind, op.description, spec)
            offer(guarded(spec, tool) if tool is not None else None, note)
    for p in proposed:
        tool, note = from_kb_operation(p.name, p.entity, p.kind, p.description, spec, origin="model")
        offer(guarded(spec, tool) if tool is not None else None, note)

    # A seed of a service the knowledge base does not know (a real API outside its domains) that
    # brings a service's worth of operations is mirrored, not embellished: the platform adds only the
    # reads a chain needs where the seed has none (a get or a list of an entity), so an agent trained
    # here meets the real service's tools. A seed within a known domain, or a small one, is filled out
    # with the domain's coverage and the diversified shapes.
    seed_led = mirrors_seed(chosen.values(), cfg, kb_used=kb_used)
    if seed_led:
        for e in spec.entities:
            ops = {t.op for t in chosen.values() if t.entity == e.name}
            if not ops & {"get", "lookup"}:
                offer(gen_get(e), None)
            if not ops & {"list", "search", "range"}:
                offer(gen_list(e), None)
    else:
        _coverage(spec, lambda tool, note: offer(guarded(spec, tool) if tool is not None else None, note))
        for tool in close_with_children(spec):
            offer(tool, None)

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

    kept_tools, left_out = bounded(spec, list(chosen.values()), cfg, keep_share=not seed_led)
    return Toolset(
        tools=sorted(kept_tools, key=lambda t: t.name),
        table=with_left_out(table, list(chosen.values()), left_out),
    )
