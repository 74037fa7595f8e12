"""Trajectory synthesis over many tasks: guidance, teacher, user simulator, rollout, verification.

For each task the teacher gets the guidance its paradigm calls for (or none, to measure what the
guidance is worth), runs through the rollout loop against the task's bundle, and the result is
verified at once while its final state is still at hand. A task whose bundle is missing or whose run
crashes still yields a trajectory (stopped with `error`, failing verification), so nothing vanishes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from agentomnia.llm.protocol import LLM
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.models import Task
from agentomnia.trajectories.agents import TeacherFactory, llm_teacher, offline_teacher
from agentomnia.trajectories.guidance import GUIDANCE_KIND, Guidance, build_guidance
from agentomnia.trajectories.messages import system_message, user_message
from agentomnia.trajectories.models import RolloutResult, Trajectory
from agentomnia.trajectories.quality import verify_trajectory
from agentomnia.trajectories.rollout import reference_plan, rollout, system_prompt
from agentomnia.trajectories.users import make_user


def to_trajectory(
    task: Task, result: RolloutResult, *, policy: str, guidance: Guidance, attempt: int = 0
) -> Trajectory:
    return Trajectory(
        task_id=task.id,
        env_id=task.env_id,
        task_kind=task.kind,
        policy=policy,
        interaction=task.interaction,
        messages=tuple(result.messages),
        steps=tuple(result.steps),
        initial_hash=result.initial_hash,
        answer=result.answer,
        stop_reason=result.stop_reason,
        guidance=guidance.kind,
        attempt=attempt,
        error=result.error,
    )


def _failed_run(
    task: Task, bundle: Bundle | None, reason: str, policy: str, guidance: Guidance
) -> Trajectory:
    prompt = (
        system_prompt(bundle) if bundle is not None else "The environment of this task could not be opened."
    )
    return Trajectory(
        task_id=task.id, env_id=task.env_id, task_kind=task.kind, policy=policy, interaction=task.interaction,
        messages=(system_message(prompt), user_message(task.query), {"role": "assistant", "content": ""}),
        stop_reason="error", guidance=guidance.kind, error=reason,
    )  # fmt: skip


def generate_trajectories(
    tasks: Iterable[Task],
    bundles: Mapping[str, Bundle],
    sandbox: Sandbox,
    *,
    teacher: TeacherFactory | Literal["offline", "llm"] = "offline",
    guidance: bool = True,
    llm: LLM | None = None,
    max_steps: int = 30,
    verify: bool = True,
    fallback: bool = True,
) -> list[Trajectory]:
    """One verified trajectory per task. `teacher="llm"` needs `llm`; with an llm the user simulator
    and the judge are model-backed too, otherwise everything is offline and deterministic. With the
    model as teacher and `fallback`, a task whose model run fails verification is also run by the
    offline teacher: both runs are kept (the model's as a rejected record with its reasons)."""
    backup = None
    if teacher == "llm":
        if llm is None:
            raise ValueError("teacher='llm' needs an llm; pass llm=... or use teacher='offline'")
        factory: TeacherFactory = llm_teacher(llm)
        backup = offline_teacher if fallback else None
    elif teacher == "offline":
        factory = offline_teacher
    else:
        factory = teacher
    out: list[Trajectory] = []
    for task in tasks:
        hint = build_guidance(task, enabled=guidance)
        bundle = bundles.get(task.env_id)
        if bundle is None:
            out.append(_failed_run(task, None, f"no bundle for environment {task.env_id}", "none", hint))
            continue
        for make in (factory, backup):
            if make is None:
                continue
            traj = _run(task, bundle, sandbox, make, hint, llm=llm, max_steps=max_steps, verify=verify)
            out.append(traj)
            if traj.verified or not verify:
                break
    return out


def _run(
    task: Task,
    bundle: Bundle,
    sandbox: Sandbox,
    make: TeacherFactory,
    hint: Guidance,
    *,
    llm: LLM | None,
    max_steps: int,
    verify: bool,
) -> Trajectory:
    try:
        plan = reference_plan(task, bundle, sandbox)
        agent = make(task, plan, hint, bundle)
        result = rollout(task, bundle, sandbox, agent, user=make_user(task, llm), max_steps=max_steps)
    except Exception as exc:  # one task's failure is that task's record, not the batch's end
        return _failed_run(task, bundle, f"{type(exc).__name__}: {exc}", "unknown", hint)
    traj = to_trajectory(task, result, policy=agent.name, guidance=hint)
    if verify:
        report = verify_trajectory(
            traj,
            task,
            final_state=result.final_state,
            sandbox=sandbox,
            bundle=bundle,
            guidance=hint,
            llm=llm,
        )
        traj = traj.with_verification(report)
    return traj


class PassRates(BaseModel):
    """Yield per paradigm: how many trajectories were made and how many passed each check."""

    paradigm: str
    guidance: str
    total: int
    correct: int
    grounded: int
    consistent: int
    continuous: int
    leak_free: int
    verified: int
    rates: dict[str, float] = Field(default_factory=dict)


def training_runs(trajectories: Sequence[Trajectory]) -> list[Trajectory]:
    """The runs training keeps: verified, with the guidance their task kind is designed to get (so
    the plain runs of the guidance ablation stay out, and DAG-Standard runs, which get none by
    design, stay in), one per trajectory id. With no such run, every verified run."""
    kept: dict[str, Trajectory] = {}
    for t in trajectories:
        if t.verified and t.guidance == GUIDANCE_KIND.get(t.task_kind, "none"):
            kept.setdefault(t.id, t)
    return list(kept.values()) or [t for t in trajectories if t.verified]


def pass_rates(trajectories: Sequence[Trajectory]) -> list[PassRates]:
    """Per (paradigm, guidance kind) counts and rates: the shape of the paper's Table 7 and Figure 14
    when run once with guidance and once without."""
    groups: dict[tuple[str, str], list[Trajectory]] = defaultdict(list)
    for t in trajectories:
        groups[(t.task_kind, t.guidance)].append(t)
    rows: list[PassRates] = []
    for (kind, hint), group in sorted(groups.items()):

        def count(name: str, group: list[Trajectory] = group) -> int:
            return sum(
                1
                for t in group
                if t.verification is not None and getattr(t.verification, name).passed is True
            )

        counts: dict[str, Any] = {
            "correct": count("correctness"), "grounded": count("grounding"), "consistent": count("consistency"),
            "continuous": count("continuity"), "leak_free": count("leak"),
            "verified": sum(1 for t in group if t.verified),
        }  # fmt: skip
        rates = {k: round(v / len(group), 4) for k, v in counts.items()}
        rows.append(PassRates(paradigm=kind, guidance=hint, total=len(group), rates=rates, **counts))
    return rows


def summarize(trajectories: Sequence[Trajectory]) -> dict[str, Any]:
    """Flat numbers for an asset's metadata: yield and check pass rates overall and per paradigm."""
    total = len(trajectories)
    verified = [t for t in trajectories if t.verified]
    out: dict[str, Any] = {
        "trajectories": total,
        "verified": len(verified),
        "yield": round(len(verified) / total, 4) if total else 0.0,
        "mean_steps": round(sum(len(t.steps) for t in trajectories) / total, 2) if total else 0.0,
        "stopped_by_error": sum(1 for t in trajectories if t.stop_reason == "error"),
    }
    for check in ("correctness", "grounding", "consistency", "continuity", "leak"):
        passed = sum(
            1
            for t in trajectories
            if t.verification is not None and getattr(t.verification, check).passed is True
        )
        out[f"{check}_pass_rate"] = round(passed / total, 4) if total else 0.0
    for row in pass_rates(trajectories):
        out[f"yield/{row.paradigm}/{row.guidance}"] = row.rates.get("verified", 0.0)
    return out


def leaked_trajectories(trajectories: Iterable[Trajectory], tasks: Mapping[str, Task]) -> list[str]:
    """Ids of trajectories whose messages contain any fragment of their task's guidance (an asset
    check: must be empty). Guidance is rebuilt from the task, so the check needs nothing stored."""
    from agentomnia.trajectories.quality import check_leak

    leaked = []
    for traj in trajectories:
        task = tasks.get(traj.task_id)
        if task is None:
            continue
        if check_leak(traj.messages, build_guidance(task), public_text=task.query).passed is False:
            leaked.append(traj.id)
    return leaked
