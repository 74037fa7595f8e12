"""The Figure-18 alignment metric on distributions small enough to compute by hand."""

from __future__ import annotations

import math

import pytest

from agentomnia.evolution.alignment import alignment, axis_counts
from agentomnia.taxonomy import Coordinate


def _at(taxonomy_id: int, n: int) -> list[Coordinate]:
    return [Coordinate.for_domain(taxonomy_id, ["tool_use"], ["tool_parameter_grounding"])] * n


PET, HOME = 10005, 10004  # both toc/Lifestyle
ADVISOR = 20000  # tob/Finance
TRAIN = 10016  # toc/Travel


def test_kl_values_match_a_hand_computation() -> None:
    failures = _at(PET, 2) + _at(ADVISOR, 2)  # Lifestyle 0.5, Finance 0.5
    round_ = _at(PET, 2) + _at(HOME, 1) + _at(ADVISOR, 1)  # Lifestyle 0.75, Finance 0.25
    previous = _at(TRAIN, 4)  # Travel 1.0
    a = alignment(round_, previous, failures, epsilon=1e-3)
    assert a.support == ("tob/Finance", "toc/Lifestyle", "toc/Travel")
    assert a.p_round == {"tob/Finance": 0.25, "toc/Lifestyle": 0.75, "toc/Travel": 0.0}
    assert a.p_failures == {"tob/Finance": 0.5, "toc/Lifestyle": 0.5, "toc/Travel": 0.0}
    assert a.p_previous == {"tob/Finance": 0.0, "toc/Lifestyle": 0.0, "toc/Travel": 1.0}
    # additive smoothing: +0.001 on every key of the shared support, then renormalise (total 1.003)
    z = 1.003
    p = [0.251 / z, 0.751 / z, 0.001 / z]
    q = [0.501 / z, 0.501 / z, 0.001 / z]
    prev = [0.001 / z, 0.001 / z, 1.001 / z]
    expected_round = sum(pk * math.log(pk / qk) for pk, qk in zip(p, q, strict=True))
    expected_previous = sum(pk * math.log(pk / qk) for pk, qk in zip(prev, q, strict=True))
    assert a.kl_round == pytest.approx(expected_round, rel=1e-9)
    assert a.kl_previous == pytest.approx(expected_previous, rel=1e-9)
    assert a.kl_round == pytest.approx(0.1305, abs=1e-3)  # close to the unsmoothed 0.75 ln 1.5 + 0.25 ln 0.5
    assert a.improved is True and (a.n_round, a.n_previous, a.n_failures) == (4, 4, 4)


def test_a_round_identical_to_the_failures_has_zero_divergence() -> None:
    failures = _at(PET, 3) + _at(TRAIN, 1)
    a = alignment(_at(HOME, 6) + _at(TRAIN, 2), [], failures)
    assert a.kl_round == pytest.approx(0.0, abs=1e-12)
    assert a.kl_previous is None and a.p_previous is None and a.improved is None


def test_other_axes_and_bad_inputs() -> None:
    coords = _at(PET, 2) + [
        Coordinate.for_domain(ADVISOR, ["data_analysis", "tool_use"], ["dynamic_planning"])
    ]
    assert axis_counts(coords, "capability") == {"tool_use": 3, "data_analysis": 1}
    assert axis_counts(coords, "l2") == {"10005": 2, "20000": 1}
    assert alignment(coords, coords, coords, axis="primary").kl_round == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="unknown axis"):
        axis_counts(coords, "colour")
    with pytest.raises(ValueError, match="no failure coordinates"):
        alignment(coords, coords, [])
    with pytest.raises(ValueError, match="materialize"):
        alignment([], coords, coords)
    with pytest.raises(ValueError, match="epsilon"):
        alignment(coords, coords, coords, epsilon=0)


def test_weighted_failures_count_each_item_by_its_weight() -> None:
    failures = _at(PET, 2) + _at(ADVISOR, 1)
    # one Lifestyle item failed twice (half its weight on each trial) and one Finance item once
    weighted = alignment(_at(PET, 1) + _at(ADVISOR, 1), [], failures, failure_weights=[0.5, 0.5, 1.0])
    assert weighted.p_failures == {"tob/Finance": 0.5, "toc/Lifestyle": 0.5}
    assert weighted.kl_round == pytest.approx(0.0, abs=1e-12) and weighted.n_failures == 3
    # unweighted, the twice-failed item counts twice: 1/3 Finance, 2/3 Lifestyle
    plain = alignment(_at(PET, 1) + _at(ADVISOR, 1), [], failures)
    z = 1.002
    expected = (0.501 / z) * math.log(0.501 / (1 / 3 + 0.001)) + (0.501 / z) * math.log(
        0.501 / (2 / 3 + 0.001)
    )
    assert plain.kl_round == pytest.approx(expected, rel=1e-9)
    with pytest.raises(ValueError):
        alignment(failures, [], failures, failure_weights=[1.0])


def test_data_by_prd_follows_seeds_to_environments_to_tasks() -> None:
    """Each PRD is credited with the seeds that name it, the environments those seeds built and the
    tasks on them; a solver task on its own environment goes to the PRD targeting its domain; what no
    PRD explains is a row of its own, and a shared seed counts for both PRDs."""
    from types import SimpleNamespace
    from typing import Any, cast

    from agentomnia.evolution import NO_PRD, data_by_prd
    from agentomnia.evolution.prd import PRD

    def prd(prd_id: str, l1: list[str], l2: list[int]) -> PRD:
        return PRD.model_validate({"prd_id": prd_id, "priority": "P0", "status": "active", "scenario": "s",
                                   "requirements": ["r"], "case_study": "c", "target_l1": l1, "target_l2": l2})  # fmt: skip

    def seed(sid: str, *prd_ids: str) -> Any:
        return SimpleNamespace(id=sid, metadata={"prd_ids": list(prd_ids)} if prd_ids else {})

    def task(env_id: str, kind: str, taxonomy_id: int) -> Any:
        coordinate = Coordinate.for_domain(taxonomy_id, ["tool_use"], ["tool_parameter_grounding"])
        return SimpleNamespace(env_id=env_id, kind=kind, coordinate=coordinate)

    prds = [prd("A", ["toc/Lifestyle"], [PET]), prd("B", ["tob/Finance"], [ADVISOR])]
    seeds = [seed("s1", "A"), seed("s2", "A", "B"), seed("s3", "B"), seed("s4")]
    envs = {"e1": ["s1"], "e2": ["s2", "s3"], "e3": ["s4"]}
    tasks = [task("e1", "dag_standard", PET), task("e1", "program", PET), task("e2", "dag_challenge", ADVISOR),
             task("e3", "dag_standard", TRAIN), task("solver-env", "solver_guided", ADVISOR),
             task("solver-env-2", "solver_anchored", TRAIN)]  # fmt: skip
    rows = {r["prd"]: r for r in data_by_prd(prds, cast(Any, seeds), envs, cast(Any, tasks))}
    assert list(rows) == ["A", "B", NO_PRD]
    assert (rows["A"]["seeds"], rows["A"]["environments"], rows["A"]["tasks"]) == (2, 2, 3)
    assert (rows["B"]["seeds"], rows["B"]["environments"], rows["B"]["tasks"]) == (2, 1, 2)
    assert (rows[NO_PRD]["seeds"], rows[NO_PRD]["environments"], rows[NO_PRD]["tasks"]) == (1, 1, 2)
    assert rows["A"]["dag_standard"] == 1 and rows["A"]["program"] == 1 and rows["A"]["dag_challenge"] == 1
    assert rows["B"]["solver_guided"] == 1 and rows["B"]["program"] == 0
    assert rows[NO_PRD]["solver_anchored"] == 1
    assert data_by_prd(prds[:1], cast(Any, seeds[:1]), {"e1": ["s1"]}, []) == [
        {"prd": "A", "priority": "P0", "seeds": 1, "environments": 1, "tasks": 0}
    ]
