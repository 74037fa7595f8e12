"""`agentomnia run` killed the way an OOM kill or a lost machine kills it, then run again, in real processes.

One platform home goes through a series of `agentomnia run --no-evolve` invocations, in order, each
starting where the one before left off:

1. killed (SIGKILL of its process group) while it reads the seeds (`raw_seeds`);
2. the rerun is killed once the `environments` step has started: `agentomnia status --json` names the
   dead run and the `duckdb` slot it still holds;
3. the rerun cleans the dead run up (and says so), then gets SIGTERM in its own `environments` step:
   the run is CANCELED, no slot stays held and no process it started (sandbox workers) survives;
4. reruns killed in the tasks (`dag_tasks`), trajectories and training (`sft_checkpoint`) stages;
5. the last rerun finishes what the others left: it completes, and its lineage equals that of an
   uninterrupted run (same record ids, same counts by kind, round and status, no duplicate ids).

Each rerun keeps what the runs before it completed, so the whole series does about one run's work. The
uninterrupted run goes in a second home, in the background, from the start of the module.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest
from dagster import DagsterInstance, DagsterRunStatus

from agentomnia.lineage import LineageStore

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
WHOLE_RUN_S = 2400  # a whole run is 8-15 minutes here; the clean one shares two cores with the others


def _env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "AGENTOMNIA_HOME": str(home),
        "DAGSTER_HOME": str(home / "dagster"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "DO_NOT_TRACK": "1",
        # The series and the uninterrupted run share two cores: torch on two threads in each spins
        # waiting for a thread the other run holds (an SFT stage took 575 s and 841 s side by side,
        # 40 s alone). One thread each keeps the cores shared, not fought over.
        "OMP_NUM_THREADS": "1",
    }


def _start(home: Path, log: Path) -> subprocess.Popen[bytes]:
    """`agentomnia run --no-evolve` in its own process group, its output in `log`."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "agentomnia.cli", "run", "--no-evolve"],
            env=_env(home),
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _status(home: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "agentomnia.cli", "status", "--json"],
        env=_env(home), cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _step_started(home: Path, step: str, exclude: set[str]) -> str | None:
    """The id of a run in progress whose `step` has started, read from the Dagster instance's SQLite
    files opened read-only: opening the instance itself while the run is still creating its storages
    can stamp a second migration head into them (the run then fails on start)."""
    history = home / "dagster" / "history"
    try:
        with closing(sqlite3.connect(f"file:{history / 'runs.db'}?mode=ro", uri=True)) as runs:
            started = [r for (r,) in runs.execute("SELECT run_id FROM runs WHERE status = 'STARTED'")]
        for run_id in started:
            if run_id in exclude or not (history / "runs" / f"{run_id}.db").exists():
                continue
            with closing(sqlite3.connect(f"file:{history / 'runs' / run_id}.db?mode=ro", uri=True)) as log:
                found = log.execute(
                    "SELECT 1 FROM event_logs WHERE dagster_event_type = 'STEP_START' AND step_key = ?",
                    (step,),
                ).fetchone()
            if found:
                return run_id
    except sqlite3.Error:  # not created yet, or being written: look again
        return None
    return None


def _wait_for_step(home: Path, step: str, proc: subprocess.Popen[bytes], exclude: set[str]) -> str:
    deadline = time.monotonic() + 900
    while True:
        assert proc.poll() is None, f"`agentomnia run` exited ({proc.returncode}) before step {step} started"
        assert time.monotonic() < deadline, f"step {step} did not start within 15 minutes"
        run_id = _step_started(home, step, exclude)
        if run_id is not None:
            return run_id
        time.sleep(1.0)


def _run_status(home: Path, run_id: str) -> DagsterRunStatus:
    with DagsterInstance.from_config(str(home / "dagster")) as instance:
        run = instance.get_run_by_id(run_id)
        assert run is not None
        return run.status


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _alive(procs: list[psutil.Process]) -> list[str]:
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(f"{p.pid} {' '.join(p.cmdline())[:100]}")
        except psutil.Error:
            continue
    return out


def _lineage(home: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], int]:
    """Records as (id, kind, round, status), duplicate ids, and the number of edges.

    A checkpoint's id hashes its folder, which lies under the platform home, so two homes never share
    checkpoint ids: a checkpoint is compared by what it is instead (trainer, steps, last loss)."""
    store = LineageStore(home / "lineage.duckdb")
    rows = []
    for rid, kind, round_key, status, meta in store.file.query(
        "SELECT id, kind, round, status, meta FROM records"
    ):
        if kind == "checkpoint":
            m = json.loads(meta or "{}")
            rid = f"checkpoint:{m.get('trainer')}:{m.get('steps')}:{m.get('last_loss')}"
        rows.append((rid, kind, round_key, status))
    duplicates = store.file.query("SELECT id, count(*) FROM records GROUP BY id HAVING count(*) > 1")
    edges = store.file.query("SELECT count(*) FROM edges")[0][0]
    return sorted(rows), duplicates, int(edges)


def _differences(left: Path, right: Path) -> str:
    """The records only one of two homes holds: how many of each kind, and up to three of each with
    their status and recorded reason, so a failure says which records a rerun made differently."""
    rows = {home: set(_lineage(home)[0]) for home in (left, right)}

    def described(home: Path, only: set[tuple[Any, ...]]) -> dict[str, list[str]]:
        by_kind: dict[str, list[str]] = {}
        for rid, kind, _, _ in sorted(only, key=lambda r: (r[1], r[0])):
            by_kind.setdefault(kind, []).append(rid)
        store = LineageStore(home / "lineage.duckdb")
        out = {}
        for kind, ids in by_kind.items():
            marks = ", ".join("?" for _ in ids[:3])
            found = store.file.query(f"SELECT id, status, reason FROM records WHERE id IN ({marks})", ids[:3])
            out[f"{kind} ({len(ids)})"] = [f"{rid[:12]} {status}: {reason}" for rid, status, reason in found]
        return out

    return (
        f"only after the crash: {described(left, rows[left] - rows[right])}; "
        f"only in the clean run: {described(right, rows[right] - rows[left])}"
    )


@dataclass
class Crash:
    home: Path
    logs: Path
    killed_run: str = ""
    canceled: bool = False
    dead: set[str] = field(default_factory=set)  # every run killed so far
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"


@dataclass
class Clean:
    home: Path
    log: Path
    proc: subprocess.Popen[bytes]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        leftovers = _tree(proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        for p in leftovers:
            try:
                p.kill()
            except psutil.Error:
                continue


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clean]:
    """An uninterrupted run in its own home, started now in the background."""
    root = tmp_path_factory.mktemp("clean")
    run = Clean(root / "home", root / "run.log", _start(root / "home", root / "run.log"))
    yield run
    _stop(run.proc)


@pytest.fixture(scope="module")
def crash(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crash]:
    root = tmp_path_factory.mktemp("crash")
    state = Crash(root / "home", root)
    yield state
    for proc in state.procs:
        _stop(proc)


def _kill_in(crash: Crash, step: str, name: str, settle_s: float) -> str:
    """Start `agentomnia run`, SIGKILL its process group once `step` has run for `settle_s`; the run id."""
    proc = _start(crash.home, crash.log(name))
    crash.procs.append(proc)
    run_id = _wait_for_step(crash.home, step, proc, crash.dead)
    time.sleep(settle_s)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    crash.dead.add(run_id)
    return run_id


def test_a_run_killed_while_reading_seeds(crash: Crash, clean: Clean) -> None:
    assert clean.proc.poll() is None or clean.proc.returncode == 0
    run_id = _kill_in(crash, "raw_seeds", "killed-seeds", 1.0)
    (stuck,) = _status(crash.home)["stuck_runs"]
    assert stuck["run_id"] == run_id


def test_a_run_killed_in_the_environments_stage_is_named_by_status(crash: Crash, clean: Clean) -> None:
    assert clean.proc.poll() is None or clean.proc.returncode == 0
    # well inside the step: building environments in the sandbox
    run_id = _kill_in(crash, "environments", "killed", 3.0)
    assert "cleaned up run" in crash.log("killed").read_text(errors="replace")  # the seeds run

    data = _status(crash.home)
    (stuck,) = data["stuck_runs"]
    assert stuck["run_id"] == run_id and stuck["status"] == "STARTED"
    assert [(s["pool"], s["step"]) for s in stuck["slots"]] == [("duckdb", "environments")]
    assert stuck["slots"][0]["since"]
    held = [s for s in data["slots"] if s["run_id"] == run_id]
    assert [(s["pool"], s["step"], s["process"]) for s in held] == [("duckdb", "environments", "gone")]
    assert {a["asset"]: a["status"] for a in data["assets"]}["environments"] == "never"
    crash.killed_run = run_id


def test_the_rerun_cleans_up_the_dead_run_and_sigterm_cancels_it_leaving_nothing_behind(crash: Crash) -> None:
    if not crash.killed_run:
        pytest.skip("needs the killed run of the test before")
    log = crash.log("sigterm")
    proc = _start(crash.home, log)
    crash.procs.append(proc)
    run_id = _wait_for_step(crash.home, "environments", proc, crash.dead)
    deadline = time.monotonic() + 120
    while not any("agentomnia.sandbox.worker" in " ".join(p.cmdline()) for p in _tree(proc.pid)[1:]):
        assert time.monotonic() < deadline, "the environments step started no sandbox worker"
        time.sleep(0.5)
    started = _tree(proc.pid)  # the CLI, the run worker it supervises, sandbox workers, ...
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=180) != 0

    out = log.read_text(encoding="utf-8", errors="replace")
    cleaned = next(line for line in out.splitlines() if line.startswith("cleaned up run"))
    assert crash.killed_run[:8] in cleaned and "step environments since" in cleaned and "FAILED" in cleaned
    assert "stopped by SIGTERM" in out
    assert _run_status(crash.home, run_id) == DagsterRunStatus.CANCELED
    assert _run_status(crash.home, crash.killed_run) == DagsterRunStatus.FAILURE
    data = _status(crash.home)
    assert data["slots"] == [] and data["stuck_runs"] == []
    deadline = time.monotonic() + 30
    while _alive(started):
        assert time.monotonic() < deadline, f"left running after SIGTERM: {_alive(started)}"
        time.sleep(0.2)
    crash.canceled = True
    crash.dead.add(run_id)


@pytest.mark.timeout(WHOLE_RUN_S)
@pytest.mark.parametrize(
    ("step", "settle_s"), [("dag_tasks", 2.0), ("trajectories", 2.0), ("sft_checkpoint", 5.0)]
)
def test_a_rerun_killed_in_a_later_stage_keeps_what_was_done_and_is_named_by_status(
    crash: Crash, step: str, settle_s: float
) -> None:
    if not crash.canceled:
        pytest.skip("needs the interrupted runs of the tests before")
    run_id = _kill_in(crash, step, f"killed-{step}", settle_s)
    out = crash.log(f"killed-{step}").read_text(errors="replace")
    assert "finishing the interrupted `agentomnia run`" in out
    stuck = _status(crash.home)["stuck_runs"]
    assert [s["run_id"] for s in stuck] == [run_id]


@pytest.mark.timeout(2 * WHOLE_RUN_S)
def test_the_next_rerun_finishes_the_round_with_the_lineage_of_an_uninterrupted_run(
    crash: Crash, clean: Clean
) -> None:
    if not crash.canceled:
        pytest.skip("needs the interrupted runs of the tests before")
    log = crash.log("rerun")
    proc = _start(crash.home, log)
    crash.procs.append(proc)
    rc = proc.wait(timeout=WHOLE_RUN_S)
    out = log.read_text(encoding="utf-8", errors="replace")
    assert rc == 0, out[-3000:]
    assert "finishing the interrupted `agentomnia run` of round r0" in out
    assert "kept from" in out  # the stages the interrupted runs completed are not run again

    assert clean.proc.wait(timeout=WHOLE_RUN_S) == 0, clean.log.read_text(errors="replace")[-3000:]
    after_crash, after_clean = _status(crash.home), _status(clean.home)
    assert after_crash["slots"] == [] and after_crash["stuck_runs"] == []
    rows, duplicates, edges = _lineage(crash.home)
    clean_rows, clean_duplicates, clean_edges = _lineage(clean.home)
    assert duplicates == [] == clean_duplicates
    assert rows == clean_rows, _differences(crash.home, clean.home)
    assert after_crash["records"] == after_clean["records"]
    assert edges == clean_edges
    assert {a["asset"]: a["status"] for a in after_crash["assets"]} == {
        a["asset"]: a["status"] for a in after_clean["assets"]
    }
