"""The failure table: round trips, idempotence, the sensor cursor, concurrent writers, a busy file."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentomnia.lineage import LineageRow, LineageStore, StoreBusy
from agentomnia.omniabench.store import FailureStore
from tests.fixtures.benchmark import make_failure

ROOT = Path(__file__).resolve().parents[2]


def test_failures_round_trip_exactly_and_only_once(tmp_path: Path) -> None:
    store = FailureStore(tmp_path / "lineage.duckdb")
    store.start("e1", "r0", "baseline:test", "bench-1", tasks=4, trials=3)
    batch = [make_failure(i, tags=("wrong_tool", "incomplete")) for i in range(3)]
    assert store.add_failures(batch) == 3
    assert store.add_failures([batch[1], make_failure(3)]) == 1  # known ids are skipped
    back = store.failures("e1")
    assert [f.id for f in back] == [f.id for f in [*batch, make_failure(3)]]
    assert back[0] == batch[0]  # same content, same id: the record is rebuilt exactly
    rows = store.failure_rows()
    assert [r.seq for r in rows] == sorted(r.seq for r in rows) and len({r.seq for r in rows}) == 4
    assert store.tag_counts("e1") == {"incomplete": 4, "wrong_tool": 3}
    assert store.failures(round="r1") == [] and store.failures("nope") == []


def test_the_table_lives_beside_the_lineage_records(tmp_path: Path) -> None:
    path = tmp_path / "lineage.duckdb"
    LineageStore(path).record([LineageRow(id="t1", kind="task")])
    store = FailureStore(path)
    assert store.finished_since(0) == [] and store.evaluations() == []  # no tables yet: empty, no error
    store.start("e1", "r0", "p", None, tasks=1, trials=1)
    store.add_failures([make_failure(0)])
    assert LineageStore(path).get("t1") is not None and len(store.failures()) == 1


def test_finished_since_tracks_a_cursor(tmp_path: Path) -> None:
    store = FailureStore(tmp_path / "lineage.duckdb")
    assert store.finished_since(0) == []  # no file yet: nothing to report, no error
    store.start("e1", "r0", "heuristic", "b", tasks=2, trials=1)
    store.start("e2", "r0", "noop", "b", tasks=2, trials=1)
    store.add_failures([make_failure(i, "e1") for i in range(3)])
    store.add_failures([make_failure(i, "e2") for i in range(2)])
    assert store.finished_since(0) == []  # nothing finished yet
    store.finish("e2", pass_at_1=0.0)
    (first,) = store.finished_since(0)
    assert (first.eval_id, first.new_failures, first.policy) == ("e2", 2, "noop")
    cursor = first.max_seq
    assert store.finished_since(cursor) == []
    # e1's failures were written before e2 finished; they still count when e1 finishes
    store.finish("e1", pass_at_1=0.25)
    (second,) = store.finished_since(cursor)
    assert (second.eval_id, second.new_failures) == ("e1", 3) and second.max_seq > cursor
    cursor = second.max_seq
    # failures added to a finished evaluation later are new past the cursor
    store.add_failures([make_failure(7, "e1")])
    (late,) = store.finished_since(cursor)
    assert (late.eval_id, late.new_failures) == ("e1", 1)
    evaluations = {e.eval_id: e for e in store.evaluations()}
    assert evaluations["e1"].status == "finished" and evaluations["e1"].pass_at_1 == 0.25
    # restarting an evaluation puts it back to running until it finishes again
    store.start("e1", "r0", "heuristic", "b", tasks=2, trials=1)
    assert {e.eval_id: e.status for e in store.evaluations()}["e1"] == "running"
    assert [s.eval_id for s in store.finished_since(0)] == ["e2"]
    with pytest.raises(KeyError, match="never started"):
        store.finish("e9", 0.0)


def test_a_finished_evaluation_without_failures_is_not_reported(tmp_path: Path) -> None:
    store = FailureStore(tmp_path / "lineage.duckdb")
    store.start("clean", "r0", "reference", "b", tasks=3, trials=1)
    store.finish("clean", pass_at_1=1.0)
    assert store.finished_since(0) == []
    assert store.evaluations()[0].finish_seq is not None


WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    from agentomnia.omniabench.store import FailureStore
    from tests.fixtures.benchmark import make_failure
    path, worker = sys.argv[2], sys.argv[3]
    store = FailureStore(path, timeout_s=120)
    for batch in range(8):
        store.add_failures([make_failure(batch * 5 + i, eval_id=worker) for i in range(5)])
    """
)


@pytest.mark.slow
def test_two_writer_processes_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "lineage.duckdb"
    FailureStore(path).start("seed", "r0", "p", None, tasks=0, trials=0)  # create the file first
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(ROOT), str(path), f"w{k}"], stderr=subprocess.PIPE
        )
        for k in range(2)
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
    rows = FailureStore(path).failure_rows()
    assert len(rows) == 80
    assert len({r.seq for r in rows}) == 80
    for worker in ("w0", "w1"):
        mine = [r for r in rows if r.failure.eval_id == worker]
        # each writer's failures keep its insertion order
        assert [r.failure.trial for r in sorted(mine, key=lambda r: r.seq)] == list(range(40))


def test_a_held_lock_gives_store_busy_not_a_hang(tmp_path: Path) -> None:
    path = tmp_path / "lineage.duckdb"
    store = FailureStore(path, timeout_s=0.3)
    store.start("e1", "r0", "p", None, tasks=1, trials=1)
    fd = os.open(str(path) + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another writer holds the file
        with pytest.raises(StoreBusy, match="locked"):
            store.add_failures([make_failure(0)])
        with pytest.raises(StoreBusy):
            store.finished_since(0)
    finally:
        os.close(fd)
    assert store.add_failures([make_failure(0)]) == 1  # released: writes go through again
