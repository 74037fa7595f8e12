"""Coordinates check themselves against the taxonomy; coverage and KL count along the axes."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError
from scipy.stats import entropy

from agentomnia.taxonomy import (
    Coordinate,
    coverage,
    distribution,
    kl_divergence,
    profile_mask,
    taxonomy_index,
)

TOC_FINANCE = next(d.id for d in taxonomy_index().l2s(split="toc", l1="Finance"))


def coord(**overrides: Any) -> Coordinate:
    fields: dict[str, Any] = {
        "split": "tob",
        "taxonomy_id": 20096,
        "l1": "Logistics",
        "l2": "Logistics Specialist",
        "capabilities": ["tool_use", "information_gathering"],
        "difficulty": profile_mask(["tool_parameter_grounding", "risk_clarification"]),
        "primary_difficulty": "risk_clarification",
    }
    return Coordinate(**(fields | overrides))


def test_valid_coordinate_and_normalised_capabilities() -> None:
    c = coord(capabilities=["tool_use", "information_gathering", "tool_use"])
    assert c.capabilities == ("information_gathering", "tool_use")
    assert c.atoms == ("tool_parameter_grounding", "risk_clarification")
    assert c.l1_key == "tob/Logistics"
    assert c == coord() and hash(c) == hash(coord())
    with pytest.raises(ValidationError):
        c.difficulty = 3  # type: ignore[misc]


def test_for_domain_fills_names_and_picks_primary() -> None:
    c = Coordinate.for_domain(10012, ["state_management"], ["ambiguous_goal", "dynamic_planning"])
    assert (c.split, c.l1, c.l2) == ("toc", "Food", "Food Delivery")
    assert c.primary_difficulty == "ambiguous_goal"
    explicit = Coordinate.for_domain(10012, ["state_management"], 0b10001, primary="dynamic_planning")
    assert explicit.primary_difficulty == "dynamic_planning" and explicit.difficulty == 17
    with pytest.raises(ValueError, match="give at least one atom"):
        Coordinate.for_domain(10012, ["state_management"], [])


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"taxonomy_id": 20999}, "20999 is not in taxonomy.csv"),
        ({"l2": "Warehouse Manager"}, "do not match taxonomy id 20096"),
        ({"split": "toc"}, "do not match taxonomy id 20096"),
        ({"split": "b2b"}, "split"),
        ({"capabilities": []}, "at least 1 item"),
        ({"capabilities": ["coding"]}, "unknown capabilities"),
        ({"capabilities": "tool_use"}, "not one string"),
        ({"primary_difficulty": "dynamic_planning"}, "not set in the difficulty profile"),
        ({"primary_difficulty": "chaos"}, "unknown primary atom"),
        ({"difficulty": 0}, "greater than or equal to 1"),
        ({"difficulty": 256}, "less than or equal to 255"),
        ({"round": "r1"}, "Extra inputs are not permitted"),
    ],
)
def test_invalid_coordinates_are_rejected(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        coord(**overrides)


def test_coverage_counts_every_axis() -> None:
    items = [
        coord(),
        coord(),
        Coordinate.for_domain(20000, ["data_analysis"], ["structured_information"]),
        Coordinate.for_domain(
            TOC_FINANCE, ["data_analysis", "tool_use"], ["ambiguous_goal", "risk_clarification"]
        ),
    ]
    cov = coverage(items)
    assert cov.total == 4
    assert cov.split == {"toc": 1, "tob": 3, "toe": 0}
    assert len(cov.l1) == 90 and len(cov.l2) == 354
    assert cov.l1["tob/Logistics"] == 2 and cov.l1["tob/Finance"] == 1 and cov.l1["toc/Finance"] == 1
    assert cov.l2[20096] == 2 and sum(cov.l2.values()) == 4
    assert cov.capability["tool_use"] == 3 and cov.capability["data_analysis"] == 2
    assert cov.capability["office_document"] == 0
    assert cov.atom["risk_clarification"] == 3 and cov.atom["tool_parameter_grounding"] == 2
    assert cov.primary == {
        "ambiguous_goal": 0,
        "tool_parameter_grounding": 0,
        "structured_information": 1,
        "long_context_evidence": 0,
        "dynamic_planning": 0,
        "multi_source_inconsistency": 0,
        "progressive_disclosure": 0,
        "risk_clarification": 3,
    }
    assert "toe" in cov.gaps()["split"] and "20096" not in cov.gaps()["l2"]
    assert {"axis": "split", "key": "tob", "count": 3} in cov.rows()


def test_coverage_of_records_carrying_a_coordinate() -> None:
    class Carrier(BaseModel):
        model_config = ConfigDict(frozen=True)
        coordinate: Coordinate

    cov = coverage([Carrier(coordinate=coord())], complete=False)
    assert cov.split == {"tob": 1} and cov.l1 == {"tob/Logistics": 1} and cov.l2 == {20096: 1}
    with pytest.raises(TypeError, match="neither a Coordinate"):
        coverage([object()])


def test_distribution_normalises_and_rejects_nonsense() -> None:
    assert distribution({"a": 1, "b": 3}) == {"a": 0.25, "b": 0.75}
    with pytest.raises(ValueError, match="sum to zero"):
        distribution({"a": 0})
    with pytest.raises(ValueError, match="non-negative"):
        distribution({"a": -1, "b": 2})


def test_kl_matches_hand_computed_value() -> None:
    p = {"toc/Finance": 0.5, "tob/Finance": 0.5}
    q = {"toc/Finance": 0.25, "tob/Finance": 0.75}
    expected = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
    assert kl_divergence(p, q, epsilon=0) == pytest.approx(expected, abs=1e-12)
    assert kl_divergence(p, q) == pytest.approx(expected, abs=1e-5)
    assert kl_divergence(p, p) == 0.0
    # Counts are normalised first, so scaling changes nothing.
    assert kl_divergence({"a": 2, "b": 2}, {"a": 1, "b": 3}, epsilon=0) == pytest.approx(expected)


def test_kl_smoothing_matches_scipy_and_is_finite() -> None:
    p = {"toc/Food": 6, "toc/Travel": 3, "tob/Logistics": 1}
    q = {"toc/Food": 2, "toc/Travel": 8, "toe/Scheduling": 5}
    eps = 1e-3
    keys = sorted(set(p) | set(q))
    pn, qn = distribution(p), distribution(q)
    ps = [pn.get(k, 0) + eps for k in keys]
    qs = [qn.get(k, 0) + eps for k in keys]
    assert kl_divergence(p, q, epsilon=eps) == pytest.approx(float(entropy(ps, qs)), rel=1e-12)
    assert math.isfinite(kl_divergence(p, q))
    assert kl_divergence(p, q, epsilon=0) == math.inf
    with pytest.raises(ValueError, match="epsilon must be >= 0"):
        kl_divergence(p, q, epsilon=-1)


def test_json_round_trip_keeps_identity() -> None:
    c = Coordinate.for_domain(30001, ["office_document", "task_understanding"], 0b0100_0001)
    again = Coordinate.model_validate_json(c.model_dump_json())
    assert again == c and again.capabilities == ("office_document", "task_understanding")
    assert again.primary_difficulty == "progressive_disclosure"
