"""The tool dependency graph: typed, evidenced edges; the filter drops what it should."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_edges_a_model_proposes_are_checked_against_the_spec(freight_spec: EnvSpec, tmp_path: Path) -> None:
    """In llm mode the model proposes dependencies; each must name real tools, a parameter the target
    takes, and an entity whose key the source returns (the path is the schema's), or it is refused."""
    from agentomnia.tasks.dag.graph import model_edges
    from tests.fixtures.chat_server import client, serving

    tools = {t.name: t for t in freight_spec.tools}
    anchor = {
        "source": "get_consignment",
        "target": "assign_carrier",
        "param": "consignment_id",
        "entity": "consignment",
    }
    proposals = [
        anchor,  # the schema has it too: kept as a candidate, the schema's stronger edge wins the slot
        {"source": "get_consignment", "target": "no_such_tool", "param": "x", "entity": "consignment"},
        {
            "source": "list_carriers",
            "target": "assign_carrier",
            "param": "consignment_id",
            "entity": "carrier",
        },
        {
            "source": "get_consignment",
            "target": "assign_carrier",
            "param": "not_a_param",
            "entity": "consignment",
        },
    ]
    assert "assign_carrier" in tools and "get_consignment" in tools
    for server in serving():
        server.script = [(200, json.dumps({"edges": proposals}))]
        llm = client(server, tmp_path, max_retries=0)
        edges = model_edges(llm, freight_spec)
        prompt = server.requests[0]["messages"][0]["content"]
    assert "assign_carrier" in prompt and "returns keys of" in prompt
    assert [(e.source, e.target, e.param, e.origin) for e in edges] == [
        ("get_consignment", "assign_carrier", "consignment_id", "model")
    ]
    assert edges[0].kind == "entity_anchor" and edges[0].path == "data.consignment_id"
    counts = llm.ledger.snapshot()["dependency_edges"]
    assert (counts.accepted, counts.rejected, counts.valid) == (1, 3, 1)
    graph, _ = build_tool_graph(freight_spec, edges)
    assert graph.get_edge_data("get_consignment", "assign_carrier")["entity_anchor"]["origin"] == "schema"
