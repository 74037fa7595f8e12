"""How fast the lineage store answers at paper scale: a synthetic graph of about a million records.

The paper's corpus (5,018 environments, 255,375 tools, 52,361 tasks, their trajectories and
evaluations) puts roughly a million rows in the lineage store, and `agentomnia lineage trace` and
`agentomnia status` must still answer at a prompt. Waiting for a real paper-scale run to find out is
slow, so this module writes a graph of the same shape — seeds, candidates, selections, env specs,
toolsets, environments, tools, tasks, trajectories, evaluation results, failures, rejected rows, and
the self-evolution loop that steers later rounds' seeds — through `LineageStore.record`, then times
the reads the command line makes, each in a fresh connection as a new command would.
"""

from __future__ import annotations

import hashlib
import random
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentomnia.lineage.store import Edge, LineageRow, LineageStore
from agentomnia.taxonomy.domains import EXPECTED_COUNTS, ID_BASE

# Records per environment in the shape below: ~2 seeds, 1.5 candidates and selections, spec,
# toolset, environment, 51 tools, 10.4 tasks (+2 rejected), 83 trajectories, 31 results, 12 failures.
RECORDS_PER_ENV = 200
ROUNDS = ("r0", "r1", "r2")
# later rounds are smaller: self-evolution adds environments where the benchmark found gaps
ROUND_WEIGHTS = (0.6, 0.25, 0.15)
MODELS = ("policy-base", "policy-sft", "policy-rl")
# rows per `record` call: one shard of a sharded run, which bounds the generator's memory too
SHARD_RECORDS = 50_000


class LineageBench(BaseModel):
    """What `bench_lineage` measured; times are milliseconds unless named seconds."""

    records: int
    edges: int
    build_seconds: float  # inside `LineageStore.record` only
    generate_seconds: float  # making the synthetic rows, reported apart so it does not blur the store's cost
    trace_ms_median: float
    trace_ms_p95: float
    find_ms_median: float
    counts_ms_median: float
    peak_rss_mb: float
    file_mb: float

    def render(self) -> str:
        rate = self.records / self.build_seconds if self.build_seconds else 0.0
        rows = [
            ("records", f"{self.records:,}"),
            ("edges", f"{self.edges:,}"),
            ("build (LineageStore.record)", f"{self.build_seconds:.1f} s ({rate:,.0f} records/s)"),
            ("synthetic rows made in", f"{self.generate_seconds:.1f} s"),
            ("trace up of a task", f"median {self.trace_ms_median:.1f} ms, p95 {self.trace_ms_p95:.1f} ms"),
            ("find(kind, round)", f"median {self.find_ms_median:.1f} ms"),
            ("counts (status)", f"median {self.counts_ms_median:.1f} ms"),
            ("peak RSS", f"{self.peak_rss_mb:,.0f} MB"),
            ("store file", f"{self.file_mb:,.0f} MB"),
        ]
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


# The order the pipeline's assets write in; a shard's rows are written stage by stage, so a task's
# ancestors lie in different parts of the table, as they do after a real run.
STAGES = (
    "seed", "seed_rejection", "env_candidate", "selected_candidate", "env_spec", "toolset",
    "environment", "tool", "task", "trajectory", "eval_result", "failure", "diagnosis_report", "prd",
)  # fmt: skip
_STAGE_RANK = {kind: i for i, kind in enumerate(STAGES)}


@dataclass
class _Graph:
    """Ids the generator hands out and the few it must remember to link later records to."""

    rng: random.Random
    shard: int = 0
    serial: int = 0
    tasks: list[str] = field(default_factory=list)
    failures: dict[str, list[str]] = field(default_factory=dict)
    prds: dict[str, list[str]] = field(default_factory=dict)

    def new_id(self, kind: str) -> str:
        # content-hash-like ids: random order, so no index or zone map gets sorted input for free
        self.serial += 1
        return hashlib.sha256(f"{kind}:{self.serial}".encode()).hexdigest()[:16]

    def provenance(self, kind: str, rnd: str) -> dict[str, str]:
        """The run and artifact a row of this stage and shard points at, shaped like the pipeline's."""
        run = hashlib.sha256(f"run:{kind}:{rnd}:{self.shard}".encode()).hexdigest()
        run_id = f"{run[:8]}-{run[8:12]}-{run[12:16]}-{run[16:20]}-{run[20:32]}"
        return {
            "run_id": run_id,
            "location": f"/data/agentomnia/artifacts/{kind}/{rnd}/shard-{self.shard:04d}.parquet",
        }


def _coordinates() -> list[tuple[str, int, str, str]]:
    """(split, taxonomy id, l1, l2) for the 354 level-2 domains, named after their id."""
    out = []
    for split, (l1_count, l2_count) in EXPECTED_COUNTS.items():
        for k in range(l2_count):
            tid = ID_BASE[split] + k
            out.append((split, tid, f"{split}-l1-{k % l1_count:02d}", f"{split}-l2-{k:03d}"))
    return out


def _round_of(env_index: int, envs: int) -> str:
    cut = 0.0
    for name, weight in zip(ROUNDS, ROUND_WEIGHTS, strict=True):
        cut += weight * envs
        if env_index < cut:
            return name
    return ROUNDS[-1]


def _environment(
    g: _Graph, rnd: str, coord: tuple[str, int, str, str]
) -> tuple[list[LineageRow], list[Edge]]:
    """Everything one selected candidate leads to, from its seeds to the failures of its tasks."""
    split, tid, l1, l2 = coord
    rng = g.rng
    rows: list[LineageRow] = []
    edges: list[Edge] = []

    def add(kind: str, parents: list[tuple[str, str]], rid: str | None = None, **extra: Any) -> str:
        rid = rid or g.new_id(kind)
        where = g.provenance(kind, rnd)
        rows.append(
            LineageRow(
                id=rid, kind=kind, round=rnd, split=split, taxonomy_id=tid, l1=l1, l2=l2, **where, **extra
            )
        )
        edges.extend(Edge(child=rid, parent=p, relation=rel) for p, rel in parents)
        return rid

    seeds = [add("seed", []) for _ in range(rng.choice((1, 2, 2, 3)))]
    if rnd != ROUNDS[0] and g.prds.get(rnd) and rng.random() < 0.05:
        # a seed written from a PRD: its ancestry runs back through the diagnosis of earlier failures
        seeds.append(add("seed", [(rng.choice(g.prds[rnd]), "steered_by")]))
    if rng.random() < 0.2:
        add("seed_rejection", [], status="rejected", reason="schema: inputSchema is not an object schema")
    candidate = add("env_candidate", [(s, "inferred_from") for s in seeds])
    add("selected_candidate", [(candidate, "selection_of")], rid=f"sel-{rnd}-{candidate}")
    if rng.random() < 0.5:
        # a candidate the selection turned down: near-duplicate of one already kept
        other = add("env_candidate", [(seeds[0], "inferred_from")])
        add("selected_candidate", [(other, "selection_of")], rid=f"sel-{rnd}-{other}", status="rejected",
            reason="dedup: within 0.92 of a kept candidate")  # fmt: skip
    spec = add("env_spec", [(candidate, "state_space_of")])
    if rng.random() < 0.1:
        add("environment", [(candidate, "built_from")], rid=f"fail-verify-{candidate}", status="rejected",
            reason="verify: replay of rollout 2 diverged at step 4")  # fmt: skip
    toolset = add("toolset", [(spec, "tools_for")])
    tools = rng.randint(30, 72)
    env = add("environment", [(toolset, "built_from"), *((s, "seeded_by") for s in seeds)],
              meta={"tools": tools, "dropped_tools": rng.randint(0, 3), "spec_id": toolset})  # fmt: skip
    for k in range(tools):
        add("tool", [(env, "tool_of")], rid=f"{env}:tool_{k:02d}",
            meta={"op": rng.choice(("read", "write")), "kind": "api", "origin": rng.choice(("seed", "kb"))})  # fmt: skip
    for _ in range(rng.randint(0, 4)):
        add("task", [(env, "task_on")], status="rejected", reason="oracle: reference calls do not reach the goal",
            meta={"task_kind": "dag_standard", "times": rng.randint(1, 5)})  # fmt: skip
    for _ in range(rng.randint(6, 15)):
        task = add("task", [(env, "task_on")], meta={"task_kind": "dag_standard", "calls": rng.randint(2, 9)})
        g.tasks.append(task)
        for _ in range(rng.randint(4, 12)):
            verified = rng.random() < 0.7
            add("trajectory", [(task, "trajectory_of")], status="ok" if verified else "rejected",
                reason=None if verified else "judge: final state differs from the reference")  # fmt: skip
        for trial, policy in enumerate(MODELS):
            passed = rng.random() < 0.6
            result = add("eval_result", [(task, "evaluates")], status="ok" if passed else "failed",
                         meta={"policy": policy, "trial": trial, "score": float(passed)})  # fmt: skip
            if not passed:
                failure = add("failure", [(result, "failure_of")], meta={"tags": ["wrong_tool"]})
                g.failures.setdefault(rnd, []).append(failure)
    return rows, edges


def _evolution(g: _Graph, rnd: str, nxt: str) -> tuple[list[LineageRow], list[Edge]]:
    """Round `rnd`'s diagnosis of a sample of its failures and the PRDs that steer round `nxt`."""
    rows: list[LineageRow] = []
    edges: list[Edge] = []
    pool = g.failures.get(rnd, [])
    for _ in range(3):
        report = g.new_id("diagnosis_report")
        rows.append(LineageRow(id=report, kind="diagnosis_report", round=rnd))
        sample = g.rng.sample(pool, min(20, len(pool)))
        edges += [Edge(child=report, parent=f, relation="diagnoses") for f in sample]
        prd = g.new_id("prd")
        rows.append(LineageRow(id=prd, kind="prd", round=rnd))
        edges.append(Edge(child=prd, parent=report, relation="derived_from"))
        g.prds.setdefault(nxt, []).append(prd)
    return rows, edges


def synthetic_lineage(
    records: int, *, seed: int = 0, tasks: list[str] | None = None
) -> Iterator[tuple[list[LineageRow], list[Edge]]]:
    """Batches of rows and edges adding up to about `records` rows, one batch per shard of
    environments, each batch's rows in stage order. Deterministic for a given `seed`.

    Ids of the verified tasks are appended to `tasks` as they are made (the bench traces them).
    """
    g = _Graph(rng=random.Random(seed))
    coords = _coordinates()
    envs = max(1, round(records / RECORDS_PER_ENV))
    rows: list[LineageRow] = []
    edges: list[Edge] = []
    current = _round_of(0, envs)

    def batch() -> tuple[list[LineageRow], list[Edge]]:
        rows.sort(key=lambda r: _STAGE_RANK.get(r.kind, len(STAGES)))
        g.shard += 1
        return rows, edges

    for i in range(envs):
        rnd = _round_of(i, envs)
        if rnd != current:
            # a new round starts from the previous round's diagnosis, so its shards are closed first
            if rows:
                yield batch()
                rows, edges = [], []
            r, e = _evolution(g, current, rnd)
            rows += r
            edges += e
            current = rnd
        r, e = _environment(g, rnd, coords[i % len(coords)])
        rows += r
        edges += e
        if tasks is not None:
            tasks.extend(g.tasks)
        g.tasks.clear()
        if len(rows) >= SHARD_RECORDS:
            yield batch()
            rows, edges = [], []
    if rows or edges:
        yield batch()


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # kilobytes on Linux, bytes on macOS
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _timed(calls: Iterable[Callable[[], object]]) -> list[float]:
    """Milliseconds each call took."""
    out = []
    for call in calls:
        start = time.perf_counter()
        call()
        out.append((time.perf_counter() - start) * 1000)
    return out


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def bench_lineage(records: int = 1_000_000, *, folder: Path | None = None, repeats: int = 20) -> LineageBench:
    """Build a synthetic lineage store of about `records` rows in `folder` and time its reads.

    `folder` keeps the store for inspection (it must not hold one already); without it a temporary
    folder is used and removed. Trace times are over `repeats` random verified tasks, each traced
    up as the command line does; find times over random rounds of `find(kind="environment", round=...)`.
    """
    if records < RECORDS_PER_ENV:
        raise ValueError(
            f"records={records} is below one environment's worth; ask for at least {RECORDS_PER_ENV}"
        )
    if repeats < 1:
        raise ValueError(f"repeats={repeats}: time each read at least once")
    with tempfile.TemporaryDirectory(prefix="lineage-bench-") as tmp:
        path = (folder or Path(tmp)) / "lineage.duckdb"
        if path.exists():
            raise FileExistsError(
                f"{path} already holds a store, and writing it again would time nothing; "
                "remove it or pass an empty folder"
            )
        store = LineageStore(path)
        tasks: list[str] = []
        generate = build = 0.0
        batches = synthetic_lineage(records, tasks=tasks)
        while True:
            start = time.perf_counter()
            batch = next(batches, None)
            generate += time.perf_counter() - start
            if batch is None:
                break
            start = time.perf_counter()
            store.record(*batch)
            build += time.perf_counter() - start
        total_records, total_edges = store.file.query(
            "SELECT (SELECT count(*) FROM records), (SELECT count(*) FROM edges)"
        )[0]
        # each read from a new store object and connection, as each command line call makes one
        rng = random.Random(1)
        picks = [rng.choice(tasks) for _ in range(repeats)]
        trace = _timed(partial(LineageStore(path).trace, t) for t in picks)
        rounds = [rng.choice(ROUNDS) for _ in range(repeats)]
        find = _timed(partial(LineageStore(path).find, kind="environment", round=r) for r in rounds)
        counts = _timed(LineageStore(path).counts for _ in range(repeats))
        size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 2**20
        return LineageBench(
            records=int(total_records),
            edges=int(total_edges),
            generate_seconds=round(generate, 2),
            build_seconds=round(build, 2),
            trace_ms_median=round(statistics.median(trace), 2),
            trace_ms_p95=round(_p95(trace), 2),
            find_ms_median=round(statistics.median(find), 2),
            counts_ms_median=round(statistics.median(counts), 2),
            peak_rss_mb=round(_peak_rss_mb(), 1),
            file_mb=round(size, 1),
        )
