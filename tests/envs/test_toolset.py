"""Tool-set synthesis on the mock seed: seed tools keep their names and parameters, every candidate's
fate is recorded, the bound holds (reads that writes need excepted), and near-copies merge."""

from __future__ import annotations

import pytest

from agentomnia.envs.naming import plural
from agentomnia.envs.spec import AttributeSpec, EntitySpec, EnvSpec, is_compound
from agentomnia.envs.state_space import StateSpaceReport, build_state_space
from agentomnia.envs.toolset import (
    Normalization,
    Toolset,
    ToolsetConfig,
    bounded,
    gen_get,
    synthesize_toolset,
    with_left_out,
)
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
    # what goes beyond the bound is every entity's reads, one way to make each entity's records, and
    # the domain behaviour that holds its share of the toolset beside them
    assert extra > 0
    assert (
        sum(t.name.startswith(("get_", "list_")) or t.op == "create" or is_compound(spec, t) for t in beyond)
        >= extra
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


def test_plain_tools_give_way_so_domain_behaviour_keeps_a_third_of_the_toolset(
    space: tuple[EnvSpec, StateSpaceReport, Seed],
) -> None:
    """Plain tools (acting on their own entity alone) are admitted only while tools with domain
    behaviour across entities stay a third of the toolset; without that floor the bound alone decides."""
    spec, report, seed = space
    every = synthesize_toolset(spec, [seed], report.tool_entities, ToolsetConfig(max_tools=1000)).tools
    compound = [t for t in every if is_compound(spec, t)]
    # fewer tools with behaviour than the plain ones could outnumber: keep a handful of them
    scarce = [t for t in every if not is_compound(spec, t)] + compound[:14]
    cfg = ToolsetConfig(max_tools=56)
    kept, left_out = bounded(spec, scarce, cfg)
    share = sum(is_compound(spec, t) for t in kept) / len(kept)
    assert share >= 1 / 3 - 1e-9
    assert all(t in {x.name for x in kept} for t in (x.name for x in compound[:14]))  # behaviour first
    assert left_out and all(
        "domain behaviour" in why for name, why in left_out.items() if name not in {t.name for t in kept}
    )
    # every entity still has its reads and a way to make records
    names = {t.name for t in kept}
    for e in spec.entities:
        assert {f"get_{e.name}", f"list_{plural(e.name)}"} & {t.name for t in every} <= names
    unfloored, _ = bounded(spec, scarce, cfg, keep_share=False)
    assert len(unfloored) == min(len(scarce), 56) > len(kept)
    assert sum(is_compound(spec, t) for t in unfloored) / len(unfloored) < 1 / 3  # the floor is what held it


def test_a_candidate_merged_into_a_tool_left_out_is_recorded_as_left_out_too() -> None:
    spec, _ = build_state_space(MOCK.candidate(), [MOCK.seed()], MOCK.domain())
    get = gen_get(spec.entity("user"))
    table = [
        Normalization(candidate=get.name, origin="generated", fate="kept", tool=get.name, reason="get"),
        Normalization(
            candidate="fetch_user", origin="kb", fate="merged", tool=get.name, reason="same operation"
        ),
    ]
    rows = with_left_out(table, [get], {get.name: "over the 56-tool bound"})
    assert {(n.candidate, n.fate) for n in rows} == {(get.name, "removed"), ("fetch_user", "removed")}
    assert all("56-tool bound" in n.reason for n in rows)


def test_a_requirement_that_compares_with_another_records_field_reads_once_the() -> None:
    """'... must be the customer's current tier', not 'must be the the customer's current tier'."""
    from agentomnia.envs.toolset import _requirement_text

    grace = EntitySpec(name="grace_period", table="grace_periods", description="", key="grace_period_id",
                       id_prefix="GRA", attributes=(AttributeSpec(name="grace_period_id", type="str"),))  # fmt: skip
    req = {"kind": "compare", "left": "protected_tier_id", "op": "==",
           "right": {"path": "customer_id->current_tier_id"}}  # fmt: skip
    text = _requirement_text(grace, req)
    assert "the the" not in text and text.endswith("must be the customer's current tier"), text


def test_a_record_entity_is_listed_as_its_records_never_as_record_records() -> None:
    from agentomnia.envs.toolset import gen_aggregate, gen_list

    exports = EntitySpec(
        name="export_record", table="export_records", description="", key="export_record_id", id_prefix="EXP",
        attributes=(AttributeSpec(name="export_record_id", type="str"),
                    AttributeSpec(name="size_kb", type="int"),
                    AttributeSpec(name="format", type="enum", enum=("pdf", "jpg"))),
    )  # fmt: skip
    assert gen_list(exports).description.startswith("List export records, optionally filtered")
    aggregate = gen_aggregate(exports)
    assert aggregate is not None and aggregate.description.startswith("Count export records per value")
    scans = exports.model_copy(update={"name": "scan_page", "table": "scan_pages", "key": "scan_page_id"})
    assert gen_list(scans).description.startswith("List scan page records,")
