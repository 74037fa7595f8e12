"""State-space construction: an EnvSpec's entities, relations and rules from a candidate (paper §4.2.2).

High recall, as the paper asks: the level-2 domain's knowledge base contributes its commonly used
entities and attributes; the seed contributes what its schemas imply — `<x>_id` parameters become
entities and references, properties become typed attributes, enums stay enums. Seed entities that
match a knowledge-base entity are merged into it; role names (assignee, approver, ...) become
references to the domain's person entity rather than entities of their own; components that carry
no state beyond a key are removed as implausible. Every decision is kept in a report.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence, Set
from typing import Any

from pydantic import BaseModel, Field

from agentomnia.envs import naming
from agentomnia.envs.naming import class_name, id_prefix, plural, snake
from agentomnia.envs.resources import http_resource
from agentomnia.envs.semantic import has_proper_name
from agentomnia.envs.spec import AttributeSpec, EntitySpec, EnvSpec, SpecInvalid, spec_problems
from agentomnia.seeds.inference import (
    NOT_ENTITIES,
    EnvCandidate,
    _entity_from_id_param,
    seed_scope,
    tool_entity,
)
from agentomnia.seeds.models import Seed, SeedTool
from agentomnia.seeds.openapi import inline_local_refs
from agentomnia.taxonomy import Domain
from agentomnia.taxonomy.knowledge import DomainKnowledge, Entity, Relation, Rule

PERSON_ENTITIES = ("user", "employee", "staff", "member", "customer", "person", "agent", "account", "contact")
ROLE_WORDS = frozenset(
    [
        "assignee",
        "approver",
        "reviewer",
        "author",
        "owner",
        "requester",
        "reporter",
        "creator",
        "inspector",
        "assessor",
        "evaluator",
        "auditor",
        "counter",
        "responder",
        "sender",
        "recipient",
        "manager",
        "supervisor",
        "editor",
        "interviewer",
        "dispatcher",
        "operator",
        "signer",
    ]
)
FILTER_PARAMS = frozenset(
    [
        "limit",
        "offset",
        "page",
        "page_size",
        "per_page",
        "cursor",
        "sort",
        "sort_by",
        "order",
        "order_by",
        "query",
        "q",
        "search",
        "keyword",
        "fields",
        "expand",
        "include",
        "format",
        "from_date",
        "to_date",
        "start_date",
        "end_date",
        "since",
        "until",
        "dry_run",
    ]
)


class StateSpaceReport(BaseModel):
    kb_entities: int = 0
    # How much of the seed's own vocabulary the knowledge-base domain covers (share of the entities its
    # tools act on that the domain knows), and whether the domain's entities were used at all: a poor
    # fit builds from the seed alone rather than borrowing a wrong domain's records.
    domain_fit: float | None = None
    kb_used: bool = True
    seed_entities_added: list[str] = Field(default_factory=list)
    seed_entities_merged: list[str] = Field(default_factory=list)
    roles_mapped: dict[str, str] = Field(default_factory=dict)
    aliases: dict[str, str] = Field(default_factory=dict)  # a seed's short entity name -> the domain's
    tool_entities: dict[str, str] = Field(default_factory=dict)  # seed tool -> the entity it acts on
    removed: dict[str, str] = Field(default_factory=dict)
    seed_attributes_added: int = 0
    # the domain's attributes that gave way to a seed's of the same fact ("patient.birth_date": why)
    attributes_merged: dict[str, str] = Field(default_factory=dict)
    # llm mode: attributes the model added ("entity.name"), and those it proposed that were refused, with why
    model_attributes: list[str] = Field(default_factory=list)
    model_refused: dict[str, str] = Field(default_factory=dict)


def schema_type(schema: Any) -> tuple[str | None, bool]:
    """(the JSON type a schema holds, whether null is allowed): `type` lists, `anyOf`/`oneOf` with a
    null branch and OpenAPI 3.0's `nullable` all count."""
    if not isinstance(schema, dict):
        return None, False
    nullable = bool(schema.get("nullable"))
    typ = schema.get("type")
    if isinstance(typ, list):
        nullable = nullable or "null" in typ
        typ = next((t for t in typ if t != "null"), None)
    if typ is None:
        for branch in schema.get("anyOf") or schema.get("oneOf") or ():
            t, n = schema_type(branch)
            if t == "null" or (t is None and n):
                nullable = True
            elif t is not None and typ is None:
                typ = t
                nullable = nullable or n
    if typ is None and isinstance(schema.get("enum"), list):
        typ = "string" if all(isinstance(v, str) for v in schema["enum"]) else None
    return typ, nullable


def declared_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The seed's schema for a value, without its description (kept on the attribute)."""
    return {k: v for k, v in schema.items() if k not in ("description", "title", "example", "examples")}


def attribute_from_schema(name: str, schema: dict[str, Any], known_entities: set[str]) -> AttributeSpec:
    """A typed attribute from a JSON-schema property; `<x>_id` names a reference when x is an entity.
    The property's own schema is kept as the attribute's `declared` schema."""
    desc = str(schema.get("description", ""))[:200]
    declared = declared_schema(schema)
    ref = _entity_from_id_param(name, known_entities)
    if ref and ref in known_entities and name.endswith("id"):
        return AttributeSpec(name=name, type="ref", ref=ref, nullable=True, description=desc, source="seed",
                             declared=declared)  # fmt: skip
    typ, _nullable = schema_type(schema)
    enum = schema.get("enum")
    if isinstance(enum, list) and all(isinstance(v, str) for v in enum) and len(set(enum)) >= 2:
        values = tuple(dict.fromkeys(enum))  # the seed's own spelling: its tools send these values
        return AttributeSpec(
            name=name, type="enum", enum=values, default=values[0], description=desc, source="seed",
            declared=declared,
        )  # fmt: skip
    fmt = schema.get("format", "")
    if typ == "string":
        t = "datetime" if fmt == "date-time" else "date" if fmt == "date" else "str"
    elif typ == "integer":
        t = "int"
    elif typ == "number":
        t = (
            "money"
            if re.search(r"(amount|price|cost|fee|total|balance|salary|budget|value|paid|refund)", name)
            else "float"
        )
    elif typ == "boolean":
        t = "bool"
    elif typ == "array":
        t = "list"
    elif typ == "object":
        t = "object"
    else:
        t = "str"
    return AttributeSpec(name=name, type=t, nullable=True, description=desc, source="seed", declared=declared)  # type: ignore[arg-type]


MIN_DOMAIN_FIT = 0.2


def _key_attribute(name: str, schema: dict[str, Any] | None) -> AttributeSpec:
    """An entity's id attribute, typed as the seed declares it (an integer id stays an integer)."""
    if schema is None:
        return AttributeSpec(name=name, type="str", source="seed")
    typ, _ = schema_type(schema)
    return AttributeSpec(name=name, type="int" if typ == "integer" else "str", source="seed",
                         declared=declared_schema(schema))  # fmt: skip


def _wrapped_body(tool: SeedTool, param: str) -> bool:
    """A request body that is not an object (a list of records, a raw value) arrives as one `body`
    parameter, and a body field renamed around a parameter as `body_<name>`: neither is an attribute."""
    if tool.locations.get(param) != "body":
        return False
    return param == "body" or (
        param.startswith("body_") and param[5:] in tool.input_schema.get("properties", {})
    )


def _mcp_key_param(props: dict[str, Any], entity: str) -> str | None:
    """The parameter of a tool without a path that names the record it acts on."""
    for p in props:
        if snake(p) in (f"{entity}_id", "id"):
            return p
    return None


def _in_scope(entities: Sequence[Entity], scope: Sequence[str]) -> tuple[list[Entity], set[str]]:
    """The knowledge base's entities a composed seed's scope keeps, and the names it leaves out.

    A slice of a domain (say, the bookings desk without the customer records) still carries the
    references into what it leaves out, as external ids (`_kb_entity`). No scope keeps them all."""
    names = set(scope)
    if not names:
        return list(entities), set()
    return [e for e in entities if e.name in names], {e.name for e in entities if e.name not in names}


def _kb_entity(e: Entity, external: Set[str] = frozenset()) -> list[AttributeSpec]:
    """An entity's attributes; a reference to an entity the environment leaves out (`external`)
    becomes a plain id string of another system."""
    out = []
    for a in e.attributes:
        if a.type == "ref" and a.ref in external:
            out.append(AttributeSpec(name=a.name, type="str", nullable=True, source="kb"))
        else:
            out.append(
                AttributeSpec(
                    name=a.name,
                    type=a.type,
                    enum=a.enum,
                    ref=a.ref,
                    nullable=a.nullable,
                    default=a.default,
                    source="kb",
                )
            )
    return out


# Fields of a list answer's envelope, not of the records it lists (`{"items": [...], "next_cursor": ...}`)
_ENVELOPE = re.compile(
    r"^(next_?cursor|cursor|next|next_?page(_?token)?|page(_?token)?|page_?size|per_?page|total(_?count)?"
    r"|count|has_?more|more|offset|limit|links?)$",
    re.IGNORECASE,
)


def _object_properties(schema: dict[str, Any] | None) -> dict[str, Any]:
    """The properties of the records a tool's output describes: an array's items, and inside a list
    answer's envelope (one array of records beside paging fields) the records, not the envelope."""
    if not isinstance(schema, dict):
        return {}
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        schema = schema["items"]
    props = schema.get("properties") if isinstance(schema, dict) else None
    if isinstance(props, dict):
        arrays = [k for k, v in props.items() if isinstance(v, dict) and v.get("type") == "array"]
        if len(arrays) == 1 and all(k == arrays[0] or _ENVELOPE.match(k) for k in props):
            return _object_properties(props[arrays[0]])
    return props if isinstance(props, dict) else {}


def build_state_space(
    candidate: EnvCandidate, seeds: Sequence[Seed], domain: Domain
) -> tuple[EnvSpec, StateSpaceReport]:
    """The entities, relations and rules of one environment (tools are added by the toolset stage)."""
    report = StateSpaceReport()
    kb = domain.knowledge
    tools: list[SeedTool] = [t for s in seeds for t in s.tools]
    resources = {t.name: r for t in tools if (r := http_resource(t)) is not None}
    if kb is not None and tools:
        kb_names = {e.name for e in kb.entities}
        seed_entities = {
            name
            for t in tools
            if (name := resources[t.name].entity if t.name in resources else tool_entity(t, kb_names))
        }
        report.domain_fit = round(len(seed_entities & kb_names) / max(1, len(seed_entities)), 3)
        if report.domain_fit < MIN_DOMAIN_FIT and len(seed_entities) >= 2:
            kb, report.kb_used = None, False
    attrs: dict[str, dict[str, AttributeSpec]] = {}
    seed_orders: dict[tuple[str, str], tuple[str, ...]] = {}  # a seed enum beside the domain's, in its order
    meta: dict[str, dict[str, str]] = {}
    if kb is not None:
        report.kb_entities = len(kb.entities)
        scoped, external = _in_scope(kb.entities, [n for s in seeds for n in seed_scope(s)])
        for e in scoped:
            attrs[e.name] = {a.name: a for a in _kb_entity(e, external)}
            meta[e.name] = {"description": e.description, "key": e.key, "source": "kb"}
    person = next((p for p in PERSON_ENTITIES if p in attrs), None)

    known = set(attrs) | {r.entity for r in resources.values()}
    # entities named by id parameters and by tools, resolved against what the domain already knows
    for tool in tools:
        for pname in tool.input_schema.get("properties") or {}:
            ent = _entity_from_id_param(pname, known)
            if ent and ent not in NOT_ENTITIES:
                known.add(ent)
        ent = tool_entity(tool, known)
        if ent:
            known.add(ent)

    def resolve(name: str) -> str:
        """Roles (an approver, whoever something is assigned_to) are people, not entities of their own;
        a seed's short name for one of the domain's entities (a `session` where the domain keeps
        `charging_session`, a `reservation` beside `charger_reservation`) is that entity."""
        if name in attrs:
            return name
        longer = [k for k in attrs if meta[k]["source"] != "seed" and k.endswith("_" + name)]
        if len(longer) == 1:
            report.aliases[name] = longer[0]
            return longer[0]
        parts = name.split("_")
        for joint in ("by", "to", "for"):
            if joint in parts[:-1]:  # referred_by_employee is an employee
                return resolve("_".join(parts[parts.index(joint) + 1 :]))
        if name in ROLE_WORDS or parts[-1] in ROLE_WORDS or name.endswith(("_by", "_to")):
            report.roles_mapped[name] = person or "user"
            return person or "user"
        return name

    # the parameters that carry an entity's id, with the schema the seed declares for them
    key_params: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    parents: dict[str, tuple[str, str, dict[str, Any]]] = {}  # tool -> (parent entity, param, schema)

    def ensure(entity: str, source: str) -> None:
        if entity not in attrs:
            declared = key_params.get(entity, [])
            key = (
                snake(declared[0][0])
                if declared and snake(declared[0][0]) not in ("id", "key")
                else f"{entity}_id"
            )
            attrs[entity] = {key: _key_attribute(key, declared[0][1] if declared else None)}
            meta[entity] = {
                "description": f"{naming.article(entity.replace('_', ' ')).capitalize()} as the seed's tools use it.",
                "key": key,
                "source": source,
            }
            report.seed_entities_added.append(entity)
        elif meta[entity]["source"] == "kb" and source == "seed":
            meta[entity]["source"] = "merged"
            report.seed_entities_merged.append(entity)
            declared = key_params.get(entity, [])
            if declared:  # the seed's id format wins over the knowledge base's
                key = meta[entity]["key"]
                attrs[entity][key] = _key_attribute(key, declared[0][1])

    acting: dict[str, str] = {}
    for tool in tools:
        res = resources.get(tool.name)
        raw = res.entity if res is not None else tool_entity(tool, known)
        if not raw:
            continue
        entity = resolve(raw)
        acting[tool.name] = entity
        props = dict(tool.input_schema.get("properties") or {})
        key_param = (  # a seed's `application_id` names the domain's visa application it resolves to
            res.key_param if res is not None else _mcp_key_param(props, entity) or _mcp_key_param(props, raw)
        )
        if key_param is not None and isinstance(props.get(key_param), dict):
            key_params.setdefault(entity, []).append((key_param, props[key_param]))
        if res is not None and res.parent is not None and isinstance(props.get(res.parent[1]), dict):
            parent = resolve(res.parent[0])
            parents[tool.name] = (parent, res.parent[1], props[res.parent[1]])
            key_params.setdefault(parent, []).append((res.parent[1], props[res.parent[1]]))

    for tool in tools:
        if tool.name not in acting:
            continue
        entity = acting[tool.name]
        ensure(entity, "seed")
        report.tool_entities[tool.name] = entity
        key_names = {"id", meta[entity]["key"], *(snake(p) for p, _ in key_params.get(entity, []))}
        if tool.name in parents:
            parent, pparam, pschema = parents[tool.name]
            ensure(parent, "seed")
            ref_name = snake(pparam) if snake(pparam) != meta[entity]["key"] else f"{parent}_id"
            if ref_name not in attrs[entity]:
                attrs[entity][ref_name] = AttributeSpec(name=ref_name, type="ref", ref=parent, nullable=True,
                                                        source="seed", declared=declared_schema(pschema))  # fmt: skip
            key_names.add(snake(pparam))
        props = {
            p: inline_local_refs(v, tool.input_schema)
            for p, v in (tool.input_schema.get("properties") or {}).items()
            if not _wrapped_body(tool, p)
        }
        is_write = not (tool.read_only or (tool.method or "").upper() in ("GET", "HEAD"))
        # a write tool's parameters are the entity's attributes; a read tool's output describes it (a
        # write's answer is often a status envelope, not the record); a property lifted out of either
        # brings what its `$ref`s name along
        sources = [props] if is_write else [_object_properties(inline_local_refs(tool.output_schema))]
        for source_props in sources:
            for pname, pschema in source_props.items():
                pname = snake(pname)
                if pname in FILTER_PARAMS or pname in key_names or not isinstance(pschema, dict):
                    continue
                ref = _entity_from_id_param(pname, set(attrs) | known)
                if (
                    ref and pname.endswith("_id") and resolve(ref) != entity
                ):  # its own id names another system
                    target = resolve(ref)
                    ensure(target, "seed")
                    new = AttributeSpec(name=pname, type="ref", ref=target, nullable=True, source="seed",
                                        declared=declared_schema(pschema))  # fmt: skip
                else:
                    new = attribute_from_schema(pname, pschema, set())
                current = attrs[entity].get(pname)
                if current is None:
                    attrs[entity][pname] = new
                    report.seed_attributes_added += 1
                elif new.type == "enum" and current.type == "enum" and not set(new.enum) <= set(current.enum):
                    # both vocabularies stay legal: the knowledge base's and the one the seed's tools send
                    merged = tuple(dict.fromkeys((*current.enum, *new.enum)))
                    declared = current.declared
                    if declared is not None and isinstance(declared.get("enum"), list):
                        declared = {**declared, "enum": list(merged)}  # two tools, two reasons: both hold
                    attrs[entity][pname] = current.model_copy(update={"enum": merged, "declared": declared})
                    seed_orders[(entity, pname)] = new.enum
                elif new.type == "enum" and current.type in ("str", "text"):
                    attrs[entity][pname] = new.model_copy(update={"nullable": current.nullable})

    # a fact the seed declares under its own name (`born_on`) is not kept twice: the domain's attribute
    # for it (`birth_date`) gives way to the seed's
    # (entity, domain name) -> the seed's name, where a rule about the one holds for the other
    renamed: dict[tuple[str, str], str] = {}
    # an attribute the domain's operations read or write stays (its operations would be lost with it);
    # the state ties its value and the seed's together instead (`state._tie_same_facts`)
    operated = _operated_names(kb) if kb else set()
    for entity, table in attrs.items():
        seeded = [a for a in table.values() if a.source == "seed"]
        for a in [a for a in table.values() if a.source == "kb"]:
            twin = next(
                (
                    n
                    for n in seeded
                    if naming.same_fact(a.name, n.name)
                    and naming.fact_kind(a.type) == naming.fact_kind(n.type)
                ),
                None,
            )
            if twin is None or a.name in operated:
                continue
            if a.name != meta[entity]["key"]:
                del table[a.name]
                report.attributes_merged[f"{entity}.{a.name}"] = (
                    f"the seed's {twin.name} records the same fact"
                )
                if naming.same_unit(a.name, twin.name):
                    renamed[(entity, a.name)] = twin.name

    # a reference the seed declares in a format (a UUID) tells the format of its target's ids
    for table in list(attrs.values()):
        for a in list(table.values()):
            if a.type != "ref" or not a.declared or a.ref not in attrs:
                continue
            key = attrs[a.ref][meta[a.ref]["key"]]
            if key.declared is None and any(k in a.declared for k in ("format", "pattern", "type")):
                attrs[a.ref][key.name] = _key_attribute(key.name, a.declared)

    # lifecycle moves the seed's verbs imply (cancel_reservation => a reservation can be cancelled)
    implied: list[tuple[str, str, str]] = []
    for tool in tools:
        acted = report.tool_entities.get(tool.name)
        words = snake(tool.name).split("_")
        verb = next((v for v in ("_".join(words[:2]), words[0]) if naming.TRANSITION_VERBS.get(v)), None)
        if acted is None or verb is None or acted not in attrs:
            continue
        target = naming.TRANSITION_VERBS[verb][0]
        table = attrs[acted]
        status = next(
            (a for a in table.values() if a.type == "enum" and a.name in ("status", "state", "stage")), None
        )
        if status is None and getattr(table.get(target), "type", None) == "bool":
            continue  # the seed keeps that state as a yes/no field of its own (a lock's `locked`)
        if status is None:
            start = "inactive" if target == "active" else "active"  # a scene is activated from inactive
            table["status"] = AttributeSpec(
                name="status", type="enum", enum=(start, target), default=start, source="derived"
            )
        elif target not in status.enum and not any(t in status.enum for t in naming.TRANSITION_VERBS[verb]):
            table[status.name] = status.model_copy(update={"enum": (*status.enum, target)})
            implied.append((acted, status.name, target))
        else:
            # a stage the seed names (its `final`) that the domain's lifecycle never moves into is
            # reached the way the seed's verb says (finalizeEvaluation), from every non-terminal stage
            named = next(t for t in (target, *naming.TRANSITION_VERBS[verb]) if t in status.enum)
            reached = any(
                named in moves
                for r in (kb.rules if kb else ())
                if r.kind == "transition" and r.entity == acted and r.attr == status.name
                for moves in r.allowed.values()
            )
            if not reached:
                implied.append((acted, status.name, named))

    # implausible components: a seed-only entity with nothing but its key that no tool acts on
    acted_on = set(report.tool_entities.values())
    for name in [
        n for n, a in attrs.items() if meta[n]["source"] == "seed" and len(a) <= 1 and n not in acted_on
    ]:
        referenced = any(a.ref == name for other in attrs.values() for a in other.values())
        if not referenced:
            report.removed[name] = "carries no state beyond its key"
            del attrs[name]
    # a label helps descriptions and lookups, where the records have a proper name to give: people,
    # organisations and places do; a visit, a hold or a scan does not, and a made-up title for one
    # ("Highland Heritage Visit") reads as filler, so those are described by the fields they hold,
    # unless they hold none (a bare `meter` that readings point at still needs a way to be named)
    for name, table in attrs.items():
        own = [a for a in table.values() if a.name != meta[name]["key"] and a.type != "ref"]
        if (
            meta[name]["source"] == "seed"
            and not any(a.type == "str" for a in own)
            and (has_proper_name(name) or not own)
        ):
            table["name"] = AttributeSpec(name="name", type="str", nullable=True, source="derived")

    taken: set[str] = set()
    entities = tuple(
        EntitySpec(
            name=name,
            table=plural(name),
            description=meta[name]["description"],
            key=meta[name]["key"],
            attributes=tuple(attrs[name].values()),
            id_prefix=id_prefix(name, taken),
            source=meta[name]["source"],  # type: ignore[arg-type]
        )
        for name in attrs
    )
    by_name = {e.name: e for e in entities}
    relations: list[Relation] = []
    for spec_entity in entities:
        for a in spec_entity.attributes:
            if a.type == "ref" and a.ref in by_name:
                relations.append(Relation(source=spec_entity.name, attr=a.name, target=a.ref))
    rules = [
        _with_seed_stages(_with_implied_moves(r, implied), seed_orders)
        for r in (_renamed_rule(r, renamed) for r in (kb.rules if kb else ()))
        if _rule_fits(r, by_name)
    ]
    spec = EnvSpec(
        round=candidate.round,
        name=candidate.name,
        class_name=class_name(candidate.name),
        description=f"{domain.l2} ({domain.path}): {candidate.summary}. " + (kb.description if kb else ""),
        coordinate=candidate.coordinate,
        candidate_id=candidate.id,
        seed_ids=candidate.seed_ids,
        entities=entities,
        relations=tuple(relations),
        rules=tuple(rules),
    )
    problems = spec_problems(spec)
    if problems:
        raise SpecInvalid("; ".join(problems))
    return spec, report


def _with_implied_moves(rule: Rule, implied: list[tuple[str, str, str]]) -> Rule:
    """A lifecycle the seed extends (a new terminal stage) is reachable from every non-terminal stage."""
    targets = [t for e, a, t in implied if rule.kind == "transition" and rule.entity == e and rule.attr == a]
    if not targets:
        return rule
    allowed = {k: tuple(dict.fromkeys((*v, *targets))) if v else v for k, v in rule.allowed.items()}
    return rule.model_copy(update={"allowed": allowed})


def _with_seed_stages(rule: Rule, seed_orders: Mapping[tuple[str, str], tuple[str, ...]]) -> Rule:
    """A lifecycle with the stages the seed's own tools move records through: a seed whose
    applications go applied, recruiter_screen, hiring_manager_screen, onsite, offer where the domain
    knows applied, screen, interview, offer.

    A stage the domain does not know moves on to the next of the seed's stages, in the seed's order,
    and the stage before it may move to it; an end the seed adds (rejected, withdrawn) is no step
    of that order but is reached from every stage that moves on, as are the ends the domain lets
    every stage go to. A lifecycle the seed adds nothing to is kept as it is."""
    order = seed_orders.get((rule.entity or "", rule.attr or "")) if rule.kind == "transition" else None
    if not order:
        return rule
    allowed = {k: list(v) for k, v in rule.allowed.items()}
    moving = [v for v in allowed.values() if v]
    ends = [t for t in moving[0] if all(t in v for v in moving)] if moving else []
    known = set(allowed) | {t for v in allowed.values() for t in v}
    new = [s for s in order if s not in known]
    if not new:
        return rule
    ending = [s for s in new if s in naming.ENDING_STATUSES]
    chain = [s for s in order if s not in ends and s not in naming.ENDING_STATUSES]
    for stage, following in zip(chain, chain[1:], strict=False):
        if stage in new:
            allowed[stage] = list(dict.fromkeys((following, *ends)))
        if following in new and following not in allowed.setdefault(stage, list(ends)):
            allowed[stage].append(following)
    for moves in allowed.values():
        if moves:
            moves.extend(s for s in ending if s not in moves)
    return rule.model_copy(update={"allowed": {k: tuple(v) for k, v in allowed.items()}})


def _operated_names(kb: DomainKnowledge) -> set[str]:
    """Every name the domain's operations read or write: the identifiers in their effects' paths,
    values and selectors, and the fields they create (their prose is left out)."""
    names: set[str] = set()

    def walk(value: Any, fields: bool = False) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if fields:
                    names.add(str(k))
                if k not in ("text", "description"):
                    walk(v, fields=k == "fields")
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)
        elif isinstance(value, str):
            names.update(re.findall(r"[a-z_][a-z0-9_]*", value))

    walk([o.effects.model_dump(mode="json") for o in kb.operations if o.effects is not None])
    return names


def _renamed_rule(rule: Rule, renamed: Mapping[tuple[str, str], str]) -> Rule:
    """`rule` about the seed's attribute where the domain's one it names gave way to it (`ends_at >
    starts_at` becomes `end_at > start_at`); unchanged when it names none."""
    if not renamed:
        return rule

    def side(value: str | float | None) -> str | float | None:
        if not isinstance(value, str):
            return value
        match = re.match(r"^([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)(.*)$", value)
        if match is None or (match[1], match[2]) not in renamed:
            return value
        return f"{match[1]}.{renamed[(match[1], match[2])]}{match[3]}"

    entity = rule.entity or ""
    update: dict[str, Any] = {
        "left": side(rule.left),
        "right": side(rule.right),
        "attrs": tuple(renamed.get((entity, a), a) for a in rule.attrs),
    }
    if rule.attr is not None:
        update["attr"] = renamed.get((entity, rule.attr), rule.attr)
    changed = rule.model_copy(update=update)
    return rule if changed == rule else changed


def _rule_fits(rule: Rule, entities: dict[str, EntitySpec]) -> bool:
    try:
        refs = rule.attribute_refs()
    except ValueError:
        return False
    for ent, attr in refs:
        if ent.startswith("->"):
            owner, _, ref_attr = ent[2:].partition(".")
            ref = entities[owner].attribute(ref_attr) if owner in entities else None
            target = entities.get(ref.ref) if ref is not None and ref.ref else None
            if target is None or target.attribute(attr) is None:
                return False
        elif ent not in entities or entities[ent].attribute(attr) is None:
            return False
    return True
