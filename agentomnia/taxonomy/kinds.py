"""Kinds of things every domain's systems name the same way: what a record or field of a kind is called
when neither the environment's domain nor a related one lists values for it (a seed's `freezer`, a
nested `channel` or `vaccine`, the `memo` of a split).

One YAML file, `data/kinds.yaml`, a list of items, the most telling first:

    - field: channel|contact_channel        # the field's name (a regex, matched whole)
      entity: follow_up|invoice             # optional: the record's entity (a regex, searched)
      domain: finance|account               # optional: the environment's "L1 > L2" names (searched)
      values: [Email, Phone call, "{city} branch"]    # 6-40 values
      pairs: cause|root_cause               # optional: value i goes with value i of the item whose
                                            # `field` is this text (same entity and domain): a repair's
                                            # correction with its cause

A value may name `{first}`, `{last}`, `{city}`, `{street}`, `{company}`, `{year}`, `{n}` (1-9),
`{nn}` (10-99) or `{letter}` (A-H); the engine fills them from the world's locale. An item that says
more (a domain, an entity) wins over one that says less. `python -m agentomnia.taxonomy.kinds`
checks the file and exits non-zero on problems, each naming the item and the fix.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

SLOTS = frozenset({"first", "last", "city", "street", "company", "year", "n", "nn", "letter"})
SIZE = (6, 40)
_SLOT = re.compile(r"\{([a-z_]+)\}")


@dataclass(frozen=True)
class Kind:
    field: re.Pattern[str]
    values: tuple[str, ...]
    entity: re.Pattern[str] | None = None
    domain: re.Pattern[str] | None = None
    pairs: str | None = None  # the `field` text of the item whose values these go with, index by index

    @property
    def weight(self) -> int:
        return (self.domain is not None) * 2 + (self.entity is not None)


def kinds_path() -> Path:
    return Path(__file__).parent / "data" / "kinds.yaml"


def _problems(raw: Any, where: str) -> tuple[list[Kind], list[str]]:
    if not isinstance(raw, list):
        return [], [f"{where}: expected a list of items (field, values, optional entity and domain)"]
    kinds: list[Kind] = []
    problems: list[str] = []
    for i, item in enumerate(raw):
        at = f"{where} item {i + 1}"
        if not isinstance(item, dict) or not isinstance(item.get("field"), str):
            problems.append(f"{at}: needs `field` (a regex on the field's name) and `values`")
            continue
        at = f"{at} ({item['field']})"
        extra = set(item) - {"field", "entity", "domain", "values", "pairs"}
        if extra:
            problems.append(f"{at}: unknown keys {sorted(extra)}; use field, entity, domain, values, pairs")
        values = item.get("values")
        if not isinstance(values, list) or not all(isinstance(v, str) and v.strip() for v in values):
            problems.append(f"{at}: `values` must be a list of non-empty strings")
            continue
        if not SIZE[0] <= len(set(values)) <= SIZE[1]:
            problems.append(f"{at}: {len(set(values))} distinct values; give {SIZE[0]}-{SIZE[1]}")
        unknown = sorted({s for v in values for s in _SLOT.findall(v)} - SLOTS)
        if unknown:
            problems.append(f"{at}: unknown slots {unknown}; the engine fills {sorted(SLOTS)}")
        patterns: dict[str, re.Pattern[str] | None] = {}
        for key in ("field", "entity", "domain"):
            text = item.get(key)
            if text is None:
                patterns[key] = None
                continue
            try:
                patterns[key] = re.compile(str(text))
            except re.error as exc:
                problems.append(f"{at}: `{key}` is not a regex ({exc}); escape it or fix the pattern")
                patterns[key] = None
        field_rx = patterns["field"]
        if field_rx is not None:
            pairs = item.get("pairs")
            if pairs is not None and len(set(values)) != len(values):
                problems.append(
                    f"{at}: a paired item's values must not repeat; value i goes with value i of its pair"
                )
            kinds.append(Kind(field_rx, tuple(dict.fromkeys(values)), patterns["entity"], patterns["domain"],
                              str(pairs) if pairs is not None else None))  # fmt: skip
    for kind in kinds:
        if kind.pairs is None:
            continue
        leader = _leader(kinds, kind)
        at = f"{where} item ({kind.field.pattern}) pairs with {kind.pairs!r}"
        if leader is None:
            problems.append(
                f"{at}: no item has that `field` with the same entity and domain; name one that does"
            )
        elif len(leader.values) != len(kind.values) or slots("".join(kind.values + leader.values)):
            problems.append(
                f"{at}: give {len(leader.values)} values without slots, one for each of that item's, in its order"
            )
    return kinds, problems


def _leader(kinds: list[Kind] | tuple[Kind, ...], kind: Kind) -> Kind | None:
    """The item whose values `kind`'s go with (`pairs`)."""

    def text(p: re.Pattern[str] | None) -> str | None:
        return p.pattern if p is not None else None

    return next(
        (
            k
            for k in kinds
            if k.field.pattern == kind.pairs
            and text(k.entity) == text(kind.entity)
            and text(k.domain) == text(kind.domain)
        ),
        None,
    )


@cache
def paired_values() -> dict[tuple[str, ...], tuple[str, ...]]:
    """For each item that pairs with another: its values -> the leading item's values, index by index."""
    kinds = load_kinds()
    return {k.values: leader.values for k in kinds if k.pairs and (leader := _leader(kinds, k)) is not None}


def read_kinds(path: Path) -> tuple[list[Kind], list[str]]:
    """The kinds of one file and its problems, each naming the item and the fix."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        return [], [f"{path}{line}: not YAML ({exc}); fix the syntax"]
    return _problems(raw, str(path))


@cache
def load_kinds() -> tuple[Kind, ...]:
    kinds, problems = read_kinds(kinds_path())
    if problems:
        raise ValueError(f"{len(problems)} problems in the kinds vocabulary, e.g. {problems[0]}")
    return tuple(kinds)


@cache
def _domain_text(domain_id: int | None) -> str:
    from agentomnia.taxonomy.domains import taxonomy_index

    tree = taxonomy_index()
    if domain_id is None or domain_id not in tree:
        return ""
    d = tree.by_id(domain_id)
    return f"{d.l1} > {d.l2}".lower()


@cache
def kind_values(field: str, entity: str, domain_id: int | None) -> tuple[str, ...]:
    """The values of the most telling kind for a field of an entity in a domain; () when none fits.
    An entity-bound or domain-bound item applies only where its pattern finds the entity or domain."""
    domain = _domain_text(domain_id)
    best: Kind | None = None
    for kind in load_kinds():
        if not kind.field.fullmatch(field):
            continue
        if kind.entity is not None and not kind.entity.search(entity):
            continue
        if kind.domain is not None and not kind.domain.search(domain):
            continue
        if best is None or kind.weight > best.weight:
            best = kind
    return best.values if best is not None else ()


def slots(value: str) -> set[str]:
    return set(_SLOT.findall(value))


def _main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or [kinds_path()]
    bad = 0
    for path in paths:
        kinds, problems = read_kinds(path)
        for p in problems:
            print(p)
        bad += len(problems)
        if not problems:
            print(f"{path}: {len(kinds)} kinds, no problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
