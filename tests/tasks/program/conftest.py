"""A small environment built inside the test session (parcel claims, domain 20096) and a sandbox."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentomnia.envs.build import BuiltEnv, build_environment, write_bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.seeds.inference import propose_offline
from agentomnia.seeds.parsers import parse_mcp
from agentomnia.taxonomy import load_taxonomy

PARCEL_TOOLS = {
    "tools": [
        {"name": "get_shipment", "description": "Look up a shipment.", "annotations": {"readOnlyHint": True},
         "inputSchema": {"type": "object", "properties": {"shipment_id": {"type": "string"}}, "required": ["shipment_id"]}},
        {"name": "list_shipments", "description": "List shipments by status.", "annotations": {"readOnlyHint": True},
         "inputSchema": {"type": "object", "properties": {
             "status": {"type": "string", "enum": ["booked", "in_transit", "delivered", "exception"]},
             "limit": {"type": "integer", "minimum": 1, "maximum": 50}}}},
        {"name": "open_claim", "description": "Open a damage claim for a delivered shipment.",
         "inputSchema": {"type": "object", "properties": {
             "shipment_id": {"type": "string"}, "amount": {"type": "number", "minimum": 0},
             "reason": {"type": "string", "enum": ["damaged", "lost", "late"]}}, "required": ["shipment_id", "amount", "reason"]}},
        {"name": "approve_claim", "description": "Approve an open claim.",
         "inputSchema": {"type": "object", "properties": {"claim_id": {"type": "string"}}, "required": ["claim_id"]}},
        {"name": "reject_claim", "description": "Reject an open claim.",
         "inputSchema": {"type": "object", "properties": {"claim_id": {"type": "string"}, "note": {"type": "string"}}, "required": ["claim_id"]}},
        {"name": "assign_adjuster", "description": "Assign an adjuster to a claim.",
         "inputSchema": {"type": "object", "properties": {"claim_id": {"type": "string"}, "adjuster_id": {"type": "string"}}, "required": ["claim_id", "adjuster_id"]}},
        {"name": "list_adjusters", "description": "List claim adjusters.", "annotations": {"readOnlyHint": True},
         "inputSchema": {"type": "object", "properties": {"region": {"type": "string"}}}},
        {"name": "update_shipment", "description": "Correct a shipment's declared value or weight.",
         "inputSchema": {"type": "object", "properties": {"shipment_id": {"type": "string"}, "declared_value": {"type": "number", "minimum": 0},
                                                           "weight_kg": {"type": "number", "minimum": 0.1, "maximum": 30000}}, "required": ["shipment_id"]}},
    ]
}  # fmt: skip


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox(workers=1, idle_timeout_s=0)
    yield box
    box.close()


@pytest.fixture(scope="module")
def parcel_env(sandbox: Sandbox) -> BuiltEnv:
    seed = parse_mcp(PARCEL_TOOLS, source="test://parcel-claims.json", name="parcel-claims")
    domain = load_taxonomy().by_id(20096)
    candidate = propose_offline(seed, domain, 0.55, 0.3, [0.55, 0.5, 0.4])
    built = build_environment(candidate, [seed], domain, sandbox)
    assert isinstance(built, BuiltEnv), built
    return built


@pytest.fixture(scope="module")
def parcel_bundle(parcel_env: BuiltEnv, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bundle(parcel_env, tmp_path_factory.mktemp("envs") / parcel_env.env_id)
