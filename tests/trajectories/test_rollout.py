"""The rollout loop, the offline teacher and the user simulator on the parcel-claims environment."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentomnia.llm.protocol import LLMResponse, Usage
from agentomnia.tasks.models import Task
from agentomnia.trajectories import (
    LLMAgent,
    OfflineTeacher,
    ScriptedUser,
    Trajectory,
    build_guidance,
    parse_answer,
    reference_plan,
    rollout,
    verify_trajectory,
)
from agentomnia.trajectories.messages import assistant_message, tool_call


def test_offline_teacher_with_guidance_yields_verified_trajectories(
    guided: list[Trajectory], tasks: list[Task]
) -> None:
    assert len(guided) == len(tasks)
    failures = {
        t.task_kind: t.verification.failed_checks() for t in guided if not t.verified and t.verification
    }
    assert failures == {}
    assert {t.guidance for t in guided} == {"none", "outcome", "planning"}
    assert all(t.stop_reason == "answer" and t.policy == "offline-teacher" for t in guided)


def test_each_step_records_call_result_and_state_hash(
    guided: list[Trajectory], tasks: list[Task], parcel
) -> None:  # type: ignore[no-untyped-def]
    approve = guided[0]
    reads = [s for s in approve.steps if s.tool != "approve_claim"]
    write = next(s for s in approve.steps if s.tool == "approve_claim")
    assert reads and all(s.state_hash == approve.initial_hash for s in reads)  # lookups change nothing
    assert write.ok and write.state_hash != approve.initial_hash
    report = verify_trajectory(
        approve, tasks[0], sandbox=parcel.sandbox, bundle=parcel.bundle, replay_calls=True
    )
    assert report.replay_matches is True and report.correctness.passed is True


def test_teacher_looks_up_ids_instead_of_using_the_plan_blindly(
    guided: list[Trajectory], tasks: list[Task]
) -> None:
    approve, task = guided[0], tasks[0]
    claim_id = task.reference_calls[0].args["claim_id"]
    assert claim_id not in task.query
    first_use = next(i for i, m in enumerate(approve.messages) if claim_id in json.dumps(m))
    assert approve.messages[first_use]["role"] == "tool"  # seen in an observation before it is used


def test_multi_turn_user_discloses_withheld_detail_only_when_asked(
    guided: list[Trajectory], tasks: list[Task]
) -> None:
    assign, task = guided[3], tasks[3]
    assert task.persona is not None
    claim_id = task.persona.withheld["claim_id"]
    users = [m["content"] for m in assign.messages if m["role"] == "user"]
    assert claim_id not in users[0] and any(claim_id in u for u in users[1:])
    asked = next(m for m in assign.messages if m["role"] == "assistant" and "?" in m["content"])
    assert "which claim is it?" in asked["content"]  # asked as a person asks for a record, not "the claim id"


def test_misleading_detail_is_corrected_when_the_agent_asks_to_confirm(
    guided: list[Trajectory], tasks: list[Task]
) -> None:
    reject, task = guided[4], tasks[4]
    assert task.persona is not None
    wrong, right = task.persona.misleading["shipment_id"], task.persona.withheld["shipment_id"]
    users = [m["content"] for m in reject.messages if m["role"] == "user"]
    assert wrong in users[0] and right not in users[0]
    assert right in users[1]
    assert reject.verified


def test_scripted_user_reveals_nothing_unasked(tasks: list[Task]) -> None:
    user = ScriptedUser(tasks[3])
    opening = user.opening()
    assert tasks[3].persona is not None and tasks[3].persona.withheld["claim_id"] not in opening
    off_topic = [{"role": "assistant", "content": "Which carrier do you prefer?"}]
    assert user.reply(off_topic) == "I have no more details than what I already told you."
    assert user.reply([{"role": "assistant", "content": "Done. The adjuster is assigned."}]) is None


class _Looping:
    name = "looping"

    def __init__(self, tool: str, args: dict[str, Any] | str) -> None:
        self.tool, self.args, self.n = tool, args, 0

    def act(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        self.n += 1
        call = tool_call(f"c{self.n}", self.tool, {})
        if isinstance(self.args, str):
            call["function"]["arguments"] = self.args
        else:
            call["function"]["arguments"] = json.dumps(self.args)
        return assistant_message("again", [call])


class _Raising:
    name = "raising"

    def act(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        raise RuntimeError("model endpoint went away")


def test_rollout_stops_on_budget_invalid_calls_and_policy_errors(tasks: list[Task], parcel) -> None:  # type: ignore[no-untyped-def]
    task = tasks[1]
    budget = rollout(task, parcel.bundle, parcel.sandbox, _Looping("list_adjusters", {}), max_steps=4)
    assert budget.stop_reason == "budget" and budget.truncated and len(budget.steps) == 4
    unknown = rollout(task, parcel.bundle, parcel.sandbox, _Looping("no_such_tool", {}), max_steps=10)
    assert unknown.stop_reason == "invalid_calls" and len(unknown.steps) == 3
    assert all(not s.valid and s.error_code == "unknown_tool" for s in unknown.steps)
    garbled = rollout(task, parcel.bundle, parcel.sandbox, _Looping("get_claim", "{not json"), max_steps=10)
    assert garbled.stop_reason == "invalid_calls" and garbled.steps[0].error_code == "invalid_arguments"
    crashed = rollout(task, parcel.bundle, parcel.sandbox, _Raising())
    assert crashed.stop_reason == "error" and crashed.anomalous and "went away" in (crashed.error or "")


class _FakeLLM:
    model = "fake"

    def __init__(self) -> None:
        self.seen: list[list[dict[str, Any]]] = []

    def complete(self, messages: Sequence[Mapping[str, Any]], **kwargs: Any) -> LLMResponse:
        self.seen.append([dict(m) for m in messages])
        assert kwargs.get("tools"), "the agent must pass the tool schemas"
        return LLMResponse(text='All done.\n```json\n{"claim_count": 3}\n```', request_hash="h")

    @property
    def usage(self) -> Usage:
        return Usage()


def test_llm_agent_sees_guidance_but_the_trajectory_does_not(tasks: list[Task], parcel) -> None:  # type: ignore[no-untyped-def]
    task = tasks[1]
    guidance = build_guidance(task)
    llm = _FakeLLM()
    result = rollout(task, parcel.bundle, parcel.sandbox, LLMAgent(llm, guidance_text=guidance.text))
    assert guidance.text in llm.seen[0][0]["content"]
    assert all(guidance.text not in str(m.get("content")) for m in result.messages)
    assert result.answer == {"claim_count": 3}


def test_program_tasks_are_planned_from_their_reference_program(tasks: list[Task], parcel) -> None:  # type: ignore[no-untyped-def]
    plan = reference_plan(tasks[2], parcel.bundle, parcel.sandbox)
    assert [c.tool for c in plan] == ["list_open_claims"]
    teacher = OfflineTeacher(tasks[2], plan, build_guidance(tasks[2]))
    result = rollout(tasks[2], parcel.bundle, parcel.sandbox, teacher)
    assert result.answer == tasks[2].expected_answer


def test_parse_answer_reads_fenced_or_bare_json() -> None:
    assert parse_answer('Done.\n```json\n{"a": 1}\n```') == {"a": 1}
    assert parse_answer('The total is {"total": 2.5} as computed.') == {"total": 2.5}
    assert parse_answer("No structured answer here.") == {}


class _ScriptedModel:
    """Stands in for an OpenAI-compatible endpoint: answers as agent, user and judge."""

    model = "scripted"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def complete(self, messages: Sequence[Mapping[str, Any]], **kwargs: Any) -> LLMResponse:
        if kwargs.get("schema") is not None:
            self.calls.append("judge")
            data = (
                {"ok": True, "problems": []} if "ok" in kwargs["schema"]["properties"] else {"passed": True}
            )
            return LLMResponse(text=json.dumps(data), data=data, request_hash="j")
        if kwargs.get("tools"):
            self.calls.append("agent")
            return LLMResponse(text="Could you tell me which claim you mean?", request_hash="a")
        self.calls.append("user")
        return LLMResponse(text="###DONE###", request_hash="u")

    @property
    def usage(self) -> Usage:
        return Usage()


def test_llm_mode_uses_the_model_as_teacher_user_and_judge(tasks: list[Task], parcel) -> None:  # type: ignore[no-untyped-def]
    from agentomnia.trajectories import generate_trajectories

    model = _ScriptedModel()
    bundles = {parcel.env_id: parcel.bundle}
    [traj, fallback] = generate_trajectories([tasks[3]], bundles, parcel.sandbox, teacher="llm", llm=model)
    assert traj.policy == "llm:scripted" and traj.interaction == "multi"
    assert {"agent", "user", "judge"} <= set(model.calls)
    assert traj.verification is not None and traj.verification.correctness.passed is False
    assert traj.verification.consistency.judged and traj.verification.continuity.judged
    assert traj.rewards["score"] == 0.0
    # the model's run failed verification: the offline teacher took the task over, and both are kept
    assert (
        fallback.policy == "offline-teacher" and fallback.task_id == traj.task_id and fallback.id != traj.id
    )
    [alone] = generate_trajectories(
        [tasks[3]], bundles, parcel.sandbox, teacher="llm", llm=model, fallback=False
    )
    assert alone.id == traj.id


def _answer_task(count: Task, kind: str, expected: dict[str, Any]) -> Task:
    """The count task asked the way DAG-Standard tasks ask: generic answer fields, each described."""
    from agentomnia.tasks.models import Check, RubricItem

    sid = count.reference_calls[0].args["shipment_id"]
    query = (
        f"Look at the open claims of shipment {sid}. Report back as a JSON object with "
        '"value": the amount of its first open claim; "count": the number of its open claims.'
    )
    rubric = tuple(
        RubricItem(id=f"T{i}", text=f"reports {field}", scope="task",
                   check=Check(kind="answer_equals", field=field, value=value, tolerance=0.01))
        for i, (field, value) in enumerate(sorted(expected.items()), start=1)
    )  # fmt: skip
    return count.model_copy(
        update={"id": "", "kind": kind, "query": query, "expected_answer": expected, "rubric": rubric}
    )


def test_teacher_answers_a_dag_standard_task_only_with_values_it_observed(tasks: list[Task], parcel) -> None:  # type: ignore[no-untyped-def]
    from agentomnia.trajectories import generate_trajectories

    count = tasks[1]
    sid = count.reference_calls[0].args["shipment_id"]
    items = parcel.call("list_open_claims", {"shipment_id": sid}).data["items"]
    observed = {"value": items[0]["amount"], "count": len(items)}
    standard = Task.model_validate(_answer_task(count, "dag_standard", observed).model_dump())
    # the fields are named "value" and "count", which no tool result carries: before, the answer was empty
    assert "value" not in items[0]
    unseen = Task.model_validate(
        _answer_task(count, "dag_standard", {**observed, "value": 98765.43}).model_dump()
    )
    challenge = Task.model_validate(_answer_task(count, "dag_challenge", observed).model_dump())
    runs = generate_trajectories([standard, unseen, challenge], {parcel.env_id: parcel.bundle},
                                 parcel.sandbox, guidance=False)  # fmt: skip
    by_id = {t.task_id: t for t in runs}
    assert by_id[standard.id].verified and by_id[standard.id].answer == observed
    # a value no tool result showed is never stated, whatever the oracle says
    assert "value" not in (by_id[unseen.id].answer or {}) and not by_id[unseen.id].verified
    # without guidance, other kinds get nothing from the oracle (the guidance ablation stays honest)
    assert "value" not in (by_id[challenge.id].answer or {})


def test_training_keeps_dag_standard_runs_and_drops_the_ablations_plain_runs(
    guided: list[Trajectory], unguided: list[Trajectory]
) -> None:
    from agentomnia.trajectories import training_runs
    from agentomnia.trajectories.guidance import GUIDANCE_KIND

    kept = training_runs(guided + unguided)
    assert len({t.id for t in kept}) == len(kept)
    # every kept run had the guidance its kind is designed for, DAG-Standard's "none" included
    assert all(t.verified and t.guidance == GUIDANCE_KIND[t.task_kind] for t in kept)
    assert "dag_standard" in {t.task_kind for t in kept}
    expected = {(t.task_id, t.guidance) for t in guided if t.verified}
    assert {(t.task_id, t.guidance) for t in kept} == expected
    plain_of_guided_kinds = [t for t in unguided if GUIDANCE_KIND[t.task_kind] != "none"]
    assert plain_of_guided_kinds and not {t.id for t in plain_of_guided_kinds} & {t.id for t in kept}


def test_a_user_who_opens_with_one_line_is_asked_what_needs_doing_before_any_call(
    tasks: list[Task], parcel
) -> None:  # type: ignore[no-untyped-def]
    from agentomnia.trajectories import generate_trajectories

    task = tasks[3]
    held = Task.model_validate(
        {**task.model_dump(exclude={"id"}), "query": "I need a hand with a claim today. " + task.query}
    )
    (run,) = generate_trajectories([held], {parcel.env_id: parcel.bundle}, parcel.sandbox, guidance=True)
    said = [m for m in run.messages if m["role"] in ("user", "assistant")]
    assert said[0]["content"] == "I need a hand with a claim today."
    first = said[1]
    assert not first.get("tool_calls") and first["content"] == "Happy to help. What needs doing?"
    assert task.query in said[2]["content"]  # the rest of the request comes back in reply
    assert run.verified
