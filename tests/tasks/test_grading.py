"""Rubric grading: deterministic checks, unscored items, pass only at exactly 1.0."""

from __future__ import annotations

import pytest

from agentomnia.tasks import Check, Outcome, RubricItem, Task, grade, values_match
from agentomnia.tasks.grading import diff_states, empty_outcome, reference_outcome_passes
from agentomnia.taxonomy import Coordinate

S0 = {"claims": {"C-1": {"claim_id": "C-1", "status": "open", "amount": 40.0}}, "now": "2026-03-02T09:00:00"}


def _task(*items: RubricItem, verifier: str | None = None) -> Task:
    return Task(
        env_id="env1",
        kind="dag_standard",
        coordinate=Coordinate.for_domain(20096, ["tool_use"], ["tool_parameter_grounding"]),
        init_config=S0,
        query="Approve the open claim and tell me its amount.",
        rubric=items,
        verifier_code=verifier,
    )


APPROVED = RubricItem(id="T1", text="claim approved", scope="task", weight=2,
                      check=Check(kind="field_equals", table="claims", key="C-1", field="status", value="approved"))  # fmt: skip
AMOUNT = RubricItem(
    id="T2",
    text="reports the amount",
    scope="task",
    check=Check(kind="answer_equals", field="amount", value=40, tolerance=0.01),
)
JUDGED = RubricItem(id="G1", text="the reply is polite", scope="general")


def _final(status: str) -> dict:  # type: ignore[type-arg]
    return {"claims": {"C-1": {**S0["claims"]["C-1"], "status": status}}, "now": S0["now"]}  # type: ignore[dict-item]


def test_pass_needs_every_item() -> None:
    task = _task(APPROVED, AMOUNT)
    good = grade(task, Outcome(final_state=_final("approved"), answer={"amount": "40.00"}))
    assert good.passed and good.value == 1.0 and good.earned == 3
    half = grade(task, Outcome(final_state=_final("approved"), answer={"amount": 41}))
    assert not half.passed and half.value == pytest.approx(2 / 3)


def test_item_without_check_is_unscored_not_zero() -> None:
    task = _task(APPROVED, JUDGED)
    score = grade(task, Outcome(final_state=_final("approved")))
    assert score.unscored == 1 and score.value == 1.0 and not score.passed
    judged = grade(task, Outcome(final_state=_final("approved")), judge=lambda item, t, o: True)
    assert judged.passed and judged.items[1].judged


def test_verifier_check_uses_the_runner_or_stays_unscored() -> None:
    task = _task(
        RubricItem(id="T1", text="v", scope="task", check=Check(kind="verifier")),
        verifier="def check_func(s): return True",
    )
    assert grade(task, Outcome(final_state=_final("open"))).unscored == 1
    runner_calls = []

    def runner(code, initial, final):  # type: ignore[no-untyped-def]
        runner_calls.append(code)
        return final["claims"]["C-1"]["status"] == "approved"

    assert grade(task, Outcome(final_state=_final("approved")), verifier=runner).passed
    assert not grade(task, Outcome(final_state=_final("open")), verifier=runner).passed
    assert len(runner_calls) == 2


def test_oracle_rejects_a_rubric_the_empty_run_passes() -> None:
    vacuous = _task(
        RubricItem(
            id="T1",
            text="no claim C-9",
            scope="task",
            check=Check(kind="record_absent", table="claims", match={"claim_id": "C-9"}),
        )
    )
    ok, why = reference_outcome_passes(
        vacuous, Outcome(final_state=_final("approved")), empty_outcome(vacuous)
    )
    assert not ok and "empty run passes" in why
    real = _task(APPROVED)
    assert reference_outcome_passes(real, Outcome(final_state=_final("approved")), empty_outcome(real)) == (
        True,
        "",
    )


def test_call_and_collateral_checks() -> None:
    task = _task(
        RubricItem(
            id="T1",
            text="approved via the tool",
            scope="task",
            check=Check(kind="called", tool="approve_claim", args={"claim_id": "C-1"}),
        ),
        RubricItem(
            id="T2",
            text="amount untouched",
            scope="task",
            check=Check(kind="field_unchanged", table="claims", key="C-1", field="amount"),
        ),
    )
    calls = [("approve_claim", {"claim_id": "C-1"})]
    assert grade(task, Outcome(final_state=_final("approved"), calls=calls)).passed
    changed = _final("approved")
    changed["claims"]["C-1"]["amount"] = 1.0
    assert not grade(task, Outcome(final_state=changed, calls=calls)).passed


def test_values_match_and_diff() -> None:
    assert (
        values_match(" Lisbon  ", "lisbon") and values_match([1, 2], [2, 1]) and not values_match([1], [1, 1])
    )
    assert values_match({"a": 1.0, "b": "x"}, {"a": 1}) and values_match(True, 1.0) is not None
    diff = diff_states(S0, _final("approved"))
    assert diff == [
        {"table": "claims", "key": "C-1", "field": "status", "before": "open", "after": "approved"}
    ]


def test_task_validation_errors_are_clear() -> None:
    with pytest.raises(ValueError, match="at least one rubric item"):
        _task()
    with pytest.raises(ValueError, match="repeat"):
        _task(APPROVED, APPROVED)


def test_a_task_id_does_not_depend_on_how_long_synthesis_took() -> None:
    base = _task(APPROVED)
    fast = base.model_copy(update={"id": ""}).model_dump() | {
        "metadata": {"seconds": 0.12, "solver_seconds": 0.1}
    }
    slow = fast | {"metadata": {"seconds": 3.4, "solver_seconds": 2.9}}
    assert Task.model_validate(fast).id == Task.model_validate(slow).id == base.id
    # any other metadata is content: it changes the id
    assert Task.model_validate(fast | {"metadata": {"family": "knapsack"}}).id != base.id
    # a task stored under schema 1 hashed its timings; its id still validates on load
    old = Task.model_validate(slow | {"schema_version": 1})
    assert old.id != base.id
    assert Task.model_validate(old.model_dump()).id == old.id


def test_a_new_record_check_counts_only_records_the_run_made() -> None:
    """ "A new record in claims has {status: open}" is not met by a claim that was already open."""
    task = _task(
        RubricItem(
            id="T1",
            text="A new record in claims has {'status': 'open'}.",
            scope="task",
            check=Check(kind="record_exists", table="claims", match={"status": "open"}),
        )
    )
    before = _final("open")
    assert not grade(task, Outcome(final_state=before)).passed
    made = {**before, "claims": {**before["claims"], "C-2": {**before["claims"]["C-1"], "claim_id": "C-2"}}}
    assert grade(task, Outcome(final_state=made)).passed
