"""States of an environment: generate a valid s0 from a spec, and find every invariant a state breaks.

A state is `{table: {key: record}}` — the instance attributes of the generated class. Generation
is deterministic (seeded), walks entities so references point at records that exist, picks
plausible values by type and attribute name, and then repairs what the domain's rules forbid
(ranges, comparisons across references, uniqueness). `state_violations` is the one checker used
by initialization verification, environment rollouts and task hardening.
"""

from __future__ import annotations

import copy
import functools
import random
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import date, datetime, timedelta
from typing import Any

from agentomnia.envs import naming
from agentomnia.envs.semantic import (
    MISSING,
    NOW,
    UNITS_PER_USD,
    WHOLE_UNITS,
    World,
    before_clock,
    comes_before,
    created_before,
    creation_dates,
    dated_facts,
    day_times,
    first_dated,
    happened_by_now,
    into_the_day,
    is_derived,
    is_handle,
    leaf_string,
    moment_of,
    on_its_day,
    one_place,
    order_lifecycle,
    own_email,
    phase,
    retell,
    semantic_value,
    string_for,
    term_in_time,
    within_hours,
)
from agentomnia.envs.spec import AttributeSpec, EntitySpec, EnvSpec, held_flag, held_lifecycle, held_live
from agentomnia.envs.values import (
    BASE_DAY,
    CITIES,
    FIRST,
    LAST,
    LEAF_STRINGS,
    LEAF_WHERE,
    WORDS,
    allows_null,
    conforms,
    fits_hint,
    int_hint,
    json_types,
    schema_key,
    schema_value,
    type_matches,
)
from agentomnia.records import content_hash
from agentomnia.taxonomy.kinds import kind_values, paired_values
from agentomnia.taxonomy.knowledge import Rule

CLOCK = "now"  # the environment's logical clock: an ISO datetime in the state, never the host's time
CLOCK_START = "2026-03-02T09:00:00"


def _rng(spec: EnvSpec, seed: int) -> random.Random:
    return random.Random(int(content_hash({"spec": spec.id, "seed": seed}), 16))


def entity_order(spec: EnvSpec) -> list[EntitySpec]:
    """Entities so that referenced ones come first (cycles broken by leaving the later ref empty)."""
    by_name = {e.name: e for e in spec.entities}
    done: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in done or name in visiting:
            return
        visiting.add(name)
        for a in by_name[name].attributes:
            if a.type == "ref" and a.ref in by_name and a.ref != name:
                visit(a.ref)
        visiting.discard(name)
        done.append(name)

    for e in spec.entities:
        visit(e.name)
    return [by_name[n] for n in done]


def make_value(
    attr: AttributeSpec,
    entity: EntitySpec,
    rng: random.Random,
    index: int,
    *,
    world: World | None = None,
    record: dict[str, Any] | None = None,
    target_label: Callable[[AttributeSpec, Any], str | None] | None = None,
) -> Any:
    """A plausible value of an attribute: a semantic one first (`semantic.semantic_value`: the
    domain's vocabulary in `world`, else the attribute's name, type and entity; free text about
    `record`), within what the seed declares for it (`attr.declared`) where it declares something.
    A semantic value that the declared schema takes is kept (a loose `{"type": "string"}` called
    `email` still reads as an e-mail); otherwise the value is made from the schema."""
    if attr.declared is None:
        return _hinted_value(attr, entity, rng, index, world, record, target_label)
    try:
        hinted = _hinted_value(attr, entity, rng, index, world, record, target_label)
    except (IndexError, ValueError):  # e.g. an enum attribute whose options only the schema lists
        hinted = None
    if fits_hint(hinted, attr.declared):
        return hinted
    # strings inside the seed's lists and objects read like the domain's (see semantic.leaf_string)
    here = world if world is not None else World()
    owner = f"{entity.name}.{attr.name}"
    token = LEAF_STRINGS.set(lambda name, r: leaf_string(name, r, here, owner))
    where = LEAF_WHERE.set(owner)
    try:
        return schema_value(attr.declared, rng, name=attr.name, index=index)
    finally:
        LEAF_WHERE.reset(where)
        LEAF_STRINGS.reset(token)


# enum values that say a record fits none of the others: a few records have them, not one in three
_RESIDUAL = re.compile(
    r"(none|unknown|other|n/?a|not[ _]applicable|unspecified|prefer[ _]not[ _]to[ _]say|undisclosed|misc(ellaneous)?)",
    re.IGNORECASE,
)


def enum_value(values: Sequence[str], rng: random.Random) -> str:
    """One of an enum's values, each as likely as the next, except those that say "none of these"
    ("unknown", "other", "none"), a quarter as likely: 6 of 13 patients of sex "unknown" or "other"
    read as no clinic's records do."""
    residual = [_RESIDUAL.fullmatch(str(v)) is not None for v in values]
    if not any(residual) or all(residual):
        return rng.choice(values)
    return rng.choices(list(values), weights=[0.25 if r else 1.0 for r in residual])[0]


def _hinted_value(
    attr: AttributeSpec,
    entity: EntitySpec,
    rng: random.Random,
    index: int,
    world: World | None = None,
    record: dict[str, Any] | None = None,
    target_label: Callable[[AttributeSpec, Any], str | None] | None = None,
) -> Any:
    n = attr.name
    if attr.default is not None and rng.random() < 0.3:
        return attr.default
    t = attr.type
    meant = semantic_value(attr, entity, rng, index, world, record, target_label)
    if meant is not MISSING:
        return meant
    if t == "enum":
        return enum_value(attr.enum, rng)
    if t == "bool":
        return rng.random() < 0.6
    if t == "date":
        return (BASE_DAY + timedelta(days=rng.randint(-240, 120))).isoformat()
    if t == "datetime":
        moment = datetime(2026, 3, 2, 9, 0) + timedelta(
            days=rng.randint(-240, 120), minutes=15 * rng.randint(0, 40)
        )
        return moment.isoformat(timespec="seconds")
    if t == "money":
        hi = 20000 if re.search("salary|budget|limit|revenue|value|credit", n) else 900
        return round(rng.uniform(5, hi), 2)
    if t == "int":
        return int_hint(n, rng)
    if t == "float":
        if re.search("rate|ratio|share|probability|confidence", n):
            return round(rng.uniform(0.05, 0.99), 3)
        if re.search("rating|score", n):
            return round(rng.uniform(1, 5), 1)
        return round(rng.uniform(0.5, 500), 2)
    if t == "list":
        return sorted(rng.sample(WORDS, k=rng.randint(0, 3)))
    if t == "object":
        return {"note": rng.choice(WORDS)}
    # strings
    if "email" in n:
        return f"{rng.choice(FIRST).lower()}.{rng.choice(LAST).lower()}{index}@example.com".replace("ü", "u")
    if "phone" in n:
        return f"+1-555-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}"
    if re.search(r"(^|_)(first_)?name$|full_name|contact", n) and re.search(
        "user|customer|employee|patient|member|person|staff|driver|agent|contact|owner|guest|student|candidate|applicant|tutor|learner|technician",
        entity.name + n,
    ):
        return f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    if re.search("city|location|address|region|site", n):
        return (
            f"{rng.randint(1, 400)} {rng.choice(WORDS).title()} St, {rng.choice(CITIES)}"
            if "address" in n
            else rng.choice(CITIES)
        )
    if re.search("code|sku|number|reference|serial|plate", n):
        return f"{entity.id_prefix}-{rng.randint(10000, 99999)}"
    if re.search("currency", n):
        return rng.choice(("USD", "EUR", "JPY", "GBP"))
    if re.search("url|link", n):
        return f"https://example.com/{entity.table}/{index}"
    if t == "text" or re.search("note|description|comment|reason|summary|details|body|message", n):
        return f"{entity.name.replace('_', ' ').capitalize()} {index}: {rng.choice(WORDS)} {rng.choice(WORDS)} follow-up."
    label = entity.name.replace("_", " ").title()
    return f"{rng.choice(WORDS).title()} {label} {index}"


def world_for(spec: EnvSpec, state: Mapping[str, Any] | None = None) -> World:
    """The value world of a spec (its domain's vocabulary, locale, the attributes kept distinct); with
    `state`, the names its records already hold count as given out, so a record made later (a task's
    create, a hardening twin) does not take an existing record's name."""
    distinct = frozenset(
        (r.entity, r.attrs[0]) for r in spec.rules if r.kind == "unique" and r.entity and len(r.attrs) == 1
    )
    world = World.for_spec(spec.coordinate.taxonomy_id, spec.entities, distinct)
    for entity in spec.entities if state is not None else ():
        table = state.get(entity.table) if state is not None else None
        for record in table.values() if isinstance(table, Mapping) else ():
            if isinstance(record, Mapping):
                for a in entity.attributes:
                    value = record.get(a.name)
                    if isinstance(value, (str, int, float)):
                        world.used.setdefault((entity.name, a.name), set()).add(value)
    return world


def generate_state(
    spec: EnvSpec, seed: int = 0, sizes: Mapping[str, int] | None = None
) -> dict[str, dict[str, dict[str, Any]]]:
    """A valid initial state: every rule and reference satisfied.

    Tables are keyed by `str(record[key])`. A key the seed declares (`declared` on the key attribute)
    holds a value of its declared type: integers count 1..n (from the schema's minimum when it is
    above 1), uuids and patterned ids are drawn unique; an undeclared key is `PFX-007`.
    A reference holds the referenced record's key value, as typed.
    """
    rng = _rng(spec, seed)
    world = world_for(spec)
    state: dict[str, dict[str, dict[str, Any]]] = {}
    for entity in entity_order(spec):
        count = (sizes or {}).get(entity.name, rng.randint(6, 14))
        uniques = [r.attrs for r in spec.rules if r.kind == "unique" and r.entity == entity.name]
        seen: list[set[tuple[Any, ...]]] = [set() for _ in uniques]
        table: dict[str, dict[str, Any]] = {}
        key_attr = entity.attribute(entity.key)
        declared_key = key_attr.declared if key_attr is not None else None
        handle_key = key_attr is not None and is_handle(key_attr, entity, declared_key)
        taken: set[str] = set()
        for i in range(1, count + 1):
            key_value: Any = f"{entity.id_prefix}-{i:03d}"
            if declared_key is not None:
                key_value = schema_key(
                    declared_key, rng, index=i, taken=taken, name=entity.key, fallback=key_value
                )
                if key_value is None:  # the declared key space is exhausted
                    break
            key = str(key_value)
            taken.add(key)
            for _attempt in range(20):  # redraw until every uniqueness rule holds; else skip the record
                record = _make_record(spec, state, entity, key_value, rng, i, world)
                if handle_key:
                    own = _own_handle(entity, key_attr, declared_key, world, rng, record, taken)
                    if own is not None:
                        record[entity.key] = own
                combos = [tuple(record.get(a) for a in attrs) for attrs in uniques]
                if all(None in c or c not in seen[j] for j, c in enumerate(combos)):
                    for j, c in enumerate(combos):
                        seen[j].add(c)
                    table[str(record[entity.key])] = record
                    taken.add(str(record[entity.key]))
                    break
        state[entity.table] = table
    _refer_back(spec, state, random.Random(rng.random()))
    _same_owner(spec, state, random.Random(rng.random()))
    _own_currency_scale(spec, state)
    _settle_nested(spec, state, random.Random(rng.random()), world)
    _one_place_each(spec, state, random.Random(rng.random()), world)
    _month_dates(spec, state)
    _paced(spec, state)
    _pair_kinds(spec, state)
    _apart(spec, state, random.Random(rng.random()))
    _spread_lifecycles(spec, state)
    _terms_in_time(spec, state, random.Random(rng.random()))
    _happened_by_now(spec, state, random.Random(f"{spec.id}:{seed}:happened"))
    _month_dates(spec, state)  # a month moved back is still its first day
    _after_their_owners(spec, state, random.Random(f"{spec.id}:{seed}:owners"))
    _times_on_their_days(spec, state)
    _in_the_day(spec, state, random.Random(f"{spec.id}:{seed}:day"))
    paid_within(spec, state, random.Random(f"{spec.id}:{seed}:paid"))
    _near_its_twin(spec, state, random.Random(rng.random()))
    _not_yet(spec, state)
    _tie_same_facts(spec, state)  # so that a fact's order is read under both its names
    _in_order(spec, state)
    # a total that `_in_order` made its lines' sum (a claim's amount, its reserves') may fall below what
    # was already paid against it
    paid_within(spec, state, random.Random(f"{spec.id}:{seed}:paid-again"))
    _free_deletable(spec, state)
    _one_held_each(spec, state)
    repair_rules(spec, state)
    _drop_rule_breakers(spec, state)
    _tie_same_facts(spec, state)
    from agentomnia.envs.calls import stage_requirements

    stage_requirements(spec, state)
    _held_agree(spec, state)
    retell(world, state, lambda e, name, text: _takes(spec, state, e, name, text))
    problems = state_violations(spec, state)
    if problems:
        raise ValueError(
            f"generated state for {spec.name} breaks {len(problems)} invariants, e.g. {problems[0]}"
        )
    return state


def _takes(spec: EnvSpec, state: Mapping[str, Any], entity: EntitySpec, name: str, value: Any) -> bool:
    attr = entity.attribute(name)
    return attr is not None and value_problem(spec, state, attr, value) is None


def _refer_back(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]], rng: random.Random) -> None:
    """References into a table made after their own (where two entities refer to each other, one is
    made first) point at its records once it exists: a task belongs to a project even where projects
    were made after tasks. A nullable one stays empty as often as any; a reference a uniqueness rule
    covers is left as it was."""
    order = {e.name: i for i, e in enumerate(entity_order(spec))}
    for e in spec.entities:
        unique = {a for r in spec.rules if r.kind == "unique" and r.entity == e.name for a in r.attrs}
        later = [
            a
            for a in e.attributes
            if a.type == "ref" and a.ref in order and order[a.ref] > order[e.name] and a.name not in unique
        ]
        for a in later:
            targets = state.get(_table(spec, a.ref), {})
            keys = sorted(targets)
            for record in state.get(e.table, {}).values() if keys else ():
                if record.get(a.name) is None and not (_may_be_null(a) and rng.random() < 0.08):
                    record[a.name] = _ref_value(spec, a, targets[rng.choice(keys)])


def owned_references(
    spec: EnvSpec, state: Mapping[str, Any]
) -> Iterator[tuple[dict[str, Any], AttributeSpec, AttributeSpec, dict[str, list[str]]]]:
    """(record, reference, owner reference, the referenced table's keys by owner) for every reference
    of a record into a table whose records name an owner the record names too: a recurring bill's
    `account_id` beside its `user_id`, where accounts have a `user_id`. A reference a uniqueness rule
    covers is not one."""
    for e in spec.entities:
        unique = {a for r in spec.rules if r.kind == "unique" and r.entity == e.name for a in r.attrs}
        refs = [a for a in e.attributes if a.type == "ref" and a.ref and a.ref != e.name]
        for owner in refs:
            for a in refs:
                target = spec.entity(a.ref or "") if a is not owner and a.name not in unique else None
                held = target.attribute(owner.name) if target is not None else None
                if target is None or held is None or held.type != "ref" or held.ref != owner.ref:
                    continue
                by_owner: dict[str, list[str]] = {}
                for k, rec in sorted((state.get(target.table) or {}).items()):
                    by_owner.setdefault(str(rec.get(owner.name)), []).append(k)
                for record in (state.get(e.table) or {}).values():
                    yield record, a, owner, by_owner


def owner_disagrees(
    state: Mapping[str, Any], spec: EnvSpec, record: Mapping[str, Any], a: AttributeSpec, owner: AttributeSpec
) -> bool | None:
    """Whether `record`'s reference `a` points at another owner's record (None: nothing to compare)."""
    mine = record.get(owner.name)
    pointed = lookup(state.get(_table(spec, a.ref)), record.get(a.name))
    if mine is None or pointed is None:
        return None
    return str(pointed.get(owner.name)) != str(mine)


def _same_owner(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]], rng: random.Random) -> None:
    """What a record refers to belongs to the record's own owner where both name one: a user's
    recurring bill is paid from that user's account and filed under that user's category, not
    another household's. A reference changes to a record of the same owner, where there is one; where
    the owner has none, the record takes the owner of what it points at (a rotation's team is its
    current member's team). Aligning one reference can move what another points at (a budget's category is moved to the
    user's, whose account was itself aligned), so the passes repeat until nothing moves (a few at most).
    A record with two owners the referenced table also names (a visit's patient and veterinarian, and
    the appointment's) points at a record of both; where there is none, the record takes the other
    owner from the one it points at (the visit's veterinarian is the appointment's)."""
    holders = {id(x): e for e in spec.entities for x in e.attributes}

    def unique(a: AttributeSpec) -> set[str]:
        e = holders[id(a)]
        return {n for r in spec.rules if r.kind == "unique" and r.entity == e.name for n in r.attrs}

    for _ in range(6):
        moved = False
        for record, a, owner, by_owner in list(owned_references(spec, state)):
            if not owner_disagrees(state, spec, record, a, owner):
                continue
            table = state[_table(spec, a.ref)]
            choices = by_owner.get(str(record.get(owner.name)))
            if not choices:  # the owner has none: the record takes the owner of the one it points at
                pointed = lookup(table, record.get(a.name))
                if (
                    pointed is not None
                    and pointed.get(owner.name) is not None
                    and owner.name not in unique(a)
                ):
                    record[owner.name] = pointed[owner.name]
                    moved = True
                continue
            others = _other_owners(spec, a, owner)
            both = [k for k in choices if all(str(table[k].get(o)) == str(record.get(o)) for o in others)]
            target = table[rng.choice(both or choices)]
            record[a.name] = _ref_value(spec, a, target)
            for o in others if not both else ():
                if target.get(o) is not None:
                    record[o] = target[o]
            moved = True
        if not moved:
            return


def _other_owners(spec: EnvSpec, a: AttributeSpec, owner: AttributeSpec) -> list[str]:
    """Attributes besides `owner` that the entity holding reference `a` and the entity it refers to
    both hold as references to the same table (a visit's and its appointment's `veterinarian_id`),
    leaving out references a uniqueness rule covers."""
    holder = next((e for e in spec.entities if any(x is a for x in e.attributes)), None)
    target = spec.entity(a.ref or "")
    if holder is None or target is None:
        return []
    unique = {n for r in spec.rules if r.kind == "unique" and r.entity == holder.name for n in r.attrs}
    out = []
    for b in holder.attributes:
        held = target.attribute(b.name)
        if b is a or b is owner or b.type != "ref" or b.name in unique or b.ref in (None, holder.name):
            continue
        if held is not None and held.type == "ref" and held.ref == b.ref:
            out.append(b.name)
    return out


def same_fact_pairs(entity: EntitySpec) -> list[tuple[AttributeSpec, AttributeSpec]]:
    """(source, copy) attributes of one entity that record one fact under two names (the domain's
    `distance_km` and the seed's `distance_m`, kept both because the domain's operations use the first):
    the domain's is the source, the other follows it."""
    out = []
    for a in entity.attributes:
        if a.source != "kb":
            continue
        for b in entity.attributes:
            kinds = (naming.fact_kind(a.type), naming.fact_kind(b.type))
            if b.source != "kb" and naming.same_fact(a.name, b.name) and kinds[0] in (kinds[1], "date"):
                out.append((a, b))
    return out


def _tie_same_facts(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]]) -> None:
    """A record that holds one fact twice holds it once, in each attribute's own unit and type: an
    activity of 85.65 `distance_km` has 85650 `distance_m`, never an unrelated 392.08. A value the
    copy's declared schema would refuse leaves the copy as it was."""
    for entity in spec.entities:
        pairs = same_fact_pairs(entity)
        for record in state.get(entity.table, {}).values() if pairs else ():
            for source, copied in pairs:
                value = _converted(record.get(source.name), source, copied, record.get(copied.name))
                if value is not None and value_problem(spec, state, copied, value) is None:
                    record[copied.name] = value


def _converted(value: Any, source: AttributeSpec, copy: AttributeSpec, current: Any = None) -> Any:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        factor = naming.unit_factor(source.name, copy.name)
        if factor is None:
            return None
        number = value * factor
        return round(number) if copy.type == "int" else round(number, 2)
    if isinstance(value, str) and copy.type in ("date", "datetime") and _is_date(value[:10]):
        return value[:10] if copy.type == "date" else (value if "T" in value else f"{value}T09:00:00")
    if isinstance(value, str) and source.type in ("date", "datetime"):
        # a seed's time of day ("07:30") beside the domain's timestamp: the timestamp's time
        was = _TIME_OF_DAY.match(str(current or ""))
        return value[11 : 11 + len(was[0])] if was is not None and "T" in value else None
    return value if isinstance(value, str) and copy.type in ("str", "text") else None


_TIME_OF_DAY = re.compile(r"^\d{2}:\d{2}(:\d{2})?$")


def _own_handle(
    entity: EntitySpec,
    key_attr: AttributeSpec | None,
    declared: Any,
    world: World,
    rng: random.Random,
    record: dict[str, Any],
    taken: set[str],
) -> str | None:
    """The record's own handle as its key (a username or e-mail from the person's name), new in
    `taken` and of the declared type; None when none is found in a few draws."""
    assert key_attr is not None
    for _ in range(8):
        value = string_for(key_attr, entity, world, rng, record)
        if isinstance(value, str) and value not in taken and (declared is None or conforms(value, declared)):
            return value
    return None


# Two references of one record that name the two ends of something (a tier change's from and to tier,
# a transfer's source and target account) and so never name the same record.
_ENDS = (("from", "to"), ("source", "target"), ("origin", "destination"), ("old", "new"),
         ("previous", "next"), ("sender", "recipient"), ("sender", "receiver"), ("home", "away"),
         ("debit", "credit"), ("pickup", "dropoff"), ("outbound", "inbound"), ("primary", "secondary"),
         # two parties of one deal, and who asks against who signs off (no one approves their own request)
         ("borrower", "lender"), ("buyer", "seller"), ("payer", "payee"), ("requester", "approver"),
         ("author", "reviewer"), ("mentor", "mentee"), ("inviter", "invitee"), ("host", "guest"),
         ("landlord", "tenant"), ("submitter", "approver"), ("referrer", "referee"))  # fmt: skip


def _named_pairs(names: list[str], words: tuple[tuple[str, str], ...]) -> list[tuple[str, str]]:
    """(a, b) of `names` that differ only in one word pair of `words`, in place: `from_tier_id` and
    `to_tier_id`, `price_min` and `price_max`."""
    return [
        (a, b)
        for a in names
        for b in names
        if any(
            x in a.split("_")
            and y in b.split("_")
            and re.sub(rf"(^|_){x}(_|$)", r"\1@\2", a) == re.sub(rf"(^|_){y}(_|$)", r"\1@\2", b)
            for x, y in words
        )
    ]


def _apart(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]], rng: random.Random) -> None:
    """A record's two ends (`from_tier_id` and `to_tier_id`) point at different records where the
    referenced table has two: a tier change from Gold to Gold changes nothing."""
    for e in spec.entities:
        refs = {a.name: a for a in e.attributes if a.type == "ref" and a.ref}
        pairs = [(refs[x], refs[y]) for x, y in _named_pairs(list(refs), _ENDS) if refs[x].ref == refs[y].ref]
        for a, b in pairs:
            target = spec.entity(a.ref or "")
            keys = sorted(state.get(target.table, {}))
            if len(keys) < 2:
                continue
            for record in state.get(e.table, {}).values():
                if record.get(a.name) is not None and record.get(a.name) == record.get(b.name):
                    other = rng.choice([k for k in keys if k != str(record[a.name])])
                    record[b.name] = _ref_value(spec, b, state[target.table][other])


# Two numbers of one record or object where the first never exceeds the second: the ends of a range
# (a price's min and max, a tolerance's lower and upper limit) and a part beside its whole (an
# activity's moving time within its elapsed time, what was used of a budget).
_RANGE_ENDS = (
    ("min", "max"),
    ("minimum", "maximum"),
    ("low", "high"),
    ("lower", "upper"),
    ("floor", "ceiling"),
    ("start", "end"),
    ("first", "last"),
)
_BOUNDS = _RANGE_ENDS + (
    ("moving", "elapsed"),
    ("net", "gross"),
    ("used", "budget"),
    ("used", "limit"),
    ("used", "quota"),
    ("used", "capacity"),
    ("spent", "budget"),
    ("consumed", "budget"),
    ("available", "total"),
    ("remaining", "total"),
    ("completed", "total"),
    ("counted", "total"),
    ("booked", "capacity"),
    ("enrolled", "capacity"),
    ("occupied", "capacity"),
    ("overtime", "worked"),
    ("accepted", "received"),
)
# what is paid back or paid of an amount is at most the amount (a refund above the order's total)
_AT_MOST = (("refunded", "total"), ("refunded", "paid"), ("paid", "total"), ("refunded", "amount"))
# what was approved, paid or refunded of a record's whole, named apart from it: a claim's approved
# amount and its paid total are at most what was claimed
_PART_OF_WHOLE = tuple(
    (name, whole)
    for part in ("approved", "paid", "refunded", "settled")
    for name, whole in ((f"{part}_amount", "amount"), (f"amount_{part}", "amount"),
                        (f"{part}_total", "amount"), (f"total_{part}", "amount"),
                        (f"{part}_total", "total"), (f"total_{part}", "total"))
)  # fmt: skip
_READING = re.compile(r"mileage|odometer|(^|_)(hour_?)?meter(_|$)|reading")
# a value named for where its range is centred: a part's nominal size sits within its tolerance limits
_CENTRES = ("nominal", "target", "setpoint")
# a line's total is its quantity times its unit price
_QUANTITIES = ("quantity", "qty", "packs", "units")
_UNIT_PRICES = ("unit_price", "price", "unit_cost")
# a total is its subtotal, plus what is added to it, less what is taken off
_SUBTOTALS = ("subtotal", "sub_total", "subtotal_amount")
_TOTALS = ("total", "total_amount", "grand_total", "order_total")
_ADDED = (
    "tax",
    "tax_amount",
    "shipping",
    "shipping_fee",
    "shipping_cost",
    "delivery_fee",
    "service_fee",
    "handling_fee",
    "tip",
    "tip_amount",
)
_TAKEN_OFF = ("discount", "discount_amount", "promo_discount", "credit_applied")
# a variance is what was found less what was expected (a count against the books, spend against the
# budget), or the budget less the estimate at completion
_VARIANCES = ("variance", "difference", "discrepancy", "over_short")
_FOUND_EXPECTED = (
    ("budget", "completion"),
    ("counted", "book"),
    ("counted", "expected"),
    ("counted", "system"),
    ("actual", "budget"),
    ("actual", "planned"),
    ("actual", "expected"),
)
# a goal is reached once its progress meets its target
_REACHED = ("achieved", "completed", "met", "reached", "is_achieved", "goal_met", "target_met")
_PROGRESS = ("progress", "current", "current_value", "progress_value", "saved_amount", "saved", "raised")
_TARGETS = ("target", "target_value", "target_amount", "goal", "goal_amount")
# what a record's lines add up to, when the lines hold no field of its own name
_LINE_SUMS = {"subtotal": ("line_total", "amount", "subtotal", "total"), "total": ("line_total", "amount", "total"),
              "total_amount": ("line_total", "amount", "total_amount"), "amount": ("amount",)}  # fmt: skip


def _as_number(value: float, like: Any, *of: Any) -> int | float:
    """`value` as an integer where `like` and every number it comes `of` are integers, else to cents."""
    if isinstance(like, int) and all(isinstance(v, int) for v in of):
        return round(value)
    return round(value, 2)


def _numbers_in_order(obj: dict[str, Any]) -> None:
    """Put one object's related numbers in order, in place, after those of the objects within it:

    - a range's ends and a part and its whole swap where drawn the wrong way round;
    - a nominal value moves to the middle of its limits;
    - a line's total is its quantity times its unit price, a variance what was found less what was
      expected;
    - a record's sum is the sum of its lines (`total_hours` of the days' `worked_hours`, an expense's
      `amount` of its lines' amounts);
    - a total is its subtotal plus taxes, fees and tip, less discounts (never more than the subtotal),
      and what was refunded or paid of it is at most the total;
    - a goal is achieved exactly when its progress meets its target.
    """
    for value in obj.values():
        for child in value if isinstance(value, list) else (value,):
            if isinstance(child, dict):
                _numbers_in_order(child)
    numbers = [k for k, v in obj.items() if isinstance(k, str) and _is_number(v)]
    readings = [n for n in numbers if _READING.search(n)]  # an odometer reads more when a car leaves
    for low, high in _named_pairs(numbers, _BOUNDS) + _named_pairs(readings, (("in", "out"),)):
        if obj[low] > obj[high]:
            obj[low], obj[high] = obj[high], obj[low]
    ranges = _named_pairs(numbers, _RANGE_ENDS)
    if len(ranges) == 1:
        low, high = ranges[0]
        for centre in (k for k in _CENTRES if k in numbers and not obj[low] <= obj[k] <= obj[high]):
            obj[centre] = _as_number((obj[low] + obj[high]) / 2, obj[centre], obj[low], obj[high])
    quantity = next((k for k in _QUANTITIES if k in numbers), None)
    price = next((k for k in _UNIT_PRICES if k in numbers), None)
    if quantity and price and "line_total" in numbers:
        obj["line_total"] = _as_number(
            obj[quantity] * obj[price], obj["line_total"], obj[quantity], obj[price]
        )
    variance = next((k for k in _VARIANCES if k in numbers), None)
    for found, expected in _FOUND_EXPECTED if variance is not None else ():
        a, b = (_one_named(numbers, found), _one_named(numbers, expected))
        if a and b and variance is not None:
            obj[variance] = _as_number(obj[a] - obj[b], obj[variance], obj[a], obj[b])
            break
    lines = [v for v in obj.values() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]
    subtotal = next((k for k in _SUBTOTALS if k in numbers), None)
    for key in numbers:
        if key in _TOTALS and subtotal is not None:
            continue  # the total follows from the subtotal, below
        for items in lines:
            part = _line_part(key, items)
            if part is not None:
                obj[key] = _as_number(sum(part), obj[key], *part)
                break
    reached = next((k for k in _REACHED if isinstance(obj.get(k), bool)), None)
    progress = next((k for k in _PROGRESS if k in numbers), None)
    target = next((k for k in _TARGETS if k in numbers), None)
    if reached is not None and progress is not None and target is not None:
        obj[reached] = obj[progress] >= obj[target]  # no goal "achieved" at 277 of 2,500 km
    total = next((k for k in _TOTALS if k in numbers), None)
    if subtotal is not None and total is not None:
        parts = [obj[subtotal], *(obj[k] for k in _ADDED if k in numbers)]
        taken_off = [k for k in _TAKEN_OFF if k in numbers]
        if sum(obj[k] for k in taken_off) > obj[subtotal]:
            for k in taken_off:
                obj[k] = _as_number(obj[subtotal] / 10 / len(taken_off), obj[k], obj[k])
        off = [obj[k] for k in taken_off]
        obj[total] = _as_number(sum(parts) - sum(off), obj[total], *parts, *off)
    wholes = [(a, b) for a, b in _PART_OF_WHOLE if a in numbers and b in numbers]
    for back, whole in _named_pairs(numbers, _AT_MOST) + wholes:  # once the total is known: never refund more
        if obj[back] > obj[whole]:
            obj[back] = _as_number(obj[whole], obj[back], obj[whole])


def numbers_out_of_order(record: Mapping[str, Any]) -> bool:
    """Whether a record's related numbers disagree (`_numbers_in_order` would change them)."""
    ordered = copy.deepcopy(dict(record))
    _numbers_in_order(ordered)
    return ordered != record


def _one_named(names: list[str], word: str) -> str | None:
    """The one name of `names` with `word` among its words (the revised budget beside an original)."""
    found = [n for n in names if word in n.split("_")]
    revised = [n for n in found if {"revised", "current"} & set(n.split("_"))]
    return found[0] if len(found) == 1 else (revised[0] if len(revised) == 1 else None)


def _line_part(key: str, items: list[dict[str, Any]]) -> list[int | float] | None:
    """What each of a record's lines adds to its `key`, or None when they do not add up to it: the
    lines' own `key`, the `X` of a `total_X`, or their totals (quantity times unit price)."""
    words = key.split("_")
    stem = (
        "_".join(words[1:]) if words[0] == "total" else "_".join(words[:-1]) if words[-1] == "total" else ""
    )
    names = (key, stem) if stem else _LINE_SUMS.get(key, ())
    common = set.intersection(*({k for k, v in x.items() if _is_number(v)} for x in items))
    name = next((n for n in names if n and n in common), None)
    if name is None and stem:  # the days' worked hours add up to `total_hours`
        ending = [
            k for k in common if k.endswith(f"_{stem}") and {"worked", "net", "actual"} & set(k.split("_"))
        ]
        name = ending[0] if len(ending) == 1 else None
    if name is not None:
        return [x[name] for x in items]
    if key in _LINE_SUMS:
        quantity = next((k for k in _QUANTITIES if k in common), None)
        price = next((k for k in _UNIT_PRICES if k in common), None)
        if quantity and price:
            return [x[quantity] * x[price] for x in items]
    return None


def _in_order(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]]) -> None:
    """Every record, and every object nested in one, holds its related numbers in order
    (`_numbers_in_order`): a price range whose min is above its max, an activity moving for longer
    than it took, or an order whose total is not what its lines and fees add up to reads as made up.
    A value changes only where its attribute and declared schema take the new one."""
    for e in spec.entities:
        same = same_fact_pairs(e)
        nested = any(a.type in ("list", "object") for a in e.attributes)
        for record in state.get(e.table, {}).values():
            ordered = copy.deepcopy(record) if nested else dict(record)
            _numbers_in_order(ordered)
            for source, copied in same:  # the domain's `moving_time_s` follows the seed's `moving_seconds`
                if ordered.get(copied.name) != record.get(copied.name) and source.name in ordered:
                    value = _converted(ordered[copied.name], copied, source, ordered[source.name])
                    ordered[source.name] = ordered[source.name] if value is None else value
            for name, value in ordered.items():
                a = e.attribute(name)
                if (
                    value != record.get(name)
                    and a is not None
                    and value_problem(spec, state, a, value) is None
                    and (a.declared is None or conforms(value, a.declared))
                ):
                    record[name] = value


def _walk_objects(value: Any, visit: Callable[[dict[str, Any]], None]) -> None:
    """Call `visit` on every object within a value, outermost first."""
    if isinstance(value, dict):
        visit(value)
        for v in value.values():
            _walk_objects(v, visit)
    elif isinstance(value, list):
        for v in value:
            _walk_objects(v, visit)


def _pair_kinds(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]]) -> None:
    """Values of the kinds vocabulary that go together agree within one record or nested object: a
    repair line's correction is the one for its cause ("Replaced water pump and coolant" for "Leaking
    water pump"), drawn apart before. Only a value the vocabulary gave, where the declared schema (if
    any) holds a string, is changed."""
    paired = paired_values()
    if not paired:
        return
    domain = spec.coordinate.taxonomy_id

    def align(obj: dict[str, Any], where: str, entity: EntitySpec | None = None) -> None:
        texts = {k: v for k, v in obj.items() if isinstance(k, str) and isinstance(v, str)}
        for follower, value in texts.items():
            own = kind_values(follower, where, domain)
            leading = paired.get(own)
            if leading is None or value not in own:
                continue
            lead = next(
                (v for k, v in texts.items() if k != follower and kind_values(k, where, domain) == leading),
                None,
            )
            if lead not in leading:
                continue
            paired_value = own[leading.index(lead)]
            attr = entity.attribute(follower) if entity is not None else None
            if attr is None or attr.declared is None or fits_hint(paired_value, attr.declared):
                obj[follower] = paired_value

    for entity in spec.entities:
        for record in (state.get(entity.table) or {}).values():
            align(record, entity.name, entity)
            for a in entity.attributes:
                if a.type in ("list", "object"):  # `where` as the nested strings were drawn
                    _walk_objects(
                        record.get(a.name), functools.partial(align, where=f"{entity.name}.{a.name}")
                    )


def _settle_nested(
    spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]], rng: random.Random, world: World
) -> None:
    """What sits inside a list or object a seed declares (an automation's conditions, a statement's
    open invoices) agrees with the world around it:

    - a `device_id` or `invoice_id` names a record of the environment's own `device` or `invoice`
      where it has one, not a made-up id, and the one an enclosing object already names where it
      names one (the statement of vendor VEN-006 lists VEN-006's invoices);
    - the dates of each object follow its lifecycle (`semantic.order_lifecycle`: an invoice is due
      after it was issued);
    - amounts are in one currency, the record's own where it has one (a budget's planned and spent
      amounts are not in yen and euros);
    - an address's street, city, postcode and country name one place (`semantic.one_place`);
    - the days of a week's record (a timesheet's) fall in that week.

    A record's value changes only where the declared schema takes the settled one."""
    targets: dict[str, list[Any]] = {}
    for e in spec.entities:
        keys = [
            r[e.key]
            for _, r in sorted(state.get(e.table, {}).items())
            if isinstance(r.get(e.key), (str, int))
        ]
        for name in (f"{e.name}_id", e.key if e.key.endswith("_id") else ""):
            if keys and name:
                targets.setdefault(name, keys)
    given_ids: dict[int, dict[str, Any]] = {}  # the ids the first object about a record gave it
    for e in spec.entities:
        nested = [a for a in e.attributes if a.declared is not None and a.type in ("list", "object")]
        for record in state.get(e.table, {}).values():
            own = record.get("currency")
            currency = own if isinstance(own, str) else None  # one for the whole record: its lines and totals
            for a in nested:
                value = record.get(a.name)
                if isinstance(value, (dict, list)):
                    named = {k: v for k, v in record.items() if k in targets}
                    settled = _dated(_linked(value, targets, rng, named), rng)
                    _walk_objects(settled, lambda obj: obj.update(one_place(obj, world, rng)))
                    _walk_objects(settled, lambda obj: own_email(obj, world, rng))
                    currency = currency or _first_currency(settled)
                    _one_currency(settled, currency)
                    _walk_objects(settled, _priced_in_own_currency)
                    total = _total_of(record) or _total_of(_referenced(spec, state, e, record))
                    if total is not None:
                        _parts_add_up(settled, total)
                    _same_period(
                        settled, {k: record[k] for k in _PERIODS if isinstance(record.get(k), (str, int))}
                    )
                    start = _week_start(record)
                    if start is not None:
                        _same_week(settled, start)
                    _as_referenced(settled, _referenced_by(spec, state, e, record, a.name), given_ids)
                    if settled != value and conforms(settled, a.declared):
                        record[a.name] = settled


def _referenced_by(
    spec: EnvSpec, state: Mapping[str, Any], entity: EntitySpec, record: Mapping[str, Any], name: str
) -> Mapping[str, Any] | None:
    """The record that the reference beside an object attribute names (`owner_id` beside `owner`)."""
    ref = entity.attribute(f"{name}_id")
    if ref is None or ref.ref is None:
        return None
    target = lookup(state.get(_table(spec, ref.ref)), record.get(ref.name))
    return target if isinstance(target, Mapping) else None


def _as_referenced(
    value: Any, target: Mapping[str, Any] | None, given_ids: dict[int, dict[str, Any]]
) -> None:
    """An object that describes a record the holder also references (a patient's `owner` beside its
    `owner_id`) says what that record says: its name, e-mail and phone are the owner's own, and an id
    of its own (`client_id`) is the one the first such object gave that record (`given_ids`)."""
    if not isinstance(value, dict) or target is None:
        return
    ids = given_ids.setdefault(id(target), {})
    for k, v in value.items():
        if k.endswith("_id") and k not in target and v is not None:
            value[k] = ids.setdefault(k, v)
        mirrored = target.get(k)
        if (
            k in target
            and not k.endswith("_id")
            and mirrored is not None
            and (type(mirrored) is type(v) or v is None)
            and not isinstance(mirrored, (dict, list))
        ):
            value[k] = mirrored


def _one_place_each(
    spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]], rng: random.Random, world: World
) -> None:
    """A record's own address fields (`city`, `state`, `zip`) name one place, the city its name mentions
    where it mentions one: the test centre "Kryterion Denver" is in Denver, CO 802xx, not in
    "Teresafurt". Text fields only (a lifecycle `state` enum is no address), each as its schema allows."""
    for entity in spec.entities:
        texts = {a.name: a for a in entity.attributes if a.type in ("str", "text")}
        for record in state.get(entity.table, {}).values() if len(texts) >= 2 else ():
            for key, value in one_place({k: record[k] for k in texts if k in record}, world, rng).items():
                declared = texts[key].declared
                if declared is None or conforms(value, declared):
                    record[key] = value


_MONTH_DATE = re.compile(r"(^|_)month$|^month_(start|of|beginning)$")
_YEAR_MONTH = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")


def _in_the_day(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]], rng: random.Random) -> None:
    """What people do in their waking day happens in it (`semantic.into_the_day`): no interview at
    03:30, no lesson at 23:15; and what is over within hours ends the day it starts
    (`semantic.within_hours`): no appointment from 09:00 to 09:15 the next day."""
    for entity in spec.entities:
        if day_times(entity):
            for record in state.get(entity.table, {}).values():
                into_the_day(entity, record, rng)
                within_hours(entity, record, rng)


def _times_on_their_days(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]]) -> None:
    """A time of day a record names for the day it is about falls on that day (`semantic.on_its_day`:
    a shoot day's call time on its shoot date), after every pass that moves dates (one that moves a
    record's dates back together moves a timed field by hours as well as days)."""
    for entity in spec.entities:
        for record in (state.get(entity.table) or {}).values():
            record.update(on_its_day(entity, record, record))


def _month_dates(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]]) -> None:
    """A date that names a month (a budget's `month`) is the first day of that month, and of the month
    the record says elsewhere when it does (a budget keyed "2025-05" is for 2025-05-01, not 2025-09-18)."""
    for entity in spec.entities:
        months = [a for a in entity.attributes if a.type == "date" and _MONTH_DATE.search(a.name)]
        for record in state.get(entity.table, {}).values() if months else ():
            # the month its key or a period field says, not any year-month (a card's expiry)
            said = next(
                (
                    v
                    for k in (entity.key, *_PERIODS)
                    if isinstance(v := record.get(k), str) and _YEAR_MONTH.match(v)
                ),
                None,
            )
            for a in months:
                value = record.get(a.name)
                if isinstance(value, str) and _is_date(value[:10]):
                    first = f"{said}-01" if said else f"{value[:7]}-01"
                    if a.declared is None or conforms(first, a.declared):
                        record[a.name] = first


# plausible speeds (km/h) of what a record's words say it is: a walk is no 109 km in an evening
_PACES = (
    (re.compile(r"\b(walk|stroll|hik|trek|ramble)"), 3.5, 6.0),
    (re.compile(r"\bswim"), 1.5, 4.0),
    (re.compile(r"\b(row|kayak|paddl|canoe)"), 6.0, 12.0),
    (re.compile(r"\b(run|trail_run|jog|parkrun|marathon|sprint)"), 8.0, 15.0),
    (re.compile(r"\b(ride|cycl|bike|biking|gravel|peloton)"), 16.0, 32.0),
    (re.compile(r"\b(workout|exercise|training|session|mobility|mixed|strength|yoga)"), 3.0, 12.0),
)  # word starts: "row" is no "throw", "run" no "brunch"
_SPORT_WORDS = ("sport", "activity_type", "kind", "type", "workout_type", "discipline", "mode")
_DURATION = re.compile(
    r"^(duration|moving_time|moving|elapsed_time|elapsed|time)_(s|sec|secs|seconds|min|mins|minutes|h|hrs|hours)$"
)
_SECONDS = {"s": 1, "sec": 1, "secs": 1, "seconds": 1, "min": 60, "mins": 60, "minutes": 60, "h": 3600, "hrs": 3600, "hours": 3600}  # fmt: skip


def _pace(entity: EntitySpec, record: Mapping[str, Any]) -> tuple[float, float] | None:
    """The speed range (km/h) of what the record is: its sport or kind first, then its name, then
    what its entity is called; None for a record no word places (a lap, a delivery)."""
    said = [record.get(n) for n in _SPORT_WORDS] + [record.get("name"), record.get("title"), entity.name]
    for text in said:
        if isinstance(text, str):
            for words, low, high in _PACES:
                if words.search(text.lower()):
                    return low, high
    return None


def _paced(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]]) -> None:
    """A record that takes a time to cover a distance (an activity's `distance_km` and `moving_time_s`)
    covers it at the speed of what it is: a walk at 3.5-6 km/h, a ride at 16-32; every unit of its
    distance says the same distance."""
    for entity in spec.entities:
        times = [a for a in entity.attributes if a.type in ("int", "float") and _DURATION.match(a.name)]
        spans = [
            (a, factor)
            for a in entity.attributes
            if a.type in ("int", "float", "money")
            and naming.measured(a.name) == ("distance", "length")
            and (factor := naming.unit_factor(a.name, "distance_m")) is not None
        ]
        if not times or not spans:
            continue
        for key, record in state.get(entity.table, {}).items():
            took = record.get(times[0].name)
            pace = _pace(entity, record)
            if pace is None or not isinstance(took, (int, float)) or isinstance(took, bool) or took <= 0:
                continue
            hours = took * _SECONDS[times[0].name.rpartition("_")[2]] / 3600
            metres = random.Random(f"{entity.table}:{key}").uniform(*pace) * hours * 1000
            for a, metre_per_unit in spans:
                was = record.get(a.name)
                if not isinstance(was, (int, float)) or isinstance(was, bool):
                    continue
                places = 2 if metre_per_unit >= 100 and a.type != "int" else 0  # 5.27 km, 5270 m
                value = round(metres / metre_per_unit, places) if places else round(metres / metre_per_unit)
                if a.declared is None or conforms(value, a.declared):
                    record[a.name] = value


# fields that say which period a record covers: its lines cover the same one
_PERIODS = ("month", "period", "quarter", "fiscal_year")  # not `year`: a car's model year is no period


def _same_period(value: Any, periods: Mapping[str, Any]) -> None:
    """The lines of a record for a period (a month's budget summary) are of that period: a line's
    `month` is the summary's "2025-09", not "November"."""
    if not periods:
        return
    if isinstance(value, list):
        for item in value:
            _same_period(item, periods)
    elif isinstance(value, dict):
        for k in value:
            if k in periods and isinstance(value[k], (str, int)) and not isinstance(value[k], bool):
                value[k] = periods[k]
            elif isinstance(value[k], (dict, list)):
                _same_period(value[k], periods)


_ISO_WEEK = re.compile(r"^(\d{4})-?W(\d{2})$")
_WEEK_STARTS = ("week_start", "week_starting", "week_start_date", "week_beginning", "week_of")


def _week_start(record: Mapping[str, Any]) -> date | None:
    """The first day of the week a record covers: the Monday of its ISO `week` ("2025-W27"), or its
    `week_start` date; None for a record of no one week."""
    week = record.get("week")
    if isinstance(week, str) and (m := _ISO_WEEK.match(week)) is not None:
        try:
            return date.fromisocalendar(int(m[1]), int(m[2]), 1)
        except ValueError:
            return None
    for name in _WEEK_STARTS:
        value = record.get(name)
        if isinstance(value, str) and _is_date(value[:10]):
            return date.fromisoformat(value[:10])
    return None


def _same_week(value: Any, start: date) -> None:
    """The days of a week's record (a timesheet's `days`) fall in that week, in their order: the
    timesheet for 2025-W27 has no day in June 2026. A datetime keeps its time of day."""
    n = 0
    for item in value if isinstance(value, list) else ():
        day = item.get("date") if isinstance(item, dict) else None
        if isinstance(day, str) and _is_date(day[:10]):
            item["date"] = (start + timedelta(days=min(n, 6))).isoformat() + day[10:]
            n += 1


def _first_currency(value: Any) -> str | None:
    if isinstance(value, list):
        return next((c for v in value if (c := _first_currency(v)) is not None), None)
    if isinstance(value, dict):
        if isinstance(value.get("currency"), str):
            return str(value["currency"])
        return next((c for v in value.values() if (c := _first_currency(v)) is not None), None)
    return None


# the amounts of an object that its `currency` prices (not its quantities, rates or shares)
_PRICED = re.compile(
    r"(^|_)(amount|price|total|subtotal|fee|fees|cost|balance|value|tax|discount|tip|deposit|rent|salary"
    r"|budget|spent|planned|paid|due|charge|refund|limit)(_|$)"
)
_UNPRICED = re.compile(r"(^|_)(pct|percent|rate|ratio|count|qty|quantity|units|score|days|hours)(_|$)")


def _priced_in_own_currency(obj: dict[str, Any]) -> None:
    """An object's amounts on the scale of its own currency, in place: a budget line in yen is
    ¥16,860, not ¥112.4 (amounts are drawn on a dollar's scale; a currency within a factor of three
    of the dollar's is left as drawn). Written as they were: a string stays a string, and a currency
    without minor units gets none."""
    currency = obj.get("currency")
    rate = UNITS_PER_USD.get(currency) if isinstance(currency, str) else None
    if rate is None or 1 / 3 <= rate <= 3:
        return
    whole = currency in WHOLE_UNITS
    for key, value in list(obj.items()):
        if not isinstance(key, str) or not _PRICED.search(key) or _UNPRICED.search(key):
            continue
        if _is_number(value):
            scaled = value * rate
            obj[key] = round(scaled) if whole or isinstance(value, int) else round(scaled, 2)
        elif isinstance(value, str) and re.fullmatch(r"-?\d+(\.\d+)?", value):
            scaled = float(value) * rate
            obj[key] = str(round(scaled)) if whole or "." not in value else f"{scaled:.2f}"


def _own_currency_scale(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]]) -> None:
    """A record's own amounts on the scale of its own `currency` (`_priced_in_own_currency`): a yen
    account's balance is ¥1,887,105, not ¥12,580.70. An amount a rule bounds by a figure (a range, a
    comparison with a number) is left as drawn, and so is one its schema would not take scaled."""
    bounded = {(r.entity, r.attr) for r in spec.rules if r.kind == "range"} | {
        tuple(str(r.left).split(".", 1))
        for r in spec.rules
        if r.kind == "compare" and not isinstance(r.right, str) and "." in str(r.left)
    }
    for entity in spec.entities:
        if entity.attribute("currency") is None:
            continue
        for record in state.get(entity.table, {}).values():
            before = dict(record)
            _priced_in_own_currency(record)
            for key, value in record.items():
                if value == before[key]:
                    continue
                attr = entity.attribute(key)
                if (
                    attr is None
                    or (entity.name, key) in bounded
                    or (attr.declared is not None and not conforms(value, attr.declared))
                ):
                    record[key] = before[key]


_WHOLES = (
    "amount",
    "total",
    "total_amount",
    "amount_total",
    "grand_total",
)  # what a record's parts add up to


def _money(value: Any) -> float | None:
    """The number an amount holds: a number, a string of one ("2350.54"), or a money object's `amount`."""
    if isinstance(value, dict):
        return _money(value.get("amount"))
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and re.fullmatch(r"-?\d+(\.\d+)?", value):
        return float(value)
    return None


def _total_of(record: Mapping[str, Any] | None) -> float | None:
    """A record's positive total (a transaction's `amount`), or None."""
    for name in _WHOLES:
        total = _money((record or {}).get(name))
        if total is not None and total > 0:
            return total
    return None


def _referenced(
    spec: EnvSpec, state: Mapping[str, Mapping[str, Any]], entity: EntitySpec, record: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    """The first record `record` refers to that has a total (a split's transaction)."""
    for a in entity.attributes:
        if a.type == "ref" and a.ref is not None and record.get(a.name) is not None:
            target = state.get(_table(spec, a.ref), {}).get(str(record[a.name]))
            if _total_of(target) is not None:
                return target
    return None


def _parts_add_up(value: Any, total: float) -> None:
    """The parts of a whole (a transaction's splits, each with an `amount`) add up to its `total`,
    in the shares they had, each written as it was (a number, "203.50", a money object)."""
    parts = [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
    shares = [_money(item.get("amount")) for item in parts]
    if len(parts) < 2 or any(v is None for v in shares):
        return
    held = [abs(v or 0.0) for v in shares]
    weights = held if sum(held) > 0 else [1.0] * len(held)
    written = [
        item["amount"]["amount"] if isinstance(item["amount"], dict) else item["amount"] for item in parts
    ]
    places = max((len(str(w).partition(".")[2]) for w in written if isinstance(w, (str, float))), default=0)
    places = 2 if not float(total).is_integer() else min(places, 2)  # the parts of 278.12 have cents
    new = [round(total * w / sum(weights), places) for w in weights[:-1]]
    new.append(round(total - sum(new), places))
    if new[-1] < 0:
        return
    for item, was, amount in zip(parts, written, new, strict=True):
        text: Any = (
            f"{amount:.{places}f}"
            if isinstance(was, str)
            else (int(amount) if isinstance(was, int) else amount)
        )
        if isinstance(item["amount"], dict):
            item["amount"]["amount"] = text
        else:
            item["amount"] = text


def _one_currency(value: Any, currency: str | None) -> None:
    """Every `currency` inside `value` set to `currency`, in place."""
    if currency is None:
        return
    for item in value if isinstance(value, list) else value.values() if isinstance(value, dict) else ():
        _one_currency(item, currency)
    if isinstance(value, dict) and isinstance(value.get("currency"), str):
        value["currency"] = currency


def _dated(value: Any, rng: random.Random) -> Any:
    """`value` (a fresh copy) with each object's dates in lifecycle order, what has happened before
    the clock."""
    if isinstance(value, list):
        return [_dated(v, rng) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: before_clock(k, v, rng) if isinstance(v, str) else _dated(v, rng) for k, v in value.items()}
    dates = tuple(
        AttributeSpec(name=k, type="date" if len(v) == 10 else "datetime")
        for k, v in out.items()
        if isinstance(v, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:\d{2})?)?", v)
    )
    if len(dates) > 1:
        order_lifecycle(_dates_of(dates), out, rng)
    return out


def _dates_of(dates: tuple[AttributeSpec, ...]) -> EntitySpec:
    return EntitySpec(name="nested", table="nested", description="", key="id", id_prefix="NES",
                      attributes=(AttributeSpec(name="id", type="str"), *dates))  # fmt: skip


def _linked(
    value: Any, targets: Mapping[str, list[Any]], rng: random.Random, above: Mapping[str, Any]
) -> Any:
    """`value` with each id so named pointing at a record: the one an enclosing object already names
    (a statement's invoices are its own vendor's; an invoice's match is of that invoice), else any."""
    if isinstance(value, list):
        return [_linked(v, targets, rng, above) for v in value]
    if not isinstance(value, dict):
        return value
    here = dict(above)
    out: dict[str, Any] = {}
    for k, v in value.items():
        if isinstance(v, bool) or k not in targets:
            continue
        if k in above and type(above[k]) is type(v):
            out[k] = above[k]
        elif keys := [t for t in targets[k] if type(t) is type(v)]:
            out[k] = here[k] = rng.choice(keys)
    return {k: out[k] if k in out else _linked(v, targets, rng, here) for k, v in value.items()}


def _spread_lifecycles(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]]) -> None:
    """Records of an entity with a lifecycle cover every stage, so every transition can be exercised."""
    for rule in spec.rules:
        if rule.kind != "transition" or not rule.entity or not rule.attr:
            continue
        entity = next((e for e in spec.entities if e.name == rule.entity), None)
        attr = entity.attribute(rule.attr) if entity else None
        if entity is None or attr is None or attr.type != "enum":
            continue
        stages = [v for v in attr.enum if v in rule.allowed] + [v for v in attr.enum if v not in rule.allowed]
        for i, key in enumerate(sorted(state.get(entity.table, {}))):
            state[entity.table][key][rule.attr] = stages[i % len(stages)]


# Lifecycle stages before anything has ended: a record in one of them has no end date yet
_NOT_YET = frozenset({
    "pending", "open", "new", "draft", "expected", "scheduled", "planned", "requested", "submitted", "applied",
    "queued", "awaiting", "booked", "ordered", "placed", "in_progress", "active", "assigned", "proposed",
    "upcoming", "not_started", "todo", "waiting", "under_review", "in_review", "received_pending",
})  # fmt: skip
# what never got there: a missed visit has no actual date, a no-show no check-out
_NEVER = frozenset({"missed", "no_show", "noshow", "skipped", "not_done"})


_TWIN = re.compile(r"^(latest|current|last|previous|recent|initial|starting|original)_(.+)$")


def _near_its_twin(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]], rng: random.Random) -> None:
    """A measure a record gives twice, as it is and as it was or is now (a pet's `weight_kg` and its
    `latest_weight_kg`), gives two figures a few percent apart, not 9.2 and 67.2 kg."""
    numeric = ("int", "float", "money")
    for entity in spec.entities:
        by_name = {a.name: a for a in entity.attributes}
        twins = [
            (by_name[m.group(2)], a)
            for a in entity.attributes
            if (m := _TWIN.match(a.name)) is not None
            and a.type in numeric
            and m.group(2) in by_name
            and by_name[m.group(2)].type in numeric
            and not a.name.endswith("_id")
        ]
        for record in state.get(entity.table, {}).values() if twins else ():
            for base, twin in twins:
                was = record.get(base.name)
                if (
                    not isinstance(was, (int, float))
                    or isinstance(was, bool)
                    or not isinstance(record.get(twin.name), (int, float))
                ):
                    continue
                value: int | float = was * rng.uniform(0.92, 1.08)
                value = round(value) if twin.type == "int" else round(value, 2 if abs(was) >= 1 else 3)
                if twin.declared is None or conforms(value, twin.declared):
                    record[twin.name] = value


def _terms_in_time(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]], rng: random.Random) -> None:
    """A lease's, contract's or policy's dates agree with its status (`semantic.term_in_time`)."""
    for entity in spec.entities:
        status = entity.status_attribute
        if status is None:
            continue
        for record in state.get(entity.table, {}).values():
            if isinstance(record.get(status.name), str):
                term_in_time(entity, record, record[status.name], rng)


def _happened_by_now(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]], rng: random.Random) -> None:
    """What a record says has happened lies before the clock (`semantic.happened_by_now`), unless
    its status says it has not happened yet (a scheduled inspection's date is a plan)."""
    for entity in spec.entities:
        for record in state.get(entity.table, {}).values():
            if not not_yet(entity, record):
                happened_by_now(entity, record, rng)


def not_yet(entity: EntitySpec, record: Mapping[str, Any]) -> bool:
    """Whether the record's status says it has not happened yet (scheduled, pending, draft)."""
    status = entity.status_attribute
    said = record.get(status.name) if status is not None else None
    return isinstance(said, str) and said.lower() in _NOT_YET


def owner_dates(
    spec: EnvSpec, state: Mapping[str, Any]
) -> Iterator[tuple[EntitySpec, dict[str, Any], str, EntitySpec, dict[str, Any], str, bool]]:
    """(entity, record, its first date field, owner entity, owner, owner's creation field, whether the
    record is dated before its owner came to be) for each reference from a dated record to a record
    with a creation date (a ticket message sent before its ticket was opened is); a reference to a
    record of the same entity is left out."""
    by_name = {e.name: e for e in spec.entities}
    for entity in spec.entities:
        facts = dated_facts(entity)
        refs = [a for a in entity.attributes if a.type == "ref" and a.ref in by_name and a.ref != entity.name]
        for record in (state.get(entity.table) or {}).values() if facts and refs else ():
            first = first_dated(facts, record)
            for a in refs if first is not None else ():
                owner_entity = by_name[str(a.ref)]
                created = creation_dates(owner_entity)
                table = state.get(owner_entity.table) or {}
                value = record.get(a.name)
                for key in value if isinstance(value, list) else [value]:
                    owner = table.get(str(key)) if created and key is not None else None
                    made = first_dated(created, owner) if owner is not None else None
                    if owner is not None and made is not None and first is not None:
                        before = comes_before(owner[made[0]], record[first[0]])
                        yield entity, record, first[0], owner_entity, owner, made[0], before


def _after_their_owners(
    spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]], rng: random.Random
) -> None:
    """What a record records happens after the records it points at came to be: a ticket's messages
    are sent after the ticket was opened, a payment allocation follows its invoice's date. Where one
    comes first, the owner's creation dates move back to some days before it. Owners are settled
    after the records that point at them, so a grandparent moves back before its moved child."""
    for owner_entity in reversed(entity_order(spec)):
        earliest: dict[str, tuple[dict[str, Any], str]] = {}  # owner's key: (owner, earliest date after it)
        for _, record, field, owned, owner, _, before in owner_dates(spec, state):
            key = str(owner.get(owner_entity.key))
            if (
                before
                and owned is owner_entity
                and (key not in earliest or comes_before(earliest[key][1], record[field]))
            ):
                earliest[key] = (owner, record[field])
        for key in sorted(earliest):
            owner, first = earliest[key]
            moment = moment_of(first) or NOW
            for name in creation_dates(owner_entity):
                if isinstance(owner.get(name), str) and comes_before(owner[name], first):
                    owner[name] = created_before(owner[name], moment, rng)


# what is paid, refunded or allocated against another record, by the record's name and its amount's
_PAYS = re.compile(r"payment|allocation|reimburs|refund|remittance|installment|payout|disbursement")
_PAID = re.compile(
    r"^(amount|(amount_)?(paid|refunded|allocated)(_amount)?|(payment|refund|allocation|allocated)_amount)$"
)
_AMOUNT_TYPES = ("money", "float", "int")
# what it is paid against: the other record's total, or what is owed on it
_OWED = (
    *_WHOLES,
    "amount_due",
    "total_due",
    "total_price",
    "total_cost",
    "invoice_amount",
    "order_total",
    "price",
)


def paid_against(
    spec: EnvSpec, state: Mapping[str, Any]
) -> Iterator[tuple[EntitySpec, AttributeSpec, EntitySpec, str, str, list[dict[str, Any]], float]]:
    """(entity, its amount, owner entity, owner's total field, owner's key, the records paying
    against that owner, the owner's total) for each record that payments, refunds or allocations point
    at (an invoice's payment allocations, a reservation's payments)."""
    by_name = {e.name: e for e in spec.entities}
    for entity in spec.entities:
        paid = next((a for a in entity.attributes if a.type in _AMOUNT_TYPES and _PAID.match(a.name)), None)
        if paid is None or not _PAYS.search(entity.name):
            continue
        for ref in entity.attributes:
            owner_entity = by_name.get(str(ref.ref)) if ref.type == "ref" and ref.ref != entity.name else None
            owed = next(
                (
                    n
                    for n in _OWED
                    if owner_entity is not None
                    and (o := owner_entity.attribute(n))
                    and o.type in _AMOUNT_TYPES
                ),
                None,
            )
            if owner_entity is None or owed is None:
                continue
            groups: dict[str, list[dict[str, Any]]] = {}
            for record in (state.get(entity.table) or {}).values():
                if _money(record.get(paid.name)) is not None and isinstance(record.get(ref.name), (str, int)):
                    groups.setdefault(str(record[ref.name]), []).append(record)
            owners = state.get(owner_entity.table) or {}
            for key in sorted(groups):
                total = _money((owners.get(key) or {}).get(owed))
                if total is not None and total > 0:
                    yield entity, paid, owner_entity, owed, key, groups[key], total


def paid_in_all(parts: Sequence[Mapping[str, Any]], paid: AttributeSpec) -> float:
    """What the records `parts` pay in all, by their amount field `paid`."""
    return sum(_money(r.get(paid.name)) or 0.0 for r in parts)


def overpaid(spec: EnvSpec, state: Mapping[str, Any], tables: Iterable[str] | None = None) -> set[str]:
    """`owner_table[key].total` of each record paid, refunded or allocated against for more than its
    total, where the paying or the paid table is among `tables` (all when None); a cent's rounding is
    no overpayment."""
    scoped = None if tables is None else set(tables)
    return {
        f"{owner.table}[{key}].{owed}"
        for entity, paid, owner, owed, key, parts, total in paid_against(spec, state)
        if (scoped is None or {entity.table, owner.table} & scoped)
        and paid_in_all(parts, paid) > total * 1.0001
    }


def paid_within(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]], rng: random.Random) -> None:
    """What is paid, refunded or allocated against a record adds up to no more than its total (a
    95,444.48 allocation against an invoice of 64,676.54 is no such thing): where the records that pay
    against one add up to more, each is scaled down in proportion, to between half and all of it."""
    for _, paid, _, _, _, parts, total in paid_against(spec, state):
        held = paid_in_all(parts, paid)
        if held <= total or any(not isinstance(r[paid.name], (int, float)) for r in parts):
            continue
        factor = total * rng.uniform(0.5, 1.0) / held
        for r in parts:
            r[paid.name] = (
                int(r[paid.name] * factor) if paid.type == "int" else round(r[paid.name] * factor, 2)
            )


def _not_yet(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]]) -> None:
    """A record that has not got that far has no date of getting there: an inbound receipt still
    `expected` was not received, an `open` invoice not paid, a `draft` article not published. Its
    end dates (`semantic.phase` 3) that may be empty are emptied, and so is a date named for one of
    its later stages (`received_at` where a receipt may be `received`, whatever phase the word
    reads as elsewhere). A record that never got there (a `missed` visit) has no end date either
    (its `actual_date`), though a date named for what happened instead (`missed_at`) stays."""
    for entity in spec.entities:
        status = entity.status_attribute
        stages = {v for v in status.enum if v not in _NOT_YET} if status is not None else set()
        ends = [
            a
            for a in entity.attributes
            if a.type in ("date", "datetime")
            and a.nullable
            and (phase(a.name) == 3 or re.sub(r"_(at|on|date|time)$", "", a.name) in stages)
        ]
        if status is None or not ends:
            continue
        for record in state.get(entity.table, {}).values():
            said = str(record.get(status.name))
            if said in _NOT_YET:
                for a in ends:
                    record[a.name] = None
            elif said in _NEVER:
                for a in ends:
                    if phase(a.name) == 3 and not a.name.startswith(said):
                        record[a.name] = None


def _one_held_each(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]]) -> None:
    """A record a parent holds at a path of its own (an account's autopay, a profile's parental
    controls: a tool's binding `parent`) is one live record per parent. Of several, the newest stays;
    the others move to a parent that holds none, else have ended where the lifecycle has a value for
    that (a cancelled autopay), else (nothing referring to them) go. A parent gone for good (a closed
    account) holds no live one. What the parent says of it follows later (`_held_agree`)."""
    from agentomnia.envs.calls import referenced_keys

    held = {
        (t.entity, t.binding["parent"]["attr"]): t.binding["parent"]
        for t in spec.tools
        if t.binding.get("parent")
    }
    for (name, attr), parent in sorted(held.items()):
        entity = spec.entity(name)
        table = state.get(entity.table, {})
        status, end = entity.status_attribute, parent.get("end")
        live: dict[str, list[str]] = {}
        for key in sorted(table):
            if held_live(entity, table[key], parent):
                live.setdefault(str(table[key][attr]), []).append(key)
        owner = spec.entity(parent["parent"])
        parents = state.get(owner.table, {})
        over = owner.status_attribute
        gone = {
            k for k, r in parents.items() if over is not None and naming.gone_for_good(str(r.get(over.name)))
        }
        free = [k for k in sorted(parents) if k not in live and k not in gone]
        used = referenced_keys(spec, state, name)
        for value, keys in live.items():
            for key in (
                keys[:-1] if value not in gone or end is None else keys
            ):  # a closed account pays nothing
                record = table[key]
                if free and (ref := entity.attribute(attr)) is not None:
                    record[attr] = _ref_value(spec, ref, parents[free.pop(0)])
                elif end is not None and status is not None:
                    record[status.name] = end
                elif key not in used:
                    del table[key]


def _held_agree(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]]) -> None:
    """A parent says whether it holds its record (`autopay_enabled`), and a lifecycle value named after
    that record (`assigned`) is its while, and only while, the record lasts. Run after the requirements
    are staged, whose lifecycle values stay: an asset staged in stock to be assigned has its assignment
    ended (returned), not its status moved."""
    for tool in spec.tools:
        parent = tool.binding.get("parent")
        if not parent:
            continue
        entity = spec.entity(tool.entity)
        table = state.get(entity.table, {})
        flag, lifecycle = held_flag(spec, tool), held_lifecycle(spec, tool)
        status, end = entity.status_attribute, parent.get("end")
        for key, record in state.get(spec.entity(parent["parent"]).table, {}).items():
            live = [
                r for r in table.values() if held_live(entity, r, parent) and str(r[parent["attr"]]) == key
            ]
            if lifecycle is not None:  # an asset in stock holds no live assignment; an assigned one does
                lifecycle_attr, named, open_before = lifecycle
                if (
                    record.get(lifecycle_attr) == open_before
                    and live
                    and end is not None
                    and status is not None
                ):
                    for held in live:
                        held[status.name] = end
                    live = []
                elif record.get(lifecycle_attr) == named and not live:
                    record[lifecycle_attr] = open_before
            if flag is not None:
                record[flag.name] = bool(live)


def _free_deletable(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]]) -> None:
    """An entity that a tool deletes keeps one record nothing refers to, so the delete can be shown to
    work from s0: where every record is referred to, the least referred-to one is let go (its
    referrers point nowhere where they may, else at a sibling)."""
    deleted = {t.entity for t in spec.tools if t.op == "delete"}
    for entity in spec.entities:
        table = state.get(entity.table, {})
        if entity.name not in deleted or len(table) < 2:
            continue
        referrers: dict[str, list[tuple[AttributeSpec, dict[str, Any]]]] = {k: [] for k in table}
        for e in spec.entities:
            for a in e.attributes:
                if a.type != "ref" or a.ref != entity.name:
                    continue
                for rec in state.get(e.table, {}).values():
                    v = rec.get(a.name)
                    if v is not None and str(v) in referrers:
                        referrers[str(v)].append((a, rec))
        if any(not refs for refs in referrers.values()):
            continue
        victim = min(sorted(referrers), key=lambda k: len(referrers[k]))
        spare = next(k for k in sorted(table) if k != victim)
        for a, rec in referrers[victim]:
            rec[a.name] = None if _may_be_null(a) else _ref_value(spec, a, table[spare])


def _drop_rule_breakers(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]]) -> None:
    """Some generated records cannot be bent into shape (two rules disagree): drop them, pointing any
    references at a record of the same entity that keeps every rule."""
    for _ in range(6):
        breaks = _rule_breaks(spec, state)
        if not breaks:
            return
        broken = {(entity, key) for entity, key, _ in breaks}
        for entity, key in sorted(broken):
            table = state.get(_table(spec, entity), {})
            spare = next((k for k in table if (entity, k) not in broken), None)
            spare_record = table.get(spare) if spare is not None else None
            for e in spec.entities:
                for a in e.attributes:
                    if a.type != "ref" or a.ref != entity:
                        continue
                    for rec in state.get(e.table, {}).values():
                        if rec.get(a.name) is not None and str(rec.get(a.name)) == key:
                            rec[a.name] = (
                                _ref_value(spec, a, spare_record)
                                if spare_record is not None or not a.nullable
                                else None
                            )
            table.pop(key, None)


def _make_record(
    spec: EnvSpec,
    state: Mapping[str, Any],
    entity: EntitySpec,
    key: Any,
    rng: random.Random,
    index: int,
    world: World | None = None,
) -> dict[str, Any]:
    """One record: its own fields first, then what reads from them (free text, e-mails), then its
    dates put in lifecycle order."""
    world = world if world is not None else World()
    world.person = None
    record: dict[str, Any] = {}

    def target_label(a: AttributeSpec, value: Any) -> str | None:
        target = lookup(state.get(_table(spec, a.ref)), value)
        other = spec.entity(a.ref) if target is not None and a.ref else None
        label = other.label_attribute if other is not None else None
        shown = target.get(label.name) if target is not None and label is not None else None
        return shown if isinstance(shown, str) and shown else None

    later = [a for a in entity.attributes if a.name != entity.key and is_derived(a)]
    for a in [a for a in entity.attributes if a not in later]:
        if a.name == entity.key:
            record[a.name] = key
        elif a.type == "ref":
            targets = state.get(_table(spec, a.ref), {})
            pool = list(targets)
            record[a.name] = _ref_value(spec, a, targets[rng.choice(pool)]) if pool else None
        elif _may_be_null(a) and rng.random() < 0.08:
            record[a.name] = None
        else:
            record[a.name] = make_value(a, entity, rng, index, world=world, record=record)
    order_lifecycle(entity, record, rng)
    for a in later:
        if _may_be_null(a) and rng.random() < 0.08:
            record[a.name] = None
        else:
            record[a.name] = make_value(
                a, entity, rng, index, world=world, record=record, target_label=target_label
            )
    return {a.name: record[a.name] for a in entity.attributes}


def _may_be_null(a: AttributeSpec) -> bool:
    """Generation leaves a value empty only where null is allowed: by the declared schema, if any."""
    return a.nullable if a.declared is None else allows_null(a.declared)


def _ref_value(spec: EnvSpec, a: AttributeSpec, target: Mapping[str, Any] | None) -> Any:
    """What reference `a` holds to point at record `target`: the target's key value, as typed; its
    string form where the reference's declared schema takes that and not the typed value."""
    if target is None:
        return None
    value = target.get(spec.entity(a.ref or "").key)
    declared = a.declared
    if (
        declared is not None
        and not conforms(value, declared, formats=False)
        and conforms(str(value), declared)
    ):
        return str(value)
    return value


def _table(spec: EnvSpec, entity: str | None) -> str:
    return next((e.table for e in spec.entities if e.name == entity), "")


def lookup(table: Mapping[str, Any] | None, key: Any) -> Any:
    """The record a key value (typed, or its string form) names in a table keyed by `str(key)`."""
    if not table or key is None or isinstance(key, (dict, list)):
        return None
    return table.get(str(key))


def _resolve_side(
    spec: EnvSpec, state: Mapping[str, Any], entity: EntitySpec, record: Mapping[str, Any], side: Any
) -> Any:
    if not isinstance(side, str):
        return side
    ent, _, rest = side.partition(".")
    attr, _, target_attr = rest.partition("->")
    if ent != entity.name:
        return None
    value = record.get(attr)
    if not target_attr:
        return value
    ref = entity.attribute(attr)
    target = lookup(state.get(_table(spec, ref.ref if ref else None), {}), value)
    return target.get(target_attr) if target else None


_OPS = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b, ">=": lambda a, b: a >= b, ">": lambda a, b: a > b,
}  # fmt: skip


def repair_rules(spec: EnvSpec, state: dict[str, dict[str, dict[str, Any]]], passes: int = 3) -> None:
    """Bend generated values until range and comparison rules hold; rules can interact, so a few passes."""
    for _ in range(passes):
        for rule in spec.rules:
            if rule.kind == "range" and rule.entity and rule.attr:
                entity = next(e for e in spec.entities if e.name == rule.entity)
                for rec in state.get(entity.table, {}).values():
                    v = rec.get(rule.attr)
                    if isinstance(v, (int, float)) and not isinstance(v, bool):
                        lo = rule.min if rule.min is not None else v
                        hi = rule.max if rule.max is not None else v
                        rec[rule.attr] = _coerce(entity.attribute(rule.attr), min(max(v, lo), hi))
            elif rule.kind == "compare" and isinstance(rule.left, str) and "->" not in rule.left:
                ent_name, _, rest = rule.left.partition(".")
                owner = next((e for e in spec.entities if e.name == ent_name), None)
                if owner is None:
                    continue
                for rec in state.get(owner.table, {}).values():
                    left = rec.get(rest)
                    right = _resolve_side(spec, state, owner, rec, rule.right)
                    if left is None or right is None:
                        continue
                    try:
                        if _OPS[rule.op](left, right):  # type: ignore[index]
                            continue
                    except TypeError:
                        continue
                    fixed = satisfying(left, right, rule.op)  # type: ignore[arg-type]
                    attr = owner.attribute(rest)
                    if fixed is None and attr is not None and attr.type == "ref":
                        others = [
                            r for k, r in state.get(_table(spec, attr.ref), {}).items() if k != str(right)
                        ]
                        fixed = _ref_value(spec, attr, others[0]) if others else None
                    rec[rest] = _coerce(attr, fixed)


def satisfying(left: Any, right: Any, op: str) -> Any:
    """A value for the left side that makes `left op right` true, as close to `right` as the type allows."""
    if isinstance(right, bool) or isinstance(left, bool):
        return right if op in ("==", "<=", ">=") else (not right)
    if isinstance(right, (int, float)):
        step: float = 1 if isinstance(right, int) and isinstance(left, int) else 0.01
        target = {
            "<": right - step,
            "<=": right,
            "==": right,
            ">=": right,
            ">": right + step,
            "!=": right + step,
        }[op]
        return round(target, 2) if isinstance(target, float) else target
    if isinstance(right, str) and op in ("<", ">", "!="):
        sign = -1 if op == "<" else 1
        if _is_date(right):
            return (date.fromisoformat(right) + timedelta(days=sign)).isoformat()
        if _is_datetime(right):
            return (datetime.fromisoformat(right) + timedelta(hours=sign)).isoformat(timespec="seconds")
        return None  # a string that must differ (another record's id): the caller redraws it
    return right


def _coerce(attr: AttributeSpec | None, value: Any) -> Any:
    if attr is not None and attr.type == "int" and isinstance(value, float):
        return int(round(value))
    declared = attr.declared if attr is not None else None
    if (
        declared is not None
        and isinstance(value, float)
        and "number" not in (json_types(declared) or ["number"])
    ):
        return int(round(value))  # an integer the seed declares
    if attr is not None and attr.type in ("float", "money") and isinstance(value, float):
        return round(value, 2)
    return value


def state_violations(spec: EnvSpec, state: Mapping[str, Any], *, tables: set[str] | None = None) -> list[str]:
    """Every broken invariant: missing tables, keys, types, enums, references and domain rules.

    With `tables` (the tables a call changed), only what those changes can break is checked: their
    own records and rules, and references into them from other tables.
    """
    out: list[str] = []
    table_of = {e.name: e.table for e in spec.entities}
    if tables is not None:
        changed = {e.name for e in spec.entities if e.table in tables}
        touched = changed | {
            e.name for e in spec.entities for a in e.attributes if a.type == "ref" and a.ref in changed
        }
        scope = [e for e in spec.entities if e.name in touched]
    else:
        touched, scope = set(table_of), list(spec.entities)
    for entity in scope:
        table = state.get(entity.table)
        if not isinstance(table, dict):
            out.append(f"state has no table {entity.table!r} (a dict of {entity.name} records)")
            continue
        # Per attribute: its name, its type's check and, for references, the table they point into.
        checks = [
            (
                a,
                _type_check(spec, a),
                state.get(table_of.get(a.ref or "", ""), {}) if a.type == "ref" else None,
            )
            for a in entity.attributes
        ]
        for key, rec in table.items():
            where = f"{entity.table}[{key!r}]"
            if not isinstance(rec, dict):
                out.append(f"{where} is not a record")
                continue
            own = rec.get(entity.key)
            if own is None or isinstance(own, (dict, list)) or str(own) != key:
                out.append(f"{where}.{entity.key} is {own!r}, not its key")
            for a, type_ok, targets in checks:
                name = a.name
                if name not in rec:
                    out.append(f"{where}.{name} is missing")
                    continue
                problem = _problem(a, rec[name], type_ok, targets)
                if problem:
                    out.append(f"{where}.{name} {problem}")
    out += [m for entity, _, m in _rule_breaks(spec, state, touched) if entity in touched]
    return out


def value_problem(
    spec: EnvSpec, state: Mapping[str, Any], a: AttributeSpec, v: Any, *, present: bool = True
) -> str | None:
    if not present:
        return "is missing"
    targets = state.get(_table(spec, a.ref), {}) if a.type == "ref" else None
    return _problem(a, v, _type_check(spec, a), targets)


def _type_check(spec: EnvSpec, a: AttributeSpec) -> Callable[[Any], bool]:
    """The type test of an attribute's values: the JSON types its declared schema admits, where the
    seed declares one (an integer key, a typed reference), else the platform type's; an undeclared
    reference also takes the type of the key it points at."""
    declared = a.declared
    if declared is not None:
        return lambda v: type_matches(declared, v)
    if a.type == "ref":
        target = next((e for e in spec.entities if e.name == a.ref), None)
        key_attr = target.attribute(target.key) if target is not None else None
        key_schema = key_attr.declared if key_attr is not None else None
        if key_schema is not None:
            return lambda v: isinstance(v, str) or type_matches(key_schema, v)
    return _TYPE_CHECKS[a.type]


def _problem(a: AttributeSpec, v: Any, type_ok: Callable[[Any], bool], targets: Any) -> str | None:
    """What is wrong with value `v` of attribute `a` (`targets`: the referenced table, for refs)."""
    if v is None:
        if a.nullable or a.type == "ref" or (a.declared is not None and allows_null(a.declared)):
            return None
        return "is null but not nullable"
    t = a.type
    if not type_ok(v):
        expected = t if a.declared is None else f"{t} declared as {json_types(a.declared)}"
        return f"has {type(v).__name__} {v!r}, expected {expected}"
    if t == "enum" and (a.enum or a.declared is None) and v not in a.enum:
        return f"is {v!r}, not one of {list(a.enum)}"
    if a.declared is not None and isinstance(a.declared.get("enum"), list) and v not in a.declared["enum"]:
        return f"is {v!r}, not one of {a.declared['enum']}"
    if t == "money" and _is_number(v) and v < 0:
        return f"is negative ({v})"
    if t == "ref" and lookup(targets, v) is None:
        return f"points to missing {a.ref} {v!r}"
    return None


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "str": lambda v: isinstance(v, str), "text": lambda v: isinstance(v, str),
    "enum": lambda v: isinstance(v, str), "ref": lambda v: isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool), "bool": lambda v: isinstance(v, bool),
    "float": _is_number, "money": _is_number,
    "date": lambda v: isinstance(v, str) and _is_date(v), "datetime": lambda v: isinstance(v, str) and _is_datetime(v),
    "list": lambda v: isinstance(v, list), "object": lambda v: isinstance(v, dict),
}  # fmt: skip


def _is_date(v: str) -> bool:
    try:
        date.fromisoformat(v)
        return len(v) == 10
    except ValueError:
        return False


def _is_datetime(v: str) -> bool:
    try:
        datetime.fromisoformat(v)
        return True
    except ValueError:
        return False


def rule_violations(spec: EnvSpec, state: Mapping[str, Any]) -> list[str]:
    return [message for _, _, message in _rule_breaks(spec, state)]


def _rule_breaks(
    spec: EnvSpec, state: Mapping[str, Any], entities: set[str] | None = None
) -> list[tuple[str, str, str]]:
    """(entity, key, message) for each record that breaks a range, comparison or uniqueness rule
    (only rules about `entities`, when given)."""
    out: list[tuple[str, str, str]] = []
    for rule in spec.rules:
        if entities is not None and _rule_entity(rule) not in entities:
            continue
        if rule.kind == "range" and rule.entity and rule.attr:
            for key, rec in (state.get(_table(spec, rule.entity)) or {}).items():
                v = rec.get(rule.attr)
                numeric = isinstance(v, (int, float)) and not isinstance(v, bool)
                if numeric and (
                    (rule.min is not None and v < rule.min) or (rule.max is not None and v > rule.max)
                ):
                    out.append(
                        (
                            rule.entity,
                            key,
                            f"rule {rule.id}: {rule.entity} {key} has {rule.attr}={v} outside [{rule.min}, {rule.max}]",
                        )
                    )
        elif rule.kind == "compare" and isinstance(rule.left, str) and "->" not in rule.left:
            ent_name = rule.left.split(".")[0]
            entity = next((e for e in spec.entities if e.name == ent_name), None)
            if entity is None:
                continue
            for key, rec in (state.get(entity.table) or {}).items():
                left = _resolve_side(spec, state, entity, rec, rule.left)
                right = _resolve_side(spec, state, entity, rec, rule.right)
                if left is None or right is None:
                    continue
                try:
                    holds = _OPS[rule.op](left, right)  # type: ignore[index]
                except TypeError:
                    holds = False
                if not holds:
                    out.append(
                        (
                            ent_name,
                            key,
                            f"rule {rule.id}: {ent_name} {key}: {rule.left}={left!r} {rule.op} {rule.right}={right!r} fails",
                        )
                    )
        elif rule.kind == "unique" and rule.entity:
            seen: dict[tuple[Any, ...], str] = {}
            for key, rec in (state.get(_table(spec, rule.entity)) or {}).items():
                combo = tuple(rec.get(a) for a in rule.attrs)
                if None in combo:
                    continue
                if combo in seen:
                    shown = dict(zip(rule.attrs, combo, strict=True))
                    out.append(
                        (
                            rule.entity,
                            key,
                            f"rule {rule.id}: {rule.entity} {key} repeats {shown} of {seen[combo]}",
                        )
                    )
                else:
                    seen[combo] = key
    return out


def _rule_entity(rule: Rule) -> str | None:
    """The entity whose records a range, comparison or uniqueness rule is reported against."""
    if rule.kind == "compare" and isinstance(rule.left, str):
        return rule.left.split(".")[0]
    return rule.entity
