"""Segment lineage: many writers, one view, and compaction that never loses or doubles a record."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from agentomnia.lineage import Edge, LineageRow, LineageStore, UnknownRecord
from agentomnia.lineage.segments import SegmentStore, absorb, compact, list_segments

# Each writer appends `batches` segments; ids w<k>-r<i> are its own, shared-<i> are written by every
# writer (the same content-hashed record produced on two hosts), and each record hangs off the
# previous one of its writer so a trace walks the whole chain.
WRITER = textwrap.dedent(
    """
    import sys
    from agentomnia.lineage import Edge, LineageRow
    from agentomnia.lineage.segments import SegmentStore
    folder, worker, per, batches = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    store = SegmentStore(folder, writer=f"w{worker}")
    for b in range(batches):
        rows, edges = [], []
        for i in range(b * per, (b + 1) * per):
            rid = f"w{worker}-r{i}"
            rows.append(LineageRow(id=rid, kind="task", taxonomy_id=10000 + worker))
            rows.append(LineageRow(id=f"shared-{i}", kind="seed"))
            edges.append(Edge(child=rid, parent=f"w{worker}-r{i - 1}" if i else "root", relation="derived_from"))
        store.record(rows, edges, step=f"batch{b}")
    """
)

COMPACTOR = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from agentomnia.lineage.segments import compact
    folder, stop = sys.argv[1], Path(sys.argv[2])
    while not stop.exists():
        compact(folder)
        time.sleep(0.05)
    """
)

# Compacts and stops dead at one stage, so the test can kill it exactly there.
STALLED_COMPACTOR = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from agentomnia.lineage.segments import compact
    folder, stage, marker = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    def hold(reached):
        if reached == stage:
            marker.write_text(reached)
            time.sleep(600)
    compact(folder, on_stage=hold)
    """
)


def _run(script: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args], env={**os.environ, "PYTHONPATH": os.getcwd()}
    )


def _ids(store: SegmentStore) -> tuple[int, set[str]]:
    rows = store.file.query("SELECT id FROM records")
    return len(rows), {r[0] for r in rows}


def _write_segments(folder: Path, n: int, per: int) -> set[str]:
    store = SegmentStore(folder, writer="fixture")
    ids: set[str] = set()
    for s in range(n):
        rows = [LineageRow(id=f"s{s}-r{i}", kind="task") for i in range(per)]
        store.record(rows, [Edge(child=r.id, parent="root", relation="task_on") for r in rows])
        ids |= {r.id for r in rows}
    return ids


def test_segments_from_two_writers_read_as_one_store(tmp_path: Path) -> None:
    folder = tmp_path / "segments"
    a = SegmentStore(folder, writer="host-a/17")
    b = SegmentStore(folder, writer="host-b")
    a.record(
        [LineageRow(id="seed1", kind="seed", split="tob", l1="Logistics", l2="Couriers"),
         LineageRow(id="env1", kind="environment")],
        [Edge(child="env1", parent="seed1", relation="built_from")],
    )  # fmt: skip
    written = b.record(
        [LineageRow(id="env1", kind="environment", run_id="later"),
         LineageRow(id="task1", kind="task", status="rejected", reason="oracle failed")],
        [Edge(child="task1", parent="env1", relation="task_on"), Edge(child="env1", parent="seed1", relation="built_from")],
    )  # fmt: skip
    assert (written.records_written, written.edges_written) == (2, 2)
    names = [p.name for p in a.segments()]
    assert len(names) == 2 and {n.split("__")[0] for n in names} == {"host-a-17", "host-b"}
    assert _ids(a) == (3, {"seed1", "env1", "task1"})  # env1 written twice, seen once
    assert a.get("env1").run_id is None  # type: ignore[union-attr]  # the earliest write wins
    assert a.file.query("SELECT count(*) FROM edges")[0][0] == 2
    assert a.trace("task1").ids() == {"env1", "seed1"}
    assert b.trace("seed1", "down").ids() == {"env1", "task1"}
    assert [r.id for r in b.find(kind="seed", split="tob")] == ["seed1"]
    assert "Logistics > Couriers" in a.trace("task1").render()
    assert b.rejection_reasons() == [{"kind": "task", "reason": "oracle failed", "count": 1}]
    with pytest.raises(UnknownRecord):
        a.trace("nope")

    result = compact(folder)
    assert (result.merged_segments, result.records, result.edges) == (2, 3, 2)
    assert len(list_segments(folder)) == 1
    assert _ids(a) == (3, {"seed1", "env1", "task1"})
    assert a.get("env1").run_id is None  # type: ignore[union-attr]
    assert compact(folder).merged_segments == 0  # one segment is already compact


def test_the_duckdb_store_joins_the_view_and_absorbs_segments(tmp_path: Path) -> None:
    store = LineageStore(tmp_path / "lineage.duckdb")
    store.record([LineageRow(id="seed1", kind="seed")])
    segments = SegmentStore(tmp_path / "segments", store=store.path)
    segments.record([LineageRow(id="seed1", kind="seed"), LineageRow(id="env1", kind="environment")],
                    [Edge(child="env1", parent="seed1", relation="built_from")])  # fmt: skip
    assert _ids(segments) == (2, {"seed1", "env1"})
    assert segments.trace("env1").ids() == {"seed1"}

    result = absorb(tmp_path / "segments", store)
    assert (result.merged_segments, result.records, result.edges) == (1, 1, 1)
    assert list_segments(tmp_path / "segments") == []
    assert store.trace("env1").ids() == {"seed1"}
    assert _ids(segments) == (2, {"seed1", "env1"})


def test_a_half_written_segment_is_invisible(tmp_path: Path) -> None:
    folder = tmp_path / "segments"
    ids = _write_segments(folder, 2, 3)
    # what a writer killed before its rename leaves behind
    (folder / ".w9__task__dead.parquet.1234.tmp").write_bytes(b"PAR1 truncated")
    store = SegmentStore(folder)
    assert _ids(store) == (6, ids)
    assert compact(folder, stale_after_s=0).swept_tmp_files == 1
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".compact")) == [
        p.name for p in list_segments(folder)
    ]


@pytest.mark.slow
def test_two_processes_write_at_once_and_nothing_is_lost_or_doubled(tmp_path: Path) -> None:
    folder = tmp_path / "segments"
    per, batches = 40, 30
    procs = [_run(WRITER, str(folder), str(w), str(per), str(batches)) for w in (0, 1)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    store = SegmentStore(folder)
    assert len(store.segments()) == 2 * batches
    n = per * batches
    expected = {f"w{w}-r{i}" for w in (0, 1) for i in range(n)} | {f"shared-{i}" for i in range(n)}
    assert _ids(store) == (len(expected), expected)
    assert store.file.query("SELECT count(*) FROM edges")[0][0] == 2 * n
    assert store.trace(f"w1-r{n - 1}").ids() == {f"w1-r{i}" for i in range(n - 1)} | {"root"}


@pytest.mark.slow
def test_compaction_while_two_processes_write(tmp_path: Path) -> None:
    folder = tmp_path / "segments"
    stop = tmp_path / "stop"
    per, batches = 20, 60
    writers = [_run(WRITER, str(folder), str(w), str(per), str(batches)) for w in (0, 1)]
    compactor = _run(COMPACTOR, str(folder), str(stop))
    store = SegmentStore(folder)
    seen: set[str] = set()
    polls = 0
    try:
        while any(p.poll() is None for p in writers):
            count, ids = _ids(store)
            # never twice: one row per id; never zero times: what was visible stays visible
            assert count == len(ids)
            assert ids >= seen, f"{len(seen - ids)} records vanished from the view during compaction"
            seen = ids
            polls += 1
    finally:
        stop.write_text("stop")
        assert compactor.wait(timeout=120) == 0
    assert [p.wait(timeout=60) for p in writers] == [0, 0]
    assert polls > 3, "the reader never overlapped the writers; make the writers slower"
    compact(folder)
    n = per * batches
    expected = {f"w{w}-r{i}" for w in (0, 1) for i in range(n)} | {f"shared-{i}" for i in range(n)}
    assert _ids(store) == (len(expected), expected)
    [only] = list_segments(folder)
    raw = pq.read_table(only).to_pylist()
    record_ids = [r["id"] for r in raw if r["entry"] == "record"]
    assert len(record_ids) == len(set(record_ids)) == len(expected)
    assert sum(r["entry"] == "edge" for r in raw) == 2 * n


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["written", "published", "removing"])
def test_a_compaction_killed_midway_loses_nothing(tmp_path: Path, stage: str) -> None:
    folder = tmp_path / "segments"
    ids = _write_segments(folder, 12, 25)
    before = set(list_segments(folder))
    marker = tmp_path / "reached"
    proc = _run(STALLED_COMPACTOR, str(folder), stage, str(marker))
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None, f"the compactor exited before reaching {stage!r}"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    store = SegmentStore(folder)
    after = set(list_segments(folder))
    if stage == "written":
        assert after == before  # unpublished: only a hidden temporary file was added
    else:
        assert len(after - before) == 1 and len(before - after) == (0 if stage == "published" else 1)
    assert _ids(store) == (len(ids), ids)
    assert store.file.query("SELECT count(*) FROM edges")[0][0] == len(ids)

    # the next compaction finishes the job and sweeps the dead one's temporary file
    result = compact(folder, stale_after_s=0)
    assert result.swept_tmp_files == (1 if stage == "written" else 0)
    assert len(list_segments(folder)) == 1
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    assert _ids(store) == (len(ids), ids)
