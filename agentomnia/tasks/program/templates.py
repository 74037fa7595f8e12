"""The offline proposer: program plans composed from an environment spec, and their program source.

Three templates, each a loop over a query result with state-dependent branches:
- filter_write: list records (optionally narrowed by an enum filter), select those meeting a numeric
  or date rule, apply a write to each; if none qualifies, handle the single highest-ranked record;
- join_write: the deciding fact lives on a referenced parent record, fetched per item (cached);
- aggregate_pick: total and average over the records of one kind, then act on the top record
  (ties broken by id, a secondary decision rule).
Thresholds come from the state's own values, so every rule splits the records it ranges over.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any, Literal

from agentomnia.envs.spec import AttributeSpec, EntitySpec, EnvSpec, ToolSpec
from agentomnia.tasks.dag.describe import done_when
from agentomnia.tasks.program.plan import Join, Predicate, ProgramPlan, Write

_NUMERIC = ("int", "float", "money")


def _records(state: Mapping[str, Any], e: EntitySpec) -> list[dict[str, Any]]:
    table = state.get(e.table)
    return [table[k] for k in sorted(table)] if isinstance(table, dict) else []


def _list_tool(spec: EnvSpec, e: EntitySpec, size: int) -> ToolSpec | None:
    for t in spec.tools:
        if t.entity != e.name or t.op != "list" or t.binding.get("key") or t.parameters.get("required"):
            continue
        if t.binding.get("where"):
            continue  # "list_open_tickets" never lists every ticket a request speaks of
        limit = t.parameters.get("properties", {}).get("limit")
        if limit is None or int(limit.get("maximum", 20)) < size + 5:
            continue
        return t
    return None


def _writes(spec: EnvSpec, e: EntitySpec) -> list[Write]:
    """Writes a program can apply to one record of `e` knowing only its key."""
    out: list[Write] = []
    for t in spec.tools:
        if t.entity != e.name or t.kind != "write" or not t.binding.get("key"):
            continue
        required = set(t.parameters.get("required", []))
        key = t.binding["key"]
        if t.op == "transition" and required <= {key}:
            attr = t.binding["attr"]
            allowed = next(
                (
                    r.allowed
                    for r in spec.rules
                    if r.kind == "transition" and r.entity == e.name and r.attr == attr
                ),
                None,
            )
            sources = None
            if allowed:
                sources = tuple(sorted(s for s, targets in allowed.items() if t.binding["value"] in targets))
            out.append(
                Write(
                    tool=t.name,
                    key_param=key,
                    op="transition",
                    attr=attr,
                    value=t.binding["value"],
                    allowed_from=sources,
                )
            )
        elif t.op == "update":
            for param, attr_name in t.binding.get("fields", {}).items():
                a = e.attribute(attr_name)
                if a is None or required - {key, param}:
                    continue
                if a.type == "enum" and a is not e.status_attribute:
                    out.append(
                        Write(
                            tool=t.name,
                            key_param=key,
                            op="update",
                            attr=a.name,
                            value=a.enum[-1],
                            param=param,
                        )
                    )
                elif a.type == "bool":
                    out.append(
                        Write(tool=t.name, key_param=key, op="update", attr=a.name, value=True, param=param)
                    )
    return out


def _records_the_move(attr: str, write: Write) -> bool:
    """Whether a date field records the very state the write moves records to: "every filing granted
    before March: switch it to granted" asks to grant what its own date says was granted."""
    done = done_when(attr)
    return done is not None and done == str(write.value).replace("_", " ").lower()


def _threshold(values: list[Any], rng: random.Random, kind: str) -> tuple[str, Any]:
    """A comparison that splits the records at their middle value, with the roundest number that
    splits them the same way: "at least 10" where the values are 9.87 and 10.4239, not "at least
    10.4239"."""
    ordered = sorted(values)
    pivot = ordered[len(ordered) // 2] if len(ordered) > 2 else ordered[0]
    if kind == "date":
        return rng.choice(("<", ">=")), str(pivot)[:10]
    op = rng.choice((">", ">="))
    below = [v for v in ordered if v < pivot]
    above = [v for v in ordered if v > pivot]
    if op == ">=" and not below:  # "at least 0" of values that start at 0 picks every record
        op = ">"
    if op == ">=":  # any t in (the next value down, pivot] keeps the same records
        return op, roundest(below[-1] if below else pivot - abs(pivot) * 0.1 - 1, pivot, closed="high")
    return op, roundest(pivot, above[0] if above else pivot + abs(pivot) * 0.1 + 1, closed="low")


def roundest(low: float, high: float, *, closed: Literal["low", "high"]) -> Any:
    """The number with the fewest significant digits in (low, high] (`closed="high"`) or [low, high)
    (`closed="low"`): 42000 between 41877.2 and 42267.7; an int where both ends are ints."""
    integral = isinstance(low, int) and isinstance(high, int)
    span = max(abs(low), abs(high), 1e-9)
    for exponent in range(int(math.floor(math.log10(span))) + 1, -5, -1):
        step = 10.0**exponent
        if closed == "high":
            x = math.floor(high / step) * step
            ok = x > low
        else:
            x = math.ceil(low / step) * step
            ok = x < high
        if ok:
            x = round(x, max(0, -exponent))
            return int(x) if integral or float(x).is_integer() and exponent >= 0 else x
    return high if closed == "high" else low


# last words of figures that are positions, labels or levels, which nobody adds up or averages
_NOT_ADDITIVE = frozenset({
    "version", "number", "no", "num", "seq", "sequence", "rank", "level", "year", "index", "position",
    "order", "priority", "lat", "latitude", "lng", "lon", "longitude", "zip", "code", "tier", "grade",
})  # fmt: skip


def additive(name: str) -> bool:
    """Whether a numeric field's values add up to something (amounts, counts, weights), so a request
    may ask for their total and average; a version, a rank or a year does not."""
    return name.lower().rpartition("_")[2] not in _NOT_ADDITIVE


def _numeric_attrs(e: EntitySpec, exclude: set[str]) -> list[AttributeSpec]:
    return [a for a in e.attributes if a.type in _NUMERIC and a.name != e.key and a.name not in exclude]


def _list_filter(
    tool: ToolSpec, e: EntitySpec, recs: list[dict[str, Any]], write: Write, rng: random.Random
) -> dict[str, Any]:
    """An enum filter of the list tool that keeps at least three records, when one exists."""
    options = []
    for param, attr_name in tool.binding.get("filters", {}).items():
        a = e.attribute(attr_name)
        if a is None or a.type != "enum" or attr_name == write.attr:
            continue
        for value in a.enum:
            if sum(1 for r in recs if r.get(attr_name) == value) >= 3:
                options.append({param: value})
    return rng.choice(options) if options and rng.random() < 0.5 else {}


def propose_plans(spec: EnvSpec, state: Mapping[str, Any], rng: random.Random) -> list[ProgramPlan]:
    """Candidate plans over every entity that can be listed and written; shuffled, best kinds mixed."""
    plans: list[ProgramPlan] = []
    for e in spec.entities:
        recs = _records(state, e)
        if len(recs) < 4:
            continue
        lister = _list_tool(spec, e, len(recs))
        if lister is None:
            continue
        limit = int(lister.parameters["properties"]["limit"].get("maximum", 100))
        for write in _writes(spec, e):
            base = {
                "entity": e.name,
                "table": e.table,
                "key": e.key,
                "list_tool": lister.name,
                "write": write,
            }
            for a in _numeric_attrs(e, {write.attr}) + [x for x in e.attributes if x.type == "date"]:
                values = [r.get(a.name) for r in recs if r.get(a.name) is not None]
                if len(set(values)) < 3 or _records_the_move(a.name, write):
                    continue
                kind = "date" if a.type == "date" else "number"
                op, value = _threshold(values, rng, kind)
                filters = _list_filter(lister, e, recs, write, rng)
                summed = kind == "number" and additive(a.name)
                plans.append(ProgramPlan(template="filter_write", list_args={**filters, "limit": limit},
                                         predicate=Predicate(attr=a.name, op=op, value=value, kind=kind),  # type: ignore[arg-type]
                                         total_attr=a.name if summed else None, **base))  # fmt: skip
                if summed:
                    group = next((g for g in e.attributes if g.type == "enum" and g.name != write.attr), None)
                    if group is not None:
                        present = sorted(
                            {str(r.get(group.name)) for r in recs if r.get(group.name) is not None}
                        )
                        if len(present) >= 2:
                            plans.append(ProgramPlan(
                                template="aggregate_pick", list_args={"limit": limit}, fallback="none",
                                predicate=Predicate(attr=group.name, op="==", value=rng.choice(present), kind="enum"),
                                total_attr=a.name, **base))  # fmt: skip
            for ref in (a for a in e.attributes if a.type == "ref" and a.ref and a.ref != e.name):
                parent = spec.entity(ref.ref or "")
                getter = next((t for t in spec.tools if t.entity == parent.name and t.op == "get"), None)
                precs = _records(state, parent)
                if getter is None or len(precs) < 3:
                    continue
                linked = [state[parent.table].get(r.get(ref.name)) for r in recs]
                linked = [p for p in linked if p]
                choices: list[Predicate] = []
                for pa in parent.attributes:
                    vals = [p.get(pa.name) for p in linked if p.get(pa.name) is not None]
                    if pa.name == parent.key or len(set(map(str, vals))) < 2:
                        continue
                    if pa.type in _NUMERIC:
                        op, value = _threshold(vals, rng, "number")
                        choices.append(Predicate(attr=pa.name, op=op, value=value, kind="number"))  # type: ignore[arg-type]
                    elif pa.type == "enum":
                        choices.append(
                            Predicate(attr=pa.name, op="==", value=rng.choice(sorted(set(vals))), kind="enum")
                        )
                if choices:
                    plans.append(ProgramPlan(
                        template="join_write", list_args={"limit": limit}, predicate=rng.choice(choices), fallback="none",
                        join=Join(ref_attr=ref.name, parent=parent.name, get_tool=getter.name, get_param=getter.binding["key"]),
                        **base))  # fmt: skip
    rng.shuffle(plans)
    # one plan per (template, entity) first, so a small n still spans templates and entities
    seen: set[tuple[str, str]] = set()
    first = [p for p in plans if (p.template, p.entity) not in seen and not seen.add((p.template, p.entity))]  # type: ignore[func-returns-value]
    return first + [p for p in plans if p not in first]


def _condition(pred: Predicate, var: str) -> str:
    if pred.kind == "date":
        return f"{var} is not None and str({var})[:10] {pred.op} {pred.value!r}"
    if pred.kind in ("enum", "bool"):
        return f"{var} == {pred.value!r}"
    return f"{var} is not None and {var} {pred.op} {pred.value!r}"


def _top(pred: Predicate) -> str:
    return f"{'latest' if pred.kind == 'date' else 'highest'} {pred.attr.replace('_', ' ')}"


def render(plan: ProgramPlan) -> str:
    """The solution program of a plan: `solve(call)` for Sandbox.run_program."""
    w = plan.write
    args = f"{{{w.key_param!r}: key" + (f", {w.param!r}: {w.value!r}" if w.op == "update" else "") + "}"
    lines = [
        f'"""{plan.template} over {plan.table}: generated solution program."""',
        "",
        "",
        "def solve(call):",
        f"    listing = call({plan.list_tool!r}, **{plan.list_args!r})",
        '    if not listing["ok"]:',
        '        raise RuntimeError("listing failed: " + listing["error"]["message"])',
        '    items = listing["data"]["items"]',
        "    changed = []",
        "    refused = []",
        "    already = []",
        "",
        "    def apply(item):",
        f"        key = item[{plan.key!r}]",
        f"        if item.get({w.attr!r}) == {w.value!r}:",
        "            already.append(key)",
        "            return False",
    ]
    if plan.guard_status and w.allowed_from is not None:
        lines += [
            f"        if item.get({w.attr!r}) not in {w.allowed_from!r}:",
            f'            refused.append({{"id": key, "reason": "cannot move from " + str(item.get({w.attr!r}))}})',
            "            return False",
        ]
    lines += [
        f"        result = call({w.tool!r}, **{args})",
        '        if result["ok"]:',
        "            changed.append(key)",
        "            return True",
    ]
    if plan.record_refusals:
        lines += [
            '        refused.append({"id": key, "reason": result["error"]["code"]})',
            "        return False",
        ]
    else:
        lines += [
            '        raise RuntimeError("write refused for " + key + ": " + result["error"]["message"])'
        ]
    lines.append("")
    pred = plan.predicate
    total = plan.total_attr
    if plan.template == "filter_write":
        lines += [
            "    total = 0",
            "    for item in items:",
            f"        value = item.get({pred.attr!r})",
            f"        if not ({_condition(pred, 'value')}):",
            "            continue",
            "        if apply(item)" + (f" and item.get({total!r}) is not None:" if total else ":"),
            f"            total += item.get({total!r}) or 0" if total else "            total += 1",
            "    fallback_used = False",
            "    reason = None",
            "    if not changed:",
            f"        movable = [i for i in items if i.get({w.attr!r}) != {w.value!r} and i.get({pred.attr!r}) is not None]",
            f"        movable.sort(key=lambda i: (i.get({pred.attr!r}), i[{plan.key!r}]), reverse=True)",
            "        if movable and apply(movable[0]):",
            "            fallback_used = True",
            f'            reason = "no record met the rule; handled the one with the {_top(pred)}"',
            f"            total += (movable[0].get({total!r}) or 0)" if total else "            total += 1",
        ]
    elif plan.template == "join_write":
        j = plan.join
        assert j is not None  # the proposer sets a join for this template
        lines += [
            "    parents = {}",
            "    for item in items:",
            f"        parent_id = item.get({j.ref_attr!r})",
            "        if parent_id is None:",
            "            continue",
            "        if parent_id not in parents:",
            f"            found = call({j.get_tool!r}, **{{{j.get_param!r}: parent_id}})",
            '            parents[parent_id] = found["data"] if found["ok"] else None',
            "        parent = parents[parent_id]",
            "        if parent is None:",
            "            continue",
            f"        value = parent.get({pred.attr!r})",
            f"        if {_condition(pred, 'value')}:",
            "            apply(item)",
            "    total = len(changed)",
            "    fallback_used = not changed",
            '    reason = "no record met the rule; nothing was changed" if fallback_used else None',
        ]
    else:
        lines += [
            "    considered = []",
            "    for item in items:",
            f"        if {_condition(pred, f'item.get({pred.attr!r})')} and item.get({total!r}) is not None:",
            "            considered.append(item)",
            f"    total = round(sum(i[{total!r}] for i in considered), 2)",
            "    best = None",
            "    for item in considered:",
            f"        if best is None or item[{total!r}] > best[{total!r}] or (item[{total!r}] == best[{total!r}] and item[{plan.key!r}] < best[{plan.key!r}]):",
            "            best = item",
            "    fallback_used = best is None",
            '    reason = "no record of that kind exists; nothing was changed" if fallback_used else None',
            "    if best is not None:",
            "        apply(best)",
        ]
    answer = [
        '"changed": sorted(changed)',
        '"count": len(changed)',
        '"fallback_used": fallback_used',
        '"fallback_reason": reason',
        '"refused": refused',
        '"already": sorted(already)',
    ]
    if plan.template == "aggregate_pick":
        answer += [
            '"considered": len(considered)',
            '"total": total',
            '"average": round(total / len(considered), 2) if considered else None',
        ]
    elif total:
        answer.append('"total": round(total, 2)')
    lines.append("    return {" + ", ".join(answer) + "}")
    return "\n".join(lines) + "\n"
