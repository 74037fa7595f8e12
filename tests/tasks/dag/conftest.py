"""Fixtures for DAG task synthesis: a small freight-desk environment built in the test session.

The seed is a handful of MCP tools for a freight desk (consignments, carriers, freight bills); the
knowledge base of domain 20096 fills out the rest, so the environment has the paper's shape (many
entities and tools, rules, lifecycles) while building in a few seconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentomnia.envs.build import BuiltEnv, build_environment, write_bundle
from agentomnia.envs.spec import EnvSpec
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.seeds.inference import propose_offline
from agentomnia.seeds.parsers import parse_mcp
from agentomnia.taxonomy import load_taxonomy

FREIGHT_TOOLS = {
    "tools": [
        {"name": "get_consignment", "description": "Show one consignment.", "annotations": {"readOnlyHint": True},
         "inputSchema": {"type": "object", "properties": {"consignment_id": {"type": "string"}}, "required": ["consignment_id"]}},
        {"name": "list_carriers", "description": "List carriers, optionally by mode.", "annotations": {"readOnlyHint": True},
         "inputSchema": {"type": "object", "properties": {"mode": {"type": "string", "enum": ["road", "rail", "sea", "air"]}}}},
        {"name": "book_consignment", "description": "Book a consignment with a carrier.",
         "inputSchema": {"type": "object", "properties": {"carrier_id": {"type": "string"}, "weight_kg": {"type": "number", "minimum": 1},
                                                           "pieces": {"type": "integer", "minimum": 1}}, "required": ["carrier_id", "weight_kg"]}},
        {"name": "match_freight_bill", "description": "Match a carrier freight bill against its consignment.",
         "inputSchema": {"type": "object", "properties": {"bill_id": {"type": "string"}}, "required": ["bill_id"]}},
        {"name": "dispute_freight_bill", "description": "Dispute a freight bill that does not match.",
         "inputSchema": {"type": "object", "properties": {"bill_id": {"type": "string"}, "note": {"type": "string"}}, "required": ["bill_id"]}},
        {"name": "assign_carrier", "description": "Move a consignment to another carrier.",
         "inputSchema": {"type": "object", "properties": {"consignment_id": {"type": "string"}, "carrier_id": {"type": "string"}}, "required": ["consignment_id", "carrier_id"]}},
    ]
}  # fmt: skip


@pytest.fixture(scope="session")
def freight_sandbox() -> Iterator[Sandbox]:
    box = Sandbox(workers=1, idle_timeout_s=0)
    yield box
    box.close()


@pytest.fixture(scope="session")
def freight_env(freight_sandbox: Sandbox) -> BuiltEnv:
    seed = parse_mcp(FREIGHT_TOOLS, source="test://freight-desk.json", name="freight-desk")
    domain = load_taxonomy().by_id(20096)
    candidate = propose_offline(seed, domain, 0.55, 0.3, [0.55, 0.5, 0.4])
    built = build_environment(candidate, [seed], domain, freight_sandbox)
    assert isinstance(built, BuiltEnv), built
    return built


@pytest.fixture(scope="session")
def freight_dir(freight_env: BuiltEnv, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bundle(freight_env, tmp_path_factory.mktemp("envs") / freight_env.env_id)


@pytest.fixture(scope="session")
def freight_spec(freight_env: BuiltEnv) -> EnvSpec:
    return freight_env.spec


@pytest.fixture(scope="session")
def freight_bundle(freight_dir: Path) -> Bundle:
    return Bundle.load(freight_dir)
