"""The shipped knowledge base meets issue #3: every L2 described, minimums met, every name resolves.

These tests read all of data/knowledge/*.yaml; the helpers they rely on are also tested on a small
entry, so a checker that silently accepts everything cannot make them pass.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentomnia.taxonomy import Domain, DomainKnowledge, load_and_validate, load_taxonomy
from agentomnia.taxonomy.domains import knowledge_minimum_problems
from agentomnia.taxonomy.knowledge import knowledge_problems


@pytest.fixture(scope="module")
def domains() -> tuple[Domain, ...]:
    return load_taxonomy(require_knowledge=True).domains


def kb(domain: Domain) -> DomainKnowledge:
    assert domain.knowledge is not None, f"domain {domain.id} has no knowledge entry"
    return domain.knowledge


def test_every_l2_has_knowledge(domains: tuple[Domain, ...]) -> None:
    assert len(domains) == 354
    assert all(kb(d).id == d.id for d in domains)


def test_per_l2_minimums(domains: tuple[Domain, ...]) -> None:
    problems = [p for d in domains for p in knowledge_minimum_problems(d)]
    assert problems == []
    for d in domains:
        assert len(kb(d).entities) >= 4 and len(kb(d).relations) >= 1 and len(kb(d).rules) >= 2


def test_average_sizes(domains: tuple[Domain, ...]) -> None:
    n = len(domains)
    assert sum(len(kb(d).entities) for d in domains) / n >= 8
    assert sum(kb(d).attribute_count for d in domains) / n >= 45


def test_enum_defaults_are_legal(domains: tuple[Domain, ...]) -> None:
    bad = [
        f"{d.id} {e.name}.{a.name}={a.default!r}"
        for d in domains
        for e in kb(d).entities
        for a in e.attributes
        if a.type == "enum" and a.default is not None and a.default not in a.enum
    ]
    assert bad == []


def test_references_point_to_existing_entities(domains: tuple[Domain, ...]) -> None:
    bad = []
    for d in domains:
        names = {e.name for e in kb(d).entities}
        bad += [
            f"{d.id} {e.name}.{a.name}->{a.ref}"
            for e in kb(d).entities
            for a in e.attributes
            if a.type == "ref" and a.ref not in names
        ]
        bad += [
            f"{d.id} relation {r.source}->{r.target}" for r in kb(d).relations if {r.source, r.target} - names
        ]
        bad += [f"{d.id} operation {o.name} on {o.entity}" for o in kb(d).operations if o.entity not in names]
    assert bad == []


def test_rules_name_existing_attributes(domains: tuple[Domain, ...]) -> None:
    bad = []
    for d in domains:
        for rule in kb(d).rules:
            for entity_name, attr in rule.attribute_refs():
                if entity_name.startswith("->"):
                    owner, _, ref_attr = entity_name[2:].partition(".")
                    ref = kb(d).entity(owner).attribute(ref_attr)  # type: ignore[union-attr]
                    target = kb(d).entity(ref.ref or "") if ref is not None else None
                    if target is None or target.attribute(attr) is None:
                        bad.append(f"{d.id} {rule.id}: {owner}.{ref_attr}->{attr}")
                else:
                    entity = kb(d).entity(entity_name)
                    if entity is None or entity.attribute(attr) is None:
                        bad.append(f"{d.id} {rule.id}: {entity_name}.{attr}")
    assert bad == []


def test_whole_taxonomy_validates_and_summarises() -> None:
    summary = load_and_validate(strict=True)
    assert summary.ok and summary.problems == ()
    assert (summary.l1, summary.l2) == (90, 354)
    rows = {r.split: r for r in summary.rows}
    assert [(rows[s].l1, rows[s].l2) for s in ("toc", "tob", "toe", "all")] == [
        (22, 101),
        (38, 186),
        (30, 67),
        (90, 354),
    ]
    assert rows["all"].with_knowledge == 354
    assert rows["all"].avg_entities >= 8 and rows["all"].avg_attributes >= 45


# The checks above, exercised on a small entry so that they are known to reject bad data.


def test_minimum_problems_flag_a_thin_entry(small_knowledge: DomainKnowledge) -> None:
    domain = load_taxonomy(require_knowledge=False).by_id(20096)
    thin = small_knowledge.model_copy(update={"rules": small_knowledge.rules[:1], "relations": ()})
    problems = knowledge_minimum_problems(domain.model_copy(update={"knowledge": thin}))
    assert len(problems) == 2
    assert any("1 rules, at least 2" in p for p in problems) and any("no relations" in p for p in problems)
    assert knowledge_minimum_problems(domain.model_copy(update={"knowledge": small_knowledge})) == []


def test_schema_rejects_bad_enum_default(knowledge_entry: dict[str, Any]) -> None:
    knowledge_entry["entities"][0]["attributes"][1] = {"tier": "enum[standard|priority] = gold"}
    with pytest.raises(ValueError, match="default 'gold' is not one of"):
        DomainKnowledge.model_validate(knowledge_entry)


def test_schema_rejects_dangling_reference(knowledge_entry: dict[str, Any]) -> None:
    knowledge_entry["entities"][3]["attributes"][1] = {"shipment_id": "ref(parcel)"}
    with pytest.raises(ValueError, match="references unknown entity 'parcel'"):
        DomainKnowledge.model_validate(knowledge_entry)


def test_rule_naming_a_missing_attribute_is_a_problem(small_knowledge: DomainKnowledge) -> None:
    rule = small_knowledge.rules[0].model_copy(update={"right": "claim.shipment_id->insured_value"})
    broken = small_knowledge.model_construct(**{**dict(small_knowledge), "rules": (rule,)})
    assert knowledge_problems(broken) == [
        "rule claim_within_value: claim.shipment_id->insured_value does not resolve"
    ]
