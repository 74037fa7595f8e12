"""The request parser: a request cut into clauses, each a write step or a requested answer field."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from agentomnia.omniabench.heuristic.tools import ToolView
from agentomnia.omniabench.heuristic.words import QUOTED, same_stem, singular, words_of
from agentomnia.trajectories.evidence import ID_PATTERN

# Words that may open an imperative sentence before its verb ("Please now approve ...").
_LEAD_WORDS = frozenset({"please", "kindly", "now", "also", "then", "and", "just", "can", "could", "you"})
# A reference using one of these words picks a record by a property, an order or a count: the
# heuristic does not evaluate such descriptions, so the reference stays unresolved.
DESCRIPTIVE = frozenset(
    {"only", "with", "among", "matching", "whose", "latest", "earliest", "highest", "lowest", "every", "each",
     "all", "any", "which", "that", "whether", "sum", "combined", "difference", "minus", "how"}
)  # fmt: skip
# Imperatives that ask for information in free text ("Tell me the amount"); a question word counts
# only in a sentence that ends with a question mark ("Here is what I need done" asks nothing).
_ASK_VERBS = frozenset({"tell", "give", "show", "list", "report"})
MASKED = re.compile(r"qv(\d+)qv")  # a masked quoted string: one word, never an id, date or number
# "tag TAG-006 (Summit Tag 6)"; a quoted field key in parentheses after an id is no label
_ID_NAME = re.compile(rf"({ID_PATTERN.pattern})\s*\((?!qv\d+qv\))[^()]*\)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"“']|qv\d)")
_ANSWER_FIELD = re.compile(r"qv(\d+)qv\s*:\s*")
_SETTING = r"(?:,\s*setting the\s+(?P<sets>.+))?"
_STATE = r"(?P<value>[a-z][a-z0-9_ ]{0,40}?)"
_CLAUSES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (op, re.compile(pattern, re.IGNORECASE))
    for op, pattern in (
        ("create", r"^(?:please\s+)?(?:add|create|register|open|log|file)\s+(?:a|an)\s+(?:new\s+)?"
                   r"(?P<entity>[a-z0-9 &/-]+?)(?:\s+record)?"
                   r"(?:\s*\((?P<paren>.*)\)|\s*:\s*(?P<colon>.*)|\s+with\s+(?P<with>.*))?$"),
        ("delete", r"^(?:please\s+)?(?:remove|delete)\s+(?P<subject>.+?)(?:;\s*it is no longer needed)?$"),
        ("delete", r"^(?:please\s+)?take\s+(?P<subject>.+?)\s+out of the system$"),
        ("assign", r"^(?:please\s+)?reassign\s+(?P<subject>.+?)\s+so its\s+(?P<attr>.+?)\s+is\s+"
                   r"(?P<target>.+)$"),
        ("assign", r"^(?:please\s+)?point the\s+(?P<attr>.+?)\s+of\s+(?P<subject>.+?)\s+(?:to|at)\s+"
                   r"(?P<target>.+)$"),
        ("transition", rf"^(?:please\s+)?mark\s+(?P<subject>.+?)\s+as\s+{_STATE}{_SETTING}$"),
        ("transition", rf"^(?:please\s+)?move\s+(?P<subject>.+?)\s+to\s+{_STATE}{_SETTING}$"),
        ("transition", rf"^(?P<subject>.+?)\s+should now be\s+{_STATE}{_SETTING}$"),
        ("update", r"^(?:please\s+)?change the\s+(?P<sets>.+\s+to\s+\S+)\s+(?:of|on|for)\s+(?P<subject>.+)$"),
        ("update", r"^for\s+(?P<subject>.+?),\s*set the\s+(?P<sets>.+)$"),
        ("update", r"^(?:please\s+)?update\s+(?P<subject>.+?):\s*(?P<sets>.+)$"),
    )
)  # fmt: skip


@dataclass(frozen=True)
class Ref:
    """How a phrase points at a record or a value: `id` (spelled out), `new` (created by an earlier
    step), `attr` (field `words` of the record `inner` points at), `named` (a record by its label),
    or `opaque` (a description the heuristic does not evaluate)."""

    kind: str
    text: str
    words: tuple[str, ...] = ()
    value: str = ""
    inner: tuple[Ref, ...] = ()


def _resolve_that(text: str) -> str:
    """ "that <kind>" replaced by the record of that kind last named by its id ("Move alert delivery
    AL4-013 to failed. Mark that alert delivery as ..." -> "... Mark the alert delivery AL4-013 as ...");
    a "that <kind>" with no such record before it stays as written."""
    named: dict[str, str] = {}
    out: list[str] = []
    pos = 0
    pattern = re.compile(
        rf"\b(?P<that>that\s+(?P<kind>[a-z]+(?:\s+[a-z]+){{0,2}}))\b|(?P<id>{ID_PATTERN.pattern})"
    )
    for m in pattern.finditer(text):
        if m.group("id"):
            before = words_of(text[max(0, m.start() - 40) : m.start()])
            for n in (1, 2, 3):
                if len(before) >= n:
                    named[" ".join(before[-n:])] = f"the {' '.join(before[-n:])} {m.group('id')}"
            continue
        kind = m.group("kind").split()
        for n in range(len(kind), 0, -1):  # the longest kind named before ("that alert delivery's")
            key = " ".join(kind[:n])
            if key in named:
                out.append(text[pos : m.start()] + named[key])
                pos = m.start() + len("that ") + len(key)
                break
    return "".join(out) + text[pos:]


def parse_ref(text: str, quoted: Sequence[str]) -> tuple[Ref, ...]:
    """The readings of a reference phrase, most likely first (several when "of" could split it
    more than one way, as in "the date of birth of patient PAT-001"); a possessive ("order
    ORD-1's customer") reads as "the customer of order ORD-1"."""
    phrase = _of_form(text.strip().rstrip("."))
    lowered = phrase.casefold()
    spelled = ID_PATTERN.fullmatch(phrase.split()[-1]) if phrase.split() else None
    if spelled and not (set(words_of(lowered)) & DESCRIPTIVE) and " of " not in f" {lowered} ":
        return (Ref("id", phrase, value=spelled.group(0)),)
    named = re.fullmatch(r"(?:the\s+)?(?P<e>[a-z0-9 ]+?)\s+(?:named|called)\s+qv(?P<q>\d+)qv", lowered)
    if named and " of " not in f" {named.group('e')} " and int(named.group("q")) < len(quoted):
        return (Ref("named", phrase, tuple(words_of(named.group("e"))), quoted[int(named.group("q"))]),)
    if set(words_of(lowered)) & DESCRIPTIVE:
        return (Ref("opaque", phrase),)
    new = re.fullmatch(r"(?:the\s+)?new\s+(?P<e>[a-z0-9 ]+)", lowered)
    if new:
        return (Ref("new", phrase, tuple(words_of(new.group("e")))),)
    readings: list[Ref] = []
    if lowered.startswith("the "):
        body = phrase[4:]
        for match in re.finditer(r"\s+of\s+", body):
            attr, rest = body[: match.start()], body[match.end() :]
            inner = tuple(r for r in parse_ref(rest, quoted) if r.kind != "opaque")
            if inner and words_of(attr):
                readings.append(Ref("attr", phrase, tuple(words_of(attr)), inner=inner))
    return tuple(readings) or (Ref("opaque", phrase),)


@dataclass(frozen=True)
class Step:
    """One write the request asks for, in request order."""

    key: str  # the clause text: stable across turns, so progress survives a user's follow-up
    op: str  # create | delete | assign | transition | update | verb
    text: str  # the clause with its quoted strings restored
    subject: tuple[Ref, ...] = ()
    entity: tuple[str, ...] = ()  # create: the kind of record made
    pairs: tuple[tuple[tuple[str, ...], str], ...] = ()  # (field words, value phrase)
    target: tuple[str, ...] = ()  # transition: the state to move to
    verbs: tuple[str, ...] = ()  # verb: the write tools the sentence names


@dataclass(frozen=True)
class AnswerField:
    name: str
    text: str  # the masked description ("the number of the routes of driver DRI-005")


@dataclass(frozen=True)
class Plan:
    request: str
    quoted: tuple[str, ...]
    steps: tuple[Step, ...]
    fields: tuple[AnswerField, ...]
    questions: bool  # the request asks something in free text (no JSON spec)


def mask_quotes(text: str) -> tuple[str, list[str]]:
    quoted: list[str] = []

    def token(match: re.Match[str]) -> str:
        quoted.append(next(g for g in match.groups() if g is not None))
        return f"qv{len(quoted) - 1}qv"

    return QUOTED.sub(token, text), quoted


def unmask(text: str, quoted: Sequence[str]) -> str:
    return MASKED.sub(lambda m: f"'{quoted[int(m.group(1))]}'", text)


def _detail_pairs(details: str) -> list[tuple[tuple[str, ...], str]]:
    """`tag: the trigger tag of interlock INT-004; level qv0qv; limit 325.36` -> (field, value) pairs."""
    pairs: list[tuple[tuple[str, ...], str]] = []
    for part in re.split(r"\s*;\s*", details.strip()):
        part = part.strip().rstrip(".")
        if not part:
            continue
        if ":" in part:
            label, value = part.split(":", 1)
        else:
            label, _, value = part.rpartition(" ")
        if words_of(label) and value.strip():
            pairs.append((tuple(words_of(label)), value.strip()))
    return pairs


def _set_pairs(sets: str) -> list[tuple[tuple[str, ...], str]]:
    """`severity to qv0qv and the impact description to qv1qv` -> (field, value) pairs."""
    pairs: list[tuple[tuple[str, ...], str]] = []
    for part in re.split(r"\s+and\s+(?:the\s+)?", sets.strip().rstrip(".")):
        label, sep, value = part.rpartition(" to ")
        if sep and words_of(label) and value.strip():
            pairs.append((tuple(words_of(label)), value.strip()))
    return pairs


def _imperative_verbs(sentence: str, writes: Sequence[ToolView]) -> tuple[str, ...]:
    """Write tools whose verb opens the sentence ("Please approve claim ..."): a verb deeper in a
    sentence ("a claim was filed on ...") describes the past, not an instruction."""
    words = words_of(sentence)
    while words and words[0] in _LEAD_WORDS:
        words = words[1:]
    head = words[:1]
    return tuple(t.name for t in writes if t.verb and any(same_stem(t.verb, w) for w in head))


def parse_request(request: str, writes: Sequence[ToolView] = ()) -> Plan:
    """Steps, answer fields and whether a free-text question is asked, from the user's words."""
    masked, quoted = mask_quotes(request)
    masked = _resolve_that(_ID_NAME.sub(r"\1", masked))
    steps: list[Step] = []
    fields: list[AnswerField] = []
    questions = False
    previous = ""
    for raw in _SENTENCE_END.split(masked.replace("\n", " ")):
        sentence = raw.strip()
        if not sentence:
            continue
        spec = list(_ANSWER_FIELD.finditer(sentence))
        named = [m for m in spec if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", quoted[int(m.group(1))])]
        if named:
            for m, nxt in itertools.zip_longest(named, named[1:]):
                end = nxt.start() if nxt is not None else len(sentence)
                text = sentence[m.end() : end].strip().rstrip(";.").strip()
                fields.append(AnswerField(quoted[int(m.group(1))], text))
            continue
        asked = _asked_field(sentence, quoted, request, previous)
        previous = sentence
        if asked is not None:
            fields.append(asked)
            continue
        clause = sentence.rstrip(".!").strip()
        step = _step_of(clause, quoted, writes)
        if step is not None:
            steps.append(step)
        elif clause.endswith("?") or set(words_of(clause)[:3]) & _ASK_VERBS:  # "Either way, tell me ..."
            questions = True
    if not steps and not fields:
        questions = True
    return Plan(request, tuple(quoted), tuple(steps), tuple(fields), questions)


# Words around a field a sentence asks for ("Tell me X as "k"", "Let me know X ("k")"): what is
# left once they are gone is the description of the value.
_ASK_LEAD = re.compile(
    r"^(?:(?:also|please|and|now|then|so)\s+)*(?:could you\s+|can you\s+|i'd like to\s+|i would like to\s+)?"
    r"(?:tell me|let me know|find out|know|check|i need|put|work out|read off|what is|what are|what's|give me|report|should be)\s+",
    re.IGNORECASE,
)
_ASK_TAIL = re.compile(
    r"(?:[\s(;,]+(?:as|under|in|for|call it|answer under|and give it as|use|for it|for me|should be))*[\s()?.!;,]*$",
    re.IGNORECASE,
)


def _asked_field(
    sentence: str, quoted: Sequence[str], request: str, previous: str = ""
) -> AnswerField | None:
    """A sentence that asks for one field by its key in double quotes, anywhere in the sentence,
    with the rest of the sentence describing the value; counts asked as questions ("how many Xs
    there are", "how many Xs R has") read as "the number of ...", a possessive ("R's A") as "the A of R"."""
    keys = [
        m
        for m in MASKED.finditer(sentence)
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", quoted[int(m.group(1))])
        and f'"{quoted[int(m.group(1))]}"' in request
    ]
    if len(keys) != 1:
        return None
    key = keys[0]
    name = quoted[int(key.group(1))]
    before, after = sentence[: key.start()].strip(), sentence[key.end() :].strip()
    text = before.split(";")[0] if ";" in before else f"{before} {after}".strip()
    text = _ASK_LEAD.sub("", _ASK_TAIL.sub("", text).strip()).strip()
    if re.fullmatch(r"(?:call it|answer|answer under|name it)?", text, re.IGNORECASE) and previous.endswith(
        "?"
    ):
        text = _ASK_LEAD.sub("", previous.rstrip("?").strip()).strip()  # "What is X? Call it "k"."
    if not text or "json" in text.casefold():  # the format sentence names a key, it asks nothing
        return None
    linked = re.fullmatch(r"how many (?P<what>.+?) are linked to (?P<ref>.+)", text, re.IGNORECASE)
    count = _count_question(text)
    if linked:
        text = f"the number of {linked.group('what')} linked to {_of_form(linked.group('ref'))}"
    elif count:
        what, owner = count
        text = f"the number of {what}" + (f" of {_of_form(owner)}" if owner else "")
    else:
        text = _of_form(text)
    return AnswerField(name, text)


def _count_question(text: str) -> tuple[str, str] | None:
    """("claims", "the shipment SH2-003") for "how many claims the shipment SH2-003 has", ("claims", "")
    for "how many claims there are"; None for anything else. The owner is the shortest tail that
    starts like a record ("that", "the", "those", "whichever")."""
    m = re.fullmatch(r"how many (?P<rest>.+?)(?P<end> there are(?: in total)?| has)", text, re.IGNORECASE)
    if m is None:
        return None
    rest = m.group("rest").split()
    if m.group("end") != " has":
        return " ".join(rest), ""
    for i in range(1, len(rest)):
        owner = rest[i:]
        if owner[0] in ("that", "the", "those", "whichever"):
            return " ".join(rest[:i]), " ".join(owner)
    return None


def _of_form(phrase: str) -> str:
    """A possessive said with "of": "that order's customer's name" -> "the name of the customer of
    that order"."""
    parts = phrase.split("'s ")
    if len(parts) == 1:
        return phrase
    nouns = [p.strip().removeprefix("the ") for p in reversed(parts[1:])]
    return " of ".join(f"the {n}" for n in nouns) + f" of {parts[0].strip()}"


def _step_of(clause: str, quoted: Sequence[str], writes: Sequence[ToolView]) -> Step | None:
    text = unmask(clause, quoted)
    for op, pattern in _CLAUSES:
        m = pattern.match(clause)
        if m is None:
            continue
        groups = {k: v for k, v in m.groupdict().items() if v is not None}
        subject = parse_ref(groups["subject"], quoted) if "subject" in groups else ()
        if op == "create":
            details = groups.get("paren") or groups.get("colon") or groups.get("with") or ""
            entity = tuple(singular(w) for w in words_of(groups["entity"]))
            return Step(clause, op, text, entity=entity, pairs=tuple(_detail_pairs(details)))
        if op == "assign":
            pairs = ((tuple(words_of(groups["attr"])), groups["target"]),)
            return Step(clause, op, text, subject=subject, pairs=pairs)
        if op == "transition":
            sets = tuple(_set_pairs(groups["sets"])) if "sets" in groups else ()
            target = tuple(words_of(groups["value"]))
            return Step(clause, op, text, subject=subject, pairs=sets, target=target)
        if op == "update":
            return Step(clause, op, text, subject=subject, pairs=tuple(_set_pairs(groups["sets"])))
        return Step(clause, op, text, subject=subject)
    verbs = _imperative_verbs(clause, writes)
    if verbs:
        return Step(clause, "verb", text, verbs=verbs)
    return None
