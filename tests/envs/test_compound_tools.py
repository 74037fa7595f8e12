"""Compound tools: the knowledge base's declared behaviour (preconditions across records, effects on
other entities, derived fields, side records) and the structural ones derived from relations and
lifecycles, compiled into tools, generated into code and verified like every other tool."""

from __future__ import annotations

import copy
import re
import statistics
from typing import Any

import pytest

from agentomnia.envs.build import BuiltEnv, build_environment
from agentomnia.envs.calls import breaking_calls, reference_admits, valid_calls
from agentomnia.envs.codegen import generate_source
from agentomnia.envs.spec import EnvSpec, compound_of, is_compound
from agentomnia.envs.state import generate_state, state_violations
from agentomnia.envs.state_space import build_state_space
from agentomnia.envs.toolset import synthesize_toolset
from agentomnia.envs.verify import effect_problems, with_tools
from agentomnia.sandbox.policy import validate_source
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.seeds.inference import propose_offline
from agentomnia.seeds.parsers import query_seed
from agentomnia.taxonomy import load_taxonomy
from agentomnia.taxonomy.knowledge import DomainKnowledge, knowledge_problems, load_knowledge

FRAUD, TRADING, RECORD, PHARMACY, TRIAL = 20001, 20004, 20005, 20007, 20008


def kb_spec(domain_id: int) -> EnvSpec:
    """The environment spec (state space and tools) the offline builder makes for a KB domain."""
    kb = load_knowledge()[domain_id]
    seed = query_seed({"query": kb.workflows[0]}, columns={}, source="test", place="row1", default_name="q")
    domain = load_taxonomy().by_id(domain_id)
    spec, space = build_state_space(propose_offline(seed, domain, 1.0, 0.0, [1.0]), [seed], domain)
    return with_tools(
        spec, synthesize_toolset(spec, [seed], space.tool_entities, kb_used=space.kb_used).tools
    )


def instantiate(spec: EnvSpec, state: dict[str, Any]) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(generate_source(spec), "<generated>", "exec"), namespace)
    return namespace[spec.class_name](state)


def tables(env: Any, spec: EnvSpec) -> dict[str, Any]:
    return {e.table: copy.deepcopy(getattr(env, e.table)) for e in spec.entities} | {"now": env.now}


def first_key(table: dict[str, Any], **match: Any) -> str:
    return next(k for k, r in sorted(table.items()) if all(r.get(f) == v for f, v in match.items()))


@pytest.fixture(scope="module")
def pharmacy() -> EnvSpec:
    return kb_spec(PHARMACY)


# -- the declarative form and its validation ------------------------------------------------------


def _domain_with(effects: dict[str, Any], *, kind: str = "write", entity: str = "order") -> dict[str, Any]:
    return {
        "id": 1,
        "description": "a shop",
        "workflows": ["refund an order"],
        "entities": [
            {"name": "customer", "description": "a buyer", "key": "customer_id",
             "attributes": [{"customer_id": "str"}, {"name": "str"}, {"balance": "money"},
                            {"tier": "enum[basic|gold]"}]},
            {"name": "order", "description": "an order", "key": "order_id",
             "attributes": [{"order_id": "str"}, {"customer_id": "ref(customer)"}, {"total": "money"},
                            {"status": "enum[open|paid|refunded]"}]},
            {"name": "refund", "description": "money back", "key": "refund_id",
             "attributes": [{"refund_id": "str"}, {"order_id": "ref(order)"}, {"amount": "money"}]},
        ],
        "relations": [{"source": "order", "attr": "customer_id", "target": "customer"},
                      {"source": "refund", "attr": "order_id", "target": "order"}],
        "rules": [],
        "operations": [{"name": "refund_order", "kind": kind, "entity": entity, "description": "Refund an order.",
                        "effects": effects}],
    }  # fmt: skip


def test_a_well_formed_behaviour_is_accepted_in_its_normal_form() -> None:
    kb = DomainKnowledge.model_validate(
        _domain_with(
            {
                "to": "refunded",
                "requires": [
                    "status == paid",
                    "customer_id->tier in [basic, gold]",
                    "total <= $customer_id->balance",
                ],
                "steps": [
                    {"add": "customer_id->balance", "by": "$total"},
                    {"create": "refund", "with": {"order_id": "$order_id", "amount": "$total * 1"}},
                    {"set": "customer_id->tier", "to": "gold", "when": "total >= 100"},
                ],
            }
        )
    )
    b = kb.operations[0].effects
    assert b is not None and b.to == "refunded"
    assert [r.kind for r in b.requires] == ["compare", "in", "compare"]
    assert b.requires[2].right == {"path": "customer_id->balance"}
    assert [s.kind for s in b.steps] == ["add", "create", "set"]
    assert b.steps[1].fields["amount"] == {"expr": [{"path": "total"}, "*", {"const": 1}]}
    assert b.steps[2].when is not None and b.steps[2].when.right == {"const": 100}


@pytest.mark.parametrize(
    ("effects", "kind", "message"),
    [
        ({"steps": [{"set": "customer_id->vip", "to": True}]}, "write", "customer has no attribute 'vip'"),
        ({"steps": [{"set": "total->x", "to": 1}]}, "write", "order.total is not a reference"),
        ({"to": "shipped"}, "write", "`to: shipped` is not one of order.status"),
        ({"steps": [{"add": "customer_id->name", "by": 1}]}, "write", "add/subtract need a number"),
        ({"steps": [{"create": "refund", "with": {"amount": 5}}]}, "write", "is linked to nothing"),
        ({"steps": [{"set": "customer_id->tier", "to": "platinum"}]}, "write", "'platinum' is not one of"),
        ({"requires": ["status in [open, lost]"]}, "write", "'lost' is not one of"),
        ({"steps": [{"each": {"entity": "invoice", "where": {"order_id": "$order_id"}}, "set": {"x": 1}}]},
         "write", "unknown entity 'invoice'"),
        ({"requires": ["status == paid"]}, "read", "a read operation cannot declare effects"),
    ],
)  # fmt: skip
def test_validation_names_what_is_wrong(effects: dict[str, Any], kind: str, message: str) -> None:
    with pytest.raises(ValueError, match="operation refund_order") as caught:
        DomainKnowledge.model_validate(_domain_with(effects, kind=kind))
    assert message in str(caught.value)


def test_an_unreadable_requirement_or_step_says_how_to_write_it() -> None:
    with pytest.raises(ValueError, match="write `path op value`"):
        DomainKnowledge.model_validate(_domain_with({"requires": ["status is paid"]}))
    with pytest.raises(ValueError, match="needs `to:`"):
        DomainKnowledge.model_validate(_domain_with({"steps": [{"set": "status"}]}))


def test_the_shipped_knowledge_base_is_consistent_and_declares_behaviour() -> None:
    kbs = load_knowledge()
    declared = [o for kb in kbs.values() for o in kb.operations if o.effects is not None]
    assert len(declared) >= 50
    assert all(not knowledge_problems(kb) for kb in kbs.values())


# -- compilation ----------------------------------------------------------------------------------


def test_declared_behaviour_compiles_into_a_tool_that_keeps_its_op(pharmacy: EnvSpec) -> None:
    tool = pharmacy.tool("dispense_fill")
    assert tool.op == "create" and tool.entity == "fill" and tool.origin == "kb"
    compound = compound_of(tool)
    assert compound is not None
    assert set(compound["touches"]) == {"fill", "inventory_lot", "prescription"}
    assert [s["kind"] for s in compound["steps"]] == ["subtract", "set", "set"]
    # a field the steps derive is not an argument
    assert "filled_at" not in tool.parameters["properties"]
    assert (
        "Refused when any of these fails: " in tool.description
        and "lowers the inventory lot's quantity" not in tool.description
    )


def test_every_kb_environment_gets_structural_compound_tools() -> None:
    spec = kb_spec(TRIAL)
    names = {t.name for t in spec.tools if is_compound(spec, t)}
    # a child is only created under a live parent; a parent closes with its open children
    guarded = compound_of(spec.tool("create_visit"))
    assert guarded is not None and guarded["requires"][0]["left"] == "participant_id->status"
    assert len(names) / len(spec.tools) >= 1 / 3
    record = kb_spec(RECORD)
    closer = compound_of(record.tool("cancel_encounter_and_open_clinical_orders"))
    assert closer is not None and closer["steps"] == [
        {
            "kind": "each",
            "select": {"entity": "clinical_order", "where": {"encounter_id": {"path": "encounter_id"}, "status": {"in": ["placed", "collected"]}}},
            "fields": {"status": {"const": "cancelled"}},
        }
    ]  # fmt: skip


# -- effects on a real state ----------------------------------------------------------------------


def test_subtract_set_and_a_derived_field_land_on_every_entity_touched(pharmacy: EnvSpec) -> None:
    s0 = generate_state(pharmacy, seed=0)
    rx = next(k for k, r in sorted(s0["prescriptions"].items()) if r["status"] in ("received", "verified"))
    s0["prescriptions"][rx]["status"] = "verified"
    drug = s0["prescriptions"][rx]["drug_id"]
    lot = first_key(s0["inventory_lots"])
    s0["inventory_lots"][lot].update(
        drug_id=drug, quarantined=False, quantity_on_hand=50, expires_on="2027-01-01"
    )
    env = instantiate(pharmacy, s0)
    before = tables(env, pharmacy)
    args = {"rx_id": rx, "lot_id": lot, "quantity": 12, "copay": 5.0, "status": "ready"}
    result = env.dispense_fill(**args)
    assert result["ok"], result
    after = tables(env, pharmacy)
    assert after["inventory_lots"][lot]["quantity_on_hand"] == 38  # subtract on a referenced record
    assert after["prescriptions"][rx]["status"] == "filled"  # set on a referenced record
    assert result["data"]["filled_at"] == env.now  # derived field on the target
    assert (
        effect_problems(pharmacy, pharmacy.tool("dispense_fill"), args, before, after, result["data"]) == []
    )
    assert state_violations(pharmacy, after) == []
    # add gives it back: returning the fill restores the lot's stock
    back = env.return_fill_to_stock(fill_id=result["data"]["fill_id"])
    assert back["ok"], back
    assert env.inventory_lots[lot]["quantity_on_hand"] == 50


def test_an_expression_over_references_derives_a_side_amount(pharmacy: EnvSpec) -> None:
    s0 = generate_state(pharmacy, seed=0)
    fill = first_key(s0["fills"])
    s0["fills"][fill]["status"] = "ready"
    rx = s0["prescriptions"][s0["fills"][fill]["rx_id"]]
    plan = s0["patients"][rx["patient_id"]]["plan_id"]
    env = instantiate(pharmacy, s0)
    result = env.submit_claim(fill_id=fill, plan_id=plan, status="submitted")
    assert result["ok"], result
    price = s0["drugs"][s0["inventory_lots"][s0["fills"][fill]["lot_id"]]["drug_id"]]["unit_price"]
    assert result["data"]["billed_amount"] == round(s0["fills"][fill]["quantity"] * price, 2)
    assert result["data"]["paid_amount"] == 0


def test_each_create_and_set_across_three_entities() -> None:
    spec = kb_spec(FRAUD)
    s0 = generate_state(spec, seed=0)
    case = first_key(s0["investigation_cases"])
    s0["investigation_cases"][case]["status"] = "open"
    customer = s0["investigation_cases"][case]["customer_id"]
    held = [k for k, t in s0["transactions"].items() if t["customer_id"] == customer]
    if not held:  # give the customer a transaction
        held = [first_key(s0["transactions"])]
        s0["transactions"][held[0]]["customer_id"] = customer
    for k in held:
        s0["transactions"][k]["status"] = "held"
    listed = [k for k, w in s0["watchlist_entries"].items() if w["customer_id"] == customer]
    for k in listed:  # the side record is made only for a customer not listed yet
        del s0["watchlist_entries"][k]
    env = instantiate(spec, s0)
    before = tables(env, spec)
    result = env.close_case(case_id=case)
    assert result["ok"], result
    after = tables(env, spec)
    assert after["investigation_cases"][case]["status"] == "closed_fraud"
    assert after["customers"][customer]["risk_level"] == "blocked"
    assert all(after["transactions"][k]["status"] == "reversed" for k in held)
    new = set(after["watchlist_entries"]) - set(before["watchlist_entries"])
    assert len(new) == 1 and after["watchlist_entries"][new.pop()]["customer_id"] == customer
    assert (
        effect_problems(spec, spec.tool("close_case"), {"case_id": case}, before, after, result["data"]) == []
    )
    assert state_violations(spec, after) == []
    # a customer already listed is not listed twice: the step's `when` skips it
    again = instantiate(spec, {**after, "investigation_cases": before["investigation_cases"]})
    assert again.close_case(case_id=case)["ok"]
    assert len(again.watchlist_entries) == len(after["watchlist_entries"])


def test_verification_catches_code_that_departs_from_the_declared_effect(pharmacy: EnvSpec) -> None:
    s0 = generate_state(pharmacy, seed=0)
    fill = first_key(s0["fills"])
    s0["fills"][fill]["status"] = "ready"
    tampered = re.sub(
        r'"kind": "add",(\s+)"path": "lot_id->quantity_on_hand"',
        r'"kind": "subtract",\1"path": "lot_id->quantity_on_hand"',
        generate_source(pharmacy),
    )
    assert tampered != generate_source(pharmacy)
    namespace: dict[str, Any] = {}
    exec(compile(tampered, "<tampered>", "exec"), namespace)
    env = namespace[pharmacy.class_name](s0)
    before = tables(env, pharmacy)
    result = env.return_fill_to_stock(fill_id=fill)
    assert result["ok"], result
    problems = effect_problems(
        pharmacy,
        pharmacy.tool("return_fill_to_stock"),
        {"fill_id": fill},
        before,
        tables(env, pharmacy),
        result["data"],
    )
    assert problems and "inventory_lots" in problems[0]


# -- refusals -------------------------------------------------------------------------------------


def test_a_broken_precondition_changes_nothing_and_says_why(pharmacy: EnvSpec) -> None:
    s0 = generate_state(pharmacy, seed=0)
    rx = first_key(s0["prescriptions"])
    s0["prescriptions"][rx]["status"] = "verified"
    lot = first_key(s0["inventory_lots"])
    s0["inventory_lots"][lot].update(
        drug_id=s0["prescriptions"][rx]["drug_id"], quarantined=True, quantity_on_hand=50
    )
    env = instantiate(pharmacy, s0)
    before = tables(env, pharmacy)
    result = env.dispense_fill(rx_id=rx, lot_id=lot, quantity=5, copay=1.0, status="ready")
    assert not result["ok"] and result["error"]["code"] == "precondition_failed"
    assert "quarantined" in result["error"]["message"]
    assert tables(env, pharmacy) == before


def test_a_step_that_would_break_an_invariant_rolls_back_every_entity() -> None:
    spec = kb_spec(TRADING)
    s0 = generate_state(spec, seed=0)
    order = first_key(s0["orders"])
    s0["orders"][order].update(status="working", quantity=10, filled_quantity=8)
    party = first_key(s0["counterparties"])
    s0["counterparties"][party].update(current_exposure=0.0, exposure_limit=1e9)
    env = instantiate(spec, s0)
    before = tables(env, spec)
    # 5 more filled on an order of 10 with 8 filled breaks `filled_quantity <= quantity`
    result = env.book_execution(order_id=order, counterparty_id=party, quantity=5, price=10.0, venue="XNYS")
    assert not result["ok"] and result["error"]["code"] == "rule_violation"
    assert tables(env, spec) == before  # the order, the counterparty's exposure and the execution table
    ok = env.book_execution(order_id=order, counterparty_id=party, quantity=2, price=10.0, venue="XNYS")
    assert ok["ok"], ok
    assert (
        env.orders[order]["filled_quantity"] == 10 and env.counterparties[party]["current_exposure"] == 20.0
    )


def test_breaking_calls_are_grounded_and_refused(pharmacy: EnvSpec) -> None:
    s0 = generate_state(pharmacy, seed=0)
    env = instantiate(pharmacy, s0)
    refused = 0
    for tool in pharmacy.tools:
        for _, args in breaking_calls(pharmacy, s0, tool):
            before = tables(env, pharmacy)
            result = getattr(env, tool.name)(**args)
            assert not result["ok"] and result["error"]["code"] == "precondition_failed", (tool.name, result)
            assert tables(env, pharmacy) == before
            refused += 1
    assert refused >= 5


def test_a_reference_is_judged_by_the_requirements_that_read_through_it(pharmacy: EnvSpec) -> None:
    """A task generator points a reference at a record the tool's requirements admit, judging only
    what it has chosen so far: a quarantined lot is out at once, a lot of another drug once the
    prescription is chosen, and the quantity on hand once the quantity is."""
    s0 = generate_state(pharmacy, seed=0)
    tool = pharmacy.tool("dispense_fill")
    rx = first_key(s0["prescriptions"])
    drug = s0["prescriptions"][rx]["drug_id"]
    lots = s0["inventory_lots"]
    bad, good = sorted(lots)[:2]
    lots[bad].update(quarantined=True, drug_id=drug)
    lots[good].update(quarantined=False, drug_id=drug, quantity_on_hand=5, expires_on="2099-01-01")
    assert not reference_admits(pharmacy, s0, tool, {"lot_id": bad}, "lot_id")
    assert reference_admits(pharmacy, s0, tool, {"rx_id": rx, "lot_id": good}, "lot_id")
    lots[good]["drug_id"] = "another drug"
    assert reference_admits(pharmacy, s0, tool, {"lot_id": good}, "lot_id")  # the rx is still open
    assert not reference_admits(pharmacy, s0, tool, {"rx_id": rx, "lot_id": good}, "lot_id")
    lots[good]["drug_id"] = drug
    assert reference_admits(pharmacy, s0, tool, {"rx_id": rx, "lot_id": good, "quantity": 5}, "lot_id")
    assert not reference_admits(pharmacy, s0, tool, {"rx_id": rx, "lot_id": good, "quantity": 6}, "lot_id")


def test_a_stated_date_is_brought_within_what_its_requirement_allows() -> None:
    """A vaccination recorded as given in the future, expiring before it was given, is moved to
    dates the tool accepts (given a week before today, expiring after that); dates that already fit
    stay, and without `dates` (environment verification) nothing moves."""
    from agentomnia.envs.calls import fit_compared_values, requirement_problem
    from agentomnia.envs.state import CLOCK, CLOCK_START

    spec = kb_spec(10005)
    s0 = generate_state(spec, seed=0)
    tool = spec.tool("record_vaccination")
    pet = first_key(s0["pets"])
    today = str(s0.get(CLOCK) or CLOCK_START)[:10]
    args = {"pet_id": pet, "vaccine": "rabies", "given_on": "2099-05-01", "expires_on": "2099-04-01"}
    kept = dict(args)
    fit_compared_values(spec, s0, tool, kept)
    assert kept == args
    fit_compared_values(spec, s0, tool, args, dates=True)
    assert args["given_on"] < today < "2099" and args["expires_on"] > args["given_on"], args
    assert requirement_problem(spec, s0, tool, args) is None
    fine = {**args}
    fit_compared_values(spec, s0, tool, fine, dates=True)
    assert fine == args


def test_valid_calls_meet_the_requirements_and_keep_the_invariants(pharmacy: EnvSpec) -> None:
    import random

    s0 = generate_state(pharmacy, seed=0)
    succeeded = 0
    for tool in pharmacy.tools:
        if compound_of(tool) is None:
            continue
        env = instantiate(pharmacy, s0)
        for args in valid_calls(pharmacy, s0, tool, random.Random(0)):
            result = getattr(env, tool.name)(**args)
            if result["ok"]:
                assert state_violations(pharmacy, tables(env, pharmacy)) == [], tool.name
                succeeded += 1
                break
    assert succeeded >= 10


def test_generated_source_with_compound_tools_passes_the_sandbox_policy(pharmacy: EnvSpec) -> None:
    source = generate_source(pharmacy)
    assert validate_source(source) == []
    assert "_COMPOUND = " in source and "def _commit(self" in source


# -- whole builds ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built(sandbox: Sandbox) -> list[BuiltEnv]:
    out = []
    for domain_id in (FRAUD, PHARMACY, TRIAL, 20003, RECORD):
        kb = load_knowledge()[domain_id]
        seed = query_seed(
            {"query": kb.workflows[0]}, columns={}, source="test", place="row1", default_name="q"
        )
        domain = load_taxonomy().by_id(domain_id)
        result = build_environment(
            propose_offline(seed, domain, 1.0, 0.0, [1.0]), [seed], domain, sandbox
        ).result
        assert isinstance(result, BuiltEnv), result
        out.append(result)
    return out


def test_built_environments_verify_with_a_third_of_their_tools_compound(built: list[BuiltEnv]) -> None:
    shares = []
    for b in built:
        assert b.report.passed
        compound = [t for t in b.spec.tools if is_compound(b.spec, t)]
        shares.append(len(compound) / len(b.spec.tools))
        checked = {c.name: c for c in b.report.tools}
        assert all(checked[t.name].passed for t in compound)
    assert min(shares) >= 1 / 3 and statistics.median(shares) >= 0.4


def test_verification_ran_refusal_checks_on_compound_tools(built: list[BuiltEnv]) -> None:
    b = built[1]
    s0 = b.s0
    with_refusals = [t for t in b.spec.tools if breaking_calls(b.spec, s0, t)]
    assert len(with_refusals) >= 5


def test_arithmetic_with_a_zero_operand_computes_only_its_own_operator() -> None:
    """`balance + overdraft_limit` with no overdraft is the balance (no division is tried on the side)."""
    from agentomnia.envs.spec import compound_value

    spec = _zero_spec()
    for op, want in (("+", 5), ("-", 5), ("*", 0)):
        expr = {"expr": [{"const": 5}, op, {"const": 0}]}
        assert compound_value(spec, {}, spec.entities[0].name, {}, expr, "2026-03-02T09:00:00") == want
    assert (
        compound_value(spec, {}, spec.entities[0].name, {}, {"expr": [{"const": 5}, "/", {"const": 0}]}, "x")
        is None
    )


def _zero_spec():  # type: ignore[no-untyped-def]
    from agentomnia.envs.state_space import build_state_space
    from tests.fixtures.domains import PARCEL

    return build_state_space(PARCEL.candidate(), [PARCEL.seed()], PARCEL.domain())[0]


def test_a_seed_tool_in_a_known_domain_makes_the_move_its_command_names() -> None:
    """`decide_expense_report(report_id, decision)` in the travel-expense domain had created an expense
    (the write verb `report` was not read as a noun, and no `expense_id` was given); `get_expense_report`
    listed expenses and `delete_expense_line` made one. Each now acts on what it names, and the decision
    moves the report as it says, from the submitted state its description names."""
    from agentomnia.seeds.ingest import corpus_dir, ingest

    seed = ingest([corpus_dir() / "mcp/expense-claims.json"]).accepted[0]
    domain = load_taxonomy().by_id(10018)  # Travel Expense Tracking
    spec, space = build_state_space(propose_offline(seed, domain, 1.0, 0.0, [1.0]), [seed], domain)
    assert space.kb_used
    spec = with_tools(spec, synthesize_toolset(spec, [seed], space.tool_entities, kb_used=True).tools)
    ops = {t.name: (t.op, t.entity) for t in spec.tools if t.origin == "seed"}
    assert ops["get_expense_report"] == ("get", "expense_report")
    assert ops["submit_expense_report"] == ("transition", "expense_report")
    assert ops["delete_expense_line"][0] == "delete"
    decide = spec.tool("decide_expense_report")
    found = compound_of(decide)
    assert decide.op == "update" and found is not None
    assert found["command"]["targets"] == {
        "approve": "approved", "reject": "rejected", "return_for_changes": "returned",
    }  # fmt: skip
    s0 = generate_state(spec, seed=0)
    reports = s0["expense_reports"]
    draft = first_key(reports, status="draft")
    submitted = first_key(reports, status="submitted")
    approver = sorted(s0["employees"])[0]
    env = instantiate(spec, copy.deepcopy(s0))
    refused = env.decide_expense_report(report_id=draft, approver_id=approver, decision="approve")
    assert not refused["ok"] and refused["error"]["code"] == "precondition_failed", refused
    assert "submitted" in refused["error"]["message"]
    unknown = env.decide_expense_report(report_id=submitted, approver_id="EMP-999", decision="approve")
    assert (
        unknown["error"]["message"] == "expense_report.approver_id points to no existing employee ('EMP-999')"
    )
    done = env.decide_expense_report(report_id=submitted, approver_id=approver, decision="return_for_changes")
    assert done["ok"], done
    assert env.expense_reports[submitted]["status"] == "returned"
    assert len(env.expenses) == len(s0["expenses"])  # nothing made on the side


def test_a_seed_command_sets_the_yes_no_field_of_a_known_domain_s_record() -> None:
    """In the smart-devices domain, `lock_door(action=unlock)` had only stored the word 'unlock' on the
    device; it clears the device's `locked`, and `lock` sets it."""
    from agentomnia.seeds.ingest import corpus_dir, ingest

    seed = ingest([corpus_dir() / "mcp/smart-home-hub.json"]).accepted[0]
    domain = load_taxonomy().by_id(10098)  # Smart Devices
    spec, space = build_state_space(propose_offline(seed, domain, 1.0, 0.0, [1.0]), [seed], domain)
    assert space.kb_used
    spec = with_tools(spec, synthesize_toolset(spec, [seed], space.tool_entities, kb_used=True).tools)
    door = spec.tool("lock_door")
    found = compound_of(door)
    assert found is not None and set(found["command"]["targets"]) == {"lock", "unlock"}
    s0 = generate_state(spec, seed=0)
    table = spec.entity(door.entity).table
    key = sorted(s0[table])[0]
    s0[table][key]["locked"] = True
    env = instantiate(spec, s0)
    opened = env.lock_door(device_id=key, action="unlock", pin_code="4821")
    assert opened["ok"] and getattr(env, table)[key]["locked"] is False, opened
    shut = env.lock_door(device_id=key, action="lock")
    assert shut["ok"] and getattr(env, table)[key]["locked"] is True, shut


def test_a_command_takes_its_record_and_what_its_behaviour_reads_never_every_field() -> None:
    """ "Record that a patient has died" takes the patient alone (never "record the death and make
    sure its name is 'Milo'"); a rule against a fixed value is the record's ("amount > 0"), no input;
    a field a step's condition tests is given and required ("decision == changes_requested"); one the
    description names stays a choice ("Change the body of a sent message": body, not sent_at)."""
    from agentomnia.envs.spec import AttributeSpec, EntitySpec
    from agentomnia.envs.toolset import _described_fields, _given_fields

    vet = kb_spec(20146)
    death, pay = vet.tool("record_patient_death"), vet.tool("pay_invoice")
    assert list(death.parameters["properties"]) == ["patient_id"] == death.parameters["required"]
    assert list(pay.parameters["properties"]) == ["invoice_id"]
    review = EntitySpec(
        name="review", table="reviews", description="", key="review_id", id_prefix="REV",
        attributes=(AttributeSpec(name="review_id", type="str"), AttributeSpec(name="amount", type="money"),
                    AttributeSpec(name="decision", type="enum", enum=("pending", "approved", "changes_requested")),
                    AttributeSpec(name="body", type="str"), AttributeSpec(name="sent_at", type="datetime"),
                    AttributeSpec(name="status", type="enum", enum=("open", "closed"))),
    )  # fmt: skip
    requires = [
        {"kind": "compare", "left": "amount", "op": ">", "right": {"const": 0}},
        {"kind": "in", "left": "status", "op": "in", "right": ["open"]},
    ]
    when = {"kind": "compare", "left": "decision", "op": "==", "right": {"const": "changes_requested"}}
    steps = [{"kind": "set", "path": "status", "value": {"const": "closed"}, "when": when}]
    assert _given_fields(requires, steps, review) == {"decision"}
    assert _described_fields("Change the body of a sent message.", review) == {"body"}


def test_a_read_takes_the_shape_its_description_gives_it() -> None:
    """ "Free slots of a doctor" lists one doctor's slots, so the doctor is required; "Read a
    customer's tier, spend and manager" reads one customer by its id; "List open disputes", and a
    read of one of two owners ("goals of an employee or cycle"), stay lists with optional filters."""
    from agentomnia.envs.spec import AttributeSpec, EntitySpec
    from agentomnia.envs.toolset import read_shape

    def entity(name: str, *refs: str) -> EntitySpec:
        attrs = [AttributeSpec(name=f"{name}_id", type="str")]
        attrs += [AttributeSpec(name=f"{r}_id", type="ref", ref=r) for r in refs]
        return EntitySpec(name=name, table=f"{name}s", description="", key=f"{name}_id", id_prefix="X",
                          attributes=tuple(attrs))  # fmt: skip

    slot, goal, customer = (
        entity("consult_slot", "doctor"),
        entity("goal", "employee", "cycle"),
        entity("customer"),
    )
    assert read_shape("Free slots of a doctor.", slot) == ("list", ["doctor_id"])
    assert read_shape("List a doctor's open slots.", slot) == ("list", ["doctor_id"])
    assert read_shape("List goals of an employee or cycle.", goal) == ("list", [])
    assert read_shape("List an employee's goals in a cycle.", goal) == ("list", ["cycle_id", "employee_id"])
    assert read_shape("Read a customer's tier, spend and manager.", customer) == ("get", [])
    assert read_shape("A customer with their orders.", customer) == ("get", [])
    assert read_shape("List customers by tier.", customer) == ("list", [])
    assert read_shape("Find a customer by e-mail.", customer) == ("list", [])  # a search, not a fetch
    # two references to the same kind of record cannot say which one the description means
    transfer = entity("transfer", "account")
    transfer = transfer.model_copy(
        update={
            "attributes": (
                *transfer.attributes,
                AttributeSpec(name="to_account_id", type="ref", ref="account"),
            )
        }
    )
    assert read_shape("Transfers of an account.", transfer) == ("list", [])


def test_a_read_over_a_span_of_time_takes_its_dates() -> None:
    """ "List vaccinations due within a period" reads the vaccinations whose due date lies in the span
    the agent gives; the field is the one the description names, else the one saying when a record
    happens; a read of what is not dated ("gear not checked out on a date") or a product's launch date
    never makes one."""
    from agentomnia.envs.spec import AttributeSpec, EntitySpec
    from agentomnia.envs.toolset import read_window

    def entity(name: str, *dates: str) -> EntitySpec:
        attrs = [AttributeSpec(name=f"{name}_id", type="str"), AttributeSpec(name="note", type="str")]
        attrs += [AttributeSpec(name=d, type="date") for d in dates]
        return EntitySpec(name=name, table=f"{name}s", description="", key=f"{name}_id", id_prefix="X",
                          attributes=tuple(attrs))  # fmt: skip

    def window(description: str, e: EntitySpec) -> str | None:
        found = read_window(description, e)
        return found.name if found is not None else None

    vaccination = entity("vaccination", "given_on", "due_next")
    assert window("List vaccinations due within a period.", vaccination) == "due_next"
    assert window("List vaccinations given in a date range.", vaccination) == "given_on"
    contract = entity("contract", "start_date", "end_date")
    assert window("List contracts ending within a window.", contract) == "end_date"
    assert window("List contracts for a period.", contract) == "start_date"
    assert window("List contracts by status.", contract) is None  # no span of time
    assert window("Read the log for a date.", entity("daily_log", "log_date")) == "log_date"
    assert window("List gear not checked out on a date.", entity("gear", "last_serviced")) is None
    assert window("Rank products by revenue in a period.", entity("product", "launched_on")) is None
    assert window("Readings over a period.", entity("reading")) is None  # no date at all


def test_a_generated_read_over_a_span_says_what_it_lists_in_words() -> None:
    """ "ASNs shipped between start and end", never "Asns whose shipped on lies between start and end"."""
    from agentomnia.envs.spec import AttributeSpec, EntitySpec
    from agentomnia.envs.toolset import gen_range

    def said(entity: str, date: str) -> str:
        e = EntitySpec(name=entity, table=f"{entity}s", description="", key="id", id_prefix="X",
                       attributes=(AttributeSpec(name="id", type="str"), AttributeSpec(name=date, type="date")))  # fmt: skip
        return gen_range(e, e.attribute(date)).description.split(" (")[0]  # type: ignore[arg-type]

    assert said("asn", "shipped_on") == "ASNs shipped between start and end"
    assert said("vaccination", "due_next") == "Vaccinations due between start and end"
    assert (
        said("equipment", "inspection_due")
        == "Equipment records whose inspection is due between start and end"
    )
    assert said("passenger", "birth_date") == "Passengers whose birth date lies between start and end"
    assert (
        said("daily_sales", "business_date") == "Daily sales whose business date lies between start and end"
    )
    assert said("event", "start_at") == "Events whose start time lies between start and end"
    assert said("lab_batch", "made_on") == "Lab batches made between start and end"
    assert said("book_loan", "starts_on") == "Book loans starting between start and end"
    assert (
        said("parking_permit", "valid_from")
        == "Parking permits whose valid from date lies between start and end"
    )


def test_a_read_named_for_a_state_keeps_to_that_state() -> None:
    """ "find_available_technicians" lists available ones, "List unacknowledged alerts" those not
    acknowledged, "list_pending_checks" those whose verdict is pending; what a read lists its records by
    ("cases by priority or automation"), two states at once, a state said only by what it is not, a
    word used as a noun ("a member's tier") and a write name no state."""
    from agentomnia.envs.spec import AttributeSpec, EntitySpec
    from agentomnia.envs.toolset import read_state

    def entity(name: str, **attrs: str | list[str]) -> EntitySpec:
        made = [AttributeSpec(name=f"{name}_id", type="str")]
        for attr, kind in attrs.items():
            made.append(
                AttributeSpec(name=attr, type="enum", enum=list(kind))
                if isinstance(kind, list)
                else AttributeSpec(name=attr, type=kind)  # type: ignore[arg-type]
            )
        return EntitySpec(name=name, table=f"{name}s", description="", key=f"{name}_id", id_prefix="X",
                          attributes=tuple(made))  # fmt: skip

    technician = entity("technician", available="bool", specialty=["hvac", "electrical"])
    alert = entity("alert", acknowledged="bool", level=["watch", "urgent"])
    check = entity("fact_check", verdict=["pending", "verified", "false"])
    ticket = entity("ticket", status=["open", "answered", "closed"], automated="bool")
    order = entity("order", status=["received", "scheduled", "shipped"])
    member = entity("account", tier=["member", "gold"])
    assert read_state(
        "find_available_technicians", "Find available technicians by specialty.", technician
    ) == {"available": True}
    assert read_state("list_open_alerts", "List unacknowledged alerts for a caseload.", alert) == {
        "acknowledged": False
    }
    assert read_state("list_pending_checks", "List fact checks still pending.", check) == {
        "verdict": "pending"
    }
    assert read_state("list_open_tickets", "List open tickets by priority.", ticket) == {"status": "open"}
    assert read_state("list_tickets", "List tickets by status, priority or automation.", ticket) == {}
    assert read_state("list_open_tickets", "List tickets not yet closed.", ticket) == {}
    assert read_state("list_worklist", "List received and scheduled orders.", order) == {}
    assert read_state("get_account", "Read a member's tier and balance.", member) == {}
    assert read_state("close_open_tickets", "Close open tickets.", ticket) == {}


def test_a_state_read_lists_only_the_records_in_its_state() -> None:
    """In a knowledge-base environment, `list_open_alerts` ("List unacknowledged alerts for a caseload")
    returns exactly the alerts not yet acknowledged and offers no `acknowledged` filter that would
    ask it for the others; the plain list beside it still lists every alert."""
    spec = kb_spec(20009)
    tools = {t.name: t for t in spec.tools}
    state_read = tools["list_open_alerts"]
    assert state_read.binding["where"] == {"acknowledged": False}
    assert "acknowledged" not in state_read.parameters["properties"]
    plain = next(
        t
        for t in spec.tools
        if t.entity == state_read.entity and t.op == "list" and not t.binding.get("where")
    )
    s0 = generate_state(spec, seed=0)
    table = s0[spec.entity(state_read.entity).table]
    for key in list(table)[: len(table) // 2]:
        table[key]["acknowledged"] = True  # some of each
    env = instantiate(spec, s0)
    open_ = env.list_open_alerts(limit=100)["data"]
    every = getattr(env, plain.name)(limit=100)["data"]
    unacknowledged = sorted(k for k, r in table.items() if r["acknowledged"] is False)
    assert 0 < open_["count"] == len(unacknowledged) < every["count"] == len(table)
    assert sorted(r[spec.entity(state_read.entity).key] for r in open_["items"]) == unacknowledged


def test_kb_reads_compile_to_their_shape_and_take_their_owner(pharmacy: EnvSpec) -> None:
    """Across a domain's environment, a knowledge-base read that lists one record's records requires
    that record, and a plain list of the same entity stays beside it as its own tool."""
    from agentomnia.taxonomy.knowledge import load_knowledge

    shaped = 0
    for spec in (pharmacy, kb_spec(20146), kb_spec(FRAUD)):
        kb = load_knowledge()[spec.coordinate.taxonomy_id]
        names = {t.name: t for t in spec.tools}
        for op in kb.operations:
            tool = names.get(op.name)
            if op.kind != "read" or op.effects is not None or tool is None or tool.op != "list":
                continue
            for p in tool.parameters.get("required", []):
                shaped += 1
                assert p in tool.parameters["properties"] and tool.binding["filters"][p] == p
    assert shaped >= 2
