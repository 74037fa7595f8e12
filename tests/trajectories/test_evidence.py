"""One arithmetic step from stated values is derived; anything further is not."""

from __future__ import annotations

from agentomnia.trajectories.evidence import combines


def test_sums_differences_and_ratios_of_stated_values_are_derived() -> None:
    assert combines(5, [1, 4]) and combines(-804.9, [100.0, 904.9]) and combines(0.25, [1, 4])
    assert combines(806.9, [2.0, 804.9])


def test_values_two_steps_away_or_from_one_number_are_not() -> None:
    assert not combines(13, [1, 4, 6])  # 1 + 4 + 6 = 11, and no pair gives 13
    assert not combines(8, [4])  # a single value cannot be combined with itself
    assert not combines(3, [])
