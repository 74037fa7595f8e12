"""Multi-turn DAG tasks: the same verified task, posed by a user who does not say everything at once.

OmniaBench's DAG route is multi-turn with a simulated user. A verified single-turn DAG task becomes
one by moving a detail the request states literally (a name, an amount, a level) out of the opening
request and into the persona's `withheld` details, which the simulated user gives only when asked
(`trajectories.users.ScriptedUser`); a terse persona also holds the rest of a long request back
until the first question. Nothing the grader checks changes — the reference calls, the expected
end state and answer are the same — so the conversion cannot break the task's oracle; what changes
is that an agent must notice the gap and ask instead of guessing (progressive disclosure).
"""

from __future__ import annotations

import random
import re
from typing import Any

from agentomnia.dates import spoken_date
from agentomnia.envs.naming import article
from agentomnia.envs.values import written_figure
from agentomnia.tasks.dag.describe import is_plural, unit_after
from agentomnia.tasks.families import DAG
from agentomnia.tasks.models import Persona, Task
from agentomnia.taxonomy import Coordinate
from agentomnia.taxonomy.axes import profile_mask

# What the request says where the withheld detail stood, as a person leaving it for later: after a
# word that takes an object ("set the name to ...", "the alarm matching ...") it says what kind of
# detail will come (ASK_FOR, by the value's kind; ASK_ME for any other); after a bare field label
# ("quantity ...", "name ...") it is ASK_LATER. No apostrophes: quoted values use them.
ASK_ME = "what I will tell you"
ASK_LATER = "still to be confirmed with me"
ASK_FOR = {
    "search": "a word I will give you",
    "time": "a date and time I will give you",  # "opened on a date and time ...", never "on a time"
    "date": "a date I will give you",
    "email": "an address I will send you",
    "number": "a figure I will give you",
    "person": "someone I will name",  # "raised by someone I will name", never "raised by what I will tell you"
}
GAP_PHRASES: tuple[str, ...] = (ASK_ME, ASK_LATER, *ASK_FOR.values())
_TAKES_OBJECT = frozenset(
    ("to", "is", "are", "as", "be", "matching", "named", "called", "of", "for", "with", "by", "at", "from",
     "on", "under", "reads", "says", "equals", "=", ":")
)  # fmt: skip
PERSONA_NAMES = ("Dana", "Ravi", "Mei", "Tomás", "Aisha", "Jonas", "Lena", "Kofi")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _literals(value: Any) -> list[str]:
    """How a value may be written in a request built by the task composer (a quoted string, or a
    bare enum value such as "status received"), most specific first; none if not withholdable."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, (int, float)):
        return list(dict.fromkeys((written_figure(value), f"{value}")))  # "603,241", as `say` writes it
    if isinstance(value, str) and (day := spoken_date(value)):
        return [day]  # "March 13, 2026", as the request says it
    if isinstance(value, str) and len(value) >= 3:
        return [f"'{value}'", value] if value.replace("_", "").isalnum() else [f"'{value}'"]
    return []


def withholdable(task: Task) -> list[tuple[str, Any, str]]:
    """(parameter, value, text) of request-sourced arguments that occur exactly once in the query."""
    out: list[tuple[str, Any, str]] = []
    seen: set[str] = set()
    for call in task.reference_calls:
        for param, value in call.args.items():
            if call.sources.get(param) != "query" or param in seen:
                continue
            for text in _literals(value):
                # the value must stand alone, once, not inside a longer number, word or quote
                alone = re.findall(rf"(?<![\w.,'-]){re.escape(text)}(?![\w'-]|[.,]\d)", task.query)
                if (
                    len(alone) == 1
                    and task.query.count(text) == 1
                    and _stands_as_detail(task.query, text, param)
                ):
                    seen.add(param)
                    out.append((param, value, text))
                    break
    return out


def _stands_as_detail(query: str, text: str, param: str) -> bool:
    """Whether a gap phrase can stand where `text` does: a quoted value or a figure anywhere, a bare
    word only after its field's label ("status occupied") or a word that takes an object ("is
    occupied"). Before a noun it describes the noun ("how many occupied chargers"), and "how many
    still to be confirmed with me chargers" is no request."""
    # one end of a span: "started between still to be confirmed with me and ..." is no request
    if re.search(rf"\bbetween (?:[^.;]* and )?{re.escape(text)}", query):
        return False
    if text.startswith("'") or not text.replace("_", "").isalpha():
        return True
    before = query[: query.find(text)].split()
    last = before[-1].lower().strip(",") if before else ""
    return last in _TAKES_OBJECT or last == param.lower().replace("_", " ").split()[-1]


def _kind(param: str, value: Any) -> str | None:
    """Which `ASK_FOR` phrase announces `value` (of parameter `param`); None for any other detail."""
    if param in ("query", "q", "search", "keyword", "text") and isinstance(value, str):
        return "search"
    if param.endswith("_by") and isinstance(value, str) and not re.search(r"\d", value):
        return "person"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "number"
    if isinstance(value, str):
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2})?\S*", value):
            return "time"
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            return "date"
        if re.fullmatch(r"[^@\s]+@[^@\s]+\.\w+", value):
            return "email"
    return None


def gap_phrase(query: str, text: str, param: str = "", value: Any = None) -> str:
    """How the request words the gap where `text` (parameter `param`'s `value`) stood: "the album
    matching a word I will give you", "added on a date and time I will give you", "its reason is what I will tell
    you", "title still to be confirmed with me" (see `ASK_FOR`, `ASK_ME`, `ASK_LATER`)."""
    before = query[: query.find(text)].split()
    if not before or before[-1].lower().strip(",") not in _TAKES_OBJECT:
        return ASK_LATER
    kind = _kind(param, value)
    return ASK_FOR[kind] if kind is not None else ASK_ME


def ended(query: str, text: str, phrase: str) -> str:
    """`phrase`, standing for `text` in `query`, with the full stop that ended its sentence inside the
    quote ("... its note is 'Done for now.' Look at ..." -> "... its note is what I will tell you.
    Look at ..."): a quote that ends with a stop carries its sentence's stop."""
    after = query[query.find(text) + len(text) :]
    if re.search(r"[.!?]'$", text) and re.match(r"(\s+[A-Z\"]|\s*$)", after):
        return phrase + text[-2]
    return phrase


# a detail left for later with its label: "It should have a title I will give you"
_LABELLED_GAP = re.compile(r"\b(?:an?|the)(?: (?!(?:an?|the)\b)[a-z][a-z-]*){1,4} I will give you\b")


def gaps_in(query: str) -> list[str]:
    """The words in which a request leaves details for later, as `make_multi_turn` writes them."""
    fixed = [p for p in GAP_PHRASES if p in query]
    labelled = [m.group(0) for m in _LABELLED_GAP.finditer(query)]
    return fixed + [g for g in labelled if not any(g.endswith(p) for p in fixed)]


def says_gap(query: str) -> bool:
    """Whether a request leaves a detail for later in the words `make_multi_turn` uses."""
    return bool(gaps_in(query))


def labelled(query: str, text: str, param: str) -> tuple[str, str] | None:
    """(the label and the value as the request writes them, the label) where `text` follows a label
    made of `param`'s words ("title 'Street Flex'", "file name '_DSF0212.RAF'", "height 5,152 px"
    for `height_px`), once; None where no such label stands before it."""
    names = [w for w in re.split(r"[_\s]+", param.lower()) if w]
    for size in range(len(names), 0, -1):
        for start in range(len(names) - size + 1):
            label = " ".join(names[start : start + size])
            said = f"{label} {text}"
            if len(re.findall(rf"(?<![\w'-]){re.escape(said)}", query)) == 1:
                return said, label
    return None


def _withheld_in_objectives(
    spec: dict[str, Any], text: str, phrase: str, value_text: str | None = None
) -> dict[str, Any]:
    """The task's objectives as the request now words them: an objective that named the withheld
    detail (a record picked by it, "the alarm matching 'Ground'") names the gap instead, so the check
    that every objective is stated in the request reads what the request says. Where the gap took
    the detail's label with it (`text` "title 'Flex'"), an objective that starts at the value itself
    (`value_text`) has the gap there."""
    objectives = spec.get("objectives")
    if not isinstance(objectives, list):
        return spec

    def reworded(mention: str) -> str:
        if text in mention:
            return mention.replace(text, phrase, 1)
        if value_text is not None and mention.startswith(value_text):
            return phrase + mention[len(value_text) :]
        return mention

    return {
        **spec,
        "objectives": [
            {**o, "mention": reworded(str(o["mention"]))} if isinstance(o, dict) and "mention" in o else o
            for o in objectives
        ],
    }


def make_multi_turn(task: Task, rng: random.Random) -> Task | None:
    """The multi-turn variant of a single-turn DAG task, or None when no detail can be withheld."""
    if task.interaction != "single" or task.kind not in DAG.kinds:
        return None
    options = withholdable(task)
    if not options:
        return None
    param, value, text = rng.choice(options)
    if isinstance(value, (int, float)):  # "weight 72.7 kg": the unit goes with the figure
        text += unit_after(task.query[task.query.find(text) + len(text) :])
    value_text, phrase = text, gap_phrase(task.query, text, param, value)
    found = labelled(task.query, text, param) if phrase == ASK_LATER else None
    if found is not None:  # "have a title I will give you", not "have title still to be confirmed with me"
        text, label = found
        # a plural label takes no "a": "the stars I will give you", "the units received I will give you"
        many = is_plural(label) or is_plural(label.split()[0])
        phrase = f"the {label} I will give you" if many else f"{article(label)} I will give you"
    phrase = ended(task.query, text, phrase)
    query = task.query.replace(text, phrase, 1)
    sentences = [s for s in _SENTENCE.split(query.strip()) if s]
    granularity = "terse" if len(sentences) >= 3 and rng.random() < 0.5 else "normal"
    persona = Persona(name=rng.choice(PERSONA_NAMES), granularity=granularity, withheld={param: value})
    coord = task.coordinate
    coordinate = Coordinate(
        split=coord.split, taxonomy_id=coord.taxonomy_id, l1=coord.l1, l2=coord.l2,
        capabilities=(*coord.capabilities, "interactive_collaboration"),
        difficulty=coord.difficulty | profile_mask(["progressive_disclosure"]),
        primary_difficulty=coord.primary_difficulty,
    )  # fmt: skip
    metadata = {**task.metadata, "interaction": {"withheld": [param], "granularity": granularity}}
    data = task.model_dump(exclude={"id"})
    data.update(
        query=query, interaction="multi", persona=persona.model_dump(), coordinate=coordinate.model_dump(),
        metadata=metadata,
        internal_spec=_withheld_in_objectives(task.internal_spec, text, phrase, value_text),
    )  # fmt: skip
    return Task.model_validate(data)
