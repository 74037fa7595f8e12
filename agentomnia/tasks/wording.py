"""How task requests read: the voice they open in, and four numbers that measure them.

A request opens as its user would: a consumer about their own things, a business user about their
customers and shop, an operations person about the team's queue (`opening`, keyed by the task's
split). Every synthesizer (DAG, program) uses the same voices.

A request built from chained references ("the amount of the invoice of the vendor of the order")
and a handful of fixed sentence frames reads as machine text, and a parser keyed to those frames
can solve tasks without understanding them. These metrics make that visible over a round's queries:

    m = query_metrics([t.query for t in tasks])
    m["chained_of_share"], m["mean_sentence_words"], m["distinct_trigram_share"]

- `chained_of_share`: the share of sentences with a clause (a stretch between , ; : ( ) — and
  sentence ends) that holds three or more "of the"; such a clause is a chain of references.
- `stacked_possessive_share`: the share of sentences with a clause where one possessive is stacked
  on another within a few words ("that cash count's store's customer returns"), the same chain said
  the other way round.
- `mean_sentence_words`: words per sentence (a word is a run of letters or digits; a quoted value
  counts as the words in it).
- `distinct_trigram_share`: distinct word 3-grams over all word 3-grams of all queries (3-grams
  never span two queries); 1.0 means no three-word sequence repeats anywhere in the round.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from typing import Any

# Openings by who writes: toc a consumer of a service ("my food delivery account"), tob someone in
# a job ("as a pharmacist"), toe someone doing a kind of office work ("meeting scheduling").
_VOICES: dict[str, tuple[str, ...]] = {
    "toc": (
        "I'm trying to get my {domain} things in order.",
        "Can you help me with my {domain} account?",
        "I've got a few {domain} things I keep putting off.",
        "My {domain} records need some attention.",
        "Could you sort out a couple of {domain} things for me?",
    ),
    "tob": (
        "I work as {a} {domain} and need a hand today.",
        "I'm {a} {domain}, and a few things need doing before lunch.",
        "{A} {domain} here, catching up on admin.",
        "As {a} {domain} I have a few updates to get through today.",
        "Busy day for me as {a} {domain}; can you take a few of these off my plate?",
    ),
    "toe": (
        "I'm handling {domain} for the team this week, and a few items are waiting.",
        "Part of my job is {domain}, and today's queue is full.",
        "Our team lead asked me to sort out some {domain} work.",
        "A few {domain} tasks landed on my desk this morning.",
        "I'm catching up on {domain} for the company.",
    ),
}
# A job named by its field rather than by the person ("Game Operations", "Property Management"): the
# writer works in it ("as a game operations" is not something anyone says).
_FIELD: tuple[str, ...] = (
    "I work in {domain} and need a hand today.",
    "I'm on the {domain} team, and a few things need doing before lunch.",
    "Catching up on {domain} admin today.",
    "I handle {domain} at work and have a few updates to get through today.",
    "Busy day for me in {domain}; can you take a few of these off my plate?",
)
_FIELD_INDIRECT: tuple[str, ...] = (
    "Our {domain} records have got messy and I'd like them straightened out.",
    "I work in {domain} and need my data cleaned up before the weekly review.",
    "I'm cleaning up after a busy week in {domain}.",
)
# the last word of a job title that names a person (besides the -er, -or, -ist, ... endings)
_PERSON_WORDS = frozenset({
    "architect", "guide", "pilot", "coach", "actuary", "guard", "staff", "chef", "nurse", "clerk", "agent",
    "analyst", "partner", "creative", "auditor", "physician", "veterinarian", "technician", "artist",
    "attendant", "receptionist", "producer", "director", "dispatcher",
})  # fmt: skip
_PERSON_ENDINGS = ("er", "or", "ist", "ant", "ian", "ee", "eer", "ess", "ent")


def names_a_person(title: str) -> bool:
    """Whether a job title names the person doing it ("Pharmacist", "Event Planner"), not its field
    ("Game Operations", "Property Management", "Cybersecurity")."""
    last = (title.split() or [""])[-1].lower().split("/")[-1]
    return last in _PERSON_WORDS or (last.endswith(_PERSON_ENDINGS) and not last.endswith("ment"))


_INDIRECT: dict[str, tuple[str, ...]] = {
    "toc": (
        "Things in my {domain} account have got messy and I'd like them straightened out.",
        "My {domain} data needs some attention before the weekend.",
        "Some of my {domain} records are out of date, and I'd like them fixed.",
    ),
    "tob": (
        "My records as {a} {domain} have got messy and I'd like them straightened out.",
        "As {a} {domain} I need my data cleaned up before the weekly review.",
        "I'm cleaning up after a busy week as {a} {domain}.",
    ),
    "toe": (
        "Our {domain} records have got messy and I'd like them straightened out.",
        "The {domain} data needs some attention before the weekly review.",
        "I'm cleaning up after a busy week of {domain}.",
    ),
}


def _words(domain: str) -> str:
    """A taxonomy name as it reads mid-sentence: lower case, but acronyms kept (IP, HR, CRM)."""
    return " ".join(w if len(w) > 1 and w.isupper() else w.lower() for w in domain.split())


def opening(rng: random.Random, split: str, domain: str, *, indirect: bool = False) -> str:
    """The first sentence of a request, in the voice of the split's user (`indirect`: a vaguer goal)."""
    options = (_INDIRECT if indirect else _VOICES).get(split) or _VOICES["tob"]
    if options in (_VOICES["tob"], _INDIRECT["tob"]) and not names_a_person(domain):
        options = _FIELD_INDIRECT if indirect else _FIELD
    words = _words(domain)
    if words.endswith(" staff") and options not in (_FIELD, _FIELD_INDIRECT):
        words += " member"  # one person of a staff: "a housekeeping staff member"
    article = "an" if words[:1].lower() in tuple("aeiou") else "a"
    text = options[rng.randrange(len(options))].format(domain=words, a=article, A=article.capitalize())
    return text[:1].upper() + text[1:]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'“(])")
_CLAUSE_BREAK = re.compile(r"[,;:()\u2014]|\s-\s")
_WORD = re.compile(r"[A-Za-z0-9]+(?:'[a-z]+)?")
_OF_THE = re.compile(r"\bof\s+the\b", re.IGNORECASE)
# a possessive, then at most three words, then another: "X's store's", "X's assigned to's"
_STACKED = re.compile(r"\w's\s+(?:[\w-]+\s+){0,3}?[\w-]+'s\s")

#: a clause with at least this many "of the" counts as a chain of references
CHAIN_MIN = 3


def sentences(text: str) -> list[str]:
    """The sentences of a request: split after . ! ? where the next one starts (a decimal point
    or a period inside a word never ends one)."""
    return [s.strip() for s in _SENTENCE_END.split(" ".join(text.split())) if s.strip()]


# an aside a request does not repeat: "(e.g. while on holiday)", ", e.g. one over the limit"
_ASIDE = re.compile(
    r"\s*\([^()]*\)|,?\s+\b(?:e\.g\.|i\.e\.|for example|for instance)[^.;:!?()]*", re.IGNORECASE
)


def lead_clause(description: str) -> str:
    """A description's first clause without its asides and final stop: "Disable every enabled
    automation that runs a scene (e.g. while on holiday). ..." -> "Disable every enabled automation
    that runs a scene"; a period inside "e.g." ends nothing."""
    text = _ASIDE.sub("", " ".join(description.split()))
    return re.split(r"(?<=[.;:!?])\s|;", text.strip())[0].strip().rstrip(".;:!?").strip()


def sentence_words(sentence: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(sentence)]


def chained_of(sentence: str) -> int:
    """The most "of the" any one clause of the sentence holds."""
    return max((len(_OF_THE.findall(c)) for c in _CLAUSE_BREAK.split(sentence)), default=0)


def stacked_possessive(sentence: str) -> bool:
    """Whether a clause of the sentence stacks one possessive on another."""
    return any(_STACKED.search(c + " ") for c in _CLAUSE_BREAK.split(sentence))


def query_metrics(queries: Iterable[str]) -> dict[str, Any]:
    """Wording metrics over a round's queries (see the module docstring); zeros for no queries."""
    texts = [q for q in queries if q and q.strip()]
    split = [sentences(q) for q in texts]
    flat = [s for ss in split for s in ss]
    lengths = [len(sentence_words(s)) for s in flat]
    chained = sum(1 for s in flat if chained_of(s) >= CHAIN_MIN)
    stacked = sum(1 for s in flat if stacked_possessive(s))
    grams: list[tuple[str, ...]] = []
    for q in texts:
        w = sentence_words(q)
        grams += [tuple(w[i : i + 3]) for i in range(len(w) - 2)]
    return {
        "queries": len(texts),
        "sentences": len(flat),
        "chained_of_sentences": chained,
        "chained_of_share": round(chained / len(flat), 4) if flat else 0.0,
        "stacked_possessive_sentences": stacked,
        "stacked_possessive_share": round(stacked / len(flat), 4) if flat else 0.0,
        "mean_sentence_words": round(sum(lengths) / len(lengths), 2) if lengths else 0.0,
        "max_sentence_words": max(lengths, default=0),
        "trigrams": len(grams),
        "distinct_trigrams": len(set(grams)),
        "distinct_trigram_share": round(len(set(grams)) / len(grams), 4) if grams else 0.0,
    }


# -- the model's rewording (llm mode) ---------------------------------------------------------------

_NUMBER = re.compile(r"(?<![\w.])\d(?:[\d,]*\d)?(?:\.\d+)?")
_QUOTED = re.compile(r'"([^"]{1,40})"')  # a quoted value or JSON field name, not a quoted passage
_TOKEN = re.compile(r"[^\W_][\w'’-]*")


def _bare(number: str) -> str:
    return number.replace(",", "").rstrip(".")


def missing_values(original: str, rewrite: str) -> list[str]:
    """What a rewording dropped of what the request's task rests on: a number, a quoted value or a
    name (a capitalised word inside a sentence) of `original` that `rewrite` no longer says. Numbers
    match with or without thousands separators ("1,200" is "1200")."""
    numbers = {_bare(n) for n in _NUMBER.findall(rewrite)}
    lost = [n for n in dict.fromkeys(_NUMBER.findall(original)) if _bare(n) not in numbers]
    lost += [q for q in dict.fromkeys(_QUOTED.findall(original)) if q not in rewrite]
    names = (w for sentence in sentences(original) for w in _TOKEN.findall(sentence)[1:] if w[0].isupper())
    lost += [n for n in dict.fromkeys(names) if n != "I" and n not in rewrite]
    return lost


def description_request(indirect: bool) -> str:
    """The schema name a rewrite is asked under: Standard and Challenge requests are told apart."""
    return "task_description_challenge" if indirect else "task_description"


def rephrase(llm: Any, query: str, guidance: Iterable[str] = (), *, indirect: bool = False) -> str | None:
    """The model's rewrite of a composed request, or None where it gave no usable one. A Standard
    request (schema `task_description`) names its records directly; a Challenge one (`indirect`,
    schema `task_description_challenge`) must keep referring to them indirectly, by what they are and
    how they relate, so the model is told not to resolve or shorten those references. A PRD round's
    task guidance tells it what the round's requests should be like (it may change the wording, never
    a value). Callers check the rewrite (`missing_values`, leakage) before they use it."""
    from agentomnia.llm import LLMError

    schema = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
    asked = list(guidance)
    steer = " This round's requests follow these product requirements: " + " ".join(asked) if asked else ""
    indirection = (
        " The request is meant to be hard: it refers to records indirectly, by their attributes and how "
        "they relate to each other. Keep every such reference indirect; never resolve one to a record, "
        "shorten a chain of references or add a hint that gives the answer away."
        if indirect
        else " Keep it direct and plain: the records it names stay named the way it names them."
    )
    messages = [
        {"role": "system", "content": (
            "Rewrite a user's request to a business system so it reads like a person wrote it. Keep every "
            "record description, every name, every number and value and every quoted JSON field name "
            "exactly as written; do not add tool names, ids or numbered steps." + indirection + steer
        )},
        {"role": "user", "content": query},
    ]  # fmt: skip
    try:
        data = llm.complete(messages, schema=schema, schema_name=description_request(indirect)).data
    except LLMError:  # a bad, refused or timed-out answer keeps the composed request
        return None
    text = data.get("query") if isinstance(data, dict) else None
    return text if isinstance(text, str) and text.strip() else None
