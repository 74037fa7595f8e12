"""Task synthesis (paper §4.4): DAG-based, program-based and solver-based tasks on verified environments."""

from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import dagster as dg

from agentomnia.catalog import DAG_TASKS, ENVIRONMENTS, PROGRAM_TASKS, SOLVER_TASKS, Artifact, Catalog
from agentomnia.directives import SynthesisDirectives
from agentomnia.envs.spec import EnvSpec
from agentomnia.lineage import LineageRow
from agentomnia.processes import start_sandbox, worker_processes
from agentomnia.progress import tracked_map
from agentomnia.rejection import Rejection
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.stages import StageContext, publish, solver_environments, tasks_stage
from agentomnia.storage import Storage
from agentomnia.tasks.dag.synth import summarize_tasks, synthesize_dag_in_worker, synthesize_dag_variants
from agentomnia.tasks.families import family_of, is_challenging_kind
from agentomnia.tasks.leakage import leakage_problems
from agentomnia.tasks.models import Task
from agentomnia.tasks.program import control_flow, synthesize_program_tasks
from agentomnia.tasks.solver import (
    FAMILIES,
    GUIDED_OFFLINE_NOTE,
    synthesize_guided_tasks,
    synthesize_solver_tasks,
)
from agentomnia.taxonomy import load_taxonomy
from agentomnia_assets._common import count_table, llm_usage, md_table, round_asset, round_check
from resources import LineageResource, LLMResource, SandboxResource, StorageResource


def environment_dirs(store: Storage, round_key: str, limit: int = 0) -> list[Path]:
    """The round's verified environments, by id; at most `limit` of them (0: all), except in a
    PRD-guided round, whose environments were planned, one per domain, to match its failures: a
    default r1 capped at 30 of 33 had left two failing L1s without a task."""
    artifacts = store.round(round_key)
    rows = artifacts.environments()
    dirs = [Path(r["path"]) for r in sorted(rows, key=lambda r: r["env_id"])]
    return dirs[:limit] if limit and artifacts.directives() is None else dirs


def wording_metadata(tasks: Sequence[Task]) -> dict[str, Any]:
    """How the stage's requests read (`agentomnia.tasks.wording`): chained "of the", sentence length,
    distinct word 3-grams; the round's HTML report sets them beside their targets."""
    from agentomnia.tasks.wording import query_metrics

    figures = query_metrics([t.query for t in tasks])
    return {f"realism/{k}": v for k, v in figures.items() if isinstance(v, (int, float))}


def _publish_tasks(
    context: dg.AssetExecutionContext,
    store: Storage,
    lineage: LineageResource,
    artifact: Artifact,
    tasks: Sequence[Task],
    rejected: Sequence[Rejection],
    extra_rows: Sequence[LineageRow] = (),
) -> Path:
    ctx = StageContext(context.partition_key, context.run.run_id)
    out = tasks_stage(ctx, tasks, rejected, stage=artifact.name)
    out.rows += extra_rows
    return publish(
        out, ctx, store.round(ctx.round_key), artifact, lineage.get(), flat=["env_id", "kind", "query"]
    )


def _parallel(
    box: Sandbox, items: Sequence[Any], fn: Callable[[Any], Any], *, step: str = "", unit: str = "items"
) -> list[Any]:
    """`fn` over `items` on the sandbox's worker count of threads; with `step`, each finished item is
    reported to the run's progress line (`12/30 environments, 0.8/s`)."""
    if step:
        return tracked_map(step, unit, fn, items, workers=max(1, box.config.workers))
    with ThreadPoolExecutor(max_workers=max(1, box.config.workers)) as pool:
        return list(pool.map(fn, items))


class DagTasksConfig(dg.Config):
    standard_per_env: int = 6
    challenge_per_env: int = 3
    multi_turn_share: float = (
        0.3  # of DAG tasks posed multi-turn, with a detail withheld for the simulated user
    )
    max_environments: int = 0  # 0 = every verified environment
    # offline, the environments' tasks are made on this many worker processes, each with a one-worker
    # sandbox; None: one per core; 0 or 1: threads of this process on its sandbox. Processes pay off on
    # many environments (140: 48.8 s against 90.3 s on threads); on the default scale's 30 they save
    # what the next stages then spend warming this process's sandbox, so `--scale full` uses them
    processes: int | None = 0


@round_asset(
    "tasks",
    deps=[dg.AssetKey(ENVIRONMENTS.name)],
    description=(
        "DAG-based tasks (DAG-Standard and DAG-Challenge): tool dependency graphs with typed edges, "
        "topology-aware group sampling, augmented DAGs with virtual nodes, hardened initial states, "
        "execution-grounded generation in the sandbox, outcome-focused rubrics with an oracle check. In a PRD-guided "
        "round, the PRDs' task variations (depth, implicit references, transformations) and environment variations "
        "(distractors, unavailable entities, conflicting states) shape the profiles."
    ),
)
def dag_tasks(
    context: dg.AssetExecutionContext,
    config: DagTasksConfig,
    storage: StorageResource,
    lineage: LineageResource,
    llm: LLMResource,
    sandbox: SandboxResource,
) -> dg.MaterializeResult:
    store, box, model = storage.get(), sandbox.get(), llm.get()
    dirs = environment_dirs(store, context.partition_key, config.max_environments)
    directives = store.round(context.partition_key).directives()  # a PRD-guided round's variations

    plan = [
        (v, n)
        for v, n in (("dag-standard", config.standard_per_env), ("dag-challenge", config.challenge_per_env))
        if n
    ]

    def one(folder: Path) -> tuple[list[Task], list[Rejection]]:
        # one bundle load, tool graph and sandbox session for both variants
        return synthesize_dag_variants(
            folder, box, plan, llm=model, directives=directives, multi_turn=config.multi_turn_share
        )

    processes = worker_processes(config.processes)
    if model is None and processes > 1 and len(dirs) > 1:  # offline synthesis is bound by the interpreter
        jobs = [(folder, plan, directives, config.multi_turn_share) for folder in dirs]
        results = tracked_map(context.op_def.name, "environments", synthesize_dag_in_worker, jobs,
                              processes=processes, initializer=start_sandbox, initargs=(box.config,))  # fmt: skip
    else:
        results = _parallel(box, dirs, one, step=context.op_def.name, unit="environments")
    tasks = [t for kept, _ in results for t in kept]
    rejected = [r for _, rej in results for r in rej]
    path = _publish_tasks(context, store, lineage, DAG_TASKS, tasks, rejected)
    summary = summarize_tasks(tasks, rejected)
    std = [t for t in tasks if t.kind == "dag_standard"]
    chal = [t for t in tasks if t.kind == "dag_challenge"]

    def mean(values: list[float]) -> float:
        return round(sum(values) / len(values), 2) if values else 0.0

    return dg.MaterializeResult(
        metadata={
            **llm_usage(context, store, model),
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
            "path": dg.MetadataValue.path(str(path)),
            **wording_metadata(tasks),
        }
    )


def _oracle_check(
    storage: StorageResource, sandbox: SandboxResource, round_key: str, artifact: Artifact
) -> dg.AssetCheckResult:
    """Every kept task of `artifact` passes its family's own check (the one `agentomnia tasks check` runs)."""
    store = storage.get()
    tasks = store.round(round_key).tasks([artifact])
    bundles = Catalog(store).bundles(t.env_id for t in tasks)
    box = sandbox.get()
    reports = _parallel(box, tasks, lambda t: family_of(t).validate(t, box, bundles[t.env_id]))
    bad = [
        {"task": t.id, "kind": t.kind, "detail": r.reason[:200]}
        for t, r in zip(tasks, reports, strict=True)
        if not r.passed
    ]
    return dg.AssetCheckResult(
        passed=not bad, metadata={"tasks": len(tasks), "failing": len(bad), "failures": md_table(bad)}
    )


@round_check(
    dag_tasks,
    blocking=True,
    description="Every kept DAG task passes its family's check: oracle on replay, empty run fails, consistency.",
)
def dag_oracle_passes(context, storage: StorageResource, sandbox: SandboxResource) -> dg.AssetCheckResult:  # type: ignore[no-untyped-def]
    return _oracle_check(storage, sandbox, context.partition_key, DAG_TASKS)


@round_check(
    dag_tasks,
    description="No DAG task names a tool, parameter key or (for Challenge) an id literal.",
)
def dag_queries_leak_nothing(context, storage: StorageResource) -> dg.AssetCheckResult:  # type: ignore[no-untyped-def]
    store = storage.get()
    tasks = store.round(context.partition_key).tasks([DAG_TASKS])
    specs = {
        b: EnvSpec.model_validate(bundle.spec)
        for b, bundle in Catalog(store).bundles(t.env_id for t in tasks).items()
    }
    bad = []
    for t in tasks:
        problems = leakage_problems(t.query, specs[t.env_id], forbid_ids=is_challenging_kind(t.kind))
        if problems:
            bad.append({"task": t.id, "kind": t.kind, "problem": problems[0]})
    return dg.AssetCheckResult(
        passed=not bad, metadata={"tasks": len(tasks), "leaking": len(bad), "examples": md_table(bad)}
    )


class ProgramTasksConfig(dg.Config):
    per_env: int = 2
    max_environments: int = 0


@round_asset(
    "tasks",
    deps=[dg.AssetKey(ENVIRONMENTS.name)],
    description=(
        "Program-based tasks: solution programs with loops and branches co-synthesized with their internal "
        "spec on difficulty-hardened states, debugged by execution in the sandbox; leakage-free public queries; "
        "verifier code (check_func) for task-critical fields plus a rubric; oracle: reference passes, empty and "
        "one-wrong-item runs fail."
    ),
)
def program_tasks(
    context: dg.AssetExecutionContext,
    config: ProgramTasksConfig,
    storage: StorageResource,
    lineage: LineageResource,
    llm: LLMResource,
    sandbox: SandboxResource,
) -> dg.MaterializeResult:
    store, box, model = storage.get(), sandbox.get(), llm.get()
    dirs = environment_dirs(store, context.partition_key, config.max_environments)
    directives = store.round(context.partition_key).directives()  # a PRD-guided round's task guidance
    guidance = directives.task_guidance if directives is not None else ()
    results = _parallel(
        box, dirs, lambda d: synthesize_program_tasks(d, box, n=config.per_env, llm=model, guidance=guidance),
        step=context.op_def.name, unit="environments",
    )  # fmt: skip
    tasks = [t for kept, _ in results for t in kept]
    rejected = [r for _, rej in results for r in rej]
    path = _publish_tasks(context, store, lineage, PROGRAM_TASKS, tasks, rejected)
    flows = [control_flow(t.reference_program or "") for t in tasks]
    return dg.MaterializeResult(
        metadata={
            **llm_usage(context, store, model),
            "tasks": len(tasks),
            "environments": len(dirs),
            "tasks_per_environment": round(len(tasks) / max(1, len(dirs)), 2),
            "with_loop_and_branch": sum(1 for f in flows if f.loops and f.branches),
            "loops_mean": round(sum(f.loops for f in flows) / max(1, len(flows)), 2),
            "branches_mean": round(sum(f.branches for f in flows) / max(1, len(flows)), 2),
            "by_template": count_table([t.metadata.get("template", "?") for t in tasks], "template"),
            "rejected": len(rejected),
            "rejected_by_stage": count_table([r.stage for r in rejected], "stage"),
            "path": dg.MetadataValue.path(str(path)),
            **wording_metadata(tasks),
        }
    )


@round_check(
    program_tasks,
    blocking=True,
    description="Every program task: reference passes, empty run and one-wrong-item run fail.",
)
def program_oracle_passes(context, storage: StorageResource, sandbox: SandboxResource) -> dg.AssetCheckResult:  # type: ignore[no-untyped-def]
    return _oracle_check(storage, sandbox, context.partition_key, PROGRAM_TASKS)


# tasks one environment of a PRD-guided round gives its L1 (DAG standard and challenge, a program task):
# 3.8 in a default run's r1
TASKS_PER_ENVIRONMENT = 4


def family_quotas(directives: SynthesisDirectives | None, per_family: int) -> dict[str, int]:
    """Tasks to make per solver family. A PRD-guided round makes them only for families whose domain a
    PRD targets. Its domains already go to the L1s by their share of the failures, so a family adds
    tasks to its L1 only as far as whole domains left that L1 short of its share (split over the L1's
    families), and one task at least: solver tasks do not pull the round to where the families happen
    to be. A default r1 had made 18 of its 144 tasks in Logistics (failure share 0.11) this way before,
    66 asked of each of its two families."""
    if directives is None:
        return dict.fromkeys(FAMILIES, per_family)
    taxonomy = load_taxonomy()
    domains = Counter(taxonomy.by_id(i).l1_key for i in directives.target_l2)
    total = sum(domains.values())
    home = {name: taxonomy.by_id(family.taxonomy_id).l1_key for name, family in FAMILIES.items()}
    targeted = {
        name: home[name]
        for name, family in FAMILIES.items()
        if family.taxonomy_id in directives.target_l2 or home[name] in directives.target_l1
    }
    per_l1 = Counter(targeted.values())
    quotas = {}
    for name, l1 in targeted.items():
        short = directives.weights.get(l1, 0.0) * total - domains[l1]  # in domains
        tasks = short * directives.seeds_per_domain * TASKS_PER_ENVIRONMENT / per_l1[l1]
        quotas[name] = min(per_family, max(1, round(tasks)))
    return quotas


class SolverTasksConfig(dg.Config):
    per_family: int = 25
    guided_per_family: int = 5


@round_asset(
    "tasks",
    deps=[dg.AssetKey(ENVIRONMENTS.name)],
    description=(
        "Solver-based tasks in six problem families (budgeted selection, assignment, shift scheduling, facility "
        "selection, procurement mix, route planning): a MILP (HiGHS) solves each instance as the trusted artifact; "
        "a verified environment is built around the instance; verifier code recomputes feasibility and objective."
    ),
)
def solver_tasks(
    context: dg.AssetExecutionContext,
    config: SolverTasksConfig,
    storage: StorageResource,
    lineage: LineageResource,
    llm: LLMResource,
    sandbox: SandboxResource,
) -> dg.MaterializeResult:
    store, box, model = storage.get(), sandbox.get(), llm.get()
    out_dir = store.root / "envs"
    seed = int(context.partition_key.lstrip("r") or 0)
    directives = store.round(context.partition_key).directives()
    quotas = family_quotas(directives, config.per_family)
    guidance = directives.task_guidance if directives is not None else ()  # the model rewords with it
    tasks: list[Task] = []
    dirs: list[Path] = []
    rejected: list[Rejection] = []
    for family, n in quotas.items():
        made, made_dirs, refused = synthesize_solver_tasks(
            box, families=[family], per_family=n, seed=seed, out_dir=out_dir, llm=model, guidance=guidance
        )
        tasks, dirs, rejected = tasks + made, dirs + made_dirs, rejected + refused
    guided, gdirs, grejected, notes = synthesize_guided_tasks(
        box, model, families=list(quotas), per_family=config.guided_per_family, seed=seed, out_dir=out_dir,
        guidance=guidance,
    )  # fmt: skip
    all_tasks = tasks + guided
    env_rows = solver_environments(StageContext(context.partition_key, context.run.run_id), dirs + gdirs)
    path = _publish_tasks(context, store, lineage, SOLVER_TASKS, all_tasks, rejected + grejected, env_rows)
    gaps = [float(t.metadata.get("baseline_gap_pct") or 0.0) for t in tasks]
    return dg.MaterializeResult(
        metadata={
            **llm_usage(context, store, model),
            "tasks": len(all_tasks),
            "solver_anchored": len(tasks),
            "solver_guided": len(guided),
            "families": len(FAMILIES),
            "by_family": count_table([t.metadata.get("family", "?") for t in all_tasks], "family"),
            "baseline_gap_pct_mean": round(sum(gaps) / max(1, len(gaps)), 2),
            "rejected": len(rejected) + len(grejected),
            "rejected_by_stage": count_table([r.stage for r in rejected + grejected], "stage"),
            "guided_note": " ".join(notes) or ("offline: " + GUIDED_OFFLINE_NOTE if model is None else ""),
            "path": dg.MetadataValue.path(str(path)),
            **wording_metadata(all_tasks),
        }
    )


@round_check(
    solver_tasks,
    blocking=True,
    description="Every solver task: the reference plan reaches the solver's optimum, the empty run fails, no leak.",
)
def solver_oracle_passes(context, storage: StorageResource, sandbox: SandboxResource) -> dg.AssetCheckResult:  # type: ignore[no-untyped-def]
    return _oracle_check(storage, sandbox, context.partition_key, SOLVER_TASKS)
