"""The capability and atom axes: fixed ids and order, usable levers, profile bit arithmetic."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from agentomnia.taxonomy import (
    ATOM_IDS,
    CAPABILITY_IDS,
    atom,
    atoms,
    capabilities,
    capability,
    guess_capabilities,
    lever,
    primary_atom,
    profile_atoms,
    profile_mask,
)
from agentomnia.taxonomy.axes import read_atoms

SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


def test_capability_ids_in_axis_order() -> None:
    assert CAPABILITY_IDS == (
        "task_understanding",
        "information_gathering",
        "planning_decision",
        "state_management",
        "tool_use",
        "code_programmatic",
        "data_analysis",
        "office_document",
        "interactive_collaboration",
        "reliability_safety",
    )
    assert [c.name for c in capabilities()][2] == "Planning & Decision Making"
    assert all(len(c.signals) >= 3 and c.evaluates for c in capabilities())


def test_atom_ids_in_bit_order() -> None:
    assert ATOM_IDS == (
        "ambiguous_goal",
        "tool_parameter_grounding",
        "structured_information",
        "long_context_evidence",
        "dynamic_planning",
        "multi_source_inconsistency",
        "progressive_disclosure",
        "risk_clarification",
    )
    assert atom("progressive_disclosure").name == "Progressive Disclosure & State Evolution"


def test_levers_are_machine_usable() -> None:
    ids = [lv.id for a in atoms() for lv in a.levers]
    assert len(ids) == len(set(ids)) and all(SNAKE.match(i) for i in ids)
    assert all(len(a.levers) >= 5 for a in atoms())
    for lever_id, owner in {
        "distractor_injection": "long_context_evidence",
        "indirect_entity_reference": "ambiguous_goal",
        "multi_candidate": "ambiguous_goal",
        "withhold_detail_until_asked": "progressive_disclosure",
        "conflicting_sources": "multi_source_inconsistency",
        "boundary_tie": "structured_information",
        "irreversible_action_confirmation": "risk_clarification",
    }.items():
        found_atom, found = lever(lever_id)
        assert found_atom.id == owner and found.text
    # Every part of a task that a synthesizer can change has levers acting on it.
    assert {lv.acts_on for a in atoms() for lv in a.levers} == {"query", "state", "tools", "user"}


def test_unknown_names_fail_with_choices() -> None:
    with pytest.raises(KeyError, match="use one of task_understanding"):
        capability("coding")
    with pytest.raises(KeyError, match="unknown atom 'noise'"):
        atom("noise")
    with pytest.raises(KeyError, match="unknown lever"):
        lever("make_it_hard")


def test_profile_round_trip_over_all_masks() -> None:
    for mask in range(256):
        assert profile_mask(profile_atoms(mask)) == mask
    assert profile_mask(["ambiguous_goal"]) == 1
    assert profile_mask(["risk_clarification", "tool_parameter_grounding"]) == 0b1000_0010
    with pytest.raises(ValueError, match="outside 0..255"):
        profile_atoms(256)
    with pytest.raises(KeyError):
        profile_mask(["ambiguous"])


def test_primary_atom_follows_the_fixed_precedence() -> None:
    assert primary_atom(profile_mask(["tool_parameter_grounding"])) == "tool_parameter_grounding"
    assert (
        primary_atom(profile_mask(["tool_parameter_grounding", "structured_information"]))
        == "structured_information"
    )
    assert (
        primary_atom(profile_mask(["ambiguous_goal", "progressive_disclosure"])) == "progressive_disclosure"
    )
    assert primary_atom(255) == "risk_clarification"
    with pytest.raises(ValueError, match="empty difficulty profile"):
        primary_atom(0)


def test_atom_file_checks_rank_and_lever_uniqueness(tmp_path: Path) -> None:
    raw = [a.model_dump() for a in atoms()]
    raw[1]["levers"][0]["id"] = raw[0]["levers"][0]["id"]
    bad = tmp_path / "atoms.yaml"
    bad.write_text(yaml.safe_dump(raw), encoding="utf-8")
    with pytest.raises(ValueError, match="lever ids must be unique"):
        read_atoms(bad)
    raw = [a.model_dump() for a in atoms()]
    raw[0]["primary_rank"] = raw[1]["primary_rank"]
    bad.write_text(yaml.safe_dump(raw), encoding="utf-8")
    with pytest.raises(ValueError, match="primary_rank must number the atoms"):
        read_atoms(bad)


def test_guess_capabilities_from_text() -> None:
    guessed = guess_capabilities("Compute the average order total per month and email the report to the team")
    assert guessed[0] == "data_analysis"
    assert "office_document" in guessed
    assert guess_capabilities("zzz qqq") == ()
