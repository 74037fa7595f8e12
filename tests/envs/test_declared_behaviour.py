"""A service the knowledge base does not know is mirrored as declared: its paths say what its records
are (REST semantics), and its tools do across records what its own structure says, behind the
interface it declares. Built from the project's own corpus of service specs."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from agentomnia.envs.build import BuiltEnv, build_environment
from agentomnia.envs.codegen import generate_source
from agentomnia.envs.resources import entity_name, http_resource
from agentomnia.envs.spec import EnvSpec, compound_of, is_compound
from agentomnia.envs.state import generate_state
from agentomnia.envs.state_space import build_state_space
from agentomnia.envs.toolset import seed_plain, synthesize_toolset
from agentomnia.envs.verify import with_tools
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.seeds.inference import propose_offline
from agentomnia.seeds.ingest import corpus_dir, ingest
from agentomnia.seeds.models import Seed, SeedTool
from agentomnia.taxonomy import load_taxonomy

LEDGERLINE = ("openapi/ledgerline-accounts-payable.yaml", 30057)
KEYSTONE = ("openapi/keystone-cost-control.yaml", None)
ASSETRAIL = ("openapi/assetrail-fixed-assets.json", None)
METRO = ("openapi/metro-utility-payments.yaml", None)


def corpus_seed(name: str) -> Seed:
    return ingest([corpus_dir() / name]).accepted[0]


def mirrored(name: str, domain_id: int | None = None) -> tuple[EnvSpec, Seed]:
    """The environment spec (state space and tools) the offline builder makes for a corpus spec."""
    seed = corpus_seed(name)
    taxonomy = load_taxonomy()
    domain = taxonomy.by_id(domain_id) if domain_id else taxonomy.by_id(30057)
    spec, space = build_state_space(propose_offline(seed, domain, 1.0, 0.0, [1.0]), [seed], domain)
    assert not space.kb_used, "the corpus service is one the knowledge base does not know"
    tools = synthesize_toolset(spec, [seed], space.tool_entities, kb_used=space.kb_used).tools
    return with_tools(spec, tools), seed


def instantiate(spec: EnvSpec, state: dict[str, Any]) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(generate_source(spec), "<generated>", "exec"), namespace)
    return namespace[spec.class_name](state)


def tool(method: str, path: str, name: str = "op") -> SeedTool:
    return SeedTool(name=name, method=method, path=path)


@pytest.mark.parametrize(
    ("method", "path", "entity", "op", "parent"),
    [
        ("POST", "/projects/{project_id}/change-orders", "change_order", "create", ("project", "project_id")),
        ("GET", "/projects/{project_id}/change-orders", "change_order", "list", ("project", "project_id")),
        ("POST", "/invoices/{invoice_id}/follow-ups", "follow_up", "create", ("invoice", "invoice_id")),
        ("POST", "/albums/{album_id}/share-links", "share_link", "create", ("album", "album_id")),
        ("POST", "/orders/{order_id}/cancel", "order", "transition", None),
        ("POST", "/pet/{petId}/uploadImage", "pet", "update", None),
        # Express-style parameters are parameters all the same
        ("DELETE", "/site/:cloudId/conversation/:conversationId/media/:mediaId", "media", "delete",
         ("conversation", "conversationId")),
        ("PUT", "/site/:cloudId/conversation/:conversationId/archive", "conversation", "transition",
         ("site", "cloudId")),
    ],
)  # fmt: skip
def test_a_kebab_case_collection_is_not_read_as_a_verb(
    method: str, path: str, entity: str, op: str, parent: tuple[str, str] | None
) -> None:
    found = http_resource(tool(method, path))
    assert found is not None
    assert (found.entity, found.op, found.parent) == (entity, op, parent)


def test_a_short_plural_ending_a_name_is_made_singular() -> None:
    assert entity_name("follow-ups") == "follow_up"
    assert entity_name("add-ons") == "add_on"
    assert entity_name("bus") == "bus" and entity_name("gas") == "gas"


def test_a_sub_collection_keeps_its_parent_and_the_parent_its_own_lifecycle() -> None:
    spec, _ = mirrored(*KEYSTONE)
    change_order, project = spec.entity("change_order"), spec.entity("project")
    assert change_order.attribute("project_id") is not None
    assert change_order.attribute("project_id").ref == "project"  # type: ignore[union-attr]
    # the project's phase is the one its schema declares, not the change order's status
    assert project.status_attribute is not None
    assert project.status_attribute.enum == ("preconstruction", "construction", "closeout", "closed")
    made = next(t for t in spec.tools if t.name == "createChangeOrder")
    assert (made.entity, made.op) == ("change_order", "create")


def test_a_seed_tool_runs_what_its_structure_declares_behind_its_own_interface() -> None:
    spec, seed = mirrored(*LEDGERLINE)
    tools = {t.name: t for t in spec.tools}
    approve = compound_of(tools["approveInvoice"])
    assert approve is not None and is_compound(spec, tools["approveInvoice"])
    # "Approve a matched invoice for payment": only a matched invoice, and it is approved after
    assert approve["requires"][0]["left"] == "invoice_id->status"
    assert approve["requires"][0]["right"] == ["matched"]
    assert {"kind": "set", "path": "invoice_id->status", "value": {"const": "approved"}} in approve["steps"]
    # "Three-way match an invoice": from the value before matched, to matched
    match = compound_of(tools["matchInvoice"])
    assert match is not None and match["requires"][0]["right"] == ["captured"]
    # a follow-up is its own record, and an invoice on hold still takes one: only a cancelled one is gone
    follow = compound_of(tools["logFollowUp"])
    assert tools["logFollowUp"].entity == "follow_up"
    assert follow is not None and follow["requires"][0]["op"] == "not in"
    assert follow["requires"][0]["right"] == ["cancelled"]
    # the declared interface is the seed's, unchanged
    declared = {t.name: t for t in seed.tools}
    for name in ("approveInvoice", "matchInvoice", "logFollowUp"):
        plain = seed_plain(tools[name])
        assert plain is not None and plain.description == tools[name].description
        assert tools[name].description == declared[name].description
        assert set(tools[name].parameters["properties"]) == set(declared[name].input_schema["properties"])


def test_a_status_the_platform_made_up_rules_nothing() -> None:
    spec, _ = mirrored(*LEDGERLINE)
    approval = spec.entity("approval").status_attribute
    assert approval is not None and approval.source != "seed" and approval.declared is None
    for t in spec.tools:
        found = compound_of(t) or {}
        assert not any(
            "approval" in str(r.get("select", "")) or str(r.get("left", "")).endswith("approval_id->status")
            for r in found.get("requires", [])
        ), t.name


def test_approving_moves_the_invoice_and_a_refusal_changes_nothing() -> None:
    spec, _ = mirrored(*LEDGERLINE)
    s0 = generate_state(spec, seed=0)
    invoice = sorted(s0["invoices"])[0]
    user = sorted(s0["users"])[0]
    s0["invoices"][invoice]["status"] = "captured"
    env = instantiate(spec, s0)
    before = {e.table: copy.deepcopy(getattr(env, e.table)) for e in spec.entities}
    refused = env.approveInvoice(invoice_id=invoice, approver_id=user)
    assert not refused["ok"] and refused["error"]["code"] == "precondition_failed"
    assert "matched" in refused["error"]["message"]
    assert {e.table: getattr(env, e.table) for e in spec.entities} == before
    assert env.matchInvoice(invoice_id=invoice)["ok"]
    assert env.invoices[invoice]["status"] == "matched"
    approved = env.approveInvoice(invoice_id=invoice, approver_id=user, cost_center="CC-410")
    assert approved["ok"], approved
    assert env.invoices[invoice]["status"] == "approved"
    assert approved["data"]["invoice_id"] == invoice


def test_a_tool_that_may_do_part_of_the_work_moves_nothing() -> None:
    spec, _ = mirrored("openapi/metro-utility-payments.yaml")
    pay = next(t for t in spec.tools if t.name == "payBill")
    assert "in part" in pay.description
    found = compound_of(pay) or {}
    assert not any(s.get("path", "").endswith("->status") for s in found.get("steps", []))


@pytest.fixture(scope="module")
def built(sandbox: Sandbox) -> list[BuiltEnv]:
    out = []
    taxonomy = load_taxonomy()
    for name, domain_id in (LEDGERLINE, ASSETRAIL, METRO):
        seed = corpus_seed(name)
        domain = taxonomy.by_id(domain_id or 30057)
        made = build_environment(propose_offline(seed, domain, 1.0, 0.0, [1.0]), [seed], domain, sandbox)
        assert isinstance(made.result, BuiltEnv), made.result
        out.append(made.result)
    return out


def test_mirrored_services_verify_with_their_declared_behaviour(built: list[BuiltEnv]) -> None:
    for b in built:
        assert b.report.passed
        compound = [t for t in b.spec.tools if is_compound(b.spec, t)]
        assert len(compound) >= 3, [t.name for t in compound]
        assert all(t.origin == "seed" for t in compound)
        checked = {c.name: c for c in b.report.tools}
        assert all(checked[t.name].passed for t in compound)
        # nothing but the seed's tools and plain reads: the service is mirrored, not embellished
        assert all(t.origin == "seed" or t.kind == "read" for t in b.spec.tools)


def test_every_declared_behaviour_can_succeed_from_s0(built: list[BuiltEnv]) -> None:
    import random

    from agentomnia.envs.calls import valid_calls

    for b in built:
        for t in b.spec.tools:
            if compound_of(t) is not None:
                assert valid_calls(b.spec, b.s0, t, random.Random(0)), (
                    f"{b.spec.name}: {t.name} has no call s0 admits"
                )


def test_a_transfer_moves_its_asset_to_where_it_sends_it() -> None:
    spec, _ = mirrored(*ASSETRAIL)
    transfer = next(t for t in spec.tools if t.name == "transferAsset")
    found = compound_of(transfer)
    assert found is not None
    assert {"kind": "set", "path": "asset_tag->location_id", "value": {"path": "to_location_id"}} in found[
        "steps"
    ]
    s0 = generate_state(spec, seed=0)
    asset = next(k for k, r in sorted(s0["assets"].items()) if r.get("status") != "disposed")
    there = next(k for k in sorted(s0["locations"]) if k != s0["assets"][asset].get("location_id"))
    env = instantiate(spec, s0)
    args = {"asset_tag": asset, "to_location_id": there}
    required = transfer.parameters.get("required", [])
    for name in required:
        if name not in args:
            args[name] = "2026-12-07" if "date" in name or name.endswith("_on") else "Consolidating the depot"
    moved = env.transferAsset(**args)
    assert moved["ok"], moved
    assert env.assets[asset]["location_id"] == there


def test_a_request_to_approve_is_kept_with_the_invoice_it_moves(
    built: list[BuiltEnv], sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from agentomnia.envs.build import write_bundle
    from agentomnia.tasks.dag import synthesize_dag_tasks
    from agentomnia.tasks.quality import consistency_problems

    ledgerline = built[0]
    folder = write_bundle(ledgerline, tmp_path_factory.mktemp("ledgerline"))
    tasks, _ = synthesize_dag_tasks(folder, sandbox, variant="dag-standard", n=16, seed=3)
    moving = [
        t for t in tasks
        if {c.tool for c in t.reference_calls} & {"approveInvoice", "matchInvoice"}
        and any(d["table"] == "invoices" and d["field"] == "status" for d in t.expected_diff)
    ]  # fmt: skip
    assert moving, [t.query for t in tasks]
    for t in moving:
        # the invoice's move follows from the request; nothing else is unrelated
        assert consistency_problems(t, ledgerline.spec) == []
        # and the request says what the seed's tool does, not that a record is made
        if "approveInvoice" in {c.tool for c in t.reference_calls}:
            assert re.search(r"\bapprove\b[^.?]*\binvoice\b", t.query, re.IGNORECASE), t.query
            assert not re.search(r"new approval with|an approval for", t.query, re.IGNORECASE), t.query


def test_a_payment_run_schedules_the_approved_invoices_it_lists_and_no_other() -> None:
    spec, _ = mirrored(*LEDGERLINE)
    run = next(t for t in spec.tools if t.name == "createPaymentRun")
    found = compound_of(run)
    # "Schedule a payment run for approved invoices": the description's verb and adjective
    assert found is not None and found["requires"][0]["kind"] == "none"
    assert found["steps"] == [
        {
            "kind": "each",
            "select": {"entity": "invoice", "where": {"invoice_id": {"path": "invoice_ids"}}},
            "fields": {"status": {"const": "scheduled"}},
        }
    ]
    s0 = generate_state(spec, seed=0)
    first, second, third = sorted(s0["invoices"])[:3]
    for key, status in ((first, "approved"), (second, "approved"), (third, "captured")):
        s0["invoices"][key]["status"] = status
    env = instantiate(spec, s0)
    refused = env.createPaymentRun(pay_on="2026-12-15", invoice_ids=[first, third])
    assert not refused["ok"] and "approved" in refused["error"]["message"]
    assert env.invoices[first]["status"] == "approved"
    made = env.createPaymentRun(pay_on="2026-12-15", invoice_ids=[first, second])
    assert made["ok"], made
    assert [env.invoices[k]["status"] for k in (first, second, third)] == [
        "scheduled",
        "scheduled",
        "captured",
    ]


def test_a_description_that_says_where_listed_records_move_is_taken_at_its_word() -> None:
    seed = corpus_seed("mcp/vuln-tracker.json")
    ticket = next(t for t in seed.tools if t.name == "create_remediation_ticket")
    assert "the findings move to in_remediation" in ticket.description
    taxonomy = load_taxonomy()
    domain = taxonomy.by_id(30057)
    spec, space = build_state_space(propose_offline(seed, domain, 1.0, 0.0, [1.0]), [seed], domain)
    tools = synthesize_toolset(spec, [seed], space.tool_entities, kb_used=space.kb_used).tools
    made = next(t for t in tools if t.name == "create_remediation_ticket")
    found = compound_of(made)
    assert found is not None
    assert found["steps"][0]["select"]["entity"] == "finding"
    assert found["steps"][0]["fields"] == {"status": {"const": "in_remediation"}}


def tasks_calling(
    built: BuiltEnv, tool_name: str, sandbox: Sandbox, tmp: pytest.TempPathFactory, *, n: int, seed: int
) -> list[Any]:
    """DAG tasks synthesized on a built environment whose reference calls `tool_name` (at least one)."""
    from agentomnia.envs.build import write_bundle
    from agentomnia.tasks.dag import synthesize_dag_tasks

    folder = write_bundle(built, tmp.mktemp(tool_name))
    tasks, _ = synthesize_dag_tasks(folder, sandbox, variant="dag-standard", n=n, seed=seed)
    calling = [t for t in tasks if tool_name in {c.tool for c in t.reference_calls}]
    assert calling, [t.query for t in tasks]
    return calling


def test_a_transfer_is_asked_for_as_a_transfer(
    built: list[BuiltEnv], sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory
) -> None:
    for t in tasks_calling(built[1], "transferAsset", sandbox, tmp_path_factory, n=8, seed=5):
        assert re.search(
            r"\btransfer (asset|the|that)\b[^.?]*\bto (location LOC-\d+|[^.?]*\blocation\b)",
            t.query,
            re.IGNORECASE,
        ), t.query
        assert "Register a new transfer" not in t.query


@pytest.mark.parametrize(
    ("method", "path", "singleton"),
    [
        ("PUT", "/accounts/{account_number}/autopay", True),
        ("DELETE", "/accounts/{account_number}/autopay", True),
        ("DELETE", "/assets/{asset_tag}/assignment", True),
        ("PUT", "/profiles/{profile_id}/parental-controls", True),  # one record of settings
        ("PUT", "/playlists/{playlist_id}/tracks", False),  # a sub-collection replaced
        ("DELETE", "/playlists/{playlist_id}/tracks", False),
        ("POST", "/accounts/{account_number}/autopay", False),  # a create is a create
        ("PUT", "/accounts/{account_number}", False),  # the parent itself
    ],
)  # fmt: skip
def test_a_record_a_parent_holds_at_a_path_of_its_own_is_read_as_one(
    method: str, path: str, singleton: bool
) -> None:
    found = http_resource(tool(method, path))
    assert found is not None and found.singleton is singleton


def test_turning_autopay_off_and_on_keeps_one_autopay_per_account() -> None:
    """`DELETE /accounts/{n}/autopay` ends the account's autopay (it had made a new one); `PUT` writes
    over the one the account holds, or makes it; the account's `autopay_enabled` follows both."""
    spec, _ = mirrored(*METRO)
    cancel, put = spec.tool("cancelAutopay"), spec.tool("setAutopay")
    assert (cancel.op, cancel.binding["value"], put.op) == ("transition", "cancelled", "create")
    s0 = generate_state(spec, seed=0)
    live: dict[str, list[str]] = {}
    for key, autopay in s0["autopays"].items():
        if autopay["status"] == "active":
            live.setdefault(autopay["account_number"], []).append(key)
    assert all(len(keys) == 1 for keys in live.values()), live
    for number, account in s0["accounts"].items():
        assert account["autopay_enabled"] == (number in live)
        assert account["status"] != "closed" or number not in live  # a closed account pays nothing
    account = next(n for n in sorted(live) if s0["accounts"][n]["status"] != "closed")
    env = instantiate(spec, copy.deepcopy(s0))
    ended = env.cancelAutopay(account_number=account)
    assert ended["ok"] and ended["data"]["autopay_id"] == live[account][0], ended
    assert env.autopays[live[account][0]]["status"] == "cancelled"
    assert env.accounts[account]["autopay_enabled"] is False
    again = env.cancelAutopay(account_number=account)
    assert not again["ok"] and again["error"]["code"] == "not_found"
    count = len(env.autopays)
    method = {"kind": "card", "token": "tok_visa_4242"}
    made = env.setAutopay(account_number=account, method=method, pay_on="due_date")
    assert made["ok"] and made["data"]["status"] == "active", made
    assert len(env.autopays) == count + 1 and env.accounts[account]["autopay_enabled"] is True
    changed = env.setAutopay(account_number=account, method=method, pay_on="fixed_day", fixed_day=5)
    assert changed["ok"] and changed["data"]["autopay_id"] == made["data"]["autopay_id"]
    assert len(env.autopays) == count + 1 and env.autopays[made["data"]["autopay_id"]]["fixed_day"] == 5


def test_returning_an_asset_ends_its_assignment_and_puts_it_back_in_stock() -> None:
    spec, _ = mirrored(*ASSETRAIL)
    returned = spec.tool("returnAsset")
    assert (returned.op, returned.binding["value"]) == ("transition", "returned")
    s0 = generate_state(spec, seed=0)
    live = {r["asset_tag"] for r in s0["assignments"].values() if r["status"] == "active"}
    for tag, asset in s0["assets"].items():  # an asset is assigned while, and only while, it is held
        assert asset["status"] != "assigned" or tag in live, (tag, asset["status"])
        assert asset["status"] != "in_stock" or tag not in live, (tag, asset["status"])
    assignment = next(
        r for _, r in sorted(s0["assignments"].items())
        if r["status"] == "active" and s0["assets"][r["asset_tag"]]["status"] == "assigned"
    )  # fmt: skip
    tag = assignment["asset_tag"]
    env = instantiate(spec, copy.deepcopy(s0))
    before = len(env.assignments)
    done = env.returnAsset(asset_tag=tag, condition="worn")
    assert done["ok"], done
    assert len(env.assignments) == before  # no assignment is made by a return
    assert (done["data"]["status"], done["data"]["condition"]) == ("returned", "worn")
    assert env.assets[tag]["status"] == "in_stock"


def test_ending_what_a_parent_holds_is_asked_for_of_the_parent(
    built: list[BuiltEnv], sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A request says what the seed's tool does, to the record it names: "Turn off automatic payment for
    account 8260826998", "Record the return of asset FA-599867"; never "the autopay of account ..." as a
    record to mark cancelled. What the request then asks about the account is said as that account."""
    for b, tool_name, said in (
        (built[2], "cancelAutopay", r"Turn off automatic payment for account \d{10}\b"),
        (built[1], "returnAsset", r"Record the return of asset FA-\d+\b"),
    ):
        for t in tasks_calling(b, tool_name, sandbox, tmp_path_factory, n=40, seed=3):
            assert re.search(said, t.query), t.query
            # the account, said as the request said it
            assert "that autopay's account" not in t.query, t.query
            moved = {(d["table"], d["field"]) for d in t.expected_diff}
            assert ("autopays", "status") in moved or ("assignments", "status") in moved, t.expected_diff


def test_a_command_verb_moves_a_lifecycle_to_its_participle() -> None:
    from agentomnia.envs.spec import command_targets

    invoice = ["captured", "matched", "on_hold", "approved", "scheduled", "paid", "cancelled"]
    # an undo goes back to the open value before the move it undoes
    assert command_targets(["hold", "release"], invoice) == {"hold": "on_hold", "release": "matched"}
    assert command_targets(["approve", "deny"], ["pending", "approved", "denied"]) == {
        "approve": "approved",
        "deny": "denied",
    }
    report = ["draft", "submitted", "approved", "rejected", "returned"]
    assert command_targets(["return_for_changes"], report) == {"return_for_changes": "returned"}
    assert command_targets(["shuffle"], report) == {}


def test_holding_and_releasing_an_invoice_moves_it_as_the_action_says() -> None:
    """`setInvoiceHold(action=hold|release)` had put every invoice on hold, a release too."""
    spec, _ = mirrored(*LEDGERLINE)
    hold = spec.tool("setInvoiceHold")
    found = compound_of(hold)
    assert hold.op == "update" and found is not None
    assert found["command"]["targets"] == {"hold": "on_hold", "release": "matched"}
    s0 = generate_state(spec, seed=0)
    first, second = sorted(s0["invoices"])[:2]
    s0["invoices"][first]["status"], s0["invoices"][second]["status"] = "captured", "on_hold"
    env = instantiate(spec, s0)
    refused = env.setInvoiceHold(invoice_id=first, action="release")
    assert not refused["ok"] and refused["error"]["code"] == "precondition_failed", refused
    assert env.invoices[first]["status"] == "captured"
    held = env.setInvoiceHold(invoice_id=first, action="hold", reason="missing_receipt")
    assert held["ok"] and env.invoices[first]["status"] == "on_hold", held
    again = env.setInvoiceHold(invoice_id=second, action="hold")
    assert not again["ok"]  # already on hold
    released = env.setInvoiceHold(invoice_id=second, action="release")
    assert released["ok"] and env.invoices[second]["status"] == "matched", released


def test_a_command_is_asked_for_as_the_move_it_makes(
    built: list[BuiltEnv], sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory
) -> None:
    for t in tasks_calling(built[0], "setInvoiceHold", sandbox, tmp_path_factory, n=40, seed=3):
        assert re.search(r"\b(Put [^.]*\bon hold|Release)\b", t.query), t.query
        assert "its action" not in t.query and "action to" not in t.query, t.query
        moved = [d for d in t.expected_diff if d["table"] == "invoices" and d["field"] == "status"]
        assert moved and moved[0]["after"] in ("on_hold", "matched"), t.expected_diff


def test_a_lock_locks_and_unlocks_as_the_action_says() -> None:
    """`lock_door(action=lock|unlock)` had locked the door either way, through a made-up status
    ('active' or 'locked') beside the `locked` flag the seed declares."""
    spec, _ = mirrored("mcp/smart-home-hub.json")
    device = spec.entity("device")
    assert device.attribute("status") is None  # the seed's own `locked` is the lock's state
    door = spec.tool("lock_door")
    found = compound_of(door)
    assert door.op == "update" and found is not None
    assert set(found["command"]["targets"]) == {"lock", "unlock"}
    s0 = generate_state(spec, seed=0)
    key = sorted(s0["devices"])[0]
    s0["devices"][key]["locked"] = True
    env = instantiate(spec, s0)
    opened = env.lock_door(device_id=key, action="unlock", pin_code="4821")
    assert opened["ok"] and env.devices[key]["locked"] is False, opened
    shut = env.lock_door(device_id=key, action="lock")
    assert shut["ok"] and env.devices[key]["locked"] is True, shut
