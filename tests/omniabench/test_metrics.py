"""pass@1, pass@k and pass^k against hand-computed values; infrastructure errors kept apart."""

from __future__ import annotations

import pytest

from agentomnia.omniabench.metrics import pass_at_k, pass_hat_k, report
from agentomnia.omniabench.models import EvalResult
from tests.fixtures.benchmark import make_task, result_of


def _trials(task, outcomes: list[bool | None], **kw) -> list[EvalResult]:  # type: ignore[no-untyped-def]
    """One result per outcome: True passed, False failed, None an infrastructure error."""
    return [
        result_of(task, trial=i, passed=bool(o), score=1.0 if o else 0.0, infra=None if o is not None else "worker died", **kw)
        for i, o in enumerate(outcomes)
    ]  # fmt: skip


def test_estimators_match_hand_computed_values() -> None:
    # n=3, c=1: pass@2 = 1 - C(2,2)/C(3,2) = 2/3; pass^2 = C(1,2)/C(3,2) = 0
    assert pass_at_k(3, 1, 2) == pytest.approx(2 / 3)
    assert pass_hat_k(3, 1, 2) == 0.0
    # n=5, c=2: pass@3 = 1 - C(3,3)/C(5,3) = 0.9; pass^2 = C(2,2)/C(5,2) = 0.1
    assert pass_at_k(5, 2, 3) == pytest.approx(0.9)
    assert pass_hat_k(5, 2, 2) == pytest.approx(0.1)
    assert pass_at_k(4, 0, 4) == 0.0 and pass_hat_k(4, 4, 4) == 1.0
    assert pass_at_k(3, 2, 2) == 1.0  # fewer failures than draws: some draw must pass
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_at_k(2, 1, 3)


def test_report_averages_over_tasks_and_keeps_infra_errors_apart() -> None:
    a = make_task(
        "Approve the first claim of shipment SHP-001.", taxonomy_id=20096, capabilities=("tool_use",)
    )
    b = make_task("Approve the open claim on SHP-002 please.", taxonomy_id=10000,
                  capabilities=("tool_use", "data_analysis"), atoms=("structured_information", "dynamic_planning"))  # fmt: skip
    c = make_task("Reject the duplicate claim for SHP-001.", taxonomy_id=20096, kind="program")
    d = make_task("Close out every claim of shipment SHP-002.", taxonomy_id=30000)
    results = (
        _trials(a, [True, False, False])
        + _trials(b, [True, True, False], route="dag", challenging=True)
        + _trials(c, [True, None, True], route="program")
        + _trials(d, [None, None, None])
    )
    rep = report(results, k=2)
    overall = rep.overall
    assert overall.tasks == 3  # d ran no usable trial
    assert overall.trials == 8 and overall.passed == 5 and overall.infra_errors == 4
    # a: 1/3, b: 2/3, c: 2/2 -> pass@1 = (1/3 + 2/3 + 1) / 3
    assert overall.pass_at_1 == pytest.approx((1 / 3 + 2 / 3 + 1) / 3)
    # pass@2: a 2/3, b 1, c 1 (n=2, c=2); pass^2: a 0, b C(2,2)/C(3,2)=1/3, c 1
    assert overall.pass_at_k == pytest.approx((2 / 3 + 1 + 1) / 3)
    assert overall.pass_hat_k == pytest.approx((0 + 1 / 3 + 1) / 3)

    tob = rep.value("split", "tob")
    assert tob is not None and tob.tasks == 2 and tob.pass_at_1 == pytest.approx((1 / 3 + 1) / 2)
    toe = rep.value("split", "toe")
    assert toe is not None and toe.tasks == 0 and toe.infra_errors == 3
    # a task counts under each of its capabilities and atoms
    assert rep.value("capability", "tool_use").tasks == 3  # type: ignore[union-attr]
    assert rep.value("capability", "data_analysis").tasks == 1  # type: ignore[union-attr]
    assert rep.value("atom", "dynamic_planning").pass_at_1 == pytest.approx(2 / 3)  # type: ignore[union-attr]
    assert rep.value("route", "program").pass_hat_k == 1.0  # type: ignore[union-attr]
    assert rep.value("challenging", "challenging").tasks == 1  # type: ignore[union-attr]
    assert rep.value("l1", "tob/Logistics") is not None


def test_default_k_is_the_trial_count_and_tables_render() -> None:
    task = make_task("Approve the first claim of shipment SHP-001.")
    rep = report(_trials(task, [True, False, True]))
    assert rep.k == 3 and rep.policy == "test-policy" and rep.eval_id == "e1"
    assert rep.overall.pass_at_k == 1.0 and rep.overall.pass_hat_k == 0.0
    rows = rep.rows("split")
    assert rows == [{"split": "tob", "tasks": 1, "trials": 3, "passed": 2, "pass@1": 0.6667, "pass@3": 1.0,
                     "pass^3": 0.0, "infra_errors": 0, "mean_score": 0.6667}]  # fmt: skip
    text = rep.render()
    assert "pass^3" in text and "tob/Logistics" in text and "dag_s" in text
    with pytest.raises(ValueError, match="no breakdown"):
        rep.rows("colour")
