"""Execution-grounded generation (paper §4.4.1, step 5): a tool group becomes calls, answers and words.

Chains run in order in a live sandbox session. Every argument is taken from the task's initial
state (a record the description points at) or from an earlier call's output (the album's artist id,
the new record's key), never invented; values a write sets are stated in the description. Each
argument's origin is kept as provenance. A call that fails ends the candidate. Reads at the end of a
chain, scattered reads and the virtual nodes over them become answer fields; every answer is read
again on the end state, so an answer that depends on when it was read (before or after a write) is
rejected instead of making the task's grading order-dependent.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import networkx as nx

from agentomnia.dates import date_forms
from agentomnia.envs.calls import _precondition_ok as precondition_ok
from agentomnia.envs.calls import (
    admitted_commands,
    fit_compared_values,
    held_record,
    reference_admits,
    requirement_problem,
)
from agentomnia.envs.naming import article
from agentomnia.envs.semantic import (
    World,
    in_lifecycle_order,
    is_derived,
    is_person,
    linked_options,
    timely_date,
)
from agentomnia.envs.spec import AttributeSpec, EntitySpec, EnvSpec, ToolSpec, compound_of
from agentomnia.envs.state import make_value, world_for
from agentomnia.envs.values import as_declared, conforms, written_figure
from agentomnia.sandbox.session import Session
from agentomnia.tasks.dag.augment import AugmentedDAG, VirtualNode
from agentomnia.tasks.dag.describe import (
    DATED_VERBS,
    between,
    compared_label,
    counted,
    describe_record,
    done_when,
    field_label,
    introduces,
    is_name_field,
    is_plural,
    kind_of,
    labelled,
    lead_word,
    listing,
    measured_label,
    plural,
    predicate,
    said,
    say,
    singled_out,
    stated,
    words,
)
from agentomnia.tasks.dag.graph import carries_value, edge_data
from agentomnia.tasks.dag.phrasing import (
    ask,
    context,
    count_question,
    demonstrative,
    flag_question,
    is_handle,
    key_words,
    possessive,
)
from agentomnia.tasks.dag.sampling import ToolGroup
from agentomnia.tasks.grading import values_match
from agentomnia.tasks.wording import lead_clause

_SCALAR = ("str", "int", "float", "money", "enum", "bool", "date")
_NUMERIC = ("int", "float", "money")


# Who did something, by the deed: `approved_by` is the approver (see `Generator._ref_word`).
_AGENT = {
    "approved": "approver", "reviewed": "reviewer", "created": "creator", "requested": "requester",
    "reported": "reporter", "submitted": "submitter", "owned": "owner", "managed": "manager",
    "signed": "signatory", "authored": "author", "written": "author", "verified": "verifier",
    "decided": "decision maker", "handled": "handler", "prepared": "preparer", "inspected": "inspector",
    "audited": "auditor", "supervised": "supervisor", "led": "lead", "sponsored": "sponsor",
    "referred": "referrer", "issued": "issuer", "performed": "performer", "resolved": "resolver",
    "dispatched": "dispatcher", "checked": "checker", "collected": "collector", "funded": "funder",
    "hosted": "host", "taught": "teacher", "coached": "coach", "examined": "examiner", "trained": "trainer",
    "assessed": "assessor", "booked": "booker", "ordered": "orderer", "recorded": "recorder",
    "uploaded": "uploader", "proposed": "proposer", "nominated": "nominator", "sold": "seller",
    "paid": "payer", "made": "maker", "found": "finder",
}  # fmt: skip
# Deeds with no agent noun a person would say ("the counter of that cash count"): the reference is
# said as who did it, "the employee who counted that cash count" (see `ref_phrase`).
_DEED = re.compile(
    r"(?:[a-z]+_)?(?:[a-z]+ed|set|cited|done|run|taken|sent|held|given|led|written)(?:_(?:up|out|off|in))?_by"
)


# a reference by the record's code ("ro_number", "case_ref"): the request names the record, not its code
_CODE_REF = re.compile(r"_(?:number|no|num|code|ref)$")


def ref_phrase(owner: str, attr: str, kind: str | None) -> str:
    """The record `owner`'s reference `attr` names, said from `owner`: "that invoice's carrier"
    (`carrier_id`), "the new cash count's approver" (`approved_by`), and for a deed with no agent
    noun "the employee who counted the new cash count" (`counted_by` to employees); a reference by
    code is said as its record ("that line's repair order" for `ro_number`)."""
    role = Generator._ref_word(attr)
    if role == attr and _DEED.fullmatch(attr):
        return f"the {words(kind) if kind else 'person'} who {words(attr.removesuffix('_by'))} {owner}"
    if kind and _CODE_REF.search(role):  # `ro_number` names a repair order: "that line's repair order"
        return possessive(owner, words(kind))
    return possessive(owner, words(role))


def _stated(value: Any, phrase: str) -> bool:
    """Whether a record's value is already said in the words that name the record ("the category
    named 'Savings'" says its name; asking for it back would give the answer away)."""
    if isinstance(value, bool) or value is None:
        return False
    figure = (
        (written_figure(value),) if isinstance(value, (int, float)) else ()
    )  # "with 5,126 parts per shift"
    forms = {*date_forms(str(value)), words(str(value)), *figure} - {""}
    return any(re.search(rf"(?<![\w.,]){re.escape(f)}(?!\w|[.,]\d)", phrase, re.IGNORECASE) for f in forms)


def group_question(entity: EntitySpec, by: str, label: str) -> tuple[str, str, str]:
    """(which records, the question, what the answer key names) of the group `label` of a count by
    the field `by`: "whose status is in service", "how many aircraft there are whose status is in
    service", never "how many aircrafts whose status is 'in_service' there are". A yes/no field's
    group is said as what its records do: "that are not enabled", "how many alarm setpoints are not
    enabled", "not enabled" (never "whose enabled is 'False'", keyed "alarm_setpoints_false")."""
    many = plural(entity.name)
    grouped = entity.attribute(by)
    if grouped is not None and grouped.type == "bool" and label.lower() in ("true", "false"):
        yes = label.lower() == "true"
        flag = predicate(entity, by, yes)
        return f"that {flag}", f"how many {many} {flag}", f"{'' if yes else 'not '}{words(by)}"
    whose = f"whose {words(by)} is {said(entity, by, label)}"
    return whose, f"how many {many} there are {whose}", label


def is_derived_param(entity: EntitySpec, binding: Mapping[str, Any], param: str) -> bool:
    """Whether a tool's parameter sets a value that reads from the record's others (an e-mail)."""
    attr = entity.attribute(binding.get("fields", {}).get(param, param))
    return attr is not None and is_derived(attr)


class Reject(Exception):
    """The candidate cannot become a task; `stage` and the message say where and why."""

    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(reason)
        self.stage = stage
        self.reason = reason


@dataclass
class Executed:
    index: int
    tool: ToolSpec
    args: dict[str, Any]
    sources: dict[str, str]
    data: Any
    focus: tuple[str, str] | None  # (entity, key) of the record the call is about
    phrase: str | None  # how the description refers to that record
    handle: str | None = None  # how later steps of its chain refer to it, once the request has named it


@dataclass
class Reported:
    node: str
    field: str
    value: Any
    text: str
    numeric: bool
    step: int | None = None
    items: list[dict[str, Any]] | None = None  # list outputs, for FILTER/EXTRACT
    subject: str = ""  # the records a count is about ("the play events of ..."), for FILTER/EXTRACT
    unit: str = ""  # what the number measures ("count:tracks", "attr:duration"); only like units are combined


def _same_record(focus: tuple[str, Any]) -> set[tuple[str, Any]]:
    """A record's (entity, key) as steps may hold it: its key as returned, and as text."""
    return {focus, (focus[0], str(focus[1]))}


def when_done(phrase: str, attr: AttributeSpec) -> str | None:
    """A date field that records an event, asked about as a person asks: "the date the milestone
    called 'Beta' was achieved" (`achieved_on`), never "the achieved on of ..."; None for any other
    field."""
    done = done_when(attr.name) if attr.type in ("date", "datetime") else None
    return f"the {'date' if attr.type == 'date' else 'time'} {phrase} was {done}" if done else None


def assign_wordings(field: str) -> tuple[str, ...]:
    """How a request moves a record's reference (`{p}` the record, `{a}` the field, `{t}` the new
    target): a field that says who did a thing reads as that ("Record the watchlist entry ... as
    listed by the analyst named 'Whitney Scott'", never "... should go to her as its listed by")."""
    if re.fullmatch(r"([a-z]+ed|[a-z]+en|paid|sent|made|held|run|led) by", field):
        return ("Record {p} as {a} {t}.", "{P} was in fact {a} {t}; please correct it.")
    return (
        "Reassign {p} so its {a} is {t}.",
        "Point the {a} of {p} to {t}.",
        "{P} should go to {t} as its {a}.",
        "Switch the {a} on {p} over to {t}.",
    )


@dataclass
class Generated:
    calls: list[Executed] = field(default_factory=list)
    clauses: list[str] = field(default_factory=list)
    reports: list[Reported] = field(default_factory=list)
    objectives: list[dict[str, Any]] = field(default_factory=list)
    dag: AugmentedDAG = field(default_factory=AugmentedDAG)
    mentioned: set[tuple[str, str]] = field(default_factory=set)
    chains_run: list[list[str]] = field(default_factory=list)


_EDIT_VERBS = frozenset(
    {"", "update", "edit", "modify", "change", "set", "patch", "put", "save", "upsert", "amend"}
)


def _no_article(subject: str) -> str:
    """A counted subject after "the number of": "open rent charges", never "the open rent charges";
    a possessor keeps its article ("the new vehicle's repair orders", never "new vehicle's ...")."""
    if not subject.startswith("the ") or subject.startswith("the only ") or _POSSESSOR.match(subject):
        return subject
    return subject[4:]


_POSSESSOR = re.compile(r"the [\w-]+(?: [\w-]+){0,3}'s ")


def _filtered_count_keys(entity: str, field: str, value: Any) -> tuple[str, ...]:
    """Answer field names for how many of a list's records have `field` = `value`, as a person would
    key them: "generator_equipment_count", "payment_run_count_with_take_early_payment_discounts"."""
    if isinstance(value, bool):
        which = f"with {field}" if value else f"without {field}"
        return (f"{entity} count {which}",)
    return (f"{value} {entity} count", f"{entity} count with {field} {value}")


def operation_clause(tool: ToolSpec, entity: EntitySpec, phrase: str) -> str | None:
    """How a person asks for a domain operation on one record: its description's first clause with the
    record put in ("Pay citation CIT-003", "Approve package review PAC-002 and record when it was
    decided"). None for a plain edit, whose request names the fields instead."""
    verb = lead_word(tool.name)
    sentence = lead_clause(tool.description)
    if verb in _EDIT_VERBS or not sentence or "refused" in sentence.lower():
        return None
    return record_put_in(sentence, entity, phrase)


def record_put_in(sentence: str, entity: EntitySpec, phrase: str) -> str:
    """A sentence about "an invoice" about the record `phrase` instead ("Put an invoice on hold" ->
    "Put invoice INV-003 on hold"); where it names no such record, the record is added ("... for
    invoice INV-003")."""
    noun = words(entity.name)
    found = None
    # the entity's name, else its head word: an `inventory_lot`'s description says "a lot"
    for name in dict.fromkeys((noun, noun.rpartition(" ")[2])):
        found = re.search(
            rf"\b(an?|the|one)\s+(?:[\w-]+\s+){{0,3}}?{re.escape(name)}\b", sentence, re.IGNORECASE
        )
        if found is not None:
            break
    if found is None:
        return f"{sentence[:1].lower() + sentence[1:]} for {phrase}"
    rest = sentence[found.end() :]
    owned = re.match(r"'s ([\w-]+(?: [\w-]+)?)(?=$| and\b|,)", rest)
    if (
        owned is not None and "'s " in phrase
    ):  # "the approval of that quote's supplier", never "...'s supplier's approval"
        return sentence[: found.start()] + f"the {owned.group(1)} of {phrase}" + rest[owned.end() :]
    particle = _PARTICLE.match(rest)
    if particle is not None and len(phrase.split()) > 4:
        # a long record comes after the verb's particle: "End early whichever of the mute sanctions
        # has the highest duration", never "End whichever of ... has the highest duration early"
        return sentence[: found.start()] + particle.group(1).strip() + " " + phrase + rest[particle.end() :]
    return sentence[: found.start()] + phrase + rest


def held_phrase(entity: str, owner: str) -> str:
    """How a request names the record a parent holds, by the parent: "the autopay of account 8260826998"."""
    return f"the {words(entity)} of {owner}"


def held_owner(tool: ToolSpec, phrase: str | None) -> str | None:
    """The parent as a request named it in `held_phrase` ("account 8260826998"), for a tool that
    reaches the record a parent holds (binding `parent`); None for any other tool or phrase."""
    of = held_phrase(tool.entity, "")
    if not tool.binding.get("parent") or not phrase or not phrase.startswith(of):
        return None
    return phrase[len(of) :]


def command_clause(tool: ToolSpec, entity: EntitySpec, phrase: str, value: str) -> str:
    """How a person asks for the move a command value makes (`decide_time_off(decision=deny)`): the
    description's alternative for that verb with the record put in ("Put an invoice on hold or release
    it" -> "Release invoice INV-003"), else the verb itself ("Deny time-off request REQ-002";
    `return_for_changes` -> "Return expense report EXP-004 for changes")."""
    verb, _, rest = value.partition("_")
    command = (compound_of(tool) or {}).get("command") or {}
    others = {str(v).partition("_")[0].lower() for v in command.get("targets", ())} - {verb.lower()}
    # "Approve, reject or return a submitted report": three alternatives, not "Approve, reject"
    for alternative in re.split(r"\s*,\s*(?:or\s+)?|\s+or\s+", lead_clause(tool.description)):
        found = re.search(rf"\b{re.escape(verb)}\b", alternative, re.IGNORECASE)
        if found is None or len(alternative.split()) < 2:
            continue
        if alternative.split()[0].lower() in others:  # "unlock a smart lock" is how to ask to unlock
            continue
        if re.search(r"\bit\b", alternative):
            return re.sub(r"\bit\b", phrase, alternative, count=1)
        return record_put_in(alternative, entity, phrase)
    return " ".join([verb, phrase, *rest.split("_")]).strip()


_PARTICLE = re.compile(
    r"( (?:early|now|off|back|out|up|down|away|aside|on hold|in full|for now))(?=$|[ ,.;])"
)


# Words nobody searches by: they match half of any table's text.
_FILLER_WORDS = frozenset(
    [
        "all",
        "and",
        "the",
        "for",
        "with",
        "from",
        "into",
        "onto",
        "over",
        "per",
        "via",
        "inc",
        "llc",
        "ltd",
        "plc",
        "corp",
        "co",
        "group",
        "new",
        "old",
        "first",
        "second",
        "third",
        "main",
        "general",
    ]
)

# The sentence before a yes/no check against a level: the level is the person's own rule.
_WHY_A_LEVEL = (
    "Our cut-off here is {t}.",
    "{t} is the line we work to.",
    "Anything under {t} gets a second look from us.",
    "We only go ahead at {t} or more.",
    "Our target is {t} or more.",
)


def _counted_by(step: Executed) -> str:
    """What a list's count is of, beside its table: the attributes its filters narrowed it by, a
    search, or all records. Counts are combined only when they count the same kind of thing (alerts
    by severity with alerts by severity, never alerts by severity with alerts by status)."""
    if step.tool.op == "search":
        return "search"
    filters = step.tool.binding.get("filters", {})
    used = sorted(str(filters[p]) for p in step.args if p in filters)
    if step.tool.op == "range":
        used.append(str(step.tool.binding.get("attr", "range")))
    return "+".join(used) or "all"


def round_figure(value: float, near: int) -> int:
    """The level a person would check a figure against: a count or a small number as it is, a larger
    one as a round figure on the side of `value` that `near` lies on (1,586 is checked against 1,500
    or 2,000, never 1,584)."""
    if abs(value) < 20:
        return near
    step = 10 ** math.floor(math.log10(abs(value))) / 2
    low, high = math.floor(value / step) * step, math.ceil(value / step) * step
    return int(high if near > value or low == value and near == value else low)


def in_role(entity: EntitySpec, attr: str, owner: str) -> str | None:
    """The records of `entity` whose reference `attr` names the record `owner` phrases in a role other
    than its kind: "the employees whose manager is ..." (`manager_id`), "the sync jobs whose target
    system is ..." (`target_system_id`), never "the employees of ..." (which says nothing of who
    reports to whom); None where the reference names its record's kind (`supplier_id`)."""
    role = Generator._ref_word(attr)
    ref = entity.attribute(attr)
    kind = ref.ref if ref is not None else None
    if kind is None or role == kind or role.endswith(f"_{kind}") or role.startswith(f"{kind}_"):
        return None  # `supplier_id`, `home_store_id`, an asset's `asset_tag`: the record's own kind
    if kind.endswith(f"_{role}") or kind.startswith(f"{role}_"):
        return None  # the kind said short: a group team's member has a `team_id`
    if role == attr and _DEED.fullmatch(attr):  # "the cash counts counted by ...", not "whose counted by is"
        return f"the {plural(entity.name)} {words(attr)} {owner}"
    return f"the {plural(entity.name)} whose {words(role)} is {owner}"


def _alongside(owner_phrase: str, link: str, many: str) -> str:
    """The records of a list filtered by what another record points at, said the way people say
    it: "the customer returns for that cash count's store", where the chain would read "that cash
    count's store's customer returns". Only when the list's filter is the very link the phrase names
    (a list of audit events by actor is not "for that baseline's approved by")."""
    owner, sep, noun = owner_phrase.rpartition("'s ")
    if sep and is_handle(owner) and "'s " not in owner and noun == link:
        return f"the {many} for {owner_phrase}"
    return possessive(owner_phrase, many)


def _is_key(value: Any) -> bool:
    """Whether a value can be a record's key: text, or a whole number (a seed's integer pet id)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _detail(part: str) -> str:
    """A create detail as said in a sentence: a reference whose record phrase already names its
    kind drops the label (`employee: the employee named 'X'` -> "the employee named 'X'")."""
    label, sep, phrase = part.partition(": ")
    if sep and set(label.split()) <= set(phrase.replace("'s", " ").split()[:6]):
        return phrase
    return f"{label} set to {phrase}" if sep else part


_RECENTLY = "most recently "  # how `Generator._pick_item` says a record was picked by its latest event


def _its(
    label: str, value: str, flags: Mapping[str, bool], *, should: bool = False, person: bool = False
) -> str:
    """One field a change sets, said of its record: "its amount is 29.99"; a yes/no setting as what the
    record is ("it is not finished") or has ("its auto renew is turned off"); a field whose words lead
    into its value as what the record is ("it is approved by 'Vincent Wilkerson'"). `should` says what is
    right instead ("its amount should be 29.99", "it should not be finished"); a `person` is "they"
    ("their phone is ...", "they are not verified")."""
    its, it, is_ = ("their", "they", "are") if person else ("its", "it", "is")
    count = counted(label, value) if label not in flags else None
    if count is not None:  # "it has 3 guests", never "its guests is 3"
        return f"{it} {'should have' if should else 'have' if person else 'has'} {count}"
    if label not in flags:
        if introduces(label):  # "it is approved by 'Vincent Wilkerson'", never "its approved by is ..."
            return f"{it} {'should be' if should else is_} {label} {value}"
        return f"{its} {label} {'should be' if should else 'are' if is_plural(label) else 'is'} {value}"
    on = flags[label]
    flag = label.removeprefix("is ")
    if " " not in flag:
        verb = ("should" + ("" if on else " not") + " be") if should else (is_ if on else f"{is_} not")
        return f"{it} {verb} {flag}"
    return f"{its} {label} {'should be' if should else 'is'} turned {'on' if on else 'off'}"


_ROLE = re.compile(r"^the ([a-z]+(?: [a-z]+)?) of |^that [a-z ]+'s ([a-z]+(?: [a-z]+)?)$")


def _role(phrase: str) -> str | None:
    """The word a record reached through another's reference goes by in the request: "owner" in
    "the owner of the only such account" and in "that account's owner"."""
    m = _ROLE.match(phrase)
    said = (m.group(1) or m.group(2)) if m is not None else None
    if said is None or said.split()[0] in ("only", "new", "one", "same"):
        return None
    return said


def _whichever(those: str, how: str) -> str:
    """One record of a list as a person singles it out: "whichever of those incidents was opened most
    recently", "whichever of the tracks has the highest plays"."""
    if how.startswith(_RECENTLY):
        return f"whichever of {those} was {how.removeprefix(_RECENTLY)} most recently"
    if how.startswith(("named ", "called ")):  # "whichever of the agents is named 'Jo Reed'"
        return f"whichever of {those} is {how}"
    return f"whichever of {those} has {how.removeprefix('with ')}"


def _naming(label: str) -> str:
    """How a record is singled out by the field it is known by: a person's or a place's "named", a
    title's "called", a code's "with code"."""
    if re.search(r"(^|_)(code|number|no|ref|sku)$", label):
        return f"with {field_label(label)}"
    return "named" if "name" in label else "called"


_UNQUOTED = re.compile(r"(?<!\w)'[^']*'(?!\w)")  # a quoted value, not a possessive's apostrophe


_SPAN_PLACE = {
    **dict.fromkeys(("start", "starts", "begin", "from"), 1),
    **dict.fromkeys(("end", "ends", "finish", "to"), 2),
}


def _span_place(detail: str) -> int:
    """Where a detail stands among a new record's details: a start just before its end, the rest
    in their own order (`sorted` keeps it)."""
    return _SPAN_PLACE.get(detail.split(" ", 1)[0].lower(), 0)


def _details(parts: Sequence[str]) -> str:
    """A new record's details as one list, a long one (a clause such as "the team of whichever of the
    agents ...") last, where the values after it cannot be read as part of it; a start comes before
    its end ("start time March 13 ...; and end time March 13 ...")."""
    said = sorted((_detail(part) for part in parts), key=lambda d: (len(d.split()) > 6, _span_place(d)))
    if len(said) > 2 and any(re.search(r", | and ", _UNQUOTED.sub("", d)) for d in said[:-1]):
        # a detail that is itself a list ("the job with stage proof, status assigned and pass 3") is
        # kept apart from the others by semicolons, as a person writing it would
        return "; ".join(said[:-1]) + "; and " + said[-1]
    return listing(said)


_HAPPENED = frozenset({"occurred", "happened", "arrived", "departed", "began", "emerged", "died", "landed",
                       "finished", "failed", "expired", "ended", "started", "lapsed", "elapsed"})  # fmt: skip


def new_record(noun: str, parts: Sequence[str]) -> tuple[str, str]:
    """(what a new record is called, its details; "" when it has none): a detail whose field's words
    lead into its value follows the noun ("a new meal eaten on February 15, 2026", never "It should have
    eaten on ..."), and so does the one record it belongs to, when its phrase names its kind ("a new
    sync run for that sync job", never "a new sync run set up: that sync job")."""
    led = [part for part in parts if introduces(" ".join(part.split()[:2]))]
    # a long one stays last among the details, where nothing after it reads as part of it
    owners = [
        p for p in parts
        if p not in led and ": " in p and _detail(p) == p.partition(": ")[2] and len(_detail(p).split()) <= 6
    ]  # fmt: skip
    owner = owners if len(owners) == 1 else []
    # the details that lead into their values follow the noun, a verb as its -ing form and a start
    # before its end ("a new job posting posted on February 7, 2026 and expiring on April 29, 2026",
    # "a new appointment starting on March 2 ... and ending on March 2 ..."; never "a new appointment
    # ends on ... starts on ...")
    said = [_detail(part) for part in led]
    said.sort(key=lambda d: DATED_VERBS.get(d.split()[0], (0, ""))[0])
    said = [
        f"{DATED_VERBS[d.split()[0]][1]} {d.partition(' ')[2]}" if d.split()[0] in DATED_VERBS else d
        for d in said
    ]
    # the noun's own verb is said once: "a new purchase made on ...", never "a new purchase purchased on"
    last = noun.split()[-1].lower() if noun.split() else ""
    own = {f"{last}d", f"{last}ed", f"{last[:-1]}ied"} if len(last) > 2 else set()
    said = [f"made {d.partition(' ')[2]}" if d.split()[0].lower() in own else d for d in said]
    # a verb that takes no object happened of itself: "a new tracking event that occurred on ...",
    # never "a new tracking event occurred on ..."
    said = [f"that {d}" if d.split()[0].lower() in _HAPPENED else d for d in said]
    called = [noun, listing(said), *(f"for {_detail(part)}" for part in owner)]
    return " ".join(c for c in called if c), _details(
        [part for part in parts if part not in led and part not in owner]
    )


def _answer_key(taken: Mapping[str, Any] | Sequence[str] | set[str], base: str) -> str:
    if base not in taken:
        return base
    n = 2
    while f"{base}{n}" in taken:
        n += 1
    return f"{base}{n}"


def changeable_params(spec: EnvSpec, tool: ToolSpec) -> list[str]:
    """The parameters an update may be asked to set: plain fields, not the key, the lifecycle
    status (transition tools move it) or a field under a uniqueness rule."""
    entity = spec.entity(tool.entity)
    status = entity.status_attribute
    props = tool.parameters.get("properties", {})
    out = []
    for param, attr_name in tool.binding.get("fields", {}).items():
        a = entity.attribute(attr_name)
        if param in props and a is not None and a.type in (*_SCALAR, "text") and a.name != entity.key:
            if status is not None and a.name == status.name:
                continue  # lifecycle moves belong to transition tools and their rules
            if any(r.kind == "unique" and r.entity == entity.name and a.name in r.attrs for r in spec.rules):
                continue
            out.append(param)
    return out


def never_grounds(spec: EnvSpec, tool: ToolSpec) -> str | None:
    """Why `Generator.ground` fails for this tool in every state, or None when it may succeed.

    Only what the spec alone decides counts: a mode selector, an update with nothing it may set,
    a required argument no grounding rule can fill (no enum, and bound to no attribute or to one
    whose type no value is made for). Sampling leaves such tools out of chains up front instead of
    paying a hardened state, a reset and a few calls to learn the same thing.
    """
    if tool.op == "manage":
        return f"{tool.name} is a mode-selector tool"
    if tool.op == "update" and not changeable_params(spec, tool):
        return f"{tool.name} has no field it can change"
    entity = spec.entity(tool.entity)
    b = tool.binding
    props = tool.parameters.get("properties", {})
    filled = {b.get("key"), b.get("param") if tool.op == "assign" else None}
    if tool.op == "lookup":
        filled.add(b.get("label"))
    for p in tool.parameters.get("required", []):
        if p in filled or "enum" in props.get(p, {}):
            continue
        bound = entity.attribute({**b.get("fields", {}), **b.get("filters", {})}.get(p, p))
        if bound is not None and bound.type == "ref":
            continue  # a reference is picked from the state
        if (tool.op, p) in (
            ("range", "start"),
            ("range", "end"),
            ("aggregate", "group_by"),
            ("search", "query"),
        ):
            continue
        attr = entity.attribute(b.get("fields", {}).get(p, p))
        if attr is None or attr.type not in (*_SCALAR, "text", "datetime"):
            return f"cannot ground required argument {tool.name}.{p}"
    return None


def ungroundable_tools(spec: EnvSpec) -> dict[str, str]:
    """Tool name -> why it never grounds (`never_grounds`), for every such tool of the spec."""
    return {t.name: why for t in spec.tools if (why := never_grounds(spec, t)) is not None}


def chain_can_run(graph: nx.MultiDiGraph, chain: Sequence[str], ungroundable: Collection[str]) -> bool:
    """Whether a chain may run at all: none of its tools is `ungroundable`, every step has an edge
    that carries a value from the previous tool's output (`_incoming` needs one), and no step the
    chain goes on from lists the records under one that the step before it has just created (there
    are none yet, so the next step would have nothing to pick from)."""
    return runnable(graph, ungroundable)(chain)


def runnable(graph: nx.MultiDiGraph, ungroundable: Collection[str]) -> Callable[[Sequence[str]], bool]:
    """`chain_can_run` for many chains of one graph: what each pair of tools allows is worked out once."""
    pairs: dict[tuple[str, str], tuple[bool, bool]] = {}  # (u, v) -> (carries a value, lists u's new record)

    def pair(u: str, v: str) -> tuple[bool, bool]:
        if (u, v) not in pairs:
            carrying = [e for e in edge_data(graph, u, v) if carries_value(e)]
            # `_incoming` takes the strongest edge first, and a create always returns its new key
            fresh = (
                bool(carrying)
                and graph.nodes[u]["op"] == "create"
                and graph.nodes[v]["op"] == "list"
                and carrying[0]["entity"] == graph.nodes[u]["entity"]
            )
            pairs[u, v] = (bool(carrying), fresh)
        return pairs[u, v]

    def check(chain: Sequence[str]) -> bool:
        if any(t in ungroundable for t in chain):
            return False
        for i, (u, v) in enumerate(zip(chain, chain[1:], strict=False)):
            carries, lists_new = pair(u, v)
            if not carries or (lists_new and i + 2 < len(chain)):
                return False
        return True

    return check


class Generator:
    """Runs one tool group in a session positioned at the task's initial state."""

    def __init__(
        self,
        spec: EnvSpec,
        session: Session,
        graph: nx.MultiDiGraph,
        rng: random.Random,
        *,
        allow_ids: bool,
        preferred: Mapping[str, Sequence[str]] | None = None,
        wording: random.Random | None = None,
    ) -> None:
        self.spec = spec
        self.session = session
        self.graph = graph
        self.rng = rng
        # wording draws come from their own generator, so how a request is phrased never changes
        # which records, values or questions the task is made of
        self.wording = wording or random.Random(f"wording:{hash(rng.getstate()[1])}")
        self.allow_ids = allow_ids
        self.preferred = {k: list(v) for k, v in (preferred or {}).items()}
        self.initial = session.state()
        self._world: World | None = None
        # The session's state as last fetched; grounding reads it many times between calls (every
        # candidate record's preconditions), so it is fetched again only after a write or a restore.
        self._live: dict[str, Any] | None = self.initial
        self.out = Generated()
        # step index -> (clauses written when its handle was given, the noun the handle stands for)
        self._marks: dict[int, tuple[int, str]] = {}
        # how a list's filter value was said, by the list's step and parameter: a record picked from
        # the list points back at it ("the player reports of the new purchase's player", never "of the
        # player of the only such sanction" when the sanctions were that player's)
        self._filtered_by: dict[tuple[int, str], str] = {}
        # answer field names must not spell a tool name or a parameter key (the leakage check)
        self._code_words = {t.name.casefold() for t in spec.tools} | {
            p.casefold() for t in spec.tools for p in t.parameters.get("properties", {})
        }

    def live_state(self) -> dict[str, Any]:
        """The session's current state (treat as read-only: it is shared until the next write)."""
        if self._live is None:
            self._live = self.session.state()
        return self._live

    def attempt(self, run: Callable[[], None], failures: list[Reject], *, restore: bool = True) -> bool:
        """Run one part of the group; on Reject, restore the session and the output to before it.

        `restore=False` is for a part whose failure ends the candidate: the session is reset for the
        next one anyway, so neither the snapshot nor the restore is worth a round trip.
        """
        mark = self.session.snapshot() if restore else None
        live = self._live  # the state at the mark, if it was fetched: a restore brings it back
        out = self.out
        sizes = (len(out.calls), len(out.clauses), len(out.reports), len(out.objectives))
        dag = (len(out.dag.calls), len(out.dag.edges), len(out.dag.chains))
        mentioned = set(out.mentioned)
        try:
            run()
            return True
        except Reject as exc:
            failures.append(exc)
            if mark is not None:
                self.session.restore(mark)
                self._live = live
            del (
                out.calls[sizes[0] :],
                out.clauses[sizes[1] :],
                out.reports[sizes[2] :],
                out.objectives[sizes[3] :],
            )
            del out.dag.calls[dag[0] :], out.dag.edges[dag[1] :], out.dag.chains[dag[2] :]
            out.mentioned = mentioned
            return False

    # -- grounding helpers -------------------------------------------------------------------

    def _unique_filter(self, step: Executed, entity: EntitySpec) -> str | None:
        """The attribute a list step filters by whose values single out one record each (its key, a
        code no two records share), if any: counting such a list asks nothing."""
        filters = step.tool.binding.get("filters", {})
        rows = list(self._table(entity, self.initial).values())
        for param in step.args:
            attr = filters.get(param)
            spec = entity.attribute(attr) if attr is not None else None
            if spec is None or spec.type in ("enum", "bool", "ref") or len(rows) < 3:
                continue  # a state, a flag or an owner is shared by design, however few records there are
            values = [repr(r.get(attr)) for r in rows if r.get(attr) is not None]
            if attr == entity.key or (len(values) == len(rows) and len(set(values)) == len(values)):
                return str(attr)
        return None

    def _table(self, entity: EntitySpec, state: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return dict((state if state is not None else self.live_state()).get(entity.table) or {})

    def pick_record(
        self,
        entity: EntitySpec,
        avoid: Sequence[str] = (),
        label_unique: bool = False,
        tool: ToolSpec | None = None,
        viable: Callable[[str], bool] | None = None,
    ) -> tuple[str, str]:
        """A record of the initial state the description can point at, hardening targets first; for a
        write, only records its preconditions and lifecycle admit (a doomed call teaches nothing).

        `viable` says which records the rest of the chain can go on from (`_leads_on`); when it
        rules out every record, the prediction is taken to be off and all of them stay in play.
        """
        table = self._table(entity, self.initial)
        live = self._table(entity)
        keys = [k for k in sorted(table) if k in live and k not in avoid]
        if tool is not None and tool.kind == "write":
            keys = [k for k in keys if self._admits(tool, live[k])]
        if viable is not None:
            keys = [k for k in keys if viable(k)] or keys
        first = [k for k in self.preferred.get(entity.name, []) if k in keys]
        rest = [k for k in keys if k not in first]
        self.rng.shuffle(rest)
        label = entity.label_attribute
        for key in (first + rest)[:12]:
            if label_unique:
                if label is None:
                    break
                value = table[key].get(label.name)
                if (
                    not isinstance(value, str)
                    or [r.get(label.name) for r in table.values()].count(value) != 1
                ):
                    continue
            phrase = describe_record(self.spec, self.initial, entity.name, key, allow_ids=self.allow_ids)
            if phrase is not None:
                return key, phrase
        raise Reject(
            "grounding",
            f"no {entity.name} record can be described {'without ids' if not self.allow_ids else ''}".strip(),
        )

    def _admits(self, tool: ToolSpec, record: Mapping[str, Any]) -> bool:
        if not precondition_ok(self.spec, self.live_state(), tool, record):
            return False
        key = tool.binding.get("key")
        entity = self.spec.entity(tool.entity)
        # a compound tool's requirements across records (the shipment must be in transit...)
        if (
            key
            and compound_of(tool) is not None
            and tool.op != "create"
            and requirement_problem(self.spec, self.live_state(), tool, {key: record.get(entity.key)})
        ):
            return False
        if tool.op != "transition":
            return True
        attr, target = tool.binding.get("attr"), tool.binding.get("value")
        current = record.get(attr or "")
        for r in self.spec.rules:
            if r.kind == "transition" and r.entity == tool.entity and r.attr == attr:
                return target in r.allowed.get(str(current), ())
        return current != target

    def _new_value(
        self, tool: ToolSpec, param: str, current: Any, given: Mapping[str, Any] | None = None
    ) -> Any:
        """A value for `param` that differs from `current`; text that reads from a record (an e-mail,
        a note) reads from the values `given` to the same call."""
        schema = tool.parameters.get("properties", {}).get(param, {})
        entity = self.spec.entity(tool.entity)
        fields = tool.binding.get("fields", {})
        record = {fields.get(k, k): v for k, v in (given or {}).items()}
        attr_name = tool.binding.get("fields", {}).get(param, param)
        attr = entity.attribute(attr_name)
        if self._world is None:  # the domain's vocabulary, the state's names taken
            self._world = world_for(self.spec, self.initial)
        if "enum" in schema:
            options = [v for v in schema["enum"] if v != current]
            # a species that goes with the breed the request gives (never a reptile of breed Labrador)
            linked = linked_options(self._world, entity, attr_name, record, options)
            return self.rng.choice(linked or options) if options else None
        if attr is None:
            return None
        if attr.type == "bool":
            return not current if isinstance(current, bool) else True
        if attr.type in _NUMERIC:
            low, high = None, None
            for r in self.spec.rules:
                if r.kind == "range" and r.entity == entity.name and r.attr == attr.name:
                    low, high = r.min, r.max
            low = max(x for x in (low, schema.get("minimum"), 0) if x is not None)
            ceiling = min((x for x in (high, schema.get("maximum")) if x is not None), default=None)
            # a value of the domain's own scale first (a streaming plan allows 2 streams, not 356), and
            # of the record's own kind where the vocabulary links them (a Beagle's weight)
            for _ in range(4):
                meant = make_value(
                    attr, entity, self.rng, self.rng.randint(2, 98), world=self._world, record=dict(record)
                )
                if (
                    isinstance(meant, (int, float))
                    and not isinstance(meant, bool)
                    and meant != current
                    and low <= meant <= (ceiling if ceiling is not None else meant)
                ):
                    return meant
            high = min(x for x in (high, schema.get("maximum"), low + 400) if x is not None)
            for _ in range(6):
                value: Any = (
                    self.rng.randint(int(low), int(high))
                    if attr.type == "int"
                    else round(self.rng.uniform(low, high), 2)
                )
                if value != current:
                    return value
            return None
        if attr.type in ("date", "datetime") and not {"pattern", "enum", "const"} & set(schema):
            # a date given now reads from the clock: a notice issued today, disconnecting next month
            for _ in range(6):
                value = timely_date(attr, self.rng, entity)
                if value != current and conforms(as_declared(value, schema), schema):
                    return value
        if attr.type in ("str", "text", "date", "datetime", "enum"):
            for _ in range(6):
                value = make_value(
                    attr, entity, self.rng, self.rng.randint(2, 98), world=self._world, record=dict(record)
                )
                if value != current and value is not None:
                    return value
        return None

    def _kept(
        self, entity: EntitySpec, subject: tuple[str, str] | None, attr: AttributeSpec | None
    ) -> tuple[Any, str] | None:
        """(value, source) of the field `attr` as the record `subject` has it now, where it has one:
        from the latest step that returned the record, else from s0 while it is unchanged there."""
        if subject is None or attr is None:
            return None
        current = self._table(entity).get(subject[1], {}).get(attr.name)
        if current is None:
            return None
        for step in reversed(self.out.calls):
            data = step.data if isinstance(step.data, dict) else {}
            if str(data.get(entity.key)) == subject[1] and data.get(attr.name) == current:
                return current, f"out:{step.index}.data.{attr.name}"
        if self._table(entity, self.initial).get(subject[1], {}).get(attr.name) == current:
            return current, f"s0:{entity.table}.{subject[1]}.{attr.name}"
        return None

    def _ref_value(
        self, tool: ToolSpec, param: str, avoid: Sequence[str] = (), args: Mapping[str, Any] | None = None
    ) -> tuple[str, str, str]:
        entity = self.spec.entity(tool.entity)
        attr = entity.attribute(
            {**tool.binding.get("fields", {}), **tool.binding.get("filters", {})}.get(param, param)
        )
        if tool.op == "assign":
            attr = entity.attribute(tool.binding.get("attr", ""))
        if attr is None or attr.ref is None:
            raise Reject("grounding", f"{tool.name}.{param} does not name a reference")
        target = self.spec.entity(attr.ref)
        state = self.live_state()
        # a create or assign may be guarded by the referenced record's state (only open projects...),
        # a compound tool by its requirements through the reference (the patient must not be deceased)
        props = tool.parameters.get("properties") or {}
        barred = [
            k
            for k in state.get(target.table) or {}
            if not precondition_ok(self.spec, state, tool, {attr.name: k})
            or not reference_admits(
                self.spec, state, tool, {**(args or {}), param: as_declared(k, props.get(param))}, param
            )
        ]
        key, phrase = self.pick_record(target, [*avoid, *barred])
        return key, f"s0:{target.table}.{key}.{target.key}", phrase

    # -- one call ------------------------------------------------------------------------------

    def call(
        self,
        tool: ToolSpec,
        args: dict[str, Any],
        sources: dict[str, str],
        focus: tuple[str, str] | None,
        phrase: str | None,
    ) -> Executed:
        props = tool.parameters.get("properties") or {}
        args = {p: as_declared(v, props[p]) if p in props else v for p, v in args.items()}
        for p, v in args.items():
            if str(sources.get(p, "")).startswith("out:") and p in props and not conforms(v, props[p]):
                # a record the chain reached that the operation cannot name (a new order's id 11 where
                # the seed declares `orderId` at most 10): the chain cannot go this way
                raise Reject(
                    "grounding", f"{tool.name} cannot take {p}={v!r}, which an earlier step returned"
                )
        overwritten = self._overwrites(tool, args, focus)
        if overwritten:
            # "mark it rejected ... now set it to approved": nobody asks for a change and then undoes it
            raise Reject("redundant", f"{tool.name} writes {', '.join(overwritten)} of {focus} a second time")
        made = self._written_here(focus) if tool.op == "delete" and focus is not None else None
        if made is not None:
            # "open a new ledger entry ... the new ledger entry can go, so delete it" undoes itself, and
            # "set the emergency contact to confirmed ... remove that emergency contact" wastes a step
            raise Reject("redundant", f"{tool.name} deletes {focus}, which this request {made}")
        unchanged = self._leaves_as_is(tool, args, focus)
        if unchanged:
            # "reassign the invoice so its carrier is that shipment's carrier" when it already is: a
            # request for a change that changes nothing, and a reference step a policy learns to copy
            raise Reject(
                "redundant", f"{tool.name} leaves {', '.join(unchanged)} of {focus} as it already is"
            )
        result = self.session.call(tool.name, args)
        if tool.kind == "write":
            self._live = None  # read tools are declared (and verified) free of side effects
        if not result.ok:
            code = result.error.code if result.error else "error"
            message = result.error.message if result.error else ""
            raise Reject("execution", f"{tool.name} failed ({code}): {message}"[:300])
        step = Executed(len(self.out.calls), tool, args, sources, result.data, focus, phrase)
        self.out.calls.append(step)
        self.out.dag.add_call(f"c{step.index}")
        if focus is not None:
            self.out.mentioned.add(focus)
        return step

    @staticmethod
    def _written(tool: ToolSpec, args: Mapping[str, Any]) -> set[str]:
        """The fields of its record a write sets: a transition's lifecycle field, an update's or an
        assignment's fields among `args`."""
        b = tool.binding
        if tool.op == "transition":
            return {str(b.get("attr") or "status")}
        fields = set(Generator._set_values(tool, args))
        return fields | ({str(b["attr"])} if tool.op == "assign" and b.get("attr") else set())

    @staticmethod
    def _set_values(tool: ToolSpec, args: Mapping[str, Any]) -> dict[str, Any]:
        """The fields of its record an update or an assignment sets among `args`, with their values."""
        b = tool.binding
        values = {str(b["fields"][p]): v for p, v in args.items() if p in b.get("fields", {})}
        if tool.op == "assign" and b.get("attr") and b.get("param") in args:
            values[str(b["attr"])] = args[b["param"]]
        return values

    def _asked_already(self, step: Executed, attr: str) -> bool:
        """Whether the request already asks for `attr` of the record `step` reads, with no write to
        that record since: "the population of that zone ... the population of the zone named
        'Jackson County'" asks one figure twice, and a gap between them is always 0."""
        if step.focus is None:
            return False
        same = _same_record(step.focus)
        for r in self.out.reports:
            if r.step is None or r.unit != f"attr:{attr}" or self.out.calls[r.step].focus not in same:
                continue
            between = self.out.calls[r.step + 1 : step.index]
            if not any(c.tool.kind == "write" and c.focus in same for c in between):
                return True
        return False

    def _given_here(self, step: Executed, attr: str, value: Any) -> bool:
        """Whether an earlier write of this request set `attr` of the record `step` reads to the
        `value` it still holds: "create a stop with sequence 4 ... tell me the new stop's sequence"
        asks the user for what they said themselves."""
        if step.focus is None:
            return False
        same = _same_record(step.focus)
        return any(
            c.tool.kind == "write"
            and c.focus in same
            and attr in (given := self._set_values(c.tool, c.args))
            and values_match(given[attr], value)
            for c in self.out.calls[: step.index]
        )

    def _leaves_as_is(
        self, tool: ToolSpec, args: Mapping[str, Any], focus: tuple[str, Any] | None
    ) -> list[str]:
        """The fields an update or an assignment would set to the value its record already holds,
        when that is every field it sets (empty otherwise)."""
        if focus is None or tool.op not in ("update", "assign"):
            return []
        values = self._set_values(tool, args)
        record = (self.live_state().get(self.spec.entity(focus[0]).table) or {}).get(focus[1])
        if not values or not isinstance(record, Mapping):
            return []
        same = [f for f, v in values.items() if f in record and values_match(record[f], v)]
        return sorted(same) if len(same) == len(values) else []

    def _written_here(self, focus: tuple[str, Any]) -> str | None:
        """How an earlier step of this request wrote the record in `focus` ("created", "changed"), or
        None when none did."""
        same = {focus, (focus[0], str(focus[1]))}
        ops = {s.tool.op for s in self.out.calls if s.tool.kind == "write" and s.focus in same}
        return "created" if "create" in ops else "changed" if ops else None

    def _overwrites(
        self, tool: ToolSpec, args: Mapping[str, Any], focus: tuple[str, Any] | None
    ) -> list[str]:
        """Fields of the record in `focus` that an earlier write of this request already set, its
        creation included ("create it in Receipts ... now switch its folder to Business Cards" is
        one request a person would write as "create it in Business Cards")."""
        if tool.kind != "write" or focus is None or tool.op not in ("transition", "update", "assign"):
            return []
        now = self._written(tool, args)
        same = {focus, (focus[0], str(focus[1]))}
        earlier = set().union(
            *(
                self._written(s.tool, s.args)
                for s in self.out.calls
                if s.tool.kind == "write"
                and s.tool.op in ("transition", "update", "assign", "create")
                and s.focus in same
            )
        )
        return sorted(now & earlier)

    def _incoming(self, prev: Executed, tool: ToolSpec) -> tuple[str, Any, str, str, str]:
        """(param, value, source, phrase, entity) carried along the strongest usable edge prev -> tool."""
        for edge in edge_data(self.graph, prev.tool.name, tool.name):
            if not carries_value(edge):
                continue
            param, path, entity = edge["param"], edge["path"], edge["entity"]
            got = self._resolve(prev, path, entity)
            if got is not None:
                value, concrete, phrase = got
                return param, value, f"out:{prev.index}.{concrete}", phrase, entity
        raise Reject("grounding", f"nothing {prev.tool.name} returned can feed {tool.name}")

    def _resolve(self, prev: Executed, path: str, entity_name: str) -> tuple[Any, str, str] | None:
        data = prev.data if isinstance(prev.data, dict) else {}
        parts = path.split(".")[1:]
        host = self.spec.entity(prev.tool.entity)
        entity = self.spec.entity(entity_name)
        that = self._handle(prev) or prev.phrase or demonstrative(host.name)
        if parts[0] == "items[]":
            items = [i for i in data.get("items", []) if isinstance(i, dict)]
            picked = self._pick_item(host, items)
            if picked is None:
                return None
            index, how = picked
            value = items[index].get(parts[1])
            if how.startswith("("):
                # one record answers: "the analyst matching 'Timothy'", not "the only one of the analysts ..."
                many = f"the {plural(host.name)} "
                one = f"the {words(host.name)} "
                owned = f"'s {plural(host.name)}"
                if that.startswith(many):
                    chosen = one + that.removeprefix(many)
                elif that.endswith(owned):
                    # "that courier's only shift", not "the only one of that courier's shifts"; an owner
                    # that is a possessive already keeps "of" ("the only rate quote of that invoice's carrier")
                    owner = that.removesuffix(owned)
                    chosen = (
                        f"the only {words(host.name)} of {owner}"
                        if "'s " in owner
                        else f"{owner}'s only {words(host.name)}"
                    )
                elif that == f"those {plural(host.name)}":  # the list the last sentence described
                    chosen = f"the only such {words(host.name)}"
                elif that == f"all {plural(host.name)}":  # a table of one: "our only program"
                    chosen = f"our only {words(host.name)}"
                elif (
                    that.startswith("the ")
                    and that.endswith(f" {words(plural(host.name))}")
                    and not re.search(r"\bof\b|'", that)  # words that say what kind, no owner
                ):
                    # "the only booked shipment", not "the only one of the booked shipments"
                    kind = that.removeprefix("the ").removesuffix(words(plural(host.name)))
                    chosen = f"the only {kind}{words(host.name)}"
                else:
                    chosen = f"the only one of {that}"
            elif (
                that == f"all {plural(host.name)}"
            ):  # the whole table: "the amenity with the highest unit cost"
                chosen = (
                    f"the {how} {words(host.name)}"
                    if how.startswith(_RECENTLY)
                    else f"the {words(host.name)} {how}"
                )
            elif self.wording.random() < 0.5:
                chosen = _whichever(that, how)
            elif how.startswith(_RECENTLY):  # "the most recently opened of those incidents"
                chosen = f"the {how} of {that}"
            else:
                chosen = f"the {words(host.name)} {how} among {that}"
            named = (
                None if parts[1] == host.key else self._named(entity, value) or self._owner(prev, parts[1])
            )
            if named is not None:  # the chain comes back to a record the request has named
                phrase = named
            else:
                phrase = chosen if parts[1] == host.key else ref_phrase(chosen, parts[1], entity.name)
            return (value, f"data.items[{index}].{parts[1]}", phrase) if _is_key(value) else None
        if parts[0] == "related":
            ids = data.get("related", {}).get(parts[1].rstrip("[]"), [])
            if len(ids) != 1:
                return None
            only = (
                f"{that}'s only {words(entity.name)}"
                if is_handle(that) and "'s " not in that  # never "that invoice's carrier's only quote"
                else f"the only {words(entity.name)} of {that}"
            )
            return ids[0], f"data.related.{parts[1].rstrip('[]')}[0]", self._named(entity, ids[0]) or only
        record = data.get("record", {}) if parts[0] == "record" else data
        attr = parts[-1]
        value = record.get(attr) if isinstance(record, dict) else None
        if not _is_key(value):
            return None
        concrete = ".".join(["data", *parts])
        phrase = that if attr == host.key else ref_phrase(that, attr, entity.name)
        held_by = held_owner(prev.tool, prev.phrase)
        if held_by is not None and attr == prev.tool.binding["parent"]["attr"]:
            phrase = held_by  # the account the autopay was of
        return value, concrete, self._named(entity, value) or phrase

    @staticmethod
    def _kept_to(tool: ToolSpec, entity: EntitySpec, where: Mapping[str, Any], phrase: str) -> str:
        """A list of one record's records narrowed to the state the read keeps to, said in the phrase:
        "the open defects of aircraft N123", "caseload CAS-002's alerts that are not acknowledged"."""
        if not where:
            return phrase
        many = plural(entity.name)
        state = singled_out(entity, dict(where), list(where), many=True)  # "the open defects"
        if (
            state.startswith("the ")
            and state.endswith(f" {many}")
            and re.search(rf"\b{re.escape(many)}\b", phrase)
        ):
            return re.sub(rf"\b{re.escape(many)}\b", state[4:], phrase, count=1)
        if state.startswith(f"the {many} "):
            return f"{phrase} {state[len(f'the {many} ') :]}"  # "... that are not acknowledged"
        raise Reject("grounding", f"{tool.name}: no phrase says both its owner and {state!r}")

    def _owner(self, prev: Executed, attr: str) -> str | None:
        """How the request said the record a list was filtered by, when `attr` of a record picked from
        that list is that filter (a sanction of the player's sanctions has that player)."""
        filters = prev.tool.binding.get("filters", {})
        for param in prev.args:
            if filters.get(param, param) == attr and str(prev.sources.get(param, "")).startswith("out:"):
                said = self._filtered_by.get((prev.index, param))
                if said is not None and is_handle(said):
                    return said
        return None

    def _named(self, entity: EntitySpec, key: Any) -> str | None:
        """How the request already calls the record `key` of `entity`, when a chain comes back to it
        ("that plan", not "that plan's only subscriber account's plan")."""
        for step in reversed(self.out.calls):
            if step.focus in ((entity.name, str(key)), (entity.name, key)):
                made = [s for s in self.out.calls if s.tool.op == "create" and s.tool.entity == entity.name]
                if (
                    step.tool.op == "create"
                    and made == [step]
                    and step.phrase == f"the new {words(entity.name)}"
                ):
                    return step.phrase  # the one record of its kind the request made: "the new rate quote"
                return self._handle(step)
            held, owner = step.tool.binding.get("parent") or {}, held_owner(step.tool, step.phrase)
            if (  # the account whose autopay the request turned off: "account 7470715143"
                owner is not None and held.get("parent") == entity.name
                and str(step.args.get(held["param"])) == str(key)
            ):  # fmt: skip
                return owner
        return None

    @staticmethod
    def _ref_word(attr: str) -> str:
        """The record a reference names: `pet_id` and a seed's `petId` are the pet; whoever did
        something is named by what they did (`approved_by` is the approver, never "the approved by
        of that draw")."""
        if attr.endswith("_id"):
            attr = attr[:-3]
        elif len(attr) > 2 and attr.endswith("Id") and attr[-3].islower():
            attr = attr[:-2]
        did = re.fullmatch(r"(?:(.+)_)?([a-z]+)_by", attr)
        if did is not None and did.group(2) in _AGENT:
            return f"{did.group(1)}_{_AGENT[did.group(2)]}" if did.group(1) else _AGENT[did.group(2)]
        return attr

    def _pick_item(
        self, entity: EntitySpec, items: list[dict[str, Any]], *, by_name: bool = True
    ) -> tuple[int, str] | None:
        """One of a list's records and what tells it apart: the only one, the highest of a number, the
        latest of a date, or (`by_name`) a name no other has."""
        if not items:
            return None
        if len(items) == 1:
            return 0, "(the only match)"
        for a in entity.attributes:
            if a.type in _NUMERIC and a.name != entity.key:
                values = [i.get(a.name) for i in items]
                if any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in values):
                    continue
                top = max(values)  # type: ignore[type-var]
                if values.count(top) == 1:
                    return values.index(top), f"with the highest {compared_label(a.name)}"
        for a in entity.attributes:  # no telling number: the most recent date decides
            if a.type in ("date", "datetime"):
                dates = [str(i.get(a.name) or "") for i in items]
                latest = max(dates)
                if latest and dates.count(latest) == 1:
                    done = done_when(a.name)  # "most recently opened", never "with the latest opened at"
                    how = f"{_RECENTLY}{done}" if done else f"with the latest {compared_label(a.name)}"
                    return dates.index(latest), how
        label = entity.label_attribute  # nor a date: the one the user knows by its name
        # a record known only by a note is not "called 'Looked over the refill request today; all in order.'"
        if by_name and label is not None and label.name != entity.key and is_name_field(label.name):
            names = [i.get(label.name) for i in items]
            unique = [n for n in names if isinstance(n, str) and 0 < len(n) <= 60 and names.count(n) == 1]
            if unique:  # chosen without the generator's draw: a prediction and the call agree
                name = min(unique)
                return names.index(name), f"{_naming(label.name)} {say(name)}"
        return None

    # -- grounding one tool --------------------------------------------------------------------

    def ground(
        self,
        tool: ToolSpec,
        incoming: tuple[str, Any, str, str, str] | None,
        viable: Callable[[str], bool] | None = None,
    ) -> tuple[dict[str, Any], dict[str, str], tuple[str, str] | None, str | None, list[str]]:
        """(args, sources, focus, phrase, clause parts); a write's clause names every value it sets.
        `viable` narrows the record the tool is about when it is picked from the state."""
        entity = self.spec.entity(tool.entity)
        b = tool.binding
        props = tool.parameters.get("properties", {})
        required = list(tool.parameters.get("required", []))
        # a new record's e-mail and notes read from its name and its other values: drawn after them,
        # for this record's person only
        required.sort(key=lambda p: is_derived_param(entity, b, p))
        if self._world is not None:
            self._world.person = None
        args: dict[str, Any] = {}
        sources: dict[str, str] = {}
        focus: tuple[str, str] | None = None
        phrase: str | None = None
        extra: list[str] = []
        owners: dict[str, str] = {}  # a reference argument's record, as the request calls it
        key_param = b.get("key") if b.get("key") in props else None
        # a record its parent holds at a path of its own (an account's autopay), reached by the parent's id
        held = b.get("parent") if tool.op != "create" else None
        where: dict[str, Any] = dict(b.get("where") or {})  # "list_open_tickets" lists only the open ones
        if incoming is not None:
            param, value, source, in_phrase, in_entity = incoming
            if param not in props:
                raise Reject("grounding", f"{tool.name} has no argument {param!r}")
            args[param], sources[param] = value, source
            if param == key_param or (tool.op == "lookup" and param == b.get("key")):
                focus, phrase = (entity.name, value), in_phrase
            elif held is not None and param == held["param"]:
                found = held_record(self.spec, self.live_state(), tool, args)
                if found is None or not self._admits(tool, found[1]):
                    raise Reject(
                        "grounding", f"{tool.name}: {in_phrase} holds no {words(entity.name)} it can act on"
                    )
                focus, phrase = (entity.name, found[0]), held_phrase(entity.name, in_phrase)
            else:
                extra.append(
                    in_phrase if tool.op == "assign" else f"{words(self._ref_word(param))}: {in_phrase}"
                )
                if tool.op in ("list", "search", "range"):
                    phrase = in_role(entity, b.get("filters", {}).get(param, param), in_phrase) or _alongside(
                        in_phrase, words(self._ref_word(param)), plural(entity.name)
                    )
                    phrase = self._kept_to(tool, entity, where, phrase)
                    self._filtered_by[(len(self.out.calls), param)] = in_phrase
        if tool.op == "manage":
            raise Reject(
                "grounding", f"{tool.name} is a mode-selector tool; DAG chains use single-purpose tools"
            )
        if held is not None and held["param"] not in args:
            key, _ = self.pick_record(entity, tool=tool, viable=viable)
            owner = self._table(entity)[key].get(held["attr"])
            args[held["param"]] = owner
            found = held_record(self.spec, self.live_state(), tool, args)
            said_owner = describe_record(
                self.spec, self.initial, held["parent"], str(owner), allow_ids=self.allow_ids
            )
            if found is None or found[0] != key or said_owner is None:
                raise Reject(
                    "grounding", f"{tool.name}: no {held['parent']} can be said to hold {entity.name} {key}"
                )
            sources[held["param"]] = f"s0:{entity.table}.{key}.{held['attr']}"
            focus, phrase = (entity.name, key), held_phrase(entity.name, said_owner)
        if key_param and key_param not in args:
            if tool.op == "lookup" and not self.allow_ids:
                key, phrase = self.pick_record(entity, label_unique=True, viable=viable)
                label = b["label"]
                args[label] = self._table(entity)[key][label]
                sources[label] = f"s0:{entity.table}.{key}.{label}"
            else:
                key, phrase = self.pick_record(entity, tool=tool, viable=viable)
                args[key_param] = key
                sources[key_param] = f"s0:{entity.table}.{key}.{entity.key}"
            focus = (entity.name, key)
        if tool.op == "lookup" and not args:
            key, phrase = self.pick_record(entity, viable=viable)
            args[b["key"]] = key
            sources[b["key"]] = f"s0:{entity.table}.{key}.{entity.key}"
            focus = (entity.name, key)
        subject = focus

        def record() -> Mapping[str, Any]:
            """The live record the call is about; read only when a value depends on it (a fetch)."""
            return self._table(entity).get(subject[1], {}) if subject else {}

        stated_at: dict[str, int] = {}  # a value the request states: where `extra` says it
        if tool.op == "update":
            options = changeable_params(self.spec, tool)
            if not options:
                raise Reject("grounding", f"{tool.name} has no field it can change on {focus}")
            param = self.rng.choice(options)
            value = self._new_value(tool, param, record().get(b["fields"][param]))
            if value is None:
                raise Reject("grounding", f"no new value for {tool.name}.{param}")
            args[param], sources[param] = value, "query"
            stated_at[param] = len(extra)
            extra.append(
                stated(
                    b["fields"][param],
                    said(entity, b["fields"][param], value),
                    kind_of(entity, b["fields"][param]),
                )
            )
        if tool.op == "assign" and b.get("param") not in args:
            current = record().get(b["attr"])
            key, source, ref_phrase = self._ref_value(
                tool, b["param"], avoid=[current] if current else [], args=args
            )
            args[b["param"]], sources[b["param"]] = key, source
            extra.append(ref_phrase)
        for p in required:
            if p in args:
                continue
            schema = props.get(p, {})
            attr = entity.attribute({**b.get("fields", {}), **b.get("filters", {})}.get(p, p))
            kept = (
                self._kept(entity, subject, attr)
                if tool.op == "update" and p in b.get("fields", {})
                else None
            )
            if kept is not None:
                # an update that must be sent the par level's location keeps the one it has: the request
                # never asked to move it
                args[p], sources[p] = kept
            elif attr is not None and attr.type == "ref":
                key, source, ref_phrase = self._ref_value(tool, p, args=args)
                args[p], sources[p] = key, source
                extra.append(f"{words(self._ref_word(p))}: {ref_phrase}")
                owners[p] = ref_phrase
            elif tool.op == "range" and p in ("start", "end"):
                continue
            elif tool.op == "aggregate" and p == "group_by":
                args[p], sources[p] = self.rng.choice(schema.get("enum") or [entity.key]), "query"
            elif tool.op == "search" and p == b.get("query", "query"):
                term = self._search_term(entity, tool)
                if term is None:
                    raise Reject("grounding", f"no word of the {entity.table}' text finds only a few of them")
                args[p], sources[p] = term, "query"
            else:
                value = self._new_value(tool, p, record().get(p), given=args)
                if value is None:
                    raise Reject("grounding", f"cannot ground required argument {tool.name}.{p}")
                args[p], sources[p] = value, "query"
                field = b.get("fields", {}).get(p, p)
                stated_at[p] = len(extra)
                extra.append(stated(field, said(entity, field, value), kind_of(entity, field)))
        self._commanded(tool, args, sources, stated_at, extra)
        self._in_lifecycle_order(tool, args, stated_at, extra, record())
        if tool.op == "range":
            dates = sorted(
                str(r.get(b["attr"]))[:10] for r in self._table(entity).values() if r.get(b["attr"])
            )
            if len(dates) < 2:
                raise Reject("grounding", f"{tool.name}: fewer than two {entity.table} carry {b['attr']}")
            i = self.rng.randint(0, len(dates) // 2)
            args["start"], args["end"] = dates[i], dates[min(len(dates) - 1, i + max(1, len(dates) // 3))]
            sources["start"] = sources["end"] = "query"
            phrase = phrase or f"the {plural(entity.name)} {between(b['attr'], args['start'], args['end'])}"
        if incoming is None and (
            tool.op == "list" or (tool.op == "search" and b.get("query", "query") not in args)
        ):
            # a search sent without its text lists what its filters select (a supplier's items)
            filters = [
                p
                for p, a in b.get("filters", {}).items()
                if (x := entity.attribute(a)) is not None and x.type in ("enum", "bool")
            ]
            rows = [
                r
                for r in self._table(entity, self.initial).values()
                if all(r.get(a) == v for a, v in where.items())
            ]
            # a filter the tool requires (pets by status) says which records the list holds
            bound = {p: b.get("filters", {}).get(p, p) for p in args}
            required_filter = next((p for p, a in bound.items() if entity.attribute(a) is not None), None)
            if required_filter in owners:
                owner = owners[required_filter]
                phrase = in_role(entity, bound[required_filter], owner) or (
                    f"the {plural(entity.name)} of {owner}"  # "the items of supplier ..."
                )
                phrase = self._kept_to(tool, entity, where, phrase)
            elif required_filter is not None:
                value = args[required_filter]
                attr = bound[required_filter]
                one = value[0] if isinstance(value, list) else value
                phrase = singled_out(entity, {attr: one}, [attr], many=True)  # "the active tracks"
            elif filters and rows:
                p = self.rng.choice(filters)
                value = self.rng.choice(rows).get(b["filters"][p])
                if value is not None:
                    args[p], sources[p] = value, "query"
                    cues = [*where, b["filters"][p]]  # "the open tickets whose priority is high"
                    phrase = singled_out(entity, {**where, b["filters"][p]: value}, cues, many=True)
            if where and phrase is None:
                phrase = singled_out(entity, where, list(where), many=True)  # "the unacknowledged alerts"
            phrase = phrase or f"all {plural(entity.name)}"
        if tool.op == "search" and b.get("query", "query") in args:
            phrase = phrase or f"the {plural(entity.name)} matching {say(args[b.get('query', 'query')])}"
        if tool.kind == "write" and compound_of(tool) is not None:
            self._fit_compared(tool, args, sources, extra)
        return args, sources, focus, phrase, extra

    def _commanded(
        self,
        tool: ToolSpec,
        args: dict[str, Any],
        sources: dict[str, str],
        stated_at: Mapping[str, int],
        extra: list[str],
    ) -> None:
        """A command the record's lifecycle admits (`release` only an invoice on hold, `approve` only a
        pending request): a request never asks for a move that cannot be made."""
        command = (compound_of(tool) or {}).get("command") if tool.kind == "write" else None
        if command is None or command["param"] not in args:
            return
        param = command["param"]
        fits = admitted_commands(self.spec, self.live_state(), tool, args)
        if not fits:
            raise Reject("grounding", f"{tool.name}: the record's lifecycle admits no {param} it offers")
        if args[param] in fits:
            return
        args[param], sources[param] = self.rng.choice(sorted(fits)), "query"
        if param in stated_at:
            attr = self.spec.entity(tool.entity).attribute(tool.binding.get("fields", {}).get(param, param))
            if attr is not None:
                entity = self.spec.entity(tool.entity)
                extra[stated_at[param]] = stated(
                    attr.name, said(entity, attr.name, args[param]), kind_of(entity, attr.name)
                )

    def _in_lifecycle_order(
        self,
        tool: ToolSpec,
        args: dict[str, Any],
        stated_at: Mapping[str, int],
        extra: list[str],
        record: Mapping[str, Any],
    ) -> None:
        """The dates a request states for one record keep its lifecycle: a planned end after the
        planned start it gives, a new start before the end the record has (`in_lifecycle_order`);
        what moved is said anew."""
        entity = self.spec.entity(tool.entity)
        fields = tool.binding.get("fields", {})
        given = {fields.get(p, p): args[p] for p in stated_at}
        param_of = {fields.get(p, p): p for p in stated_at}
        for attr, value in in_lifecycle_order(entity, given, record, self.rng).items():
            p = param_of[attr]
            schema = tool.parameters.get("properties", {}).get(p, {})
            if not conforms(as_declared(value, schema), schema):
                continue
            args[p] = value
            extra[stated_at[p]] = stated(attr, said(entity, attr, value), kind_of(entity, attr))

    def _fit_compared(
        self, tool: ToolSpec, args: dict[str, Any], sources: Mapping[str, str], extra: list[str]
    ) -> None:
        """Where a compound tool's requirement compares a value the request states with another (a
        check-out after the check-in, a payment at most the reservation's total), bring the stated
        value within it and say the new one; a value from the state or a reference is left alone."""
        state = self.live_state()
        if requirement_problem(self.spec, state, tool, args) is None:
            return
        fitted = dict(args)
        fit_compared_values(self.spec, state, tool, fitted, dates=True)
        changed = {p for p in fitted if fitted[p] != args.get(p)}
        if not changed or any(sources.get(p) != "query" for p in changed):
            return
        fields, entity = tool.binding.get("fields", {}), self.spec.entity(tool.entity)
        for p in changed:
            field = fields.get(p, p)
            kind = kind_of(entity, field)
            said, now = stated(field, say(args[p], field), kind), stated(field, say(fitted[p], field), kind)
            extra[:] = [now if part == said else part for part in extra]
            args[p] = fitted[p]

    def _search_term(self, entity: EntitySpec, tool: ToolSpec) -> str | None:
        """A word a person would type to find a few records: a word of the text the search looks
        in (a surname, a company's distinctive word), never a filler word or a number that half the
        table's text contains ("All", "the"); None where every word finds more than three (six bills
        noted "Paid in full; receipt sent by e-mail." and no other)."""
        label = entity.label_attribute
        rows = [r for _k, r in sorted(self._table(entity, self.initial).items())]
        fields = tuple(tool.binding.get("text_fields", ())) or ((label.name,) if label else ())
        texts = [" ".join(str(r.get(f) or "") for f in fields) for r in rows]
        folded = [t.casefold() for t in texts]
        words_seen: list[str] = []
        for text in texts:
            for w in text.split():
                w = w.strip(".,;:()'\"")
                if len(w) >= 3 and w.isalpha() and w.casefold() not in _FILLER_WORDS and w not in words_seen:
                    words_seen.append(w)
        hits = {w: sum(w.casefold() in t for t in folded) for w in words_seen}
        return next((w for w in words_seen if 1 <= hits[w] <= 3), None)

    # -- chains, scattered reads and virtual nodes ---------------------------------------------

    def run_chain(self, chain: Sequence[str]) -> None:
        prev: Executed | None = None
        introduced: list[tuple[Executed, int]] = []  # a read and the sentence of its own that named it
        nodes: list[str] = []
        for pos, name in enumerate(chain):
            tool = self.spec.tool(name)
            incoming = self._incoming(prev, tool) if prev is not None else None
            viable = None
            if pos == 0 and len(chain) > 1:
                viable = self._leads_on(tool, self.spec.tool(chain[1]), goes_on=len(chain) > 2)
            args, sources, focus, phrase, extra = self.ground(tool, incoming, viable)
            step = self.call(tool, args, sources, focus, phrase)
            nodes.append(f"c{step.index}")
            if prev is not None:
                kind = next(
                    (
                        d["key"]
                        for d in [
                            {"key": k, **v}
                            for k, v in (self.graph.get_edge_data(prev.tool.name, name) or {}).items()
                        ]
                    ),
                    "parameter",
                )
                self.out.dag.link(f"c{prev.index}", f"c{step.index}", kind)
            self._describe_step(step, extra, last=pos == len(chain) - 1)
            if pos < len(chain) - 1 and (said := self._introduce(step)) is not None:
                introduced.append((step, said))
            prev = step
        for step, said in reversed(introduced):  # the last first: taking one back moves those after it
            self._drop_unused(step, said)
        self.out.dag.chains.append(nodes)

    def _drop_unused(self, step: Executed, clause: int) -> None:
        """Take back the sentence that introduced `step` when no later sentence goes on from it (the
        next step went on from something the request had already named: "the player reports of the
        new purchase's player" after "This is about the sanctions for the new purchase's player"): a
        sentence nothing refers to reads as a task left half-done."""
        noun = words(self.spec.entity(step.tool.entity).name)
        later = " ".join(self.out.clauses[clause + 1 :])
        if step.handle is None or step.handle in later or f"only such {noun}" in later:
            return
        if "query" in step.sources.values():
            return  # the sentence states what the read was asked with (a search word, a filter)
        del self.out.clauses[clause]
        self._marks.pop(step.index, None)
        self._marks = {i: (m - 1 if m > clause else m, n) for i, (m, n) in self._marks.items()}
        step.handle = None

    def _introduce(self, step: Executed) -> int | None:
        """Name the record (or the list) a chain goes on from once, so later steps can say "that
        <entity>" ("those <entities>") instead of repeating the whole description.

        A write has already named its record in its own sentence; a read gets a short sentence of
        its own. A later step uses the handle only while nothing else of the same kind has been
        mentioned since (`_handle`), so a reference never becomes ambiguous."""
        phrase = step.phrase
        if phrase is None or is_handle(phrase):
            return None
        entity = self.spec.entity(step.tool.entity)
        if step.focus is not None:
            noun, handle = words(entity.name), demonstrative(entity.name)
            role = _role(phrase)
            if role is not None and role != noun.casefold():
                # "the owner of the only such account" is "that owner" after, never "that sales user"
                noun, handle = role, f"that {role}"
        elif step.tool.op in ("list", "search", "range") and (
            " of " in phrase or "'s " in phrase or " the same " in phrase
        ):
            noun, handle = plural(entity.name), f"those {plural(entity.name)}"
        else:
            return None
        own = None
        if step.tool.kind != "write":
            own = len(self.out.clauses)
            self.out.clauses.append(context(self.wording, phrase))
        step.handle = handle
        self._marks[step.index] = (len(self.out.clauses), noun)
        return own

    def _handle(self, step: Executed) -> str | None:
        """`step.handle` while it still points at one thing: nothing else of its kind named since."""
        if step.handle is None or step.index not in self._marks:
            return None
        mark, noun = self._marks[step.index]
        since = " ".join(self.out.clauses[mark:]).casefold()
        noun = noun.casefold()
        word = step.handle.split()[0]
        return step.handle if since.count(noun) == since.count(f"{word} {noun}") else None

    def _output_for(self, tool: ToolSpec, key: str) -> Any:
        """What a call about one record returns, as far as the next step can use it, worked out from
        the live state: the record (an update or a transition hands back the changed record, whose
        key and references, all an edge carries, stay as they are); an overview adds the ids of the
        records under it. None for a tool whose output is not one of these."""
        state = self.live_state()
        record = (state.get(self.spec.entity(tool.entity).table) or {}).get(key)
        if not isinstance(record, dict):
            return None
        if tool.op in ("get", "lookup", "update", "transition"):
            return record
        if tool.op == "overview":
            related = {
                table: sorted(
                    k
                    for k, r in (state.get(table) or {}).items()
                    if isinstance(r, dict) and r.get(attr) == key
                )
                for table, attr in tool.binding.get("children", [])
            }
            return {"record": record, "related": related}
        return None

    def _leads_on(self, tool: ToolSpec, nxt: ToolSpec, *, goes_on: bool) -> Callable[[str], bool] | None:
        """For the tool that opens a chain: whether starting on a record lets the next step go through.

        The call's output is predicted from the state (`_output_for`) and handed to `_incoming`,
        the code that grounds the next step for real; then a write fed the record must admit it (the
        test `pick_record` applies to writes) and a list the chain goes on from must not come back
        empty. Most rejected candidates used to die exactly there, after a hardened state, a reset
        and a few calls. None when the opening tool's output cannot be predicted.
        """
        if tool.op not in ("get", "lookup", "overview", "update", "transition"):
            return None
        target = self.spec.entity(nxt.entity)
        fields = {**nxt.binding.get("fields", {}), **nxt.binding.get("filters", {})}

        def viable(key: str) -> bool:
            data = self._output_for(tool, key)
            if data is None:
                return True
            try:
                param, value, *_ = self._incoming(Executed(-1, tool, {}, {}, data, None, None), nxt)
            except Reject:
                return False
            rows = self.live_state().get(target.table) or {}
            if nxt.kind == "write" and param == nxt.binding.get("key"):
                record = rows.get(str(value))  # a table is keyed by text, a seed's id may be a number
                return isinstance(record, dict) and self._admits(nxt, record)
            if nxt.kind == "write" and not reference_admits(
                self.spec, self.live_state(), nxt, {param: value}, param
            ):
                return False
            if goes_on and nxt.op == "list":
                attr = fields.get(param, param)
                kept = {attr: value, **nxt.binding.get("where", {})}  # "the open ones" of that record
                return any(
                    isinstance(r, dict) and all(r.get(a) == v for a, v in kept.items()) for r in rows.values()
                )
            return True

        return viable

    def run_scattered(self, name: str) -> None:
        tool = self.spec.tool(name)
        args, sources, focus, phrase, extra = self.ground(tool, None)
        step = self.call(tool, args, sources, focus, phrase)
        self._describe_step(step, extra, last=True)

    def _acted_on(
        self, tool: ToolSpec, extra: list[str], args: Mapping[str, Any]
    ) -> tuple[str, str, list[str]] | None:
        """A seed's create named by what it does to the record it is for (`approveInvoice` makes an
        approval and leaves the invoice approved, `transferAsset` moves the asset): (its verb and that
        record, as said, the other details), so the request reads "Approve invoice INV-003, with ..."
        or "Transfer asset FA-729242 to location LOC-007" as a person would put it. None for any other
        tool, or where the record is not among the details."""
        found = compound_of(tool) if tool.origin == "seed" else None
        verb = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", tool.name).lower().split("_")[0]
        if found is None or not verb.isalpha():
            return None

        def part(param: str) -> str | None:
            labels = {field_label(param), words(param.removesuffix("_id")), self._ref_word(param)}
            return next((p for p in extra if p.partition(": ")[0] in labels), None)

        command = found.get("command")
        if command is not None and isinstance(args.get(command["param"]), str) and found.get("steps"):
            # `approveTimesheet(decision=reject)` rejects the timesheet: "Reject timesheet TS-004"
            ref, _, _ = str(found["steps"][0]["path"]).partition("->")
            owner, choice = part(ref), part(command["param"])
            target = self.spec.entity(tool.entity).attribute(ref)
            if owner is not None and target is not None and target.ref:
                said = owner.partition(": ")[2] or owner
                clause = command_clause(tool, self.spec.entity(target.ref), said, args[command["param"]])
                return clause, owner, [p for p in extra if p not in (owner, choice)]
        for step in found.get("steps", ()):
            ref, _, attr = str(step.get("path", "")).partition("->")
            value = step.get("value") or {}
            if step.get("kind") != "set" or "->" in attr or (owner := part(ref)) is None:
                continue
            said = owner.partition(": ")[2] or owner  # the record itself: "invoice INV-003"
            if isinstance(value.get("const"), str) and value["const"].startswith(verb.removesuffix("e")):
                return f"{verb} {said}", owner, [p for p in extra if p is not owner]  # approve -> approved
            where = part(str(value.get("path", "")))
            if where is not None:  # a transfer: its record goes where the tool sends it
                moved = f"{verb} {said} to {where.partition(': ')[2] or where}"
                return moved, owner, [p for p in extra if p not in (owner, where)]
        return None

    def _describe_step(self, step: Executed, extra: list[str], *, last: bool) -> None:
        tool, entity = step.tool, self.spec.entity(step.tool.entity)
        phrase = step.phrase or demonstrative(entity.name)
        op = tool.op
        choose = self.wording.choice
        if tool.kind == "write":
            if op == "create":
                step.focus = (entity.name, str((step.data or {}).get(entity.key)))
                step.phrase = f"the new {words(entity.name)}"
                acted = self._acted_on(tool, extra, step.args)
                if acted is not None:
                    wanted, owner, rest = acted
                    detail = _details(rest)
                    text = choose(
                        ("Please {a}{d}.", "{A}{d}, please.", "Could you {a}{d}?", "I need you to {a}{d}.")
                    )
                    tail = f", with {detail}" if detail else ""
                    self.out.clauses.append(text.format(a=wanted, A=wanted[:1].upper() + wanted[1:], d=tail))
                    mention = owner.partition(": ")[2] or owner
                    self.out.objectives.append(
                        {"step": step.index, "table": entity.table, "key": None, "mention": mention, "op": op}
                    )
                    return
                full, detail = new_record(words(entity.name), extra)
                text = choose(
                    (
                        "Please add a new {e} with {d}.",
                        "Create {a} with {d}.",
                        "I need a new {e} set up with {d}.",
                        "Register a new {e} with {d}.",
                        "Can you open a new {e}? It should have {d}.",
                    )
                    if detail
                    else (
                        "Please add a new {e}.",
                        "Create {a}.",
                        "I need a new {e} set up.",
                        "Register a new {e}.",
                        "Can you open a new {e}?",
                    )
                )
                self.out.clauses.append(text.format(e=full, a=article(full), d=detail))
                self.out.objectives.append(
                    {
                        "step": step.index,
                        "table": entity.table,
                        "key": None,
                        "mention": f"{words(entity.name)}",
                        "op": op,
                    }
                )
                return
            if step.focus is None:
                raise Reject("grounding", f"{tool.name} acts on no identified record")
            command = (compound_of(tool) or {}).get("command") if tool.origin == "seed" else None
            asked = [
                (field_label(tool.binding["fields"][p]), tool.binding["fields"][p], v)
                for p, v in step.args.items()
                if step.sources.get(p) == "query"
                and p in tool.binding.get("fields", {})
                and (command is None or p != command["param"])  # the move it asks for says it
            ]
            set_fields = [
                labelled(attr, said(entity, attr, v)) for _, attr, v in asked
            ]  # "its weight is 72.7 kg"
            # a reference the change sets from an earlier step is said as that record ("its plan is
            # that port-in's plan"): a request never moves a record somewhere it did not say
            carried = {
                words(self._ref_word(p))
                for p in step.args
                if p in tool.binding.get("fields", {}) and step.sources.get(p, "query") != "query"
            }
            for part in extra:
                label, sep, ref_phrase = part.partition(": ")
                if sep and label in carried:
                    set_fields.append((label, ref_phrase))
            flags = {label: v for label, _, v in asked if isinstance(v, bool)}
            person = is_person(entity)  # "make sure their phone is ...", never "its phone" of a patient
            its = listing([_its(f, v, flags, person=person) for f, v in set_fields])
            upper = phrase[:1].upper() + phrase[1:]
            operation = operation_clause(tool, entity, phrase) if op == "update" else None
            if command is not None and op == "update" and isinstance(step.args.get(command["param"]), str):
                operation = command_clause(tool, entity, phrase, step.args[command["param"]])
            if operation is not None:
                # a domain operation (end playback, pay a citation) is asked for as itself, not as an
                # edit of the fields it happens to take
                clause = operation[:1].upper() + operation[1:] + "."
                self.out.clauses.append(clause[:-1] + f", and make sure {its}." if its else clause)
            elif op == "update":
                frames = (
                    "Please update {p} so {its}.",
                    "{P} needs updating: {its} now.",
                    "Could you correct {p}? {Its_should}.",
                )
                # a yes/no setting is said as what the record is ("it is not finished"), never as a
                # field set "to no"
                text = choose(
                    frames if flags else ("Change the {d} on {p}.", "For {p}, set the {d}.", *frames)
                )
                detail = listing([f"{f} to {v}" for f, v in set_fields])
                should = listing([_its(f, v, flags, should=True, person=person) for f, v in set_fields])
                self.out.clauses.append(
                    text.format(
                        d=detail, p=phrase, P=upper, its=its, Its_should=should[:1].upper() + should[1:]
                    )
                )
            elif (held := self._held_operation(tool, phrase)) is not None:
                # a seed's tool that ends the record a parent holds is asked for as itself, of the
                # parent: "Turn off automatic payment for account 8260826998", "Record the return of
                # asset FA-599867"
                clause = held[:1].upper() + held[1:] + "."
                self.out.clauses.append(clause[:-1] + f", and make sure {its}." if its else clause)
                phrase = held_owner(tool, phrase) or phrase  # what the request names
            elif op == "transition":
                value = words(str(tool.binding["value"]))
                text = choose(
                    (
                        "Mark {p} as {v}.",
                        "Move {p} to {v}.",
                        "{P} should now be {v}.",
                        "Please set {p} to {v}.",
                        "{P} can be marked {v} now.",
                    )
                )
                clause = text.format(p=phrase, P=upper, v=value)
                self.out.clauses.append(clause[:-1] + f", and make sure {its}." if its else clause)
            elif op == "assign":
                moved = words(self._ref_word(tool.binding["attr"]))
                self.out.clauses.append(
                    choose(assign_wordings(moved)).format(p=phrase, P=upper, a=moved, t=extra[-1])
                )
            elif op == "delete":
                text = choose(
                    (
                        "Remove {p}.",
                        "Delete {p}; it is no longer needed.",
                        "Please take {p} out of the system.",
                        "{P} can go, so please delete it.",
                    )
                )
                self.out.clauses.append(text.format(p=phrase, P=upper))
            self.out.objectives.append(
                {"step": step.index, "table": entity.table, "key": step.focus[1], "mention": phrase, "op": op}
            )
            return
        if not last:
            return  # an identifying read: its phrase lives on in the next step's words
        self._report(step, phrase)

    def _held_operation(self, tool: ToolSpec, phrase: str) -> str | None:
        """A seed's tool that reaches the record a parent holds through the parent's id (binding
        `parent`), asked for by its description with the parent put in; None for any other tool."""
        owner = held_owner(tool, phrase)
        if tool.origin != "seed" or owner is None:
            return None
        return operation_clause(tool, self.spec.entity(tool.binding["parent"]["parent"]), owner)

    def _key(self, *candidates: str) -> str:
        """The first answer field name among `candidates` (words joined by `_`) that is free and
        spells no tool name or parameter key; a numbered one when none is."""
        taken = {r.field for r in self.out.reports}
        names = [k for k in (key_words(c) for c in candidates) if k]
        for name in names:
            if name not in taken and ("_" not in name or name not in self._code_words):
                return name
        base, n = names[0] if names else "answer", 2
        while f"{base}_{n}" in taken:
            n += 1
        return f"{base}_{n}"

    def _ask(self, reported: Reported, noun: str) -> None:
        self.out.reports.append(reported)
        self.out.clauses.append(ask(self.wording, noun, reported.field))

    def _report(self, step: Executed, phrase: str) -> None:
        tool, entity, data = step.tool, self.spec.entity(step.tool.entity), step.data
        node = f"c{step.index}"
        if tool.op in ("get", "lookup") or (tool.op == "overview" and self.rng.random() < 0.5):
            record = data.get("record", data) if isinstance(data, dict) else {}
            attrs = [
                a
                for a in entity.attributes
                if a.type in _SCALAR
                and a.name != entity.key
                and a.type != "ref"
                and record.get(a.name) is not None
                and not _stated(record[a.name], phrase)  # never "the name of the stop named 'Depot'"
            ]
            if not attrs:
                raise Reject("grounding", f"{tool.name} returns nothing reportable for {phrase}")
            attrs = [
                a
                for a in attrs
                if not self._asked_already(step, a.name)
                and not self._given_here(step, a.name, record[a.name])
            ]
            if not attrs:
                raise Reject("redundant", f"{tool.name}: every figure of {phrase} was asked for already")
            numeric = [a for a in attrs if a.type in _NUMERIC]
            a: AttributeSpec = self.rng.choice(numeric or attrs)
            noun = (
                flag_question(phrase, a.name)
                if a.type == "bool"
                else dated
                if (dated := when_done(phrase, a))
                else f"who {words(a.name.removesuffix('_by'))} {phrase}"
                if re.fullmatch(
                    r"[a-z]+ed_by|(written|done|made|run|taken|sent|paid|held|given|led)_by", a.name
                )
                else possessive(phrase, measured_label(a.name))  # "the runtime in seconds of ..."
            )
            # "current_score" is not asked for as "current_current_score"
            now = () if re.match(r"(current|latest|present)_", a.name) else (f"current {a.name}",)
            key = self._key(a.name, *now, f"{entity.name} {a.name}")
            self._ask(
                Reported(
                    node, key, record[a.name], noun, a.type in _NUMERIC, step.index, unit=f"attr:{a.name}"
                ),
                noun,
            )
        elif tool.op == "overview":
            counts = data.get("counts", {}) if isinstance(data, dict) else {}
            if not counts:
                raise Reject("grounding", f"{tool.name} shows no related records for {phrase}")
            table = self.rng.choice(sorted(counts))
            key = self._key(f"{table} count", f"linked {table}", f"{entity.name} {table}")
            self._ask(
                Reported(
                    node,
                    key,
                    counts[table],
                    f"the number of {words(table)} linked to {phrase}",
                    True,
                    step.index,
                    unit=f"count:{table}:linked to {entity.name}",
                ),
                f"how many {words(table)} are linked to {phrase}",
            )
        elif tool.op in ("list", "search", "range"):
            items = data.get("items", []) if isinstance(data, dict) else []
            unique = self._unique_filter(step, entity)
            if unique is not None:
                # "how many stores with the store ID 'STR-892867' there are" asks nothing: one, always
                raise Reject(
                    "redundant", f"{tool.name} is filtered by {unique}, which no two {entity.table} share"
                )
            subject = phrase.removeprefix("all ")
            listed = items if data.get("count") == len(items) else None
            key = self._key(f"{entity.name} count", f"{entity.table} found", f"matching {entity.table}")
            self._ask(
                Reported(
                    node,
                    key,
                    data.get("count"),
                    f"the number of {_no_article(subject)}",
                    True,
                    step.index,
                    listed,
                    subject,
                    unit=f"count:{entity.table}:{_counted_by(step)}",
                ),
                count_question(phrase),
            )
        elif tool.op == "aggregate":
            groups = data.get("groups", {}) if isinstance(data, dict) else {}
            if not groups:
                raise Reject("grounding", f"{tool.name} returned no groups")
            label = self.rng.choice(sorted(groups))
            by = str(step.args.get("group_by", ""))
            # "how many aircraft there are whose status is in service", never "how many aircrafts whose
            # status is 'in_service' there are"; the field grouped by is said, as the call takes it
            whose, question, named = group_question(entity, by, label)
            key = self._key(
                f"{plural(entity.name)} {named}",
                f"{entity.name} count by {by}",
                f"{plural(entity.name)} in group",
            )
            self._ask(
                Reported(
                    node,
                    key,
                    groups[label]["count"],
                    f"the number of {plural(entity.name)} {whose}",
                    True,
                    step.index,
                    unit=f"count:{entity.table}:{by}",
                ),  # fmt: skip
                question,
            )
        else:
            raise Reject("grounding", f"{tool.name} ({tool.op}) has no reportable output")

    def add_virtual(self, count: int, stack: bool) -> None:
        """Questions over the reported values, each one a user would ask about them: a total or a
        comparison of two figures of the same kind, whether a figure reaches a level, how many of
        the listed records have some property, which of them stands out. With `stack`, a later one
        may build on an earlier one's number. A question with nothing fitting to ask about is left
        out rather than made up of unrelated quantities."""
        used: set[tuple[str, ...]] = set()
        for n in range(count):
            pool = [
                r
                for r in self.out.reports
                if r.numeric and isinstance(r.value, (int, float)) and not isinstance(r.value, bool)
            ]
            listy = [r for r in self.out.reports if r.items]
            graph = self.out.dag.graph()
            inputs = {v.id: v.inputs for v in self.out.dag.virtual}

            def worked_from(node: str, inputs: dict[str, tuple[str, ...]] = inputs) -> set[str]:
                """A figure and the figures a question over figures was worked out from."""
                seen, todo = {node}, [node]
                while todo:
                    for i in inputs.get(todo.pop(), ()):
                        if i not in seen:
                            seen.add(i)
                            todo.append(i)
                return seen

            def apart(a: Reported, b: Reported, graph: nx.DiGraph = graph) -> bool:
                """Two figures that count or measure different things: neither is worked out from
                the other (a count of rejected approvals added to the count of all approvals is not),
                nor are both worked out from one figure (two counts taken over one list)."""
                if a.node not in graph or b.node not in graph:
                    return a.node != b.node
                if nx.has_path(graph, a.node, b.node) or nx.has_path(graph, b.node, a.node):
                    return False
                return not worked_from(a.node) & worked_from(b.node)

            pairs = [
                (a, b)
                for i, a in enumerate(pool)
                for b in pool[:i]
                if a.unit and a.unit == b.unit and ("pair", a.node, b.node) not in used and apart(a, b)
            ]
            options: list[str] = []
            if pairs:
                options += ["COMPUTE", "TRANSFORM", "LOGIC"]

            def separate(unit: str, pool: list[Reported] = pool) -> list[Reported]:
                """The figures of one kind that are each worked out apart from the others."""
                kept: list[Reported] = []
                for r in pool:
                    if r.unit == unit and all(apart(r, k) for k in kept):
                        kept.append(r)
                return kept

            same = sorted(u for u in {r.unit for r in pool if r.unit.startswith("count:")}
                          if len(separate(u)) >= 3 and ("agg", u) not in used)  # fmt: skip
            if same:
                options.append("AGGREGATE")
            if any(("check", r.node) not in used for r in pool):
                options.append("VALIDATE")
            if any(("list", r.node) not in used for r in listy):
                options += ["FILTER", "EXTRACT"]
            if not options:
                return
            if stack and n < count - 1:
                # keep the stack growing: only numeric results can feed the next virtual node
                options = [
                    o for o in options if o in ("COMPUTE", "TRANSFORM", "AGGREGATE", "FILTER")
                ] or options
            kind = self.rng.choice(options)
            made = self._virtual(f"v{n}", kind, pool, pairs, same, listy, used, separate)
            if made is None:
                continue
            node, noun, unit = made
            self.out.dag.add_virtual(node)
            numeric = isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
            self._ask(Reported(node.id, node.field, node.value, node.text, numeric, unit=unit), noun)

    def _typical(self, reported: Reported) -> int | float | None:
        """A round level in the middle of what a figure's attribute holds across its table at the
        start (credit scores around 640 -> 650; ratios around 0.37 -> 0.35), or None for counts,
        derived figures and attributes with fewer than three numeric values."""
        if not reported.unit.startswith("attr:") or reported.step is None:
            return None
        attr = reported.unit.split(":", 1)[1]
        table = self.spec.entity(self.out.calls[reported.step].tool.entity).table
        values = sorted(
            v[attr]
            for v in (self.initial.get(table) or {}).values()
            if isinstance(v, dict)
            and isinstance(v.get(attr), (int, float))
            and not isinstance(v.get(attr), bool)
            and math.isfinite(v[attr])
        )
        if len(values) < 3:
            return None
        middle = values[len(values) // 2]
        whole = all(isinstance(v, int) or float(v).is_integer() for v in values)
        if whole and abs(middle) < 20:
            return int(round(middle))
        if middle == 0:
            return None
        step = 10 ** math.floor(math.log10(abs(middle))) / 2
        level = round(middle / step) * step
        return int(level) if whole or step >= 1 else round(level, 6)

    def _virtual(
        self,
        vid: str,
        kind: str,
        pool: list[Reported],
        pairs: list[tuple[Reported, Reported]],
        same: list[str],
        listy: list[Reported],
        used: set[tuple[str, ...]],
        separate: Callable[[str], list[Reported]],
    ) -> tuple[VirtualNode, str, str] | None:
        """(node, how the request asks for it, its unit), or None when the pick has nothing to say."""
        if kind in ("COMPUTE", "TRANSFORM", "LOGIC"):
            # the newest pair first, and within it the deepest partner, so the join lengthens the path
            graph = self.out.dag.graph()
            depth = {n: len(nx.ancestors(graph, n)) for n in graph}
            a, b = max(pairs, key=lambda p: (pool.index(p[0]), depth.get(p[1].node, 0), p[1].node))
            used.add(("pair", a.node, b.node))
            what = a.unit.split(":")[1]
            if kind == "COMPUTE":
                text = f'the total of "{a.field}" and "{b.field}"'
                node = VirtualNode(
                    id=vid, type="COMPUTE", inputs=(a.node, b.node), field=self._key(f"total {what}"),
                    value=round(a.value + b.value, 2), text=text,
                )  # fmt: skip
                return node, f'the two figures in "{a.field}" and "{b.field}" added together', a.unit
            if kind == "TRANSFORM":
                text = f'"{a.field}" minus "{b.field}"'
                node = VirtualNode(
                    id=vid, type="TRANSFORM", inputs=(a.node, b.node), field=self._key(f"{what} gap"),
                    value=round(a.value - b.value, 2), text=text,
                )  # fmt: skip
                # a gap is not a figure to add to or compare with others ("the gap of a gap")
                return node, f'how far "{a.field}" is above "{b.field}" (negative if below)', ""
            text = f'whether "{a.field}" is greater than "{b.field}" (true or false)'
            node = VirtualNode(
                id=vid, type="LOGIC", inputs=(a.node, b.node), field=self._key(f"{a.field} is larger"),
                value=bool(a.value > b.value), text=text,
            )  # fmt: skip
            return node, text, ""
        if kind == "AGGREGATE":
            unit = same[0]
            counts = separate(unit)
            used.add(("agg", unit))
            fields = ", ".join(f'"{r.field}"' for r in counts[:-1]) + f' and "{counts[-1].field}"'
            node = VirtualNode(
                id=vid, type="AGGREGATE", inputs=tuple(r.node for r in counts),
                field=self._key(f"all {unit.split(':')[1]}"), value=sum(r.value for r in counts),
                text=f"the combined total of {fields}",
            )  # fmt: skip
            return node, f"the combined total of {fields}", unit
        if kind == "VALIDATE":
            open_ = [r for r in pool if ("check", r.node) not in used]
            a = open_[-1]
            used.add(("check", a.node))
            typical = self._typical(a)
            if typical is not None:
                threshold = typical  # the mark comes from the world (its records' middle), not the answer
            else:
                threshold = (
                    round(a.value)
                    if self.rng.random() < 0.5
                    else round(a.value) + self.rng.choice((-2, 1, 3))
                )
                threshold = round_figure(a.value, threshold)
            if isinstance(threshold, float) and threshold.is_integer():
                threshold = int(threshold)  # "10 is the line we work to", not "10.0 ..."
            if a.value >= 0:  # nobody asks whether a count or an amount is at least 0 or -2
                threshold = max(threshold, 1) if isinstance(threshold, int) else threshold
            # the figure as what it is ("whether the number of open fault reports is at least 8"), by
            # its answer field only where saying it would take a sentence of its own
            plain = '"' not in a.text and len(a.text.split()) <= 9
            # a figure named by a plural ("the active loops of that coordinator") takes a plural verb
            many = plain and is_plural(a.text.partition(" of ")[0].partition(" in ")[0])  # never "minutes"
            text = self.wording.choice(
                (
                    f"whether {{f}} {'are' if many else 'is'} at least {{t}} (true or false)",
                    f"whether {{f}} {'reach' if many else 'reaches'} {{t}} (true or false)",
                    f"if {{f}} {'come' if many else 'comes'} to {{t}} or more (true or false)",
                    f"whether {{f}} {'are' if many else 'is'} {{t}} or higher (true or false)",
                )
            ).format(f=a.text if plain else f'"{a.field}"', t=written_figure(threshold))
            node = VirtualNode(
                id=vid, type="VALIDATE", inputs=(a.node,), field=self._key(f"{a.field} at least {str(threshold).replace('-', 'minus ').replace('.', ' ')}"),
                value=bool(a.value >= threshold), text=text,
            )  # fmt: skip
            # a person checking a figure against a level says why the level matters to them; "at
            # least 1" needs no reason (is there any at all?)
            if threshold != 1:
                self.out.clauses.append(self.wording.choice(_WHY_A_LEVEL).format(t=written_figure(threshold)))
            return node, text, ""
        source = self.rng.choice([r for r in listy if ("list", r.node) not in used])
        items = source.items or []
        entity = self.spec.entity(self.out.calls[source.step or 0].tool.entity)
        counted = f'the {plural(entity.name)} counted in "{source.field}"'
        if kind == "FILTER":
            step = self.out.calls[source.step or 0]
            used_filters = set(step.tool.binding.get("filters", {}).values()) & {
                step.tool.binding.get("filters", {}).get(p) for p in step.args
            }
            # a filter on the attribute the list was already narrowed by would count everything
            splits = [
                (attr, v)
                for attr in entity.attributes
                if attr.type in ("enum", "bool") and attr.name not in used_filters
                for v in sorted({str(i.get(attr.name)) for i in items})
                if 0 < sum(1 for i in items if str(i.get(attr.name)) == v) < len(items)
            ]
            if not splits:
                return None
            split, shown = self.rng.choice(splits)
            used.add(("list", source.node))
            value = next(i.get(split.name) for i in items if str(i.get(split.name)) == shown)
            hits = [i for i in items if i.get(split.name) == value]
            text = f"how many of {counted} {predicate(entity, split.name, value)}"
            node = VirtualNode(
                id=vid, type="FILTER", inputs=(source.node,),
                field=self._key(*_filtered_count_keys(entity.name, split.name, value)),
                value=len(hits), text=text,
            )  # fmt: skip
            return node, text, f"count:{entity.table}:{split.name}"
        label = entity.label_attribute
        picked = self._pick_item(entity, items, by_name=False)  # the name is what it asks for
        if label is None or picked is None or not items or picked[1].startswith("("):
            return None
        used.add(("list", source.node))
        index, how = picked
        text = f"the {words(label.name)} of {_whichever(counted, how)}"
        node = VirtualNode(
            id=vid, type="EXTRACT", inputs=(source.node,),
            field=self._key(f"top {entity.name}", f"top {entity.name} {label.name}"),
            value=items[index].get(label.name), text=text,
        )  # fmt: skip
        return node, text, ""

    def recheck_answers(self) -> None:
        """Every reported read gives the same value on the end state, or the task is order-dependent."""
        steps = [self.out.calls[r.step] for r in self.out.reports if r.step is not None]
        results = self.session.call_many([(step.tool.name, step.args) for step in steps])  # one round trip
        for step, again in zip(steps, results, strict=True):
            if not again.ok or again.data != step.data:
                raise Reject(
                    "consistency",
                    f"the answer from {step.tool.name} changes with the writes in the task; it would depend on call order",
                )


def run_group(
    gen: Generator,
    group: ToolGroup,
    *,
    virtual: int,
    stack: bool,
    spares: Sequence[Sequence[str]] = (),
    min_chains: int = 1,
) -> Generated:
    """Run a group's chains (a chain that fails is rolled back and a spare chain tried in its place),
    then its scattered reads (a failing one is dropped), then the virtual nodes.

    Rolling back one chain instead of discarding the whole group matters for long groups: every call
    of every chain must succeed, so the odds of a clean run fall with each chain added.
    """
    wanted = len(group.chains)
    needed = max(1, min_chains)
    failures: list[Reject] = []
    candidates = [*group.chains, *spares]
    for i, chain in enumerate(candidates):
        if len(gen.out.chains_run) >= wanted:
            break
        if set(chain) & {t for c in gen.out.chains_run for t in c}:
            continue
        # if even every remaining chain could not make up for this one, its failure ends the group
        recoverable = len(gen.out.chains_run) + len(candidates) - i - 1 >= needed
        if not gen.attempt(partial(gen.run_chain, chain), failures, restore=recoverable):
            if not recoverable:
                break  # the group is lost whatever the other chains do; the check below says why
            continue
        gen.out.chains_run.append(list(chain))
    if len(gen.out.chains_run) < needed:
        raise failures[0] if failures else Reject("grounding", "no chain of the group could run")
    for name in group.scattered:
        gen.attempt(partial(gen.run_scattered, name), failures)
    gen.add_virtual(virtual, stack)
    gen.out.dag.check()
    return gen.out
