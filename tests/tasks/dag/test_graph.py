"""The tool dependency graph: typed, evidenced edges; the filter drops what it should."""

from __future__ import annotations

from agentomnia.envs.spec import EnvSpec
from agentomnia.tasks.dag.graph import EDGE_KINDS, MIN_CONFIDENCE, EdgeCandidate, build_tool_graph


def test_every_kept_edge_is_typed_confident_evidenced_and_not_a_loop(freight_spec: EnvSpec) -> None:
    graph, report = build_tool_graph(freight_spec)
    assert set(graph.nodes) == {t.name for t in freight_spec.tools}
    assert report.kept == graph.number_of_edges() > len(freight_spec.tools)
    for u, v, kind, data in graph.edges(keys=True, data=True):
        assert u != v and kind in EDGE_KINDS
        assert data["confidence"] >= MIN_CONFIDENCE and data["evidence"]
    assert set(report.by_kind) == set(EDGE_KINDS)  # all three kinds occur in a real environment


def test_schema_edges_say_which_field_feeds_which_argument(freight_spec: EnvSpec) -> None:
    graph, _ = build_tool_graph(freight_spec)
    anchor = graph.get_edge_data("get_consignment", "assign_carrier")["entity_anchor"]
    assert anchor["param"] == "consignment_id" and anchor["path"] == "data.consignment_id"
    supply = graph.get_edge_data("list_carriers", "assign_carrier")["parameter"]
    assert supply["param"] == "carrier_id" and supply["path"].startswith("data.items[]")
    after = graph.get_edge_data("book_consignment", "get_consignment")["state_transition"]
    assert after["origin"] == "operation" and "changes consignment" in after["evidence"]


def test_the_filter_drops_loops_weak_duplicate_and_unsupported_candidates(freight_spec: EnvSpec) -> None:
    _, base = build_tool_graph(freight_spec)
    assert base.dropped.get("low confidence", 0) > 0  # description-only candidates stay out
    extra = [
        EdgeCandidate(source="get_consignment", target="get_consignment", kind="parameter", confidence=0.9, evidence="x", origin="model"),
        EdgeCandidate(source="get_consignment", target="list_carriers", kind="causal", confidence=0.9, evidence="x", origin="model"),
        EdgeCandidate(source="get_consignment", target="list_carriers", kind="parameter", confidence=0.3, evidence="x", origin="model"),
        EdgeCandidate(source="get_consignment", target="assign_carrier", kind="entity_anchor", confidence=0.6, evidence="x", origin="model"),
        EdgeCandidate(source="dispute_freight_bill", target="list_shippers", kind="parameter", confidence=0.7, evidence="bill names its carrier", origin="model"),
    ]  # fmt: skip
    graph, report = build_tool_graph(freight_spec, extra)
    assert report.dropped["self-loop"] == base.dropped.get("self-loop", 0) + 1
    assert report.dropped["unsupported kind"] == base.dropped.get("unsupported kind", 0) + 1
    assert report.dropped["low confidence"] == base.dropped["low confidence"] + 1
    assert report.dropped["duplicate"] == base.dropped.get("duplicate", 0) + 1
    # the weaker duplicate lost to the schema edge; the new model edge is in, evidence and all
    assert graph.get_edge_data("get_consignment", "assign_carrier")["entity_anchor"]["confidence"] > 0.6
    kept = graph.get_edge_data("dispute_freight_bill", "list_shippers")["parameter"]
    assert kept["origin"] == "model" and kept["evidence"] == "bill names its carrier"
