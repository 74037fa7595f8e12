"""Failure diagnosis: the offline rules, execution reconstruction, and the model revise-or-fall-back loop."""

from __future__ import annotations

from typing import Any

import pytest

from agentomnia.evolution.diagnosis import (
    CapabilityDiagnosis,
    DiagnosisReport,
    diagnose,
    failure_severity,
    failure_weights,
    gap_for,
    item_weight,
    reconstruct,
)
from agentomnia.llm import LLMOutputError
from agentomnia.omniabench.models import EvalResult, Failure, FieldDiff
from agentomnia.tasks.models import ReferenceCall, RubricItem, Task
from agentomnia.taxonomy import Coordinate
from agentomnia.trajectories.models import Step
from tests.evolution.conftest import ScriptedLLM, draft_in, make_failure


def _group(report: DiagnosisReport, group_id: str) -> CapabilityDiagnosis:
    return next(g for g in report.capability_diagnoses if g.group_id == group_id)


def test_trials_that_fail_the_same_way_merge_into_one_task_diagnosis(report: DiagnosisReport) -> None:
    assert report.failure_count == 7
    assert report.eval_ids == ("eval-r0-heuristic",)
    pet1 = [t for t in report.task_diagnoses if t.task_id == "t-pet-1"]
    assert len(pet1) == 1 and len(pet1[0].failure_ids) == 2
    assert pet1[0].tags == ("wrong_tool", "invalid_arguments")  # dominant first, then by frequency
    assert "book_appointment refused pet_id 'Biscuit'" in " ".join(pet1[0].evidence)
    assert pet1[0].execution.source == "evidence"  # no trajectories were given
    assert pet1[0].root_cause.startswith("The agent chose tools the task never needs")


def test_groups_follow_capability_atom_and_dominant_tag(report: DiagnosisReport) -> None:
    ids = [g.group_id for g in report.capability_diagnoses]
    assert ids[0] == "tool_use/tool_parameter_grounding/wrong_tool"  # 4 failures: the heaviest group
    tool = _group(report, ids[0])
    assert tool.frequency == 4 and len(tool.task_ids) == 3
    assert tool.l1_domains == {"toc/Lifestyle": 4} and tool.l2_domains == (10005,)
    assert tool.gap.capability == "tool_use" and tool.gap.atoms == ("tool_parameter_grounding",)
    assert tool.tag_counts == {"wrong_tool": 4, "invalid_arguments": 1}
    # three failures at severity 2 and a near miss at 1: mean 1.75 rounds to 2
    assert tool.severity == 2
    assert set(tool.example_failure_ids) <= set(tool.failure_ids)
    hallucinated = _group(report, "information_gathering/structured_information/hallucinated_value")
    assert hallucinated.severity == 3 and hallucinated.gap.atoms == (
        "structured_information",
        "long_context_evidence",
    )
    weights = [g.frequency * g.severity for g in report.capability_diagnoses]
    assert weights == sorted(weights, reverse=True)


def test_the_task_s_own_capabilities_decide_between_candidate_gaps() -> None:
    # A missed constraint is a reliability gap by default, a state-management gap on a task that tests state.
    plain = Coordinate.for_domain(10016, ["tool_use"], ["risk_clarification"])
    stateful = Coordinate.for_domain(10016, ["state_management", "tool_use"], ["risk_clarification"])
    assert gap_for("missed_constraint", plain).capability == "reliability_safety"
    assert gap_for("missed_constraint", stateful).capability == "state_management"
    assert gap_for("wrong_answer", Coordinate.for_domain(10016, ["information_gathering"], 1)).capability == (
        "information_gathering"
    )


def test_severity_counts_tags_near_misses_and_challenging_tasks() -> None:
    harmful = make_failure("t", 10005, ["wrong_tool", "collateral_change"])
    assert failure_severity(harmful) == 3  # the worst tag decides
    assert failure_severity(make_failure("t", 10005, ["wrong_tool"], score=0.85)) == 1
    assert failure_severity(harmful, challenging=True) == 2
    assert failure_severity(make_failure("t", 10005, ["collateral_change"], task_kind="dag_challenge")) == 2
    assert failure_severity(make_failure("t", 10005, ["budget_exhausted"], score=0.9)) == 1  # never below 1


def test_untagged_failures_are_kept_as_unfinished_work() -> None:
    report = diagnose([make_failure("t-x", 10005, [], evidence=[])])
    (task,) = report.task_diagnoses
    assert task.tags == ("incomplete",) and "without evidence" in task.evidence[0]


def test_the_rules_are_deterministic(failures: list[Failure], report: DiagnosisReport) -> None:
    again = diagnose(list(reversed(failures)), round_key="r1")
    assert {g.group_id: g.failure_ids for g in again.capability_diagnoses}.keys() == {
        g.group_id for g in report.capability_diagnoses
    }
    assert diagnose(failures, round_key="r1").id == report.id


def _task_and_result(failure: Failure) -> tuple[Task, EvalResult]:
    task = Task(
        env_id=failure.env_id,
        kind="dag_standard",
        coordinate=failure.coordinate,
        init_config={},
        query="Book a nail trim for my older beagle.",
        reference_calls=(
            ReferenceCall(tool="list_pets", args={"owner_id": "OW-1"}),
            ReferenceCall(tool="book_appointment", args={"pet_id": "PT-2", "offering_id": "SO-1"}),
        ),
        rubric=(RubricItem(id="T1", text="the appointment is for PT-2", scope="task"),),
    )
    result = EvalResult(
        eval_id=failure.eval_id,
        task_id=failure.task_id,
        env_id=failure.env_id,
        task_kind=failure.task_kind,
        route=failure.route,
        coordinate=failure.coordinate,
        policy=failure.policy,
        trial=0,
        score=0.0,
        passed=False,
        components={"T1": False},
        steps=(
            Step(
                index=0,
                turn=1,
                tool="list_appointments",
                arguments={"day": "2025-06-14"},
                ok=True,
                state_hash="a",
            ),
            Step(
                index=1,
                turn=2,
                tool="book_appointment",
                arguments={"pet_id": "Biscuit"},
                ok=False,
                error_code="not_found",
                state_hash="a",
            ),
        ),
        state_diff=(
            FieldDiff(table="appointment", key="AP-9", field="pet_id", expected="PT-2", actual=None),
        ),
    )
    return task, result


def test_execution_is_reconstructed_against_the_reference() -> None:
    failure = make_failure("t-pet-1", 10005, ["wrong_tool"])
    task, result = _task_and_result(failure)
    ex = reconstruct([failure], result, task)
    assert ex.source == "trajectory"
    assert ex.steps_taken[1] == '2. book_appointment({"pet_id": "Biscuit"}) -> error not_found'
    assert ex.steps_needed[0].startswith("list_pets(") and ex.steps_needed[-1] == "satisfy rubric item T1"
    assert ex.missing_steps == ("list_pets",) and ex.extra_steps == ("list_appointments",)
    assert ex.diverged_at == 1
    assert ex.state_diff == ('appointment[AP-9].pet_id: expected "PT-2", got null',)
    report = diagnose([failure], results={failure.result_id: result}, tasks={task.id: task, "t-pet-1": task})
    assert "It never called list_pets." in report.task_diagnoses[0].root_cause


# -- model mode ------------------------------------------------------------------------------------


def _revised_task(conversation: list[dict[str, Any]]) -> dict[str, Any]:
    draft = draft_in(conversation, "Draft diagnosis:\n")
    return draft | {"root_cause": "The model's reading: the agent booked before resolving the pet id."}


def _broken_task(conversation: list[dict[str, Any]]) -> dict[str, Any]:
    return _revised_task(conversation) | {"severity": 7, "gap": {"capability": "telepathy", "atoms": []}}


def _echo_groups(conversation: list[dict[str, Any]]) -> dict[str, Any]:
    draft = draft_in(conversation, "Draft grouping by rules:\n")
    for group in draft["groups"]:
        group["shared_cause"] = "Model: " + group["shared_cause"]
    return draft


def test_an_invalid_model_report_is_sent_back_and_the_revision_is_used() -> None:
    failure = make_failure("t-pet-1", 10005, ["wrong_tool"])
    llm = ScriptedLLM(
        {"task_diagnosis": [_broken_task, _revised_task], "capability_diagnoses": [_echo_groups]}
    )
    report = diagnose([failure], llm=llm)  # type: ignore[arg-type]
    assert [name for name, _ in llm.calls] == ["task_diagnosis", "task_diagnosis", "capability_diagnoses"]
    feedback = llm.calls[1][1][-1]["content"]
    assert "severity" in feedback and "unknown capability 'telepathy'" in feedback
    assert report.analyst == "llm" and report.fallbacks == ()
    (task,) = report.task_diagnoses
    assert task.analyst == "llm" and task.root_cause.startswith("The model's reading")
    assert report.capability_diagnoses[0].shared_cause.startswith("Model: ")


def test_changed_identity_fields_count_as_invalid() -> None:
    failure = make_failure("t-pet-1", 10005, ["wrong_tool"])

    def renamed(conversation: list[dict[str, Any]]) -> dict[str, Any]:
        return _revised_task(conversation) | {"task_id": "some-other-task"}

    llm = ScriptedLLM({"task_diagnosis": [renamed, _revised_task], "capability_diagnoses": [_echo_groups]})
    report = diagnose([failure], llm=llm)  # type: ignore[arg-type]
    assert "task_id must stay 't-pet-1'" in llm.calls[1][1][-1]["content"]
    assert report.task_diagnoses[0].task_id == "t-pet-1"


def test_a_report_that_never_validates_falls_back_to_the_rules(failures: list[Failure]) -> None:
    def schema_break(_: list[dict[str, Any]]) -> Exception:
        return LLMOutputError("model returned JSON that breaks the schema at severity")

    def drops_a_failure(conversation: list[dict[str, Any]]) -> dict[str, Any]:
        draft = _echo_groups(conversation)
        draft["groups"] = draft["groups"][1:]
        return draft

    llm = ScriptedLLM({"task_diagnosis": [schema_break], "capability_diagnoses": [drops_a_failure]})
    rules = diagnose(failures, round_key="r1")
    report = diagnose(failures, round_key="r1", llm=llm, max_attempts=2)  # type: ignore[arg-type]
    assert report.analyst == "llm"
    assert report.task_diagnoses == rules.task_diagnoses  # every task fell back to its rules draft
    assert report.capability_diagnoses == rules.capability_diagnoses
    assert len(report.fallbacks) == len(rules.task_diagnoses) + 1
    assert "after 2 attempt(s)" in report.fallbacks[0] and "breaks the schema" in report.fallbacks[0]
    assert "are in no group" in report.fallbacks[-1]


def test_protocol_models_refuse_inconsistent_groups(report: DiagnosisReport) -> None:
    group = report.capability_diagnoses[0].model_dump()
    with pytest.raises(ValueError, match="frequency 9 differs"):
        CapabilityDiagnosis.model_validate(group | {"frequency": 9})
    with pytest.raises(ValueError, match="unknown L1 domains"):
        CapabilityDiagnosis.model_validate(group | {"l1_domains": {"toc/Atlantis": 4}})


def test_the_rules_own_answers_satisfy_the_strict_schemas_sent_to_a_model(report: DiagnosisReport) -> None:
    # The backend validates every answer against the schema it sent; a schema that refused the
    # rules' own drafts would make every model answer that copies them fail.
    import jsonschema

    from agentomnia.evolution.diagnosis import CapabilityDiagnoses, TaskDiagnosis
    from agentomnia.evolution.prd import PRDText, generate_prds
    from agentomnia.evolution.revise import strict_schema

    for task in report.task_diagnoses:
        jsonschema.validate(task.model_dump(mode="json"), strict_schema(TaskDiagnosis))
    groups = CapabilityDiagnoses(groups=report.capability_diagnoses)
    jsonschema.validate(groups.model_dump(mode="json"), strict_schema(CapabilityDiagnoses))
    prd = generate_prds(report, max_prds=1)[0]
    text = {k: getattr(prd, k) for k in PRDText.model_fields}
    jsonschema.validate(PRDText.model_validate(text).model_dump(mode="json"), strict_schema(PRDText))
    schema = strict_schema(TaskDiagnosis)
    assert schema["additionalProperties"] is False and set(schema["required"]) == set(
        TaskDiagnosis.model_fields
    )
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(report.task_diagnoses[0].model_dump(mode="json") | {"extra": 1}, schema)


def test_a_failed_item_counts_once_by_how_far_it_is_from_passing() -> None:
    assert item_weight([0.2, 0.5]) == pytest.approx(0.5)  # 1 - best score
    assert item_weight([0.95]) == pytest.approx(0.1)  # a near miss still counts a little
    assert item_weight([None]) == 1.0
    failures = [
        make_failure("t-a", 10005, ["wrong_tool"], score=0.2),
        make_failure("t-a", 10005, ["invalid_arguments"], trial=1, score=0.5),
        make_failure("t-a", 10005, ["wrong_tool"], trial=2, score=0.0, eval_id="eval-r0-other"),
        make_failure("t-b", 20000, ["wrong_tool"], score=0.95),
    ]
    weights = failure_weights(failures)
    # t-a: best of 0.2, 0.5, 0.0 is 0.5 -> weight 0.5 over its three failures, whichever evaluation
    assert [weights[f.id] for f in failures] == pytest.approx([0.5 / 3, 0.5 / 3, 0.5 / 3, 0.1])
    tasks = {(t.task_id, t.eval_id, t.dominant_tag): t for t in diagnose(failures).task_diagnoses}
    assert tasks[("t-a", "eval-r0-heuristic", "wrong_tool")].failure_weight == pytest.approx(0.5 / 3)
    assert tasks[("t-a", "eval-r0-heuristic", "invalid_arguments")].failure_weight == pytest.approx(0.5 / 3)
    assert tasks[("t-b", "eval-r0-heuristic", "wrong_tool")].failure_weight == pytest.approx(0.1)
