"""The evaluation policies on the parcel-claims environment: spec parsing, the noop and reference
guards, what the heuristic baseline can and cannot solve (and why), Qwen3 tool-call parsing, a
local checkpoint end to end, and the OpenAI-compatible policy against a fake client."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from agentomnia.config import LLMSettings
from agentomnia.llm.protocol import LLMResponse, Usage
from agentomnia.omniabench.heuristic import (
    Observation,
    field_names,
    parse_ref,
    parse_request,
    resolve_field,
    unmask,
)
from agentomnia.omniabench.hf import parse_tool_calls, to_assistant_message
from agentomnia.omniabench.policies import SPEC_FORMS, PolicyFactory, make_policy, parse_spec
from agentomnia.sandbox.errors import INVALID_ARGUMENTS
from agentomnia.tasks.grading import Outcome, Score, grade
from agentomnia.tasks.models import Check, ReferenceCall, RubricItem, Task
from agentomnia.trajectories.messages import parse_arguments
from agentomnia.trajectories.models import RolloutResult
from agentomnia.trajectories.quality import sandbox_verifier
from agentomnia.trajectories.rollout import rollout
from agentomnia.trajectories.users import make_user
from tests.trajectories.conftest import (
    Parcel,
    approve_task,
    assign_task,
    count_task,
    program_task,
    reject_task,
)

# ------------------------------------------------------------------ tasks on the shared parcel fixture


def _claims(parcel: Parcel) -> list[dict[str, Any]]:
    return [parcel.s0["claims"][k] for k in sorted(parcel.s0["claims"])]


def _approvable(parcel: Parcel, min_amount: float = 0.0) -> dict[str, Any]:
    return next(
        c
        for c in reversed(_claims(parcel))
        if c["amount"] >= min_amount and parcel.call("approve_claim", {"claim_id": c["claim_id"]}).ok
    )


def explicit_approve_task(parcel: Parcel) -> Task:
    """Easy: one write, the id spelled out."""
    cid = _approvable(parcel)["claim_id"]
    return Task(
        env_id=parcel.env_id, kind="dag_standard", init_config=parcel.s0,
        coordinate=parcel.coordinate(["tool_use"], ["tool_parameter_grounding"]),
        query=f"Please approve claim {cid}.",
        reference_calls=(ReferenceCall(tool="approve_claim", args={"claim_id": cid}, sources={"claim_id": "query"}),),
        rubric=(RubricItem(id="T1", text=f"Claim {cid} ends approved.", scope="task",
                           check=Check(kind="field_equals", table="claims", key=cid, field="status", value="approved")),),
    )  # fmt: skip


def amount_lookup_task(parcel: Parcel) -> Task:
    """Easy: one lookup, the id spelled out, the answer field named."""
    claim = _claims(parcel)[3]
    cid = claim["claim_id"]
    return Task(
        env_id=parcel.env_id, kind="dag_challenge", init_config=parcel.s0,
        coordinate=parcel.coordinate(["information_gathering"], ["structured_information"]),
        query=f"Get claim {cid} and tell me its amount.",
        reference_calls=(ReferenceCall(tool="get_claim", args={"claim_id": cid}, sources={"claim_id": "query"}),),
        expected_answer={"amount": claim["amount"]},
        rubric=(RubricItem(id="T1", text="Reports the claim amount.", scope="task",
                           check=Check(kind="answer_equals", field="amount", value=claim["amount"], tolerance=0.01)),),
    )  # fmt: skip


def constraint_task(parcel: Parcel) -> Task:
    """Hard: the write is conditional, and the condition does not hold (the amount must still be
    reported, so doing nothing does not pass)."""
    claim = _approvable(parcel, min_amount=20.0)
    cid, limit = claim["claim_id"], int(claim["amount"] // 2)
    return Task(
        env_id=parcel.env_id, kind="dag_challenge", init_config=parcel.s0,
        coordinate=parcel.coordinate(["reliability_safety"], ["risk_clarification"]),
        query=f"Approve claim {cid}, but only if its amount is below {limit}. Either way, tell me the amount.",
        reference_calls=(ReferenceCall(tool="get_claim", args={"claim_id": cid}, sources={"claim_id": "query"}),),
        expected_answer={"amount": claim["amount"]},
        rubric=(
            RubricItem(id="T1", text="Reports the claim amount.", scope="task",
                       check=Check(kind="answer_equals", field="amount", value=claim["amount"], tolerance=0.01)),
            RubricItem(id="G1", text=f"Claim {cid} is not approved: its amount is over {limit}.", scope="general",
                       weight=2, check=Check(kind="field_unchanged", table="claims", key=cid, field="status")),
        ),
    )  # fmt: skip


def chain_task(parcel: Parcel) -> Task:
    """Hard: the answer is two lookups away (claim -> adjuster -> name)."""
    claim = next(
        c for c in _claims(parcel)
        if (parcel.s0["adjusters"].get(c.get("adjuster_id")) or {}).get("name")
    )  # fmt: skip
    cid, aid = claim["claim_id"], claim["adjuster_id"]
    name = parcel.s0["adjusters"][aid]["name"]
    return Task(
        env_id=parcel.env_id, kind="dag_challenge", init_config=parcel.s0,
        coordinate=parcel.coordinate(["information_gathering"], ["dynamic_planning"]),
        query=f"Which adjuster handles claim {cid}? Give me the adjuster name.",
        reference_calls=(
            ReferenceCall(tool="get_claim", args={"claim_id": cid}, sources={"claim_id": "query"}),
            ReferenceCall(tool="get_adjuster", args={"adjuster_id": aid}, sources={"adjuster_id": "out:0.adjuster_id"}),
        ),
        expected_answer={"adjuster_name": name},
        rubric=(RubricItem(id="T1", text="Names the claim's adjuster.", scope="task",
                           check=Check(kind="answer_equals", field="adjuster_name", value=name)),),
    )  # fmt: skip


@pytest.fixture(scope="module")
def policy_tasks(parcel: Parcel) -> dict[str, Task]:
    return {
        "approve": approve_task(parcel),
        "count": count_task(parcel),
        "program": program_task(parcel),
        "assign": assign_task(parcel),
        "reject": reject_task(parcel),
        "explicit_approve": explicit_approve_task(parcel),
        "amount_lookup": amount_lookup_task(parcel),
        "constraint": constraint_task(parcel),
        "chain": chain_task(parcel),
    }


def run_graded(factory: PolicyFactory, task: Task, parcel: Parcel) -> tuple[RolloutResult, Score]:
    run = rollout(task, parcel.bundle, parcel.sandbox, factory(task, parcel.bundle, 0), user=make_user(task))
    calls = [(s.tool, dict(s.arguments)) for s in run.steps if s.valid]
    outcome = Outcome(final_state=run.final_state, answer=run.answer, calls=calls)
    return run, grade(task, outcome, verifier=sandbox_verifier(parcel.sandbox))


def _failed(score: Score) -> set[str]:
    return {i.id for i in score.items if i.passed is False}


# ------------------------------------------------------------------ specs


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("openai:qwen3-8b", ("openai", "qwen3-8b")),
        (" hf:/models/run-3 ", ("hf", "/models/run-3")),
        ("baseline:heuristic", ("baseline", "heuristic")),
        ("Baseline:noop", ("baseline", "noop")),
        ("reference", ("reference", "")),
    ],
)
def test_spec_forms_parse(spec: str, expected: tuple[str, str]) -> None:
    assert parse_spec(spec) == expected


@pytest.mark.parametrize(
    "spec", ["", "gpt-4o", "openai:", "hf:", "baseline:random", "reference:gold", "vllm:x"]
)
def test_unknown_specs_name_the_accepted_forms(spec: str) -> None:
    with pytest.raises(ValueError) as error:
        make_policy(spec)
    assert all(form in str(error.value) for form in SPEC_FORMS)


def test_policies_that_need_inputs_say_which(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="config.json"):
        make_policy(f"hf:{tmp_path / 'missing'}")
    with pytest.raises(ValueError, match="sandbox="):
        make_policy("reference")
    assert make_policy("baseline:noop")[0] == "baseline:noop"
    assert make_policy("reference", plans={})[0] == "reference"


# ------------------------------------------------------------------ guards: noop and reference


def test_noop_passes_no_task_and_earns_no_task_specific_point(
    parcel: Parcel, policy_tasks: dict[str, Task]
) -> None:
    name, factory = make_policy("baseline:noop")
    assert name == "baseline:noop"
    for key, task in policy_tasks.items():
        run, score = run_graded(factory, task, parcel)
        assert run.steps == [] and run.answer == {} and run.stop_reason == "answer", key
        assert not score.passed, f"{key}: the empty run passes, so the rubric checks nothing asked for"
        task_items = {i.id for i in task.rubric if i.scope == "task"}
        assert task_items and task_items <= _failed(score), key
        # Only "leave things alone" items can hold for a run that does nothing.
        general = {i.id for i in task.rubric if i.scope == "general"}
        assert {i.id for i in score.items if i.passed} <= general, key
        # ...and they earn nothing without progress on the task: the noop scores exactly 0
        assert score.value == 0.0, key


def test_reference_solves_every_task(parcel: Parcel, policy_tasks: dict[str, Task]) -> None:
    name, factory = make_policy("reference", sandbox=parcel.sandbox)
    assert name == "reference"
    for key, task in policy_tasks.items():
        run, score = run_graded(factory, task, parcel)
        assert score.passed and score.value == 1.0, (key, [(i.id, i.detail) for i in score.items])
        assert run.stop_reason == "answer" and all(s.ok for s in run.steps), key
    program = policy_tasks["program"]
    assert not program.reference_calls  # its plan came from running the reference program
    assert [s.tool for s in run_graded(factory, program, parcel)[0].steps] == ["list_open_claims"]


def test_reference_accepts_precomputed_plans(parcel: Parcel, policy_tasks: dict[str, Task]) -> None:
    task = policy_tasks["explicit_approve"]
    _, factory = make_policy("reference", plans={task.id: list(task.reference_calls)})
    _, score = run_graded(factory, task, parcel)
    assert score.passed
    with pytest.raises(ValueError, match="no plan for task"):
        factory(policy_tasks["count"], parcel.bundle, 0)


# ------------------------------------------------------------------ the heuristic baseline


def _call_signatures(run: RolloutResult) -> list[str]:
    return [s.tool + json.dumps(s.arguments, sort_keys=True) for s in run.steps]


def test_heuristic_solves_one_step_tasks_with_explicit_ids(
    parcel: Parcel, policy_tasks: dict[str, Task]
) -> None:
    name, factory = make_policy("baseline:heuristic")
    assert name == "baseline:heuristic"
    write, write_score = run_graded(factory, policy_tasks["explicit_approve"], parcel)
    cid = policy_tasks["explicit_approve"].reference_calls[0].args["claim_id"]
    assert write_score.passed
    assert [(s.tool, s.arguments) for s in write.steps] == [("approve_claim", {"claim_id": cid})]
    lookup, lookup_score = run_graded(factory, policy_tasks["amount_lookup"], parcel)
    assert lookup_score.passed, lookup.answer
    assert len(lookup.steps) == 1 and lookup.steps[0].tool.endswith("claim")
    assert lookup.answer["amount"] == policy_tasks["amount_lookup"].expected_answer["amount"]


def test_heuristic_looks_up_a_missing_id_before_writing(
    parcel: Parcel, policy_tasks: dict[str, Task]
) -> None:
    run, score = run_graded(make_policy("baseline:heuristic")[1], policy_tasks["approve"], parcel)
    assert score.passed
    lookup, write = run.steps
    assert lookup.tool.startswith("list_") and write.tool == "approve_claim"
    assert "SH2-" in json.dumps(lookup.arguments)  # aimed with the shipment id the request gives
    found = json.loads(run.messages[lookup.turn + 1]["content"])["data"]["items"]
    assert [c["claim_id"] for c in found] == [write.arguments["claim_id"]]  # only an unambiguous id is used


def test_heuristic_fails_hard_tasks_for_visible_reasons(
    parcel: Parcel, policy_tasks: dict[str, Task]
) -> None:
    factory = make_policy("baseline:heuristic")[1]

    # Progressive disclosure: the action is paraphrased ("put ... on") and the claim id is withheld;
    # the heuristic never asks the user, so the write is never made.
    assign, score = run_graded(factory, policy_tasks["assign"], parcel)
    assert "T1" in _failed(score)
    assert "assign_adjuster" not in [s.tool for s in assign.steps]
    assert not any("?" in str(m["content"]) for m in assign.messages if m["role"] == "assistant")

    # Misleading detail: it trusts the wrong shipment id the user states, so its lookup misses.
    task = policy_tasks["reject"]
    assert task.persona is not None
    wrong = task.persona.misleading["shipment_id"]
    reject, score = run_graded(factory, task, parcel)
    assert "T1" in _failed(score)
    assert any(s.arguments.get("shipment_id") == wrong for s in reject.steps)
    assert "reject_claim" not in [s.tool for s in reject.steps]

    # Constraint: the condition on the amount is ignored and the claim is approved anyway.
    constrained, score = run_graded(factory, policy_tasks["constraint"], parcel)
    assert _failed(score) == {"G1"}  # it reports the amount right, after approving the claim
    assert [s.tool for s in constrained.steps if s.ok] == ["approve_claim"]

    # Chain: the adjuster's name is a second lookup away, which the heuristic never makes (at most one
    # read, which of the two reads ranks first depends on the tools' wording).
    chained, score = run_graded(factory, policy_tasks["chain"], parcel)
    assert "T1" in _failed(score)
    assert len(chained.steps) <= 1 and "adjuster_name" not in chained.answer


def test_heuristic_never_sees_ground_truth_nor_repeats_a_call(
    parcel: Parcel, policy_tasks: dict[str, Task]
) -> None:
    factory = make_policy("baseline:heuristic")[1]
    for key, task in policy_tasks.items():
        blind = task.model_copy(update={"reference_calls": (), "reference_program": None, "expected_answer": {},
                                        "expected_diff": (), "internal_spec": {}})  # fmt: skip
        seen, blinded = run_graded(factory, task, parcel)[0], run_graded(factory, blind, parcel)[0]
        assert seen.messages == blinded.messages, key
        signatures = _call_signatures(seen)
        assert len(signatures) == len(set(signatures)) <= 6, key


def test_answer_fields_come_from_the_request_and_the_observations() -> None:
    names = field_names("List the ids of every claim; give me the claim count and the total amount.")
    assert {"claim_ids", "claim_count", "total_amount"} <= set(names)
    listing = Observation(
        tool="list_open_claims", arguments={}, ok=True,
        data={"count": 2, "items": [{"claim_id": "CLA-002", "amount": 1.5}, {"claim_id": "CLA-001", "amount": 2.25}]},
    )  # fmt: skip
    assert resolve_field("claim_ids", [listing]) == ["CLA-001", "CLA-002"]
    assert resolve_field("claim_count", [listing]) == 2
    assert resolve_field("total_amount", [listing]) == 3.75
    assert resolve_field("amount", [listing]) is None  # two values: ambiguous, not guessed


# ------------------------------------------------------------------ the heuristic on clause-by-clause requests


def test_requests_are_read_clause_by_clause() -> None:
    plan = parse_request(
        "Here is what I need done. Please update risk RIS-009 (Summit Risk 9): severity to 'critical' and "
        "impact description to 'Risk 13: done. Next.'. Remove resale listing RES-003. Register a new alarm "
        "setpoint: tag: the trigger tag of interlock INT-004; level 'high'; limit 325.36. In your final answer, "
        'give a JSON object with "count": the number of the risks of project PRO-004; "amount": the impact '
        "of risk RIS-008."
    )
    assert [s.op for s in plan.steps] == ["update", "delete", "create"]
    update, delete, create = plan.steps
    assert [(r.kind, r.value) for r in update.subject] == [("id", "RIS-009")]  # the "(name)" is dropped
    # the period inside the quoted value neither ends the sentence nor the value
    assert [(" ".join(f), unmask(v, plan.quoted)) for f, v in update.pairs] == [
        ("severity", "'critical'"), ("impact description", "'Risk 13: done. Next.'"),
    ]  # fmt: skip
    assert delete.subject[0].value == "RES-003"
    assert create.entity == ("alarm", "setpoint")
    assert [(" ".join(f), v) for f, v in create.pairs][1:] == [("level", "qv2qv"), ("limit", "325.36")]
    assert [f.name for f in plan.fields] == ["count", "amount"] and not plan.questions

    (tag,) = parse_ref("the trigger tag of interlock INT-004", [])
    assert (tag.kind, tag.words, tag.inner[0].value) == ("attr", ("trigger", "tag"), "INT-004")
    assert parse_ref("the new alarm setpoint", [])[0].words == ("alarm", "setpoint")
    assert ("date", "of", "birth") in [r.words for r in parse_ref("the date of birth of patient PAT-001", [])]
    for described in (
        "the only account of the only one of the plans matching qv0qv",
        "the loan with the latest borrowed on among the loans of patron PAT-004",
        "the sum of the amount of claim CLA-001 and the amount of claim CLA-002",
    ):
        assert [r.kind for r in parse_ref(described, ["Maple"])] == ["opaque"], described


def _probe(parcel: Parcel, calls: Sequence[tuple[str, dict[str, Any]]]) -> list[Any]:
    """The data of each call run in order in a fresh session on s0 (each must succeed)."""
    session = parcel.sandbox.open(parcel.bundle, parcel.s0)
    try:
        out = []
        for tool, args in calls:
            result = session.call(tool, args)
            assert result.ok, (tool, args, result.error)
            out.append(result.data)
        return out
    finally:
        session.close()


def _clause_task(parcel: Parcel, query: str, rubric: Sequence[RubricItem]) -> Task:
    return Task(
        env_id=parcel.env_id, kind="dag_standard", init_config=parcel.s0,
        coordinate=parcel.coordinate(["tool_use"], ["tool_parameter_grounding"]), query=query, rubric=tuple(rubric),
    )  # fmt: skip


def _field(rid: str, table: str, key: str, name: str, value: Any) -> RubricItem:
    return RubricItem(id=rid, text=f"{table}[{key}].{name} is {value!r}", scope="task",
                      check=Check(kind="field_equals", table=table, key=key, field=name, value=value))  # fmt: skip


def _answer(rid: str, name: str, value: Any) -> RubricItem:
    return RubricItem(id=rid, text=f"answers {name} = {value!r}", scope="task",
                      check=Check(kind="answer_equals", field=name, value=value, tolerance=0.01))  # fmt: skip


def test_heuristic_makes_the_named_writes_in_order_then_reads_the_answer(
    parcel: Parcel, policy_tasks: dict[str, Task]
) -> None:
    adjuster = sorted(parcel.s0["adjusters"])[0]
    c2 = _approvable(parcel)["claim_id"]
    c1 = next(c["claim_id"] for c in _claims(parcel) if c["claim_id"] != c2 and c["adjuster_id"] != adjuster)
    c3 = next(c["claim_id"] for c in _claims(parcel) if c["claim_id"] not in (c1, c2))
    *_, claim3, overview = _probe(parcel, [
        ("assign_adjuster", {"claim_id": c1, "adjuster_id": adjuster}), ("approve_claim", {"claim_id": c2}),
        ("get_claim", {"claim_id": c3}), ("get_adjuster_overview", {"adjuster_id": adjuster}),
    ])  # fmt: skip
    task = _clause_task(
        parcel,
        f"Please handle the following in the parcel claims system. Point the adjuster of claim {c1} to adjuster "
        f"{adjuster}. Claim {c2} should now be approved. Report back as a JSON object with \"amount\": the "
        f"amount of claim {c3}; \"count\": the number of claims linked to adjuster {adjuster}.",
        [_field("T1", "claims", c1, "adjuster_id", adjuster), _field("T2", "claims", c2, "status", "approved"),
         _answer("T3", "amount", claim3["amount"]), _answer("T4", "count", overview["counts"]["claims"])],
    )  # fmt: skip
    factory = make_policy("baseline:heuristic")[1]
    spent: list[float] = []

    class Timed:
        name = "timed"

        def __init__(self) -> None:
            self.agent = factory(task, parcel.bundle, 0)

        def act(
            self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
        ) -> dict[str, Any]:
            started = time.perf_counter()
            try:
                return self.agent.act(messages, tools)
            finally:
                spent.append(time.perf_counter() - started)

    run, score = run_graded(lambda *_: Timed(), task, parcel)
    assert score.passed, [(i.id, i.detail) for i in score.items]
    assert [(s.tool, s.arguments) for s in run.steps] == [
        ("assign_adjuster", {"claim_id": c1, "adjuster_id": adjuster}), ("approve_claim", {"claim_id": c2}),
        ("get_claim", {"claim_id": c3}), ("get_adjuster_overview", {"adjuster_id": adjuster}),
    ]  # fmt: skip
    assert sum(spent) < 0.5  # the policy's own thinking, without the tool calls


def test_heuristic_resolves_a_field_of_a_named_record_and_the_new_record(parcel: Parcel) -> None:
    claims = _claims(parcel)
    c1 = claims[0]["claim_id"]
    target = claims[0]["adjuster_id"]
    c2 = next(c["claim_id"] for c in claims if c["adjuster_id"] != target)
    c3 = next(c["claim_id"] for c in claims if c["claim_id"] not in (c1, c2))
    new = _probe(parcel, [("create_adjuster", {"name": "Quinn Park"})])[0]["adjuster_id"]
    task = _clause_task(
        parcel,
        f"Point the adjuster of claim {c2} to the adjuster of claim {c1}. Register a new adjuster: name "
        f"'Quinn Park'. Reassign claim {c3} so its adjuster is the new adjuster.",
        [_field("T1", "claims", c2, "adjuster_id", target), _field("T2", "adjusters", new, "name", "Quinn Park"),
         _field("T3", "claims", c3, "adjuster_id", new)],
    )  # fmt: skip
    run, score = run_graded(make_policy("baseline:heuristic")[1], task, parcel)
    assert score.passed, [(i.id, i.detail) for i in score.items]
    assert [(s.tool, s.arguments) for s in run.steps] == [
        ("get_claim", {"claim_id": c1}),  # the one lookup "the adjuster of claim ..." needs
        ("assign_adjuster", {"claim_id": c2, "adjuster_id": target}),
        ("create_adjuster", {"name": "Quinn Park"}),
        ("assign_adjuster", {"claim_id": c3, "adjuster_id": new}),  # the id the create returned
    ]
    assert run.answer == {}  # nothing was asked


def test_heuristic_leaves_described_records_and_derived_values_alone(parcel: Parcel) -> None:
    shipment = _claims(parcel)[0]["shipment_id"]
    listed = _probe(parcel, [("list_open_claims", {"shipment_id": shipment})])[0]
    task = _clause_task(
        parcel,
        f"Mark the claim with the highest amount among the claims of shipment {shipment} as approved. Report back "
        f'as a JSON object with "count": the number of the claims of shipment {shipment}; "check": whether the '
        f"number of the claims of shipment {shipment} is at least 1 (true or false).",
        [_answer("T1", "count", listed["count"]), _answer("T2", "check", listed["count"] >= 1)],
    )  # fmt: skip
    run, score = run_graded(make_policy("baseline:heuristic")[1], task, parcel)
    assert [s.tool for s in run.steps] == ["list_open_claims"]  # no write: the claim is only described
    assert run.answer == {"count": listed["count"]}  # a comparison of values is not read from any tool
    assert _failed(score) == {"T2"}
    final = run.messages[-1]["content"]
    assert "describes a record instead of naming it" in final and "Not done: check" in final


# ------------------------------------------------------------------ Qwen3 tool-call text


def test_parse_one_well_formed_call_and_drop_thinking() -> None:
    text = (
        "<think>The user wants claim CLA-006.</think>\nLet me look.\n"
        '<tool_call>\n{"name": "get_claim", "arguments": {"claim_id": "CLA-006"}}\n</tool_call><|im_end|>'
    )
    content, calls = parse_tool_calls(text)
    assert content == "Let me look."
    assert len(calls) == 1 and calls[0]["type"] == "function"
    assert parse_arguments(calls[0]) == ("get_claim", {"claim_id": "CLA-006"}, None)


def test_parse_several_calls_in_order() -> None:
    text = (
        '<tool_call>\n{"name": "get_claim", "arguments": {"claim_id": "CLA-001"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "list_adjusters", "arguments": {}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_shipment", "arguments": "{\\"shipment_id\\": \\"SH2-002\\"}"}\n</tool_call>'
    )
    content, calls = parse_tool_calls(text)
    assert content == ""
    assert [parse_arguments(c)[:2] for c in calls] == [
        ("get_claim", {"claim_id": "CLA-001"}),
        ("list_adjusters", {}),
        ("get_shipment", {"shipment_id": "SH2-002"}),
    ]
    assert len({c["id"] for c in calls}) == 3


def test_malformed_call_is_kept_as_text_and_an_invalid_call() -> None:
    text = '<think>unfinished thought\nI will call it.\n<tool_call>\n{"name": "get_claim", "arguments": {"claim_id": </tool_call>'
    assert parse_tool_calls(text) == ("", [])  # an unterminated <think> swallows the rest
    text = 'Checking.\n<tool_call>\n{"name": "get_claim", "arguments": {"claim_id": \n</tool_call>'
    content, calls = parse_tool_calls(text)
    assert "Checking." in content and '"get_claim"' in content  # the transcript shows what was written
    name, args, problem = parse_arguments(calls[0])
    assert name == "get_claim" and args is None and problem is not None
    content, calls = parse_tool_calls('No tools needed.\n```json\n{"amount": 3}\n```')
    assert calls == [] and content.startswith("No tools needed.")


class _ScriptedAgent:
    name = "scripted"

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = list(texts)

    def act(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        return to_assistant_message(self.texts.pop(0))


def test_a_malformed_call_is_recorded_as_an_invalid_step(
    parcel: Parcel, policy_tasks: dict[str, Task]
) -> None:
    agent = _ScriptedAgent(
        ['<tool_call>{"name": "get_claim", "arguments": {"claim_id": </tool_call>', "Done. {}"]
    )
    run = rollout(policy_tasks["amount_lookup"], parcel.bundle, parcel.sandbox, agent)
    assert run.stop_reason == "answer"
    assert [(s.tool, s.valid, s.error_code) for s in run.steps] == [("get_claim", False, INVALID_ARGUMENTS)]


# ------------------------------------------------------------------ model-backed policies


class FakeLLM:
    """An OpenAI-compatible client stand-in: records requests and answers with one tool call."""

    def __init__(self, settings: LLMSettings) -> None:
        self.model = settings.model
        self.settings = settings
        self.requests: list[dict[str, Any]] = []

    def complete(self, messages: Sequence[Mapping[str, Any]], **kwargs: Any) -> LLMResponse:
        self.requests.append({"messages": [dict(m) for m in messages], **kwargs})
        call = {
            "id": "",
            "type": "function",
            "function": {"name": "get_claim", "arguments": '{"claim_id": "CLA-004"}'},
        }
        return LLMResponse(text="Looking it up.", tool_calls=[call], request_hash=str(len(self.requests)))

    @property
    def usage(self) -> Usage:
        return Usage(requests=len(self.requests))


def test_openai_policy_uses_the_spec_model_over_the_configured_endpoint(
    parcel: Parcel, policy_tasks: dict[str, Task]
) -> None:
    made: list[FakeLLM] = []

    def factory(settings: LLMSettings) -> FakeLLM:
        made.append(FakeLLM(settings))
        return made[-1]

    settings = LLMSettings(base_url="http://10.0.0.5:8000/v1", model="default-model")
    name, policy = make_policy("openai:my-model", llm_settings=settings, llm_factory=factory)
    assert name == "openai:my-model"
    assert len(made) == 1 and made[0].model == "my-model" and made[0].settings.base_url == settings.base_url
    task = policy_tasks["amount_lookup"]
    agent = policy(task, parcel.bundle, 0)
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": task.query}]
    reply = agent.act(messages, parcel.bundle.tools)
    assert reply["content"] == "Looking it up."
    assert parse_arguments(reply["tool_calls"][0]) == ("get_claim", {"claim_id": "CLA-004"}, None)
    assert reply["tool_calls"][0]["id"] and reply["tool_calls"][0]["type"] == "function"
    sent = made[0].requests[0]
    assert sent["messages"] == messages and len(sent["tools"]) == len(parcel.bundle.tools)
    assert sent["temperature"] == 0.0  # evaluation decodes greedily
    policy(task, parcel.bundle, 1)
    assert len(made) == 1  # one client shared by every trial


def test_an_evaluated_served_model_is_cached_and_counted_with_its_stage(
    parcel: Parcel, policy_tasks: dict[str, Task], tmp_path: Path
) -> None:
    """The benchmark's `openai:` policy asks through the platform's response cache and the stage's
    ledger: its turns show in the stage's model report, and a rerun replays them."""
    from agentomnia.omniabench.service import _served
    from agentomnia.storage import Storage
    from tests.fixtures.chat_server import client, serving

    for server in serving():
        server.script = [(200, "The claim is approved.")]
        store = Storage(tmp_path / "home")
        stage = client(server, store.llm_cache_path.parent)
        task = policy_tasks["amount_lookup"]
        messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": task.query}]
        _, policy = make_policy("openai:tiny", **_served("openai:tiny", store, stage))
        policy(task, parcel.bundle, 0).act(messages, parcel.bundle.tools)
        assert stage.ledger.snapshot()["policy_turn"].requests == 1  # the stage's own handle served it
        # another model on the same endpoint: its own handle, the platform's cache, the stage's ledger
        options = _served("openai:other", store, stage)
        _, other = make_policy(
            "openai:other", llm_settings=LLMSettings(base_url=server.url, model="x"), **options
        )
        for _ in range(2):
            other(task, parcel.bundle, 0).act(messages, parcel.bundle.tools)
        assert [r["model"] for r in server.requests] == [
            "tiny",
            "other",
        ]  # the second turn came from the cache
        counts = stage.ledger.snapshot()["policy_turn"]
        assert (counts.requests, counts.cache_hits) == (2, 1)
        assert store.llm_cache_path.exists()


@pytest.mark.slow
def test_hf_policy_on_a_tiny_local_checkpoint(tmp_path: Path) -> None:
    import torch

    from agentomnia.trajectories.sft import GENERATION_TEMPLATE
    from trainers.model import ModelSettings, build_tiny_model, build_tokenizer, rows_as_text

    tools = [{"type": "function", "function": {"name": "get_claim", "description": "Get one claim.",
              "parameters": {"type": "object", "properties": {"claim_id": {"type": "string"}}, "required": ["claim_id"]}}}]  # fmt: skip
    messages = [
        {"role": "system", "content": "You operate tools."},
        {"role": "user", "content": "Show claim CLA-006."},
    ]
    target = (
        '<tool_call>\n{"name": "get_claim", "arguments": {"claim_id": "CLA-006"}}\n</tool_call><|im_end|>'
    )
    settings = ModelSettings(vocab_size=1200, hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1,
                             intermediate_size=64)  # fmt: skip
    # The tokenizer learns this conversation's lines as whole tokens (as the project's tokenizer
    # learns its training rows), which keeps the prompt short and the memorisation below quick.
    corpus = [*rows_as_text([{"messages": messages, "tools": tools}], repeats=20), *[target] * 20]
    tokenizer = build_tokenizer(corpus, settings.vocab_size)
    model = build_tiny_model(tokenizer, settings)
    # Teach the random model one reply to this exact prompt, so greedy decoding must go through
    # the chat template, generation and the tool-call parser to give the call back.
    # ... rendered as the agent renders it: after the empty thinking block SFT rows put before a reply
    prompt = tokenizer.apply_chat_template(
        messages, tools=tools, add_generation_prompt=True, tokenize=False, **GENERATION_TEMPLATE
    )
    assert prompt.endswith("<think>\n\n</think>\n\n")
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    target_ids = tokenizer(target, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([prompt_ids + target_ids])
    labels = ids.clone()
    labels[0, : len(prompt_ids)] = -100
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-2)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a model this small trains faster on one thread than on contended cores
    try:
        for _ in range(150):
            loss = model(input_ids=ids, labels=labels).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if loss.item() < 0.01:
                break
    finally:
        torch.set_num_threads(threads)
    model.save_pretrained(tmp_path / "ckpt")
    tokenizer.save_pretrained(tmp_path / "ckpt")

    name, policy = make_policy(f"hf:{tmp_path / 'ckpt'}", max_new_tokens=len(target_ids) + 4, device="cpu")
    assert name == f"hf:{tmp_path / 'ckpt'}"
    agent = policy(None, None, 0)  # type: ignore[arg-type]  # the factory needs neither to load a model
    reply = agent.act(messages, tools)
    assert reply["role"] == "assistant" and reply["content"] == ""
    assert [parse_arguments(c) for c in reply["tool_calls"]] == [("get_claim", {"claim_id": "CLA-006"}, None)]
    # Any other conversation still yields a well-formed message: text, and calls only in OpenAI form.
    other = agent.act([*messages[:1], {"role": "user", "content": "Something else entirely."}], tools)
    assert other["role"] == "assistant" and isinstance(other["content"], str)
    for call in other.get("tool_calls", []):
        assert call["type"] == "function" and isinstance(call["function"]["arguments"], str)


def test_a_sampling_policy_repeats_each_attempt_and_varies_between_them(tmp_path: Path) -> None:
    """pass@K of a checkpoint (the RL dataset's difficulty from the SFT model): attempt i of a task
    always draws the same replies, and different attempts draw different ones."""
    from types import SimpleNamespace

    from agentomnia.omniabench.hf import sampling_policy
    from trainers.model import ModelSettings, build_tiny_model, build_tokenizer, rows_as_text

    messages = [
        {"role": "system", "content": "You operate tools."},
        {"role": "user", "content": "Show claim 6."},
    ]
    settings = ModelSettings(vocab_size=600, hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1,
                             intermediate_size=64)  # fmt: skip
    tokenizer = build_tokenizer(
        rows_as_text([{"messages": messages, "tools": []}], repeats=5), settings.vocab_size
    )
    build_tiny_model(tokenizer, settings).save_pretrained(tmp_path / "ckpt")
    tokenizer.save_pretrained(tmp_path / "ckpt")
    policy = sampling_policy(tmp_path / "ckpt", temperature=1.0, max_new_tokens=12, device="cpu")
    task: Any = SimpleNamespace(id="task-1")

    def reply(attempt: int) -> str:
        return policy(task, [], cast(Any, None), attempt).generate(
            "<|im_start|>user\nShow claim 6.<|im_end|>\n"
        )

    assert reply(0) == reply(0) and reply(1) == reply(1)
    assert len({reply(a) for a in range(4)}) > 1


def _claim_checkpoint(folder: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """An untrained tiny checkpoint saved at `folder`, and the two-message claim conversation with its
    one tool that its tokenizer learned."""
    from trainers.model import ModelSettings, build_tiny_model, build_tokenizer, rows_as_text

    tools = [{"type": "function", "function": {"name": "get_claim", "description": "Get one claim.",
              "parameters": {"type": "object", "properties": {"claim_id": {"type": "string"}}}}}]  # fmt: skip
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You operate tools."},
        {"role": "user", "content": "Show claim CLA-006 and then its payments."},
    ]
    settings = ModelSettings(vocab_size=600, hidden_size=32, num_layers=2, num_heads=2, num_kv_heads=1,
                             intermediate_size=64)  # fmt: skip
    tokenizer = build_tokenizer(rows_as_text([{"messages": messages, "tools": tools}], repeats=5), 600)
    build_tiny_model(tokenizer, settings).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return messages, tools


def test_a_checkpoint_agent_runs_only_what_each_turn_adds(tmp_path: Path) -> None:
    """The next turn's prompt starts with the last turn's prompt and reply: the agent keeps their keys
    and values and runs only the new tokens, and replies exactly as an agent that runs it all."""
    from agentomnia.omniabench.hf import HFAgent

    messages, tools = _claim_checkpoint(tmp_path / "ckpt")

    kept = HFAgent(tmp_path / "ckpt", max_new_tokens=12, device="cpu")
    for turn in range(3):
        reply = kept.act(messages, tools)
        fresh = HFAgent(tmp_path / "ckpt", max_new_tokens=12, device="cpu").act(messages, tools)
        assert reply == fresh, turn
        messages += [
            {"role": "assistant", "content": "Looking it up."},
            {"role": "user", "content": f"Turn {turn}: the claim is open."},
        ]
    assert kept.reused_tokens > 0
    # a conversation that shares nothing with the last one starts from nothing
    before = kept.reused_tokens
    kept.act([{"role": "user", "content": "Hello."}], [])
    assert kept.reused_tokens == before


def test_a_local_checkpoint_runs_one_trial_per_decoder_process() -> None:
    """A checkpoint decoding in this process runs its trials one at a time (two threads contend for the
    interpreter); with a decoder pool, one trial per process; any other policy runs one trial per
    sandbox worker. A pool is worth starting on a CPU with two cores or more, never on a GPU."""
    from types import SimpleNamespace

    from agentomnia.omniabench.decoders import decoder_count
    from agentomnia.omniabench.service import trial_threads

    box = SimpleNamespace(config=SimpleNamespace(workers=3))
    pool = SimpleNamespace(size=2)
    assert trial_threads("hf:/tmp/checkpoints/sft/r0", box) == 1  # type: ignore[arg-type]
    assert trial_threads("hf:/tmp/checkpoints/sft/r0", box, pool) == 2  # type: ignore[arg-type]
    assert trial_threads("baseline:heuristic", box, pool) == 3  # type: ignore[arg-type]
    assert trial_threads("openai:qwen3", box) == 3  # type: ignore[arg-type]
    assert [decoder_count("cpu", n) for n in (1, 2, 3, 16)] == [0, 2, 3, 4]
    assert decoder_count("cuda", 16) == 0


def test_a_decoder_pool_replies_as_the_checkpoint_does_in_this_process(tmp_path: Path) -> None:
    """Agents decoded in worker processes give exactly the in-process agent's replies turn after turn,
    each pinned to the least busy process; a checkpoint a worker cannot load, or a worker that is gone,
    fails the turn with a `DecoderError` that says so, and a trial whose decoder is gone is reported
    as an infrastructure failure, not as the policy's."""
    import os
    import signal

    from agentomnia.omniabench.decoders import DecoderError, DecoderPool
    from agentomnia.omniabench.hf import HFAgent
    from agentomnia.omniabench.runner import _GuardedAgent

    messages, tools = _claim_checkpoint(tmp_path / "ckpt")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")

    with DecoderPool(2, preload=[tmp_path / "ckpt"]) as pool:
        assert pool.size == 2
        here = HFAgent(tmp_path / "ckpt", max_new_tokens=12, device="cpu")
        first = pool.agent(tmp_path / "ckpt", max_new_tokens=12, name="hf:ckpt")
        second = pool.agent(tmp_path / "ckpt", max_new_tokens=12)
        assert first.name == "hf:ckpt" and second.name.startswith("hf:")
        assert first._worker is not second._worker  # each on its own process
        for turn in range(3):
            expected = here.act(messages, tools)
            assert first.act(messages, tools) == expected, turn
            messages += [
                {"role": "assistant", "content": "Looking it up."},
                {"role": "user", "content": f"Turn {turn}: the claim is open."},
            ]
        first.close()
        third = pool.agent(tmp_path / "ckpt", max_new_tokens=12)
        assert third._worker is first._worker  # the freed process is the least busy one
        with pytest.raises(DecoderError, match="decoder process .*(JSON|json|Expecting|config)"):
            pool.agent(broken, max_new_tokens=12).act(messages, tools)

        os.kill(second._worker.process.pid, signal.SIGKILL)
        second._worker.process.join(timeout=10)
        with pytest.raises(DecoderError, match="is gone"):
            second.act(messages, tools)
        second.close()  # a worker that is gone holds nothing to free

        guarded = _GuardedAgent(second)
        with pytest.raises(DecoderError):
            guarded.act(messages, tools)
        assert "decoder process failed" in str(guarded.transport_error)  # the trial's infra_error
