"""Sentence frames for DAG task requests: how a person opens, points at records, asks and says the format.

A request reads as a person's: it opens in the voice of the domain's user, names a record once and
then says "that invoice" (so a reference never grows into "the X of the Y of the Z"), asks each
question where it arises, and ends with the answer format in one plain sentence. Every frame has
several wordings and the task's own random generator picks one, so a round's requests do not
repeat each other while each task stays deterministic for its seed.

The frames never touch what the checks rely on: a record description is inserted verbatim (the
consistency check finds it again), a value keeps its quoted form, and every answer field is written
as "field" in double quotes.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from agentomnia.tasks.dag.describe import PREPOSITIONS, is_plural, is_state_word, words

_CONTEXT = (
    "This is about {p}.",
    "My question concerns {p}.",
    "Look at {p}.",
    "I'm dealing with {p}.",
    "It concerns {p}.",
    "Pull up {p}.",
    "I'm looking at {p}.",
    "Have a look at {p}.",
    "Please find {p}.",
)
_ASK = (
    'Tell me {n} as "{k}".',
    'Let me know {n} ("{k}").',
    'Could you find out {n}? Call it "{k}".',
    'Also check {n} and give it as "{k}".',
    'I\'d like to know {n}; use "{k}" for it.',
    'Work out {n} for me ("{k}").',
    'Please tell me {n} under "{k}".',
)
_ASK_NOUN = (
    'I need {n} under "{k}".',
    'Put {n} in "{k}".',
    'What is {n}? Answer under "{k}".',
    'Read off {n} for "{k}".',
    '"{k}" should be {n}.',
)
_QUESTION_WORDS = ("how ", "whether ", "which ", "what ", "if ", "who ")
_FORMAT = (
    "Answer in JSON with {keys}.",
    "Send the answers back as a JSON object with {keys}.",
    "Please reply with a JSON object holding {keys}.",
    "A JSON object with {keys} is all I need back.",
    "Give me {keys} in one JSON object.",
    "Wrap it up as JSON with {keys}.",
    "For the reply, a JSON object with {keys}, please.",
    "Return {keys} as JSON.",
    "The reply should be JSON, keyed {keys}.",
    "Use the keys {keys} in your JSON answer.",
    "Format: JSON, with {keys}.",
)


def choose(rng: random.Random, options: Sequence[str]) -> str:
    return options[rng.randrange(len(options))]


def context(rng: random.Random, phrase: str) -> str:
    """The sentence that names a record later sentences call "that <entity>"."""
    return choose(rng, _CONTEXT).format(p=phrase)


def ask(rng: random.Random, noun: str, key: str) -> str:
    """The sentence asking for one answer field; `noun` is a noun phrase or an indirect question."""
    frames = _ASK if noun.startswith(_QUESTION_WORDS) else _ASK + _ASK_NOUN
    frame = choose(rng, frames)
    head = noun.split(" of ", 1)[0] if noun.startswith("the ") else noun  # "the open queries of ..."
    head = re.sub(r" in \S+$", "", head)  # a unit is no noun: "the duration in hours of ..."
    if frame.startswith("What is ") and is_plural(head):
        frame = "What are " + frame.removeprefix("What is ")  # "What are the open queries of ...?"
    return frame.format(n=noun, k=key)


def answer_format(rng: random.Random, keys: Sequence[str]) -> str:
    quoted = [f'"{k}"' for k in keys]
    listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]
    text = choose(rng, _FORMAT).format(keys=listed)
    return text.replace("the keys ", "the key ") if len(quoted) == 1 else text


def demonstrative(entity: str) -> str:
    """How a record named earlier in the request is referred to again."""
    return f"that {words(entity)}"


def is_handle(phrase: str) -> bool:
    """Whether a phrase is short enough to take a possessive ("that order's customer")."""
    return phrase.startswith(("that ", "the new ")) and len(phrase.split()) <= 5


def possessive(owner: str, noun: str) -> str:
    """`that order` + `customer` -> "that order's customer"; a long owner keeps "the customer of ...",
    and so does one that is a possessive already ("the hourly wage of that task's assignee", never
    "that task's assignee's hourly wage")."""
    return f"{owner}'s {noun}" if is_handle(owner) and "'s " not in owner else f"the {noun} of {owner}"


def flag_question(subject: str, flag: str) -> str:
    """How a yes/no field is asked about a record: "whether that picker is active", "whether that
    request's issue is resolved", "whether that plan has auto renew turned on" (never "the active of")."""
    name = words(flag)
    verb, _, rest = name.partition(" ")
    if verb in ("is", "has", "can", "allows", "requires", "needs", "was") and rest:
        return f"whether {subject} {'is' if verb == 'was' else verb} {rest}"
    if " " not in name or verb in PREPOSITIONS:  # "whether that message is for everyone"
        return f"whether {subject} is {name}"
    head, _, last = name.rpartition(" ")
    if is_state_word(last):
        plural = head.endswith("s") and not head.endswith(("ss", "us", "is"))
        return f"whether {possessive(subject, head)} {'are' if plural else 'is'} {last}"
    return f"whether {subject} has {name} turned on"


_RELATIVE = re.compile(r" that (?=(?:are|is|do|does|have|has|need|require|allow|accept|include|use|want)\b)")


def count_question(subject: str) -> str:
    """How a count is asked: "how many active tracks there are" for "the active tracks", "how many
    tracks are not released" for "the tracks that are not released", "how many tracks there are whose
    genre is jazz", "how many tracks that artist has" for "that artist's tracks"."""
    owner, sep, noun = subject.rpartition("'s ")
    if sep and owner.startswith(("that ", "the new ")):
        return f"how many {noun} {owner} has"
    if subject.startswith("the ") and not subject.startswith("the only"):
        relative = _RELATIVE.search(subject)
        if relative is not None:
            # "how many programs are not active", "how many author queries for that job are not answered"
            return f"how many {subject[4 : relative.start()]} {subject[relative.start() + 6 :]}"
        head, whose, clause = subject[4:].partition(" whose ")
        if whose and "'" not in head:  # "how many mail campaigns there are whose region is eu"
            return f"how many {head} there are whose {clause}"
        return f"how many {subject[4:]} there are"
    if subject.startswith("all "):
        return f"how many {subject[4:]} there are in total"
    return f"how many {subject} there are"


def key_words(*parts: str) -> str:
    """An answer field name from words: `work order`, `count` -> `work_order_count`."""
    return "_".join(w for p in parts for w in words(p).lower().replace("-", " ").split() if w.isalnum())
