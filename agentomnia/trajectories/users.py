"""User simulation: the person on the other side of a multi-turn task.

A persona sets request granularity (terse users state only the first sentence and add the rest when
asked), information completeness (details in `withheld` are given only when the agent asks for
them: progressive disclosure) and misleading details (stated wrongly at first, corrected when the
agent asks to confirm). Offline, `ScriptedUser` answers from the task's ground truth and only with
what the persona allows; in LLM mode `LLMUser` phrases the replies with a model under the same rules.
Single-turn tasks use the opening message alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from agentomnia.dates import spoken_date
from agentomnia.envs.values import written_figure
from agentomnia.llm.protocol import LLM
from agentomnia.tasks.dag.describe import labelled, plural_word, singular, words
from agentomnia.tasks.models import Task

DONE_TOKEN = "###DONE###"
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class UserSimulator(Protocol):
    def opening(self) -> str: ...

    def reply(self, messages: Sequence[Mapping[str, Any]]) -> str | None:
        """The user's next message after the agent's last turn, or None when the user is done."""
        ...


def _asks_about(question: str, key: str) -> bool:
    text = question.casefold()
    if key.casefold() in text or words(key).casefold() in text:
        return True
    head = labelled(key, "1")[0].casefold()  # "the size" for `size_sqm`, "the weight" for `weight_kg`
    if head != words(key).casefold() and re.search(rf"\bthe {re.escape(head)}\b", text):
        return True
    said = words(key).casefold()  # `pet_id` and a seed's `petId` alike: "pet id"
    stem = said.removesuffix(" id").removesuffix(" name").removesuffix(" by")  # "who raised it?"
    return stem != said and len(stem) >= 3 and re.search(rf"\b{re.escape(stem)}\b", text) is not None


def _last_assistant(messages: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    return next((m for m in reversed(messages) if m.get("role") == "assistant"), None)


class ScriptedUser:
    """Deterministic, ground-truth-driven user: reveals only what the persona allows, when asked."""

    def __init__(self, task: Task, *, max_questions: int = 4) -> None:
        self.task = task
        self.persona = task.persona
        self.max_questions = max_questions
        self._questions = 0
        self._revealed: set[str] = set()
        sentences = [s for s in _SENTENCE.split(task.query.strip()) if s]
        terse = self.persona is not None and self.persona.granularity == "terse" and len(sentences) > 1
        self._first = sentences[0] if terse else task.query.strip()
        self._rest = " ".join(sentences[1:]) if terse else ""

    def opening(self) -> str:
        text = self._first
        if self.persona is not None:
            for key, wrong in sorted(self.persona.misleading.items()):
                text += " " + _detail(key, wrong)
            if self.persona.granularity == "detailed":
                text += " Please tell me what you changed and what you found when you are done."
        return text

    def reply(self, messages: Sequence[Mapping[str, Any]]) -> str | None:
        last = _last_assistant(messages)
        question = str(last.get("content") or "") if last is not None else ""
        if last is None or last.get("tool_calls") or "?" not in question:
            return None
        if self._questions >= self.max_questions:
            return None
        self._questions += 1
        parts: list[str] = []
        if self._rest and "rest" not in self._revealed:
            self._revealed.add("rest")
            parts.append(self._rest)
        if self.persona is not None:
            for key, value in sorted(self.persona.misleading.items()):
                truth = self.persona.withheld.get(key, self.task.internal_spec.get(key))
                if _asks_about(question, key) and truth is not None and key not in self._revealed:
                    self._revealed.add(key)
                    parts.append(f"Sorry, I was wrong earlier. {_detail(key, truth, value)}")
            for key, value in sorted(self.persona.withheld.items()):
                if key in self.persona.misleading or key in self._revealed:
                    continue
                if _asks_about(question, key):
                    self._revealed.add(key)
                    parts.append(_detail(key, value))
        return " ".join(parts) if parts else "I have no more details than what I already told you."


def _detail(key: str, value: Any, instead: Any = None) -> str:
    """A withheld detail as the user gives it: "The weight is 72.7 kg.", a count of things with its
    noun ("63 planned stops.", never "The planned stops is 63."), and a field named for when
    something happens as a label would give it: "Opened on: March 1, 2026 at 2:15 PM." (never "The
    opened on is ..."). With `instead`, the wrong value said earlier is named beside it ("The weight
    is 72.7 kg, not 70 kg.")."""
    label, shown = labelled(key, _text(value, key))
    wrong = "" if instead is None else f", not {labelled(key, _text(instead, key))[1]}"
    end = "" if not wrong and shown.endswith((".'", "!'", "?'")) else "."  # its own full stop ends it
    if label.endswith((" on", " at", " from", " to", " by")):
        return f"{label[0].upper()}{label[1:]}: {shown}{wrong}{end}"
    if label.endswith(" due") and spoken_date(str(value)):  # "The response is due April 2, 2026."
        what = label[:-4]
        if what in ("next", "last", "first"):  # `next_due`: "Next due: April 2, 2026."
            return f"{label[0].upper()}{label[1:]}: {shown}{wrong}{end}"
        return f"The {what} is due {shown}{wrong}{end}"
    if plural_word(label.split()[-1]):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            noun = singular(label.replace(" ", "_")).replace("_", " ") if value == 1 else label
            return f"{shown} {noun}{wrong}{end}"  # "63 planned stops.", "1 star."
        return f"{label[0].upper()}{label[1:]}: {shown}{wrong}{end}"
    return f"The {label} is {shown}{wrong}{end}"


def _text(value: Any, key: str = "") -> str:
    if isinstance(value, str):
        date = spoken_date(value)  # "The statement date is March 13, 2026."
        if date:
            return date
        # words or a code with its own punctuation are quoted as the request quotes them: "The
        # description is 'Kerb rash on the left wheel.'", never "... on the left wheel.."
        return f"'{value}'" if re.search(r"\s|[.!?;:]$", value.strip()) else value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return written_figure(value, key)  # "The price is 603,241.", as the request writes figures
    return json.dumps(value, default=str)


class LLMUser:
    """A model plays the persona; the opening is the scripted one so both modes start alike."""

    def __init__(self, task: Task, llm: LLM, *, max_questions: int = 4) -> None:
        self.task = task
        self.llm = llm
        self.max_questions = max_questions
        self._scripted = ScriptedUser(task, max_questions=max_questions)
        self._questions = 0

    def opening(self) -> str:
        return self._scripted.opening()

    def _system(self) -> str:
        persona = self.task.persona
        lines = [
            "You play a user who asked an assistant for help. Stay in character and be brief.",
            f"Your request: {self.task.query}",
            "Only reveal a detail below when the assistant asks for it; never invent other facts.",
        ]
        if persona is not None:
            lines.append(f"Your style: {persona.granularity}.")
            for key, value in sorted(persona.withheld.items()):
                lines.append(f"Detail you know (tell only when asked): {words(key)} = {_text(value)}")
            for key, value in sorted(persona.misleading.items()):
                lines.append(
                    f"You first said {words(key)} = {_text(value)}; admit the mistake if asked to confirm."
                )
        lines.append(f"When the assistant has finished your request, reply with exactly {DONE_TOKEN}.")
        return "\n".join(lines)

    def reply(self, messages: Sequence[Mapping[str, Any]]) -> str | None:
        last = _last_assistant(messages)
        if last is None or last.get("tool_calls") or self._questions >= self.max_questions:
            return None
        self._questions += 1
        # Roles are mirrored: the agent's words are what this model reads as its interlocutor.
        convo: list[dict[str, Any]] = [{"role": "system", "content": self._system()}]
        for m in messages:
            if m.get("role") == "user":
                convo.append({"role": "assistant", "content": str(m.get("content") or "")})
            elif m.get("role") == "assistant" and not m.get("tool_calls"):
                convo.append({"role": "user", "content": str(m.get("content") or "")})
        text = self.llm.complete(convo, temperature=0.0, schema_name="user_turn").text.strip()
        return None if not text or DONE_TOKEN in text else text


def make_user(task: Task, llm: LLM | None = None) -> UserSimulator | None:
    """The simulator a task needs: none for single-turn tasks, scripted offline, model-backed with an LLM."""
    if task.interaction != "multi":
        return None
    return LLMUser(task, llm) if llm is not None else ScriptedUser(task)
