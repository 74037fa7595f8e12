"""The `agentomnia` command: JSON output, clear errors, non-zero exits."""

from __future__ import annotations

import json
from pathlib import Path

from agentomnia.lineage import Edge, LineageRow, LineageStore
from tests.fixtures.cli import run_cli

_cli = run_cli


def test_trace_unknown_id_fails_clearly(home: Path) -> None:
    proc = _cli("lineage", "trace", "deadbeef", home=home)
    assert proc.returncode == 1
    assert "no record with id 'deadbeef'" in proc.stderr and proc.stdout == ""


def test_trace_prints_the_chain(home: Path) -> None:
    store = LineageStore(home / "lineage.duckdb")
    store.record(
        [
            LineageRow(id="s1", kind="seed"),
            LineageRow(id="e1", kind="environment"),
            LineageRow(id="t1", kind="task"),
        ],
        [
            Edge(child="e1", parent="s1", relation="built_from"),
            Edge(child="t1", parent="e1", relation="task_on"),
        ],
    )
    proc = _cli("lineage", "trace", "t1", "--json", home=home)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert {r["id"] for r in data["records"]} == {"t1", "e1", "s1"}
    down = _cli("lineage", "trace", "s1", "--down", home=home)
    assert "task_on" in down.stdout and "built_from" in down.stdout


def test_taxonomy_show_and_errors(home: Path) -> None:
    proc = _cli("taxonomy", "show", "--split", "toe", "--json", home=home)
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)) == 67
    bad = _cli("taxonomy", "show", "--l1", "No Such Domain", home=home)
    assert bad.returncode == 1 and "no L1 domain named 'No Such Domain'" in bad.stderr


def test_seeds_ingest_reports_rejections(home: Path, tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"tools": [')
    (tmp_path / "ok.jsonl").write_text('{"id": "q1", "query": "Cancel my order 42"}\n')
    proc = _cli("seeds", "ingest", str(tmp_path), "--json", home=home)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert len(data["accepted"]) == 1 and "invalid JSON" in data["rejected"][0]["reason"]


def test_status_lists_records_and_assets(home: Path) -> None:
    LineageStore(home / "lineage.duckdb").record([LineageRow(id="s1", kind="seed", round="r0")])
    proc = _cli("status", "--json", home=home)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["records"] == [{"kind": "seed", "round": "r0", "status": "ok", "count": 1}]
    assets = {a["asset"]: a["status"] for a in data["assets"]}
    assert assets["environments"] == "never" and "taxonomy" in assets


def test_scale_options_are_checked_before_anything_runs(home: Path) -> None:
    proc = _cli("bench", "scale", "--envs", "0", home=home)
    assert proc.returncode != 0 and "--envs must be at least 1" in proc.stderr
    proc = _cli("run", "--environments", "5", home=home)
    assert proc.returncode != 0 and "use it with --scale paper" in proc.stderr


def test_init_leaves_the_knowledge_base_and_domain_vectors_cached(home: Path) -> None:
    from agentomnia.embeddings import MINILM_DIM, MINILM_NAME, VectorCache

    proc = _cli("init", "--json", home=home, timeout_s=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["caches_s"] > 0
    # the next command that places a seed on the taxonomy finds all 354 domains already embedded: their
    # vectors come with the package, so the home's own cache holds none of them
    from agentomnia.taxonomy.search import shipped_vectors

    assert shipped_vectors()["covered"] == 354
    assert len(VectorCache(home / "cache" / "embeddings" / MINILM_NAME, MINILM_DIM)) == 0
    assert list((home / "cache").glob("knowledge/*.pickle"))
