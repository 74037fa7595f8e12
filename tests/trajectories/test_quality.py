"""Quality verification: planted faults are caught by the matching check and only by it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentomnia.tasks.models import Task
from agentomnia.trajectories import (
    Trajectory,
    build_guidance,
    check_consistency,
    check_continuity,
    check_grounding,
    check_leak,
    guidance_ablation_png,
    leaked_trajectories,
    pass_rates,
    summarize,
    verify_trajectory,
)
from agentomnia.trajectories.messages import ALL_WENT_THROUGH, closing


def _edit(traj: Trajectory, index: int, **changes: Any) -> Trajectory:
    messages = [dict(m) for m in traj.messages]
    messages[index] = {**messages[index], **changes}
    data = traj.model_dump(exclude={"id", "messages", "verification"})
    return Trajectory.model_validate({**data, "messages": messages})


def _reasoning_turn(traj: Trajectory, tool: str) -> int:
    return next(
        i for i, m in enumerate(traj.messages)
        if m["role"] == "assistant" and any(c["function"]["name"] == tool for c in m.get("tool_calls", []))
    )  # fmt: skip


def _failed(report: Any) -> set[str]:
    return set(report.failed_checks())


def test_planted_guidance_leak_is_caught_by_the_leak_check(
    guided: list[Trajectory], tasks: list[Task], parcel
) -> None:  # type: ignore[no-untyped-def]
    traj, task = guided[1], tasks[1]
    guidance = build_guidance(task)
    last = len(traj.messages) - 1
    leaked = _edit(traj, last, content=traj.messages[last]["content"] + "\n" + guidance.text.splitlines()[-1])
    report = verify_trajectory(leaked, task, sandbox=parcel.sandbox, bundle=parcel.bundle, guidance=guidance)
    assert _failed(report) == {"leak"}
    by_id = {t.id: t for t in tasks}
    assert leaked_trajectories([traj, leaked], by_id) == [leaked.id]
    talk = _edit(traj, last, content="As the expected answer says, " + traj.messages[last]["content"])
    assert check_leak(talk.messages, None).passed is False
    assert check_leak(traj.messages, guidance).passed is True


def test_planted_hallucinated_id_is_caught_by_the_grounding_check(
    guided: list[Trajectory], tasks: list[Task], parcel
) -> None:  # type: ignore[no-untyped-def]
    traj, task = guided[0], tasks[0]
    turn = _reasoning_turn(traj, "approve_claim")
    real = json.loads(traj.messages[turn]["tool_calls"][0]["function"]["arguments"])["claim_id"]
    other = next(
        k for k in sorted(task.init_config["claims"]) if k not in json.dumps(list(traj.messages[:turn]))
    )
    call = json.loads(json.dumps(traj.messages[turn]["tool_calls"][0]))
    call["function"]["arguments"] = json.dumps({"claim_id": other})
    text = traj.messages[turn]["content"].replace(real, other)
    bad = _edit(traj, turn, content=text, tool_calls=[call])
    verdict = check_grounding(bad.messages, parcel.bundle.tools, task.init_config)
    assert verdict.passed is False and any(other in p for p in verdict.problems)
    assert check_grounding(traj.messages, parcel.bundle.tools, task.init_config).passed is True
    number = _edit(traj, turn, content=traj.messages[turn]["content"] + " It is worth 98765.43.")
    assert check_grounding(number.messages, parcel.bundle.tools, task.init_config).passed is False


def test_a_fact_inside_a_longer_word_is_not_claimed() -> None:
    """'Subscription.PlanCode', named by the request, does not claim the unseen 'subscription.plan' of
    another field; the unseen value said as itself is still caught."""
    state = {"field_mappings": {"FIE-003": {"field_mapping_id": "FIE-003", "source_field": "Subscription.PlanCode",
                                            "target_field": "subscription.plan"}}}  # fmt: skip
    request = {
        "role": "user",
        "content": "Tell me the transform of the mapping with source field 'Subscription.PlanCode'.",
    }
    said = {
        "role": "assistant",
        "content": "I look for the mapping whose source field is Subscription.PlanCode.",
    }
    assert check_grounding([request, said], [], state).passed is True
    unseen = {"role": "assistant", "content": "Its target field is subscription.plan."}
    verdict = check_grounding([request, unseen], [], state)
    assert verdict.passed is False and "subscription.plan" in verdict.problems[0]


def test_planted_contradiction_is_caught_by_the_consistency_check(
    guided: list[Trajectory], tasks: list[Task], parcel
) -> None:  # type: ignore[no-untyped-def]
    traj, task = guided[0], tasks[0]
    turn = _reasoning_turn(traj, "approve_claim")
    claim_id = json.loads(traj.messages[turn]["tool_calls"][0]["function"]["arguments"])["claim_id"]
    observed = task.init_config["claims"][claim_id]["status"]
    wrong = next(s for s in ("approved", "rejected", "paid", "closed") if s != observed)
    bad = _edit(traj, turn, content=traj.messages[turn]["content"] + f" {claim_id} has status {wrong}.")
    report = verify_trajectory(bad, task, sandbox=parcel.sandbox, bundle=parcel.bundle)
    assert _failed(report) == {"consistency"}
    right = _edit(traj, turn, content=traj.messages[turn]["content"] + f" {claim_id} has status {observed}.")
    assert check_consistency(right.messages, task.init_config).passed is True
    last = len(traj.messages) - 1
    miscount = _edit(traj, last, content="I made 7 tool calls and 7 succeeded.")
    assert check_consistency(miscount.messages, task.init_config).passed is False
    # the closing's own claims are checked too: how many steps were refused, or that none was
    calls = sum(1 for m in traj.messages if m.get("role") == "tool")
    wrong = _edit(traj, last, content=f"2 of the {calls} steps were refused by the system.")
    assert check_consistency(wrong.messages, task.init_config).passed is False
    tool_turn = max(i for i, m in enumerate(traj.messages) if m.get("role") == "tool")
    refused = _edit(
        traj, tool_turn, content='{"data":null,"error":{"code":"not_found","message":"no claim"},"ok":false}'
    )
    said = _edit(refused, last, content=ALL_WENT_THROUGH[0])
    assert check_consistency(said.messages, task.init_config).passed is False
    honest = _edit(refused, last, content=closing([True] * (calls - 1) + [False], "t"))
    assert check_consistency(honest.messages, task.init_config).passed is True


def test_continuity_needs_reasoning_and_an_acknowledged_error(guided: list[Trajectory]) -> None:
    traj = guided[0]
    turn = _reasoning_turn(traj, "approve_claim")
    silent = _edit(traj, turn, content="")
    assert check_continuity(silent.messages, "answer").passed is False
    assert check_continuity(traj.messages, "budget").passed is False
    failed = _edit(
        traj, turn + 1, content='{"data":null,"error":{"code":"not_found","message":"no claim"},"ok":false}'
    )
    verdict = check_continuity(failed.messages, "answer")
    assert verdict.passed is False and "without addressing the error" in verdict.problems[0]
    assert check_continuity(traj.messages, "answer").passed is True


def test_correctness_runs_verifier_code_in_the_sandbox(
    guided: list[Trajectory], tasks: list[Task], parcel
) -> None:  # type: ignore[no-untyped-def]
    program, task = guided[2], tasks[2]
    assert program.verification is not None and program.verification.correctness.passed is True
    wrong = program.model_copy(update={"answer": {"claim_ids": ["CLA-999"]}})
    report = verify_trajectory(wrong, task, sandbox=parcel.sandbox, bundle=parcel.bundle)
    assert report.correctness.passed is False and any(p.startswith("T1") for p in report.correctness.problems)
    no_state = verify_trajectory(program, task)
    assert no_state.correctness.passed is None and not no_state.passed


def test_retained_trajectories_never_hold_guidance(guided: list[Trajectory], tasks: list[Task]) -> None:
    for traj, task in zip(guided, tasks, strict=True):
        guidance = build_guidance(task)
        dumped = traj.model_dump_json()
        assert guidance.text == "" or guidance.text not in dumped
        assert "PRIVILEGED GUIDANCE" not in dumped


def test_guidance_raises_yield_where_the_outcome_is_the_hard_part(
    guided: list[Trajectory], unguided: list[Trajectory]
) -> None:
    rows = {(r.paradigm, r.guidance): r for r in pass_rates(list(guided) + list(unguided))}
    assert rows[("dag_challenge", "outcome")].rates["verified"] == 1.0
    assert rows[("dag_challenge", "none")].rates["verified"] == 0.0
    assert rows[("program", "outcome")].verified > rows[("program", "none")].verified
    # DAG-Standard gets no guidance, so both runs are the same trajectories
    assert rows[("dag_standard", "none")].total == 4 and rows[("dag_standard", "none")].verified == 4
    assert all(r.grounded == r.total for r in rows.values())


def test_summary_numbers_for_asset_metadata(guided: list[Trajectory], unguided: list[Trajectory]) -> None:
    numbers = summarize(list(guided) + list(unguided))
    assert numbers["trajectories"] == 10 and numbers["verified"] == 8 and numbers["yield"] == 0.8
    assert numbers["grounding_pass_rate"] == 1.0 and numbers["correctness_pass_rate"] == 0.8
    assert numbers["yield/dag_challenge/outcome"] == 1.0 and numbers["yield/dag_challenge/none"] == 0.0


def test_guidance_ablation_plot_is_written(
    guided: list[Trajectory], unguided: list[Trajectory], tmp_path: Path
) -> None:
    path = guidance_ablation_png(pass_rates(guided), pass_rates(unguided), tmp_path / "ablation.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
