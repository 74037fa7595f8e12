"""Task synthesis (paper §4.4): DAG-based, program-based and solver-based tasks on verified environments."""

from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from dagster import (
    AssetCheckResult,
    AssetExecutionContext,
    Config,
    MaterializeResult,
    MetadataValue,
    asset,
    asset_check,
)

from agentomnia.envs.spec import EnvSpec
from agentomnia.evolution.directives import SynthesisDirectives
from agentomnia.lineage import Edge, LineageRow, lineage_row
from agentomnia.omniabench.service import bundles_for
from agentomnia.records import content_hash
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.storage import Storage, load_records, read_parquet, save_records, write_parquet
from agentomnia.tasks.dag.synth import check_task, summarize_tasks, synthesize_dag_variants
from agentomnia.tasks.leakage import leakage_problems
from agentomnia.tasks.models import Task, TaskRejection
from agentomnia.tasks.program import check_program_task, control_flow, synthesize_program_tasks
from agentomnia.tasks.solver import (
    FAMILIES,
    GUIDED_OFFLINE_NOTE,
    synthesize_guided_tasks,
    synthesize_solver_tasks,
)
from agentomnia.taxonomy import load_taxonomy
from agentomnia_assets._common import count_table, md_table
from agentomnia_assets.environments import environments
from agentomnia_assets.evolution import round_directives
from agentomnia_assets.instance import DUCKDB_POOL
from agentomnia_assets.partitions import rounds
from resources import LineageResource, LLMResource, SandboxResource, StorageResource


def environment_dirs(store: Storage, round_key: str, limit: int = 0) -> list[Path]:
    rows = read_parquet(store.artifact("environments", round_key))
    dirs = [Path(r["path"]) for r in sorted(rows, key=lambda r: r["env_id"])]
    return dirs[:limit] if limit else dirs


def _publish_tasks(
    context: AssetExecutionContext,
    store: Storage,
    lineage: LineageResource,
    asset_name: str,
    tasks: Sequence[Task],
    rejected: Sequence[TaskRejection],
) -> Path:
    round_key = context.partition_key
    tasks = [t.in_round(round_key) for t in tasks]
    path = save_records(store.artifact(asset_name, round_key), tasks, flat=["env_id", "kind", "query"])
    write_parquet(
        store.artifact(asset_name, round_key, "rejected.parquet"),
        [r.model_dump() for r in rejected],
        columns=["env_id", "kind", "stage", "reason"],
    )
    rows = [
        lineage_row(
            t,
            run_id=context.run.run_id,
            location=str(path),
            meta={"task_kind": t.kind, "calls": len(t.reference_calls)},
        )
        for t in tasks
    ]
    edges = [Edge(child=t.id, parent=t.env_id, relation="task_on") for t in tasks]
    reasons = Counter((r.env_id, r.kind, r.stage, r.reason[:160]) for r in rejected)
    for (env_id, kind, stage, reason), n in reasons.items():
        rid = f"rej-{asset_name}-{round_key}-{content_hash([env_id, kind, stage, reason], 12)}"
        rows.append(
            LineageRow(
                id=rid,
                kind="task",
                round=round_key,
                status="rejected",
                reason=f"{stage}: {reason}",
                run_id=context.run.run_id,
                meta={"task_kind": kind, "times": n},
            )
        )
        edges.append(Edge(child=rid, parent=env_id, relation="task_on"))
    lineage.get().record(rows, edges)
    return path


def _parallel(box: Sandbox, items: Sequence[Any], fn: Callable[[Any], Any]) -> list[Any]:
    with ThreadPoolExecutor(max_workers=max(1, box.config.workers)) as pool:
        return list(pool.map(fn, items))


class DagTasksConfig(Config):
    standard_per_env: int = 6
    challenge_per_env: int = 3
    multi_turn_share: float = (
        0.3  # of DAG tasks posed multi-turn, with a detail withheld for the simulated user
    )
    max_environments: int = 0  # 0 = every verified environment


@asset(
    group_name="tasks",
    partitions_def=rounds,
    pool=DUCKDB_POOL,
    deps=[environments],
    description=(
        "DAG-based tasks (DAG-Standard and DAG-Challenge): tool dependency graphs with typed edges, "
        "topology-aware group sampling, augmented DAGs with virtual nodes, hardened initial states, "
        "execution-grounded generation in the sandbox, outcome-focused rubrics with an oracle check. In a PRD-guided "
        "round, the PRDs' task variations (depth, implicit references, transformations) and environment variations "
        "(distractors, unavailable entities, conflicting states) shape the profiles."
    ),
)
def dag_tasks(
    context: AssetExecutionContext,
    config: DagTasksConfig,
    storage: StorageResource,
    lineage: LineageResource,
    llm: LLMResource,
    sandbox: SandboxResource,
) -> MaterializeResult:
    store, box, model = storage.get(), sandbox.get(), llm.get()
    dirs = environment_dirs(store, context.partition_key, config.max_environments)
    directives = round_directives(store, context.partition_key)  # a PRD-guided round's variations

    plan = [
        (v, n)
        for v, n in (("dag-standard", config.standard_per_env), ("dag-challenge", config.challenge_per_env))
        if n
    ]

    def one(folder: Path) -> tuple[list[Task], list[TaskRejection]]:
        # one bundle load, tool graph and sandbox session for both variants
        return synthesize_dag_variants(
            folder, box, plan, llm=model, directives=directives, multi_turn=config.multi_turn_share
        )

    results = _parallel(box, dirs, one)
    tasks = [t for kept, _ in results for t in kept]
    rejected = [r for _, rej in results for r in rej]
    path = _publish_tasks(context, store, lineage, "dag_tasks", tasks, rejected)
    summary = summarize_tasks(tasks, rejected)
    std = [t for t in tasks if t.kind == "dag_standard"]
    chal = [t for t in tasks if t.kind == "dag_challenge"]

    def mean(values: list[float]) -> float:
        return round(sum(values) / len(values), 2) if values else 0.0

    return MaterializeResult(
        metadata={
            "tasks": len(tasks),
            "dag_standard": len(std),
            "dag_challenge": len(chal),
            "environments": len(dirs),
            "tasks_per_environment": round(len(tasks) / max(1, len(dirs)), 2),
            "rejected": len(rejected),
            "calls_mean_standard": mean([len(t.reference_calls) for t in std]),
            "calls_mean_challenge": mean([len(t.reference_calls) for t in chal]),
            "depth_mean_standard": mean([float(t.metadata.get("depth", 0)) for t in std]),
            "depth_mean_challenge": mean([float(t.metadata.get("depth", 0)) for t in chal]),
            "calls_histogram": md_table([{"calls": k, "tasks": v} for k, v in summary["calls"].items()]),
            "depth_histogram": md_table([{"depth": k, "tasks": v} for k, v in summary["depth"].items()]),
            "chain_length_histogram": md_table(
                [{"chain_length": k, "count": v} for k, v in summary["chain_length"].items()]
            ),
            "atoms": md_table(
                [{"atom": k, "tasks": v} for k, v in sorted(summary["atoms"].items(), key=lambda kv: -kv[1])]
            ),
            "rejected_by_stage": md_table(
                [{"stage": k, "count": v} for k, v in summary["rejected_by_stage"].items()]
            ),
            "path": MetadataValue.path(str(path)),
        }
    )


@asset_check(
    asset=dag_tasks,
    partitions_def=rounds,
    blocking=True,
    description="Every kept DAG task passes its oracle check on replay.",
)
def dag_oracle_passes(context, storage: StorageResource, sandbox: SandboxResource) -> AssetCheckResult:  # type: ignore[no-untyped-def]
    store = storage.get()
    tasks = load_records(store.artifact("dag_tasks", context.partition_key), Task)
    bundles = bundles_for(store, tasks)
    box = sandbox.get()
    results = _parallel(box, tasks, lambda t: check_task(t, box, bundles[t.env_id]))
    bad = [
        {"task": r.task_id, "detail": r.detail or "; ".join(r.consistency + r.state)}
        for r in results
        if not (r.replay_ok and r.oracle_pass and r.empty_fail)
    ]
    return AssetCheckResult(
        passed=not bad, metadata={"tasks": len(tasks), "failing": len(bad), "failures": md_table(bad)}
    )


@asset_check(
    asset=dag_tasks,
    partitions_def=rounds,
    description="No DAG task names a tool, parameter key or (for Challenge) an id literal.",
)
def dag_queries_leak_nothing(context, storage: StorageResource) -> AssetCheckResult:  # type: ignore[no-untyped-def]
    store = storage.get()
    tasks = load_records(store.artifact("dag_tasks", context.partition_key), Task)
    specs = {b: EnvSpec.model_validate(bundle.spec) for b, bundle in bundles_for(store, tasks).items()}
    bad = []
    for t in tasks:
        problems = leakage_problems(t.query, specs[t.env_id], forbid_ids=t.kind == "dag_challenge")
        if problems:
            bad.append({"task": t.id, "kind": t.kind, "problem": problems[0]})
    return AssetCheckResult(
        passed=not bad, metadata={"tasks": len(tasks), "leaking": len(bad), "examples": md_table(bad)}
    )


class ProgramTasksConfig(Config):
    per_env: int = 2
    max_environments: int = 0


@asset(
    group_name="tasks",
    partitions_def=rounds,
    pool=DUCKDB_POOL,
    deps=[environments],
    description=(
        "Program-based tasks: solution programs with loops and branches co-synthesized with their internal "
        "spec on difficulty-hardened states, debugged by execution in the sandbox; leakage-free public queries; "
        "verifier code (check_func) for task-critical fields plus a rubric; oracle: reference passes, empty and "
        "one-wrong-item runs fail."
    ),
)
def program_tasks(
    context: AssetExecutionContext,
    config: ProgramTasksConfig,
    storage: StorageResource,
    lineage: LineageResource,
    llm: LLMResource,
    sandbox: SandboxResource,
) -> MaterializeResult:
    store, box, model = storage.get(), sandbox.get(), llm.get()
    dirs = environment_dirs(store, context.partition_key, config.max_environments)
    results = _parallel(box, dirs, lambda d: synthesize_program_tasks(d, box, n=config.per_env, llm=model))
    tasks = [t for kept, _ in results for t in kept]
    rejected = [r for _, rej in results for r in rej]
    path = _publish_tasks(context, store, lineage, "program_tasks", tasks, rejected)
    flows = [control_flow(t.reference_program or "") for t in tasks]
    return MaterializeResult(
        metadata={
            "tasks": len(tasks),
            "environments": len(dirs),
            "tasks_per_environment": round(len(tasks) / max(1, len(dirs)), 2),
            "with_loop_and_branch": sum(1 for f in flows if f.loops and f.branches),
            "loops_mean": round(sum(f.loops for f in flows) / max(1, len(flows)), 2),
            "branches_mean": round(sum(f.branches for f in flows) / max(1, len(flows)), 2),
            "by_template": count_table([t.metadata.get("template", "?") for t in tasks], "template"),
            "rejected": len(rejected),
            "rejected_by_stage": count_table([r.stage for r in rejected], "stage"),
            "path": MetadataValue.path(str(path)),
        }
    )


@asset_check(
    asset=program_tasks,
    partitions_def=rounds,
    blocking=True,
    description="Every program task: reference passes, empty run and one-wrong-item run fail.",
)
def program_oracle_passes(context, storage: StorageResource, sandbox: SandboxResource) -> AssetCheckResult:  # type: ignore[no-untyped-def]
    store = storage.get()
    tasks = load_records(store.artifact("program_tasks", context.partition_key), Task)
    bundles = bundles_for(store, tasks)
    box = sandbox.get()
    reports = _parallel(box, tasks, lambda t: check_program_task(t, box, bundles[t.env_id]))
    bad = [
        {"task": t.id, "details": "; ".join(r.details)[:200]}
        for t, r in zip(tasks, reports, strict=True)
        if not r.passed
    ]
    return AssetCheckResult(
        passed=not bad, metadata={"tasks": len(tasks), "failing": len(bad), "failures": md_table(bad)}
    )


def family_quotas(directives: SynthesisDirectives | None, per_family: int) -> dict[str, int]:
    """Tasks to make per solver family. A PRD-guided round makes them only for families whose domain a
    PRD targets, in proportion to that L1's share of the failures (relative to the mean share), so
    solver tasks do not pull the round away from where the failures are."""
    if directives is None:
        return dict.fromkeys(FAMILIES, per_family)
    taxonomy = load_taxonomy()
    mean_share = 1.0 / max(1, len(directives.weights))
    quotas = {}
    for name, family in FAMILIES.items():
        l1 = taxonomy.by_id(family.taxonomy_id).l1_key
        if family.taxonomy_id not in directives.target_l2 and l1 not in directives.target_l1:
            continue
        share = directives.weights.get(l1, mean_share)
        quotas[name] = max(1, round(per_family * share / mean_share))
    return quotas


class SolverTasksConfig(Config):
    per_family: int = 25
    guided_per_family: int = 5


@asset(
    group_name="tasks",
    partitions_def=rounds,
    pool=DUCKDB_POOL,
    deps=[environments],
    description=(
        "Solver-based tasks in six problem families (budgeted selection, assignment, shift scheduling, facility "
        "selection, procurement mix, route planning): a MILP (HiGHS) solves each instance as the trusted artifact; "
        "a verified environment is built around the instance; verifier code recomputes feasibility and objective."
    ),
)
def solver_tasks(
    context: AssetExecutionContext,
    config: SolverTasksConfig,
    storage: StorageResource,
    lineage: LineageResource,
    llm: LLMResource,
    sandbox: SandboxResource,
) -> MaterializeResult:
    store, box, model = storage.get(), sandbox.get(), llm.get()
    out_dir = store.root / "envs"
    seed = int(context.partition_key.lstrip("r") or 0)
    quotas = family_quotas(round_directives(store, context.partition_key), config.per_family)
    tasks: list[Task] = []
    dirs: list[Path] = []
    rejected: list[TaskRejection] = []
    for family, n in quotas.items():
        made, made_dirs, refused = synthesize_solver_tasks(
            box, families=[family], per_family=n, seed=seed, out_dir=out_dir
        )
        tasks, dirs, rejected = tasks + made, dirs + made_dirs, rejected + refused
    guided, gdirs, grejected, notes = synthesize_guided_tasks(
        box, model, families=list(quotas), per_family=config.guided_per_family, seed=seed, out_dir=out_dir
    )
    all_tasks = tasks + guided
    env_rows = [
        LineageRow(
            id=d.name,
            kind="environment",
            round=context.partition_key,
            run_id=context.run.run_id,
            location=str(d),
            meta={"origin": "solver"},
        )
        for d in dirs + gdirs
    ]
    lineage.get().record(env_rows)
    path = _publish_tasks(context, store, lineage, "solver_tasks", all_tasks, rejected + grejected)
    gaps = [float(t.metadata.get("baseline_gap_pct") or 0.0) for t in tasks]
    return MaterializeResult(
        metadata={
            "tasks": len(all_tasks),
            "solver_anchored": len(tasks),
            "solver_guided": len(guided),
            "families": len(FAMILIES),
            "by_family": count_table([t.metadata.get("family", "?") for t in all_tasks], "family"),
            "baseline_gap_pct_mean": round(sum(gaps) / max(1, len(gaps)), 2),
            "rejected": len(rejected) + len(grejected),
            "rejected_by_stage": count_table([r.stage for r in rejected + grejected], "stage"),
            "guided_note": " ".join(notes) or ("offline: " + GUIDED_OFFLINE_NOTE if model is None else ""),
            "path": MetadataValue.path(str(path)),
        }
    )
