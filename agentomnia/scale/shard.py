"""One shard of a scale run, start to finish, in one process.

Composed seeds -> candidates -> selection -> state space -> toolset -> code, s0 and three-level
verification -> DAG-Standard / DAG-Challenge / program tasks on the shard's environments -> its
share of solver tasks. Everything the shard makes goes to its own folder (Parquet files written
whole, then `done.json` last) and its lineage to one segment in the run's segment folder; the
environment bundles go to the home's `envs/` like every other round's. Nothing is held beyond the
shard, so memory is bounded by the shard size, and a shard either finished (`done.json` names its
counts) or is redone from scratch by the next run.

Each domain builds its candidates in variant order until it has its quota; a domain whose
candidates run out short leaves the shortfall in the shard's counts. Task quotas move forward: an
environment that yields fewer tasks than its share passes the rest to the next one.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agentomnia.catalog import DAG_TASKS, PROGRAM_TASKS, SCALE, SOLVER_TASKS
from agentomnia.envs.build import BuildConfig, BuiltEnv, write_bundle
from agentomnia.envs.toolset import ToolsetConfig
from agentomnia.lineage import Edge, LineageRow
from agentomnia.lineage.segments import SegmentStore
from agentomnia.rejection import Rejection
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.scale.plan import ShardSpec, per_item, plan_kind
from agentomnia.scale.seeds import variant_seeds
from agentomnia.seeds.inference import DomainMatcher, EnvCandidate, seed_text
from agentomnia.seeds.models import Seed
from agentomnia.seeds.selection import SelectionConfig
from agentomnia.stages import ENV_INDEX_COLUMNS as STAGE_ENV_COLUMNS
from agentomnia.stages import (
    StageContext,
    StageOutput,
    build_candidate,
    candidates_stage,
    environment_index_row,
    save_rejections,
    seeds_stage,
    selection_stage,
    solver_environments,
    tasks_stage,
)
from agentomnia.storage import Storage, save_records, write_parquet
from agentomnia.tasks.dag.synth import synthesize_dag_variants
from agentomnia.tasks.models import Task
from agentomnia.tasks.program import synthesize_program_tasks
from agentomnia.tasks.solver import FAMILIES, synthesize_solver_tasks
from agentomnia.taxonomy import Taxonomy

STAGES = ("seeds", "environments", DAG_TASKS.name, PROGRAM_TASKS.name, SOLVER_TASKS.name, "write")
# Composed slices of one domain read alike to a sentence embedder; their states tell them apart.
SELECTION = SelectionConfig(state_overlap=0.85)
ENV_INDEX_COLUMNS = [*STAGE_ENV_COLUMNS, "shard"]
TASK_FLAT = ["env_id", "kind", "query"]


class StageTime(BaseModel):
    stage: str
    items: int
    seconds: float


class ShardResult(BaseModel):
    """What one shard made; written as its `done.json`, read back when a rerun skips it."""

    shard: str
    index: int
    environments: int
    environments_wanted: int
    tools: int
    tasks: dict[str, int]
    tasks_wanted: dict[str, int]
    rejected: dict[str, int] = Field(default_factory=dict)  # by stage
    stages: list[StageTime]
    verify_seconds: float
    seconds: float
    skipped: bool = False  # found finished by an earlier run


class ShardContext:
    """What a worker process keeps between shards: the matcher (its embedder) and one sandbox."""

    def __init__(
        self, storage: Storage, taxonomy: Taxonomy, matcher: DomainMatcher, sandbox: Sandbox
    ) -> None:
        self.storage, self.taxonomy, self.matcher, self.sandbox = storage, taxonomy, matcher, sandbox


def shard_dir(storage: Storage, round_key: str, shard_id: str) -> Path:
    return storage.round(round_key).dir(SCALE) / "shards" / shard_id


def segments_dir(storage: Storage, round_key: str) -> Path:
    return storage.round(round_key).dir(SCALE) / "lineage"


def finished(folder: Path) -> ShardResult | None:
    done = folder / "done.json"
    if not done.exists():
        return None
    try:
        return ShardResult.model_validate_json(done.read_text(encoding="utf-8"))
    except ValueError:
        return None  # a damaged marker: the shard is redone


class _Clock:
    def __init__(self) -> None:
        self.stages: dict[str, StageTime] = {s: StageTime(stage=s, items=0, seconds=0.0) for s in STAGES}

    @contextmanager
    def stage(self, name: str) -> Iterator[StageTime]:
        started = time.perf_counter()
        entry = self.stages[name]
        try:
            yield entry
        finally:
            entry.seconds += time.perf_counter() - started


def _build_domain(
    ctx: ShardContext, stage: StageContext, candidates: list[EnvCandidate], seeds: dict[str, Seed], wanted: int,
    cfg: BuildConfig, shard: str,
) -> StageOutput[BuiltEnv]:  # fmt: skip
    """Build candidates in variant order until the domain has `wanted` environments."""
    out: StageOutput[BuiltEnv] = StageOutput("environment", [])
    for c in candidates:
        if len(out.kept) >= wanted:
            break
        out.extend(build_candidate(stage, c, seeds, ctx.taxonomy, ctx.sandbox, ctx.storage, config=cfg,
                                   meta={"shard": shard}))  # fmt: skip
    return out


def run_shard(ctx: ShardContext, spec: ShardSpec, round_key: str, run_id: str) -> ShardResult:
    """Make shard `spec` of round `round_key` unless an earlier run finished it."""
    folder = shard_dir(ctx.storage, round_key, spec.id)
    previous = finished(folder)
    if previous is not None:
        return previous.model_copy(update={"skipped": True})
    started = time.perf_counter()
    clock = _Clock()
    rejected: Counter[str] = Counter()

    # -- seeds, candidates, selection ---------------------------------------------------------
    stage = StageContext(round_key, run_id)
    with clock.stage("seeds") as st:
        composed: list[Seed] = []
        for q in spec.domains:
            domain = ctx.taxonomy.by_id(q.taxonomy_id)
            count = max(q.environments + 1, math.ceil(q.environments * spec.oversample))
            composed += variant_seeds(domain, range(count), round_key=round_key)
        seeds = seeds_stage(stage, composed, meta={"origin": "composed"})
        # One embedding per seed serves both steps: a composed candidate is a function of its seed
        # (domain and scope), so its seed's request stands in for it in the near-duplicate clustering.
        vectors = ctx.matcher.text_vectors([seed_text(s) for s in seeds.kept])
        inferred = candidates_stage(stage, seeds.kept, ctx.matcher, vectors=vectors)
        row_of = {s.id: i for i, s in enumerate(seeds.kept)}
        candidates = inferred.kept
        selection = selection_stage(
            stage, candidates, vectors[[row_of[c.seed_ids[0]] for c in candidates]], SELECTION
        )
        st.items = len(seeds.kept)
    outputs: list[StageOutput[Any]] = [seeds, inferred, selection]
    rejected["inference"] += len(inferred.rejected)
    rejected["selection"] += len(selection.rejected)

    # -- environments -------------------------------------------------------------------------
    by_seed = {s.id: s for s in seeds.kept}
    by_domain: dict[int, list[EnvCandidate]] = {}
    variant = {s.id: int(s.metadata.get("variant", 0)) for s in seeds.kept}
    for c in sorted(selection.kept, key=lambda c: min(variant.get(i, 0) for i in c.seed_ids)):
        by_domain.setdefault(c.coordinate.taxonomy_id, []).append(c)
    cfg = BuildConfig(toolset=ToolsetConfig())
    built: list[BuiltEnv] = []
    env_rows: list[dict[str, Any]] = []
    with clock.stage("environments") as st:
        for q in spec.domains:
            made = _build_domain(
                ctx, stage, by_domain.get(q.taxonomy_id, []), by_seed, q.environments, cfg, spec.id
            )
            built += made.kept
            outputs.append(made)
            rejected["environments"] += len(made.rejected)
        for b in built:
            bundle = write_bundle(b, ctx.storage.env_dir(b.env_id))
            env_rows.append(environment_index_row(b, bundle, shard=spec.id))
        st.items = len(built)
    dirs = [Path(r["path"]) for r in env_rows]

    # -- tasks on the shard's environments ----------------------------------------------------
    tasks: list[Task] = []
    refused: list[Rejection] = []

    def shares(total: int) -> list[int]:
        return per_item(total, len(dirs))

    # DAG tasks: both variants per environment in one call (one bundle load, graph and session);
    # an environment that yields fewer than its share passes the rest on to the next one
    with clock.stage(DAG_TASKS.name) as st:
        carry = {"dag-standard": 0, "dag-challenge": 0}
        standard, challenge = shares(spec.dag_standard), shares(spec.dag_challenge)
        for folder_, s_share, c_share in zip(dirs, standard, challenge, strict=True):
            want = {
                "dag-standard": s_share + carry["dag-standard"],
                "dag-challenge": c_share + carry["dag-challenge"],
            }
            plan = [(v, n) for v, n in want.items() if n > 0]
            if not plan:
                continue
            kept, rej = synthesize_dag_variants(folder_, ctx.sandbox, plan, seed=spec.seed)
            tasks.extend(kept)
            refused.extend(rej)
            kinds = Counter(str(t.kind) for t in kept)
            for v in carry:
                carry[v] = want[v] - kinds[v.replace("-", "_")]
            st.items += len(kept)

    with clock.stage(PROGRAM_TASKS.name) as st:
        carry_program = 0
        for folder_, share in zip(dirs, shares(spec.program), strict=True):
            want_program = share + carry_program
            if want_program <= 0:
                continue
            kept, rej = synthesize_program_tasks(folder_, ctx.sandbox, n=want_program, seed=spec.seed)
            tasks.extend(kept)
            refused.extend(rej)
            carry_program = want_program - len(kept)
            st.items += len(kept)

    with clock.stage(SOLVER_TASKS.name) as st:
        families = sorted(FAMILIES)
        solver_dirs: list[Path] = []
        for family, n in zip(families, per_item(spec.solver, len(families)), strict=True):
            if n <= 0:
                continue
            solved, made_dirs, refused_solver = synthesize_solver_tasks(
                ctx.sandbox, families=[family], per_family=n, seed=1000 * (spec.index + 1) + spec.seed,
                out_dir=ctx.storage.root / "envs",
            )  # fmt: skip
            tasks += solved
            solver_dirs += made_dirs
            refused += refused_solver
            st.items += len(solved)
    solver_rows = solver_environments(stage, solver_dirs, shard=spec.id)

    # -- write the shard ----------------------------------------------------------------------
    with clock.stage("write") as st:
        folder.mkdir(parents=True, exist_ok=True)
        made_tasks = tasks_stage(stage, tasks, refused)
        made_tasks.rows += solver_rows
        outputs.append(made_tasks)
        tasks = made_tasks.kept
        save_records(folder / "tasks.parquet", tasks, flat=TASK_FLAT)
        write_parquet(folder / "environments.parquet", env_rows, columns=ENV_INDEX_COLUMNS)
        save_rejections(folder / "rejected_tasks.parquet", made_tasks.rejected)
        rows: list[LineageRow] = []
        edges: list[Edge] = []
        for out in outputs:
            r, e = out.lineage(stage)
            rows += r
            edges += e
        rejected.update(f"task:{r.stage}" for r in refused)
        SegmentStore(segments_dir(ctx.storage, round_key), writer=f"scale-{os.getpid()}").record(
            rows, edges, step=spec.id
        )
        st.items = len(rows)
    counts = Counter(plan_kind(t.kind) for t in tasks)
    result = ShardResult(
        shard=spec.id,
        index=spec.index,
        environments=len(built),
        environments_wanted=spec.environments,
        tools=sum(len(b.spec.tools) for b in built),
        tasks=dict(sorted(counts.items())),
        tasks_wanted={
            "dag_standard": spec.dag_standard,
            "dag_challenge": spec.dag_challenge,
            "program": spec.program,
            "solver": spec.solver,
        },  # fmt: skip
        rejected=dict(sorted(rejected.items())),
        stages=list(clock.stages.values()),
        verify_seconds=round(sum(b.report.seconds for b in built), 3),
        seconds=round(time.perf_counter() - started, 3),
    )
    tmp = folder / "done.json.tmp"
    tmp.write_text(json.dumps(result.model_dump(mode="json"), indent=1), encoding="utf-8")
    os.replace(tmp, folder / "done.json")
    return result
