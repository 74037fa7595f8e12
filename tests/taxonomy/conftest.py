"""Shared fixtures for the taxonomy tests: one real embedder per session and a tiny knowledge entry."""

from __future__ import annotations

from typing import Any

import pytest

from agentomnia.embeddings import MiniLMEmbedder, default_embedder
from agentomnia.taxonomy.knowledge import DomainKnowledge


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    """The packaged MiniLM model, loaded once for every test that needs real embeddings."""
    return default_embedder()


def small_knowledge_entry(taxonomy_id: int = 20096) -> dict[str, Any]:
    """A valid four-entity entry in the knowledge YAML's shape, for tests that mutate it."""
    return {
        "id": taxonomy_id,
        "description": "A parcel desk that books shipments and settles damage claims.",
        "workflows": ["Open a damage claim for a delivered parcel"],
        "entities": [
            {
                "name": "customer",
                "description": "A shipper account.",
                "key": "customer_id",
                "attributes": [{"customer_id": "str"}, {"tier": "enum[standard|priority] = standard"}],
            },
            {
                "name": "carrier",
                "description": "A transport company.",
                "key": "carrier_id",
                "attributes": [{"carrier_id": "str"}, {"mode": "enum[road|air]"}],
            },
            {
                "name": "shipment",
                "description": "One consignment.",
                "key": "shipment_id",
                "attributes": [
                    {"shipment_id": "str"},
                    {"customer_id": "ref(customer)"},
                    {"carrier_id": "ref(carrier)"},
                    {"status": "enum[booked|delivered|exception] = booked"},
                    {"declared_value": "money"},
                ],
            },
            {
                "name": "claim",
                "description": "A damage claim.",
                "key": "claim_id",
                "attributes": [{"claim_id": "str"}, {"shipment_id": "ref(shipment)"}, {"amount": "money"}],
            },
        ],
        "relations": [
            {"source": "shipment", "attr": "customer_id", "target": "customer"},
            {"source": "claim", "attr": "shipment_id", "target": "shipment"},
        ],
        "rules": [
            {
                "id": "claim_within_value",
                "text": "A claim may not exceed the declared value.",
                "kind": "compare",
                "left": "claim.amount",
                "op": "<=",
                "right": "claim.shipment_id->declared_value",
            },
            {
                "id": "claim_needs_delivery",
                "text": "Claims only for delivered or exception shipments.",
                "kind": "precondition",
                "operation": "open_claim",
                "entity": "shipment",
                "attr": "status",
                "values": ["delivered", "exception"],
            },
        ],
        "operations": [
            {"name": "open_claim", "kind": "write", "entity": "claim", "description": "Open a claim."}
        ],
    }


@pytest.fixture
def knowledge_entry() -> dict[str, Any]:
    """A fresh, mutable copy of the small entry."""
    return small_knowledge_entry()


@pytest.fixture
def small_knowledge() -> DomainKnowledge:
    return DomainKnowledge.model_validate(small_knowledge_entry())
