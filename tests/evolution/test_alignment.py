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
