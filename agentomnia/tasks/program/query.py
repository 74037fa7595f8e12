"""Public queries for program tasks: the plan's objective and constraints in plain words, checked for leaks.

The query keeps what the program decides (which records, by what rule, what to do to each, what to
do when none qualifies, what to report) and leaves out how: no tool names, no parameter keys, no
call sequence, no record ids. Attribute names are spoken as words ("declared value", not
`declared_value`). The shared leakage checker has the final say.
"""

from __future__ import annotations

import random

from agentomnia.dates import spoken_date
from agentomnia.envs.spec import EnvSpec
from agentomnia.envs.values import written_figure
from agentomnia.records import content_hash
from agentomnia.tasks.dag.describe import (
    DAY_NAMES,
    PREPOSITIONS,
    compared_label,
    date_verb,
    done_when,
    is_state_word,
    kind_of,
    labelled,
    measured_label,
    plural,
    plural_word,
    singular,
    words,
)
from agentomnia.tasks.leakage import leakage_problems
from agentomnia.tasks.program.plan import Predicate, ProgramPlan
from agentomnia.tasks.wording import opening

_OP_WORDS = {">": "above", ">=": "at least", "<": "below", "<=": "at most", "==": "equal to"}


def spoken(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return DAY_NAMES.get(str(value).lower()) or words(str(value))


# a comparison with a count: "with at least 2 reschedules", "with fewer than 3 guests"
_COUNT_WORDS = {">": "more than", ">=": "at least", "<": "fewer than", "<=": "at most", "==": "exactly"}


def _counted_label(pred: Predicate, kind: str | None) -> str | None:
    """The field's words when it is named by what it counts (`reschedules`, `guests`) and the rule
    compares a whole number with it, so the rule says "with at least 2 reschedules"; else None."""
    if pred.kind == "date" or kind != "int" or isinstance(pred.value, bool):
        return None
    if not isinstance(pred.value, int) and not (isinstance(pred.value, float) and pred.value.is_integer()):
        return None
    label, shown = labelled(pred.attr, written_figure(pred.value, pred.attr), kind)
    first, *rest = label.split()
    if shown != written_figure(pred.value, pred.attr) or not plural_word(first):
        return None  # a measure with its unit ("15 minutes"), or no counted thing
    if not all(is_state_word(w) for w in rest):  # "households affected" counts households
        return None
    return label


def _rule(pred: Predicate, subject: str, kind: str | None = None) -> str:
    """Which records a rule picks, said after their noun: "whose total is at least 42,000", and for a
    date a verb names ("issued on"), "issued before November 13, 2025"."""
    if pred.kind == "date":
        when = "before" if pred.op == "<" else "on or after"
        day = spoken_date(str(pred.value)) or pred.value  # "before October 27, 2025"
        verb = date_verb(pred.attr)
        if not subject and verb:
            return f"{verb} {when} {day}"
        return f"whose {subject}{words(pred.attr)} is {when} {day}"
    if pred.kind in ("enum", "bool"):
        return f"whose {subject}{words(pred.attr)} is {spoken(pred.value)}"
    counted_ = _counted_label(pred, kind)
    if counted_ is not None:  # "with at least 2 reschedules", "whose sample has more than 3 libraries"
        first, _, rest = counted_.partition(" ")
        one = f"{singular(first)} {rest}".strip()  # `reschedules` -> `reschedule`
        if (pred.op, pred.value) in ((">", 0), (">=", 1)):
            count = f"at least one {one}"  # never "more than 0 reschedules"
        elif (pred.op, pred.value) in (("<", 1), ("<=", 0), ("==", 0)):
            count = f"no {counted_}"
        else:
            shown = written_figure(pred.value, pred.attr)
            count = f"{_COUNT_WORDS[pred.op]} {shown} {one if shown == '1' else counted_}"
        owner = subject.removesuffix("'s ")  # "whose sample has ...", never "whose sample's has ..."
        return f"whose {owner} has {count}" if subject else f"with {count}"
    # "whose height is above 170 cm", "whose budget is above 500,000"
    label, shown = labelled(pred.attr, written_figure(pred.value, pred.attr), kind)
    return f"whose {subject}{label} is {_OP_WORDS[pred.op]} {shown}"


def _action(plan: ProgramPlan, digest: str = "") -> str:
    """What to do to each selected record; `digest` picks one of its wordings."""
    w = plan.write
    value = spoken(w.value)
    if isinstance(w.value, bool) and w.op != "transition":
        return _flag_action(w.attr, w.value, digest)
    if w.op == "transition":
        return _pick(
            digest, "action", ("move it to {v}", "mark it {v}", "switch it to {v}", "set it to {v}")
        ).format(v=value)
    return _pick(
        digest, "action", ("set its {a} to {v}", "change its {a} to {v}", "make its {a} {v}")
    ).format(a=words(w.attr), v=value)


def _flag_action(attr: str, on: bool, digest: str) -> str:
    """A yes/no field set the way a person says it: "mark it opened", "mark it as not verified", "turn
    its away mode on" (never "set its opened to yes")."""
    name = words(attr).removeprefix("is ")
    if " " not in name and is_state_word(name):
        return _pick(digest, "action", ("mark it {n}", "mark it as {n}")).format(
            n=name if on else f"not {name}"
        )
    if name.partition(" ")[0] in PREPOSITIONS:  # `for_everyone`: "mark it as for everyone"
        return f"mark it as {'' if on else 'not '}{name}"
    head, _, last = name.rpartition(" ")
    if head and is_state_word(last):  # `signature_captured`: "mark its signature as captured"
        return f"mark its {head} as {'' if on else 'not '}{last}"
    return _pick(digest, "action", ("turn its {a} {v}", "switch its {a} {v}")).format(
        a=name, v="on" if on else "off"
    )


def _summed(attr: str, kind: str | None = None) -> str:
    """Their sum, said once: "their total precip in mm", but "their combined total" for a `total`."""
    label = measured_label(attr, kind)
    return f"their combined {label}" if label.startswith("total") else f"their total {label}"


def _already(plan: ProgramPlan) -> str:
    w = plan.write
    return f"{spoken(w.value)}" if w.op == "transition" else "set that way"


def _pick(digest: str, slot: str, options: tuple[str, ...]) -> str:
    """One wording of a sentence, fixed by the plan's content (same plan, same request)."""
    return options[int(content_hash({"plan": digest, "slot": slot}), 16) % len(options)]


def _keys(names: list[str]) -> str:
    quoted = [f'"{n}"' for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def render_query(spec: EnvSpec, plan: ProgramPlan) -> str:
    """The request a user would write for this plan: several wordings per sentence, one picked per
    plan, and the answer fields the rubric checks named plainly (`rubric_for`)."""
    digest = content_hash(plan.model_dump(mode="json"))
    things = plural(plan.entity)
    scope = ""
    for param, value in plan.list_args.items():
        if param == "limit":
            continue
        attr = spec.entity(plan.entity).attribute(
            spec.tool(plan.list_tool).binding.get("filters", {}).get(param, param)
        )
        scope = f" with {words(attr.name if attr else param)} {words(str(value))}"
    pred = plan.predicate
    # the type of the field the rule reads (on the joined parent for a join): an amount named by a
    # participle is said as one ("whose OTB budget's committed amount is above 500,000")
    owner = plan.join.parent if plan.template == "join_write" and plan.join else plan.entity
    kind = kind_of(spec.entity(owner), pred.attr)
    summed = kind_of(spec.entity(plan.entity), plan.total_attr) if plan.total_attr else None
    action = _action(plan, digest)
    top = _pick(digest, "top", ("the {m} {a}", "the {m} {a} of all", "the very {m} {a}")).format(
        m="latest" if pred.kind == "date" else "most" if _counted_label(pred, kind) else "highest",
        a=compared_label(pred.attr, kind),
    )
    done = done_when(pred.attr) if pred.kind == "date" else None
    # the record a fallback picks: "the one with the highest price", "the one submitted most recently"
    one = f"the one {done} most recently" if done else f"the one with {top}"
    if plan.template == "filter_write":
        rule = _rule(pred, "", kind)
        goal = _pick(
            digest,
            "goal",
            (
                "Please go through all {t}{s} and, for every one {r}, {a}.",
                "Every one of our {t}{s} {r} needs the same fix: {a}.",
                "I want all {t}{s} {r} handled; for each of them, {a}.",
                "Can you check our {t}{s}? Wherever {q}, {a}.",
                "Some of our {t}{s} need changing: for each one {r}, {a}.",
                "Go over the {t}{s} for me; every one {r} needs the same change: {a}.",
            ),
        ).format(
            t=things,
            s=scope,
            r=_rule(pred, "", kind),
            q=f"one's {rule[6:]}"
            if rule.startswith("whose ")
            else f"one has {rule[5:]}"
            if rule.startswith("with ")
            else f"one was {rule}",
            a=action,
        )
        skip = _pick(
            digest,
            "skip",
            (
                "Leave any that are already {x} alone.",
                "Ones already {x} can stay as they are.",
                "Don't touch those already {x}.",
            ),
        ).format(x=_already(plan))
        fallback = _pick(
            digest,
            "fallback",
            (
                "If none of them qualifies, do it only for {one} instead and tell me that you had to fall back.",
                "Should nothing qualify, apply it to {one} and let me know you fell back.",
                "If no record fits, fall back to {one}, and say that you did.",
            ),
        ).format(one=one)
        parts = [goal, skip, fallback]
    elif plan.template == "join_write":
        parent = words(plan.join.parent) if plan.join else "related record"
        rule = _rule(pred, parent + "'s ", kind)
        goal = _pick(
            digest,
            "goal",
            (
                "For every {e} {r}, {a}.",
                "Any {e} {r} needs attention: {a}.",
                "Please find each {e} {r} and {a}.",
                "Each {e} {r} should be dealt with: {a}.",
            ),
        ).format(e=words(plan.entity), r=rule, a=action)
        where = _pick(
            digest,
            "where",
            (
                "The deciding detail is on the {p}, not on the {e} itself.",
                "You will have to check each {p}; the {e} alone doesn't say.",
                "Whether it qualifies is recorded on the {p}.",
            ),
        ).format(p=parent, e=words(plan.entity))
        skip = _pick(
            digest,
            "skip",
            (
                "Skip the ones that are already {x}.",
                "Ones already {x} need nothing.",
            ),
        ).format(x=_already(plan))
        none = _pick(
            digest,
            "none",
            (
                "If none qualifies, change nothing and say so.",
                "If there are none, leave everything as it is and tell me.",
            ),
        )
        parts = [goal, where, skip, none]
    else:
        total = measured_label(plan.total_attr or "", summed)
        both = "combined and average" if total.startswith("total") else "total and average"
        look = _pick(
            digest,
            "goal",
            (
                "Look at all {t} {r} and work out their {b} {w}.",
                "I'd like the {b} {w} across all {t} {r}.",
                "Add up the {w} of all {t} {r}, and work out the average too.",
                "Across all the {t} {r}, what are the {b} {w}?",
            ),
        ).format(t=things, r=_rule(pred, "", kind), w=total, b=both)
        act = _pick(
            digest,
            "act",
            (
                "Then take the one with the highest {w} (if two are tied, the one registered first) and {a}.",
                "The one with the highest {w} (on a tie, the one registered first) needs an update: {a}.",
            ),
        ).format(w=compared_label(plan.total_attr or ""), a=action)
        none = _pick(
            digest,
            "none",
            (
                "If there are no such {t}, change nothing and say so.",
                "If no {t} match, leave everything alone and tell me.",
            ),
        ).format(t=things)
        parts = [look, act, none]
    if plan.record_refusals or plan.guard_status:
        parts.append(_pick(digest, "refusal", (
            "If the system will not allow the change for one of them, skip it and tell me why.",
            "Where the system refuses a change, skip that one and note the reason.",
        )))  # fmt: skip
    fields = ["changed", "count"]
    told = [
        f"which {things} you changed",
        _pick(digest, "how", ("how many", "how many that was", "the number changed")),
    ]
    if plan.template == "aggregate_pick":
        fields += ["considered", "total", "average"]
        label = measured_label(plan.total_attr or "", summed)
        told += [
            "how many you looked at",
            f"the {'combined' if label.startswith('total') else 'total'} and the average {label}",
        ]
    elif plan.total_attr:
        fields.append("total")
        told.append(_summed(plan.total_attr, summed))
    fields.append("fallback_used")
    flag = "nothing qualified" if plan.template != "filter_write" else "you had to fall back"
    note = _pick(digest, "flag", (
        f"(true if {flag})",
        f"(set to true when {flag})",
        f"(true when {flag}, otherwise false)",
        f"(a yes/no flag: true if {flag})",
        f"(true only if {flag})",
    ))  # fmt: skip
    listed = ", ".join(told[:-1]) + " and " + told[-1]
    if _pick(digest, "style", ("list", "inline")) == "list":
        report = _pick(digest, "report", (
            "Tell me {w}, as JSON with {k} {n}.",
            "When you're done, I need {w}; put it in JSON as {k} {n}.",
            "Answer with {w}, using the JSON keys {k} {n}.",
            "Report {w} in a JSON object with {k} {n}.",
            "Send back {w} in JSON form: {k} {n}.",
        )).format(w=listed, k=_keys(fields), n=note)  # fmt: skip
    else:
        under = _pick(digest, "under", ("under", "as", "in"))
        slots = [f'{what} {under} "{field}"' for what, field in zip(told, fields, strict=False)]
        if len(fields) - 1 > len(told):  # aggregate_pick: the total and the average get a key each
            shared = " and ".join(f'"{f}"' for f in fields[len(told) - 1 : -1])
            slots[-1] = f"{told[-1]} {under} {shared}"
        report = _pick(digest, "report", (
            "In your JSON reply, give {s}, plus \"fallback_used\" {n}.",
            "Reply in JSON with {s}; add \"fallback_used\" {n}.",
            "I'd like a JSON answer: {s}, and \"fallback_used\" {n}.",
        )).format(s=", ".join(slots), n=note)  # fmt: skip
    voice = opening(random.Random(digest), spec.coordinate.split, spec.coordinate.l2)
    return " ".join([voice, *parts, report])


def query_problems(query: str, spec: EnvSpec) -> list[str]:
    """Leaks in a program task's query (tool names, parameter keys, step lists, record ids)."""
    return leakage_problems(query, spec, forbid_ids=True)
