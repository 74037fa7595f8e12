"""Tool-set synthesis on the mock seed: seed tools keep their names and parameters, every candidate's
fate is recorded, the bound holds (reads that writes need excepted), and near-copies merge."""

from __future__ import annotations

import pytest

from agentomnia.envs.spec import EnvSpec
from agentomnia.envs.state_space import StateSpaceReport, build_state_space
from agentomnia.envs.toolset import Toolset, ToolsetConfig, gen_get, synthesize_toolset
from agentomnia.seeds.models import Seed
from tests.fixtures.mock import MOCK

SMALL_BOUND = 8  # well under what the mock domain's knowledge base and coverage offer


@pytest.fixture(scope="module")
def space() -> tuple[EnvSpec, StateSpaceReport, Seed]:
    seed = MOCK.seed()
    spec, report = build_state_space(MOCK.candidate(), [seed], MOCK.domain())
    return spec, report, seed


@pytest.fixture(scope="module")
def toolset(space: tuple[EnvSpec, StateSpaceReport, Seed]) -> Toolset:
    spec, report, seed = space
    return synthesize_toolset(spec, [seed], report.tool_entities)


def test_seed_tools_survive_with_their_names_and_parameters(
    toolset: Toolset, space: tuple[EnvSpec, StateSpaceReport, Seed]
) -> None:
    _, _, seed = space
    kept = {t.name: t for t in toolset.tools if t.origin == "seed"}
    assert set(kept) == {t.name for t in seed.tools}
    for seed_tool in seed.tools:
        tool = kept[seed_tool.name]
        assert tool.seed_tool == seed_tool.name
        assert set(seed_tool.input_schema["properties"]) <= set(tool.parameters["properties"])
    assert kept["get_user"].kind == "read" and kept["create_task"].kind == "write"


def test_every_candidate_has_a_recorded_fate_and_tools_are_sorted_and_unique(toolset: Toolset) -> None:
    names = [t.name for t in toolset.tools]
    assert names == sorted(set(names))
    kept = {n.tool for n in toolset.table if n.fate == "kept"}
    assert kept == set(names)
    assert {t.origin for t in toolset.tools} >= {"seed", "kb", "generated", "diversified"}
    assert len(toolset.tools) <= ToolsetConfig().max_tools


def test_the_bound_drops_the_lowest_priority_tools_but_keeps_every_entitys_reads_and_a_create(
    space: tuple[EnvSpec, StateSpaceReport, Seed],
) -> None:
    spec, report, seed = space
    small = synthesize_toolset(spec, [seed], report.tool_entities, ToolsetConfig(max_tools=SMALL_BOUND))
    names = {t.name for t in small.tools}
    assert {t.name for t in seed.tools} <= names  # seed tools come first
    beyond = [t for t in small.tools if t.origin != "seed"]
    extra = len(small.tools) - SMALL_BOUND
    # what goes beyond the bound is every entity's reads and one way to make each entity's records
    assert (
        extra > 0 and sum(t.name.startswith(("get_", "list_")) or t.op == "create" for t in beyond) >= extra
    )
    full = synthesize_toolset(spec, [seed], report.tool_entities, ToolsetConfig())
    creatable = {t.entity for t in full.tools if t.op == "create"}
    assert creatable <= {t.entity for t in small.tools if t.op == "create"}
    removed = [n for n in small.table if n.fate == "removed" and "bound" in n.reason]
    assert removed and all(n.candidate not in names for n in removed)
    assert all(f"{SMALL_BOUND}-tool bound" in n.reason for n in removed)


def test_a_generated_tool_that_repeats_a_kept_operation_is_merged(
    space: tuple[EnvSpec, StateSpaceReport, Seed], toolset: Toolset
) -> None:
    spec, _, _ = space
    merged = [n for n in toolset.table if n.fate == "merged"]
    assert merged and all(n.tool in {t.name for t in toolset.tools} for n in merged)
    twin = gen_get(spec.entity("user"))  # the seed's get_user already reads one user by key
    assert any(n.candidate == twin.name and n.origin == "generated" and n.tool == "get_user" for n in merged)


def test_without_diversification_no_diversified_shapes_appear(
    space: tuple[EnvSpec, StateSpaceReport, Seed],
) -> None:
    spec, report, seed = space
    plain = synthesize_toolset(spec, [seed], report.tool_entities, ToolsetConfig(diversify=False))
    assert plain.tools and all(t.origin != "diversified" for t in plain.tools)
