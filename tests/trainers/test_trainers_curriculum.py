"""The RCRL state machine: retry-triggered extension, its cap, Eq. 10's three branches, the epoch switch."""

from __future__ import annotations

import pytest

from trainers.curriculum import CurriculumSettings, RolloutCurriculum, eq10_delta


def _curriculum(turns: int = 10, **settings: float) -> RolloutCurriculum:
    return RolloutCurriculum({"q": turns}, CurriculumSettings(**settings))  # type: ignore[arg-type]


def test_eq10_branches() -> None:
    assert eq10_delta(0.75, threshold=0.5, delta_max=3) == -3
    assert eq10_delta(0.5, threshold=0.5, delta_max=3) == -3
    assert eq10_delta(0.25, threshold=0.5, delta_max=3) == -1
    assert eq10_delta(0.0, threshold=0.5, delta_max=3) == 1


def test_all_zero_group_extends_by_alpha_in_the_first_epoch_until_the_cap() -> None:
    curriculum = _curriculum(turns=10, alpha=0.2, max_retries=2)
    assert curriculum.prefix("q") == 0 and curriculum.step_size("q") == 2
    first = curriculum.observe("q", [0.0, 0.0, 0.0])
    assert first.retry and first.prefix == 2
    assert curriculum.observe("q", [0.0, 0.0]).prefix == 4
    capped = curriculum.observe("q", [0.0, 0.0])
    assert not capped.retry and capped.prefix == 4 and "T_max" in capped.reason


def test_a_success_stops_retrying() -> None:
    curriculum = _curriculum()
    decision = curriculum.observe("q", [0.0, 1.0])
    assert not decision.retry and decision.prefix == 0


def test_extension_never_covers_the_last_turn() -> None:
    curriculum = _curriculum(turns=3, alpha=1.0, max_retries=5)
    assert curriculum.observe("q", [0.0]).prefix == 2
    stuck = curriculum.observe("q", [0.0])
    assert not stuck.retry and stuck.prefix == 2


def test_round_end_applies_eq10_and_switches_the_step_size() -> None:
    curriculum = RolloutCurriculum(
        {"solved": 10, "partial": 10, "failing": 10},
        CurriculumSettings(max_retries=0, initial_prefix=5, delta_max=2),
    )
    curriculum.observe("solved", [1.0, 1.0])
    curriculum.observe("partial", [1.0, 0.0, 0.0, 0.0])
    assert not curriculum.round_complete
    curriculum.observe("failing", [0.0, 0.0])
    assert curriculum.round_complete
    assert curriculum.end_round() == {"solved": -2, "partial": -1, "failing": 1}
    assert {k: s.prefix for k, s in curriculum.states.items()} == {"solved": 3, "partial": 4, "failing": 6}
    assert curriculum.epoch == 1 and curriculum.step_size("failing") == 1 and not curriculum.round_complete
    assert curriculum.history == [{"solved": 3, "partial": 4, "failing": 6}]


def test_round_end_resets_retries_and_clips_at_zero() -> None:
    curriculum = _curriculum(turns=10, max_retries=1, delta_max=4)
    curriculum.observe("q", [0.0])
    assert curriculum.observe("q", [0.0]).retry is False
    curriculum.observe("q", [1.0])
    curriculum.end_round()
    assert curriculum.prefix("q") == 0  # 2 - 4 clipped at 0
    assert curriculum.observe("q", [0.0]).retry  # retries were reset: extension allowed again, by 1 now
    assert curriculum.prefix("q") == 1


def test_bad_inputs_are_refused_with_reasons() -> None:
    with pytest.raises(ValueError, match="at least one"):
        RolloutCurriculum({"q": 0})
    with pytest.raises(KeyError, match="not in the curriculum"):
        _curriculum().prefix("other")
    with pytest.raises(ValueError, match="at least one reward"):
        _curriculum().observe("q", [])
