"""How real a round's worlds, tools and requests read: the figures an agent team checks by reading.

Four families of figures, each computed from what a round produced, so a regression shows:

- **consistency** (`consistency_metrics`): the share of records whose related numbers disagree, and
  of references that point at another owner's record;
- **values** (`value_metrics`): over the free-text values of every environment's initial state, the
  share that are placeholders — a value that names its own entity or attribute together with a number
  ("Quartz Provider 1", "Atlas Address 2"), that ends in filler ("... alpha falcon follow-up.") or that
  is the generator's last resort, a place word and a theme ("Ironwood Launch") — and
  the number of distinct words across them all;
- **tools** (`tool_metrics`): per environment, the share of tools that act on two or more entities or
  enforce a rule across entities (median and minimum over environments);
- **requests** (`agentomnia.tasks.wording.query_metrics`): chained "of the", stacked possessives, sentence length and the
  share of distinct word 3-grams across the round's task queries.

`realism_figures` puts them together for a round's folders; the environment and task assets carry them
as metadata, and the round's HTML report shows them beside the targets in `TARGETS`.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from agentomnia.envs.spec import EntitySpec, EnvSpec

# What a mature dataset reads like (the realistic-worlds targets): each figure with its direction.
TARGETS: dict[str, tuple[str, float]] = {
    "placeholder_share": ("<", 0.02),
    # the run's breadth of language: this round's free text and that of the rounds before it (a PRD
    # round of two dozen environments adds to the run's vocabulary, it is not a run of its own)
    "distinct_words_so_far": (">", 5000),
    "numbers_disagree_share": ("<", 0.002),
    "other_owner_share": ("<", 0.1),
    "dated_before_owner_share": ("<", 0.02),
    "paid_over_total_share": ("<", 0.05),
    "happened_after_clock_share": ("<", 0.02),
    "time_off_its_day_share": ("<", 0.02),
    "kept_at_night_share": ("<", 0.02),
    "past_its_day_share": ("<", 0.02),
    "chained_of_share": ("<", 0.02),
    "stacked_possessive_share": ("<", 0.05),
    "mean_sentence_words": ("<", 22.0),
    "distinct_trigram_share": (">", 0.60),
    # a third, as the figure is reported (to four places): 18 of 54 tools meets it
    "compound_tool_share_min": (">=", round(1 / 3, 4)),
}

# Filler: words that say nothing (a value ending in one), and the word list older generators strung
# together ("alpha falcon follow-up"): a value ending in two of those reads as filler, one alone does
# not (a street called "Harbor Summit" is a real name).
FILLER = frozenset({"lorem", "ipsum", "dolor", "placeholder", "foo", "bar", "baz", "tbd", "todo", "xxx"})
FILLER_PAIR_WORDS = frozenset({
    "alpha", "harbor", "summit", "cedar", "orbit", "maple", "vertex", "river", "quartz", "atlas", "nimbus",
    "coral", "falcon", "lumen", "pioneer", "beacon", "meridian", "canyon", "willow", "ember", "follow-up",
})  # fmt: skip
_TOKEN = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*", re.UNICODE)  # words and numbers, "3PL" one token
_LABEL_WORDS = 4  # at most this many words: a name or a label, not a sentence
_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*", re.UNICODE)
_ID_SHAPE = re.compile(r"^[A-Z0-9]{2,5}-\d+$")
_NOT_FREE_TEXT = re.compile(
    r"(^|_)(id|email|e_mail|url|uri|link|phone|fax|code|sku|number|iban|currency|file_name|filename|path)$"
)
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


def is_free_text_field(name: str) -> bool:
    """Whether an attribute so named holds free text, not an id, e-mail, URL, phone, code or number."""
    return not _NOT_FREE_TEXT.search(name)


def _words(name: str) -> set[str]:
    return {w for w in re.split(r"[\s_\-]+", name.lower()) if len(w) > 2}


def free_text_values(spec: EnvSpec, state: Mapping[str, Any]) -> list[tuple[EntitySpec, str, str]]:
    """(entity, attribute, value) for every free-text value of a state: string attributes that are
    not keys, references, enums, dates, identifiers, e-mails, URLs or codes, and the strings inside
    list and object attributes (a venue's `name` in an event's `venue`, named `venue.name`)."""
    out: list[tuple[EntitySpec, str, str]] = []

    def text(value: Any) -> bool:
        return (
            isinstance(value, str)
            and bool(value.strip())
            and not _ID_SHAPE.match(value)
            and not _ISO_DATE.match(value)
            and "@" not in value
            and not value.startswith(("http://", "https://"))
        )

    def leaves(name: str, value: Any) -> Iterable[tuple[str, str]]:
        if isinstance(value, Mapping):
            for k, v in value.items():
                if isinstance(k, str) and not _NOT_FREE_TEXT.search(k):
                    yield from leaves(f"{name}.{k}", v)
        elif isinstance(value, list):
            for v in value:
                yield from leaves(name, v)
        elif text(value):
            yield name, value

    for entity in spec.entities:
        names = [
            a.name
            for a in entity.attributes
            if a.type in ("str", "text", "list", "object")
            and a.name != entity.key
            and is_free_text_field(a.name)
        ]
        if not names:
            continue
        table = state.get(entity.table) or {}
        for record in table.values() if isinstance(table, Mapping) else ():
            if not isinstance(record, Mapping):
                continue
            for name in names:
                out.extend((entity, path, value) for path, value in leaves(name, record.get(name)))
    return out


@cache
def _stock_words() -> tuple[frozenset[str], frozenset[str]]:
    from agentomnia.envs.semantic import QUALIFIERS, THEMES

    return frozenset(w.lower() for w in QUALIFIERS), frozenset(w.lower() for w in THEMES)


def is_stock_phrase(words: Sequence[str]) -> bool:
    """Is a value the generator's own last resort, a place word and a theme ("Ironwood Launch",
    "Meadowbrook Compliance Hold"), which says nothing about its record?"""
    qualifiers, themes = _stock_words()
    return len(words) >= 2 and words[0] in qualifiers and words[1] in themes


# Things people number in real life, where "Unit 33" or "Seat 4" is the name itself, not a stand-in.
NUMBERED = frozenset((
    "unit", "suite", "apartment", "apt", "room", "floor", "level", "building", "block", "tower", "wing",
    "ward", "bed", "seat", "row", "sec", "section", "gate", "bay", "dock", "berth", "slip", "pier",
    "platform", "track", "lane", "aisle", "shelf", "bin", "locker", "zone", "stand", "booth", "cabin",
    "court", "table", "stage", "phase", "day", "week", "season", "episode", "chapter", "part", "volume",
    "lot", "plot", "hangar", "pump", "terminal", "studio", "hall", "round", "heat", "lap", "grade", "year",
    "version",
))  # fmt: skip


def is_placeholder(value: str, entity: str, attribute: str) -> bool:
    """Does `value` name its own entity or attribute together with a number, or end in filler?"""
    words = [w.lower() for w in _WORD.findall(value)]
    if words and words[-1] in FILLER:
        return True
    if is_stock_phrase(words):
        return True
    if len(words) >= 2 and {words[-1], words[-2]} <= FILLER_PAIR_WORDS:
        return True
    # a number of its own ("FY2024" and "3PL" are words), and no year ("H2 2026 Review" names a half)
    tokens = [t.lower() for t in _TOKEN.findall(value) if not re.fullmatch(r"(19|20)\d\d", t)]
    if not any(t.isdigit() for t in tokens):
        return False
    own = (_words(entity) | _words(attribute)) - NUMBERED  # "Unit 33" and "Day 2" are real names
    if len(words) <= _LABEL_WORDS:  # "Quartz Provider 1", "Shipment 14": a label made of its own name
        return any(w in own or w.rstrip("s") in own for w in words)
    # a sentence that mentions its kind and a number ("Phase 3 Study of a Once-Monthly Migraine
    # Preventive") is not one; a numbered own name inside it ("see Provider 2 notes") still is
    return any(
        (a in own or a.rstrip("s") in own) and b.isdigit() for a, b in zip(tokens, tokens[1:], strict=False)
    )


def value_metrics(worlds: Iterable[tuple[EnvSpec, Mapping[str, Any]]]) -> dict[str, Any]:
    """Placeholder share and distinct words over the free-text values of the given (spec, s0) pairs."""
    total = placeholders = 0
    vocabulary: set[str] = set()
    examples: list[str] = []
    for spec, state in worlds:
        for entity, attribute, value in free_text_values(spec, state):
            total += 1
            vocabulary.update(w.lower() for w in _WORD.findall(value))
            if is_placeholder(value, entity.name, attribute):
                placeholders += 1
                if len(examples) < 5:
                    examples.append(f"{entity.name}.{attribute} = {value!r}")
    return {
        "free_text_values": total,
        "placeholder_share": _share(placeholders, total),
        "distinct_words": len(vocabulary),
        "placeholder_examples": examples,
    }


def tool_metrics(specs: Sequence[EnvSpec]) -> dict[str, Any]:
    """Share of each environment's tools that act on two or more entities or enforce a rule across
    entities (`agentomnia.envs.spec.is_compound`): median, minimum, and how many environments
    reach a third. Seed-led environments (a mirrored API) are counted apart: their tools are the seed's."""
    from agentomnia.envs.spec import is_compound

    shares: list[float] = []
    mirrored: list[float] = []
    for spec in specs:
        if not spec.tools:
            continue
        share = sum(is_compound(spec, t) for t in spec.tools) / len(spec.tools)
        if all(t.origin == "seed" or t.kind == "read" for t in spec.tools) and any(
            t.origin == "seed" for t in spec.tools
        ):
            mirrored.append(share)
        else:
            shares.append(share)
    return {
        "environments": len(shares),
        "mirrored_environments": len(mirrored),
        # a mirrored API's tools act across entities only where its own structure says so
        "mirrored_compound_tool_share_median": round(statistics.median(mirrored), 4) if mirrored else 0.0,
        "mirrored_with_cross_entity_behaviour": sum(s > 0 for s in mirrored),
        "compound_tool_share_median": round(statistics.median(shares), 4) if shares else 0.0,
        "compound_tool_share_min": round(min(shares), 4) if shares else 0.0,
        "environments_with_a_third_compound": sum(s >= 1 / 3 for s in shares),
    }


def consistency_metrics(worlds: Iterable[tuple[EnvSpec, Mapping[str, Any]]]) -> dict[str, Any]:
    """Whether a world's facts agree with each other: the share of records whose related numbers
    disagree (a min above its max, a moving time above the elapsed time, a total that is not its
    lines' sum; `state.numbers_out_of_order`), and the share of references that point at another
    owner's record where the owner has one of its own (a user's bill paid from another user's account;
    `state.owned_references`), and the share of references from a dated record to one that came to
    be after it (a ticket message sent before its ticket was opened; `state.owner_dates`), and of
    records paid, refunded or allocated against for more than their total (`state.paid_against`),
    and of dates of what has happened (a message sent, an invoice paid) that lie after the clock, in
    records whose status does not say they are still to come (`state.not_yet`), and of records whose
    times of day fall off the day they are about (a shoot's call time the day after its shoot date;
    `semantic.its_day`), and of the times of what people do in their waking day (an interview, a
    lesson, a booked room) that fall at night (`semantic.day_times`), and of such records over within
    hours whose end is not within 12 hours after their start (`semantic.start_end_pairs`)."""
    from agentomnia.envs.semantic import (
        NOW,
        at_night,
        day_times,
        has_happened,
        its_day,
        moment_of,
        movable_dates,
        on_its_day,
        over_within_hours,
        start_end_pairs,
    )
    from agentomnia.envs.state import (
        not_yet,
        numbers_out_of_order,
        owned_references,
        owner_dates,
        owner_disagrees,
        paid_against,
        paid_in_all,
    )

    records = disordered = checked = elsewhere = dated = early = owing = overpaid = happened = late = 0
    daytimed = off_day = kept = at_nights = paired = past_day = 0
    past_examples: list[str] = []
    night_examples: list[str] = []
    off_examples: list[str] = []
    examples: list[str] = []
    early_examples: list[str] = []
    paid_examples: list[str] = []
    late_examples: list[str] = []
    for spec, state in worlds:
        for e in spec.entities:
            done = [n for n in movable_dates(e) if has_happened(n)]
            by_day = day_times(e)
            pairs = start_end_pairs(e)
            for key, record in (state.get(e.table) or {}).items():
                records += 1
                for start, end in pairs:
                    over = over_within_hours(record, start, end)
                    paired += over is not None
                    if over is False:
                        past_day += 1
                        if len(past_examples) < 5:
                            past_examples.append(
                                f"{e.table}[{key}] {start} {record[start]}, {end} {record[end]}"
                            )
                for name in by_day:
                    moment = moment_of(record.get(name)) if "T" in str(record.get(name)) else None
                    kept += moment is not None
                    if moment is not None and at_night(moment):
                        at_nights += 1
                        if len(night_examples) < 5:
                            night_examples.append(f"{e.table}[{key}].{name} {record[name]}")
                for name in done if not not_yet(e, record) else ():
                    moment = moment_of(record.get(name))
                    happened += moment is not None
                    if moment is not None and moment > NOW:
                        late += 1
                        if len(late_examples) < 5:
                            late_examples.append(f"{e.table}[{key}].{name} {record[name]}")
                if (found := its_day(e, record)) is not None:
                    daytimed += 1
                    if on_its_day(e, record, record):
                        off_day += 1
                        if len(off_examples) < 5:
                            name, _, times = found
                            off_examples.append(
                                f"{e.table}[{key}].{name} {record[name]}: "
                                + ", ".join(f"{n} {record[n]}" for n, _ in times)
                            )
                if numbers_out_of_order(record):
                    disordered += 1
                    if len(examples) < 5:
                        examples.append(f"{e.table}[{key}]")
        for record, a, owner, by_owner in owned_references(spec, state):
            differs = owner_disagrees(state, spec, record, a, owner)
            if differs is not None and by_owner.get(str(record.get(owner.name))):
                checked += 1
                elsewhere += differs
        for entity, dated_record, field, owner_entity, owned_by, made, before in owner_dates(spec, state):
            dated += 1
            early += before
            if before and len(early_examples) < 5:
                early_examples.append(
                    f"{entity.table}.{field} {dated_record[field]} < {owner_entity.table}.{made} {owned_by[made]}"
                )
        for entity, paid, owner_entity, owed, key, parts, total in paid_against(spec, state):
            owing += 1
            held = paid_in_all(parts, paid)
            if held > total * 1.0001:  # a cent's rounding is no overpayment
                overpaid += 1
                if len(paid_examples) < 5:
                    paid_examples.append(
                        f"{len(parts)} {entity.table}.{paid.name} add to {held:.2f} > "
                        f"{owner_entity.table}[{key}].{owed} {total}"
                    )
    return {
        "records": records,
        "numbers_disagree_share": _share(disordered, records),
        "numbers_disagree_examples": examples,
        "owned_references": checked,
        "other_owner_share": _share(elsewhere, checked),
        "dated_references": dated,
        "dated_before_owner_share": _share(early, dated),
        "dated_before_owner_examples": early_examples,
        "paid_against": owing,
        "paid_over_total_share": _share(overpaid, owing),
        "paid_over_total_examples": paid_examples,
        "happened_dates": happened,
        "happened_after_clock_share": _share(late, happened),
        "happened_after_clock_examples": late_examples,
        "timed_days": daytimed,
        "time_off_its_day_share": _share(off_day, daytimed),
        "time_off_its_day_examples": off_examples,
        "kept_by_day_times": kept,
        "kept_at_night_share": _share(at_nights, kept),
        "kept_at_night_examples": night_examples,
        "start_end_pairs": paired,
        "past_its_day_share": _share(past_day, paired),
        "past_its_day_examples": past_examples,
    }


def _share(part: int, whole: int) -> float:
    """`part` of `whole` to four places; 0 of nothing."""
    return round(part / whole, 4) if whole else 0.0


def read_bundles(folders: Iterable[Path]) -> list[tuple[EnvSpec, dict[str, Any]]]:
    """(spec, s0) of each environment bundle folder (spec.json and s0.json)."""
    out = []
    for folder in folders:
        spec_path, s0_path = folder / "spec.json", folder / "s0.json"
        if spec_path.exists() and s0_path.exists():
            spec = EnvSpec.model_validate_json(spec_path.read_text(encoding="utf-8"))
            out.append((spec, json.loads(s0_path.read_text(encoding="utf-8"))))
    return out


def realism_figures(
    worlds: Sequence[tuple[EnvSpec, Mapping[str, Any]]],
    queries: Sequence[str],
    earlier: Sequence[tuple[EnvSpec, Mapping[str, Any]]] = (),
) -> dict[str, Any]:
    """Every figure of a round, flat, with `meets` saying which targets hold. `earlier` holds the
    environments of the run's rounds before this one, which only `distinct_words_so_far` reads."""
    from agentomnia.tasks.wording import query_metrics

    figures: dict[str, Any] = {
        **value_metrics(worlds),
        **consistency_metrics(worlds),
        **tool_metrics([spec for spec, _ in worlds]),
        **query_metrics(list(queries)),
    }
    seen = {spec.id for spec, _ in worlds}
    before = [(spec, state) for spec, state in earlier if spec.id not in seen]
    figures["earlier_environments"] = len({spec.id for spec, _ in before})
    figures["distinct_words_so_far"] = (
        value_metrics([*worlds, *before])["distinct_words"] if before else figures["distinct_words"]
    )
    figures["meets"] = {
        name: _holds(figures[name], op, bound) for name, (op, bound) in TARGETS.items() if name in figures
    }
    return figures


def _holds(value: Any, op: str, bound: float) -> bool:
    if not isinstance(value, (int, float)):
        return False
    return {"<": value < bound, ">": value > bound, ">=": value >= bound}[op]
