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


class Operation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: Literal["read", "write"]
    entity: str
    description: str


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
    return problems


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


@cache
def load_knowledge() -> dict[int, DomainKnowledge]:
    """All shipped entries, keyed by taxonomy id."""
    out: dict[int, DomainKnowledge] = {}
    for path in sorted(_data_dir().glob("*.yaml")):
        for kb in load_file(path):
            if kb.id in out:
                raise ValueError(f"{path.name}: domain {kb.id} is described twice")
            out[kb.id] = kb
    return out


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
