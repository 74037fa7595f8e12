"""Agentic post-training (paper §5): SFT capability bootstrapping, then GRPO with the rollback curriculum."""

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dagster as dg

from agentomnia.catalog import (
    ORIGIN,
    REWARD_AUDIT,
    REWARD_MODEL_REPORT,
    RL,
    RL_DATASET,
    ROLLOUT_ANALYSIS,
    SFT,
    SFT_DATASET,
    START,
    TRAJECTORIES,
    VERIFIED_TRAJECTORIES,
    Catalog,
)
from agentomnia.lineage import Edge, LineageRow
from agentomnia.records import content_hash
from agentomnia.rejection import rejection_lineage, save_rejections
from agentomnia.rewards import (
    AnalysisSettings,
    AuditFlag,
    AuditSettings,
    AuxiliaryWeights,
    CalibrationSettings,
    ScoredRollout,
    analysis_markdown,
    analyze_rollouts,
    audit_markdown,
    audit_rollouts,
    judge_calibration,
    permissive_rejection,
    permissive_rubric_findings,
)
from agentomnia.rewards.analysis import group_of
from agentomnia.rewards.judges import outcome_groups, transcript_judge
from agentomnia.storage import read_parquet, write_parquet
from agentomnia.tasks.models import Task
from agentomnia.trajectories.rl import load_attempts, round_split
from agentomnia.trajectories.rollout import replay
from agentomnia_assets._common import llm_usage, png, round_asset
from agentomnia_assets.partitions import parent_round
from resources import LineageResource, LLMResource, SandboxResource, StorageResource


class SFTConfig(dg.Config):
    base_model_path: str = ""  # a local Hugging Face checkpoint; empty = the tiny offline Qwen3
    max_steps: int = 40
    learning_rate: float = 3e-3
    max_length: int | None = None  # tokens per SFT row; None: the model's context window
    # the tiny offline model's language-model warm-up, 8 windows of 256 tokens a step, on the round's
    # rendered rows (about 20 s on two CPU cores); without it the model learns next to nothing in 40 SFT
    # steps. 400 steps of 8 windows beat 300 of 16 on half the tokens (r0, two seeds: SFT loss 0.976 and
    # 1.032 against 1.014 and 1.056, action likelihood 0.030 and 0.032 against 0.029 and 0.028)
    pretrain_steps: int = 400
    # Continual post-training (§6.3): a round starts from the previous round's most trained
    # checkpoint, and mixes in rows of earlier rounds so the agent keeps what it learned.
    continue_from_previous: bool = True
    # of the training mix, rows replayed from earlier rounds. Half: r1 of a default run, trained from
    # r0's checkpoint on its 16 new rows, kept the call format r0 taught at 0.49-0.63 (3 seeds) with
    # half, and fell to 0.37-0.48 with a quarter (59 held-out reference steps; start 0.42)
    replay_share: float = 0.5


def _round_number(key: str) -> int | None:
    return int(key[1:]) if key[:1] == "r" and key[1:].isdigit() else None


def previous_checkpoint(store: Any, round_key: str, parent: str | None) -> tuple[str, Path] | None:
    """(round, folder) of the checkpoint this round continues from: the parent round's most trained
    one, else the latest earlier round's (rounds are r0, r1, ...); None for a first round."""
    index = _round_number(round_key)
    earlier = sorted(
        (n for p in (store.root / "checkpoints" / SFT).iterdir() if (n := _round_number(p.name)) is not None)
        if (store.root / "checkpoints" / SFT).is_dir()
        else []
    )
    below = [f"r{n}" for n in reversed(earlier) if index is not None and n < index]
    candidates = ([parent] if parent else []) + below
    for key in candidates:
        folder = store.round(key).latest_checkpoint()
        if folder is not None:
            return key, folder
    return None


def replay_rows(
    store: Any, round_key: str, new_rows: int, share: float, seed: int = 0
) -> list[dict[str, Any]]:
    """Rows of earlier rounds' SFT datasets, `share` of the final mix (at most all of them), drawn
    deterministically."""
    import random

    import datasets

    index = _round_number(round_key)
    if share <= 0 or new_rows == 0 or index is None:
        return []
    pool: list[dict[str, Any]] = []
    for n in range(index):
        folder = store.dataset_dir(SFT, f"r{n}") / "hf"
        if folder.exists():
            pool.extend(datasets.load_from_disk(str(folder)).to_list())
    wanted = min(len(pool), round(new_rows * share / max(1e-9, 1 - share)))
    return random.Random(f"{seed}:{round_key}").sample(pool, wanted) if wanted else []


class GRPOConfig(dg.Config):
    max_steps: int = 3
    num_generations: int = 2


def write_origin(
    folder: Path, start: str, from_round: str | None, new_rows: int, replayed: int, *, trained: bool
) -> None:
    payload = {"started_from": start, "from_round": from_round, "new_rows": new_rows,
               "replayed_rows": replayed, "trained": trained}  # fmt: skip
    (folder / ORIGIN).write_text(json.dumps(payload, indent=1), encoding="utf-8")


def _checkpoint_row(
    context: dg.AssetExecutionContext, kind: str, folder: str, report: dict, parent: str
) -> tuple[LineageRow, Edge]:  # type: ignore[type-arg]
    rid = content_hash({"kind": kind, "folder": folder, "loss": report.get("loss_history")})
    row = LineageRow(id=rid, kind="checkpoint", round=context.partition_key, run_id=context.run.run_id, location=folder,
                     meta={"trainer": kind, "steps": report.get("steps"), "last_loss": report.get("last_loss")})  # fmt: skip
    return row, Edge(child=rid, parent=parent, relation="trained_on")


@round_asset(
    "training",
    deps=[dg.AssetKey(SFT_DATASET)],
    description=(
        "SFT checkpoint (TRL SFTTrainer): assistant-only loss with tool results masked, AdamW, cosine schedule with "
        "warmup; the model, tokenizer, config and loss curve. Offline: a tiny Qwen3 with a locally trained tokenizer."
    ),
)
def sft_checkpoint(
    context: dg.AssetExecutionContext, config: SFTConfig, storage: StorageResource, lineage: LineageResource
) -> dg.MaterializeResult:
    import datasets

    from trainers import ModelSettings, SFTSettings, train_sft

    store = storage.get()
    round_key = context.partition_key
    artifacts = store.round(round_key)
    data = artifacts.dataset_dir(SFT) / "hf"
    out = artifacts.checkpoint_dir(SFT)
    previous = (
        previous_checkpoint(store, round_key, parent_round(context))
        if config.continue_from_previous
        else None
    )
    new_rows = datasets.load_from_disk(str(data)).to_list() if data.exists() else []
    replayed = replay_rows(store, round_key, len(new_rows), config.replay_share)
    if previous is not None:
        start, save_start = str(previous[1]), None
    else:
        start, save_start = (
            config.base_model_path
            or f"tiny offline Qwen3 ({f'pretrained {config.pretrain_steps} steps' if config.pretrain_steps else 'random init'})",
            store.checkpoint_dir(START, round_key),
        )
    if previous is not None and not new_rows:
        # nothing new to learn: the agent goes on unchanged (replay alone would only re-fit old rows)
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(previous[1], out)
        write_origin(out, start, previous[0], 0, 0, trained=False)
        context.log.info(
            f"no new SFT rows in round {round_key}; the checkpoint of {previous[0]} goes on unchanged"
        )
        return dg.MaterializeResult(
            metadata={"steps": 0, "trained": False, "started_from": start, "new_rows": 0, "replayed_rows": 0,
                      "checkpoint": dg.MetadataValue.path(str(out))}
        )  # fmt: skip
    settings = SFTSettings(
        model=ModelSettings(
            path=Path(start) if previous is not None else (config.base_model_path or None),
            pretrain_steps=config.pretrain_steps,
        ),
        max_steps=config.max_steps,
        learning_rate=config.learning_rate,
        max_length=config.max_length,
    )
    report = train_sft([*new_rows, *replayed], out, settings, save_start=save_start)
    write_origin(out, start, previous[0] if previous else None, len(new_rows), len(replayed), trained=True)
    context.log.info(
        f"SFT of round {round_key} started from {start}: {len(new_rows)} new rows, {len(replayed)} replayed"
    )
    dump = json.loads(report.model_dump_json())
    row, edge = _checkpoint_row(context, "sft", str(out), dump, f"dataset:sft:{context.partition_key}")
    lineage.get().record(
        [
            row,
            LineageRow(
                id=f"dataset:sft:{context.partition_key}",
                kind="dataset",
                round=context.partition_key,
                location=str(data),
            ),
        ],
        [edge],
    )
    return dg.MaterializeResult(
        metadata={
            "steps": report.steps,
            "first_loss": round(report.first_loss or 0.0, 4),
            "last_loss": round(report.last_loss or 0.0, 4),
            "loss_drop": round(report.loss_drop or 0.0, 4),
            "seconds": round(report.seconds, 1),
            "trained": True,
            "started_from": start,
            "new_rows": len(new_rows),
            "replayed_rows": len(replayed),
            **{f"truncation_{k}": v for k, v in report.extra.get("truncation", {}).items() if v is not None},
            **{f"pretraining_{k}": v for k, v in (report.extra.get("pretraining") or {}).items()},
            "curves": png(report.plot, "training loss") if report.plot else "no plot",
            "checkpoint": dg.MetadataValue.path(str(out)),
        }
    )


@round_asset(
    "training",
    deps=[
        sft_checkpoint,
        dg.AssetKey(RL_DATASET),
        dg.AssetKey(ROLLOUT_ANALYSIS.name),
        dg.AssetKey(REWARD_AUDIT.name),
    ],
    description=(
        "RL checkpoint: GRPO over the sandbox environments with no KL term and asymmetric clipping (0.2/0.28), "
        "dynamic filtering of broken and truncated rollouts, and the rollback curriculum (golden-prefix replay for "
        "all-fail groups, adaptive prefix lengths, hybrid SFT+GRPO objective). Rewards as the paper routes them: "
        "rule- and rubric-based by task metadata, the judge as safeguard when a rule cannot execute, and the "
        "auxiliary rewards the round's rollout analysis adopted; logs each reward component's mean, the "
        "safeguard's activations and the auxiliary weights; tasks the reward audit found permissive are left out."
    ),
)
def rl_checkpoint(
    context: dg.AssetExecutionContext,
    config: GRPOConfig,
    storage: StorageResource,
    lineage: LineageResource,
    sandbox: SandboxResource,
    llm: LLMResource,
) -> dg.MaterializeResult:
    import datasets

    from agentomnia.trajectories.quality import rubric_judge
    from trainers import GRPOSettings, train_grpo

    store = storage.get()
    artifacts = store.round(context.partition_key)
    data = artifacts.dataset_dir(RL) / "hf"
    if not data.exists():
        # every RL candidate was too easy for the pass@K policy, or none was verified: nothing to learn from
        context.log.warning(
            f"no RL rows for round {context.partition_key}; the RL checkpoint is not trained this round"
        )
        return dg.MaterializeResult(
            metadata={"steps": 0, "rows": 0, "trained": False, "reason": "the RL dataset has no rows"}
        )
    rows = list(datasets.load_from_disk(str(data)))
    permissive = audit_rejected_tasks(artifacts)
    kept = [r for r in rows if _row_task_id(r) not in permissive]
    left_out = len(rows) - len(kept)
    if left_out:
        context.log.info(f"{left_out} RL rows left out: the reward audit found their rubrics permissive")
    rows = kept
    if not rows:
        return dg.MaterializeResult(metadata={"steps": 0, "rows": 0, "trained": False, "left_out_permissive": left_out,
                                              "reason": "every RL row's rubric was found permissive"})  # fmt: skip
    init = artifacts.checkpoint_dir(SFT)
    out = artifacts.checkpoint_dir(RL)
    model = llm.get()
    weights = adopted_weights(store, context.partition_key)
    report = train_grpo(
        rows,
        None,
        sandbox.get(),
        init,
        out,
        GRPOSettings(max_steps=config.max_steps, num_generations=config.num_generations),
        judge=rubric_judge(model) if model is not None else transcript_judge(),
        weights=weights,
    )
    dump = json.loads(report.model_dump_json())
    row, edge = _checkpoint_row(context, "grpo", str(out), dump, f"dataset:rl:{context.partition_key}")
    lineage.get().record(
        [
            row,
            LineageRow(id=f"dataset:rl:{context.partition_key}", kind="dataset", round=context.partition_key),
        ],
        [edge],
    )
    extra = report.extra or {}
    components = extra.get("reward_components") or {}
    context.log.info(
        f"GRPO rewards: {', '.join(f'{k} {v:+.3f}' if v is not None else f'{k} n/a' for k, v in components.items())}; "
        f"safeguard re-scored {extra.get('safeguard_activations', 0)} of {extra.get('scored_rollouts', 0)} "
        f"rollouts; auxiliary weights {extra.get('auxiliary_weights') or 'none adopted'}; "
        f"process stops {extra.get('process_stops') or 'none'}; rewards from rollout end "
        f"{(extra.get('reward_latency') or {}).get('latency_p50_ms')} ms (median)"
    )
    return dg.MaterializeResult(
        metadata={
            **llm_usage(context, store, model),
            "steps": report.steps,
            **{f"reward/{k}": v if v is not None else "n/a" for k, v in components.items()},
            "safeguard_activations": int(extra.get("safeguard_activations", 0)),
            "scored_rollouts": int(extra.get("scored_rollouts", 0)),
            "auxiliary_weights": dg.MetadataValue.json(extra.get("auxiliary_weights") or {}),
            "process_stops": dg.MetadataValue.json(extra.get("process_stops") or {}),
            "reward_streaming": bool(extra.get("reward_streaming", False)),
            "reward_latency": dg.MetadataValue.json(extra.get("reward_latency") or {}),
            "safeguard_judge": f"llm:{model.model}" if model is not None else "offline:transcript",
            **judge_routing(model),
            "rows": len(rows),
            "left_out_permissive": left_out,
            "trained": True,
            "mean_reward_by_step": str(extra.get("rewards", []))[:200],
            "prefix_turns_by_step": str(extra.get("prefix_turns", []))[:200],
            "loss_rl": str(extra.get("loss_rl", []))[:200],
            "loss_ce": str(extra.get("loss_ce", []))[:200],
            "dropped_rollouts": str(extra.get("dropped_rollouts", ""))[:200],
            "seconds": round(report.seconds, 1),
            "curves": png(report.plot, "GRPO rewards and losses") if report.plot else "no plot",
            "checkpoint": dg.MetadataValue.path(str(out)),
        }
    )


class RewardModelConfig(dg.Config):
    repeats: int = 3  # scorings of each outcome, for the consistency dimension
    max_groups: int = 60  # tasks (rollout groups) to calibrate on; 0 = all
    min_overall: float = 0.7  # the minimum C_RM
    lam: float = 0.5  # Eq. 5: weight of the false-positive side of C_Dir
    eps: float = 1e-6  # Eqs. 4-6: the floor under each denominator


@round_asset(
    "training",
    deps=[dg.AssetKey(TRAJECTORIES.name), dg.AssetKey(VERIFIED_TRAJECTORIES.name)],
    description=(
        "Reward-model calibration: the judge that would score rubric items without code checks (LLM mode: the "
        "configured model; offline: a transcript judge that reads only the calls and the answer) is scored "
        "against code-checked rubric items on the round's rollout groups of tasks held out from SFT (gold labels: "
        "the checks run on the end "
        "state, which the judge never sees): rubric reliability (Eq. 4, basic vs advanced items), C_Rank (Kendall "
        "tau-b), C_Dir (Eq. 5, AdvFNR/AdvFPR), C_Mag (Eq. 6, advantage MSE over Var(A_gold)), C_Con (Eq. 7), "
        "C_RM = sum of w_j C_j, with a minimum per dimension."
    ),
)
def reward_model_report(
    context: dg.AssetExecutionContext,
    config: RewardModelConfig,
    storage: StorageResource,
    llm: LLMResource,
    sandbox: SandboxResource,
) -> dg.MaterializeResult:
    from agentomnia.trajectories.quality import rubric_judge

    store, box, model = storage.get(), sandbox.get(), llm.get()
    round_key = context.partition_key
    artifacts = store.round(round_key)
    tasks = {t.id: t for t in artifacts.tasks()}
    runs = artifacts.trajectories()
    bundles = Catalog(store).bundles(t.env_id for t in tasks.values())

    def final_state(task: Task, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        return replay(task, bundles[task.env_id], box, calls)[1]

    # held out: the judge is measured on the tasks the SFT split does not train on (RL candidates)
    sft_ids = set(round_split(artifacts)[0])
    held_out = {i: t for i, t in tasks.items() if i not in sft_ids}
    groups = outcome_groups(held_out, runs, final_state)
    if config.max_groups:
        groups = groups[: config.max_groups]
    judge_name = f"llm:{model.model}" if model is not None else "offline:transcript"
    judge = rubric_judge(model) if model is not None else transcript_judge()
    if not groups:
        return dg.MaterializeResult(metadata={"groups": 0, "judge": judge_name, "passed": False,
                                           "reason": "no task has two or more runs to compare"})  # fmt: skip
    report = judge_calibration(
        groups,
        judge,
        repeats=config.repeats,
        settings=CalibrationSettings(min_overall=config.min_overall, lam=config.lam, eps=config.eps),
    )
    path = artifacts.path(REWARD_MODEL_REPORT, "report")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report.model_dump_json(indent=2))
    write_parquet(
        artifacts.path(REWARD_MODEL_REPORT),
        [
            {
                "dimension": d,
                "score": s,
                "minimum": report.minimums.get(d),
                "weight": report.weights.get(d),
                "failed": d in report.failed_minimums,
            }
            for d, s in report.scores.items()
        ],
    )
    plot = _calibration_png(
        {str(d): v for d, v in report.scores.items()},
        artifacts.path(REWARD_MODEL_REPORT, "plot"),
        {str(d): v for d, v in report.minimums.items()},
    )
    return dg.MaterializeResult(
        metadata={
            **llm_usage(context, store, model),
            "judge": judge_name,
            **judge_routing(model),
            "groups": len(groups),
            "held_out_from_sft": True,
            "outcomes": sum(len(o) for _, o in groups),
            **{d: round(s, 4) if s is not None else "n/a" for d, s in report.scores.items()},
            "C_RM": round(report.c_rm, 4) if report.c_rm is not None else "n/a",
            "failed_minimums": ", ".join(report.failed_minimums) or "none",
            "lambda": report.lam,
            "epsilon": report.eps,
            "adv_fnr": report.adv_fnr if report.adv_fnr is not None else "n/a",
            "adv_fpr": report.adv_fpr if report.adv_fpr is not None else "n/a",
            "undecided_items": report.undecided,
            "passed": report.passed,
            "failures": dg.MetadataValue.md("\n".join(f"- {f}" for f in report.failures) or "_none_"),
            "plot": png(plot, "calibration"),
            "report": dg.MetadataValue.path(str(path)),
        }
    )


def _calibration_png(scores: Mapping[str, float | None], path: Path, minimums: Mapping[str, float]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dims = list(scores)
    values = [float(scores[d] or 0.0) for d in dims]
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.bar(dims, values, color=["#4c72b0" if scores[d] is not None else "#cccccc" for d in dims])
    ax.scatter(
        dims, [minimums.get(d, 0.0) for d in dims], marker="_", s=600, color="#c44e52", label="minimum"
    )
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score")
    ax.set_title("reward-model calibration")
    ax.legend(loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _scored_rollouts(store: Any, round_key: str) -> list[ScoredRollout]:
    """Every rollout of the round (verified or not) with its task, the tools it was offered and its grade."""
    artifacts = store.round(round_key)
    tasks = {t.id: t for t in artifacts.tasks()}
    runs = [r for r in artifacts.trajectories() if r.task_id in tasks]
    bundles, _ = Catalog(store).bundles_lenient({tasks[r.task_id].env_id for r in runs})
    out = []
    for run in runs:
        task = tasks[run.task_id]
        bundle = bundles.get(task.env_id)
        if bundle is not None:
            out.append(ScoredRollout.from_trajectory(run, task, bundle.tools, read_tools=bundle.read_tools))
    return out


def _analysed_rollouts(
    store: Any, round_key: str, settings: AnalysisSettings
) -> tuple[list[ScoredRollout], str]:
    """The rollouts to compare, and which they are: the RL candidates' pass@K attempts (the policy's own
    successes and failures, as §5.2.3 compares them) where they hold both, else the round's trajectories
    (the teacher's runs, which rarely fail)."""
    attempts = load_attempts(store.round(round_key).dataset_dir(RL))
    groups = {group_of(a, settings) for a in attempts}
    if {"successful", "failed"} <= groups:
        return attempts, f"pass@K attempts of the RL candidates ({len(attempts)})"
    return _scored_rollouts(
        store, round_key
    ), "the round's trajectories (the pass@K attempts hold no successes and failures both)"


class RolloutAnalysisConfig(dg.Config):
    min_difference: float = 0.2  # failed rate minus success rate an indicator must reach to be adopted
    min_support: int = 2  # failed rollouts that must show it
    low_reward: float = 0.3  # a failed rollout scores at most this


@round_asset(
    "training",
    deps=[dg.AssetKey(TRAJECTORIES.name), dg.AssetKey(RL_DATASET)],
    description=(
        "Rollout analysis (§5.2.3): behavioural indicators (tool-call anomalies, repeated calls, clarification "
        "not sought, writes without a look at the state, answer fields without evidence) in successful vs "
        "failed rollouts (the RL candidates' pass@K attempts, else the round's trajectories); the indicators "
        "that separate them become auxiliary rewards the round's RL uses."
    ),
)
def rollout_analysis(
    context: dg.AssetExecutionContext, config: RolloutAnalysisConfig, storage: StorageResource
) -> dg.MaterializeResult:
    store = storage.get()
    artifacts = store.round(context.partition_key)
    settings = AnalysisSettings(
        min_difference=config.min_difference, min_support=config.min_support, low_reward=config.low_reward
    )
    rollouts, source = _analysed_rollouts(store, context.partition_key, settings)
    report = analyze_rollouts(rollouts, settings, round_key=context.partition_key)
    table = analysis_markdown(report)
    for role, text in (
        ("report", report.model_dump_json(indent=2)),
        ("weights", report.weights.model_dump_json(indent=2)),
        ("markdown", table),
    ):
        path = artifacts.path(ROLLOUT_ANALYSIS, role)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    write_parquet(
        artifacts.path(ROLLOUT_ANALYSIS),
        [
            {"indicator": x.indicator, "failed_rate": x.failed_rate, "success_rate": x.success_rate,
             "difference": x.difference, "adopted": x.separates, "weight": x.weight, "reason": x.reason}
            for x in report.indicators
        ],
    )  # fmt: skip
    return dg.MaterializeResult(
        metadata={
            "source": source,
            "successful": report.successful,
            "failed": report.failed,
            "excluded": report.excluded,
            "adopted": ", ".join(sorted(report.weights.weights)) or "none",
            "weights": dg.MetadataValue.json(report.weights.weights),
            "table": dg.MetadataValue.md(table),
        }
    )


def judge_routing(model: Any) -> dict[str, Any]:
    """Where a judge over several endpoints sent its requests (requests per endpoint, moved for load)."""
    stats = getattr(model, "stats", None)
    return {"judge_routing": dg.MetadataValue.json(stats())} if callable(stats) else {}


def audit_rejected_tasks(artifacts: Any) -> set[str]:
    """Ids of the round's tasks the reward audit rejected for a permissive rubric (empty: no audit yet)."""
    path = artifacts.location(REWARD_AUDIT, "permissive")
    return {str(r["task_id"]) for r in read_parquet(path)} if path.is_file() else set()


def _row_task_id(row: Mapping[str, Any]) -> str:
    task = row.get("task")
    data = json.loads(task) if isinstance(task, str) else task or {}
    return str(data.get("id", ""))


def adopted_weights(store: Any, round_key: str) -> AuxiliaryWeights | None:
    """The auxiliary weights the round's rollout analysis adopted (None: no analysis yet)."""
    path = store.round(round_key).location(ROLLOUT_ANALYSIS, "weights")
    return AuxiliaryWeights.model_validate_json(path.read_text(encoding="utf-8")) if path.is_file() else None


@round_asset(
    "training",
    deps=[dg.AssetKey(TRAJECTORIES.name)],
    description=(
        "Reward-hacking audit (§5.2.3): high-reward rollouts whose evidence does not support the reward (a value "
        "stated that no tool returned, a 'verified' claim without a check, an optimum without the search, a rubric "
        "item passed by an empty or irrelevant action), each classified as hacking, judge failure, environment "
        "error or permissive rubric; permissive rubrics go back to task synthesis as a rejection reason."
    ),
)
def reward_audit(
    context: dg.AssetExecutionContext, storage: StorageResource, lineage: LineageResource
) -> dg.MaterializeResult:
    store = storage.get()
    artifacts = store.round(context.partition_key)
    report = audit_rollouts(
        _scored_rollouts(store, context.partition_key), AuditSettings(), round_key=context.partition_key
    )
    table = audit_markdown(report)
    for role, text in (("report", report.model_dump_json(indent=2)), ("markdown", table)):
        path = artifacts.path(REWARD_AUDIT, role)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    permissive = permissive_rubric_findings(report)
    write_parquet(
        artifacts.path(REWARD_AUDIT, "permissive"),
        [{"task_id": t, "reason": r} for t, r in permissive],
        columns=["task_id", "reason"],
    )
    # a task whose rubric an empty or irrelevant action passes is rejected, with the reason, beside the
    # tasks synthesis refused: GRPO leaves it out (`rl_checkpoint`) and its lineage says why
    refused = [permissive_rejection(task_id, why) for task_id, why in permissive]
    save_rejections(artifacts.path(REWARD_AUDIT, "rejected"), refused)
    rows, edges = rejection_lineage(refused, round_key=context.partition_key, run_id=context.run.run_id)
    if rows:
        lineage.get().record(rows, edges)
    write_parquet(
        artifacts.path(REWARD_AUDIT),
        [json.loads(f.model_dump_json()) for f in report.flags],
        columns=sorted(AuditFlag.model_fields),
    )
    return dg.MaterializeResult(
        metadata={
            "audited": report.audited,
            "flags": len(report.flags),
            **{f"flags/{k}": v for k, v in sorted(report.counts().items())},
            "permissive_rubrics": len(permissive),
            "table": dg.MetadataValue.md(table),
        }
    )
