"""Hardening operators: each changes the state the way its name says and keeps every invariant."""

from __future__ import annotations

import random
from typing import Any

import pytest

from agentomnia.envs.spec import AttributeSpec, EntitySpec, EnvSpec, ToolSpec
from agentomnia.envs.state import generate_state, state_violations
from agentomnia.tasks.hardening import LEVERS, OPERATORS, apply_all
from agentomnia.taxonomy import Coordinate
from agentomnia.taxonomy.axes import lever
from agentomnia.taxonomy.knowledge import Relation, Rule


def _tool(name: str, op: str, entity: str, props: dict[str, Any], binding: dict[str, Any]) -> ToolSpec:
    kind = "read" if op in ("get", "list") else "write"
    return ToolSpec(
        name=name, description=name.replace("_", " "), kind=kind, op=op, entity=entity,  # type: ignore[arg-type]
        parameters={"type": "object", "properties": props, "required": [binding["key"]] if "key" in binding else []},
        binding=binding,
    )  # fmt: skip


def desk_spec() -> EnvSpec:
    """A two-entity desk: customers (unique email, a tier) and their orders (a capped total, a lifecycle)."""
    customer = EntitySpec(
        name="customer", table="customers", description="A buyer.", key="customer_id", id_prefix="CUS",
        attributes=(
            AttributeSpec(name="customer_id", type="str"), AttributeSpec(name="name", type="str"),
            AttributeSpec(name="email", type="str"), AttributeSpec(name="tier", type="enum", enum=("basic", "gold")),
            AttributeSpec(name="credit", type="money"),
        ),
    )  # fmt: skip
    order = EntitySpec(
        name="order", table="orders", description="A purchase.", key="order_id", id_prefix="ORD",
        attributes=(
            AttributeSpec(name="order_id", type="str"), AttributeSpec(name="customer_id", type="ref", ref="customer"),
            AttributeSpec(name="total", type="money"), AttributeSpec(name="placed_on", type="date"),
            AttributeSpec(name="status", type="enum", enum=("open", "paid", "closed")),
        ),
    )  # fmt: skip
    rules = (
        Rule(id="email_once", text="One account per email.", kind="unique", entity="customer", attrs=("email",)),
        Rule(id="total_cap", text="Orders stay under 500.", kind="range", entity="order", attr="total", min=0, max=500),
        Rule(id="order_flow", text="Orders are paid, then closed.", kind="transition", entity="order", attr="status",
             allowed={"open": ("paid",), "paid": ("closed",), "closed": ()}),
    )  # fmt: skip
    tools = (
        _tool("get_customer", "get", "customer", {"customer_id": {"type": "string"}}, {"key": "customer_id"}),
        _tool("list_orders", "list", "order", {"customer_id": {"type": "string"}}, {"filters": {"customer_id": "customer_id"}}),
        _tool("pay_order", "transition", "order", {"order_id": {"type": "string"}, "note": {"type": "string"}}, {"key": "order_id", "attr": "status", "value": "paid"}),
        _tool("delete_customer", "delete", "customer", {"customer_id": {"type": "string"}}, {"key": "customer_id"}),
    )  # fmt: skip
    return EnvSpec(
        name="desk", class_name="Desk", description="A sales desk.",
        coordinate=Coordinate.for_domain(20096, ["tool_use"], ["tool_parameter_grounding"]),
        candidate_id="desk", seed_ids=(), entities=(customer, order),
        relations=(Relation(source="order", attr="customer_id", target="customer"),), rules=rules, tools=tools,
    )  # fmt: skip


@pytest.fixture(scope="module")
def spec() -> EnvSpec:
    return desk_spec()


@pytest.fixture(scope="module")
def s0(spec: EnvSpec) -> dict[str, Any]:
    return generate_state(spec, seed=3)


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_every_operator_applies_keeps_invariants_and_leaves_its_input_alone(
    spec: EnvSpec, s0: dict[str, Any], name: str
) -> None:
    before = repr(s0)
    result = OPERATORS[name](spec, s0, random.Random(1))
    assert result.applied, result.notes
    assert result.operator == name and result.notes and result.targets
    assert state_violations(spec, result.state) == []
    assert result.state != s0 or name == "mutable_objects"
    assert repr(s0) == before  # operators work on a copy


def test_every_operator_names_a_real_taxonomy_lever() -> None:
    assert set(LEVERS) == set(OPERATORS)
    for name in OPERATORS:
        atom, found = lever(LEVERS[name])
        assert found.id == LEVERS[name] and atom.id


def test_multi_candidate_shares_the_name_and_differs_in_one_telling_attribute(
    spec: EnvSpec, s0: dict[str, Any]
) -> None:
    target = sorted(s0["customers"])[0]
    r = OPERATORS["multi_candidate"](spec, s0, random.Random(0), entity="customer", key=target, count=3)
    name = s0["customers"][target]["name"]
    same = [k for k, c in r.state["customers"].items() if c["name"] == name]
    assert len(same) >= 4 and r.targets[0] == target
    tell = r.facts["discriminator"]
    assert all(r.state["customers"][k][tell] != s0["customers"][target][tell] for k in r.facts["lookalikes"])
    emails = [c["email"] for c in r.state["customers"].values()]
    assert len(emails) == len(set(emails))  # the uniqueness rule still holds


def test_distractors_copy_links_but_not_identity(spec: EnvSpec, s0: dict[str, Any]) -> None:
    target = sorted(s0["orders"])[0]
    r = OPERATORS["distractor_injection"](spec, s0, random.Random(0), entity="order", key=target, count=2)
    added = r.facts["distractors"]
    assert len(added) == 2 and all(k not in s0["orders"] for k in added)
    assert all(r.state["orders"][k]["customer_id"] == s0["orders"][target]["customer_id"] for k in added)


def test_boundary_tie_puts_two_records_on_the_rule_boundary(spec: EnvSpec, s0: dict[str, Any]) -> None:
    keys = sorted(s0["orders"])[:2]
    r = OPERATORS["boundary_tie"](spec, s0, random.Random(0), entity="order", attr="total", keys=keys)
    assert [r.state["orders"][k]["total"] for k in keys] == [500, 500]


def test_cross_entity_evidence_moves_the_fact_behind_a_reference(spec: EnvSpec, s0: dict[str, Any]) -> None:
    target = sorted(s0["orders"])[0]
    r = OPERATORS["cross_entity_evidence"](spec, s0, random.Random(0), entity="order", key=target)
    parent = r.facts["parent_key"]
    assert parent not in s0["customers"] and r.state["orders"][target]["customer_id"] == parent


def test_aggregatable_history_piles_records_under_one_parent(spec: EnvSpec, s0: dict[str, Any]) -> None:
    owner = sorted(s0["customers"])[0]
    r = OPERATORS["aggregatable_history"](
        spec, s0, random.Random(0), entity="order", parent_key=owner, count=5
    )
    before = sum(1 for o in s0["orders"].values() if o["customer_id"] == owner)
    after = sum(1 for o in r.state["orders"].values() if o["customer_id"] == owner)
    assert after == before + 5


def test_mutable_objects_leave_moves_open(spec: EnvSpec, s0: dict[str, Any]) -> None:
    state = {**s0, "orders": {k: {**o, "status": "closed"} for k, o in s0["orders"].items()}}
    r = OPERATORS["mutable_objects"](spec, state, random.Random(0), entity="order", count=3)
    assert sum(1 for o in r.state["orders"].values() if o["status"] != "closed") == 3


def test_closed_loop_frees_a_record_for_deletion(spec: EnvSpec, s0: dict[str, Any]) -> None:
    target = next(
        k for k in sorted(s0["customers"]) if any(o["customer_id"] == k for o in s0["orders"].values())
    )
    r = OPERATORS["closed_loop"](spec, s0, random.Random(0), entity="customer", key=target)
    assert all(o["customer_id"] != target for o in r.state["orders"].values())


def test_an_operator_that_would_break_a_rule_returns_the_state_unchanged(
    spec: EnvSpec, s0: dict[str, Any]
) -> None:
    r = OPERATORS["multi_candidate"](spec, s0, random.Random(0), entity="customer", key="CUS-999")
    assert not r.applied and r.state == s0 and "does not exist" in r.notes[0]


def test_apply_all_composes_and_rejects_unknown_operators(spec: EnvSpec, s0: dict[str, Any]) -> None:
    state, results = apply_all(
        spec, s0, random.Random(2), [("multi_candidate", {}), ("aggregatable_history", {})]
    )
    assert len(results) == 2 and state_violations(spec, state) == []
    again, _ = apply_all(spec, s0, random.Random(2), [("multi_candidate", {}), ("aggregatable_history", {})])
    assert again == state  # deterministic for a fixed generator
    with pytest.raises(KeyError, match="unknown hardening operator"):
        apply_all(spec, s0, random.Random(0), [("shuffle_everything", {})])
