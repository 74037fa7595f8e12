"""Free text finds the right L2 domains.

Tests marked slow embed all 354 domain texts with the real model once per session (several seconds
on two CPU cores); the rest use the model-free HashingEmbedder.
"""

from __future__ import annotations

import pytest

from agentomnia.embeddings import HashingEmbedder, MiniLMEmbedder
from agentomnia.taxonomy import domain_text, find_domains, find_rows, load_taxonomy


@pytest.mark.slow
def test_refund_a_damaged_parcel_finds_logistics_or_after_sales(embedder: MiniLMEmbedder) -> None:
    hits = find_domains("refund a damaged parcel", k=3, embedder=embedder)
    assert len(hits) == 3
    assert any(d.l1 == "Logistics" or d.l2 == "After-sales Service" for d, _ in hits), [
        d.path for d, _ in hits
    ]
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True) and all(-1.0 <= s <= 1.0 for s in scores)


@pytest.mark.slow
def test_split_filter_and_other_queries(embedder: MiniLMEmbedder) -> None:
    hotel = find_domains("book a hotel room for my holiday", k=3, embedder=embedder, split="toc")
    assert all(d.split == "toc" for d, _ in hotel)
    assert any("Hotel" in d.l2 for d, _ in hotel), [d.path for d, _ in hotel]
    expenses = find_domains("submit my business trip taxi receipts for reimbursement", k=3, embedder=embedder)
    assert any(d.l1 == "Expense Reimbursement" for d, _ in expenses), [d.path for d, _ in expenses]


def test_domain_text_uses_knowledge_when_present() -> None:
    tax = load_taxonomy(require_knowledge=False)
    for d in tax.domains[:20]:
        text = domain_text(d)
        assert text.startswith(d.path)
        if d.knowledge is not None:
            assert d.knowledge.description.strip()[:40] in text


def test_find_works_with_any_embedder_and_rejects_bad_input() -> None:
    emb = HashingEmbedder()
    tax = load_taxonomy(require_knowledge=False)
    target = tax.by_id(10021)
    hits = find_domains(domain_text(target), k=5, embedder=emb, taxonomy=tax)
    assert hits[0][0].id == target.id and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert len(find_domains("hotel", k=1, embedder=emb)) == 1
    rows = find_rows(domain_text(target), k=2, embedder=emb)
    assert [r["rank"] for r in rows] == [1, 2] and rows[0]["id"] == 10021 and rows[0]["score"] == 1.0
    with pytest.raises(ValueError, match="needs some text"):
        find_domains("   ", embedder=emb)
    with pytest.raises(ValueError, match="no domains in split"):
        find_domains("hotel", embedder=emb, split="b2b")


# Requests paired with the L2 domains any of which would be a right answer.
QUERY_BATTERY: dict[str, set[str]] = {
    "book a hotel room for my holiday": {"Hotel Booking", "Hotel Front Desk", "Hotel Manager"},
    "debug a failing unit test": {"QA/Test Engineer", "Software Engineer", "Game QA Tester"},
    "my car needs a warranty repair": {"After-sales Service", "Auto Services"},
    "schedule an interview with a candidate": {"Interview Scheduling Coordination", "Recruiter"},
    "pay my electricity bill": {"Public Utility Payments"},
    "reconcile vendor invoices with purchase orders": {
        "Vendor Reconciliation",
        "Invoice & Payment Follow-up",
        "Purchaser",
        "Purchasing Specialist",
    },
    "find a vet appointment for my dog": {"Veterinarian", "Pet Services"},
    "approve a purchase request over budget": {"Procurement Approval", "Procurement Request Management"},
    "track my sleep and set a bedtime reminder": {"Sleep Management"},
    "dispatch trucks for tomorrow's deliveries": {
        "Transport Dispatcher",
        "Delivery Courier",
        "Logistics Specialist",
    },
    "audit a smart contract for reentrancy bugs": {"Smart Contract Security Auditor"},
    "rebalance the power grid after a substation outage": {"Grid Dispatcher", "Power Engineer"},
    "update a customer's tier after a large order": {"Customer Tier Management", "Membership Operations"},
    "renew my passport": {"ID & Document Processing", "Government Services", "Visa Application"},
    "plan a three day trip to Kyoto": {"Itinerary Planning", "Travel Consultant"},
    "file a claim for a flooded basement": {
        "Claims Specialist",
        "Insurance Services",
        "Insurance Customer Service",
    },
    "count stock in the warehouse and fix discrepancies": {"Inventory Counting", "Warehouse Manager"},
}


@pytest.mark.slow
def test_query_battery_mostly_lands_in_the_top_three(embedder: MiniLMEmbedder) -> None:
    misses = {}
    for query, expected in QUERY_BATTERY.items():
        found = [d.l2 for d, _ in find_domains(query, k=3, embedder=embedder)]
        if not expected & set(found):
            misses[query] = found
    # Measured 17 of 17 with the shipped knowledge base; allow one miss for wording changes in it.
    assert len(misses) <= 1, misses
