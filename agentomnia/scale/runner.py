"""A scale run: shards in parallel worker processes, then one merge.

Workers are spawned processes (never forked: a Dagster step process has threads), each holding
one matcher and one sandbox for all the shards it takes; the parent only hands out shards,
samples the memory of its whole process tree, and merges. Shards already finished by an earlier
run of the same plan are skipped, so a killed run resumes where it stopped.

The merge streams the shards' Parquet files into the round's tables (`scale/<round>/`:
environments, tasks, rejected tasks) one file at a time, moves the lineage segments into the
DuckDB store, and writes `summary.json` with the measured figures.
"""

from __future__ import annotations

import atexit
import json
import multiprocessing
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

import psutil
import pyarrow.parquet as pq
from pydantic import BaseModel, Field

from agentomnia.catalog import SCALE
from agentomnia.processes import exit_with_parent, stdout_to_stderr
from agentomnia.scale.plan import ScalePlan, ShardSpec, plan_kind, shard_plan
from agentomnia.scale.shard import STAGES, ShardContext, ShardResult, StageTime, run_shard, segments_dir
from agentomnia.storage import Storage
from agentomnia.taxonomy import load_taxonomy

Progress = Callable[[str], None]


class ScaleSummary(BaseModel):
    """The figures of one scale run (also `summary.json` in the round's scale folder)."""

    round: str
    plan: ScalePlan
    shards: int
    shards_skipped: int
    environments: int
    environments_wanted: int
    tools: int
    tasks: dict[str, int]
    tasks_wanted: dict[str, int]
    l2_domains: int
    l1_domains: int
    rejected: dict[str, int]
    stages: list[StageTime]
    seconds: float
    environments_per_min: float
    tools_per_min: float
    tasks_per_min: float
    verification_share: float = Field(description="share of environment-building time spent verifying")
    peak_rss_mb: float
    workers: int
    lineage_records: int = 0
    distinct_queries: dict[str, float] = Field(
        default_factory=dict,
        description="per task kind, distinct public queries / tasks: 1.0 when no two tasks read the same",
    )

    @property
    def tasks_total(self) -> int:
        return sum(self.tasks.values())

    def bench(self) -> dict[str, Any]:
        """The `bench scale --json` document."""
        return {
            "environments_per_min": self.environments_per_min,
            "tools_per_min": self.tools_per_min,
            "tasks_per_min": self.tasks_per_min,
            "verification_share": self.verification_share,
            "peak_rss_mb": self.peak_rss_mb,
            "seconds": self.seconds,
            "environments": self.environments,
            "tools": self.tools,
            "tasks": self.tasks_total,
            "tasks_by_kind": self.tasks,
            "l2_domains": self.l2_domains,
            "distinct_queries": self.distinct_queries,
            "workers": self.workers,
            "stages": [s.model_dump() for s in self.stages],
        }

    def render(self) -> str:
        lines = [
            f"scale run {self.round}: {self.shards} shards ({self.shards_skipped} already done), "
            f"{self.workers} workers, {self.seconds:.0f} s, peak RSS {self.peak_rss_mb:.0f} MB",
            "",
            f"  environments  {self.environments:>8} of {self.environments_wanted}"
            f"  ({self.environments_per_min:.1f}/min; {self.l2_domains} L2 / {self.l1_domains} L1 domains)",
            f"  tools         {self.tools:>8}  ({self.tools_per_min:.0f}/min)",
        ]
        for kind, wanted in self.tasks_wanted.items():
            distinct = self.distinct_queries.get(kind)
            lines.append(f"  {kind:<13} {self.tasks.get(kind, 0):>8} of {wanted}"
                         + (f"  ({distinct:.1%} distinct queries)" if distinct is not None else ""))  # fmt: skip
        lines.append(f"  tasks         {self.tasks_total:>8} of {sum(self.tasks_wanted.values())}"
                     f"  ({self.tasks_per_min:.0f}/min)")  # fmt: skip
        lines += ["", f"  {'stage':<15} {'items':>9} {'seconds':>10} {'share':>7}"]
        busy = sum(s.seconds for s in self.stages) or 1.0
        lines += [
            f"  {s.stage:<15} {s.items:>9} {s.seconds:>10.1f} {s.seconds / busy:>7.1%}" for s in self.stages
        ]
        lines.append(f"  verification share of environment building: {self.verification_share:.1%}")
        if self.rejected:
            lines += ["", "  rejected: " + ", ".join(f"{k} {v}" for k, v in self.rejected.items())]
        return "\n".join(lines)


# -- worker processes -----------------------------------------------------------------------------

_CONTEXT: ShardContext | None = None


def _worker_init(home: str, sandbox_workers: int) -> None:
    global _CONTEXT
    stdout_to_stderr()
    exit_with_parent()
    os.environ["AGENTOMNIA_HOME"] = home
    cache = Path(home) / "cache" / "embeddings"
    cache.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("AGENTOMNIA_EMBEDDING_CACHE", str(cache))
    import torch

    torch.set_num_threads(1)  # one core per worker process: the workers are the parallelism
    from agentomnia.embeddings import default_embedder
    from agentomnia.sandbox.sandbox import Sandbox
    from agentomnia.seeds.inference import DomainMatcher

    taxonomy = load_taxonomy()
    storage = Storage(home)
    sandbox = Sandbox(sandbox_workers)
    atexit.register(sandbox.close)
    _CONTEXT = ShardContext(storage, taxonomy, DomainMatcher(taxonomy, default_embedder()), sandbox)


def _worker_run(spec: ShardSpec, round_key: str, run_id: str) -> ShardResult:
    assert _CONTEXT is not None, "worker not initialised"
    return run_shard(_CONTEXT, spec, round_key, run_id)


class _RssSampler:
    """Peak resident memory of this process and all its descendants, sampled every `every_s`."""

    def __init__(self, every_s: float = 0.5) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(every_s,), daemon=True)

    def _loop(self, every_s: float) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            total = 0
            for p in [me, *me.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
            self.peak = max(self.peak, total)
            self._stop.wait(every_s)

    def __enter__(self) -> _RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


# -- the run --------------------------------------------------------------------------------------


def scale_dir(storage: Storage, round_key: str) -> Path:
    return storage.round(round_key).dir(SCALE)


def run_scale(
    plan: ScalePlan,
    *,
    storage: Storage | None = None,
    round_key: str = "paper",
    workers: int = 2,
    run_id: str | None = None,
    progress: Progress | None = None,
    limit_shards: int | None = None,
) -> ScaleSummary:
    """Make `plan` into round `round_key` of the home, resuming finished shards; return the figures.

    `limit_shards` stops after that many shards (a partial run; the next call resumes)."""
    storage = storage or Storage()
    say = progress or (lambda _: None)
    run_id = run_id or f"scale-{uuid.uuid4().hex[:12]}"
    specs = shard_plan(plan, load_taxonomy())
    todo = specs[:limit_shards] if limit_shards is not None else specs
    say(
        f"{len(specs)} shards of about {plan.shard_environments} environments; {len(todo)} to run on {workers} workers"
    )
    started = time.perf_counter()
    results: list[ShardResult] = []
    with _RssSampler() as rss:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(
            max_workers=max(1, workers), mp_context=context, initializer=_worker_init,
            initargs=(str(storage.root), 1),
        ) as pool:  # fmt: skip
            pending: dict[Future[ShardResult], ShardSpec] = {}
            queue = list(todo)
            while queue or pending:
                while queue and len(pending) < max(1, workers) * 2:
                    spec = queue.pop(0)
                    pending[pool.submit(_worker_run, spec, round_key, run_id)] = spec
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    spec = pending.pop(future)
                    result = future.result()
                    results.append(result)
                    elapsed = time.perf_counter() - started
                    envs = sum(r.environments for r in results)
                    say(f"shard {spec.index + 1}/{len(specs)} {'skipped (done before)' if result.skipped else 'done'}: "
                        f"{result.environments} environments, {sum(result.tasks.values())} tasks in {result.seconds:.0f} s; "
                        f"{len(results)}/{len(todo)} shards, {envs} environments in {elapsed:.0f} s")  # fmt: skip
        say("merging shards and lineage")
        merge_started = time.perf_counter()
        lineage_records = merge(storage, round_key, [r.shard for r in sorted(results, key=lambda r: r.index)])
        merge_seconds = time.perf_counter() - merge_started
    seconds = time.perf_counter() - started
    summary = summarize(plan, round_key, results, seconds, rss.peak, workers, storage, merge_seconds)
    summary = summary.model_copy(update={"lineage_records": lineage_records})
    out = scale_dir(storage, round_key) / "summary.json"
    out.write_text(json.dumps(summary.model_dump(mode="json"), indent=1), encoding="utf-8")
    return summary


def summarize(
    plan: ScalePlan,
    round_key: str,
    results: Sequence[ShardResult],
    seconds: float,
    peak_rss: int,
    workers: int,
    storage: Storage,
    merge_seconds: float = 0.0,
) -> ScaleSummary:
    ran = [r for r in results if not r.skipped]
    stage_totals: dict[str, StageTime] = {s: StageTime(stage=s, items=0, seconds=0.0) for s in STAGES}
    for r in results:
        for s in r.stages:
            t = stage_totals[s.stage]
            stage_totals[s.stage] = StageTime(
                stage=s.stage, items=t.items + s.items, seconds=t.seconds + s.seconds
            )
    stages = [s.model_copy(update={"seconds": round(s.seconds, 2)}) for s in stage_totals.values()]
    stages.append(StageTime(stage="merge", items=len(results), seconds=round(merge_seconds, 2)))
    tasks: Counter[str] = Counter()
    rejected: Counter[str] = Counter()
    for r in results:
        tasks.update(r.tasks)
        rejected.update(r.rejected)
    wanted: Counter[str] = Counter()
    for r in results:
        wanted.update(r.tasks_wanted)
    envs = sum(r.environments for r in results)
    tools = sum(r.tools for r in results)
    per_min = 60.0 / seconds if seconds > 0 else 0.0
    # throughput counts what this run made, not shards an earlier run finished
    made_envs = sum(r.environments for r in ran)
    made_tools = sum(r.tools for r in ran)
    made_tasks = sum(sum(r.tasks.values()) for r in ran)
    env_seconds = sum(s.seconds for r in ran for s in r.stages if s.stage == "environments")
    l2, l1 = _domains(storage, round_key)
    distinct = _distinct_queries(storage, round_key)
    return ScaleSummary(
        round=round_key, plan=plan, shards=len(results), shards_skipped=len(results) - len(ran),
        environments=envs, environments_wanted=sum(r.environments_wanted for r in results), tools=tools,
        tasks=dict(sorted(tasks.items())), tasks_wanted=dict(wanted), l2_domains=l2, l1_domains=l1,
        rejected=dict(sorted(rejected.items())), stages=stages, seconds=round(seconds, 1),
        environments_per_min=round(made_envs * per_min, 1), tools_per_min=round(made_tools * per_min, 1),
        tasks_per_min=round(made_tasks * per_min, 1),
        verification_share=round(sum(r.verify_seconds for r in ran) / env_seconds, 3) if env_seconds else 0.0,
        peak_rss_mb=round(peak_rss / 2**20, 1), workers=workers, distinct_queries=distinct,
    )  # fmt: skip


def _domains(storage: Storage, round_key: str) -> tuple[int, int]:
    path = scale_dir(storage, round_key) / "environments.parquet"
    if not path.exists():
        return 0, 0
    table = pq.read_table(path, columns=["taxonomy_id", "l1"])
    return len(set(table.column("taxonomy_id").to_pylist())), len(set(table.column("l1").to_pylist()))


def _distinct_queries(storage: Storage, round_key: str) -> dict[str, float]:
    """Per task kind, the share of distinct public queries in the merged corpus: templated
    requests show up here long before they show up in training."""
    path = scale_dir(storage, round_key) / "tasks.parquet"
    if not path.exists():
        return {}
    table = pq.read_table(path, columns=["kind", "query"])
    seen: dict[str, set[str]] = {}
    totals: Counter[str] = Counter()
    for task_kind, query in zip(
        table.column("kind").to_pylist(), table.column("query").to_pylist(), strict=True
    ):
        kind = plan_kind(task_kind)
        seen.setdefault(kind, set()).add(query)
        totals[kind] += 1
    return {kind: round(len(seen[kind]) / totals[kind], 4) for kind in sorted(totals)}


def _concat(sources: Sequence[Path], out: Path) -> int:
    """Stream Parquet files with one schema into `out`, one file in memory at a time."""
    tmp = out.with_suffix(".parquet.tmp")
    writer: pq.ParquetWriter | None = None
    rows = 0
    try:
        for src in sources:
            if not src.exists():
                continue
            table = pq.read_table(src)
            if table.num_rows == 0:
                continue
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema)
            writer.write_table(table.cast(writer.schema))
            rows += table.num_rows
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        out.unlink(missing_ok=True)
        return 0
    os.replace(tmp, out)
    return rows


def merge(storage: Storage, round_key: str, shard_ids: Sequence[str]) -> int:
    """The round's tables from its shards, and its lineage moved into the DuckDB store."""
    from agentomnia.lineage import LineageStore
    from agentomnia.lineage.segments import absorb

    root = scale_dir(storage, round_key)
    folders = [root / "shards" / s for s in shard_ids]
    for name in ("environments", "tasks", "rejected_tasks"):
        _concat([f / f"{name}.parquet" for f in folders], root / f"{name}.parquet")
    result = absorb(segments_dir(storage, round_key), LineageStore(storage.lineage_path))
    return result.records
