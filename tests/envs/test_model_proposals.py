"""What the model adds to an environment in llm mode (state-space attributes, operations, s0 values),
each answer from a real chat-completions server on 127.0.0.1: kept where the code's checks pass, refused
item by item with why, and costing nothing else when it is bad."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentomnia.envs.build import state_stage, toolset_stage
from agentomnia.envs.proposals import (
    ATTRIBUTE_PURPOSE,
    OPERATION_PURPOSE,
    RECORD_PURPOSE,
    augment_state_space,
    realistic_records,
    rewritten_entities,
)
from agentomnia.envs.spec import EnvSpec
from agentomnia.envs.state import generate_state, state_violations
from agentomnia.envs.state_space import StateSpaceReport
from agentomnia.envs.toolset import ToolsetConfig
from agentomnia.rejection import Rejection
from tests.fixtures.chat_server import ChatServer, bad_answers, client, serving
from tests.fixtures.domains import PARCEL

BAD = bad_answers('{"attributes": [', '{"attributes": 7}')


@pytest.fixture
def server() -> Iterator[ChatServer]:
    yield from serving()


@pytest.fixture(scope="module")
def parcel_space() -> tuple[EnvSpec, StateSpaceReport]:
    state = state_stage(PARCEL.candidate(), [PARCEL.seed()], PARCEL.domain())
    assert not isinstance(state, Rejection), state
    return state


def _answer(**body: Any) -> tuple[int, str]:
    return 200, json.dumps(body)


def test_the_model_adds_attributes_the_checks_allow(
    server: ChatServer, tmp_path: Path, parcel_space: tuple[EnvSpec, StateSpaceReport]
) -> None:
    server.script = [
        _answer(
            attributes=[
                {"entity": "carrier", "name": "dot_number", "type": "str", "description": "US DOT registration"},
                {"entity": "claim", "name": "incident_date", "type": "date", "description": "when it happened"},
                {"entity": "claim", "name": "inspection_required", "type": "bool", "description": "a surveyor must see it"},
                {"entity": "claim", "name": "Damage Photos", "type": "str", "description": "x"},
                {"entity": "claim", "name": "note", "type": "text", "description": "already there"},
                {"entity": "claim", "name": "warehouse_id", "type": "str", "description": "a reference"},
                {"entity": "claim", "name": "deductible", "type": "money", "description": "what the shipper pays"},
            ]
        ),
        _answer(attributes=[{"entity": "shipper", "name": "industry", "type": "str", "description": "its trade"}]),
    ]  # fmt: skip
    llm = client(server, tmp_path)
    before, _ = parcel_space
    spec, added, refused = augment_state_space(llm, before, limit=8)
    assert added == ["carrier.dot_number", "claim.incident_date", "claim.inspection_required"]
    # two per entity at most; a name that is no identifier, one the entity has, and a reference are refused
    assert set(refused) == {"claim.Damage Photos", "claim.note", "claim.warehouse_id", "claim.deductible"}
    assert "snake_case" in refused["claim.Damage Photos"]
    assert "already has note" in refused["claim.note"]
    assert "reference" in refused["claim.warehouse_id"]
    assert "2 attributes" in refused["claim.deductible"]
    new = spec.entity("carrier").attribute("dot_number")
    assert new is not None and new.source == "model" and new.nullable and spec.proposer == "llm"
    # what the seed and the domain declared is untouched: every attribute, unchanged, in order
    for old in before.entities:
        assert spec.entity(old.name).attributes[: len(old.attributes)] == old.attributes
    # the new attributes get values in s0 like any other
    s0 = generate_state(spec, seed=0)
    assert not state_violations(spec, s0)
    assert any(r.get("incident_date") for r in s0["claims"].values())
    counts = llm.ledger.snapshot()[ATTRIBUTE_PURPOSE]
    assert (counts.valid, counts.accepted, counts.rejected, counts.fallbacks) == (1, 3, 4, 0)
    # the state-space stage asks the same question and names what it added in its report
    staged = state_stage(PARCEL.candidate(), [PARCEL.seed()], PARCEL.domain(), llm=llm)
    assert not isinstance(staged, Rejection)
    assert staged[1].model_attributes == ["shipper.industry"] and not staged[1].model_refused


def test_the_model_proposes_operations_and_replaces_the_refused(
    server: ChatServer, tmp_path: Path, parcel_space: tuple[EnvSpec, StateSpaceReport]
) -> None:
    spec, space = parcel_space
    server.script = [
        _answer(
            operations=[
                {
                    "name": "reopen_claim",
                    "entity": "claim",
                    "kind": "write",
                    "description": "Reopen a claim that was closed so the adjuster can review new evidence.",
                },
                {"name": "Get Claim", "entity": "claim", "kind": "read", "description": "Look up one claim."},
                {
                    "name": "cancellation",
                    "entity": "claim",
                    "kind": "read",
                    "description": "Claims that were cancelled by the shipper.",
                },
                {
                    "name": "get_claim_record",
                    "entity": "claim",
                    "kind": "read",
                    "description": "Get one claim by its id with all of its fields.",
                },
            ]
        ),  # fmt: skip
        _answer(
            operations=[
                {
                    "name": "list_customs_entries_by_country",
                    "entity": "customs_entry",
                    "kind": "read",
                    "description": "List the customs entries filed for goods from one country of origin.",
                },
            ]
        ),  # fmt: skip
    ]
    llm = client(server, tmp_path)
    roomy = ToolsetConfig(max_tools=80)  # the parcel toolset fills the default bound of 56 by itself
    offline = toolset_stage(spec, [PARCEL.seed()], space, roomy)
    tooled = toolset_stage(spec, [PARCEL.seed()], space, roomy, llm=llm)
    assert not isinstance(offline, Rejection) and not isinstance(tooled, Rejection)
    made, table = tooled
    rows = {n.candidate: n for n in table if n.origin == "model"}
    assert rows["reopen_claim"].fate == "kept" and made.tool("reopen_claim").origin == "model"
    assert rows["Get Claim"].fate == "removed" and "snake_case" in rows["Get Claim"].reason
    assert rows["cancellation"].fate == "removed" and "not a verb" in rows["cancellation"].reason
    # the same operation as a tool the toolset has: merged into it, so refused, and replaced
    assert rows["get_claim_record"].fate in ("merged", "removed"), rows["get_claim_record"]
    assert rows["list_customs_entries_by_country"].fate == "kept"
    # the replacements were asked with the validator's reasons, after the first answer
    critique = server.requests[1]["messages"]
    assert [m["role"] for m in critique] == ["user", "assistant", "user"]
    assert "Get Claim: not a snake_case tool name" in critique[-1]["content"]
    # every seed tool stays, as declared
    seed_tools = {t.name: t for t in offline[0].tools if t.origin == "seed"}
    assert {t.name: t for t in made.tools if t.origin == "seed"} == seed_tools
    # asked under their own name, so the report shows the regeneration; the verdicts cover both answers
    assert server.requests[1]["response_format"]["json_schema"]["name"] == "tool_refinement"
    ledger = llm.ledger.snapshot()
    counts = ledger[OPERATION_PURPOSE]
    assert (counts.calls, counts.accepted, counts.rejected) == (1, 2, 3)
    assert ledger["tool_refinement"].calls == 1


def test_the_model_writes_s0_values_that_fit(
    server: ChatServer, tmp_path: Path, parcel_space: tuple[EnvSpec, StateSpaceReport]
) -> None:
    spec, _ = parcel_space
    s0 = generate_state(spec, seed=0)
    claims = sorted(s0["claims"])
    answer = _answer(
        records=[
            {"id": claims[0], "values": {"note": "Pallet wrap torn on arrival; two cartons crushed at the corner."}},
            {"id": claims[1], "values": {"note": "Claim 2 note"}},
            {"id": claims[2], "values": {"note": "{note}"}},
        ]
    )  # fmt: skip
    asked = [e.name for e in rewritten_entities(spec, s0, len(spec.entities))]
    assert "claim" in asked and "adjuster" in asked  # entities with free text; a rate quote's lanes too
    # the other entities' answers name no record of theirs: each is refused whole and costs only itself
    server.script = [answer if name == "claim" else _answer(records=[]) for name in asked]
    llm = client(server, tmp_path)
    state, notes = realistic_records(llm, spec, s0, entities=len(asked))
    assert state["claims"][claims[0]]["note"].startswith("Pallet wrap torn")
    assert state["claims"][claims[1]]["note"] == s0["claims"][claims[1]]["note"]  # a placeholder is refused
    assert state["claims"][claims[2]]["note"] == s0["claims"][claims[2]]["note"]  # so is a template
    assert not state_violations(spec, state)
    assert f"model wrote claim {claims[0]}.note" in notes
    assert any("placeholder" in n for n in notes) and any("template" in n for n in notes)
    assert s0["claims"][claims[0]]["note"] != state["claims"][claims[0]]["note"]  # s0 itself is not mutated
    prompt = server.requests[asked.index("claim")]["messages"][0]["content"]
    shown = json.loads(prompt.split("\n")[-3])
    assert [r["id"] for r in shown] == claims[:3]  # the model saw the records it rewrites
    counts = llm.ledger.snapshot()[RECORD_PURPOSE]
    assert (counts.calls, counts.accepted, counts.rejected, counts.fallbacks) == (
        len(asked),
        1,
        2,
        len(asked) - 1,
    )


@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_bad_answer_leaves_the_environment_as_offline(
    kind: str, server: ChatServer, tmp_path: Path, parcel_space: tuple[EnvSpec, StateSpaceReport]
) -> None:
    spec, space = parcel_space
    server.script, server.stall_s = list(BAD[kind]), 1.5
    llm = client(server, tmp_path, max_retries=1, timeout_s=0.5)
    grown, added, refused = augment_state_space(llm, spec)
    assert grown == spec and not added and not refused
    s0 = generate_state(spec, seed=0)
    assert realistic_records(llm, spec, s0) == (s0, [])
    offline = toolset_stage(spec, [PARCEL.seed()], space, ToolsetConfig())
    assert toolset_stage(spec, [PARCEL.seed()], space, ToolsetConfig(), llm=llm) == offline
    counts = llm.ledger.snapshot()
    for purpose in (ATTRIBUTE_PURPOSE, OPERATION_PURPOSE, RECORD_PURPOSE):
        c = counts[purpose]
        assert c.valid == 0 and c.accepted == 0 and c.fallbacks >= 1, (purpose, c)


def test_env_build_asks_the_configured_model(
    server: ChatServer,
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from agentomnia.cli import main

    # the command asks the model at every environment stage; it refuses every time, and the environment
    # is built as offline
    server.script = list(BAD["refused"])
    for name, value in {"AGENTOMNIA_MODE": "llm", "AGENTOMNIA_LLM_BASE_URL": server.url,
                        "AGENTOMNIA_LLM_MODEL": "tiny", "AGENTOMNIA_LLM_MAX_RETRIES": "0"}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    seed = tmp_path / "parcel.json"
    seed.write_text(json.dumps(PARCEL.tools))
    out = tmp_path / "bundle"
    code = main(["env", "build", "--seed", str(seed), "--domain", "20096", "--out", str(out), "--json"])
    assert code == 0, capsys.readouterr().err
    asked = {r["response_format"]["json_schema"]["name"] for r in server.requests}
    assert {ATTRIBUTE_PURPOSE, OPERATION_PURPOSE, RECORD_PURPOSE} <= asked
    verification = json.loads((out / "verification.json").read_text())
    assert verification["verified"] and verification["model_values"] == []
