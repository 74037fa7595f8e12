"""Rule-based rewards: schema validity, answer matching, state predicates, verifier code."""

from __future__ import annotations

from typing import Any

from agentomnia.rewards import answer_matches, extract_answer, fuzzy_ratio, rule_reward, schema_errors
from agentomnia.rewards.rules import state_predicates_hold
from agentomnia.tasks.grading import Outcome

SCHEMA = {
    "type": "object",
    "properties": {"task_id": {"type": "string"}, "status": {"type": "string", "enum": ["open", "done"]}},
    "required": ["task_id", "status"],
    "additionalProperties": False,
}


def test_schema_errors_name_the_field_and_pass_valid_arguments() -> None:
    assert schema_errors({"task_id": "task_1", "status": "done"}, SCHEMA) == []
    errors = schema_errors({"task_id": "task_1", "status": "closed"}, SCHEMA)
    assert len(errors) == 1 and errors[0].startswith("status:")
    assert any("required" in e for e in schema_errors({"task_id": "t"}, SCHEMA))
    assert schema_errors("not a dict", SCHEMA) == ["arguments are a str, not an object"]


def test_exact_and_fuzzy_answer_matching() -> None:
    assert answer_matches("  Ada   LOVELACE ", "ada lovelace")
    assert answer_matches("3.0", 3)
    assert not answer_matches("Ada Lovelac", "Ada Lovelace")
    assert fuzzy_ratio("Ada Lovelac", "Ada Lovelace") > 0.9
    assert answer_matches("Ada Lovelac", "Ada Lovelace", fuzzy=True)
    assert not answer_matches("Grace Hopper", "Ada Lovelace", fuzzy=True)


def test_extract_answer_prefers_json_then_falls_back_to_text() -> None:
    assert extract_answer('Sure: {"count": 2} done', {"count": 2}) == {"count": 2}
    assert extract_answer("there are two", {"count": 2}) == {"count": "there are two"}
    assert extract_answer("", {"count": 2}) == {}


def test_state_predicates_pass_on_the_right_state_only(cases: Any) -> None:
    task = cases.make_task(cases.status_done)
    assert state_predicates_hold(task, Outcome(final_state=cases.done_state())).passed is True
    assert state_predicates_hold(task, Outcome(final_state=cases.s0)).passed is False


def test_verifier_code_runs_through_the_runner_and_errors_are_unscored(cases: Any) -> None:
    code = "def check_func(final_state):\n    return final_state['tasks']['task_1']['status'] == 'done'"
    task = cases.make_task(cases.status_done, verifier_code=code)
    outcome = Outcome(final_state=cases.done_state())

    def runner(source: str, initial: dict, final: dict) -> bool | None:
        scope: dict = {}
        exec(source, scope)  # trusted test code standing in for the sandbox
        return bool(scope["check_func"](final))

    assert rule_reward(task, outcome, verifier=runner).passed is True
    assert rule_reward(task, Outcome(final_state=cases.s0), verifier=runner).passed is False
    missing = rule_reward(task, outcome)
    assert missing.passed is None and "no sandbox runner" in (missing.error or "")
    crashed = rule_reward(task, outcome, verifier=lambda *a: None)
    assert crashed.passed is None and "failed to execute" in (crashed.error or "")


def test_expected_answer_uses_fuzzy_matching_only_when_the_task_allows_it(cases: Any) -> None:
    strict = cases.make_task(cases.status_done, expected_answer={"owner": "Ada Lovelace"})
    lenient = cases.make_task(
        cases.status_done, expected_answer={"owner": "Ada Lovelace"}, metadata={"answer_match": "fuzzy"}
    )
    outcome = Outcome(final_state=cases.done_state(), answer={"owner": "Ada Lovelac"})
    assert rule_reward(strict, outcome).passed is False
    assert rule_reward(lenient, outcome).passed is True
