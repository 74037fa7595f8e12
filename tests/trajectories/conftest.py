"""Fixtures: the parcel-claims environment built once, and hand-written tasks grounded in its s0.

Each task is written the way the task synthesizers write them: a public query, reference calls
whose arguments come from s0 (with provenance), a rubric of deterministic checks, and for multi-turn
tasks a persona. Targets (which claim, which amounts) are found by probing a sandbox session, so
the tasks stay valid if the fixture environment's generated state changes.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentomnia.envs.build import BuiltEnv, build_environment, write_bundle
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.seeds.inference import propose_offline
from agentomnia.seeds.parsers import parse_mcp
from agentomnia.tasks.models import Check, Persona, ReferenceCall, RubricItem, Task
from agentomnia.taxonomy import Coordinate, load_taxonomy

ENV_CONFTEST = Path(__file__).resolve().parents[1] / "envs" / "conftest.py"


def _parcel_tools() -> dict[str, Any]:
    spec = importlib.util.spec_from_file_location("parcel_env_fixture", ENV_CONFTEST)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.PARCEL_TOOLS)


class Parcel:
    """The built environment, its bundle on disk, and a sandbox to run it in."""

    def __init__(self, built: BuiltEnv, folder: Path, sandbox: Sandbox) -> None:
        self.built = built
        self.folder = folder
        self.bundle = Bundle.load(folder)
        self.sandbox = sandbox
        self.s0: dict[str, Any] = dict(built.s0)
        self.env_id = built.env_id

    def call(self, tool: str, args: dict[str, Any], state: dict[str, Any] | None = None) -> Any:
        session = self.sandbox.open(self.bundle, state or self.s0)
        try:
            return session.call(tool, args)
        finally:
            session.close()

    def coordinate(self, capabilities: list[str], atoms: list[str]) -> Coordinate:
        return Coordinate.for_domain(20096, capabilities, atoms, primary=atoms[0])


@pytest.fixture(scope="session")
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox(workers=1, idle_timeout_s=0)
    yield box
    box.close()


@pytest.fixture(scope="session")
def parcel(sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Parcel:
    seed = parse_mcp(_parcel_tools(), source="test://parcel-claims.json", name="parcel-claims")
    domain = load_taxonomy().by_id(20096)
    candidate = propose_offline(seed, domain, 0.55, 0.3, [0.55, 0.5, 0.4])
    built = build_environment(candidate, [seed], domain, sandbox)
    assert isinstance(built, BuiltEnv), built
    folder = write_bundle(built, tmp_path_factory.mktemp("bundles") / built.env_id)
    return Parcel(built, folder, sandbox)


def _claims(parcel: Parcel) -> list[dict[str, Any]]:
    return [parcel.s0["claims"][k] for k in sorted(parcel.s0["claims"])]


def approve_task(parcel: Parcel) -> Task:
    claim = next(c for c in _claims(parcel) if parcel.call("approve_claim", {"claim_id": c["claim_id"]}).ok)
    cid, sid = claim["claim_id"], claim["shipment_id"]
    return Task(
        env_id=parcel.env_id, kind="dag_standard",
        coordinate=parcel.coordinate(["tool_use", "state_management"], ["tool_parameter_grounding"]),
        init_config=parcel.s0,
        query=f"A {claim['reason']} claim was filed on {claim['filed_on']} for shipment {sid}. Please approve that claim.",
        reference_calls=(ReferenceCall(tool="approve_claim", args={"claim_id": cid}, sources={"claim_id": f"s0:claims.{cid}.claim_id"}),),
        expected_diff=({"table": "claims", "key": cid, "field": "status", "before": claim["status"], "after": "approved"},),
        rubric=(
            RubricItem(id="T1", text=f"Claim {cid} ends approved.", scope="task", weight=2,
                       check=Check(kind="field_equals", table="claims", key=cid, field="status", value="approved")),
            RubricItem(id="G1", text="The claim amount is left as it was.", scope="general",
                       check=Check(kind="field_unchanged", table="claims", key=cid, field="amount")),
        ),
        metadata={"primary_lever": "id_lookup_required"},
    )  # fmt: skip


def _busiest_shipment(parcel: Parcel) -> str:
    counts: dict[str, int] = {}
    for c in _claims(parcel):
        counts[c["shipment_id"]] = counts.get(c["shipment_id"], 0) + 1
    return max(sorted(counts), key=lambda s: counts[s])


def count_task(parcel: Parcel) -> Task:
    sid = _busiest_shipment(parcel)
    result = parcel.call("list_open_claims", {"shipment_id": sid})
    items = result.data["items"]
    total = round(sum(i["amount"] for i in items), 2)
    return Task(
        env_id=parcel.env_id, kind="dag_challenge",
        coordinate=parcel.coordinate(["data_analysis", "information_gathering"], ["structured_information"]),
        init_config=parcel.s0,
        query=f"How many claims are on record for shipment {sid}, and what do their amounts add up to? "
              "Give me the claim count and the total amount.",
        reference_calls=(ReferenceCall(tool="list_open_claims", args={"shipment_id": sid}, sources={"shipment_id": "query"}),),
        expected_answer={"claim_count": len(items), "total_amount": total},
        rubric=(
            RubricItem(id="T1", text="Reports how many claims the shipment has.", scope="task",
                       check=Check(kind="answer_equals", field="claim_count", value=len(items))),
            RubricItem(id="T2", text="Reports the total claimed amount.", scope="task",
                       check=Check(kind="answer_equals", field="total_amount", value=total, tolerance=0.01)),
            RubricItem(id="G1", text="Deletes no claim while answering.", scope="general",
                       check=Check(kind="not_called", tool="delete_claim")),
        ),
    )  # fmt: skip


def program_task(parcel: Parcel) -> Task:
    sid = _busiest_shipment(parcel)
    ids = sorted(i["claim_id"] for i in parcel.call("list_open_claims", {"shipment_id": sid}).data["items"])
    program = (
        "def solve(call):\n"
        f"    result = call('list_open_claims', shipment_id={sid!r})\n"
        "    return {'claim_ids': sorted(item['claim_id'] for item in result['data']['items'])}\n"
    )
    return Task(
        env_id=parcel.env_id, kind="program",
        coordinate=parcel.coordinate(["code_programmatic", "information_gathering"], ["structured_information"]),
        init_config=parcel.s0,
        query=f"List the ids of every claim filed against shipment {sid}, without changing anything.",
        reference_program=program,
        expected_answer={"claim_ids": ids},
        rubric=(
            RubricItem(id="T1", text="Returns exactly the shipment's claim ids.", scope="task",
                       check=Check(kind="answer_equals", field="claim_ids", value=ids)),
            RubricItem(id="G1", text="Leaves every claim as it was.", scope="general", check=Check(kind="verifier")),
        ),
        verifier_code="def check_func(final_state):\n    return final_state['claims'] == initial_state['claims']\n",
        candidate_tools=("list_open_claims", "get_claim"),
    )  # fmt: skip


def assign_task(parcel: Parcel) -> Task:
    adjusters = [parcel.s0["adjusters"][k] for k in sorted(parcel.s0["adjusters"])]
    claim = next(c for c in _claims(parcel) if c.get("adjuster_id") != adjusters[0]["adjuster_id"])
    cid, adj = claim["claim_id"], adjusters[0]
    return Task(
        env_id=parcel.env_id, kind="dag_standard",
        coordinate=parcel.coordinate(["interactive_collaboration", "tool_use"], ["progressive_disclosure"]),
        init_config=parcel.s0,
        query=f"Please put adjuster {adj['name']} on my claim.",
        reference_calls=(ReferenceCall(tool="assign_adjuster", args={"claim_id": cid, "adjuster_id": adj["adjuster_id"]},
                                       sources={"claim_id": "query", "adjuster_id": f"s0:adjusters.{adj['adjuster_id']}.adjuster_id"}),),
        rubric=(
            RubricItem(id="T1", text=f"Claim {cid} is handled by {adj['name']}.", scope="task", weight=2,
                       check=Check(kind="field_equals", table="claims", key=cid, field="adjuster_id", value=adj["adjuster_id"])),
        ),
        interaction="multi",
        persona=Persona(name="busy shipper", granularity="terse", withheld={"claim_id": cid}),
    )  # fmt: skip


def reject_task(parcel: Parcel) -> Task:
    claim = next(
        c for c in reversed(_claims(parcel)) if parcel.call("reject_claim", {"claim_id": c["claim_id"]}).ok
    )
    cid, sid = claim["claim_id"], claim["shipment_id"]
    wrong = next(s for s in sorted(parcel.s0["shipments"]) if s != sid)
    return Task(
        env_id=parcel.env_id, kind="solver_anchored",
        coordinate=parcel.coordinate(["interactive_collaboration", "reliability_safety"], ["multi_source_inconsistency"]),
        init_config=parcel.s0,
        query=f"Please reject my {claim['reason']} claim filed on {claim['filed_on']}; it was opened by mistake.",
        reference_calls=(ReferenceCall(tool="reject_claim", args={"claim_id": cid}, sources={"claim_id": f"s0:claims.{cid}.claim_id"}),),
        rubric=(
            RubricItem(id="T1", text=f"Claim {cid} ends rejected.", scope="task", weight=2,
                       check=Check(kind="field_equals", table="claims", key=cid, field="status", value="rejected")),
            RubricItem(id="G1", text="Approves no claim.", scope="general", check=Check(kind="not_called", tool="approve_claim")),
        ),
        interaction="multi",
        persona=Persona(name="confused shipper", withheld={"shipment_id": sid}, misleading={"shipment_id": wrong}),
    )  # fmt: skip


@pytest.fixture(scope="session")
def tasks(parcel: Parcel) -> list[Task]:
    return [
        approve_task(parcel),
        count_task(parcel),
        program_task(parcel),
        assign_task(parcel),
        reject_task(parcel),
    ]


@pytest.fixture(scope="session")
def guided(tasks: list[Task], parcel: Parcel):  # type: ignore[no-untyped-def]
    from agentomnia.trajectories import generate_trajectories

    return generate_trajectories(tasks, {parcel.env_id: parcel.bundle}, parcel.sandbox, guidance=True)


@pytest.fixture(scope="session")
def unguided(tasks: list[Task], parcel: Parcel):  # type: ignore[no-untyped-def]
    from agentomnia.trajectories import generate_trajectories

    return generate_trajectories(tasks, {parcel.env_id: parcel.bundle}, parcel.sandbox, guidance=False)
