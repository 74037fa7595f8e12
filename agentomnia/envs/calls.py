"""Tool calls made up from a state: valid ones (grounded in records that exist and in what the rules
allow) and deliberately invalid ones (a missing argument, a wrong type, an unknown id).

Verification exercises every tool with both; rollouts mix them; task synthesis reuses the valid
ones as the grounded steps of reference solutions.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from typing import Any

from agentomnia.envs.spec import AttributeSpec, EnvSpec, ToolSpec
from agentomnia.envs.state import make_value

Call = tuple[str, dict[str, Any]]


def _records(state: Mapping[str, Any], spec: EnvSpec, entity: str) -> list[dict[str, Any]]:
    table = state.get(spec.entity(entity).table) or {}
    return [table[k] for k in sorted(table)]


def _range_of(spec: EnvSpec, entity: str, attr: str) -> tuple[float | None, float | None]:
    for r in spec.rules:
        if r.kind == "range" and r.entity == entity and r.attr == attr:
            return r.min, r.max
    return None, None


def _value_for(
    spec: EnvSpec,
    state: Mapping[str, Any],
    tool: ToolSpec,
    param: str,
    schema: Mapping[str, Any],
    rng: random.Random,
) -> Any:
    e = spec.entity(tool.entity)
    attr_name = (
        tool.binding.get("fields", {}).get(param) or tool.binding.get("filters", {}).get(param) or param
    )
    attr = e.attribute(attr_name)
    if "enum" in schema:  # the tool's own schema is stricter than the attribute it writes
        return rng.choice(schema["enum"])
    kind = schema.get("type", "string")
    if kind == "array":
        items = schema.get("items") or {}
        if "enum" in items:
            return sorted(rng.sample(list(items["enum"]), k=min(len(items["enum"]), rng.randint(1, 2))))
        return []
    if attr is not None and attr.type == "ref":
        pool = _records(state, spec, attr.ref or "")
        target = spec.entity(attr.ref or "")
        return rng.choice(pool)[target.key] if pool else None
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
            subject = (state.get(target.table) or {}).get(rec.get(ref.name)) if ref and target else None
        if subject is None or subject.get(r.attr or "") not in r.values:
            return False
    return True


def _referenced(spec: EnvSpec, state: Mapping[str, Any], entity: str) -> set[str]:
    return {
        rec.get(a.name)
        for e in spec.entities
        for a in e.attributes
        if a.type == "ref" and a.ref == entity
        for rec in (state.get(e.table) or {}).values()
    }


def valid_calls(
    spec: EnvSpec, state: Mapping[str, Any], tool: ToolSpec, rng: random.Random, tries: int = 6
) -> Iterator[dict[str, Any]]:
    """Candidate arguments that should succeed; the caller tries them in order until one does."""
    e = spec.entity(tool.entity)
    props: dict[str, Any] = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    b = tool.binding
    records = _records(state, spec, e.name)
    if tool.op == "transition":
        # records whose lifecycle allows the move come first
        allowed = next(
            (
                r.allowed
                for r in spec.rules
                if r.kind == "transition" and r.entity == e.name and r.attr == b.get("attr")
            ),
            None,
        )

        def fits(rec: dict[str, Any]) -> bool:
            cur = rec.get(b["attr"])
            return cur != b["value"] and (allowed is None or b["value"] in allowed.get(str(cur), ()))

        records = [r for r in records if fits(r)] + [r for r in records if not fits(r)]
    else:
        records = rng.sample(records, len(records))
    if tool.op == "delete":
        used = _referenced(spec, state, e.name)
        records = [r for r in records if r[e.key] not in used] + [r for r in records if r[e.key] in used]
    if any(r.kind == "precondition" and r.operation == tool.name for r in spec.rules):
        records = [r for r in records if _precondition_ok(spec, state, tool, r)] + [
            r for r in records if not _precondition_ok(spec, state, tool, r)
        ]
    for attempt in range(tries):
        args: dict[str, Any] = {}
        key_param: str = b.get("key") or ""
        if tool.op == "lookup":
            rec = records[attempt % len(records)] if records else None
            if rec is None:
                return
            if attempt % 2 == 0:
                args[key_param] = rec[e.key]
            else:
                args[b["label"]] = rec.get(b["label"]) or ""
            yield args
            continue
        if key_param:
            if not records:
                return
            args[key_param] = records[attempt % len(records)][e.key]
        for p, schema in props.items():
            if p == key_param or p in args:
                continue
            if tool.op == "range":
                dates = sorted(str(r.get(b["attr"]))[:10] for r in records if r.get(b["attr"]))
                args["start"], args["end"] = (dates[0], dates[-1]) if dates else ("2026-01-01", "2026-12-31")
                continue
            if tool.op == "manage" and p == "action":
                args[p] = "update" if records else "create"
                continue
            if tool.op == "aggregate" and p in ("group_by", "sum_of"):
                args[p] = schema["enum"][attempt % len(schema["enum"])]
                continue
            if tool.op == "search" and p == "query":
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
            current = next((r for r in records if r[e.key] == args[key_param]), {})
            target_attr = e.attribute(b["attr"])
            pool = (
                [r for r in _records(state, spec, target_attr.ref or "")]
                if target_attr and target_attr.ref
                else []
            )
            target_key = spec.entity(target_attr.ref).key if target_attr and target_attr.ref else ""
            others = [r[target_key] for r in pool if r[target_key] != current.get(b["attr"])]
            if others:  # pointing at the record it already points at changes nothing
                args[b["param"]] = rng.choice(others)
        if tool.op == "manage" and args.get("action") == "create":
            args.pop(key_param, None)
        if tool.op in ("update", "manage") and key_param in args:
            current = next((r for r in records if r[e.key] == args[key_param]), {})
            fields = b.get("fields", {})
            if all(current.get(fields.get(p, p)) == v for p, v in args.items() if p in fields):
                changeable = [
                    p
                    for p in fields
                    if p in props and props[p].get("type") in ("string", "integer", "number")
                ]
                if changeable:  # an update to the values a record already has changes nothing
                    p = changeable[attempt % len(changeable)]
                    args[p] = _value_for(spec, state, tool, p, props[p], rng)
        yield args


def invalid_calls(
    spec: EnvSpec, state: Mapping[str, Any], tool: ToolSpec
) -> list[tuple[str, dict[str, Any]]]:
    """(what is wrong, arguments) pairs that must be refused without touching the state."""
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
    typed = next(
        (p for p, s in props.items() if s.get("type") in ("integer", "number", "boolean") or "enum" in s),
        None,
    )
    if typed is not None:
        wrong = dict(base)
        wrong[typed] = "not-a-valid-value" if props[typed].get("type") != "string" else "__no_such_option__"
        out.append((f"ill-typed `{typed}`", wrong))
    key = tool.binding.get("key")
    if key and key in base:
        unknown = dict(base)
        unknown[key] = "NOPE-999"
        out.append((f"unknown `{key}`", unknown))
    return out


def attribute_for(spec: EnvSpec, tool: ToolSpec, param: str) -> AttributeSpec | None:
    e = spec.entity(tool.entity)
    return e.attribute(tool.binding.get("fields", {}).get(param, param))
