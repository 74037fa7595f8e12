"""Value vocabularies: what the records of each knowledge-base domain are called and what their numbers
look like, so a generated world reads like the domain's own system.

One YAML file per knowledge file (`data/vocab/<stem>.yaml` beside `data/knowledge/<stem>.yaml`), one
item per domain in the knowledge file's order:

    - id: 20000                 # the domain's id in the knowledge file
      locale: en_US             # optional Faker locale for people, companies, addresses
      values:
        security:               # an entity of that domain
          name: [Vanguard Total Stock Market ETF, iShares Core S&P 500 ETF, ...]   # 6-15 values
          last_price: {min: 8, max: 650, decimals: 2}                            # a plausible range
          cusip: {pattern: "[0-9]{3}[0-9A-Z]{5}[0-9]"}                           # a real-world format
          issuer: {faker: company}                                              # a Faker provider
        trade_order:
          notes: ["Rebalancing trade: {account_type} account drifted outside its band.", ...]
        vehicle:
          linked:                 # values that belong together, drawn together per record
            - attrs: [make, model]
              rows: [[Toyota, Corolla], [Ford, F-150], [Honda, Civic], ...]              # 6-15 rows

Sentences of a text attribute may name another attribute of the same record in braces. A remark field
that seeds add beside an entity's own attributes (a sanction's `note`, a claim's `rejection_reason`) may
have sentences too, though the knowledge file does not list it (see `vocab_attribute`). The loader
reads every file present (a missing one is no error); `vocab_problems` checks one file against its
knowledge file, and `python -m agentomnia.taxonomy.vocab [FILE...]` checks every file (or the ones
named) and exits non-zero on problems, each naming file, domain, entity, attribute and the fix.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml

from agentomnia.taxonomy.knowledge import Attribute, DomainKnowledge, load_file, load_knowledge

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
EntryKind = Literal["list", "range", "pattern", "faker"]
# Words that make a str attribute a sentence when one of its name's parts is one of them (`notes`,
# `review_text`, `cancellation_reason`), never a part of a longer word (`reviewer`, `context`).
_NAMES_A_RECORD = re.compile(r"_(id|ids|key|uuid|ref|number|no|code)$")
FREE_TEXT = re.compile(
    r"(^|_)(note|description|comment|reason|summary|details|body|message|review|instruction|feedback"
    r"|remark|justification|rationale|statement|explanation|content|agenda|question|response|conditions"
    r"|step|hypothesis|objective|indication|complaint|intervention|logic|preconditions|to_reproduce|bio"
    r"|biography|text|finding|cause|correction|memo|assessment|subjective|advice|synopsis|answer"
    r"|action_taken|controls|outcome|impression|recommendation|rectification|mitigation|observation)s?($|_)"
)
# Where a record is: filled with the locale's Faker addresses whatever the attribute's type (an
# `address` typed text is a postal address, not a sentence); a vocabulary may give a faker or pattern.
PLACE_FIELD = re.compile(
    r"^(?!.*(e_?mail|(^|_)ip|ipv[46]|mac|wallet|web|memory|contract|server|crypto|bitcoin|eth)_?address$)"
    r"(.*(^|_)address(_?line)?(_?[12])?|(.*_)?street(_address|_line_?[12]|_name)?|(.*_)?line_?[12]"
    r"|(.*_)?(city|town)|(.*_)?country|(.*_)?(postcode|post_code|postal_code|zip|zip_code|zipcode))$"
)
# Attributes any domain fills the same way from their name: the engine's Faker values, not a vocabulary.
ENGINE_FILLED = re.compile(r"(^|_)(e_?mail|phone|mobile|fax|url|website|homepage)($|_)")
PLACEHOLDER_WORDS = frozenset(
    {"lorem", "ipsum", "dolor", "foo", "foobar", "placeholder", "dummy", "asdf", "xxx", "tbd", "todo"}
)
_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")
_NUMBERED = re.compile(r"^(?P<stem>.*\S)\s+#?\d+$")
LIST_SIZE = (6, 15)


@dataclass(frozen=True)
class VocabEntry:
    """How one attribute's values are drawn: from a list, a range, a pattern or a Faker provider."""

    kind: EntryKind
    values: tuple[Any, ...] = ()
    min: float = 0.0
    max: float = 0.0
    decimals: int | None = None
    pattern: str = ""
    faker: str = ""


@dataclass(frozen=True)
class LinkedGroup:
    """Attributes whose values belong together (a make and its model, a ticker and its fund): one
    row is drawn per record and each attribute takes its column."""

    attrs: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    def column(self, attr: str) -> int:
        return self.attrs.index(attr)


@dataclass(frozen=True)
class DomainVocab:
    id: int
    locale: str = "en_US"
    values: dict[str, dict[str, VocabEntry]] = field(default_factory=dict)
    linked: dict[str, tuple[LinkedGroup, ...]] = field(default_factory=dict)

    def entry(self, entity: str, attr: str) -> VocabEntry | None:
        return self.values.get(entity, {}).get(attr)

    def group(self, entity: str, attr: str) -> LinkedGroup | None:
        """The linked group an attribute belongs to, if any."""
        return next((g for g in self.linked.get(entity, ()) if attr in g.attrs), None)

    def names(self, entity: str, attr: str) -> tuple[str, ...]:
        """The words an attribute is listed with, in a plain list or as a linked group's column
        (an airport's names beside their codes): what another entity may borrow."""
        entry = self.entry(entity, attr)
        if entry is not None and entry.kind == "list":
            return tuple(str(v) for v in entry.values if isinstance(v, str))
        group = self.group(entity, attr)
        if group is None:
            return ()
        i = group.column(attr)
        return tuple(dict.fromkeys(str(row[i]) for row in group.rows if isinstance(row[i], str)))


def data_dir() -> Path:
    return Path(str(resources.files("agentomnia.taxonomy") / "data" / "vocab"))


def _knowledge_dir() -> Path:
    return Path(str(resources.files("agentomnia.taxonomy") / "data" / "knowledge"))


def _entry(raw: Any) -> tuple[VocabEntry | None, str]:
    """The entry a raw YAML value describes, or None and what is wrong with it."""
    if isinstance(raw, list):
        return VocabEntry(kind="list", values=tuple(raw)), ""
    if not isinstance(raw, dict):
        return None, f"is {raw!r}; write a list of values, {{min, max}}, {{pattern}} or {{faker}}"
    keys = set(raw)
    if keys and keys <= {"min", "max", "decimals"} and {"min", "max"} <= keys:
        lo, hi, dec = raw["min"], raw["max"], raw.get("decimals")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (lo, hi)):
            return None, f"range {raw!r} needs numbers; write {{min: 1, max: 100}}"
        if dec is not None and (not isinstance(dec, int) or isinstance(dec, bool) or not 0 <= dec <= 6):
            return None, f"decimals {dec!r} must be a whole number 0-6"
        return VocabEntry(kind="range", min=float(lo), max=float(hi), decimals=dec), ""
    if keys == {"pattern"} and isinstance(raw["pattern"], str):
        return VocabEntry(kind="pattern", pattern=raw["pattern"]), ""
    if keys == {"faker"} and isinstance(raw["faker"], str):
        return VocabEntry(kind="faker", faker=raw["faker"]), ""
    return None, (
        f"has keys {sorted(keys)}; write exactly one of a list, {{min: X, max: Y}} (optional decimals), "
        "{pattern: REGEX} or {faker: PROVIDER}"
    )


def _group(raw: Any) -> tuple[LinkedGroup | None, str]:
    """The linked group a raw `linked:` item describes, or None and what is wrong with it."""
    shape = "write {attrs: [make, model], rows: [[Toyota, Corolla], [Ford, F-150], ...]}"
    if not isinstance(raw, dict) or set(raw) != {"attrs", "rows"}:
        return None, f"item {raw!r} is not a group; {shape}"
    attrs, rows = raw["attrs"], raw["rows"]
    if not isinstance(attrs, list) or len(attrs) < 2 or not all(isinstance(a, str) for a in attrs):
        return None, f"group attrs {attrs!r} must list two or more attribute names; {shape}"
    if len(set(attrs)) != len(attrs):
        return None, f"group {attrs} names an attribute twice; name each once"
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
        return None, f"group {attrs} rows must be a list of lists; {shape}"
    bad = next((r for r in rows if len(r) != len(attrs)), None)
    if bad is not None:
        return None, f"group {attrs} has row {bad!r} of {len(bad)} values; write {len(attrs)} per row"
    out: list[tuple[Any, ...]] = []
    for row in rows:
        cells: list[Any] = []
        for attr, cell in zip(attrs, row, strict=True):
            if isinstance(cell, dict):  # a number that depends on the row: a beagle weighs 9-14 kg
                entry, why = _entry(cell)
                if entry is None or entry.kind != "range":
                    return None, f"group {attrs} row {row!r}: {attr} {why or 'must be {min: X, max: Y}'}"
                if entry.min > entry.max:
                    return None, f"group {attrs} row {row!r}: {attr} range {cell!r} has min above max"
                cell = entry
            cells.append(cell)
        out.append(tuple(cells))
    return LinkedGroup(attrs=tuple(attrs), rows=tuple(out)), ""


def _parse(raw: Any, where: str) -> tuple[list[DomainVocab], list[str]]:
    """Domain vocabularies in a parsed file, and the structural problems (entries that cannot be read)."""
    problems: list[str] = []
    if not isinstance(raw, list):
        return [], [f"{where}: expected a YAML list with one item per domain (- id: ..., values: ...)"]
    out: list[DomainVocab] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("id"), int):
            problems.append(f"{where}: item #{i + 1} has no integer `id`; start it with `- id: <domain id>`")
            continue
        did = item["id"]
        extra = set(item) - {"id", "locale", "values"}
        if extra:
            problems.append(f"{where}: domain {did}: unknown keys {sorted(extra)}; use id, locale, values")
        locale = item.get("locale") or "en_US"
        values = item.get("values") or {}
        if not isinstance(values, dict):
            problems.append(f"{where}: domain {did}: `values` must map entity -> attribute -> entry")
            values = {}
        table: dict[str, dict[str, VocabEntry]] = {}
        linked: dict[str, list[LinkedGroup]] = {}
        for entity, attrs in values.items():
            if not isinstance(attrs, dict):
                problems.append(
                    f"{where}: domain {did}: entity {entity}: write a mapping of attribute -> entry"
                )
                continue
            for attr, raw_entry in attrs.items():
                if attr == "linked":
                    if not isinstance(raw_entry, list):
                        problems.append(
                            f"{where}: domain {did}: {entity}.linked must be a list of groups "
                            "({attrs: [a, b], rows: [[..], ..]})"
                        )
                        continue
                    for raw_group in raw_entry:
                        group, why = _group(raw_group)
                        if group is None:
                            problems.append(f"{where}: domain {did}: {entity}.linked {why}")
                            continue
                        linked.setdefault(str(entity), []).append(group)
                    continue
                entry, why = _entry(raw_entry)
                if entry is None:
                    problems.append(f"{where}: domain {did}: {entity}.{attr} {why}")
                    continue
                table.setdefault(str(entity), {})[str(attr)] = entry
        out.append(
            DomainVocab(
                id=did, locale=str(locale), values=table, linked={k: tuple(v) for k, v in linked.items()}
            )
        )
    return out, problems


def read_file(path: Path) -> tuple[list[DomainVocab], list[str]]:
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER) or []
    except (OSError, yaml.YAMLError) as exc:
        return [], [f"{path.name}: cannot read YAML: {exc}"]
    return _parse(raw, path.name)


# ---------------------------------------------------------------- checks against the knowledge file

_ALLOWED_RE = {
    "LITERAL", "NOT_LITERAL", "IN", "RANGE", "CATEGORY", "NEGATE", "MAX_REPEAT", "MIN_REPEAT",
    "SUBPATTERN", "BRANCH", "AT",
}  # fmt: skip


def pattern_problem(pattern: str) -> str | None:
    """Why a vocabulary pattern is not a plain code format (None when it is)."""
    try:
        re.compile(pattern)
        parsed = importlib.import_module("re._parser").parse(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        return f"is not a regular expression ({exc})"
    maxrepeat = importlib.import_module("re._parser").MAXREPEAT

    def walk(items: Any) -> str | None:
        for op, av in items:
            name = getattr(op, "name", str(op))
            if name not in _ALLOWED_RE:
                return (
                    f"uses {name.lower()} (write only classes, literals, {{n}}/{{m,n}} counts, ?, groups, |)"
                )
            if name in ("MAX_REPEAT", "MIN_REPEAT"):
                low, high, sub = av
                if high == maxrepeat:
                    return "has an unbounded repeat (+ or *); write a count {m,n}"
                found = walk(sub)
            elif name == "SUBPATTERN":
                found = walk(av[-1])
            elif name == "BRANCH":
                found = next((p for b in av[1] if (p := walk(b))), None)
            else:
                found = None
            if found:
                return found
        return None

    return walk(parsed)


@cache
def _faker_names(locale: str) -> frozenset[str] | None:
    """The no-argument provider methods Faker offers for a locale (None: unknown locale)."""
    from faker import Faker
    from faker.config import AVAILABLE_LOCALES

    if locale not in AVAILABLE_LOCALES:
        return None
    gen = Faker(locale).factories[0]
    names = set()
    for name in dir(gen):
        if name.startswith("_"):
            continue
        try:
            member = getattr(gen, name)
        except Exception:  # a property that needs arguments or state
            continue
        if not callable(member) or inspect.isclass(member):
            continue
        try:
            params = inspect.signature(member).parameters.values()
        except (TypeError, ValueError):
            continue
        if all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
            names.add(name)
    return frozenset(names)


def _ranges(kb: DomainKnowledge) -> dict[tuple[str, str], tuple[float | None, float | None]]:
    out: dict[tuple[str, str], tuple[float | None, float | None]] = {}
    for rule in kb.rules:
        if rule.kind == "range" and rule.entity and rule.attr:
            lo, hi = out.get((rule.entity, rule.attr), (None, None))
            lo = rule.min if lo is None else (lo if rule.min is None else max(lo, rule.min))
            hi = rule.max if hi is None else (hi if rule.max is None else min(hi, rule.max))
            out[(rule.entity, rule.attr)] = (lo, hi)
    return out


def free_text(type_: str, name: str) -> bool:
    """Sentences rather than values: `text` attributes and str ones named like notes; never an
    address, street, city, country or postcode, whatever its type."""
    if PLACE_FIELD.match(name) or _NAMES_A_RECORD.search(name):
        return False  # `reply_to_message_id` names a message, it says nothing
    return type_ == "text" or (type_ == "str" and FREE_TEXT.search(name) is not None)


def is_free_text(attr: Attribute | Any) -> bool:
    return free_text(getattr(attr, "type", ""), getattr(attr, "name", ""))


def _entry_problem(
    entry: VocabEntry,
    attr: Attribute,
    owner: Any,
    locale: str | None,
    bounds: tuple[float | None, float | None] | None,
) -> str | None:
    """What is wrong with one attribute's entry (None when nothing is; `locale` None: Faker
    provider names go unchecked)."""
    t = attr.type
    numeric = t in ("int", "float", "money")
    if attr.name == owner.key:
        return "is the entity's key; leave it out (the engine numbers keys)"
    if t in ("ref", "enum", "bool", "date", "datetime"):
        return f"is a {t} attribute; leave it out (the engine fills {t} values from the knowledge file)"
    if t == "str" and ENGINE_FILLED.search(attr.name):
        return "is filled by the engine from its name (e-mail, phone, URL); leave it out"
    if entry.kind == "list":
        n = len(entry.values)
        if not LIST_SIZE[0] <= n <= LIST_SIZE[1]:
            return f"lists {n} values; write {LIST_SIZE[0]} to {LIST_SIZE[1]}"
        if numeric:
            bad = [v for v in entry.values if not isinstance(v, (int, float)) or isinstance(v, bool)]
            if bad:
                return f"is a {t} attribute but lists {bad[0]!r}; list numbers or write {{min: X, max: Y}}"
            if t == "int" and any(isinstance(v, float) and not v.is_integer() for v in entry.values):
                return "is an int attribute but lists fractions; list whole numbers"
        else:
            bad = [v for v in entry.values if not isinstance(v, str) or not v.strip()]
            if bad:
                return f"is a {t} attribute but lists {bad[0]!r}; quote every value as a non-empty string"
            if len(set(entry.values)) != n:
                return "repeats a value; list distinct values"
            words = {w for v in entry.values for w in re.findall(r"[a-z]+", v.lower())}
            if words & PLACEHOLDER_WORDS:
                return f"uses placeholder words {sorted(words & PLACEHOLDER_WORDS)}; write real values"
            # "Plan 1", "Bay 2": the record's own noun and a number is the placeholder this replaces
            own = set(owner.name.split("_")) | set(attr.name.split("_"))
            stems = [m["stem"].lower() for v in entry.values if (m := _NUMBERED.match(v))]
            repeated = sorted({s for s in stems if stems.count(s) > 1 and s.split()[-1] in own})
            if repeated:
                return f"numbers its values ({repeated[0]!r} 1, 2, ...); write names a real system would hold"
            if is_free_text(attr):
                for v in entry.values:
                    for name in _PLACEHOLDER.findall(v):
                        other = owner.attribute(name)
                        if other is None:
                            return f"sentence {v!r} names {{{name}}}, which {owner.name} has no attribute of"
                        if name == owner.key or is_free_text(other):
                            return f"sentence {v!r} names {{{name}}}; name an attribute that is neither the key nor free text"
        if numeric and bounds is not None:
            lo, hi = bounds
            outside = [v for v in entry.values if (lo is not None and v < lo) or (hi is not None and v > hi)]
            if outside:
                return (
                    f"lists {outside[0]} outside the domain's range rule [{lo}, {hi}]; keep values inside it"
                )
        return None
    if entry.kind == "range":
        if not numeric:
            return f"is a {t} attribute; a {{min, max}} range is for money, int and float attributes"
        if entry.min > entry.max:
            return f"has min {entry.min} above max {entry.max}; swap them"
        if bounds is not None:
            lo, hi = bounds
            if (lo is not None and entry.min < lo) or (hi is not None and entry.max > hi):
                return (
                    f"range [{entry.min}, {entry.max}] leaves the domain's range rule [{lo}, {hi}]; "
                    f"write {{min: {max(entry.min, lo) if lo is not None else entry.min}, "
                    f"max: {min(entry.max, hi) if hi is not None else entry.max}}}"
                )
        return None
    if entry.kind == "pattern":
        if t not in ("str", "text"):
            return f"is a {t} attribute; a pattern is for str codes (write {{min, max}} for numbers)"
        why = pattern_problem(entry.pattern)
        return f"pattern {entry.pattern!r} {why}" if why else None
    if t not in ("str", "text"):
        return f"is a {t} attribute; a Faker provider is for str values (write {{min, max}} for numbers)"
    names = _faker_names(locale) if locale is not None else None
    if names is not None and entry.faker not in names:
        return f"names Faker provider {entry.faker!r}, which {locale} lacks or which needs arguments; use e.g. company, job, iban, city"
    return None


# an enum may be linked (a pet's species beside its breed) when its column lists the enum's own values
_UNLINKABLE = ("ref", "bool", "date", "datetime", "list", "object")


# a cell that means "nothing here": a record would show the word itself ("mount": "None")
_NO_VALUE = frozenset({"none", "null", "n/a", "nil", "-"})  # not "NA": North America is a value


def group_problem(
    group: LinkedGroup,
    owner: Any,
    entries: dict[str, VocabEntry],
    bounds: dict[tuple[str, str], tuple[float | None, float | None]],
    taken: set[str],
) -> str | None:
    """What is wrong with one linked group of an entity (None when nothing is); `taken` holds the
    attributes earlier groups of the entity already link."""
    for name in group.attrs:
        attr = owner.attribute(name)
        if attr is None:
            return (
                f"names {name!r}, which is not an attribute; use some of {[a.name for a in owner.attributes]}"
            )
        if name == owner.key:
            return f"links the key {name!r}; leave it out (the engine numbers keys)"
        if attr.type in _UNLINKABLE or is_free_text(attr):
            return f"links {name!r}, a {attr.type} attribute; link str codes and names or numbers only"
        if name in entries:
            return f"links {name!r}, which also has its own entry; keep one of them"
        if name in taken:
            return f"links {name!r}, which an earlier group links too; put it in one group"
    n = len(group.rows)
    if not LIST_SIZE[0] <= n <= LIST_SIZE[1]:
        return f"lists {n} rows; write {LIST_SIZE[0]} to {LIST_SIZE[1]}"
    if len(set(group.rows)) != n:
        return "repeats a row; list distinct rows"
    for i, name in enumerate(group.attrs):
        attr = owner.attribute(name)
        column = [r[i] for r in group.rows]
        if attr.type in ("int", "float", "money"):
            # a cell is a number, or a range the row's number is drawn from ({min: 9, max: 14})
            ends = [e for v in column for e in ((v.min, v.max) if isinstance(v, VocabEntry) else (v,))]
            bad = [v for v in ends if not isinstance(v, (int, float)) or isinstance(v, bool)]
            if bad or (attr.type == "int" and any(isinstance(v, float) and not v.is_integer() for v in ends)):
                return (
                    f"column {name!r} is a {attr.type} attribute but lists {(bad or ends)[0]!r}; list numbers"
                )
            lo, hi = bounds.get((owner.name, name), (None, None))
            outside = [v for v in ends if (lo is not None and v < lo) or (hi is not None and v > hi)]
            if outside:
                return f"column {name!r} lists {outside[0]} outside the domain's range rule [{lo}, {hi}]"
        elif any(isinstance(v, VocabEntry) for v in column):
            return f"column {name!r} is a {attr.type} attribute; only a number's cell may be a range"
        elif attr.type != "enum" and any(str(v).strip().casefold() in _NO_VALUE for v in column):
            said = next(v for v in column if str(v).strip().casefold() in _NO_VALUE)
            return (
                f"column {name!r} lists {said!r}, which a record would show as that text; name what the "
                "thing has instead (a light's mount is 'Bowens'), or leave the row out"
            )
        elif attr.type == "enum":
            bad = [v for v in column if v not in attr.enum]
            if bad:
                return f"column {name!r} lists {bad[0]!r}, not one of its values {list(attr.enum)}"
        else:
            bad = [v for v in column if not isinstance(v, str) or not v.strip()]
            if bad:
                return f"column {name!r} lists {bad[0]!r}; quote every value as a non-empty string"
            words = {w for v in column for w in re.findall(r"[a-z]+", v.lower())}
            if words & PLACEHOLDER_WORDS:
                return f"column {name!r} uses placeholder words {sorted(words & PLACEHOLDER_WORDS)}"
    return None


def _group_problems(
    vocab: DomainVocab, entity_name: str, owner: Any, bounds: dict[tuple[str, str], Any]
) -> list[tuple[LinkedGroup, str | None]]:
    taken: set[str] = set()
    out: list[tuple[LinkedGroup, str | None]] = []
    for group in vocab.linked.get(entity_name, ()):
        why = group_problem(group, owner, vocab.values.get(entity_name, {}), bounds, taken)
        taken |= set(group.attrs) if why is None else set()
        out.append((group, why))
    return out


def vocab_problems(path: Path, knowledge: list[DomainKnowledge] | None = None) -> list[str]:
    """Every problem of one vocabulary file, checked against its knowledge file (same stem)."""
    where = path.name
    entries, problems = read_file(path)
    if knowledge is None:
        kpath = _knowledge_dir() / path.name
        if not kpath.exists():
            return [*problems, f"{where}: no knowledge file {kpath.name} beside it; name the file after one"]
        knowledge = load_file(kpath)
    by_id = {k.id: k for k in knowledge}
    order = [k.id for k in knowledge]
    ids = [v.id for v in entries]
    for did in ids:
        if did not in by_id:
            problems.append(f"{where}: domain {did} is not in knowledge/{where}; use one of its ids {order}")
    missing = [i for i in order if i not in ids]
    if missing:
        problems.append(f"{where}: domains {missing} of knowledge/{where} have no item; add one per domain")
    known = [i for i in ids if i in by_id]
    if known != [i for i in order if i in known]:
        problems.append(f"{where}: domains are listed as {known}; list them in the knowledge file's order")
    for vocab in entries:
        kb = by_id.get(vocab.id)
        if kb is None:
            continue
        locale_ok = _faker_names(vocab.locale) is not None
        if not locale_ok:
            problems.append(
                f"{where}: domain {vocab.id}: locale {vocab.locale!r} is not a Faker locale; write e.g. en_US, de_DE, ja_JP"
            )
        bounds = _ranges(kb)
        for entity_name in vocab.linked:
            entity = kb.entity(entity_name)
            if entity is None:
                if entity_name not in vocab.values:
                    names = [e.name for e in kb.entities]
                    problems.append(
                        f"{where}: domain {vocab.id}: entity {entity_name!r} is not in the domain; use one of {names}"
                    )
                continue
            for group, why in _group_problems(vocab, entity_name, entity, bounds):
                if why:
                    problems.append(
                        f"{where}: domain {vocab.id}: {entity_name}.linked {list(group.attrs)} {why}"
                    )
        for entity_name, attrs in vocab.values.items():
            entity = kb.entity(entity_name)
            if entity is None:
                names = [e.name for e in kb.entities]
                problems.append(
                    f"{where}: domain {vocab.id}: entity {entity_name!r} is not in the domain; use one of {names}"
                )
                continue
            for attr_name, entry in attrs.items():
                attr = vocab_attribute(entity, attr_name)
                if attr is None:
                    names = [a.name for a in entity.attributes]
                    problems.append(
                        f"{where}: domain {vocab.id}: {entity_name}.{attr_name} is not an attribute; use one of {names}"
                    )
                    continue
                why = _entry_problem(
                    entry, attr, entity, vocab.locale if locale_ok else "en_US",
                    bounds.get((entity_name, attr_name)),
                )  # fmt: skip
                if why:
                    problems.append(f"{where}: domain {vocab.id}: {entity_name}.{attr_name} {why}")
    return problems


# People's names and addresses: the engine's Faker values by locale, no vocabulary needed.
ENGINE_NAMED = re.compile(
    r"^(full_?name|first_?name|last_?name|display_?name|handle|user_?name|address|street|city|postcode"
    r"|zip|country|state)$"
)


def coverage_gaps(path: Path) -> list[str]:
    """Str and text attributes (not keys, not engine-filled) that a file gives no values for."""
    kpath = _knowledge_dir() / path.name
    if not kpath.exists():
        return []
    entries, _ = read_file(path)
    by_id = {v.id: v for v in entries}
    gaps = []
    for kb in load_file(kpath):
        vocab = by_id.get(kb.id)
        for e in kb.entities:
            for a in e.attributes:
                if a.name == e.key or a.type not in ("str", "text") or ENGINE_FILLED.search(a.name):
                    continue
                if ENGINE_NAMED.search(a.name) or PLACE_FIELD.match(a.name):
                    continue
                if vocab is None or (
                    vocab.entry(e.name, a.name) is None and vocab.group(e.name, a.name) is None
                ):
                    gaps.append(f"{path.name}: domain {kb.id}: {e.name}.{a.name} has no vocabulary")
    return gaps


def vocab_attribute(entity: Any, name: str) -> Attribute | None:
    """The attribute of a knowledge-base entity a vocabulary entry is for. A remark the entity does
    not list (a `note`, a `comment`, a `rejection_reason`) may have an entry too: seeds add such
    fields beside the knowledge base's own, and their sentences are the domain's to write."""
    attr = entity.attribute(name)
    if attr is None and free_text("str", name) and not PLACE_FIELD.match(name):
        return Attribute(name=name, type="text", nullable=True)
    return attr


@cache
def _domain_files() -> dict[int, str]:
    """Which knowledge file (stem) describes each domain id, read from its `- id:` lines (no YAML parse)."""
    out: dict[int, str] = {}
    for path in sorted(_knowledge_dir().glob("*.yaml")):
        for match in re.finditer(r"^- id: (\d+)", path.read_text(encoding="utf-8"), re.MULTILINE):
            out.setdefault(int(match.group(1)), path.stem)
    return out


@cache
def _file_vocab(stem: str) -> dict[int, DomainVocab]:
    """The usable entries of one vocabulary file (none when it is absent). An entry with a problem is
    left out (the engine's own values take its place); `python -m agentomnia.taxonomy.vocab` says why.
    Faker provider names are checked where they are used, not here (introspecting Faker is slow)."""
    path = data_dir() / f"{stem}.yaml"
    if not path.exists():
        return {}
    from agentomnia.taxonomy.filecache import cached

    knowledge = load_knowledge()
    out: dict[int, DomainVocab] = {}
    # parsed once per file content and kept in the home: every process that builds or describes a world
    # reads these (a builder, a task worker, the run itself), and the YAML alone took 1.7 s for 15 files
    entries, _ = cached(f"vocab-{stem}", [path, Path(__file__)], lambda: read_file(path))
    for vocab in entries:
        kb = knowledge.get(vocab.id)
        if kb is None or vocab.id in out:
            continue
        bounds = _ranges(kb)
        kept: dict[str, dict[str, VocabEntry]] = {}
        for entity_name, attrs in vocab.values.items():
            entity = kb.entity(entity_name)
            if entity is None:
                continue
            for attr_name, entry in attrs.items():
                attr = vocab_attribute(entity, attr_name)
                if attr is None or (PLACE_FIELD.match(attr_name) and entry.kind == "list"):
                    continue  # addresses are the engine's (Faker, by locale): a list of sentences is not one
                if _entry_problem(entry, attr, entity, None, bounds.get((entity_name, attr_name))) is None:
                    kept.setdefault(entity_name, {})[attr_name] = entry
        linked: dict[str, tuple[LinkedGroup, ...]] = {}
        for entity_name in vocab.linked:
            entity = kb.entity(entity_name)
            if entity is not None:
                good = tuple(
                    g for g, why in _group_problems(vocab, entity_name, entity, bounds) if why is None
                )
                if good:
                    linked[entity_name] = good
        out[vocab.id] = DomainVocab(id=vocab.id, locale=vocab.locale, values=kept, linked=linked)
    return out


def load_vocab() -> dict[int, DomainVocab]:
    """Every shipped vocabulary keyed by domain id (files absent are no error)."""
    out: dict[int, DomainVocab] = {}
    for stem in sorted(set(_domain_files().values())):
        for did, vocab in _file_vocab(stem).items():
            out.setdefault(did, vocab)
    return out


def vocab_for(domain_id: int) -> DomainVocab | None:
    """The vocabulary of one domain: only the file beside the domain's knowledge file is read."""
    stem = _domain_files().get(domain_id)
    return _file_vocab(stem).get(domain_id) if stem is not None else None


# the attributes whose list another domain may lend: what a record is called, never a sentence or a
# number (a name list of `project` reads right in any domain that has projects; a note may not)
NAME_ATTRS = ("name", "title", "display_name", "label")


# a hole of a vocabulary sentence ("{skill} scored {score} out of 5"), filled from its record's fields
HOLE = re.compile(r"\{[a-z_]+\}")


def _name_lists() -> dict[str, tuple[tuple[int, tuple[str, ...]], ...]]:
    """Lists of words, by `entity.attr` (what records are called) and by `.attr` (what a field holds
    in any entity: a `channel`, a `vaccine`, a car's `make`), each with the domain that gives it."""
    out: dict[str, list[tuple[int, tuple[str, ...]]]] = {}

    def add(key: str, did: int, values: Any) -> None:
        # a sentence with holes ("{skill} scored {score} out of 5") is its own records' to fill: never lent
        words = tuple(
            dict.fromkeys(str(v) for v in values if isinstance(v, str) and v.strip() and not HOLE.search(v))
        )
        if words:
            out.setdefault(key, []).append((did, words))

    for did, vocab in sorted(load_vocab().items()):
        for entity, attrs in vocab.values.items():
            for attr, entry in attrs.items():
                if entry.kind != "list" or free_text("str", attr):
                    continue
                if attr in NAME_ATTRS:
                    add(f"{entity}.{attr}", did, entry.values)
                else:
                    add(f".{attr}", did, entry.values)
        for entity, groups in vocab.linked.items():
            for group in groups:
                for i, attr in enumerate(group.attrs):
                    if attr in NAME_ATTRS:  # what records are called, lent as a plain list's are
                        add(f"{entity}.{attr}", did, (row[i] for row in group.rows))
                    elif not free_text("str", attr):
                        add(f".{attr}", did, (row[i] for row in group.rows))
    return {k: tuple(v) for k, v in out.items()}


@cache
def name_lists() -> dict[str, tuple[tuple[int, tuple[str, ...]], ...]]:
    """Every vocabulary's word lists (`_name_lists`): read from the parse cache (loading every
    vocabulary takes about a second)."""
    from agentomnia.taxonomy.filecache import cached

    paths = sorted(data_dir().glob("*.yaml"))
    return cached("vocab-names", [*paths, Path(__file__)], _name_lists)


# field names whose values differ from domain to domain (a Slack `channel`, a contact `channel`, a CAN
# bus `channel`): lent only between related domains
_DOMAIN_BOUND = frozenset({
    "channel", "section", "type", "kind", "category", "status", "level", "group", "class", "label", "tag",
    "tags", "source", "mode", "format", "style", "topic", "subject", "subjects", "role", "stage", "state",
    "size", "unit", "area", "line", "item", "items", "name", "title", "code", "field", "attribute", "value",
})  # fmt: skip


# words of domain names that relate nothing ("Food Service" and "Customer Service")
_GENERIC = frozenset({
    "service", "services", "management", "operations", "operation", "specialist", "manager", "analysis",
    "engineer", "assistant", "tracking", "handling", "planning", "industry", "sales", "support", "officer",
    "analyst", "coordinator", "consultant", "technician", "administration", "review", "processing",
})  # fmt: skip


def _nearest(
    lists: tuple[tuple[int, tuple[str, ...]], ...], domain_id: int | None, *, anywhere: bool
) -> tuple[str, ...]:
    """The list of a related domain (the same L1, or a word of their L1 and L2 names in common),
    the nearest by id; with `anywhere`, else the list of the nearest domain of any kind."""
    from agentomnia.taxonomy.domains import taxonomy_index

    tree = taxonomy_index()
    home = tree.by_id(domain_id) if domain_id is not None and domain_id in tree else None

    def content(d: Any) -> set[str]:
        return {w for w in re.findall(r"[a-z]+", f"{d.l1} {d.l2}".lower()) if len(w) > 3} - _GENERIC

    def related(did: int) -> bool:
        if home is None or did not in tree:
            return False
        other = tree.by_id(did)
        return other.l1 == home.l1 or bool(content(other) & content(home))

    near = [item for item in lists if related(item[0])] or (list(lists) if anywhere else [])
    if not near:
        return ()
    return min(near, key=lambda item: abs(item[0] - (domain_id or 0)))[1]


@cache
def borrowed_names(entity: str, attr: str, domain_id: int | None) -> VocabEntry | None:
    """What a related domain's vocabulary calls records of an entity so named, for an entity the
    domain's own vocabulary does not cover (a seed's `project`). None when no related vocabulary
    names such records (the engine's own names take over: a kitchen's `item` is never a game's)."""
    lists = name_lists().get(f"{entity}.{attr}") if attr in NAME_ATTRS else None
    names = _nearest(lists, domain_id, anywhere=False) if lists else ()
    return VocabEntry(kind="list", values=names) if names else None


@cache
def borrowed_values(attr: str, domain_id: int | None) -> tuple[str, ...]:
    """What a field so named holds in a related domain's vocabulary, whatever the entity (a seed's
    nested `vaccine` or `analyte`), or in any domain's for a name that means one thing everywhere (a
    car's `make`); for a string the engine has no kind for; () when none does."""
    lists = name_lists().get(f".{attr}")
    return _nearest(lists, domain_id, anywhere=attr not in _DOMAIN_BOUND) if lists else ()


def _main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted(data_dir().glob("*.yaml"))
    status = 0
    for path in paths:
        problems = vocab_problems(path)
        gaps = coverage_gaps(path)
        entries, _ = read_file(path)
        attrs = sum(len(a) for v in entries for a in v.values.values())
        groups = sum(len(g) for v in entries for g in v.linked.values())
        print(
            f"{path.name}: {len(entries)} domains, {attrs} attributes, {groups} linked groups, "
            f"{len(problems)} problems, {len(gaps)} gaps"
        )
        for p in problems:
            print(f"  PROBLEM {p}", file=sys.stderr)
        for g in gaps:
            print(f"  gap {g}")
        status = status or (1 if problems else 0)
    return status


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
