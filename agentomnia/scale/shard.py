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

from agentomnia.envs.build import (
    BuildConfig,
    BuildFailure,
    BuiltEnv,
    state_stage,
    toolset_stage,
    verify_stage,
    write_bundle,
)
from agentomnia.envs.toolset import ToolsetConfig
from agentomnia.lineage import Edge, LineageRow, lineage_row
from agentomnia.lineage.segments import SegmentStore
from agentomnia.records import content_hash
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.scale.plan import ShardSpec, per_item
from agentomnia.scale.seeds import variant_seeds
from agentomnia.seeds.inference import DomainMatcher, EnvCandidate, infer_candidates, seed_text
from agentomnia.seeds.models import Seed
from agentomnia.seeds.selection import SelectionConfig, select
from agentomnia.storage import Storage, save_records, write_parquet
from agentomnia.tasks.dag.synth import synthesize_dag_variants
from agentomnia.tasks.models import Task, TaskRejection
from agentomnia.tasks.program import synthesize_program_tasks
from agentomnia.tasks.solver import FAMILIES, synthesize_solver_tasks
from agentomnia.taxonomy import Taxonomy

STAGES = ("seeds", "environments", "dag_tasks", "program_tasks", "solver_tasks", "write")
# Composed slices of one domain read alike to a sentence embedder; their states tell them apart.
SELECTION = SelectionConfig(state_overlap=0.85)
ENV_INDEX_COLUMNS = ["env_id", "name", "path", "taxonomy_id", "split", "l1", "l2", "tools", "entities",
                     "attributes", "verify_seconds", "shard"]  # fmt: skip
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
    return storage.artifact_dir("scale", round_key) / "shards" / shard_id


def segments_dir(storage: Storage, round_key: str) -> Path:
    return storage.artifact_dir("scale", round_key) / "lineage"


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


def _env_row(b: BuiltEnv, folder: Path, shard: str) -> dict[str, Any]:
    c = b.spec.coordinate
    return {"env_id": b.env_id, "name": b.spec.name, "path": str(folder), "taxonomy_id": c.taxonomy_id,
            "split": c.split, "l1": c.l1, "l2": c.l2, "tools": len(b.spec.tools), "entities": len(b.spec.entities),
            "attributes": b.spec.attribute_count, "verify_seconds": b.report.seconds, "shard": shard}  # fmt: skip


def _build_domain(
    ctx: ShardContext, candidates: list[EnvCandidate], seeds: dict[str, Seed], wanted: int, cfg: BuildConfig
) -> tuple[list[BuiltEnv], list[BuildFailure]]:
    built: list[BuiltEnv] = []
    failures: list[BuildFailure] = []
    for c in candidates:
        if len(built) >= wanted:
            break
        own = [seeds[i] for i in c.seed_ids if i in seeds]
        state = state_stage(c, own, ctx.taxonomy.by_id(c.coordinate.taxonomy_id))
        if isinstance(state, BuildFailure):
            failures.append(state)
            continue
        tooled = toolset_stage(state[0], own, state[1], cfg.toolset)
        if isinstance(tooled, BuildFailure):
            failures.append(tooled)
            continue
        result = verify_stage(tooled[0], state[1], tooled[1], ctx.sandbox, config=cfg)
        (built if isinstance(result, BuiltEnv) else failures).append(result)  # type: ignore[arg-type]
    return built, failures


def run_shard(ctx: ShardContext, spec: ShardSpec, round_key: str, run_id: str) -> ShardResult:
    """Make shard `spec` of round `round_key` unless an earlier run finished it."""
    folder = shard_dir(ctx.storage, round_key, spec.id)
    previous = finished(folder)
    if previous is not None:
        return previous.model_copy(update={"skipped": True})
    started = time.perf_counter()
    clock = _Clock()
    rows: list[LineageRow] = []
    edges: list[Edge] = []
    rejected: Counter[str] = Counter()

    # -- seeds, candidates, selection ---------------------------------------------------------
    with clock.stage("seeds") as st:
        seeds: list[Seed] = []
        for q in spec.domains:
            domain = ctx.taxonomy.by_id(q.taxonomy_id)
            count = max(q.environments + 1, math.ceil(q.environments * spec.oversample))
            seeds += variant_seeds(domain, range(count), round_key=round_key)
        # One embedding per seed serves both steps: a composed candidate is a function of its seed
        # (domain and scope), so its seed's request stands in for it in the near-duplicate clustering.
        vectors = ctx.matcher.text_vectors([seed_text(s) for s in seeds])
        candidates, failed = infer_candidates(seeds, ctx.matcher, vectors=vectors)
        row_of = {s.id: i for i, s in enumerate(seeds)}
        selection = select(candidates, vectors[[row_of[c.seed_ids[0]] for c in candidates]], SELECTION)
        st.items = len(seeds)
    rows += [lineage_row(s, run_id=run_id, meta={"origin": "composed"}) for s in seeds]
    rows += [lineage_row(c, run_id=run_id) for c in candidates]
    edges += [
        Edge(child=c.id, parent=sid, relation="inferred_from") for c in candidates for sid in c.seed_ids
    ]
    for seed, why in failed:
        rows.append(LineageRow(id=f"rej-seed-{seed.id}", kind="seed_rejection", round=round_key,
                               status="rejected", reason=why[:2000], run_id=run_id))  # fmt: skip
        edges.append(Edge(child=f"rej-seed-{seed.id}", parent=seed.id, relation="rejection_of"))
    rejected["inference"] += len(failed)
    by_id = {c.id: c for c in candidates}
    decided: list[tuple[EnvCandidate, str, str | None]] = [(c, "ok", None) for c in selection.selected]
    decided += [(by_id[r.candidate_id], "rejected", f"{r.rule}: {r.reason}") for r in selection.rejected]
    for c, status, reason in decided:
        row = lineage_row(c, kind="selected_candidate", status=status, reason=reason, run_id=run_id)
        rows.append(row.model_copy(update={"id": f"sel-{round_key}-{c.id}"}))
        edges.append(Edge(child=f"sel-{round_key}-{c.id}", parent=c.id, relation="selection_of"))
    rejected["selection"] += len(selection.rejected)

    # -- environments -------------------------------------------------------------------------
    by_seed = {s.id: s for s in seeds}
    by_domain: dict[int, list[EnvCandidate]] = {}
    variant = {s.id: int(s.metadata.get("variant", 0)) for s in seeds}
    for c in sorted(selection.selected, key=lambda c: min(variant.get(i, 0) for i in c.seed_ids)):
        by_domain.setdefault(c.coordinate.taxonomy_id, []).append(c)
    cfg = BuildConfig(toolset=ToolsetConfig())
    built: list[BuiltEnv] = []
    env_rows: list[dict[str, Any]] = []
    with clock.stage("environments") as st:
        for q in spec.domains:
            made, failures = _build_domain(
                ctx, by_domain.get(q.taxonomy_id, []), by_seed, q.environments, cfg
            )
            built += made
            for f in failures:
                rid = f"fail-{f.stage}-{f.candidate_id}"
                rows.append(LineageRow(id=rid, kind="environment", round=round_key, status="rejected",
                                       reason=f"{f.stage}: {f.reason}"[:2000], run_id=run_id))  # fmt: skip
                edges.append(Edge(child=rid, parent=f.candidate_id, relation="built_from"))
            rejected["environments"] += len(failures)
        for b in built:
            bundle = write_bundle(b, ctx.storage.env_dir(b.env_id))
            env_rows.append(_env_row(b, bundle, spec.id))
            row = lineage_row(b.spec.in_round(round_key), kind="environment", run_id=run_id, location=str(bundle),
                              meta={"tools": len(b.spec.tools), "spec_id": b.spec.id, "shard": spec.id})  # fmt: skip
            rows.append(row.model_copy(update={"id": b.env_id}))
            edges.append(Edge(child=b.env_id, parent=b.spec.candidate_id, relation="built_from"))
            co = b.spec.coordinate
            for t in b.spec.tools:
                tid = f"{b.env_id}:{t.name}"
                rows.append(LineageRow(id=tid, kind="tool", round=round_key, split=co.split, taxonomy_id=co.taxonomy_id,
                                       l1=co.l1, l2=co.l2, run_id=run_id, location=str(bundle / "tools.json"),
                                       meta={"op": t.op, "kind": t.kind, "origin": t.origin}))  # fmt: skip
                edges.append(Edge(child=tid, parent=b.env_id, relation="tool_of"))
        st.items = len(built)
    dirs = [Path(r["path"]) for r in env_rows]

    # -- tasks on the shard's environments ----------------------------------------------------
    tasks: list[Task] = []
    refused: list[TaskRejection] = []

    def shares(total: int) -> list[int]:
        return per_item(total, len(dirs))

    # DAG tasks: both variants per environment in one call (one bundle load, graph and session);
    # an environment that yields fewer than its share passes the rest on to the next one
    with clock.stage("dag_tasks") as st:
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

    with clock.stage("program_tasks") as st:
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

    with clock.stage("solver_tasks") as st:
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
    rows += [LineageRow(id=d.name, kind="environment", round=round_key, run_id=run_id, location=str(d),
                        meta={"origin": "solver", "shard": spec.id}) for d in solver_dirs]  # fmt: skip

    # -- write the shard ----------------------------------------------------------------------
    with clock.stage("write") as st:
        folder.mkdir(parents=True, exist_ok=True)
        tasks = [t.in_round(round_key) for t in tasks]
        tasks_path = save_records(folder / "tasks.parquet", tasks, flat=TASK_FLAT)
        write_parquet(folder / "environments.parquet", env_rows, columns=ENV_INDEX_COLUMNS)
        write_parquet(folder / "rejected_tasks.parquet", [r.model_dump() for r in refused],
                      columns=["env_id", "kind", "stage", "reason"])  # fmt: skip
        rows += [lineage_row(t, run_id=run_id, location=str(tasks_path),
                             meta={"task_kind": t.kind, "calls": len(t.reference_calls)}) for t in tasks]  # fmt: skip
        edges += [Edge(child=t.id, parent=t.env_id, relation="task_on") for t in tasks]
        reasons = Counter((r.env_id, r.kind, r.stage, r.reason[:160]) for r in refused)
        for (env_id, kind, stage, reason), n in reasons.items():
            rid = f"rej-scale-{round_key}-{content_hash([env_id, kind, stage, reason], 12)}"
            rows.append(LineageRow(id=rid, kind="task", round=round_key, status="rejected", reason=f"{stage}: {reason}",
                                   run_id=run_id, meta={"task_kind": kind, "times": n}))  # fmt: skip
            edges.append(Edge(child=rid, parent=env_id, relation="task_on"))
        rejected.update(f"task:{r.stage}" for r in refused)
        SegmentStore(segments_dir(ctx.storage, round_key), writer=f"scale-{os.getpid()}").record(
            rows, edges, step=spec.id
        )
        st.items = len(rows)
    counts = Counter("solver" if t.kind.startswith("solver") else t.kind for t in tasks)  # the plan's kinds
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
