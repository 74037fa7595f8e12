"""Hardening operators: each changes the state the way its name says and keeps every invariant."""

from __future__ import annotations

import random
from typing import Any

import pytest

from agentomnia.envs.build import BuiltEnv
from agentomnia.envs.spec import AttributeSpec, EntitySpec, EnvSpec, ToolSpec
from agentomnia.envs.state import generate_state, state_violations
from agentomnia.tasks.hardening import LEVERS, OPERATORS, apply_all, means_unavailable
from agentomnia.taxonomy import Coordinate
from agentomnia.taxonomy.axes import lever
from agentomnia.taxonomy.knowledge import Relation, Rule
from tests.fixtures.domains import LOGISTICS_DOMAIN_ID


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
        coordinate=Coordinate.for_domain(LOGISTICS_DOMAIN_ID, ["tool_use"], ["tool_parameter_grounding"]),
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


def test_a_distractor_known_by_no_name_takes_another_value_not_an_edition() -> None:
    """A daily log is known by its weather: its look-alikes have other weather, not "Heavy rain Deluxe";
    a record with a name still gets a near-identical one."""
    from agentomnia.envs.semantic import VARIANT_WORDS

    log = EntitySpec(name="daily_log", table="daily_logs", description="A site's day.", key="daily_log_id",
                     id_prefix="DAI", attributes=(AttributeSpec(name="daily_log_id", type="str"),
                     AttributeSpec(name="weather", type="str"), AttributeSpec(name="workers_on_site", type="int")))  # fmt: skip
    spec = EnvSpec(name="site", class_name="Site", description="Site logs.",
                   coordinate=Coordinate.for_domain(LOGISTICS_DOMAIN_ID, ["tool_use"], ["tool_parameter_grounding"]),
                   candidate_id="site", seed_ids=(), entities=(log,), relations=(), rules=(), tools=())  # fmt: skip
    s0 = generate_state(spec, seed=0, sizes={"daily_log": 6})
    target = sorted(s0["daily_logs"])[0]
    r = OPERATORS["distractor_injection"](spec, s0, random.Random(0), entity="daily_log", key=target, count=3)
    weather = [r.state["daily_logs"][k]["weather"] for k in r.facts["distractors"]]
    assert len(weather) == 3 and all(isinstance(w, str) and w for w in weather)
    assert not any(w.split()[-1] in VARIANT_WORDS for w in weather), weather


def test_distractors_of_a_payment_never_pay_more_than_its_invoice() -> None:
    """Near-identical copies of a payment keep its invoice: where they would add up to more than the
    invoice's total, the operator is not applied and says why (was: three payments of 76.13 beside
    others, 436.66 against an invoice of 288.31); with room under the total, it is applied."""
    from agentomnia.envs.state import overpaid

    invoice = EntitySpec(name="invoice", table="invoices", description="A bill.", key="invoice_id", id_prefix="INV",
                         attributes=(AttributeSpec(name="invoice_id", type="str"), AttributeSpec(name="amount", type="money")))  # fmt: skip
    payment = EntitySpec(name="payment", table="payments", description="Money in.", key="payment_id", id_prefix="PAY",
                         attributes=(AttributeSpec(name="payment_id", type="str"),
                                     AttributeSpec(name="invoice_id", type="ref", ref="invoice"),
                                     AttributeSpec(name="amount", type="money")))  # fmt: skip
    spec = EnvSpec(name="ledger", class_name="Ledger", description="Invoices and their payments.",
                   coordinate=Coordinate.for_domain(LOGISTICS_DOMAIN_ID, ["tool_use"], ["tool_parameter_grounding"]),
                   candidate_id="ledger", seed_ids=(), entities=(invoice, payment), relations=(), rules=(), tools=())  # fmt: skip
    s0 = generate_state(spec, seed=0, sizes={"invoice": 2, "payment": 2})
    target = sorted(s0["payments"])[0]
    owner = s0["payments"][target]["invoice_id"]
    s0["invoices"][owner]["amount"] = 10_000.0
    s0["payments"][target]["amount"] = 100.0
    room = OPERATORS["distractor_injection"](
        spec, s0, random.Random(0), entity="payment", key=target, count=3
    )
    assert room.applied and len(room.facts["distractors"]) == 3
    s0["invoices"][owner]["amount"] = sum(
        p["amount"] for p in s0["payments"].values() if p["invoice_id"] == owner
    )  # paid in full: no copy fits
    full = OPERATORS["distractor_injection"](
        spec, s0, random.Random(0), entity="payment", key=target, count=3
    )
    assert not full.applied and full.state == s0
    assert full.notes == [
        f"distractor_injection not applied: the rewrite would pay more than invoices[{owner}].amount against it"
    ]
    assert overpaid(spec, full.state) == set()


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


# -- the two operators PRD rounds ask for, on the parcel-claims environment -------------------------


@pytest.fixture(scope="module")
def parcel(parcel_env: BuiltEnv) -> BuiltEnv:
    """The parcel-claims environment the trajectory tests use (tests/fixtures, built once)."""
    return parcel_env


def test_availability_words_match_whole_words_of_the_entitys_own_values() -> None:
    for value in ("cancelled", "Out of stock", "permanently-closed", "SUSPENDED", "on_hold"):
        assert means_unavailable(value), value
    for other in ("enclosed", "open", "denied", "rejected", "active", "", None, 0):
        assert not means_unavailable(other), other


def test_unavailable_entities_uses_the_lifecycle_word_and_moves_only_records_that_could_get_there(
    parcel: BuiltEnv,
) -> None:
    spec, s0 = parcel.spec, parcel.s0
    lifecycle = next(r for r in spec.rules if r.kind == "transition" and r.entity == "shipment")
    could = {k for k, s in s0["shipments"].items() if "cancelled" in lifecycle.allowed.get(s["status"], ())}
    before = repr(s0)
    r = OPERATORS["unavailable_entities"](spec, s0, random.Random(0), entity="shipment", count=2)
    assert r.applied and r.facts["attr"] == "status", r.notes
    chosen = r.facts["unavailable"]
    assert len(chosen) == min(2, len(could)) and set(chosen) <= could
    assert all(r.state["shipments"][k]["status"] == "cancelled" for k in chosen)
    assert r.targets == chosen and all(k in r.notes[0] for k in chosen)
    live = {k for k, s in r.state["shipments"].items() if s["status"] != "cancelled"}
    assert set(r.facts["available"]) == live and live
    assert state_violations(spec, r.state) == [] and repr(s0) == before


def test_unavailable_entities_reads_outcomes_as_outcomes_and_flags_as_flags(parcel: BuiltEnv) -> None:
    spec, s0 = parcel.spec, parcel.s0
    claims = OPERATORS["unavailable_entities"](spec, s0, random.Random(0), entity="claim")
    # withdrawn takes a claim out of play; denied and rejected are decisions on a live claim
    assert {claims.state["claims"][k]["status"] for k in claims.facts["unavailable"]} == {"withdrawn"}
    carriers = OPERATORS["unavailable_entities"](spec, s0, random.Random(0), entity="carrier", count=50)
    assert carriers.applied and carriers.facts["attr"] == "active"
    assert all(carriers.state["carriers"][k]["active"] is False for k in carriers.facts["unavailable"])
    assert len(carriers.facts["available"]) == 1  # however many are asked for, one stays in service
    assert state_violations(spec, carriers.state) == []


def test_unavailable_entities_is_not_applied_where_nothing_means_unavailable(parcel: BuiltEnv) -> None:
    for entity in ("freight_invoice", "adjuster"):
        r = OPERATORS["unavailable_entities"](parcel.spec, parcel.s0, random.Random(0), entity=entity)
        assert not r.applied and r.state == parcel.s0
        assert "no status or flag that means unavailable" in r.notes[0]


def test_conflicting_states_adds_a_twin_that_disagrees_on_the_status_only(parcel: BuiltEnv) -> None:
    spec, s0 = parcel.spec, parcel.s0
    target = sorted(s0["claims"])[0]
    r = OPERATORS["conflicting_states"](spec, s0, random.Random(0), entity="claim", key=target)
    assert r.applied, r.notes
    twin, original = r.state["claims"][r.facts["twin"]], s0["claims"][target]
    assert r.facts["key"] == target and r.targets == [target, r.facts["twin"]]
    assert r.facts["attr"] == "status" and twin["status"] != original["status"]
    assert {k for k in original if original[k] != twin[k]} == {"claim_id", "status"}
    assert state_violations(spec, r.state) == []


def test_conflicting_states_keeps_a_uniqueness_rule_that_covers_the_identity(parcel: BuiltEnv) -> None:
    spec, s0 = parcel.spec, parcel.s0
    target = sorted(s0["tracking_events"])[0]
    r = OPERATORS["conflicting_states"](spec, s0, random.Random(0), entity="tracking_event", key=target)
    # the checkpoint code is the decisive field and part of the one-scan-per-code rule, so the twin
    # can share the shipment and the time and still be unique
    assert r.applied and r.facts["attr"] == "code"
    assert {"shipment_id", "occurred_at"} <= set(r.facts["shared"])
    assert state_violations(spec, r.state) == []


def test_conflicting_states_redraws_a_unique_field_and_falls_back_to_an_amount(
    spec: EnvSpec, s0: dict[str, Any]
) -> None:
    target = sorted(s0["customers"])[0]
    r = OPERATORS["conflicting_states"](spec, s0, random.Random(0), entity="customer", key=target)
    twin = r.state["customers"][r.facts["twin"]]
    assert r.facts["attr"] == "credit" and twin["credit"] != s0["customers"][target]["credit"]
    assert (
        twin["name"] == s0["customers"][target]["name"] and twin["email"] != s0["customers"][target]["email"]
    )
    assert state_violations(spec, r.state) == []


def test_conflicting_states_is_not_applied_where_records_have_nothing_to_disagree_on(
    parcel: BuiltEnv,
) -> None:
    r = OPERATORS["conflicting_states"](parcel.spec, parcel.s0, random.Random(0), entity="adjuster")
    assert not r.applied and r.state == parcel.s0 and "no field two entries could disagree on" in r.notes[0]


def test_a_lookalike_is_named_as_such_records_are_really_called() -> None:
    """A distractor beside 'Donald Chan' is another Chan; beside 'Classic Cheeseburger' a variant of it;
    never 'Donald Chan III'."""
    from agentomnia.envs.semantic import World
    from agentomnia.envs.spec import AttributeSpec, EntitySpec
    from agentomnia.tasks.hardening import lookalike

    def entity(name: str) -> EntitySpec:
        return EntitySpec(name=name, table=f"{name}s", key=f"{name}_id", id_prefix=name[:3].upper(), description=name,
                          attributes=(AttributeSpec(name=f"{name}_id", type="str"), AttributeSpec(name="name", type="str")))  # fmt: skip

    rng, taken = random.Random(0), {"Donald Chan"}
    people = [lookalike("Donald Chan", entity("agent"), World(), rng, taken) for _ in range(3)]
    assert all(p.endswith(" Chan") and p != "Donald Chan" for p in people), people
    dishes = {lookalike("Classic Cheeseburger", entity("menu_item"), World(), rng, set()) for _ in range(5)}
    assert all(
        d.startswith("Classic Cheeseburger ") and not d.endswith(("II", "III", "Classic")) for d in dishes
    ), dishes
    # a storeroom beside 'Warehouse Office Store' is in another part of the building, not a 'Deluxe' one
    rooms = {lookalike("Warehouse Office Store", entity("storeroom"), World(), rng, set()) for _ in range(5)}
    assert all(r.endswith("Warehouse Office Store") or r.endswith(" Annex") for r in rooms), rooms
    # a hotel beside 'Riverside Inn & Suites' is the chain's branch elsewhere, not an 'Elite' one
    hotels = {lookalike("Riverside Inn & Suites", entity("hotel"), World(), rng, set()) for _ in range(5)}
    assert all(h.startswith("Riverside Inn & Suites ") and h.split()[-1] in ("Downtown", "Midtown", "Uptown",
               "Northside", "Southside", "Eastside", "Westside", "Airport", "Town", "Harbor", "Central", "North",
               "South", "East", "West") for h in hotels), hotels  # fmt: skip
    # a site beside 'Boise Downtown' is another part of Boise, not 'Boise Downtown Plus'
    sites = {lookalike("Boise Downtown", entity("location"), World(), rng, set()) for _ in range(5)}
    assert all(s.startswith("Boise ") and len(s.split()) == 2 and s != "Boise Downtown" for s in sites), sites


def test_near_values_are_close_for_their_magnitude_and_written_like_it() -> None:
    """A look-alike's figure sits a step a person would call close away: 350,000 becomes 348,000 or
    351,000, not 350,000.5; cents stay cents; a count moves by whole units."""
    from agentomnia.tasks.hardening import near_value

    assert [near_value(350_000, "money", s) for s in (-2, -1, 1, 2)] == [
        348_000.0,
        349_000.0,
        351_000.0,
        352_000.0,
    ]
    assert near_value(68.88, "money", -1) == 68.78 and near_value(0.2, "money", 1) == 0.21
    assert near_value(12, "int", 1) == 13 and near_value(4_250, "int", -2) == 4_230
    assert near_value(4.5, "float", -1) == 4.49 and near_value(0.786, "float", 2) == 0.788
