"""State hardening operators (paper Appendix 11.1): make an initial state demand more of the agent.

A generated s0 is valid but easy: every name is distinct, no value sits on a rule boundary, no
history piles up under one record. Each operator here rewrites a copy of a state in one targeted
way — several lookalike candidates, distractors, a boundary value or a tie, evidence spread over a
join, an aggregatable history, records that writes can still move, a record a write can act on and a
read can confirm, records taken out of service, a twin entry that disagrees on one decisive field —
and every result is checked with `state_violations`, the same invariant checker the environments use.
An operator that cannot keep the invariants returns the state unchanged with
`applied=False` and says why, so callers never receive a broken state.

Every operator has the shape `op(spec, state, rng, **params) -> HardeningResult`; parameters are
optional (a target is drawn from the state when none is given), so operators compose in profiles.
"""

from __future__ import annotations

import copy
import math
import pickle
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field

from agentomnia.envs.semantic import World, editions, is_person, naming_attr, person_name
from agentomnia.envs.spec import AttributeSpec, EntitySpec, EnvSpec
from agentomnia.envs.state import make_value, overpaid, repair_rules, state_violations, world_for

State = dict[str, Any]


class HardeningResult(BaseModel):
    """The hardened state, what was done (for the task's internal spec) and the records it is about."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    state: dict[str, Any]
    notes: list[str] = Field(default_factory=list)
    targets: list[str] = Field(default_factory=list)  # keys of the records the change is about
    applied: bool = True
    operator: str = ""
    facts: dict[str, Any] = Field(default_factory=dict)  # structured details: entity, attr, values


# `op(spec, state, rng, **params) -> HardeningResult`; each operator names its own keyword parameters.
Operator = Callable[..., HardeningResult]


_NUMERIC = ("int", "float", "money")


# Set while the state being hardened is vouched for (it keeps every invariant): each rewrite is then
# re-checked only where it changed, which finds exactly what a full check would (see `violations_since`).
_VOUCHED: ContextVar[bool] = ContextVar("hardening_input_vouched", default=False)


def copy_state(state: Mapping[str, Any]) -> State:
    """A deep copy of a state. States are plain data, so a pickle round trip does what
    `copy.deepcopy` does at a fraction of the cost; anything pickle refuses falls back to deepcopy."""
    try:
        return cast(State, pickle.loads(pickle.dumps(dict(state), protocol=pickle.HIGHEST_PROTOCOL)))
    except (pickle.PicklingError, TypeError, AttributeError):
        return copy.deepcopy(dict(state))


def violations_since(
    spec: EnvSpec, start: Mapping[str, Any], state: Mapping[str, Any], *, start_valid: bool
) -> list[str]:
    """`state_violations(spec, state)`, examining only what changed since `start` when `start` is
    known to keep every invariant.

    Untouched tables cannot break a type, enum or rule on their own, and a reference or comparison
    into a changed table is attributed to the referring entity, which `state_violations(tables=...)`
    examines; so both ways find the same problems, the scoped one without re-reading what is the same.
    """
    if not start_valid:
        return state_violations(spec, state)
    changed = {t for t in set(start) | set(state) if start.get(t) != state.get(t)}
    return state_violations(spec, state, tables=changed) if changed else []


@contextmanager
def vouched(valid: bool = True) -> Iterator[None]:
    """Within the block, operators trust that the state they are given keeps every invariant."""
    token = _VOUCHED.set(valid)
    try:
        yield
    finally:
        _VOUCHED.reset(token)


def _table(state: Mapping[str, Any], entity: EntitySpec) -> dict[str, dict[str, Any]]:
    table = state.get(entity.table)
    return table if isinstance(table, dict) else {}


def new_key(entity: EntitySpec, table: Mapping[str, Any]) -> str:
    """The next free key in the environment's own scheme (prefix-NNN), so later creates never clash."""
    n = len(table) + 1
    while f"{entity.id_prefix}-{n:03d}" in table:
        n += 1
    return f"{entity.id_prefix}-{n:03d}"


def _unchanged(name: str, state: Mapping[str, Any], reason: str) -> HardeningResult:
    return HardeningResult(
        state=copy_state(state),
        notes=[f"{name} not applied: {reason}"],
        applied=False,
        operator=name,
    )


def _pick_entity(
    spec: EnvSpec,
    state: Mapping[str, Any],
    rng: random.Random,
    entity: str | None,
    need: Callable[[EntitySpec], bool],
) -> EntitySpec | None:
    if entity is not None:
        e = spec.entity(entity)
        return e if need(e) and _table(state, e) else None
    options = [e for e in spec.entities if need(e) and _table(state, e)]
    return rng.choice(options) if options else None


def _unique_attrs(spec: EnvSpec, entity: EntitySpec) -> set[str]:
    return {a for r in spec.rules if r.kind == "unique" and r.entity == entity.name for a in r.attrs}


def _redraw(
    attr: AttributeSpec, entity: EntitySpec, rng: random.Random, avoid: Any, world: World | None = None
) -> Any:
    """Another value of the attribute, from the domain's vocabulary (`world`) where there is one."""
    for _ in range(8):
        value = make_value(attr, entity, rng, rng.randint(100, 999), world=world)
        if value != avoid:
            return value
    return avoid


def _finish(
    spec: EnvSpec,
    name: str,
    original: Mapping[str, Any],
    state: State,
    notes: list[str],
    targets: list[str],
    facts: dict[str, Any] | None = None,
) -> HardeningResult:
    """Accept the rewrite only if it keeps every invariant; otherwise hand back the original."""
    problems = violations_since(spec, original, state, start_valid=_VOUCHED.get())
    if problems:
        return _unchanged(name, original, f"the rewrite would break an invariant ({problems[0]})")
    changed = [t for t in state if original.get(t) != state.get(t)]
    if changed and (over := sorted(overpaid(spec, state, changed) - overpaid(spec, original, changed))):
        # three near-identical payments of one invoice that add up to more than it is no world
        return _unchanged(name, original, f"the rewrite would pay more than {over[0]} against it")
    return HardeningResult(state=state, notes=notes, targets=targets, operator=name, facts=facts or {})


def _discriminator(entity: EntitySpec, exclude: set[str]) -> AttributeSpec | None:
    """An attribute that tells lookalikes apart in words: an enum first, then a number or a date."""
    for types in (("enum",), ("bool",), _NUMERIC, ("date", "datetime")):
        for a in entity.attributes:
            if a.type in types and a.name not in exclude and a.name != entity.key:
                return a
    return None


def _different(
    attr: AttributeSpec, entity: EntitySpec, rng: random.Random, current: Any, world: World | None = None
) -> Any:
    if attr.type == "enum":
        others = [v for v in attr.enum if v != current]
        return rng.choice(others) if others else current
    if attr.type == "bool":
        return not current if isinstance(current, bool) else True
    return _redraw(attr, entity, rng, current, world)


def multi_candidate(
    spec: EnvSpec,
    state: Mapping[str, Any],
    rng: random.Random,
    *,
    entity: str | None = None,
    key: str | None = None,
    count: int = 2,
) -> HardeningResult:
    """Seed `count` lookalikes of one record: the same name, a different value of one telling
    attribute, so only the full description picks the intended record."""
    name = "multi_candidate"
    e = _pick_entity(spec, state, rng, entity, lambda x: x.label_attribute is not None)
    if e is None or e.label_attribute is None:
        return _unchanged(name, state, "no entity with a name-like attribute has records")
    out: State = copy_state(state)
    table = _table(out, e)
    target = key if key is not None else rng.choice(sorted(table))
    if target not in table:
        return _unchanged(name, state, f"{e.name} {target!r} does not exist")
    label = e.label_attribute.name
    uniques = _unique_attrs(spec, e)
    if label in uniques:
        return _unchanged(name, state, f"{e.name}.{label} must be unique, so lookalikes cannot share it")
    pick = _discriminator(e, {label} | uniques)
    if pick is None:
        return _unchanged(name, state, f"{e.name} has no attribute that could tell lookalikes apart")
    original = table[target]
    added: list[str] = []
    for _ in range(count):
        clone = copy.deepcopy(original)
        k = new_key(e, table)
        clone[e.key] = k
        clone[pick.name] = _different(pick, e, rng, original.get(pick.name), world_for(spec, out))
        for u in sorted(uniques - {e.key}):  # sorted: a set's order changes with the hash seed
            attr = e.attribute(u)
            if attr is not None and attr.type not in ("ref",):
                clone[u] = _redraw(attr, e, rng, original.get(u), world_for(spec, out))
        table[k] = clone
        added.append(k)
    notes = [
        f"{len(added) + 1} {e.table} share {label} {original.get(label)!r}; only {target} has "
        f"{pick.name}={original.get(pick.name)!r}"
    ]
    facts = {"entity": e.name, "key": target, "label": label, "discriminator": pick.name, "lookalikes": added}
    return _finish(spec, name, state, out, notes, [target, *added], facts)


def lookalike(name: str, entity: EntitySpec, world: World, rng: random.Random, taken: set[str]) -> str:
    """A name a careless reader takes for `name`, as such records are really called: a person of the
    same surname ("Daniel Chan" beside "Donald Chan"), a variant of a product or a place ("Classic
    Cheeseburger Deluxe"), never an edition number ("Classic Cheeseburger III")."""
    words = name.split()
    if is_person(entity) and len(words) >= 2:
        for _ in range(40):
            first, _last = person_name(world, rng)
            made = " ".join([first, *words[1:]])
            if first != words[0] and made not in taken:
                return made
    variants = editions(name)
    rng.shuffle(variants)
    return next((v for v in variants if v not in taken), f"{name} (copy)")


def distractor_injection(
    spec: EnvSpec,
    state: Mapping[str, Any],
    rng: random.Random,
    *,
    entity: str | None = None,
    key: str | None = None,
    count: int = 3,
) -> HardeningResult:
    """Add records that resemble one record (same references, a near-identical name, nearby values)
    but are not it: reading carelessly picks the wrong one."""
    name = "distractor_injection"
    e = _pick_entity(spec, state, rng, entity, lambda x: True)
    if e is None:
        return _unchanged(name, state, "no entity has records")
    out: State = copy_state(state)
    table = _table(out, e)
    target = key if key is not None else rng.choice(sorted(table))
    if target not in table:
        return _unchanged(name, state, f"{e.name} {target!r} does not exist")
    original = table[target]
    label = e.label_attribute
    uniques = _unique_attrs(spec, e)
    added: list[str] = []
    world = world_for(spec, out) if label is not None else None
    for i in range(count):
        clone = copy.deepcopy(original)
        k = new_key(e, table)
        clone[e.key] = k
        if label is not None and world is not None and isinstance(original.get(label.name), str):
            taken = {str(r.get(label.name)) for r in table.values()}
            # drawn from its own generator: the operator's draws, and so the tasks made, stay as they were
            alike = random.Random(f"{original[label.name]}:{i}")
            if naming_attr(label, e):
                clone[label.name] = lookalike(original[label.name], e, world, alike, taken)
            else:  # a record known by its weather or its notes: another such value, not "Heavy rain Deluxe"
                clone[label.name] = _redraw(label, e, alike, original[label.name], world)
        for a in e.attributes:
            v = original.get(a.name)
            if a.name in (e.key, label.name if label else "") or a.type == "ref" or v is None:
                continue
            if a.type in _NUMERIC and not isinstance(v, bool):
                moved = near_value(v, a.type, rng.choice((-2, -1, 1, 2)))
                clone[a.name] = max(moved, 0) if a.type == "money" else moved
            elif a.name in uniques:
                clone[a.name] = _redraw(a, e, rng, v, world_for(spec, out))
        for a in e.attributes:  # a shared link inside a uniqueness rule would clash: vary it
            if a.type == "ref" and a.name in uniques:
                pool = sorted(_table(out, spec.entity(a.ref or "")))
                clone[a.name] = (
                    pool[(pool.index(v) + i + 1) % len(pool)] if (v := original.get(a.name)) in pool else v
                )
        table[k] = clone
        added.append(k)
    repair_rules(spec, out)
    notes = [f"{count} {e.table} resemble {target} (same links, near-identical name and values)"]
    facts = {"entity": e.name, "key": target, "distractors": added}
    return _finish(spec, name, state, out, notes, [target, *added], facts)


def near_value(value: float, kind: str, steps: int) -> float:
    """`value` moved `steps` steps of a size a person would call close for its magnitude: a hundredth of
    its leading digit's place (350,000 -> 348,000 or 351,000; 68.88 -> 68.68; 12 -> 11), whole for an
    int, at least a cent for money, written as precisely as the value or the step (never 350,000.5)."""
    if not value:
        step = 1.0
    else:
        step = 10.0 ** (math.floor(math.log10(abs(value))) - 2)
    if kind == "int":
        return int(value + max(1, round(step)) * steps)
    if kind == "money":
        return round(value + max(step, 0.01) * steps, 2)
    written = len(repr(float(value)).split(".")[1].rstrip("0")) if "e" not in repr(float(value)) else 4
    return round(value + step * steps, min(4, max(written, -math.floor(math.log10(step)))))


def _range(spec: EnvSpec, entity: EntitySpec, attr: str) -> tuple[float | None, float | None]:
    for r in spec.rules:
        if r.kind == "range" and r.entity == entity.name and r.attr == attr:
            return r.min, r.max
    return None, None


def boundary_tie(
    spec: EnvSpec,
    state: Mapping[str, Any],
    rng: random.Random,
    *,
    entity: str | None = None,
    attr: str | None = None,
    keys: Sequence[str] | None = None,
    rounded: bool = False,
) -> HardeningResult:
    """Put one record's number exactly on its rule boundary (when a range rule exists) and make two
    records tie on it, so precise comparisons and tie-breaks decide the answer. Without a rule, the
    tie is on the first record's value; `rounded` makes it that value to two significant figures
    (10 for 10.4239), the kind of figure a person states as a threshold."""
    name = "boundary_tie"

    def numeric(x: EntitySpec) -> bool:
        return (
            any(a.type in _NUMERIC and a.name != x.key for a in x.attributes) and len(_table(state, x)) >= 2
        )

    e = _pick_entity(spec, state, rng, entity, numeric)
    if e is None:
        return _unchanged(name, state, "no entity has two records with a numeric attribute")
    candidates = [a for a in e.attributes if a.type in _NUMERIC and a.name != e.key]
    ruled = [a for a in candidates if _range(spec, e, a.name) != (None, None)]
    a = e.attribute(attr) if attr else rng.choice(ruled or candidates)
    if a is None or a.type not in _NUMERIC:
        return _unchanged(name, state, f"{e.name}.{attr} is not a numeric attribute")
    out: State = copy_state(state)
    table = _table(out, e)
    chosen = list(keys) if keys else rng.sample(sorted(table), 2)
    if len(chosen) < 2 or any(k not in table for k in chosen):
        return _unchanged(name, state, f"need two existing {e.table} records, got {chosen}")
    low, high = _range(spec, e, a.name)
    value: Any = high if high is not None else low if low is not None else table[chosen[0]].get(a.name)
    if value is None:
        return _unchanged(name, state, f"{e.name} {chosen[0]} has no {a.name}")
    if rounded and (low, high) == (None, None) and isinstance(value, (int, float)) and value:
        value = float(f"{value:.2g}")
    if a.type == "int":
        value = int(value)
    for k in chosen:
        table[k][a.name] = value
    where = "on its rule boundary" if (low, high) != (None, None) else "equal"
    notes = [f"{e.table} {', '.join(chosen)} tie on {a.name}={value!r} ({where})"]
    facts = {"entity": e.name, "attr": a.name, "value": value, "keys": chosen, "boundary": (low, high)}
    return _finish(spec, name, state, out, notes, chosen, facts)


def cross_entity_evidence(
    spec: EnvSpec,
    state: Mapping[str, Any],
    rng: random.Random,
    *,
    entity: str | None = None,
    key: str | None = None,
) -> HardeningResult:
    """Move the decisive fact behind a reference: the record now points at a fresh related record
    with a distinct value, so the evidence is only found by following the join."""
    name = "cross_entity_evidence"

    def has_ref(x: EntitySpec) -> bool:
        return any(a.type == "ref" and a.ref != x.name for a in x.attributes)

    e = _pick_entity(spec, state, rng, entity, has_ref)
    if e is None:
        return _unchanged(name, state, "no entity references another one")
    out: State = copy_state(state)
    table = _table(out, e)
    target = key if key is not None else rng.choice(sorted(table))
    if target not in table:
        return _unchanged(name, state, f"{e.name} {target!r} does not exist")
    refs = [a for a in e.attributes if a.type == "ref" and a.ref != e.name and table[target].get(a.name)]
    if not refs:
        return _unchanged(name, state, f"{e.name} {target} points at no other record")
    ref = rng.choice(refs)
    parent = spec.entity(ref.ref or "")
    parents = _table(out, parent)
    source = parents[table[target][ref.name]]
    clone = copy.deepcopy(source)
    k = new_key(parent, parents)
    clone[parent.key] = k
    pick = _discriminator(parent, _unique_attrs(spec, parent))
    if pick is not None:
        clone[pick.name] = _different(pick, parent, rng, source.get(pick.name), world_for(spec, out))
    for u in sorted(_unique_attrs(spec, parent) - {parent.key}):
        attr = parent.attribute(u)
        if attr is not None and attr.type != "ref":
            clone[u] = _redraw(attr, parent, rng, source.get(u), world_for(spec, out))
    parents[k] = clone
    table[target][ref.name] = k
    notes = [f"{e.name} {target} now links ({ref.name}) to a new {parent.name} {k}; its facts live there"]
    facts = {"entity": e.name, "key": target, "via": ref.name, "parent": parent.name, "parent_key": k}
    return _finish(spec, name, state, out, notes, [target, k], facts)


def aggregatable_history(
    spec: EnvSpec,
    state: Mapping[str, Any],
    rng: random.Random,
    *,
    entity: str | None = None,
    parent_key: str | None = None,
    count: int = 4,
) -> HardeningResult:
    """Give one record a history: several child records (events, payments, entries) under it with
    varied amounts and dates, so counts, sums and latest-of questions have substance."""
    name = "aggregatable_history"

    def child(x: EntitySpec) -> bool:
        return any(a.type == "ref" and a.ref != x.name for a in x.attributes)

    e = _pick_entity(spec, state, rng, entity, child)
    if e is None:
        return _unchanged(name, state, "no entity references another one")
    refs = [a for a in e.attributes if a.type == "ref" and a.ref != e.name]
    ref = refs[0]
    parent = spec.entity(ref.ref or "")
    out: State = copy_state(state)
    table, parents = _table(out, e), _table(out, parent)
    if not table or not parents:
        return _unchanged(name, state, f"{e.table} or {parent.table} is empty")
    owner = parent_key if parent_key is not None else rng.choice(sorted(parents))
    if owner not in parents:
        return _unchanged(name, state, f"{parent.name} {owner!r} does not exist")
    template = table[sorted(table)[0]]
    uniques = _unique_attrs(spec, e)
    added: list[str] = []
    for i in range(count):
        rec = copy.deepcopy(template)
        k = new_key(e, table)
        rec[e.key] = k
        rec[ref.name] = owner
        for a in e.attributes:
            if a.name in (e.key, ref.name):
                continue
            if a.type == "ref" and a.name in uniques:
                pool = sorted(_table(out, spec.entity(a.ref or "")))
                rec[a.name] = pool[(i + 1) % len(pool)] if pool else rec.get(a.name)
            elif a.type in (*_NUMERIC, "date", "datetime", "enum") or a.name in uniques:
                rec[a.name] = make_value(a, e, rng, len(table) + 1, world=world_for(spec, out))
        table[k] = rec
        added.append(k)
    repair_rules(spec, out)  # fresh amounts may exceed a range or a cross-record comparison
    notes = [f"{parent.name} {owner} has {count} more {e.table} ({ref.name}) with varied values"]
    facts = {"entity": e.name, "via": ref.name, "parent": parent.name, "parent_key": owner, "added": added}
    return _finish(spec, name, state, out, notes, [owner, *added], facts)


def mutable_objects(
    spec: EnvSpec,
    state: Mapping[str, Any],
    rng: random.Random,
    *,
    entity: str | None = None,
    count: int = 2,
) -> HardeningResult:
    """Make sure lifecycle records sit in stages that still have moves left, so transitions the
    task asks for are possible (a state where everything is closed admits no write)."""
    name = "mutable_objects"
    lifecycles = {r.entity: r for r in spec.rules if r.kind == "transition" and r.entity and r.attr}
    e = _pick_entity(spec, state, rng, entity, lambda x: x.name in lifecycles)
    if e is None:
        return _unchanged(name, state, "no entity has a lifecycle with records")
    rule = lifecycles[e.name]
    attr = rule.attr or ""
    movable = sorted(stage for stage, nexts in rule.allowed.items() if nexts)
    if not movable:
        return _unchanged(name, state, f"{e.name}.{attr} has no stage with a move out of it")
    out: State = copy_state(state)
    table = _table(out, e)
    stuck = sorted(k for k, r in table.items() if r.get(attr) not in movable)
    chosen = rng.sample(stuck, min(count, len(stuck)))
    for k in chosen:
        table[k][attr] = rng.choice(movable)
    notes = [f"{len(chosen)} {e.table} moved to stages with moves left ({attr} in {movable})"]
    facts = {"entity": e.name, "attr": attr, "keys": chosen}
    return _finish(spec, name, state, out, notes, chosen, facts)


def closed_loop(
    spec: EnvSpec,
    state: Mapping[str, Any],
    rng: random.Random,
    *,
    entity: str | None = None,
    key: str | None = None,
) -> HardeningResult:
    """Free one record from every reference to it (re-pointing its referrers to a sibling), so a
    delete or replace can succeed and a later read can confirm the effect."""
    name = "closed_loop"
    e = _pick_entity(
        spec, state, rng, entity, lambda x: any(t.entity == x.name and t.op == "delete" for t in spec.tools)
    )
    if e is None:
        return _unchanged(name, state, "no entity with a delete tool has records")
    out: State = copy_state(state)
    table = _table(out, e)
    referenced = {
        str(rec.get(a.name))
        for other in spec.entities
        for a in other.attributes
        if a.type == "ref" and a.ref == e.name
        for rec in _table(out, other).values()
        if rec.get(a.name) is not None
    } & set(table)
    # a record something refers to is the one worth freeing; with none, any record will do
    target = key if key is not None else rng.choice(sorted(referenced) or sorted(table))
    if target not in table:
        return _unchanged(name, state, f"{e.name} {target!r} does not exist")
    spare = next((k for k in sorted(table) if k != target), None)
    moved = 0
    for other in spec.entities:
        for a in other.attributes:
            if a.type != "ref" or a.ref != e.name:
                continue
            for rec in _table(out, other).values():
                if rec.get(a.name) is not None and str(rec.get(a.name)) == target:
                    if spare is None and not a.nullable:
                        return _unchanged(name, state, f"{e.name} {target} is referenced and has no sibling")
                    rec[a.name] = spare if spare is not None else None
                    moved += 1
    notes = [f"{e.name} {target} is referenced by nothing ({moved} references moved to {spare})"]
    return _finish(spec, name, state, out, notes, [target], {"entity": e.name, "key": target})


# Enum values (and flag names) that take a record out of service, matched as whole words of the
# entity's own value, so `Closed`, `out-of-stock` and `permanently_closed` all count and `enclosed`
# does not. Values that end a request (denied, rejected, settled) are outcomes, not unavailability,
# so they stay off the list: a denied claim is still a claim one can look up and act on.
UNAVAILABLE_WORDS = frozenset({
    "inactive", "closed", "cancelled", "canceled", "out_of_stock", "sold_out", "suspended", "archived",
    "discontinued", "retired", "expired", "withdrawn", "terminated", "deactivated", "disabled", "blocked",
    "unavailable", "void", "voided", "revoked", "decommissioned", "deleted", "lapsed", "banned", "obsolete",
    "frozen", "dormant", "locked", "out_of_service", "delisted", "unlisted", "on_hold",
})  # fmt: skip
# Boolean flags whose False means "not available" (a carrier with active=False takes no freight).
AVAILABLE_FLAGS = frozenset({"active", "available", "enabled", "in_stock", "open", "bookable", "in_service"})


def _words_of(value: str) -> str:
    return "_" + "_".join(value.lower().replace("-", " ").replace("_", " ").split()) + "_"


def means_unavailable(value: Any) -> bool:
    """Whether an enum value says its record is out of service (see UNAVAILABLE_WORDS)."""
    if not isinstance(value, str):
        return False
    padded = _words_of(value)
    return any(f"_{w}_" in padded for w in UNAVAILABLE_WORDS)


def _availability(entity: EntitySpec) -> tuple[AttributeSpec, tuple[Any, ...]] | None:
    """The attribute that says whether a record is in service, and its values that say it is not:
    the lifecycle enum first, then any other enum, then a flag such as `active` or `archived`."""
    status = entity.status_attribute
    enums = [a for a in entity.attributes if a.type == "enum"]
    for a in ([status] if status is not None else []) + [a for a in enums if a is not status]:
        values = tuple(v for v in a.enum if means_unavailable(v))
        if values:
            return a, values
    for a in entity.attributes:
        if a.type != "bool":
            continue
        name = a.name.removeprefix("is_")
        if name in AVAILABLE_FLAGS:
            return a, (False,)
        if means_unavailable(name):
            return a, (True,)
    return None


def has_availability(entity: EntitySpec) -> bool:
    """Whether `unavailable_entities` can act on this entity (it has a word for out of service)."""
    return _availability(entity) is not None


def unavailable_entities(
    spec: EnvSpec,
    state: Mapping[str, Any],
    rng: random.Random,
    *,
    entity: str | None = None,
    keys: Sequence[str] | None = None,
    count: int = 2,
) -> HardeningResult:
    """Take a few records out of service with the entity's own words for it (cancelled, inactive,
    out of stock...), so an agent that acts without checking availability picks a dead record.

    At least one record stays available. Where a lifecycle rule governs the attribute, records that
    could move to the unavailable stage in one step go first, so the state still tells a plausible
    story (a shipment is cancelled before pickup, not after delivery).
    """
    name = "unavailable_entities"
    e = _pick_entity(spec, state, rng, entity, has_availability)
    found = _availability(e) if e is not None else None
    if e is None or found is None:
        which = f"{entity} has no records or" if entity else "no entity with records has"
        return _unchanged(name, state, f"{which} no status or flag that means unavailable")
    attr, dead = found
    out: State = copy_state(state)
    table = _table(out, e)
    live = sorted(k for k, r in table.items() if r.get(attr.name) not in dead)
    lifecycle = next(
        (r for r in spec.rules if r.kind == "transition" and r.entity == e.name and r.attr == attr.name), None
    )

    def moves(k: str) -> tuple[str, ...]:
        return lifecycle.allowed.get(str(table[k].get(attr.name)), ()) if lifecycle else ()

    if keys is not None:
        missing = [k for k in keys if k not in table]
        if missing:
            return _unchanged(name, state, f"{e.name} {missing[0]!r} does not exist")
        chosen = [k for k in keys if k in live]
    else:
        first = [k for k in live if any(v in dead for v in moves(k))]
        rest = [k for k in live if k not in first]
        rng.shuffle(first)
        rng.shuffle(rest)
        chosen = (first + rest)[: max(0, min(count, len(live) - 1))]  # one record stays available
    if not chosen:
        return _unchanged(name, state, f"{e.table} has no available record to spare (needs two or more)")
    values: dict[str, Any] = {}
    for k in chosen:
        options = [v for v in dead if v in moves(k)] or list(dead)
        values[k] = table[k][attr.name] = rng.choice(options)
    available = sorted(k for k, r in table.items() if r.get(attr.name) not in dead)
    shown = ", ".join(f"{k} ({attr.name}={v!r})" for k, v in values.items())
    notes = [f"{len(chosen)} {e.table} are out of service: {shown}; {len(available)} remain available"]
    facts = {
        "entity": e.name,
        "attr": attr.name,
        "values": values,
        "unavailable": chosen,
        "available": available,
    }
    return _finish(spec, name, state, out, notes, chosen, facts)


def _decisive(entity: EntitySpec, exclude: set[str]) -> AttributeSpec | None:
    """The field two otherwise identical records can disagree on that changes what one does with
    them: the lifecycle status first, then an amount, then any enum, flag, number or date."""
    status = entity.status_attribute
    order: list[AttributeSpec] = [status] if status is not None else []
    for types in (("money",), ("enum",), ("bool",), ("int", "float"), ("date", "datetime")):
        order += [a for a in entity.attributes if a.type in types and a not in order]
    return next((a for a in order if a.name not in exclude and a.name != entity.key), None)


def _conflicting_value(
    spec: EnvSpec, attr: AttributeSpec, entity: EntitySpec, rng: random.Random, current: Any
) -> Any:
    if attr.type in _NUMERIC and isinstance(current, (int, float)) and not isinstance(current, bool):
        low, high = _range(spec, entity, attr.name)
        factor = rng.choice((0.5, 0.75, 1.25, 1.5))
        value: Any = int(round(current * factor)) if attr.type == "int" else round(current * factor, 2)
        value = min(max(value, low if low is not None else value), high if high is not None else value)
        if value != current:
            return value
    return _different(attr, entity, rng, current, world_for(spec))


def conflicting_target(spec: EnvSpec, entity: EntitySpec) -> bool:
    """Whether `conflicting_states` can act on this entity (a twin could disagree on some field)."""
    return _decisive(entity, _single_unique(spec, entity)) is not None


def conflicting_states(
    spec: EnvSpec,
    state: Mapping[str, Any],
    rng: random.Random,
    *,
    entity: str | None = None,
    key: str | None = None,
) -> HardeningResult:
    """Add a twin of one record: the same name, links, dates and text, but a different value of one
    decisive field (its status, its amount), so reading one entry is not enough; the agent has to
    notice there are two and check which one the request is about.

    Uniqueness rules decide what the twin may share: where a rule covers the decisive field the twin
    differs there anyway; otherwise one other field of the rule is changed as little as possible.
    """
    name = "conflicting_states"
    e = _pick_entity(spec, state, rng, entity, lambda x: conflicting_target(spec, x))
    if e is None:
        which = f"{entity} has no records or" if entity else "no entity with records has"
        return _unchanged(name, state, f"{which} no field two entries could disagree on")
    out: State = copy_state(state)
    table = _table(out, e)
    target = key if key is not None else rng.choice(sorted(table))
    if target not in table:
        return _unchanged(name, state, f"{e.name} {target!r} does not exist")
    decisive = _decisive(e, _single_unique(spec, e))
    if decisive is None:
        return _unchanged(name, state, f"{e.name} has no field two entries could disagree on")
    original = table[target]
    twin_key = new_key(e, table)
    for _ in range(6):  # a drawn value may break a comparison rule; a few draws find one that fits
        twin = copy.deepcopy(original)
        twin[e.key] = twin_key
        twin[decisive.name] = _conflicting_value(spec, decisive, e, rng, original.get(decisive.name))
        for rule in spec.rules:
            if rule.kind != "unique" or rule.entity != e.name or decisive.name in rule.attrs:
                continue
            _break_tie(spec, out, e, twin, original, rule.attrs, rng)
        table[twin_key] = twin
        if twin.get(decisive.name) != original.get(decisive.name) and not state_violations(
            spec, out, tables={e.table}
        ):
            break
        del table[twin_key]
    else:
        return _unchanged(name, state, f"no value of {e.name}.{decisive.name} keeps every rule for a twin")
    shared = sorted(
        a.name for a in e.attributes if a.name != e.key and twin.get(a.name) == original.get(a.name)
    )
    notes = [
        f"{e.name} {twin_key} repeats {target} ({', '.join(shared) or 'no field'}) but has "
        f"{decisive.name}={twin.get(decisive.name)!r} instead of {original.get(decisive.name)!r}"
    ]
    facts = {
        "entity": e.name,
        "key": target,
        "twin": twin_key,
        "attr": decisive.name,
        "values": {target: original.get(decisive.name), twin_key: twin.get(decisive.name)},
        "shared": shared,
    }
    return _finish(spec, name, state, out, notes, [target, twin_key], facts)


def _single_unique(spec: EnvSpec, entity: EntitySpec) -> set[str]:
    """Attributes unique on their own: a twin can never share them, so they cannot be the decider."""
    return {
        r.attrs[0] for r in spec.rules if r.kind == "unique" and r.entity == entity.name and len(r.attrs) == 1
    }


def _break_tie(
    spec: EnvSpec,
    state: Mapping[str, Any],
    entity: EntitySpec,
    twin: dict[str, Any],
    original: Mapping[str, Any],
    attrs: Sequence[str],
    rng: random.Random,
) -> None:
    """Change one member of a uniqueness rule on the twin, a plain field before a link."""
    members = [a for name in attrs if (a := entity.attribute(name)) is not None]
    for a in sorted(members, key=lambda x: x.type == "ref"):
        if a.type != "ref":
            twin[a.name] = _redraw(a, entity, rng, original.get(a.name), world_for(spec, state))
            return
        pool = sorted(_table(state, spec.entity(a.ref or "")))
        others = [k for k in pool if k != original.get(a.name)]
        if others:
            twin[a.name] = rng.choice(others)
            return


OPERATORS: dict[str, Operator] = {
    "multi_candidate": multi_candidate,
    "distractor_injection": distractor_injection,
    "boundary_tie": boundary_tie,
    "cross_entity_evidence": cross_entity_evidence,
    "aggregatable_history": aggregatable_history,
    "mutable_objects": mutable_objects,
    "closed_loop": closed_loop,
    "unavailable_entities": unavailable_entities,
    "conflicting_states": conflicting_states,
}
# Which taxonomy lever (and so which atom) each operator activates when a task depends on it.
LEVERS: dict[str, str] = {
    "multi_candidate": "multi_candidate",
    "distractor_injection": "distractor_injection",
    "boundary_tie": "boundary_tie",
    "cross_entity_evidence": "multi_entity_join",
    "aggregatable_history": "aggregation_required",
    "mutable_objects": "dependent_steps",
    "closed_loop": "dependent_steps",
    "unavailable_entities": "replan_on_failure",
    "conflicting_states": "conflicting_sources",
}


def apply_all(
    spec: EnvSpec,
    state: Mapping[str, Any],
    rng: random.Random,
    steps: Sequence[tuple[str, dict[str, Any]]],
    *,
    valid: bool = False,
) -> tuple[dict[str, Any], list[HardeningResult]]:
    """Apply operators in order, each to the previous result; skipped ones are reported, not fatal.

    `valid=True` vouches that `state` keeps every invariant (a verified environment's s0): every
    operator then re-checks only what it changed. Results are always fresh copies; `state` is never
    modified (every operator copies before it writes).
    """
    for op_name, _params in steps:
        if op_name not in OPERATORS:
            raise KeyError(f"unknown hardening operator {op_name!r}; use one of {', '.join(OPERATORS)}")
    if not steps:
        return copy_state(state), []
    current: Mapping[str, Any] = state
    results: list[HardeningResult] = []
    with vouched(valid):
        for op_name, params in steps:
            result = OPERATORS[op_name](spec, current, rng, **params)
            results.append(result)
            current = result.state  # valid again: an operator hands back a state that keeps every rule
    return results[-1].state, results
