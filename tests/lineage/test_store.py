"""Lineage store: idempotent, atomic, safe with many writer processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from agentomnia.lineage import Edge, LineageRow, LineageStore, StoreBusy, UnknownRecord

WRITER = textwrap.dedent(
    """
    import sys
    from agentomnia.lineage import Edge, LineageRow, LineageStore
    path, worker, n, batches = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    store = LineageStore(path, timeout_s=120)
    per = n // batches
    for b in range(batches):
        rows, edges = [], []
        for i in range(b * per, (b + 1) * per):
            rid = f"w{worker}-r{i}"
            rows.append(LineageRow(id=rid, kind="task", round="r0", split="toc", taxonomy_id=10000 + worker))
            # every record hangs off the previous one of its worker, and off a shared root
            parent = f"w{worker}-r{i - 1}" if i else "root"
            edges.append(Edge(child=rid, parent=parent, relation="derived_from"))
        store.record(rows, edges)
    """
)

KILLED_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from agentomnia.lineage import LineageRow, LineageStore
    path, progress = sys.argv[1], Path(sys.argv[2])
    store = LineageStore(path)
    rows = [LineageRow(id=f"big-{i}", kind="seed") for i in range(200_000)]
    def tick(n):
        progress.write_text(str(n))
    store.record(rows, chunk_size=1000, on_chunk=tick)
    """
)


def _run(script: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args], env={**os.environ, "PYTHONPATH": os.getcwd()}
    )


def test_record_is_idempotent_and_traceable(tmp_path: Path) -> None:
    store = LineageStore(tmp_path / "l.duckdb")
    rows = [LineageRow(id="seed1", kind="seed", split="tob", taxonomy_id=20096, l1="Logistics", l2="Logistics Specialist"),
            LineageRow(id="env1", kind="environment"), LineageRow(id="task1", kind="task", status="rejected", reason="oracle failed")]  # fmt: skip
    edges = [
        Edge(child="env1", parent="seed1", relation="built_from"),
        Edge(child="task1", parent="env1", relation="task_on"),
    ]
    first = store.record(rows, edges)
    again = store.record(rows, edges)
    assert (first.records_written, first.edges_written) == (3, 2)
    assert (again.records_written, again.edges_written) == (0, 0)
    assert store.trace("task1").ids() == {"env1", "seed1"}
    assert store.trace("seed1", "down").ids() == {"env1", "task1"}
    assert [r.id for r in store.find(kind="seed", split="tob", l1="Logistics")] == ["seed1"]
    assert store.get("task1").reason == "oracle failed"  # type: ignore[union-attr]
    text = store.trace("task1").render()
    assert "built_from" in text and "tob/Logistics > Logistics Specialist" in text


def test_unknown_id_is_reported(tmp_path: Path) -> None:
    store = LineageStore(tmp_path / "l.duckdb")
    with pytest.raises(UnknownRecord, match="no record with id 'nope'"):
        store.trace("nope")
    store.record([LineageRow(id="a", kind="seed")])
    with pytest.raises(UnknownRecord):
        store.trace("nope")


def test_eight_processes_write_at_once(tmp_path: Path) -> None:
    path = tmp_path / "l.duckdb"
    LineageStore(path).record([LineageRow(id="root", kind="seed")])
    procs = [_run(WRITER, str(path), str(w), "500", "10") for w in range(8)]
    assert [p.wait(timeout=300) for p in procs] == [0] * 8
    store = LineageStore(path)
    counts = store.file.query("SELECT count(*), count(DISTINCT id) FROM records")[0]
    assert counts == (8 * 500 + 1, 8 * 500 + 1)
    assert store.file.query("SELECT count(*) FROM edges")[0][0] == 8 * 500
    ancestry = store.trace("w3-r499").ids()
    assert ancestry == {f"w3-r{i}" for i in range(499)} | {"root"}


def test_killed_writer_loses_only_its_batch(tmp_path: Path) -> None:
    path = tmp_path / "l.duckdb"
    store = LineageStore(path)
    store.record([LineageRow(id="kept", kind="seed")])
    progress = tmp_path / "progress"
    proc = _run(KILLED_WRITER, str(path), str(progress))
    deadline = time.monotonic() + 120
    while not (progress.exists() and progress.read_text() and int(progress.read_text()) >= 2000):
        assert proc.poll() is None, "the writer finished before it could be killed; make the batch larger"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # the file is readable, holds what was committed before, and nothing of the killed batch
    assert [r.id for r in store.find()] == ["kept"]
    assert store.file.query("SELECT count(*) FROM records WHERE id LIKE 'big-%'")[0][0] == 0
    # rerunning the batch completes it
    rows = [LineageRow(id=f"big-{i}", kind="seed") for i in range(200_000)]
    assert store.record(rows).records_written == 200_000


def test_reader_gives_up_cleanly_while_a_writer_holds_the_file(tmp_path: Path) -> None:
    store = LineageStore(tmp_path / "l.duckdb")
    store.record([LineageRow(id="a", kind="seed")])
    impatient = LineageStore(tmp_path / "l.duckdb", timeout_s=0.2)
    with store.file.write():
        # another thread of this process would wait on the in-process lock; another process is
        # simulated by taking the advisory lock through a second descriptor
        proc = _run(
            "import sys; from agentomnia.lineage import LineageStore, StoreBusy\n"
            "s = LineageStore(sys.argv[1], timeout_s=0.2)\n"
            "try:\n    s.counts()\nexcept StoreBusy:\n    sys.exit(3)\n",
            str(tmp_path / "l.duckdb"),
        )
        assert proc.wait(timeout=60) == 3
    assert impatient.counts()[0]["count"] == 1
    assert StoreBusy.__mro__[1] is RuntimeError
