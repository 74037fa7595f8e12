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
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentomnia.envs import naming
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
    source: Literal["kb", "seed", "derived", "model"] = "kb"  # model: knowledge augmentation in llm mode
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
        from agentomnia.taxonomy.vocab import PLACE_FIELD, free_text

        # else a short value that tells records apart, never who last touched it (`changed_by` names a
        # person, not the setpoint) nor a link, e-mail or phone: a plain value first, then a sentence (a
        # note, a reason) or an address; a record with none of these is known by its id
        texts = [
            a
            for a in self.attributes
            if a.type == "str"
            and a.name != self.key
            and not _AUDIT.search(a.name)
            and not _CONTACT.search(a.name)
        ]
        plain = [a for a in texts if not free_text(a.type, a.name) and not PLACE_FIELD.match(a.name)]
        return next(iter(plain), None) or next(iter(texts), None)


_AUDIT = re.compile(r"_by$|_by_")
_CONTACT = re.compile(r"(^|_)(e_?mail|phone|mobile|fax|url|uri|link|website|ip)($|_)")


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
    origin: Literal["seed", "kb", "generated", "diversified", "model"] = "generated"
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


# -- compound tools ------------------------------------------------------------------------------
# A compound tool keeps one of the ops above for its own change to its entity (so task synthesis
# reads it like any create, update or transition) and carries `binding["compound"]`:
#   {"requires": [requirement, ...], "steps": [step, ...], "touches": [entity, ...]}
# in the knowledge base's normal form (`knowledge.Requirement`, `knowledge.Step`, values from
# `knowledge.value_of`). The functions below are the reference semantics over a plain state
# (`{table: {key: record}}`): verification compares what the generated class did with them.


def action_targets(tool: ToolSpec, statuses: tuple[str, ...]) -> dict[str, str]:
    """The status each of a manage tool's actions moves its record to, where the action is a verb
    and not the status itself: a seed's `accept` offer is `accepted`, `counter` is `countered`."""
    action = tool.parameters.get("properties", {}).get("action")
    actions = action.get("enum") if isinstance(action, dict) else None
    return command_targets(actions if isinstance(actions, list) else [], statuses)


# verbs that take a record back out of the state another verb of the same command put it in
UNDO_VERBS = (
    "release",
    "resume",
    "unhold",
    "lift",
    "unblock",
    "unfreeze",
    "unsuspend",
    "unpause",
    "reinstate",
)


def command_targets(verbs: Sequence[Any], statuses: Sequence[str]) -> dict[str, str]:
    """The lifecycle value each verb of a command moves a record to, where the verb is not the value
    itself: `approve` -> approved, `deny` -> denied, `hold` -> on_hold, `return_for_changes` ->
    returned; a verb that undoes the only other move (`release` beside `hold`) goes back to the open
    value before it."""
    out: dict[str, str] = {}
    for verb in verbs:
        if not isinstance(verb, str) or verb in statuses:
            continue
        for word in dict.fromkeys((verb, verb.split("_")[0])):
            forms = (
                *naming.TRANSITION_VERBS.get(word, ()),
                f"{word}ed",
                f"{word}d",
                f"{word.removesuffix('e')}ed",
            )
            target = next((f for f in forms if f in statuses), None)
            if target is not None:
                out[verb] = target
                break
    moved = {t for v, t in out.items() if v not in UNDO_VERBS}
    for verb in verbs:
        if verb in UNDO_VERBS and verb not in out and len(moved) == 1:
            held = statuses.index(next(iter(moved)))
            back = [v for v in statuses[:held] if not naming.gone_for_good(v)]
            if back:
                out[verb] = back[-1]
    return out


def held_flag(spec: EnvSpec, tool: ToolSpec) -> AttributeSpec | None:
    """The parent's flag that says whether it holds the record a tool reaches through the parent's id
    (binding `parent`): an account's `autopay_enabled`, a profile's `has_parental_control`."""
    parent = tool.binding.get("parent")
    if not parent:
        return None
    name = tool.entity
    flags = {f"{name}_enabled", f"{name}_active", f"{name}_on", f"has_{name}", f"{name}_set"}
    owner = spec.entity(parent["parent"])
    return next((a for a in owner.attributes if a.type == "bool" and a.name in flags), None)


def held_live(e: EntitySpec, record: Mapping[str, Any], parent: Mapping[str, Any]) -> bool:
    """Whether a record its parent holds (a tool's binding `parent`) still counts as the parent's: it
    names a parent and its lifecycle has not ended (a cancelled autopay is the account's no more)."""
    status = e.status_attribute
    return record.get(parent["attr"]) is not None and (
        status is None or record.get(status.name) not in parent["ended"]
    )


def held_lifecycle(spec: EnvSpec, tool: ToolSpec) -> tuple[str, str, str] | None:
    """(the parent's status attribute, the value that names the record it holds, the open value
    before it) for a tool that reaches that record through the parent's id: an asset is `assigned`
    while its assignment lasts and `in_stock` before and after. None where the parent's declared
    lifecycle names no such value."""
    parent = tool.binding.get("parent")
    status = spec.entity(parent["parent"]).status_attribute if parent else None
    if status is None or (status.source != "seed" and status.declared is None):
        return None
    stem = re.sub(r"(ment|ation|ion)$", "", tool.entity)
    held = next(
        (v for v in status.enum if v in (f"{stem}ed", f"{stem}d", f"{stem.removesuffix('e')}ed")), None
    )
    before = (
        [v for v in status.enum[: status.enum.index(held)] if not naming.gone_for_good(v)] if held else []
    )
    return (status.name, str(held), before[0]) if held and before else None


def compound_of(tool: ToolSpec) -> dict[str, Any] | None:
    """A tool's cross-entity behaviour, or None for a tool that acts on one record alone."""
    found = tool.binding.get("compound")
    return found if isinstance(found, dict) and (found.get("requires") or found.get("steps")) else None


def is_compound(spec: EnvSpec, tool: ToolSpec) -> bool:
    """Whether a tool acts on two or more entities or enforces a rule across entities: a declared
    or derived compound behaviour, or a domain precondition read through a reference."""
    found = compound_of(tool)
    if found is not None and (
        len(set(found.get("touches", ())) | {tool.entity}) > 1
        or any(
            _reaches_another(tool.entity, part)
            for part in [*found.get("requires", ()), *found.get("steps", ())]
        )
    ):
        return True
    return any(
        r.kind == "precondition" and r.operation == tool.name and r.entity != tool.entity for r in spec.rules
    )


def _reaches_another(entity: str, part: Any) -> bool:
    """Whether a requirement or step reads another record: through a reference (`a->b`) or by
    selecting records (of any entity: "no open order on the account", "the count of its lines")."""
    if isinstance(part, dict):
        if "select" in part or "count" in part or "sum" in part:
            return True
        return any(_reaches_another(entity, v) for v in part.values())
    if isinstance(part, list):
        return any(_reaches_another(entity, v) for v in part)
    return isinstance(part, str) and "->" in part


def _table_of(spec: EnvSpec, entity: str) -> str:
    return spec.entity(entity).table


def follow(
    spec: EnvSpec, state: dict[str, Any], entity: str, record: dict[str, Any], path: str
) -> tuple[str, dict[str, Any] | None, str]:
    """(owner entity, owner record or None, attribute) at the end of a path from a record."""
    hops = path.split("->")
    current_entity: str = entity
    current: dict[str, Any] | None = record
    for hop in hops[:-1]:
        attr = spec.entity(current_entity).attribute(hop)
        value = current.get(hop) if current is not None else None
        if attr is None or attr.ref is None or value is None:
            return (attr.ref if attr is not None and attr.ref else current_entity), None, hops[-1]
        current_entity = attr.ref
        current = (state.get(_table_of(spec, current_entity)) or {}).get(str(value))
    return current_entity, current, hops[-1]


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def compound_value(
    spec: EnvSpec, state: dict[str, Any], entity: str, record: dict[str, Any], value: dict[str, Any], now: str
) -> Any:
    if "const" in value:
        return value["const"]
    if "path" in value:
        _, owner, attr = follow(spec, state, entity, record, value["path"])
        return None if owner is None else owner.get(attr)
    if "clock" in value:
        return now if value["clock"] == "now" else now[:10]
    if "expr" in value:
        parts = value["expr"]
        total = compound_value(spec, state, entity, record, parts[0], now)
        for op, part in zip(parts[1::2], parts[2::2], strict=True):
            other = compound_value(spec, state, entity, record, part, now)
            if not (_num(total) and _num(other)) or (op == "/" and other == 0):
                return None
            if op == "+":  # only the chosen operator: "/" by 0 is refused above
                total = total + other
            elif op == "-":
                total = total - other
            elif op == "*":
                total = total * other
            else:
                total = total / other
        return round(total, 2) if isinstance(total, float) else total
    if "count" in value:
        return len(select(spec, state, entity, record, value["count"], now))
    if "sum" in value:
        found = select(spec, state, entity, record, value["sum"], now)
        return round(sum(r.get(value["attr"]) or 0 for _, r in found if _num(r.get(value["attr"]))), 2)
    return None


def _same(a: Any, b: Any) -> bool:
    """Whether a record's value is the one a selector wants; a list of ids wants any of them."""
    if isinstance(b, list) and not isinstance(a, list):
        return any(_same(a, x) for x in b)
    return a == b or (a is not None and b is not None and not _num(a) and str(a) == str(b))


def select(
    spec: EnvSpec, state: dict[str, Any], entity: str, record: dict[str, Any], sel: dict[str, Any], now: str
) -> list[tuple[str, dict[str, Any]]]:
    """The records a selector matches, by key."""
    wanted = {
        attr: (want["in"], None)
        if "in" in want
        else (None, compound_value(spec, state, entity, record, want, now))
        for attr, want in sel["where"].items()
    }
    table = state.get(_table_of(spec, sel["entity"])) or {}
    out = []
    for key in sorted(table):
        rec = table[key]
        if all(
            (rec.get(a) in options) if options is not None else _same(rec.get(a), v)
            for a, (options, v) in wanted.items()
        ):
            out.append((key, rec))
    return out


_COMPARE = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b, ">=": lambda a, b: a >= b, ">": lambda a, b: a > b,
}  # fmt: skip


def requirement_failure(
    spec: EnvSpec, state: dict[str, Any], entity: str, record: dict[str, Any], req: dict[str, Any], now: str
) -> str | None:
    """Why a requirement does not hold for the target record, or None when it holds (or applies only
    `when` another condition holds, and that one does not)."""
    if req.get("when") and requirement_failure(spec, state, entity, record, req["when"], now) is not None:
        return None
    if req["kind"] == "none":
        found = select(spec, state, entity, record, req["select"], now)
        if found:
            return f"{req['text']} ({len(found)} {req['select']['entity'].replace('_', ' ')} records match: {[k for k, _ in found][:5]})"
        return None
    _, owner, attr = follow(spec, state, entity, record, req["left"])
    left = None if owner is None else owner.get(attr)
    if req["kind"] == "in":
        good = left in req["right"] if req["op"] == "in" else left not in req["right"]
        return None if good else f"{req['text']} ({req['left']} is {left!r})"
    right = compound_value(spec, state, entity, record, req["right"], now)
    if req.get("skip_null") and (left is None or right is None):
        return None  # an empty reference agrees with anything
    try:
        if req["right"] == {"const": None} and req["op"] in ("==", "!="):
            good = (left is None) == (req["op"] == "==")  # `x == null`: is it empty
        else:
            good = left is not None and right is not None and _COMPARE[req["op"]](left, right)
    except TypeError:
        good = False
    return None if good else f"{req['text']} ({req['left']} is {left!r}, needs {req['op']} {right!r})"


def apply_steps(
    spec: EnvSpec, state: dict[str, Any], entity: str, key: str, now: str, steps: list[dict[str, Any]]
) -> dict[str, Any]:
    """The state after a compound tool's steps, given the state with its own change to the target
    already applied (a new dict; the input is left alone). New side records take the ids
    `new_ids[entity]` yields, in order; a step whose path ends nowhere changes nothing."""
    import copy

    out = {k: copy.deepcopy(v) if isinstance(v, dict) else v for k, v in state.items()}
    table = _table_of(spec, entity)
    for step in steps:
        record = out[table].get(str(key)) or {}
        if step.get("when") and requirement_failure(spec, out, entity, record, step["when"], now):
            continue
        if step["kind"] in ("set", "add", "subtract"):
            owner_entity, owner, attr = follow(spec, out, entity, record, step["path"])
            if owner is None:
                continue
            value = compound_value(spec, out, entity, record, step["value"], now)
            if step["kind"] == "set":
                owner[attr] = value
            elif _num(owner.get(attr)) and _num(value):
                moved = owner[attr] + value if step["kind"] == "add" else owner[attr] - value
                owner[attr] = round(moved, 2) if isinstance(moved, float) else moved
        elif step["kind"] == "each":
            values = {a: compound_value(spec, out, entity, record, v, now) for a, v in step["fields"].items()}
            for _, rec in select(spec, out, entity, record, step["select"], now):
                rec.update(copy.deepcopy(values))
        # `create` steps are checked against the records that appeared (their ids are the class's)
    return out
