"""Rule-based rewards: decisions made by code alone.

Four kinds of rule, each a small pure function: tool-argument schema validity, answer matching
(exact after normalisation, or fuzzy above a similarity threshold), state predicates (the task's
deterministic rubric checks on the final state), and the task's verifier code run in the sandbox.
`rule_reward` combines them into one binary reward; it returns None (unscored) with a reason when a
rule could not execute, and leaves the fallback to the router.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from typing import Any

import jsonschema
from pydantic import BaseModel, ConfigDict

from agentomnia.tasks.grading import Outcome, VerifierRunner, run_check, values_match
from agentomnia.tasks.models import Task

_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


class RuleOutcome(BaseModel):
    """A rule decision: `passed` is None when some rule could not execute (`error` says which)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    passed: bool | None
    details: tuple[str, ...] = ()
    error: str | None = None


def schema_errors(arguments: Any, schema: Mapping[str, Any]) -> list[str]:
    """Why `arguments` do not satisfy a tool's JSON-schema `parameters` (empty when they do)."""
    if not isinstance(arguments, Mapping):
        return [f"arguments are a {type(arguments).__name__}, not an object"]
    validator = jsonschema.Draft202012Validator(dict(schema))
    return [
        f"{'/'.join(map(str, e.path)) or '<root>'}: {e.message}"
        for e in validator.iter_errors(dict(arguments))
    ]


def fuzzy_ratio(actual: Any, expected: Any) -> float:
    """Similarity in [0, 1] of two values rendered as normalised text."""

    def text(value: Any) -> str:
        raw = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
        return " ".join(raw.split()).casefold()

    return difflib.SequenceMatcher(None, text(actual), text(expected)).ratio()


def answer_matches(
    actual: Any, expected: Any, *, fuzzy: bool = False, threshold: float = 0.85, tolerance: float = 0.0
) -> bool:
    """Exact match (numbers within tolerance, strings case/space-insensitive), or fuzzy above `threshold`."""
    if values_match(actual, expected, tolerance):
        return True
    return fuzzy and fuzzy_ratio(actual, expected) >= threshold


def extract_answer(text: str, fields: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The answer dict of a final assistant message: its JSON object if it has one, else the whole
    text under each expected field, so string checks can still find the value in prose."""
    match = _JSON_OBJECT.search(text or "")
    if match:
        try:
            parsed = json.loads(match.group(0))
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    return {name: text for name in (fields or {})} if text else {}


def state_predicates_hold(task: Task, outcome: Outcome) -> RuleOutcome:
    """Every deterministic check of the task except verifier code (that needs the sandbox)."""
    details: list[str] = []
    for item in task.rubric:
        if item.check is None or item.check.kind == "verifier":
            continue
        passed, detail = run_check(item.check, task, outcome)
        details.append(f"{item.id}: {detail}")
        if passed is None:
            return RuleOutcome(passed=None, details=tuple(details), error=f"{item.id}: {detail}")
        if not passed:
            return RuleOutcome(passed=False, details=tuple(details))
    return RuleOutcome(passed=True, details=tuple(details))


def answer_rule(task: Task, outcome: Outcome, *, fuzzy: bool, threshold: float) -> RuleOutcome:
    """Every expected answer field matches (exactly, or fuzzily when the task allows it)."""
    for name, expected in task.expected_answer.items():
        actual = outcome.answer.get(name)
        if not answer_matches(actual, expected, fuzzy=fuzzy, threshold=threshold):
            return RuleOutcome(passed=False, details=(f"answer.{name} is {actual!r}, expected {expected!r}",))
    return RuleOutcome(passed=True, details=tuple(f"answer.{n} matches" for n in task.expected_answer))


def verifier_rule(task: Task, outcome: Outcome, verifier: VerifierRunner | None) -> RuleOutcome:
    """The task's verifier code on (initial, final) state; None when there is no runner or it errored."""
    if not task.verifier_code:
        return RuleOutcome(passed=True, details=("no verifier code",))
    if verifier is None:
        return RuleOutcome(passed=None, error="the task has verifier code but no sandbox runner was given")
    result = verifier(task.verifier_code, task.init_config, outcome.final_state)
    if result is None:
        return RuleOutcome(passed=None, error="the verifier code failed to execute in the sandbox")
    return RuleOutcome(passed=bool(result), details=(f"check_func returned {result!r}",))


def rule_reward(
    task: Task,
    outcome: Outcome,
    *,
    verifier: VerifierRunner | None = None,
    fuzzy: bool | None = None,
    threshold: float = 0.85,
) -> RuleOutcome:
    """All rules together: state predicates, expected answer, verifier code. Fuzzy matching is on when
    the task's metadata says `answer_match: fuzzy` (or `fuzzy=True`)."""
    use_fuzzy = fuzzy if fuzzy is not None else task.metadata.get("answer_match") == "fuzzy"
    parts = (
        state_predicates_hold(task, outcome),
        answer_rule(task, outcome, fuzzy=use_fuzzy, threshold=threshold),
        verifier_rule(task, outcome, verifier),
    )
    details = tuple(d for p in parts for d in p.details)
    failed = next((p for p in parts if p.passed is False), None)
    if failed is not None:
        # the failing rule's own details, its decisive one last, so callers can quote the reason
        return RuleOutcome(passed=False, details=failed.details)
    errors = [p.error for p in parts if p.passed is None and p.error]
    if errors:
        return RuleOutcome(passed=None, details=details, error="; ".join(errors))
    return RuleOutcome(passed=True, details=details)
