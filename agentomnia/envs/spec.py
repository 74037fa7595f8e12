"""EnvSpec: the state space and toolset of one environment, before any code exists (paper §4.2.2).

An environment E = (S, T): S is a set of entity tables (dict of records keyed by the entity's key),
each record typed by its attributes; T is a set of tools, each a read or a write with a JSON-schema
signature and a declared operation (`op`) that says how it changes S. Rules (ranges, comparisons
across references, preconditions, transitions, uniqueness) are the invariants every reachable
state must satisfy. Code generation, initial-state generation and verification all read this one
record, so a spec is the contract between the proposer and the checks.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentomnia.records import Record
from agentomnia.taxonomy import Coordinate
from agentomnia.taxonomy.knowledge import Relation, Rule

AttrType = Literal[
    "str", "text", "int", "float", "bool", "date", "datetime", "money", "enum", "ref", "list", "object"
]
ToolOp = Literal[
    "get",  # one record by key
    "list",  # filter by attributes, paginate
    "search",  # substring match on text attributes (a confusable sibling of list)
    "create",  # insert a record; the key is assigned
    "update",  # change non-key fields of a record
    "transition",  # move an enum attribute (status) to a target value, guarded by rules
    "assign",  # point a reference attribute at another record
    "delete",  # remove a record no other record references
    "aggregate",  # count / sum grouped by an attribute: a structured output
    "overview",  # a record with its related records: a structured multi-field output
    "range",  # records whose date attribute lies between start and end (start <= end)
    "lookup",  # one record by exactly one of key or name
    "manage",  # mode selector: action chooses create / update / a transition
]
OP_KIND: dict[str, Literal["read", "write"]] = {
    "get": "read", "list": "read", "search": "read", "aggregate": "read", "overview": "read", "range": "read",
    "lookup": "read", "create": "write", "update": "write", "transition": "write", "assign": "write",
    "delete": "write", "manage": "write",
}  # fmt: skip
JSON_TYPES: dict[str, str] = {
    "str": "string", "text": "string", "int": "integer", "float": "number", "bool": "boolean",
    "date": "string", "datetime": "string", "money": "number", "enum": "string", "ref": "string",
    "list": "array", "object": "object",
}  # fmt: skip
_IDENT = re.compile(r"^[a-z][a-z0-9_]*$")
# A seed's tool keeps its own name (MCP allows these characters; OpenAPI operationIds use them too);
# the code generator binds a name that is not a Python identifier to a private method.
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


class AttributeSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    type: AttrType
    enum: tuple[str, ...] = ()
    ref: str | None = None
    nullable: bool = False
    default: Any = None
    description: str = ""
    source: Literal["kb", "seed", "derived"] = "kb"
    # The JSON schema the seed declares for this value (resolved, as written: type, format, pattern,
    # length and range bounds, enum, nullable). Values the platform makes for it satisfy it, and a tool
    # parameter bound to it shows it unchanged.
    declared: dict[str, Any] | None = None

    def json_schema(self) -> dict[str, Any]:
        if self.declared is not None:
            declared = dict(self.declared)
            if self.description and "description" not in declared:
                declared["description"] = self.description
            return declared
        schema: dict[str, Any] = {"type": JSON_TYPES[self.type]}
        if self.type == "enum":
            schema["enum"] = list(self.enum)
        if self.type == "date":
            schema["format"] = "date"
        if self.type == "datetime":
            schema["format"] = "date-time"
        if self.type == "money":
            schema["minimum"] = 0
        if self.type == "list":
            schema["items"] = {"type": "string"}
        if self.description:
            schema["description"] = self.description
        elif self.type == "ref":
            schema["description"] = f"id of a {self.ref}"
        return schema


class EntitySpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    table: str  # the state attribute holding this entity's records
    description: str
    key: str
    attributes: tuple[AttributeSpec, ...]
    id_prefix: str
    source: Literal["kb", "seed", "merged"] = "kb"

    def attribute(self, name: str) -> AttributeSpec | None:
        return next((a for a in self.attributes if a.name == name), None)

    @property
    def status_attribute(self) -> AttributeSpec | None:
        """The enum that carries the record's lifecycle (status, state, stage), if any."""
        enums = [a for a in self.attributes if a.type == "enum"]
        for preferred in ("status", "state", "stage", "phase"):
            for a in enums:
                if a.name == preferred or a.name.endswith("_" + preferred):
                    return a
        return None

    @property
    def label_attribute(self) -> AttributeSpec | None:
        """A human-readable name of a record (name, title, ...), used for lookups and descriptions."""
        for preferred in ("name", "title", "full_name", "display_name", "label", "subject", "code"):
            a = self.attribute(preferred)
            if a is not None and a.type in ("str", "text"):
                return a
        return next((a for a in self.attributes if a.type == "str" and a.name != self.key), None)


class ParamConstraint(BaseModel):
    """A constraint across parameters that a JSON schema alone cannot state."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["less_equal", "exactly_one", "required_if"]
    params: tuple[str, ...]
    when: dict[str, Any] = Field(default_factory=dict)  # required_if: {param: value}
    text: str


class ToolSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str
    kind: Literal["read", "write"]
    op: ToolOp
    entity: str
    parameters: dict[str, Any]  # JSON schema of the arguments (type object)
    result: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    # How parameters bind to state: {param: attribute}; op-specific extras (target value, filters...)
    binding: dict[str, Any] = Field(default_factory=dict)
    constraints: tuple[ParamConstraint, ...] = ()
    origin: Literal["seed", "kb", "generated", "diversified"] = "generated"
    seed_tool: str | None = None
    # False for a seed tool whose behaviour could not be read from its method, path, name or schema:
    # it is kept with a generic behaviour on its entity (a filtered read, or a create) and flagged.
    inferred: bool = True

    @model_validator(mode="after")
    def _consistent(self) -> ToolSpec:
        if not _TOOL_NAME.match(self.name):
            raise ValueError(f"tool name {self.name!r} is not 1-64 letters, digits, '_', '.' or '-'")
        if self.parameters.get("type") != "object":
            raise ValueError(f"tool {self.name}: parameters must be an object schema")
        if OP_KIND[self.op] != self.kind:
            raise ValueError(f"tool {self.name}: op {self.op} is a {OP_KIND[self.op]}, not a {self.kind}")
        return self

    def openai(self) -> dict[str, Any]:
        """The tool in OpenAI function format."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


class EnvSpec(Record):
    record_kind: ClassVar[str] = "env_spec"

    name: str
    class_name: str
    description: str
    coordinate: Coordinate
    candidate_id: str
    seed_ids: tuple[str, ...]
    entities: tuple[EntitySpec, ...]
    relations: tuple[Relation, ...]
    rules: tuple[Rule, ...]
    tools: tuple[ToolSpec, ...] = ()
    proposer: Literal["offline", "llm"] = "offline"

    def entity(self, name: str) -> EntitySpec:
        for e in self.entities:
            if e.name == name:
                return e
        raise KeyError(f"environment {self.name} has no entity {name!r}")

    def tool(self, name: str) -> ToolSpec:
        for t in self.tools:
            if t.name == name:
                return t
        raise KeyError(f"environment {self.name} has no tool {name!r}")

    @property
    def attribute_count(self) -> int:
        return sum(len(e.attributes) for e in self.entities)


class SpecInvalid(ValueError):
    """The spec contradicts itself; the message lists every problem."""


def spec_problems(spec: EnvSpec) -> list[str]:
    """Everything inconsistent in a spec: names, keys, references, relations, rules, tools."""
    problems: list[str] = []
    names = [e.name for e in spec.entities]
    tables = [e.table for e in spec.entities]
    if len(set(names)) != len(names) or len(set(tables)) != len(tables):
        problems.append("entity names or table names repeat")
    entities = {e.name: e for e in spec.entities}
    for e in spec.entities:
        if not _IDENT.match(e.name) or not _IDENT.match(e.table):
            problems.append(f"entity {e.name!r}/{e.table!r} is not snake_case")
        if e.attribute(e.key) is None:
            problems.append(f"{e.name}: key {e.key!r} is not an attribute")
        seen: set[str] = set()
        for a in e.attributes:
            if a.name in seen:
                problems.append(f"{e.name}.{a.name} repeats")
            seen.add(a.name)
            if not _IDENT.match(a.name) or a.name.startswith("_"):
                problems.append(f"{e.name}.{a.name} is not a snake_case attribute name")
            if a.type == "ref" and a.ref not in entities:
                problems.append(f"{e.name}.{a.name} references unknown entity {a.ref!r}")
            if a.type == "enum" and (len(a.enum) < 2 or (a.default is not None and a.default not in a.enum)):
                problems.append(f"{e.name}.{a.name}: enum needs 2+ values and a legal default")
    for r in spec.relations:
        src = entities.get(r.source)
        attr = src.attribute(r.attr) if src else None
        if attr is None or attr.type != "ref" or attr.ref != r.target:
            problems.append(f"relation {r.source}.{r.attr}->{r.target} does not match a ref attribute")
    tool_names = [t.name for t in spec.tools]
    if len(set(tool_names)) != len(tool_names):
        problems.append("tool names repeat")
    for t in spec.tools:
        if t.entity not in entities:
            problems.append(f"tool {t.name} acts on unknown entity {t.entity!r}")
    return problems
