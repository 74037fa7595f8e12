"""Environment inference and selection on a small labelled corpus (real embeddings)."""

from __future__ import annotations

import random

import pytest

from agentomnia.embeddings import default_embedder
from agentomnia.seeds.inference import DomainMatcher, candidate_text, infer_candidates, tool_entity, tool_kind
from agentomnia.seeds.models import SeedTool
from agentomnia.seeds.parsers import parse_mcp, parse_skill
from agentomnia.seeds.selection import SelectionConfig, select
from agentomnia.taxonomy import load_taxonomy
from tests.fixtures.domains import PARCEL_TOOLS


@pytest.fixture(scope="module")
def matcher() -> DomainMatcher:
    return DomainMatcher(load_taxonomy(), default_embedder())


def _one_tool_seed():  # type: ignore[no-untyped-def]
    return parse_mcp({"tools": [PARCEL_TOOLS["tools"][0]]}, source="t://one.json", name="one-tool")


def test_tool_reading_names_the_entity_and_the_kind() -> None:
    assign = SeedTool(
        name="assign_adjuster",
        input_schema={"type": "object", "properties": {"claim_id": {}, "adjuster_id": {}}},
    )
    assert tool_entity(assign, {"claim", "adjuster"}) == "claim"  # assigning an adjuster changes the claim
    assert tool_entity(SeedTool(name="create_work_order"), {"order", "work_order"}) == "work_order"

    def ids(*names: str) -> dict[str, object]:
        return {"type": "object", "properties": {n: {"type": "string"} for n in names}}

    # a write verb after the first word is a noun: deciding an expense report is not about an expense
    decide = SeedTool(name="decide_expense_report", input_schema=ids("report_id", "decision"))
    assert tool_entity(decide, {"expense", "expense_report"}) == "expense_report"
    # of two known nouns, the one whose id the tool takes first, else the head noun (the last)
    delete_line = SeedTool(name="delete_expense_line", input_schema=ids("line_id"))
    assert tool_entity(delete_line, {"expense", "line"}) == "line"
    categorise = SeedTool(name="set_transaction_category", input_schema=ids("transaction_id", "category_id"))
    assert tool_entity(categorise, {"transaction", "category"}) == "transaction"
    assert tool_entity(SeedTool(name="complete_store_task"), {"store", "task"}) == "task"
    # assigning a task (its id first) changes the task, not whom it goes to
    assign_task = SeedTool(name="assign_store_task", input_schema=ids("task_id", "employee_id"))
    assert tool_entity(assign_task, {"store", "task", "employee"}) == "task"
    assert tool_kind(SeedTool(name="cancel_booking")) == "write"
    assert tool_kind(SeedTool(name="getBooking", method="GET")) == "read"


@pytest.mark.slow
def test_inference_finds_the_domain_and_the_state(matcher: DomainMatcher) -> None:
    parcel = parse_mcp(PARCEL_TOOLS, source="t://parcel.json", name="parcel-claims")
    skill = parse_skill(
        "---\nname: refund-damaged-parcel\ndescription: Refund customers for parcels damaged in transit.\n---\n"
        "Look up the shipment, open a claim, approve it and refund the declared value.\n",
        source="t://SKILL.md",
        name="refund-damaged-parcel",
    )
    candidates, failed = infer_candidates([parcel, skill], matcher)
    assert failed == []
    by_name = {c.name: c for c in candidates}
    c = by_name["parcel-claims"]
    assert c.coordinate.l1 in ("Logistics", "Insurance")  # shipments with damage claims and adjusters
    assert {"shipment", "claim", "adjuster"} <= set(c.overview.state_components)
    kinds = {o.name: o.kind for o in c.overview.operations}
    assert kinds["open_claim"] == "write" and kinds["get_shipment"] == "read"
    assert 0 <= c.utility <= 1 and 0 <= c.realism <= 1 and "domain_similarity" in c.features
    assert by_name["refund-damaged-parcel"].overview.operations  # filled from the knowledge base


@pytest.mark.slow
def test_selection_is_deterministic_and_records_every_rejection(matcher: DomainMatcher) -> None:
    parcel = parse_mcp(PARCEL_TOOLS, source="t://parcel.json", name="parcel-claims")
    twin = parse_mcp(
        {**PARCEL_TOOLS, "description": "Parcel claims desk, second copy"},
        source="t://twin.json",
        name="parcel-twin",
    )
    seeds = [parcel, twin, _one_tool_seed()]
    candidates, _ = infer_candidates(seeds, matcher)
    vectors = matcher.text_vectors([candidate_text(c) for c in candidates])
    first = select(candidates, vectors)
    order = list(range(len(candidates)))
    random.Random(3).shuffle(order)
    again = select([candidates[i] for i in order], vectors[order])
    assert [c.id for c in first.selected] == [c.id for c in again.selected]
    assert first.rejected == again.rejected
    rules = {r.detail["rule"] for r in first.rejected}
    assert "too_narrow" in rules  # one read-only tool is not an environment
    assert (
        len(first.selected) == 1 and {"near_duplicate", "duplicate_summary"} & rules
    )  # the twin is folded in
    assert len(first.selected) + len(first.rejected) == len(candidates)
    strict = select(candidates, vectors, SelectionConfig(min_realism=0.99))
    assert {r.detail["rule"] for r in strict.rejected} >= {"low_realism"}
