"""OmniaBench (paper §6): the held-out benchmark and the evaluation of a round's policies on it."""

import contextlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import dagster as dg

from agentomnia import progress
from agentomnia.catalog import (
    CHECKPOINT,
    CHECKPOINT_RL,
    CHECKPOINT_SFT,
    EVALUATIONS,
    LEARNING,
    ORIGIN,
    RL_CHECKPOINT,
    SFT,
    START,
    TASK_ARTIFACTS,
    Catalog,
)
from agentomnia.lineage import Edge, lineage_row
from agentomnia.omniabench.decoders import DecoderPool, decoder_count
from agentomnia.omniabench.metrics import EvalReport
from agentomnia.omniabench.models import EvalResult
from agentomnia.omniabench.plots import l1_scatter_png, pass_by_route_png
from agentomnia.omniabench.service import (
    EvaluationOutcome,
    SplitSettings,
    load_results,
    policy_slug,
    require_benchmark,
    run_evaluation,
    split_round,
)
from agentomnia.processes import may_start_processes
from agentomnia.storage import Storage, write_parquet
from agentomnia_assets._common import count_table, llm_usage, md_table, png, round_asset, round_check
from resources import EmbedderResource, LineageResource, LLMResource, SandboxResource, StorageResource


class SplitConfig(dg.Config):
    fraction: float = 0.25  # share of the base round's tasks held out
    max_items: int = 0  # 0 = no cap
    ngram_threshold: float = 0.6  # word 3-gram Jaccard at or above which two queries are near-duplicates
    embedding_threshold: float = 0.92  # embedding cosine at or above which two queries are near-duplicates
    max_per_cluster: int = (
        2  # benchmark items kept from one near-duplicate cluster; the rest leave training too
    )
    rebuild: bool = False  # replace the existing benchmark (earlier results stop being comparable)


@round_asset(
    "omniabench",
    deps=[dg.AssetKey(a.name) for a in TASK_ARTIFACTS],
    description=(
        "The held-out OmniaBench split. The base round holds out a stratified share of its tasks (split x L1 x "
        "route, covering every capability and atom present) across the DAG, DAG-S, program and solver routes, "
        "deduplicated against the training rest by word 3-gram and embedding similarity, with a fixed "
        "challenging subset; later rounds keep their training tasks away from it. Training reads only what "
        "this asset leaves to it."
    ),
)
def omniabench_split(
    context: dg.AssetExecutionContext,
    config: SplitConfig,
    storage: StorageResource,
    lineage: LineageResource,
    embedder: EmbedderResource,
) -> dg.MaterializeResult:
    store = storage.get()
    round_key = context.partition_key
    tasks = store.round(round_key).tasks()
    settings = SplitSettings(
        fraction=config.fraction, max_items=config.max_items or None, ngram_threshold=config.ngram_threshold,
        embedding_threshold=config.embedding_threshold, rebuild=config.rebuild,
        max_per_cluster=config.max_per_cluster,
    )  # fmt: skip
    outcome = split_round(store, round_key, tasks, embedder.get(), settings)
    split = outcome.split
    if outcome.created:
        row = lineage_row(split, run_id=context.run.run_id, location=str(store.root / "benchmark"),
                          meta={"items": len(split.items), "thresholds": split.thresholds})  # fmt: skip
        edges = [Edge(child=split.id, parent=tid, relation="holds_out") for tid in split.task_ids]
        lineage.get().record([row], edges)
    routes = Counter(i.route for i in split.items)
    return dg.MaterializeResult(
        metadata={
            "benchmark_id": split.id,
            "built_this_round": outcome.created,
            "benchmark_items": len(split.items),
            "challenging_items": sum(1 for i in split.items if i.challenging),
            "round_tasks": len(tasks),
            "training_tasks": len(outcome.training),
            "excluded_near_benchmark": len(outcome.excluded),
            "cluster_members_dropped": len(split.dropped),
            "ngram_threshold": split.thresholds.get("ngram_jaccard", config.ngram_threshold),
            "embedding_threshold": split.thresholds.get("embedding_cosine", config.embedding_threshold),
            "by_route": md_table([{"route": r, "items": n} for r, n in sorted(routes.items())]),
            "by_split": md_table(
                [{"split": k, "items": v} for k, v in sorted(split.strata.get("split", {}).items())]
            ),
            "by_l1": md_table(
                [
                    {"l1": k, "items": v}
                    for k, v in sorted(split.strata.get("l1", {}).items(), key=lambda kv: -kv[1])
                ]
            ),
            "excluded": md_table([e.model_dump() for e in outcome.excluded[:40]]),
        }
    )


def _guard(
    storage: StorageResource, sandbox: SandboxResource, policy: str
) -> tuple[EvalReport, list[EvalResult]]:
    """One trial of a privileged or vacuous policy over the whole benchmark, recorded nowhere."""
    from agentomnia.omniabench.metrics import report
    from agentomnia.omniabench.policies import make_policy
    from agentomnia.omniabench.runner import evaluate

    store = storage.get()
    split, tasks = require_benchmark(store)
    box = sandbox.get()
    name, factory = make_policy(policy, sandbox=box)
    results = evaluate(
        tasks, {i.task_id: i for i in split.items}, Catalog(store).bundles(t.env_id for t in tasks), box, factory,
        policy_name=name, eval_id=f"guard-{policy_slug(name)}", trials=1, workers=box.config.workers,
    )  # fmt: skip
    return report(results, k=1), results


@round_check(
    omniabench_split,
    description="The reference solution scores 1.0 on every benchmark task.",
)
def reference_solves_every_item(
    context, storage: StorageResource, sandbox: SandboxResource
) -> dg.AssetCheckResult:  # type: ignore[no-untyped-def]
    _, results = _guard(storage, sandbox, "reference")
    failed = [r for r in results if not r.passed]
    return dg.AssetCheckResult(
        passed=not failed,
        metadata={
            "items": len(results),
            "not_solved": md_table(
                [
                    {
                        "task": r.task_id,
                        "route": r.route,
                        "score": r.score,
                        "infra_error": r.infra_error or "",
                    }
                    for r in failed[:30]
                ]
            ),  # fmt: skip
        },
    )


@round_check(
    omniabench_split,
    description="baseline:noop scores exactly 0 on every benchmark task (no vacuous credit).",
)
def noop_scores_zero(context, storage: StorageResource, sandbox: SandboxResource) -> dg.AssetCheckResult:  # type: ignore[no-untyped-def]
    _, results = _guard(storage, sandbox, "baseline:noop")
    passing = [r for r in results if r.passed or (r.score or 0.0) > 0.0]
    return dg.AssetCheckResult(
        passed=not passing,
        metadata={
            "items": len(results),
            "vacuous_credit": md_table(
                [{"task": r.task_id, "route": r.route, "score": r.score} for r in passing[:30]]
            ),
        },  # fmt: skip
    )


class EvalConfig(dg.Config):
    # policy specs (see agentomnia.omniabench.policies), plus this round's trained agent: "checkpoint:rl",
    # "checkpoint:sft", or "checkpoint" (the most trained of the two), each evaluated under its spec's name.
    # Two or more policies also give the L1 scatter of the first two (paper Figure 17). The trained agent
    # comes first: the failure sensor evolves on it (AGENTOMNIA_EVOLVE_ON names another policy).
    policies: list[str] = [CHECKPOINT_RL, CHECKPOINT_SFT, "baseline:heuristic"]
    trials: int = 3
    max_steps: int = 20
    limit: int = 0  # evaluate only the first N benchmark items (0 = all)
    checkpoint_trials: int = 1  # trials for hf: policies (greedy decoding repeats itself)
    max_new_tokens: int = 96  # per assistant turn of hf: policies (a call takes ~40 tokens of the tiny model)
    # processes that decode hf: policies, their trials side by side; None: one per core on a CPU (at
    # most four), 0: in this process, one trial at a time
    decoders: int | None = None


def _resolve(spec: str, store: Storage, round_key: str) -> str | None:
    """The policy spec to run: `checkpoint...` becomes hf:<the round's folder>, None when untrained."""
    if not spec.startswith(CHECKPOINT):
        return spec
    folder = store.round(round_key).trained_checkpoint(spec)
    return f"hf:{folder}" if folder is not None else None


@round_asset(
    "omniabench",
    deps=[omniabench_split, dg.AssetKey(RL_CHECKPOINT)],
    description=(
        "Evaluation of the round's policies on OmniaBench: K trials per task, pass@1 (exactly 1.0), pass@k, pass^k, "
        "by route, split, L1 domain, capability and atom; infrastructure errors kept apart; every failed trial "
        "tagged (wrong tool, invalid arguments, wrong order, hallucinated value, ...) into the DuckDB failure "
        "table the self-evolution sensor watches."
    ),
)
def omniabench_eval(
    context: dg.AssetExecutionContext,
    config: EvalConfig,
    storage: StorageResource,
    lineage: LineageResource,
    llm: LLMResource,
    embedder: EmbedderResource,
    sandbox: SandboxResource,
) -> dg.MaterializeResult:
    store, box, model = storage.get(), sandbox.get(), llm.get()
    round_key = context.partition_key
    resolved = {spec: _resolve(spec, store, round_key) for spec in config.policies}
    skipped = [
        f"{spec}: no trained checkpoint in round {round_key}" for spec, p in resolved.items() if p is None
    ]
    checkpoints = [p[3:] for p in resolved.values() if p is not None and p.startswith("hf:")]
    processes = decoder_count() if config.decoders is None or not may_start_processes() else config.decoders
    by_spec: dict[str, EvaluationOutcome] = {}
    # the run's progress line counts the trials of every policy (`160/170 trials, 7.1/s`)
    tasks = len(require_benchmark(store)[1])
    tasks = min(tasks, config.limit) if config.limit else tasks
    total = sum(tasks * (config.checkpoint_trials if p.startswith("hf:") else config.trials)
                for p in resolved.values() if p is not None)  # fmt: skip
    done = [0]

    def one_more(_: EvalResult) -> None:
        done[0] += 1
        progress.report(context.op_def.name, done[0], total, "trials")

    with contextlib.ExitStack() as stack:
        stack.callback(progress.clear, context.op_def.name)
        # the decoder processes start and load the checkpoints while the other policies run first
        pool = (
            stack.enter_context(DecoderPool(processes, preload=checkpoints))
            if checkpoints and processes
            else None
        )
        for spec, policy in sorted(
            ((s, p) for s, p in resolved.items() if p is not None), key=lambda sp: sp[1].startswith("hf:")
        ):
            local = policy.startswith("hf:")
            outcome = run_evaluation(
                store, box, lineage.get(), policy=policy, round_key=round_key,
                trials=config.checkpoint_trials if local else config.trials, max_steps=config.max_steps,
                llm=model, embedder=None, run_id=context.run.run_id, limit=config.limit,
                policy_options={"max_new_tokens": config.max_new_tokens} if local else None,
                name=spec if spec.startswith(CHECKPOINT) else None, decoders=pool if local else None,
                on_result=one_more,
            )  # fmt: skip
            context.log.info(f"{outcome.policy}: pass@1 {outcome.report.overall.pass_at_1:.3f}")
            by_spec[spec] = outcome
    outcomes = [by_spec[spec] for spec in config.policies if spec in by_spec]  # in the configured order
    if not outcomes:
        raise ValueError("no policy could be evaluated: " + "; ".join(skipped))
    main = outcomes[0]
    folder = store.round(round_key).dir(EVALUATIONS)
    plots = {
        "pass_by_route": png(pass_by_route_png(main.report, folder / "pass_by_route.png"), "pass@1 by route")
    }
    if len(outcomes) > 1:
        a, b = outcomes[0], outcomes[1]
        scatter = l1_scatter_png(a.report, b.report, a.policy, b.policy, folder / "l1_scatter.png")
        plots["l1_scatter"] = png(scatter, "pass@1 by L1 domain")
    metadata: dict[str, Any] = {
        "policies": ", ".join(o.policy for o in outcomes),
        "skipped": "; ".join(skipped) or "none",
        "tasks": main.tasks,
        "trials": main.trials,
        "seconds": round(sum(o.seconds for o in outcomes), 1),
    }
    for o in outcomes:
        overall = o.report.overall
        key = policy_slug(o.policy)
        metadata[f"{key}/pass@1"] = round(overall.pass_at_1, 4) if overall else "n/a"
        metadata[f"{key}/failures"] = o.failures
        metadata[f"{key}/infra_errors"] = o.infra_errors
        metadata[f"{key}/eval_id"] = o.eval_id
    metadata["by_route"] = md_table(main.report.rows("route"))
    metadata["by_split"] = md_table(main.report.rows("split"))
    metadata["by_l1"] = md_table(main.report.rows("l1"))
    metadata["by_capability"] = md_table(main.report.rows("capability"))
    metadata["by_atom"] = md_table(main.report.rows("atom"))
    metadata["results"] = dg.MetadataValue.path(str(main.path))
    metadata.update(plots)
    metadata.update(llm_usage(context, store, model))
    return dg.MaterializeResult(metadata=metadata)


def _failure_tags(store: Storage, round_key: str) -> dg.MetadataValue:
    from agentomnia.omniabench.store import FailureStore

    return count_table(
        [t for f in FailureStore(store.lineage_path).failures(round=round_key) for t in f.tags], "tag"
    )


@round_check(
    omniabench_eval,
    description="No evaluation ended on infrastructure errors for more than 5% of its trials.",
)
def infrastructure_errors_are_rare(context, storage: StorageResource) -> dg.AssetCheckResult:  # type: ignore[no-untyped-def]
    store = storage.get()
    results = [r for rs in load_results(store, context.partition_key).values() for r in rs]
    errors = [r for r in results if r.infra_error]
    share = len(errors) / len(results) if results else 0.0
    return dg.AssetCheckResult(
        passed=share <= 0.05,
        metadata={
            "trials": len(results),
            "infra_errors": len(errors),
            "share": round(share, 4),
            "tags": _failure_tags(store, context.partition_key),
            "examples": md_table([{"task": r.task_id, "error": r.infra_error} for r in errors[:10]]),
        },  # fmt: skip
    )


class LearningConfig(dg.Config):
    # benchmark tasks probed, spread over the benchmark (0 = all), and reference steps per task. Every
    # task's first step (35 probes in a default run, about 5 s a checkpoint on two CPU cores) rather
    # than two steps of 12 tasks (21 probes, of which one was 0.05 of a figure); two steps of every
    # task (69 probes) cost 40 s more a run. Two training seeds of the same round's SFT still differ
    # by up to 0.2 in call format and well-formed calls.
    limit: int = 0
    max_steps_per_task: int = 1
    samples: int = 0  # sampled replies per step beside the greedy one, for the well-formed-call share
    max_new_tokens: int = 48


def learning_checkpoints(store: Storage, round_key: str) -> dict[str, Path]:
    """The models to compare, by role: `base` (the model the first round began from), `start` (what
    this round continued from, when that is not the base), and the round's `sft` and `rl` checkpoints."""
    artifacts = store.round(round_key)
    out: dict[str, Path] = {}
    starts = sorted(
        (p for p in (store.root / "checkpoints" / START).glob("r*") if (p / "config.json").exists()),
        key=lambda p: (len(p.name), p.name),
    )
    if starts:
        out["base"] = starts[0]
    origin = artifacts.checkpoint_dir(SFT) / ORIGIN
    if origin.is_file():
        began = Path(json.loads(origin.read_text(encoding="utf-8")).get("started_from") or "")
        if (began / "config.json").exists() and began.resolve() not in {p.resolve() for p in out.values()}:
            out["start"] = began
    for role, spec in (("sft", CHECKPOINT_SFT), ("rl", CHECKPOINT_RL)):
        folder = artifacts.trained_checkpoint(spec)
        if folder is not None:
            out[role] = folder
    return out


@round_asset(
    "omniabench",
    deps=[omniabench_split, dg.AssetKey(RL_CHECKPOINT)],
    description=(
        "What the round's agent learned, measured where a CPU-sized model can show it: on the benchmark's "
        "reference trajectories (replayed in the sandbox, teacher-forced), the share of steps where the model "
        "ranks the reference's next tool first, writes valid JSON arguments for it, and writes them exactly; and "
        "the share of well-formed tool calls in its sampled replies. Per route, for the base model, the model the "
        "round started from, and the round's SFT and RL checkpoints."
    ),
)
def agent_learning(
    context: dg.AssetExecutionContext,
    config: LearningConfig,
    storage: StorageResource,
    sandbox: SandboxResource,
) -> dg.MaterializeResult:
    from agentomnia.omniabench.learning import (
        FIGURES,
        LearningReport,
        LearningSettings,
        learning_report,
        reference_probes,
        spread,
    )

    store, box = storage.get(), sandbox.get()
    round_key = context.partition_key
    split, tasks = require_benchmark(store)
    settings = LearningSettings(
        limit=config.limit, max_steps_per_task=config.max_steps_per_task, samples=config.samples,
        max_new_tokens=config.max_new_tokens,
    )  # fmt: skip
    checkpoints = learning_checkpoints(store, round_key)
    if not checkpoints:
        return dg.MaterializeResult(metadata={"probes": 0, "reason": "the round trained no checkpoint"})
    bundles = Catalog(store).bundles(t.env_id for t in tasks)
    probes, problems = reference_probes(tasks, {i.task_id: i for i in split.items}, bundles, box, settings)
    catalog = Catalog(store)
    earlier = [
        LearningReport.model_validate(data)
        for key in catalog.rounds()
        if key != round_key and (data := catalog.round(key).learning()) is not None
    ]
    report = learning_report(
        round_key, checkpoints, probes, len(spread(tasks, settings.limit)), settings, earlier=earlier
    )
    artifacts = store.round(round_key)
    artifacts.path(LEARNING, "report").write_text(report.model_dump_json(indent=1), encoding="utf-8")
    table = report.markdown()
    artifacts.path(LEARNING, "markdown").write_text(table, encoding="utf-8")
    write_parquet(artifacts.path(LEARNING), [r.model_dump() for r in report.rows])
    summary = "; ".join(
        f"{role} action likelihood {_fmt(row.action_likelihood)}, next tool {_fmt(row.next_tool)}, "
        f"next action {_fmt(row.next_action)}, well-formed {_fmt(row.well_formed_calls)}"
        for role in checkpoints
        if (row := report.overall(role)) is not None
    )
    context.log.info(f"learning on {len(probes)} reference steps: {summary}")
    metadata: dict[str, Any] = {
        "probes": len(probes),
        "tasks": report.tasks,
        "problems": len(problems),
        "reused_from_earlier_rounds": ", ".join(report.reused) or "none",
    }
    for role in checkpoints:
        row = report.overall(role)
        for figure in FIGURES:
            value = getattr(row, figure) if row is not None else None
            metadata[f"{role}/{figure}"] = value if value is not None else "n/a"
    metadata["table"] = dg.MetadataValue.md(table)
    return dg.MaterializeResult(metadata=metadata)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
