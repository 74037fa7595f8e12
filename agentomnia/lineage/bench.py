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
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

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
# environments whose candidates are written in one `record` call: bounded memory, like a shard
ENVS_PER_BATCH = 250


class LineageBench(BaseModel):
    """What `bench_lineage` measured; times are milliseconds unless named seconds."""

    records: int
    edges: int
    build_seconds: float
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
            ("build", f"{self.build_seconds:.1f} s ({rate:,.0f} records/s)"),
            ("trace up of a task", f"median {self.trace_ms_median:.1f} ms, p95 {self.trace_ms_p95:.1f} ms"),
            ("find(kind, round)", f"median {self.find_ms_median:.1f} ms"),
            ("counts (status)", f"median {self.counts_ms_median:.1f} ms"),
            ("peak RSS", f"{self.peak_rss_mb:,.0f} MB"),
            ("store file", f"{self.file_mb:,.0f} MB"),
        ]
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


@dataclass
class _Graph:
    """Ids the generator hands out and the few it must remember to link later records to."""

    rng: random.Random
    serial: int = 0
    tasks: list[str] = field(default_factory=list)
    failures: dict[str, list[str]] = field(default_factory=dict)
    prds: dict[str, list[str]] = field(default_factory=dict)

    def new_id(self, kind: str) -> str:
        # content-hash-like ids: random order, so no index or zone map gets sorted input for free
        self.serial += 1
        return hashlib.sha256(f"{kind}:{self.serial}".encode()).hexdigest()[:16]


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


def _environment(g: _Graph, rnd: str, coord: tuple[str, int, str, str]) -> tuple[list[LineageRow], list[Edge]]:
    """Everything one selected candidate leads to, from its seeds to the failures of its tasks."""
    split, tid, l1, l2 = coord
    rng = g.rng
    rows: list[LineageRow] = []
    edges: list[Edge] = []

    def add(kind: str, parents: list[tuple[str, str]], rid: str | None = None, **extra: object) -> str:
        rid = rid or g.new_id(kind)
        rows.append(
            LineageRow(id=rid, kind=kind, round=rnd, split=split, taxonomy_id=tid, l1=l1, l2=l2, **extra)  # type: ignore[arg-type]
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
    env = add("environment", [(toolset, "built_from"), *((s, "seeded_by") for s in seeds)])
    for k in range(rng.randint(30, 72)):
        add("tool", [(env, "tool_of")], rid=f"{env}:tool_{k:02d}")
    for _ in range(rng.randint(0, 4)):
        add("task", [(env, "task_on")], status="rejected", reason="oracle: reference calls do not reach the goal")
    for _ in range(rng.randint(6, 15)):
        task = add("task", [(env, "task_on")])
        g.tasks.append(task)
        for _ in range(rng.randint(4, 12)):
            add("trajectory", [(task, "trajectory_of")])
        for _ in MODELS:
            result = add("eval_result", [(task, "evaluates")])
            if rng.random() < 0.4:
                failure = add("failure", [(result, "failure_of")])
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
    """Batches of rows and edges adding up to about `records` rows, in the order a run writes them.

    Ids of the verified tasks are appended to `tasks` as they are made (the bench traces them).
    """
    g = _Graph(rng=random.Random(seed))
    coords = _coordinates()
    envs = max(1, round(records / RECORDS_PER_ENV))
    rows: list[LineageRow] = []
    edges: list[Edge] = []
    current = _round_of(0, envs)
    for i in range(envs):
        rnd = _round_of(i, envs)
        if rnd != current:
            r, e = _evolution(g, current, rnd)
            rows += r
            edges += e
            current = rnd
        r, e = _environment(g, rnd, coords[i % len(coords)])
        rows += r
        edges += e
        if (i + 1) % ENVS_PER_BATCH == 0:
            yield rows, edges
            rows, edges = [], []
        if tasks is not None:
            tasks.extend(g.tasks)
        g.tasks.clear()
    if rows or edges:
        yield rows, edges


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # kilobytes on Linux, bytes on macOS
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _ms(fn: object, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        out.append((time.perf_counter() - start) * 1000)
    return out


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def bench_lineage(
    records: int = 1_000_000, *, folder: Path | None = None, repeats: int = 20
) -> LineageBench:
    """Build a synthetic lineage store of about `records` rows in `folder` and time its reads.

    `folder` keeps the store for inspection (a store already there is written again, which
    changes nothing: ids are deterministic); without it a temporary folder is used and removed.
    Trace times are over `repeats` random verified tasks, each traced up as the command line does.
    """
    if records < RECORDS_PER_ENV:
        raise ValueError(f"records={records} is below one environment's worth; ask for at least {RECORDS_PER_ENV}")
    if repeats < 1:
        raise ValueError(f"repeats={repeats}: time each read at least once")
    with tempfile.TemporaryDirectory(prefix="lineage-bench-") as tmp:
        path = (folder or Path(tmp)) / "lineage.duckdb"
        path.parent.mkdir(parents=True, exist_ok=True)
        store = LineageStore(path)
        tasks: list[str] = []
        start = time.perf_counter()
        for rows, edges in synthetic_lineage(records, tasks=tasks):
            store.record(rows, edges)
        build = time.perf_counter() - start
        total_records, total_edges = store.file.query(
            "SELECT (SELECT count(*) FROM records), (SELECT count(*) FROM edges)"
        )[0]
        rng = random.Random(1)
        picks = iter([rng.choice(tasks) for _ in range(repeats)])
        trace = _ms(lambda: LineageStore(path).trace(next(picks)), repeats)
        rounds = iter([rng.choice(ROUNDS) for _ in range(repeats)])
        find = _ms(lambda: LineageStore(path).find(kind="environment", round=next(rounds)), repeats)
        counts = _ms(lambda: LineageStore(path).counts(), repeats)
        size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 2**20
        return LineageBench(
            records=int(total_records),
            edges=int(total_edges),
            build_seconds=round(build, 2),
            trace_ms_median=round(statistics.median(trace), 2),
            trace_ms_p95=round(_p95(trace), 2),
            find_ms_median=round(statistics.median(find), 2),
            counts_ms_median=round(statistics.median(counts), 2),
            peak_rss_mb=round(_peak_rss_mb(), 1),
            file_mb=round(size, 1),
        )
