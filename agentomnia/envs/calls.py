"""Tool calls made up from a state: valid ones (grounded in records that exist and in what the rules
allow) and deliberately invalid ones (a missing argument, a wrong type, an unknown id).

Verification exercises every tool with both; rollouts mix them; task synthesis reuses the valid
ones as the grounded steps of reference solutions.

Arguments satisfy the tool's parameter schema, which for a seed's tool is the seed's own (pattern,
length, format, anyOf, nullable): a value made from the attribute's name is kept where the schema
takes it, else one is made from the schema (`values.schema_value`). A parameter that names a record
(the key, a reference) gets an existing record's key value as the state holds it (an `int` for an
integer key). Invalid values come from `values.schema_violation`. Everything is deterministic
given the rng passed in (invalid calls use fixed seeds).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from typing import Any

from agentomnia.envs.spec import (
    AttributeSpec,
    EntitySpec,
    EnvSpec,
    ToolSpec,
    action_targets,
    compound_of,
    compound_value,
    follow,
    held_live,
    requirement_failure,
    select,
)
from agentomnia.envs.state import (
    CLOCK,
    CLOCK_START,
    _rule_entity,
    lookup,
    make_value,
    owned_references,
    owner_disagrees,
    repair_rules,
    satisfying,
    state_violations,
)
from agentomnia.envs.values import (
    check,
    conforms,
    json_types,
    schema_key,
    schema_value,
    schema_violation,
)

Call = tuple[str, dict[str, Any]]


def _records(state: Mapping[str, Any], spec: EnvSpec, entity: str) -> list[dict[str, Any]]:
    table = state.get(spec.entity(entity).table) or {}
    return [table[k] for k in sorted(table)]


def _range_of(spec: EnvSpec, entity: str, attr: str) -> tuple[float | None, float | None]:
    for r in spec.rules:
        if r.kind == "range" and r.entity == entity and r.attr == attr:
            return r.min, r.max
    return None, None


def _fit_key(value: Any, schema: Mapping[str, Any] | None) -> Any:
    """A record's key value as a parameter passes it: as typed, or its string form where the
    parameter's schema takes that and not the typed value (a path parameter declared as a string)."""
    if value is None or not schema or conforms(value, schema, formats=False):
        return value
    return str(value) if conforms(str(value), schema, formats=False) else value


def _same_key(a: Any, b: Any) -> bool:
    return a is not None and b is not None and str(a) == str(b)


def _declared(tool: ToolSpec, attr: AttributeSpec | None) -> bool:
    """Whether a parameter's schema is the seed's (so its formats count too), not the platform's."""
    return tool.origin == "seed" or (attr is not None and attr.declared is not None)


def _with_range(schema: Mapping[str, Any], low: float | None, high: float | None) -> dict[str, Any]:
    """The parameter schema narrowed by a domain range rule on the attribute it writes."""
    out = dict(schema)
    types = json_types(schema) or []
    if not ({"integer", "number"} & set(types)):
        return out
    if low is not None:
        out["minimum"] = max(low, out["minimum"]) if isinstance(out.get("minimum"), (int, float)) else low
    if high is not None:
        out["maximum"] = min(high, out["maximum"]) if isinstance(out.get("maximum"), (int, float)) else high
    return out


def _value_for(
    spec: EnvSpec,
    state: Mapping[str, Any],
    tool: ToolSpec,
    param: str,
    schema: Mapping[str, Any],
    rng: random.Random,
) -> Any:
    """A value for one parameter: the platform's plausible value where the schema takes it, else
    one made from the schema (narrowed by the attribute's range rule); records named by key."""
    e = spec.entity(tool.entity)
    attr_name = (
        tool.binding.get("fields", {}).get(param) or tool.binding.get("filters", {}).get(param) or param
    )
    attr = e.attribute(attr_name)
    if attr is not None and attr.type == "ref" and "enum" not in schema and schema.get("type") != "array":
        pool = _records(state, spec, attr.ref or "")
        target = spec.entity(attr.ref or "")
        return _fit_key(rng.choice(pool)[target.key], schema) if pool else None
    if attr is not None and attr.name == e.key and tool.op in ("create", "manage") and _declared(tool, attr):
        # a seed's create that takes the new record's id: one that is not taken yet
        table = state.get(e.table) or {}
        fresh = schema_key(schema, rng, index=len(table) + 1, taken=set(table), name=param)
        if fresh is not None:
            return fresh
    value = _platform_value(spec, state, tool, param, schema, rng, e.name, attr_name, attr)
    low, high = _range_of(spec, e.name, attr_name)
    narrowed = _with_range(schema, low, high)
    strict = _declared(tool, attr)
    if value is not None and check(value, narrowed, formats=strict) is not False:
        return value
    if not strict and value is not None and check(value, narrowed, formats=False) is None:
        return value
    return schema_value(narrowed, rng, name=param, index=rng.randint(1, 99))


def _platform_value(
    spec: EnvSpec,
    state: Mapping[str, Any],
    tool: ToolSpec,
    param: str,
    schema: Mapping[str, Any],
    rng: random.Random,
    entity: str,
    attr_name: str,
    attr: AttributeSpec | None,
) -> Any:
    e = spec.entity(entity)
    if "enum" in schema:  # the tool's own schema is stricter than the attribute it writes
        return rng.choice(schema["enum"])
    kind = schema.get("type", "string")
    if kind == "array":
        items = schema.get("items") or {}
        if "enum" in items:
            return sorted(rng.sample(list(items["enum"]), k=min(len(items["enum"]), rng.randint(1, 2))))
        return []
    if kind in ("integer", "number"):
        lo, hi = _range_of(spec, e.name, attr_name)
        lo = (
            max(x for x in (lo, schema.get("minimum"), schema.get("exclusiveMinimum")) if x is not None)
            if any(x is not None for x in (lo, schema.get("minimum"), schema.get("exclusiveMinimum")))
            else None
        )
        hi = (
            min(x for x in (hi, schema.get("maximum"), schema.get("exclusiveMaximum")) if x is not None)
            if any(x is not None for x in (hi, schema.get("maximum"), schema.get("exclusiveMaximum")))
            else None
        )
        if lo is not None or hi is not None:
            low = float(lo if lo is not None else 0)
            high = float(hi if hi is not None else low + 100)
            if kind == "integer":
                return rng.randint(int(-(-low // 1)), max(int(-(-low // 1)), int(high)))
            return round(rng.uniform(low, high), 2)
    shaped = isinstance(kind, list) or "anyOf" in schema or "oneOf" in schema or "pattern" in schema
    if shaped and (attr is None or attr.name == e.key or attr.type in ("list", "object")):
        return None  # nothing plausible to offer: the schema decides
    if attr is not None and attr.name != e.key and attr.type not in ("list", "object"):
        return make_value(attr, e, rng, rng.randint(1, 99))
    if kind == "integer":
        return rng.randint(1, 20)
    if kind == "number":
        return round(rng.uniform(1, 100), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "object":
        return {}
    if schema.get("format") == "date":
        return "2026-03-02"
    if schema.get("format") == "date-time":
        return "2026-03-02T10:00:00"
    return f"note {rng.randint(1, 999)}"


def _precondition_ok(spec: EnvSpec, state: Mapping[str, Any], tool: ToolSpec, rec: Mapping[str, Any]) -> bool:
    """Whether a record meets the domain's preconditions on this operation (own or via a reference)."""
    e = spec.entity(tool.entity)
    for r in spec.rules:
        if r.kind != "precondition" or r.operation != tool.name:
            continue
        subject: Mapping[str, Any] | None = rec
        if r.entity != e.name:
            ref = next((a for a in e.attributes if a.type == "ref" and a.ref == r.entity), None)
            target = spec.entity(r.entity or "") if ref else None
            subject = lookup(state.get(target.table), rec.get(ref.name)) if ref and target else None
        if subject is None or subject.get(r.attr or "") not in r.values:
            return False
    return True


def referenced_keys(spec: EnvSpec, state: Mapping[str, Any], entity: str) -> set[str]:
    """The keys (as `str`) of an entity's records that some reference points at."""
    return {
        str(rec.get(a.name))
        for e in spec.entities
        for a in e.attributes
        if a.type == "ref" and a.ref == entity
        for rec in (state.get(e.table) or {}).values()
        if rec.get(a.name) is not None
    }


def target_view(
    spec: EnvSpec,
    state: Mapping[str, Any],
    tool: ToolSpec,
    args: Mapping[str, Any],
    *,
    before_move: bool = False,
) -> dict[str, Any] | None:
    """The tool's target record as the call would leave it before any side effect: an existing
    record (or a new one) with the arguments' fields, the assigned reference and the lifecycle move
    applied (`before_move`: its lifecycle as it was, which is what a move's requirements read).
    None when the call names no record that exists."""
    e = spec.entity(tool.entity)
    b = tool.binding
    held = held_record(spec, state, tool, args)
    if tool.op == "create":
        record: dict[str, Any] = dict(held[1]) if held else _blank(e, str(state.get(CLOCK) or CLOCK_START))
    else:
        key = b.get("key")
        if b.get("parent"):
            found = held[1] if held else None
        else:
            found = lookup(state.get(e.table), args.get(key)) if key else None
        if not isinstance(found, dict):
            return None
        record = dict(found)
    for param, attr in b.get("fields", {}).items():
        if args.get(param) is not None:
            record[attr] = args[param]
    if tool.op == "assign" and args.get(b.get("param", "")) is not None:
        record[b["attr"]] = args[b["param"]]
    if tool.op == "transition" and not before_move:
        record[b["attr"]] = b["value"]
    return record


def held_record(
    spec: EnvSpec, state: Mapping[str, Any], tool: ToolSpec, args: Mapping[str, Any]
) -> tuple[str, dict[str, Any]] | None:
    """(key, record) of the record a parent holds that the call reaches through the parent's id
    (binding `parent`), as the generated code finds it: the newest live one; None when there is
    none or the tool reaches its record otherwise."""
    parent = tool.binding.get("parent")
    if not parent or args.get(parent["param"]) is None:
        return None
    e = spec.entity(tool.entity)
    table = state.get(e.table) or {}
    for key in sorted(table, reverse=True):
        record = table[key]
        if str(record.get(parent["attr"])) == str(args[parent["param"]]) and held_live(e, record, parent):
            return str(key), record
    return None


def admitted_commands(
    spec: EnvSpec, state: Mapping[str, Any], tool: ToolSpec, args: Mapping[str, Any]
) -> list[str]:
    """The values of a tool's command parameter (`action: hold | release`) whose move the record's
    lifecycle admits with these arguments, in the command's order; empty for a tool with none."""
    command = (compound_of(tool) or {}).get("command")
    if command is None:
        return []
    param = command["param"]
    return [
        v for v in command["targets"] if requirement_problem(spec, state, tool, {**args, param: v}) is None
    ]


def _blank(e: Any, now: str) -> dict[str, Any]:
    """A new record as the generated class starts one: defaults, the first enum value, the clock
    for required dates, empty values otherwise."""
    empty: dict[str, Any] = {"str": "", "text": "", "int": 0, "float": 0.0, "money": 0.0, "bool": False}
    record: dict[str, Any] = {}
    for a in e.attributes:
        if a.default is not None:
            record[a.name] = a.default
        elif a.type == "enum":
            record[a.name] = a.enum[0] if a.enum else None
        elif a.type == "datetime" and not a.nullable:
            record[a.name] = now
        elif a.type == "date" and not a.nullable:
            record[a.name] = now[:10]
        elif a.nullable or a.type == "ref":
            record[a.name] = None
        else:
            record[a.name] = [] if a.type == "list" else {} if a.type == "object" else empty.get(a.type)
    return record


def requirement_problem(
    spec: EnvSpec, state: Mapping[str, Any], tool: ToolSpec, args: Mapping[str, Any]
) -> str | None:
    """Why a compound tool would refuse these arguments on its requirements (None: they hold)."""
    found = compound_of(tool)
    if found is None:
        return None
    record = target_view(spec, state, tool, args, before_move=True)
    if record is None:
        return "no such record"
    now = str(state.get(CLOCK) or CLOCK_START)
    for req in found.get("requires", []):
        why = requirement_failure(spec, dict(state), tool.entity, record, req, now)
        if why:
            return why
    return None


def _bound(tool: ToolSpec) -> dict[str, str]:
    """parameter -> the attribute of the tool's record it sets (an assign's reference included)."""
    bound = dict(tool.binding.get("fields", {}))
    if tool.op == "assign":
        bound[tool.binding.get("param", "")] = tool.binding.get("attr", "")
    return bound


def _reads(req: Mapping[str, Any]) -> set[str]:
    """The attributes of the target record a requirement reads first (`pet_id` of `pet_id->deceased`)."""
    paths = [req.get("left") or ""]
    right = req.get("right")
    if isinstance(right, dict) and "path" in right:
        paths.append(right["path"])
    return {p.split("->")[0] for p in paths if p}


def reference_admits(
    spec: EnvSpec, state: Mapping[str, Any], tool: ToolSpec, args: Mapping[str, Any], param: str
) -> bool:
    """Whether pointing `param` where `args` does meets the compound tool's requirements that read
    through it (the patient must not be deceased) and through nothing still to be chosen: `args` are
    the arguments set so far, so a requirement across two references is judged once both are set."""
    found = compound_of(tool)
    if found is None:
        return True
    bound = _bound(tool)
    attr = bound.get(param, param)
    record = target_view(spec, state, tool, args, before_move=True)
    if record is None or tool.op == "create":  # only what the arguments set so far is known
        known = {bound.get(p, p) for p in args}
        record = record or {bound.get(p, p): v for p, v in args.items()}
    else:  # an existing record's fields, less the references the call has yet to point
        known = set(record) - {bound.get(p, p) for p, _ in _ref_params(spec, tool) if p not in args}
    now = str(state.get(CLOCK) or CLOCK_START)
    return not any(
        requirement_failure(spec, dict(state), tool.entity, record, req, now)
        for req in found.get("requires", [])
        if req.get("kind") != "none" and attr in (read := _reads(req)) and read <= known
    )


def _ref_params(spec: EnvSpec, tool: ToolSpec) -> list[tuple[str, str]]:
    """(parameter, referenced entity) for each argument that points a reference somewhere."""
    e = spec.entity(tool.entity)
    out = []
    for param, attr_name in _bound(tool).items():
        attr = e.attribute(attr_name)
        if attr is not None and attr.type == "ref" and attr.ref:
            out.append((param, attr.ref))
    return out


def _meet_requirements(
    spec: EnvSpec, state: Mapping[str, Any], tool: ToolSpec, args: dict[str, Any], rng: random.Random
) -> None:
    """Point the call's references at records that meet the tool's requirements and bring a
    compared amount within what its requirement allows, where the first draw does not. Each
    reference is chosen against the requirements that read through it, so two references with
    requirements of their own are both met."""
    found = compound_of(tool)
    if found is None or requirement_problem(spec, state, tool, args) is None:
        return
    props = tool.parameters.get("properties", {})
    now = str(state.get(CLOCK) or CLOCK_START)
    bound = _bound(tool)

    def holds(settled: set[str]) -> bool:
        """The requirements that read only references already chosen (and plain fields) hold; an
        amount the call gives is brought within its bound afterwards (`fit_compared_values`), so a
        refund's amount does not rule out the one order that may be refunded."""
        record = target_view(spec, state, tool, args, before_move=True) or {}
        return all(
            requirement_failure(spec, dict(state), tool.entity, record, req, now) is None
            for req in found.get("requires", [])
            if _reads(req) & chosen <= settled and not _fitted_later(req, props)
        )

    params = [(p, t) for p, t in _ref_params(spec, tool) if p in args]
    chosen = {bound.get(p, p) for p, _ in params}
    assigned = tool.binding.get("param", "") if tool.op == "assign" else ""
    current = (target_view(spec, state, tool, {**args, assigned: None}) or {}).get(
        tool.binding.get("attr", "")
    )

    def search(i: int, settled: set[str]) -> bool:
        """Choose the i-th reference and those after it so every requirement holds (backtracking)."""
        if i == len(params):
            return holds(settled)
        param, target = params[i]
        attr = bound.get(param, param)
        key = spec.entity(target).key
        pool = _records(state, spec, target)
        first = args[param]
        for rec in [None, *rng.sample(pool, min(len(pool), 24))]:
            if rec is not None:
                args[param] = _fit_key(rec[key], props.get(param))
            if param == assigned and _same_key(args[param], current):
                continue  # pointing at the record it already points at changes nothing
            if holds(settled | {attr}) and search(i + 1, settled | {attr}):
                return True
        args[param] = first
        return False

    search(0, set())
    fit_compared_values(spec, state, tool, args)


def _fitted_later(req: Mapping[str, Any], props: Mapping[str, Any]) -> bool:
    """Whether a requirement compares a number the call itself gives (which `fit_compared_values`
    brings within bounds)."""
    left = str(req.get("left", ""))
    return req.get("kind") == "compare" and "->" not in left and left in props


def fit_compared_values(
    spec: EnvSpec, state: Mapping[str, Any], tool: ToolSpec, args: dict[str, Any], *, dates: bool = False
) -> None:
    """Bring each argument a compound tool's requirement compares within what it allows: an amount
    (a payment at most the reservation's total) and, with `dates`, a date its requirement refuses
    (a check-out after the check-in, a vaccination given on or before today). Nothing else is touched."""
    found = compound_of(tool)
    if found is None:
        return
    now = str(state.get(CLOCK) or CLOCK_START)
    fields = {attr: param for param, attr in tool.binding.get("fields", {}).items()}
    mirrored = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
    for req in found.get("requires", []):
        right_path = (req.get("right") or {}).get("path") if req["kind"] == "compare" else None
        if (
            right_path is not None
            and right_path in fields
            and "->" not in right_path
            and req["left"] not in fields
        ):
            # `ref->amount >= $param`: read the other side, then bring the parameter within it
            req = {**req, "left": right_path, "op": mirrored[req["op"]], "right": {"path": req["left"]}}
        if req["kind"] != "compare" or "->" in req["left"] or req["left"] not in fields:
            continue
        record = target_view(spec, state, tool, args) or {}
        right = compound_value(spec, dict(state), tool.entity, record, req["right"], now)
        if dates and isinstance(right, str) and isinstance(args.get(fields[req["left"]]), str):
            moved = _date_beyond(right, req["op"])
            if moved is not None and requirement_failure(spec, dict(state), tool.entity, record, req, now):
                args[fields[req["left"]]] = moved
            continue
        if isinstance(right, (int, float)) and not isinstance(right, bool):
            param = fields[req["left"]]
            nudged: Any = {"<": right * 0.5, "<=": right * 0.5, ">": right * 1.5 + 1, "!=": right + 1}.get(
                req["op"], right
            )
            declared = (tool.parameters.get("properties") or {}).get(param) or {}
            whole = declared.get("type") == "integer" or (
                isinstance(args.get(param), int) and not isinstance(args.get(param), bool)
            )
            if whole:  # an integer parameter gets an integer
                nudged = int(nudged) if req["op"] != "<" or int(nudged) < right else int(right) - 1
            args[param] = round(nudged, 2) if isinstance(nudged, float) else nudged


def _date_beyond(date: str, op: str) -> str | None:
    """A date (or date-time, in the same form) on the side of `date` that `op` asks for: a week after
    it for > and >=, a week before for < and <=, the date itself for ==; None if `date` is no date."""
    from datetime import date as day
    from datetime import datetime, timedelta

    step = {">": 7, ">=": 7, "<": -7, "<=": -7, "==": 0}.get(op)
    if step is None:
        return None
    try:
        if len(date) == 10:
            return (day.fromisoformat(date) + timedelta(days=step)).isoformat()
        return (datetime.fromisoformat(date) + timedelta(days=step)).isoformat()
    except ValueError:
        return None


def breaking_calls(
    spec: EnvSpec, state: Mapping[str, Any], tool: ToolSpec
) -> list[tuple[str, dict[str, Any]]]:
    """Calls that are well-formed and name existing records but break one of a compound tool's
    requirements: the tool must refuse each with `precondition_failed` and change nothing."""
    if compound_of(tool) is None or not compound_of(tool).get("requires"):  # type: ignore[union-attr]
        return []
    rng = random.Random(2)
    e = spec.entity(tool.entity)
    props = tool.parameters.get("properties", {})
    key_param = tool.binding.get("key")
    # a delete refuses a record something still refers to before any rule (`in_use`): not a test of the rule
    in_use = referenced_keys(spec, state, e.name) if tool.op == "delete" else set()
    for args in valid_calls(spec, state, tool, rng, tries=2, meet=False):
        if key_param and key_param in args:
            for rec in _records(state, spec, e.name):
                trial = {**args, key_param: _fit_key(rec[e.key], props.get(key_param))}
                if tool.op == "transition" and not _transition_fits(spec, tool, rec):
                    continue
                if str(rec[e.key]) in in_use:
                    continue
                if requirement_problem(spec, state, tool, trial) is not None:
                    return [("breaks a requirement", trial)]
        for param, target in _ref_params(spec, tool):
            if param not in args:
                continue
            for rec in _records(state, spec, target):
                trial = {**args, param: _fit_key(rec[spec.entity(target).key], props.get(param))}
                if requirement_problem(spec, state, tool, trial) is not None:
                    return [("breaks a requirement", trial)]
    return []


def _transition_fits(spec: EnvSpec, tool: ToolSpec, rec: Mapping[str, Any]) -> bool:
    b = tool.binding
    allowed = next(
        (
            r.allowed
            for r in spec.rules
            if r.kind == "transition" and r.entity == tool.entity and r.attr == b.get("attr")
        ),
        None,
    )
    cur = rec.get(b["attr"])
    return cur != b["value"] and (allowed is None or b["value"] in allowed.get(str(cur), ()))


def _keep_record_rules(spec: EnvSpec, state: Mapping[str, Any], tool: ToolSpec, args: dict[str, Any]) -> None:
    """Bend the values a create or an update writes until the record keeps its entity's range and
    comparison rules (a feeder's load within its rated current): the record is built from the
    arguments over the one it replaces, mended as s0 is, and each argument it changed is set."""
    if tool.op not in ("create", "update", "manage"):
        return
    e = spec.entity(tool.entity)
    rules = [r for r in spec.rules if r.kind in ("range", "compare") and _rule_entity(r) == e.name]
    fields: dict[str, str] = {p: a for p, a in tool.binding.get("fields", {}).items() if p in args}
    if not rules or not fields:
        return
    key_param = tool.binding.get("key") or ""
    current = next(
        (
            r
            for r in _records(state, spec, e.name)
            if key_param in args and _same_key(r[e.key], args[key_param])
        ),
        {},
    )
    record = {**current, **{a: args[p] for p, a in fields.items()}}
    view = {**state, e.table: {"new": record}}  # only this record is mended; the rest is read
    repair_rules(spec.model_copy(update={"rules": rules}), view)
    for p, a in fields.items():
        if record.get(a) != args[p]:
            args[p] = record.get(a)


def valid_calls(
    spec: EnvSpec,
    state: Mapping[str, Any],
    tool: ToolSpec,
    rng: random.Random,
    tries: int = 6,
    *,
    meet: bool = True,
) -> Iterator[dict[str, Any]]:
    """Candidate arguments that should succeed; the caller tries them in order until one does
    (`meet=False`: without steering a compound tool's arguments onto records that meet its
    requirements)."""
    e = spec.entity(tool.entity)
    props: dict[str, Any] = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    b = tool.binding
    records = _records(state, spec, e.name)
    if tool.op == "transition":
        # records whose lifecycle allows the move come first

        def fits(rec: dict[str, Any]) -> bool:
            return _transition_fits(spec, tool, rec)

        records = [r for r in records if fits(r)] + [r for r in records if not fits(r)]
    else:
        records = rng.sample(records, len(records))
    if tool.op == "delete":
        used = referenced_keys(spec, state, e.name)
        records = [r for r in records if str(r[e.key]) not in used] + [
            r for r in records if str(r[e.key]) in used
        ]
    if any(r.kind == "precondition" and r.operation == tool.name for r in spec.rules):
        records = [r for r in records if _precondition_ok(spec, state, tool, r)] + [
            r for r in records if not _precondition_ok(spec, state, tool, r)
        ]
    if meet and b.get("key") and compound_of(tool) is not None:
        kp = b["key"]

        def meets(rec: dict[str, Any]) -> bool:
            if tool.op == "assign" and b.get("param") and b.get("attr"):
                # a record some other target may be assigned to under the requirements (a bill moved to
                # an account of its own user, where the user has another)
                target = e.attribute(b["attr"])
                pool = _records(state, spec, target.ref) if target is not None and target.ref else []
                tkey = spec.entity(target.ref).key if target is not None and target.ref else ""
                return any(
                    not _same_key(t[tkey], rec.get(b["attr"]))
                    and requirement_problem(spec, state, tool, {kp: rec[e.key], b["param"]: t[tkey]}) is None
                    for t in pool[:40]
                )
            return requirement_problem(spec, state, tool, {kp: rec[e.key]}) is None

        records = [r for r in records if meets(r)] + [r for r in records if not meets(r)]
        if any(r.kind == "precondition" and r.operation == tool.name for r in spec.rules):
            # nor one the operation's precondition refuses (only an encounter in progress is discharged)
            records.sort(key=lambda r: not _precondition_ok(spec, state, tool, r))
        if tool.op == "transition":  # a record the move does not fit fails whatever it meets
            records.sort(key=lambda r: not fits(r))
    parent = b.get("parent")
    if parent and tool.op != "create":  # the parent's live record, reached through the parent's id
        records = [r for r in records if held_live(e, r, parent)]
    for attempt in range(tries):
        args: dict[str, Any] = {}
        key_param: str = b.get("key") or ""
        if parent and tool.op != "create":
            if not records:
                return
            args[parent["param"]] = records[attempt % len(records)][parent["attr"]]
        if tool.op == "lookup":
            rec = records[attempt % len(records)] if records else None
            if rec is None:
                return
            if attempt % 2 == 0:
                args[key_param] = _fit_key(rec[e.key], props.get(key_param))
            else:
                args[b["label"]] = rec.get(b["label"]) or ""
            yield args
            continue
        if key_param:
            if not records:
                return
            args[key_param] = _fit_key(records[attempt % len(records)][e.key], props.get(key_param))
        for p, schema in props.items():
            if p == key_param or p in args:
                continue
            if tool.op == "range":
                dates = sorted(str(r.get(b["attr"]))[:10] for r in records if r.get(b["attr"]))
                args["start"], args["end"] = (dates[0], dates[-1]) if dates else ("2026-01-01", "2026-12-31")
                continue
            if tool.op == "manage" and p == "action":
                wanted = "update" if records else "create"
                offered = schema.get("enum") if isinstance(schema, dict) else None
                # a seed's manage tool may offer only its own verbs (accept, decline, counter): one
                # that moves the record on from where it is
                args[p] = (
                    wanted
                    if not offered or wanted in offered
                    else _moving_action(spec, e, tool, offered, records, args.get(key_param), attempt)
                )
                continue
            if tool.op == "aggregate" and p in ("group_by", "sum_of"):
                args[p] = schema["enum"][attempt % len(schema["enum"])]
                continue
            if tool.op == "search" and p == b.get("query", "query"):
                text = next(
                    (str(r.get(f)) for r in records for f in b.get("text_fields", []) if r.get(f)), "a"
                )
                args[p] = text.split()[0][:8] if text.split() else "a"
                continue
            if tool.op in ("list", "search", "range") and p != "limit" and p not in required:
                continue  # filters narrow reads; leave them out so something matches
            if p in required or tool.op in ("create", "update", "manage") and (attempt > 0 or len(args) < 3):
                value = _value_for(spec, state, tool, p, schema, rng)
                if value is not None:
                    args[p] = value
        if tool.op == "assign" and key_param in args:
            current = next((r for r in records if _same_key(r[e.key], args[key_param])), {})
            target_attr = e.attribute(b["attr"])
            pool = (
                [r for r in _records(state, spec, target_attr.ref or "")]
                if target_attr and target_attr.ref
                else []
            )
            target_key = spec.entity(target_attr.ref).key if target_attr and target_attr.ref else ""
            others = [r[target_key] for r in pool if not _same_key(r[target_key], current.get(b["attr"]))]
            if others:  # pointing at the record it already points at changes nothing
                args[b["param"]] = _fit_key(rng.choice(others), props.get(b["param"]))
        if meet:
            _meet_requirements(spec, state, tool, args, rng)
            _keep_record_rules(spec, state, tool, args)
            command = (compound_of(tool) or {}).get("command")
            admitted = admitted_commands(spec, state, tool, args) if command else []
            if command and admitted and args.get(command["param"]) not in admitted:
                args[command["param"]] = admitted[attempt % len(admitted)]
        if tool.op == "manage" and args.get("action") == "create":
            args.pop(key_param, None)
        if tool.op in ("update", "manage") and key_param in args:
            current = next((r for r in records if _same_key(r[e.key], args[key_param])), {})
            fields = b.get("fields", {})
            for p, attr in fields.items():  # a stage moves on where its lifecycle lets it
                moved = _next_stage(spec, e.name, attr, current.get(attr), args.get(p), props.get(p), rng)
                if moved is not None:
                    args[p] = moved
            if all(current.get(fields.get(p, p)) == v for p, v in args.items() if p in fields):
                changeable = [
                    p
                    for p in fields
                    if p in props
                    and {"string", "integer", "number"} & set(json_types(props[p]) or [])
                    and "const" not in props[p]
                ]
                if changeable:  # an update to the values a record already has changes nothing
                    p = changeable[attempt % len(changeable)]
                    held = current.get(fields.get(p, p))
                    for _ in range(8):  # a draw from a short list may well be the value it holds
                        args[p] = _value_for(spec, state, tool, p, props[p], rng)
                        if args[p] != held:
                            break
        yield args


def _moving_action(
    spec: EnvSpec,
    e: EntitySpec,
    tool: ToolSpec,
    offered: list[Any],
    records: list[dict[str, Any]],
    key: Any,
    attempt: int,
) -> Any:
    """One of a manage tool's own actions that moves the record `key` names to a status it is not in
    and may go to (`lock` a device that is unlocked); the attempt's in turn where none does."""
    status = e.status_attribute
    current = next((r for r in records if _same_key(r[e.key], key)), {})
    turned = offered[attempt % len(offered) :] + offered[: attempt % len(offered)]
    if status is None:
        return turned[0]
    targets = action_targets(tool, status.enum)
    rule = next(
        (r for r in spec.rules if r.kind == "transition" and r.entity == e.name and r.attr == status.name),
        None,
    )
    held = current.get(status.name)
    for action in turned:
        target = targets.get(action, action)
        if target != held and (rule is None or target in rule.allowed.get(str(held), ())):
            return action
    return turned[0]


def _next_stage(
    spec: EnvSpec, entity: str, attr: str, current: Any, wanted: Any, schema: Any, rng: random.Random
) -> Any:
    """A stage the record may move to from `current` under its lifecycle, where the update would send
    one it may not (an application at hiring_manager_screen goes on to onsite, not to hired); None
    where no lifecycle governs the attribute, the wanted stage is allowed, or no allowed one fits the
    parameter's schema."""
    rule = next(
        (r for r in spec.rules if r.kind == "transition" and r.entity == entity and r.attr == attr), None
    )
    if rule is None or wanted is None or wanted in rule.allowed.get(str(current), ()):
        return None
    fitting = [s for s in rule.allowed.get(str(current), ()) if schema is None or conforms(s, schema)]
    return rng.choice(fitting) if fitting else None


def invalid_calls(
    spec: EnvSpec, state: Mapping[str, Any], tool: ToolSpec
) -> list[tuple[str, dict[str, Any]]]:
    """(what is wrong, arguments) pairs that must be refused without touching the state.

    The ill-typed call breaks one parameter's schema (`schema_violation`: out of its enum, a type it
    does not admit, or out of its pattern, length or range), preferring numbers, booleans and enums;
    the unknown-id call names a key of the declared type that no record has.
    """
    out: list[tuple[str, dict[str, Any]]] = []
    props: dict[str, Any] = tool.parameters.get("properties", {})
    required = list(tool.parameters.get("required", []))
    base = next(valid_calls(spec, state, tool, random.Random(0), tries=1), None)
    if base is None:
        return out
    if required:
        missing = dict(base)
        missing.pop(required[0], None)
        out.append((f"missing required `{required[0]}`", missing))
    rng = random.Random(1)

    def typed(s: Any) -> bool:
        return isinstance(s, Mapping) and (s.get("type") in ("integer", "number", "boolean") or "enum" in s)

    order = [p for p, s in props.items() if typed(s)] + [
        p  # parameters the seed declares: any of them can be broken
        for p, s in props.items()
        if not typed(s) and _declared(tool, attribute_for(spec, tool, p))
    ]
    for p in order:
        bad = schema_violation(props[p], rng)
        if bad is not None:
            wrong = dict(base)
            wrong[p] = bad
            out.append((f"ill-typed `{p}`", wrong))
            break
    key = tool.binding.get("key")
    if key and key in base:
        table = state.get(spec.entity(tool.entity).table) or {}
        schema = props.get(key) or {"type": "string"}
        nope = schema_key(schema, rng, index=len(table) + 1, taken=set(table), name=key, fallback="NOPE-999")
        if nope is not None:
            unknown = dict(base)
            unknown[key] = nope
            out.append((f"unknown `{key}`", unknown))
    return out


def attribute_for(spec: EnvSpec, tool: ToolSpec, param: str) -> AttributeSpec | None:
    e = spec.entity(tool.entity)
    return e.attribute(tool.binding.get("fields", {}).get(param, param))


def stage_requirements(
    spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]], calls: int = 3
) -> list[str]:
    """Make the starting state hold, for every compound tool, calls its requirements admit.

    A domain rule such as "advice is presented only to a client whose KYC is verified" is refused in
    a state where no client is verified, and a tool no call of which can succeed from s0 cannot be
    verified (it would be dropped) nor start a task. Where no candidate call meets a tool's
    requirements, the records the first `calls` candidates read are brought into a state the
    requirement names (a status in its allowed set, an amount within its bound, a reference that
    agrees), each change kept only if every invariant still holds. Other records keep their values,
    so the refusal stays reachable too. Returns the tools so staged, in the order staged."""
    staged: list[str] = []
    claimed: set[int] = set()  # records an earlier tool's staging set up: not bent again for another
    # two passes: a tool staged later can set up what an earlier one needs (orders placed on an
    # encounter in progress give discharge_patient an encounter in progress to discharge)
    for tool in sorted(spec.tools, key=lambda t: t.name) * 2:
        if tool.name in staged:
            continue
        if _stage_preconditions(spec, state, tool, claimed):
            staged.append(tool.name)
            continue
        found = compound_of(tool)
        requires = [r for r in (found or {}).get("requires", []) if r["kind"] in ("in", "compare", "none")]
        if not requires:
            continue
        rng = random.Random(f"{spec.id}:{tool.name}")
        candidates = list(valid_calls(spec, state, tool, rng, tries=calls))
        if tool.op == "transition":
            # a record the move does not fit, or its precondition refuses, fails whatever it meets
            table = state.get(spec.entity(tool.entity).table)
            key = tool.binding.get("key") or ""
            candidates = [
                a
                for a in candidates
                if isinstance(rec := lookup(table, a.get(key, "")), dict)
                and _transition_fits(spec, tool, rec)
                and _precondition_ok(spec, state, tool, rec)
            ] or candidates
        if any(requirement_problem(spec, state, tool, a) is None for a in candidates):
            continue
        # a bend that leaves every record with its own owner's records first, then one that moves
        # one record away from its owner, and only then any that holds the requirements
        for slack in (0, 1, None):
            if sum(_stage_call(spec, state, tool, requires, args, claimed, slack) for args in candidates) or (
                tool.op == "assign"
                and _stage_on_other_target(spec, state, tool, requires, candidates, claimed, slack)
            ):
                staged.append(tool.name)
                break
    return staged


def _stage_on_other_target(
    spec: EnvSpec,
    state: dict[str, dict[str, dict[str, Any]]],
    tool: ToolSpec,
    requires: list[dict[str, Any]],
    candidates: list[dict[str, Any]],
    claimed: set[int],
    slack: int | None,
) -> bool:
    """Stage a move onto another target than the candidates drew, those nothing points at first: an
    account no bill is paid from can be made the bill's user's own without taking it from under
    another user's bills (`slack` says how many records may be left pointing at another's)."""
    b = tool.binding
    attr = spec.entity(tool.entity).attribute(b.get("attr", ""))
    if attr is None or not attr.ref or not b.get("param"):
        return False
    target = spec.entity(attr.ref)
    used = referenced_keys(spec, state, target.name)
    keys = [r[target.key] for r in _records(state, spec, target.name)]
    targets = sorted(keys, key=lambda k: str(k) in used)  # those nothing points at first
    schema = tool.parameters.get("properties", {}).get(b["param"])
    return any(
        _stage_call(spec, state, tool, requires, {**args, b["param"]: _fit_key(key, schema)}, claimed, slack)
        for args in candidates
        for key in targets
    )


def _stage_none(
    spec: EnvSpec,
    state: dict[str, dict[str, dict[str, Any]]],
    entity: str,
    record: dict[str, Any],
    req: dict[str, Any],
    now: str,
    undo: list[tuple[dict[str, Any], str, Any]],
    claimed: set[int],
) -> bool:
    sel = req["select"]
    other = spec.entity(sel["entity"])
    states = [
        (attr, want["in"])
        for attr, want in sel["where"].items()
        if isinstance(want, dict) and "in" in want and (a := other.attribute(attr)) is not None and a.enum
    ]
    if not states:
        return False
    attr, blocked = states[0]
    free = [v for v in other.attribute(attr).enum if v not in blocked]  # type: ignore[union-attr]
    if not free:
        return False
    for _key, rec in select(spec, state, entity, record, sel, now):
        if id(rec) in claimed:
            return False
        undo.append((rec, attr, rec.get(attr)))
        rec[attr] = free[0]
    return True


def _stage_preconditions(
    spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]], tool: ToolSpec, claimed: set[int]
) -> bool:
    """Where no record the tool may act on meets the domain's precondition on it (no planned trip has
    an available vehicle), bring the record it reads through one that the move fits into a state the
    precondition names, if every invariant still holds. True when so staged."""
    rules = [r for r in spec.rules if r.kind == "precondition" and r.operation == tool.name and r.values]
    key = tool.binding.get("key")
    if not rules or not key or tool.op == "create":
        return False
    e = spec.entity(tool.entity)
    records = [r for _, r in sorted((state.get(e.table) or {}).items())]
    fitting = [r for r in records if tool.op != "transition" or _transition_fits(spec, tool, r)]
    if not fitting or any(_precondition_ok(spec, state, tool, r) for r in fitting):
        return False
    for rec in fitting[:3]:
        undo: list[tuple[dict[str, Any], str, Any]] = []
        for r in rules:
            subject: Any = rec
            if r.entity != e.name:
                ref = next((a for a in e.attributes if a.type == "ref" and a.ref == r.entity), None)
                target = spec.entity(r.entity or "") if ref else None
                subject = lookup(state.get(target.table), rec.get(ref.name)) if ref and target else None
            if not isinstance(subject, dict) or id(subject) in claimed or not r.attr:
                break
            if subject.get(r.attr) not in r.values:
                undo.append((subject, r.attr, subject.get(r.attr)))
                subject[r.attr] = r.values[0]
        if undo and _precondition_ok(spec, state, tool, rec) and not state_violations(spec, state):
            claimed.update(id(subject) for subject, _, _ in undo)
            return True
        for subject, attr, old in reversed(undo):
            subject[attr] = old
    return False


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _astray(spec: EnvSpec, state: Mapping[str, Any]) -> int:
    """How many references point at another owner's record (a user's bill paid from someone else's
    account): staging may not add to them."""
    return sum(
        bool(owner_disagrees(state, spec, r, a, owner)) for r, a, owner, _ in owned_references(spec, state)
    )


def _stage_call(
    spec: EnvSpec,
    state: dict[str, dict[str, dict[str, Any]]],
    tool: ToolSpec,
    requires: list[dict[str, Any]],
    args: dict[str, Any],
    claimed: set[int],
    slack: int | None = None,
) -> bool:
    """Bend the records one call reads until its requirements hold; undo it all where they cannot, or
    where more than `slack` more records would point at another owner's record (None: any number)."""
    now = str(state.get(CLOCK) or CLOCK_START)
    record = target_view(spec, state, tool, args, before_move=True)
    if record is None:
        return False
    e = spec.entity(tool.entity)
    own = lookup(state.get(e.table), args.get(tool.binding.get("key") or "")) if tool.op != "create" else None
    undo: list[tuple[dict[str, Any], str, Any]] = []
    astray = _astray(spec, state) if slack is not None else 0
    for req in requires:
        if requirement_failure(spec, state, e.name, record, req, now) is None:
            continue
        if req["kind"] == "none":
            # records that must not exist (an encounter's pending orders): moved out of the states
            # the selector names (the orders resulted), where their entity has such a state
            if not _stage_none(spec, state, e.name, record, req, now, undo, claimed):
                break
            continue
        owner_entity, owner, attr = follow(spec, state, e.name, record, req["left"])
        if "->" not in req["left"]:
            owner = own if isinstance(own, dict) else None
        spec_attr = spec.entity(owner_entity).attribute(attr)
        if owner is None or spec_attr is None or id(owner) in claimed:
            break
        if req["kind"] == "in":
            allowed = (
                list(req["right"])
                if req["op"] == "in"
                else [v for v in spec_attr.enum if v not in req["right"]]
            )
            value: Any = allowed[0] if allowed else None
        else:
            right = compound_value(spec, state, e.name, record, req["right"], now)
            value = None if right is None else satisfying(owner.get(attr), right, req["op"])
        held: Any = owner.get(attr)
        if value is None or (_number(value) and _number(held) and value < 0 <= held):
            break  # a prescription with no refills authorised is not given -1 refills used
        undo.append((owner, attr, owner.get(attr)))
        owner[attr] = value
        if "->" not in req["left"]:
            record[attr] = value
    if (
        undo
        and requirement_problem(spec, state, tool, args) is None
        and not state_violations(spec, state)
        and (
            slack is None or _astray(spec, state) <= astray + slack
        )  # a user's account under another's bills
    ):
        claimed.update(id(owner) for owner, _, _ in undo)
        return True
    for owner, attr, old in reversed(undo):
        owner[attr] = old
    return False
