"""A small scale run end to end: worker processes, shard outputs, lineage, resumption after a kill."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from agentomnia.lineage import LineageStore
from agentomnia.scale.plan import ScalePlan, shard_plan
from agentomnia.scale.runner import ScaleSummary, run_scale, scale_dir
from agentomnia.storage import Storage
from agentomnia.taxonomy import load_taxonomy


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Storage, ScalePlan, ScaleSummary, list[str]]:
    storage = Storage(tmp_path_factory.mktemp("scale-home"))
    plan = ScalePlan.for_environments(
        4, shard_environments=2, dag_standard=12, dag_challenge=2, program=2, solver=2
    )
    said: list[str] = []
    summary = run_scale(plan, storage=storage, round_key="s0", workers=2, progress=said.append)
    return storage, plan, summary, said


def test_a_scale_run_makes_its_plan_across_shards_and_workers(first_run) -> None:  # type: ignore[no-untyped-def]
    storage, plan, summary, said = first_run
    assert summary.shards == 2 and summary.shards_skipped == 0
    assert summary.environments == 4 and summary.l2_domains == 4
    assert summary.tools >= 4 * 8  # every environment keeps at least the minimum toolset
    assert summary.tasks["dag_standard"] >= 10 and summary.tasks.get("solver", 0) >= 1
    assert summary.peak_rss_mb > 0 and summary.environments_per_min > 0
    assert {s.stage for s in summary.stages} >= {
        "seeds",
        "environments",
        "dag_tasks",
        "solver_tasks",
        "merge",
    }
    root = scale_dir(storage, "s0")
    envs = pq.read_table(root / "environments.parquet").to_pylist()
    assert len(envs) == 4 and all(Path(e["path"], "env.py").exists() for e in envs)
    tasks = pq.read_table(root / "tasks.parquet", columns=["id", "kind", "env_id"]).to_pylist()
    assert len(tasks) == summary.tasks_total
    assert json.loads((root / "summary.json").read_text())["environments"] == 4
    assert any("shard 2/2" in line for line in said)
    # the share of distinct public queries per plan kind, from the merged corpus itself
    queries = pq.read_table(root / "tasks.parquet", columns=["kind", "query"]).to_pylist()
    for kind in summary.tasks:
        texts = [
            q["query"]
            for q in queries
            if (q["kind"].startswith("solver") and kind == "solver") or q["kind"] == kind
        ]
        assert summary.distinct_queries[kind] == round(len(set(texts)) / len(texts), 4)
    assert set(summary.distinct_queries) == set(summary.tasks)
    assert summary.bench()["distinct_queries"] == summary.distinct_queries
    assert "distinct queries" in summary.render()


def test_every_task_traces_back_to_its_composed_seed(first_run) -> None:  # type: ignore[no-untyped-def]
    storage, _, summary, _ = first_run
    store = LineageStore(storage.lineage_path)
    root = scale_dir(storage, "s0")
    task = next(t for t in pq.read_table(root / "tasks.parquet").to_pylist() if t["kind"] == "dag_standard")
    kinds = {r.kind for r in store.trace(task["id"], "up").rows.values() if r is not None}
    assert {"task", "environment", "env_candidate", "seed"} <= kinds
    counts = {(c["kind"], c["status"]): c["count"] for c in store.counts() if c["round"] == "s0"}
    assert counts[("tool", "ok")] == summary.tools
    assert not list((root / "lineage").glob("*.parquet"))  # the segments moved into the store


def test_a_rerun_skips_finished_shards_and_redoes_an_unfinished_one(first_run) -> None:  # type: ignore[no-untyped-def]
    storage, plan, summary, _ = first_run
    again = run_scale(plan, storage=storage, round_key="s0", workers=1)
    assert again.shards_skipped == 2 and again.environments == summary.environments
    assert again.tasks == summary.tasks
    # a kill before the end of shard 1: no done marker, so only that shard runs again
    spec = shard_plan(plan, load_taxonomy())[1]
    (scale_dir(storage, "s0") / "shards" / spec.id / "done.json").unlink()
    resumed = run_scale(plan, storage=storage, round_key="s0", workers=1)
    assert resumed.shards_skipped == 1
    assert resumed.environments == summary.environments and resumed.tasks == summary.tasks
    ids = [r.id for r in LineageStore(storage.lineage_path).find(kind="task", round="s0")]
    assert len(ids) == len(set(ids))
