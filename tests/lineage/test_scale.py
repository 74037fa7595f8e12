"""Lineage at scale: traces over a synthetic corpus equal a naive walk, and the counts summary holds."""

from __future__ import annotations

import random
import time
from collections import defaultdict
from pathlib import Path
from typing import Literal

import pytest

from agentomnia.lineage import Edge, LineageRow, LineageStore, SegmentStore, absorb
from agentomnia.lineage.bench import LineageBench, bench_lineage, synthetic_lineage
from agentomnia.lineage.store import _IN_LIST_MAX

EdgeKey = tuple[str, str, str]


def _naive(
    step: dict[str, list[EdgeKey]], start: str, direction: Literal["up", "down"], max_depth: int | None
) -> tuple[set[str], set[EdgeKey]]:
    """Breadth-first walk over every edge held in memory: the reference a trace must equal."""
    seen, frontier, found, depth = {start}, {start}, set(), 0
    while frontier and (max_depth is None or depth < max_depth):
        depth += 1
        reached = set()
        for node in frontier:
            for e in step.get(node, ()):
                found.add(e)
                reached.add(e[1] if direction == "up" else e[0])
        frontier = reached - seen
        seen |= frontier
    return seen, found


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[LineageStore, list[str], list[EdgeKey]]:
    store = LineageStore(tmp_path_factory.mktemp("scale") / "lineage.duckdb")
    tasks: list[str] = []
    for rows, edges in synthetic_lineage(50_000, seed=7, tasks=tasks):
        store.record(rows, edges)
    keys = [(c, p, r) for c, p, r in store.file.query("SELECT child, parent, relation FROM edges")]
    return store, tasks, keys


def test_corpus_has_the_pipeline_shape(corpus: tuple[LineageStore, list[str], list[EdgeKey]]) -> None:
    store, tasks, edges = corpus
    by_kind: dict[str, int] = defaultdict(int)
    for c in store.counts():
        by_kind[c["kind"]] += c["count"]
    assert 45_000 <= sum(by_kind.values()) <= 55_000
    assert by_kind["tool"] > by_kind["task"] > by_kind["environment"] > 200
    assert by_kind["trajectory"] > by_kind["eval_result"] > by_kind["failure"] > 0
    assert {"seed", "env_candidate", "selected_candidate", "env_spec", "toolset", "prd"} <= set(by_kind)
    assert len(tasks) == sum(
        c["count"] for c in store.counts() if c["kind"] == "task" and c["status"] == "ok"
    )
    assert {r for _, _, r in edges} >= {"task_on", "tool_of", "built_from", "seeded_by", "steered_by"}


def test_trace_equals_a_naive_walk(corpus: tuple[LineageStore, list[str], list[EdgeKey]]) -> None:
    store, tasks, edges = corpus
    rng = random.Random(3)
    prds = [r.id for r in store.find(kind="prd")]
    seeds = [r.id for r in store.find(kind="seed", limit=500)]
    cases: list[tuple[str, Literal["up", "down"], int | None]] = [
        (t, "up", None) for t in rng.sample(tasks, 25)
    ]
    cases += [(s, "down", None) for s in rng.sample(seeds, 5)] + [(p, "down", None) for p in prds]
    cases += [(t, "up", 2) for t in rng.sample(tasks, 5)] + [(s, "down", 3) for s in rng.sample(seeds, 3)]
    # a task whose environment was seeded from a PRD: its ancestry runs through a diagnosis report
    steered_seeds = {c for c, _, r in edges if r == "steered_by"}
    steered_envs = {c for c, p, r in edges if r == "seeded_by" and p in steered_seeds}
    steered = sorted({c for c, p, r in edges if r == "task_on" and p in steered_envs} & set(tasks))
    assert steered, "the corpus should hold tasks of PRD-steered seeds; raise the steering share"
    cases.append((steered[0], "up", None))
    steps: dict[str, dict[str, list[EdgeKey]]] = {"up": defaultdict(list), "down": defaultdict(list)}
    for e in edges:
        steps["up"][e[0]].append(e)
        steps["down"][e[1]].append(e)
    took = []
    for record_id, direction, depth in cases:
        start = time.perf_counter()
        trace = store.trace(record_id, direction, depth)
        took.append(time.perf_counter() - start)
        nodes, found = _naive(steps[direction], record_id, direction, depth)
        assert set(trace.rows) == nodes, (record_id, direction, depth)
        assert {(e.child, e.parent, e.relation) for e in trace.edges} == found
        assert len(trace.edges) == len(found), "an edge was reported twice"
        assert all(row is not None for row in trace.rows.values()), "every synthetic record is stored"
    assert {r.kind for r in store.trace(steered[0]).rows.values() if r} >= {
        "prd",
        "diagnosis_report",
        "failure",
    }
    # a loose bound: the figures that matter come from `bench_lineage` at a million records
    assert max(took) < 1.0, f"slowest trace took {max(took):.2f}s"


def test_wide_frontiers_take_the_join_path(tmp_path: Path) -> None:
    store = LineageStore(tmp_path / "l.duckdb")
    width = _IN_LIST_MAX + 300
    rows = [LineageRow(id="root", kind="environment")] + [
        LineageRow(id=f"tool-{i}", kind="tool") for i in range(width)
    ]
    edges = [Edge(child=f"tool-{i}", parent="root", relation="tool_of") for i in range(width)]
    edges += [Edge(child="leaf", parent=f"tool-{i}", relation="derived_from") for i in range(width)]
    store.record([*rows, LineageRow(id="leaf", kind="trajectory")], edges)
    down = store.trace("root", "down")
    assert down.ids() == {f"tool-{i}" for i in range(width)} | {"leaf"}
    assert len(down.edges) == 2 * width and all(down.rows.values())
    up = store.trace("leaf")
    assert up.ids() == {f"tool-{i}" for i in range(width)} | {"root"}


def test_counts_summary_follows_every_write(tmp_path: Path) -> None:
    store = LineageStore(tmp_path / "l.duckdb")
    aggregate = "SELECT kind, round, status, count(*) FROM records GROUP BY ALL ORDER BY kind, round, status"

    def expected() -> list[dict[str, object]]:
        return [
            {"kind": k, "round": r, "status": s, "count": n} for k, r, s, n in store.file.query(aggregate)
        ]

    assert store.counts() == []
    store.record([LineageRow(id="a", kind="seed"), LineageRow(id="b", kind="task", status="rejected")])
    # the same ids again, plus one new: only the new one counts
    store.record([LineageRow(id="a", kind="seed"), LineageRow(id="c", kind="seed", round="r1")])
    assert store.counts() == expected()
    assert sum(c["count"] for c in store.counts()) == 3
    summary = "SELECT kind, round, status, n FROM record_counts ORDER BY ALL"
    assert store.file.query(summary) == [
        ("seed", "r0", "ok", 1),
        ("seed", "r1", "ok", 1),
        ("task", "r0", "rejected", 1),
    ]
    # rows that `absorb` inserts around the summary are still counted, and the next write heals it
    segments = SegmentStore(tmp_path / "segments")
    segments.record([LineageRow(id="d", kind="seed"), LineageRow(id="a", kind="seed")])
    assert absorb(tmp_path / "segments", store).records == 1
    assert store.counts() == expected()
    assert sum(c["count"] for c in store.counts()) == 4
    store.record([LineageRow(id="e", kind="tool")])
    assert store.file.query(summary)[:2] == [("seed", "r0", "ok", 2), ("seed", "r1", "ok", 1)]
    assert store.counts() == expected()


def test_bench_reports_every_figure(tmp_path: Path) -> None:
    result = bench_lineage(2_000, folder=tmp_path, repeats=3)
    assert isinstance(result, LineageBench)
    assert 1_500 <= result.records <= 2_500 and result.edges >= result.records * 0.9
    assert result.trace_ms_median > 0 and result.trace_ms_p95 >= result.trace_ms_median
    assert result.counts_ms_median > 0 and result.find_ms_median > 0 and result.file_mb > 0
    assert "trace up of a task" in result.render()
    with pytest.raises(FileExistsError, match="pass an empty folder"):
        bench_lineage(2_000, folder=tmp_path, repeats=1)
    with pytest.raises(ValueError, match="at least"):
        bench_lineage(10)
