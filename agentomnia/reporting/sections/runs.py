"""Sections on the round's rollouts and what was trained on them: trajectories, datasets, checkpoints
and the reward-model calibration."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from agentomnia.catalog import (
    REWARD_AUDIT,
    REWARD_MODEL_REPORT,
    ROLLOUT_ANALYSIS,
    TRAJECTORIES,
    VERIFIED_TRAJECTORIES,
    Artifact,
)
from agentomnia.reporting.markdown import markdown_html
from agentomnia.reporting.model import Section
from agentomnia.reporting.reader import RoundReader
from agentomnia.reporting.widgets import details, heading, pairs, table
from agentomnia.trajectories.models import Trajectory
from agentomnia.trajectories.synthesis import pass_rates, summarize


def trajectories(r: RoundReader, s: Section) -> None:
    if not r.need(s, TRAJECTORIES.name, TRAJECTORIES):
        return
    runs = r.artifacts.trajectories()
    # Grouped by the guidance each run was given, not by which teacher run made it: paradigms that take
    # no guidance run alike in both, and the records do not say which run they came from.
    groups: dict[str, list[Trajectory]] = defaultdict(list)
    for t in runs:
        groups[t.guidance].append(t)
    rows = []
    for group_label, group in [*sorted(groups.items()), ("all", runs)]:
        numbers = summarize(group)
        rows.append(
            {
                "guidance": group_label,
                "trajectories": numbers["trajectories"],
                "verified": numbers["verified"],
                "yield": numbers["yield"],
                "correctness": numbers["correctness_pass_rate"],
                "grounding": numbers["grounding_pass_rate"],
                "consistency": numbers["consistency_pass_rate"],
                "continuity": numbers["continuity_pass_rate"],
                "no leak": numbers["leak_pass_rate"],
                "mean steps": numbers["mean_steps"],
                "stopped by error": numbers["stopped_by_error"],
            }
        )
    s.add(table(rows, caption="trajectory yield and check pass rates"))
    paradigms = [
        {"paradigm": p.paradigm, "guidance": p.guidance, "trajectories": p.total, **p.rates}
        for p in pass_rates(runs)
    ]
    s.add(details("pass rates by paradigm and guidance", table(paradigms), open_=True))
    if r.need(s, "verified trajectories", VERIFIED_TRAJECTORIES):
        s.add(pairs({"trajectories kept for training": r.artifacts.row_count(VERIFIED_TRAJECTORIES)}))
    plot = r.artifacts.location(TRAJECTORIES, "ablation")
    if plot.exists():
        s.add(r.image(plot, "verified rate per paradigm, with and without guidance"))


def _datasets(r: RoundReader, s: Section) -> None:
    numbers: dict[str, Any] = {}
    sft = r.need_path(s, "SFT dataset", r.store.dataset_dir("sft", r.key) / "openai.jsonl")
    if sft:
        with sft.open(encoding="utf-8") as handle:
            numbers["SFT rows"] = sum(1 for line in handle if line.strip())
    rl = r.need_path(s, "RL dataset", r.store.dataset_dir("rl", r.key) / "items.json")
    if rl:
        items = json.loads(rl.read_text(encoding="utf-8"))
        numbers["RL items"] = len(items)
        levels = Counter(str(i.get("level")) for i in items if isinstance(i, dict))
        numbers["RL items by level"] = dict(sorted(levels.items()))
    if numbers:
        s.add(pairs(numbers, caption="training datasets"))


def _checkpoints(r: RoundReader, s: Section) -> None:
    for checkpoint, kind in (("SFT checkpoint", "sft"), ("RL checkpoint (GRPO)", "rl")):
        folder = r.store.checkpoint_dir(kind, r.key)
        report_path = r.need_path(s, checkpoint, folder / "train_report.json")
        if report_path is None:
            continue
        # read as plain JSON: the trainers' TrainReport model lives above the engine, which never imports it
        data = json.loads(report_path.read_text(encoding="utf-8"))
        first, last = data.get("first_loss"), data.get("last_loss")
        numbers = {
            "trainer": data.get("kind"),
            "steps": data.get("steps"),
            "seconds": round(float(data.get("seconds") or 0.0), 1),
            "first loss": first,
            "last loss": last,
            "loss drop": (first - last) / abs(first)
            if isinstance(first, float) and isinstance(last, float) and first
            else None,
        }
        extra = data.get("extra") or {}
        if isinstance(extra.get("rewards"), list) and extra["rewards"]:
            numbers["mean reward, last step"] = extra["rewards"][-1][1]
        if "dropped_rollouts" in extra:
            numbers["dropped rollouts"] = extra["dropped_rollouts"]
        s.add(heading(3, checkpoint) + pairs(numbers))
        r.images_in(s, folder, f"{checkpoint} curves")


def _calibration(r: RoundReader, s: Section) -> None:
    a = r.artifacts
    if not r.need(s, "reward-model calibration", REWARD_MODEL_REPORT, "report"):
        return
    data = a.reward_model_report() or {}
    minimums = {}
    if a.exists(REWARD_MODEL_REPORT):
        minimums = {str(row["dimension"]): row.get("minimum") for row in a.rows(REWARD_MODEL_REPORT)}
    scores = [
        {"dimension": d, "score": v, "minimum": minimums.get(d)}
        for d, v in (data.get("scores") or {}).items()
    ]
    s.add(
        heading(3, "reward-model calibration")
        + table(scores)
        + pairs(
            {
                "C_RM": data.get("c_rm", data.get("overall")),
                "failed minimums": ", ".join(data.get("failed_minimums") or ()) or "none",
                "λ, ε": f"{data.get('lam')}, {data.get('eps')}",
                "passed": data.get("passed"),
                "failures": data.get("failures") or "none",
            }
        )
    )
    plot = a.location(REWARD_MODEL_REPORT, "plot")
    if plot.exists():
        s.add(r.image(plot, "reward-model calibration"))


def _markdown(r: RoundReader, s: Section, artifact: Artifact, title: str) -> None:
    """A table an asset wrote as Markdown (the rollout analysis, the reward audit), rendered."""
    path = r.artifacts.location(artifact, "markdown")
    if path.is_file():
        s.add(heading(3, title) + markdown_html(path.read_text(encoding="utf-8")))


def training(r: RoundReader, s: Section) -> None:
    _datasets(r, s)
    _checkpoints(r, s)
    _calibration(r, s)
    _markdown(r, s, ROLLOUT_ANALYSIS, "rollout analysis")
    _markdown(r, s, REWARD_AUDIT, "reward-hacking audit")
