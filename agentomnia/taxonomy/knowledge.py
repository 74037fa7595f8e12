"""Domain knowledge base: what each level-2 domain's stateful world is made of.

Offline proposers build environments from this without a model: entities with typed
attributes, keys and references, relations, business rules in a small checkable form, and the
typical operations. The data lives in YAML files under `data/knowledge/`, one list of domain
entries per file, keyed by the OmniaBench taxonomy id.

Attributes are written compactly, one mapping per attribute:

    - name: str                      # string
    - notes: text?                   # '?' = nullable
    - seats: int = 2                 # default value after '='
    - price: money                   # decimal amount in the entity's currency
    - rating: float
    - active: bool = true
    - due_on: date                   # ISO date
    - created_at: datetime           # ISO datetime
    - status: enum[draft|submitted|approved] = draft
    - customer_id: ref(customer)     # reference to another entity's key

Rules take one of five checkable forms (see `Rule`):
    range       entity.attr within [min, max]
    compare     left op right, where a side is `entity.attr`, `entity.ref_attr->attr` or a number
    precondition an operation needs `entity.attr` in `values`
    transition  allowed moves of an enum attribute, {from: [to, ...]}
    unique      a combination of attributes is unique across an entity's records

A write operation may declare `effects` (see `Behaviour`): what it does across entities, compiled
into a tool by one compiler for every domain:

    effects:
      to: closed_fraud                         # its own lifecycle move (or `do: create|update|delete`)
      requires:                                # preconditions, read on the target as the call leaves it
        - "customer_id->kyc_verified == true"
        - "loss_amount <= $customer_id->credit_limit"
        - none: {entity: alert, where: {case_id: $case_id, status: [new, triaged]}}
      steps:                                   # effects, in order, all or nothing
        - {set: customer_id->risk_level, to: blocked}
        - {add: account_id->cash_balance, by: "$amount"}
        - {create: watchlist_entry, with: {customer_id: $customer_id, reason: confirmed_fraud, listed_on: $today}}
        - {each: {entity: transaction, where: {customer_id: $customer_id, status: [held]}}, set: {status: reversed}}
        - {subtract: product_id->stock, by: "$quantity", when: "kind == sale"}

Paths run from the target record (`field`, `ref->field`, `ref->ref->field`); a value is a literal,
`$path`, `$now`/`$today`, arithmetic over those (`"$aum_basis * $fee_rate_bps / 10000"`, left to
right), or `{sum: selector, attr: a}` / `{count: selector}` over matching records.
"""

from __future__ import annotations

import re
import sys
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SCALAR_TYPES = ("str", "text", "int", "float", "bool", "date", "datetime", "money")
_ATTR = re.compile(
    r"^(?P<type>str|text|int|float|bool|date|datetime|money|enum\[(?P<enum>[^\]]+)\]|ref\((?P<ref>[a-z][a-z0-9_]*)\))"
    r"(?P<nullable>\?)?"
    r"(?:\s*=\s*(?P<default>.+))?$"
)
_IDENT = re.compile(r"^[a-z][a-z0-9_]*$")
_SIDE = re.compile(
    r"^(?P<entity>[a-z][a-z0-9_]*)\.(?P<attr>[a-z][a-z0-9_]*)(?:->(?P<target>[a-z][a-z0-9_]*))?$"
)


class Attribute(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    type: Literal["str", "text", "int", "float", "bool", "date", "datetime", "money", "enum", "ref"]
    enum: tuple[str, ...] = ()
    ref: str | None = None
    nullable: bool = False
    default: Any = None

    @classmethod
    def parse(cls, name: str, spec: str) -> Attribute:
        match = _ATTR.match(str(spec).strip())
        if not _IDENT.match(name) or match is None:
            raise ValueError(
                f"attribute {name!r}: cannot read type {spec!r}; write one of "
                f"{', '.join(SCALAR_TYPES)}, enum[a|b], ref(entity), optionally '?' and '= default'"
            )
        kind = match["type"]
        enum = tuple(v.strip() for v in match["enum"].split("|")) if match["enum"] else ()
        # The regex admits only the Literal's spellings, so the string is one of them.
        type_: Any = "enum" if enum else "ref" if match["ref"] else kind
        default = _parse_default(match["default"], type_) if match["default"] is not None else None
        return cls(
            name=name,
            type=type_,
            enum=enum,
            ref=match["ref"],
            nullable=bool(match["nullable"]),
            default=default,
        )

    @model_validator(mode="after")
    def _check(self) -> Attribute:
        if self.type == "enum":
            if len(self.enum) < 2 or len(set(self.enum)) != len(self.enum):
                raise ValueError(f"attribute {self.name!r}: an enum needs at least two distinct values")
            if self.default is not None and self.default not in self.enum:
                raise ValueError(
                    f"attribute {self.name!r}: default {self.default!r} is not one of {list(self.enum)}"
                )
        return self


def _parse_default(raw: str, type_: str) -> Any:
    raw = raw.strip().strip("'\"")
    if type_ == "bool":
        if raw.lower() not in ("true", "false"):
            raise ValueError(f"bool default must be true or false, got {raw!r}")
        return raw.lower() == "true"
    if type_ == "int":
        return int(raw)
    if type_ in ("float", "money"):
        return float(raw)
    return raw


class Entity(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str
    key: str
    attributes: tuple[Attribute, ...]

    @field_validator("attributes", mode="before")
    @classmethod
    def _parse_attributes(cls, value: Any) -> Any:
        out = []
        for item in value:
            if isinstance(item, Attribute):
                out.append(item)
            elif isinstance(item, dict) and len(item) == 1:
                ((name, spec),) = item.items()
                out.append(Attribute.parse(str(name), str(spec)))
            else:
                out.append(Attribute.model_validate(item))
        return tuple(out)

    @model_validator(mode="after")
    def _check(self) -> Entity:
        if not _IDENT.match(self.name):
            raise ValueError(f"entity name {self.name!r} must be snake_case")
        names = [a.name for a in self.attributes]
        if len(set(names)) != len(names):
            raise ValueError(f"entity {self.name!r}: duplicate attribute names")
        if self.key not in names:
            raise ValueError(f"entity {self.name!r}: key {self.key!r} is not one of its attributes")
        return self

    def attribute(self, name: str) -> Attribute | None:
        return next((a for a in self.attributes if a.name == name), None)


class Relation(BaseModel):
    """`source.attr` references `target`'s key; cardinality from the source's side."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str
    attr: str
    target: str
    cardinality: Literal["many_to_one", "one_to_one"] = "many_to_one"
    description: str = ""


class Rule(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    text: str
    kind: Literal["range", "compare", "precondition", "transition", "unique"]
    entity: str | None = None  # range, precondition, transition, unique
    attr: str | None = None  # range, precondition, transition
    min: float | None = None
    max: float | None = None
    left: str | None = None  # compare
    op: Literal["<", "<=", "==", "!=", ">=", ">"] | None = None
    right: str | float | None = None
    operation: str | None = None  # precondition
    values: tuple[str, ...] = ()  # precondition
    allowed: dict[str, tuple[str, ...]] = Field(default_factory=dict)  # transition
    attrs: tuple[str, ...] = ()  # unique

    @model_validator(mode="after")
    def _shape(self) -> Rule:
        need: dict[str, tuple[str, ...]] = {
            "range": ("entity", "attr"),
            "compare": ("left", "op", "right"),
            "precondition": ("entity", "attr", "operation", "values"),
            "transition": ("entity", "attr", "allowed"),
            "unique": ("entity", "attrs"),
        }
        missing = [f for f in need[self.kind] if getattr(self, f) in (None, (), {})]
        if missing:
            raise ValueError(f"rule {self.id!r} ({self.kind}) lacks {', '.join(missing)}")
        if self.kind == "range" and self.min is None and self.max is None:
            raise ValueError(f"rule {self.id!r}: a range rule needs min or max")
        return self

    def attribute_refs(self) -> list[tuple[str, str]]:
        """(entity, attribute) pairs this rule reads; `a.ref->x` yields (a, ref) and (target, x)."""
        refs: list[tuple[str, str]] = []
        if self.entity and self.attr:
            refs.append((self.entity, self.attr))
        if self.entity:
            refs.extend((self.entity, a) for a in self.attrs)
        for side in (self.left, self.right):
            if isinstance(side, str):
                match = _SIDE.match(side)
                if match is None:
                    raise ValueError(
                        f"rule {self.id!r}: cannot read side {side!r}; write entity.attr or entity.ref->attr"
                    )
                refs.append((match["entity"], match["attr"]))
                if match["target"]:
                    refs.append(("->" + match["entity"] + "." + match["attr"], match["target"]))
        return refs


_CONDITION = re.compile(r"^(?P<left>\S+)\s+(?P<op><=|>=|==|!=|<|>|not in|in)\s+(?P<right>.+)$")
_PATH = re.compile(r"^[a-z][a-z0-9_]*(?:->[a-z][a-z0-9_]*)*$")
_ARITH = ("+", "-", "*", "/")
LIFECYCLE_NAMES = ("status", "state", "stage", "phase")


def value_of(raw: Any) -> dict[str, Any]:
    """A behaviour value in its one normal form: `{"const": x}`, `{"path": "a->b"}` (a field of the
    target, or of a record it references), `{"clock": "now"|"today"}`, `{"expr": [v, op, v, ...]}`
    (evaluated left to right), `{"sum": selector, "attr": a}` or `{"count": selector}`."""
    if isinstance(raw, dict) and len(raw) == 1 and next(iter(raw)) in ("const", "path", "clock", "expr"):
        return raw
    if isinstance(raw, dict) and "sum" in raw:
        return {"sum": _selector(raw["sum"]), "attr": str(raw.get("attr") or raw["sum"].get("attr") or "")}
    if isinstance(raw, dict) and "count" in raw:
        return {"count": _selector(raw["count"])}
    if isinstance(raw, str) and raw.startswith("$"):
        tokens = raw.split()
        if len(tokens) > 1:
            parts: list[Any] = []
            for i, tok in enumerate(tokens):
                if i % 2:
                    parts.append(tok)
                else:
                    parts.append(value_of(tok if tok.startswith("$") else _number(tok)))
            return {"expr": parts}
        if raw in ("$now", "$today"):
            return {"clock": raw[1:]}
        return {"path": raw[1:]}
    return {"const": raw}


def _number(tok: str) -> Any:
    try:
        return int(tok)
    except ValueError:
        try:
            return float(tok)
        except ValueError:
            return tok


def _selector(raw: Any) -> dict[str, Any]:
    """`{entity, where: {attr: value | [values]}}`: the records of `entity` whose fields match."""
    if not isinstance(raw, dict) or "entity" not in raw:
        raise ValueError(f"a record selector needs `entity` and `where`, got {raw!r}")
    where = {}
    for attr, want in (raw.get("where") or {}).items():
        where[str(attr)] = {"in": list(want)} if isinstance(want, (list, tuple)) else value_of(want)
    return {"entity": str(raw["entity"]), "where": where}


def _literal(text: str) -> Any:
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        return [_literal(t) for t in text[1:-1].split(",") if t.strip()]
    if text in ("true", "false"):
        return text == "true"
    if text in ("null", "none"):
        return None
    value = _number(text)
    return value if not isinstance(value, str) else value.strip("'\"")


class Requirement(BaseModel):
    """A precondition of a compound operation, read on the target as the call leaves it (arguments
    applied, side effects not yet): `left op right` over paths, `left in [values]`, or `none` (no
    record matches a selector, e.g. no open order on the account being closed)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["compare", "in", "none"]
    left: str | None = None
    op: Literal["<", "<=", "==", "!=", ">=", ">", "in", "not in"] | None = None
    right: Any = None  # compare: a value; in: the list
    select: dict[str, Any] | None = None  # none
    text: str = ""

    @classmethod
    def parse(cls, raw: Any) -> Requirement:
        if isinstance(raw, Requirement):
            return raw
        if isinstance(raw, dict) and "none" in raw:
            return cls(kind="none", select=_selector(raw["none"]), text=str(raw.get("text", "")))
        text = raw.get("text", "") if isinstance(raw, dict) else ""
        cond = raw.get("check") if isinstance(raw, dict) else raw
        match = _CONDITION.match(str(cond).strip())
        if match is None:
            raise ValueError(
                f"cannot read requirement {cond!r}; write `path op value` (op one of < <= == != >= > in, "
                f"'not in'), e.g. `account_id->status == open` or `amount <= $account_id->cash_balance`"
            )
        op = match["op"]
        right_text = match["right"].strip()
        if op in ("in", "not in"):
            values = _literal(right_text)
            if not isinstance(values, list):
                raise ValueError(f"requirement {cond!r}: `{op}` needs a list such as [open, pending]")
            return cls(kind="in", left=match["left"], op=op, right=values, text=text)
        right = value_of(right_text) if right_text.startswith("$") else {"const": _literal(right_text)}
        return cls(kind="compare", left=match["left"], op=op, right=right, text=text)


class Step(BaseModel):
    """One effect of a compound operation, applied in order after its own change to the target:
    `set`/`add`/`subtract` a field at a path (the target's own, or `ref->field` of a record it
    references), `create` a side record, or `each`: set fields of every record a selector matches."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["set", "add", "subtract", "create", "each"]
    path: str | None = None  # set, add, subtract
    value: dict[str, Any] | None = None  # set: the new value; add/subtract: the amount
    entity: str | None = None  # create
    fields: dict[str, dict[str, Any]] = Field(default_factory=dict)  # create, each
    select: dict[str, Any] | None = None  # each
    when: Requirement | None = None  # the step applies only where this holds (e.g. `side == buy`)

    @classmethod
    def parse(cls, raw: Any) -> Step:
        if isinstance(raw, Step):
            return raw
        if not isinstance(raw, dict):
            raise ValueError(f"a step is a mapping (set/add/subtract/create/each), got {raw!r}")
        if "when" in raw:
            rest = {k: v for k, v in raw.items() if k != "when"}
            return cls.parse(rest).model_copy(update={"when": Requirement.parse(raw["when"])})
        if "set" in raw and "each" not in raw:
            if "to" not in raw:
                raise ValueError(f"step `set: {raw['set']}` needs `to:` (the new value)")
            return cls(kind="set", path=str(raw["set"]), value=value_of(raw["to"]))
        for kind in ("add", "subtract"):
            if kind in raw:
                if "by" not in raw:
                    raise ValueError(f"step `{kind}: {raw[kind]}` needs `by:` (the amount)")
                return cls(kind=kind, path=str(raw[kind]), value=value_of(raw["by"]))  # type: ignore[arg-type]
        if "create" in raw:
            fields = {str(k): value_of(v) for k, v in (raw.get("with") or {}).items()}
            return cls(kind="create", entity=str(raw["create"]), fields=fields)
        if "each" in raw:
            fields = {str(k): value_of(v) for k, v in (raw.get("set") or {}).items()}
            if not fields:
                raise ValueError("step `each` needs `set: {field: value}`")
            return cls(kind="each", select=_selector(raw["each"]), fields=fields)
        raise ValueError(f"unknown step {sorted(raw)}; write one of set, add, subtract, create, each")


class Behaviour(BaseModel):
    """What a write operation does across entities, declared once so one compiler serves every
    domain: its own change to the target (`do`, and `to` for a lifecycle move), the preconditions
    that must hold, and the ordered steps that touch other records. The whole call applies or
    nothing does."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    do: Literal["create", "update", "transition", "delete"] | None = None
    to: str | None = None
    requires: tuple[Requirement, ...] = ()
    steps: tuple[Step, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _read(cls, raw: Any) -> Any:
        if not isinstance(raw, dict):
            return raw
        out = dict(raw)
        out["requires"] = tuple(Requirement.parse(r) for r in raw.get("requires") or ())
        out["steps"] = tuple(Step.parse(s) for s in raw.get("steps") or ())
        return out


class Operation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: Literal["read", "write"]
    entity: str
    description: str
    effects: Behaviour | None = None


class DomainKnowledge(BaseModel):
    """Everything known about one level-2 domain's executable world."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: int
    description: str
    workflows: tuple[str, ...]
    entities: tuple[Entity, ...]
    relations: tuple[Relation, ...]
    rules: tuple[Rule, ...]
    operations: tuple[Operation, ...]

    @model_validator(mode="after")
    def _consistent(self) -> DomainKnowledge:
        problems = knowledge_problems(self)
        if problems:
            raise ValueError(f"domain {self.id}: " + "; ".join(problems))
        return self

    def entity(self, name: str) -> Entity | None:
        return next((e for e in self.entities if e.name == name), None)

    @property
    def attribute_count(self) -> int:
        return sum(len(e.attributes) for e in self.entities)


def knowledge_problems(kb: DomainKnowledge) -> list[str]:
    """Every inconsistency in one entry: references, relations, rules and operations."""
    problems: list[str] = []
    entities = {e.name: e for e in kb.entities}
    if len(entities) != len(kb.entities):
        problems.append("duplicate entity names")
    for e in kb.entities:
        for a in e.attributes:
            if a.type == "ref" and a.ref not in entities:
                problems.append(f"{e.name}.{a.name} references unknown entity {a.ref!r}")
    for r in kb.relations:
        src = entities.get(r.source)
        if src is None or r.target not in entities:
            problems.append(f"relation {r.source}.{r.attr}->{r.target} names an unknown entity")
            continue
        attr = src.attribute(r.attr)
        if attr is None or attr.type != "ref" or attr.ref != r.target:
            problems.append(
                f"relation {r.source}.{r.attr}->{r.target}: {r.attr} is not a ref({r.target}) of {r.source}"
            )
    for rule in kb.rules:
        try:
            refs = rule.attribute_refs()
        except ValueError as exc:
            problems.append(str(exc))
            continue
        for ent, attr_name in refs:
            if ent.startswith("->"):
                owner, _, ref_attr = ent[2:].partition(".")
                ref = entities.get(owner).attribute(ref_attr) if owner in entities else None  # type: ignore[union-attr]
                target = entities.get(ref.ref) if ref is not None and ref.ref else None
                if target is None or target.attribute(attr_name) is None:
                    problems.append(f"rule {rule.id}: {owner}.{ref_attr}->{attr_name} does not resolve")
                continue
            entity = entities.get(ent)
            if entity is None or entity.attribute(attr_name) is None:
                problems.append(f"rule {rule.id}: {ent}.{attr_name} does not exist")
        if rule.kind in ("precondition", "transition") and rule.entity in entities and rule.attr:
            attr = entities[rule.entity].attribute(rule.attr)
            legal = set(attr.enum) if attr is not None and attr.type == "enum" else None
            used = set(rule.values) | set(rule.allowed) | {v for vs in rule.allowed.values() for v in vs}
            if legal is not None and not used <= legal:
                problems.append(
                    f"rule {rule.id}: values {sorted(used - legal)} are not legal for {rule.entity}.{rule.attr}"
                )
            if legal is None and rule.kind == "transition":
                problems.append(f"rule {rule.id}: transition rules need an enum attribute")
        if rule.kind == "precondition" and rule.operation not in {o.name for o in kb.operations}:
            problems.append(
                f"rule {rule.id}: operation {rule.operation!r} is not among the domain's operations"
            )
    for op in kb.operations:
        if op.entity not in entities:
            problems.append(f"operation {op.name} acts on unknown entity {op.entity!r}")
        elif op.effects is not None:
            problems += [f"operation {op.name}: {p}" for p in behaviour_problems(kb, op)]
    return problems


def lifecycle_attribute(entity: Entity) -> Attribute | None:
    """The enum that carries a record's lifecycle (status, state, stage, phase), if any."""
    enums = [a for a in entity.attributes if a.type == "enum"]
    for preferred in LIFECYCLE_NAMES:
        for a in enums:
            if a.name == preferred or a.name.endswith("_" + preferred):
                return a
    return None


def resolve_path(kb: DomainKnowledge, entity: str, path: str) -> tuple[Attribute | None, str]:
    """The attribute a path from `entity` ends at (`a`, `ref->b`, `ref->ref2->c`), or why not."""
    if not _PATH.match(path):
        return None, f"cannot read path {path!r}; write field or ref->field"
    current = kb.entity(entity)
    hops = path.split("->")
    for i, hop in enumerate(hops):
        if current is None:
            return None, f"path {path!r}: unknown entity"
        attr = current.attribute(hop)
        if attr is None:
            return None, f"path {path!r}: {current.name} has no attribute {hop!r}"
        if i == len(hops) - 1:
            return attr, ""
        if attr.type != "ref":
            return None, f"path {path!r}: {current.name}.{hop} is not a reference, so `->` cannot follow it"
        current = kb.entity(attr.ref or "")
    return None, f"path {path!r} is empty"


_NUMERIC = ("int", "float", "money")


def _owner_key(kb: DomainKnowledge, entity: str, path: str) -> str | None:
    """The key of the record a path ends on."""
    current = kb.entity(entity)
    for hop in path.split("->")[:-1]:
        attr = current.attribute(hop) if current is not None else None
        current = kb.entity(attr.ref or "") if attr is not None and attr.ref else None
    return current.key if current is not None else None


def _value_problems(kb: DomainKnowledge, entity: str, value: Any, where: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{where}: cannot read value {value!r}"]
    if "path" in value:
        _, why = resolve_path(kb, entity, value["path"])
        return [f"{where}: {why}"] if why else []
    if "expr" in value:
        parts = value["expr"]
        out = [f"{where}: operator {p!r} is not one of + - * /" for p in parts[1::2] if p not in _ARITH]
        for v in parts[0::2]:
            out += _value_problems(kb, entity, v, where)
        return out
    if "sum" in value or "count" in value:
        sel: dict[str, Any] = value.get("sum") or value.get("count") or {}
        out = _selector_problems(kb, entity, sel, where)
        if "sum" in value:
            other = kb.entity(sel["entity"])
            attr = other.attribute(value.get("attr", "")) if other else None
            if other is not None and (attr is None or attr.type not in _NUMERIC):
                out.append(
                    f"{where}: sum needs a numeric attribute of {sel['entity']}, got {value.get('attr')!r}"
                )
        return out
    return []


def _selector_problems(kb: DomainKnowledge, entity: str, sel: Any, where: str) -> list[str]:
    other = kb.entity(sel.get("entity", "")) if isinstance(sel, dict) else None
    if other is None:
        return [
            f"{where}: selects records of unknown entity {sel.get('entity') if isinstance(sel, dict) else sel!r}"
        ]
    out = []
    for attr, want in sel.get("where", {}).items():
        a = other.attribute(attr)
        if a is None:
            out.append(f"{where}: {other.name} has no attribute {attr!r} to match on")
        elif "in" in want and a.type == "enum" and not set(want["in"]) <= set(a.enum):
            out.append(
                f"{where}: {sorted(set(want['in']) - set(a.enum))} are not legal for {other.name}.{attr}"
            )
        elif "in" not in want:
            out += _value_problems(kb, entity, want, where)
    if not sel.get("where"):
        out.append(f"{where}: a selector needs `where` (which {other.name} records)")
    return out


def _assign_problems(attr: Attribute, value: dict[str, Any], where: str) -> list[str]:
    const = value.get("const", ...) if "const" in value else ...
    if const is ... or const is None:
        return []
    if attr.type == "enum" and const not in attr.enum:
        return [f"{where}: {const!r} is not one of {list(attr.enum)}"]
    if attr.type in _NUMERIC and (isinstance(const, bool) or not isinstance(const, (int, float))):
        return [f"{where}: {attr.name} is a number, got {const!r}"]
    if attr.type == "bool" and not isinstance(const, bool):
        return [f"{where}: {attr.name} is true or false, got {const!r}"]
    return []


def behaviour_problems(kb: DomainKnowledge, op: Operation) -> list[str]:
    """Every way an operation's declared behaviour fails to fit the domain, each said plainly."""
    b = op.effects
    if b is None:
        return []
    out: list[str] = []
    target = kb.entity(op.entity)
    if target is None:
        return [f"acts on unknown entity {op.entity!r}"]
    if op.kind == "read":
        out.append("a read operation cannot declare effects; make it a write or drop `effects`")
    life = lifecycle_attribute(target)
    if b.do == "transition" or b.to is not None:
        if life is None:
            out.append(f"`to: {b.to}` moves a lifecycle, but {target.name} has no status/state enum")
        elif b.to not in life.enum:
            out.append(f"`to: {b.to}` is not one of {target.name}.{life.name} {list(life.enum)}")
    if (
        b.do == "delete"
        and b.steps
        and any(s.kind == "set" and "->" not in (s.path or "->") for s in b.steps)
    ):
        out.append("a delete cannot set fields of the record it removes")
    for i, r in enumerate(b.requires, 1):
        where = f"requirement {i}"
        if r.kind == "none":
            out += _selector_problems(kb, target.name, r.select, where)
            continue
        attr, why = resolve_path(kb, target.name, r.left or "")
        if attr is None:
            out.append(f"{where}: {why}")
            continue
        if r.kind == "in":
            for v in r.right or []:
                out += _assign_problems(attr, {"const": v}, where)
        else:
            out += _value_problems(kb, target.name, r.right, where)
            out += _assign_problems(attr, r.right or {}, where)
    for i, s in enumerate(b.steps, 1):
        where = f"step {i} ({s.kind})"
        if s.when is not None:
            if s.when.kind == "none":
                out += _selector_problems(kb, target.name, s.when.select, where + " when")
            else:
                attr, why = resolve_path(kb, target.name, s.when.left or "")
                if attr is None:
                    out.append(f"{where} when: {why}")
                elif s.when.kind == "in":
                    for v in s.when.right or []:
                        out += _assign_problems(attr, {"const": v}, where + " when")
                else:
                    out += _value_problems(kb, target.name, s.when.right, where + " when")
                    out += _assign_problems(attr, s.when.right or {}, where + " when")
        if s.kind in ("set", "add", "subtract"):
            attr, why = resolve_path(kb, target.name, s.path or "")
            if attr is None:
                out.append(f"{where}: {why}")
                continue
            owner_key = _owner_key(kb, target.name, s.path or "")
            if attr.name == owner_key:
                out.append(f"{where}: {s.path} is a record's key, which never changes")
            elif attr.type == "ref" and s.kind != "set":
                out.append(f"{where}: {s.path} is a reference; only `set` can point it elsewhere")
            if s.kind != "set" and attr.type not in _NUMERIC:
                out.append(f"{where}: {s.path} is {attr.type}, but add/subtract need a number")
            out += _value_problems(kb, target.name, s.value, where)
            if s.kind == "set":
                out += _assign_problems(attr, s.value or {}, where)
        elif s.kind == "create":
            side = kb.entity(s.entity or "")
            if side is None:
                out.append(f"{where}: creates unknown entity {s.entity!r}")
                continue
            links = [a for a in side.attributes if a.type == "ref" and a.name in s.fields]
            if not links:
                out.append(
                    f"{where}: the new {side.name} is linked to nothing; set one of its references "
                    f"({', '.join(a.name for a in side.attributes if a.type == 'ref') or 'it has none'}) with `with:`"
                )
            for name, value in s.fields.items():
                attr = side.attribute(name)
                if attr is None or name == side.key:
                    out.append(f"{where}: {side.name} has no settable attribute {name!r}")
                    continue
                out += _value_problems(kb, target.name, value, where)
                out += _assign_problems(attr, value, where)
        else:
            out += _selector_problems(kb, target.name, s.select, where)
            other = kb.entity((s.select or {}).get("entity", ""))
            for name, value in s.fields.items():
                attr = other.attribute(name) if other else None
                if other is not None and (attr is None or name == other.key or attr.type == "ref"):
                    out.append(f"{where}: {other.name} has no plain attribute {name!r} to set")
                    continue
                out += _value_problems(kb, target.name, value, where)
                if attr is not None:
                    out += _assign_problems(attr, value, where)
    if b.do is None and b.to is None and not b.steps and not b.requires:
        out.append("declares no behaviour; give `requires` or `steps` (or drop `effects`)")
    return out


# The C loader parses the shipped knowledge files about seven times faster than the pure-Python one;
# both accept exactly the same YAML.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _data_dir() -> Path:
    return Path(str(resources.files("agentomnia.taxonomy") / "data" / "knowledge"))


def load_file(path: Path) -> list[DomainKnowledge]:
    raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER) or []
    if not isinstance(raw, list):
        raise ValueError(f"{path}: expected a YAML list of domain entries")
    out = []
    for i, item in enumerate(raw):
        try:
            out.append(DomainKnowledge.model_validate(item))
        except ValueError as exc:
            ident = item.get("id", f"#{i}") if isinstance(item, dict) else f"#{i}"
            raise ValueError(f"{path.name}: entry {ident}: {exc}") from exc
    return out


def _parse_knowledge(paths: list[Path]) -> dict[int, DomainKnowledge]:
    out: dict[int, DomainKnowledge] = {}
    for path in paths:
        for kb in load_file(path):
            if kb.id in out:
                raise ValueError(f"{path.name}: domain {kb.id} is described twice")
            out[kb.id] = kb
    return out


@cache
def load_knowledge() -> dict[int, DomainKnowledge]:
    """All shipped entries, keyed by taxonomy id (parsed once per content of the files and of this
    module, then read from `$AGENTOMNIA_HOME/cache/knowledge`)."""
    from agentomnia.taxonomy.filecache import cached

    paths = sorted(_data_dir().glob("*.yaml"))
    return cached("knowledge", [*paths, Path(__file__)], lambda: _parse_knowledge(paths))


def _main(argv: list[str]) -> int:
    """`python -m agentomnia.taxonomy.knowledge FILE...`: validate files and print their sizes."""
    status = 0
    for name in argv:
        try:
            entries = load_file(Path(name))
        except ValueError as exc:
            print(f"INVALID {exc}", file=sys.stderr)
            status = 1
            continue
        n = len(entries) or 1
        ents = sum(len(k.entities) for k in entries)
        attrs = sum(k.attribute_count for k in entries)
        print(
            f"{name}: {len(entries)} domains, {ents / n:.1f} entities and {attrs / n:.1f} attributes per domain"
        )
        for k in entries:
            if len(k.entities) < 4 or len(k.rules) < 2 or not k.relations:
                print(
                    f"  below minimum: domain {k.id} ({len(k.entities)} entities, {len(k.rules)} rules, {len(k.relations)} relations)"
                )
                status = 1
    return status


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
