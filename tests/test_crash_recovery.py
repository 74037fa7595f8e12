"""Runs that end without reporting back, against real processes: a run killed while it holds the
`duckdb` slot is named by `status`, cleaned up (FAILED, slot freed) by the next run or the daemon's run
monitoring, and a waiting run says who holds its slot; interrupted writes leave the last good artifact.

The whole-pipeline version (kill `agentomnia run` in the environments stage, rerun, compare with a clean
run; SIGTERM leaves no process behind) is tests/e2e/test_crash_pipeline.py.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psutil
import pyarrow.parquet as pq
import pytest
from dagster import (
    AssetCheckResult,
    DagsterInstance,
    DagsterRunStatus,
    Definitions,
    RunsFilter,
    asset,
    asset_check,
    materialize,
)

from agentomnia.storage import read_parquet, write_parquet
from agentomnia_assets.instance import DAGSTER_YAML, ensure_dagster_home
from agentomnia_assets.recovery import (
    ENDED_TAG,
    HOST_TAG,
    PID_STARTED_TAG,
    PID_TAG,
    SlotWaitReporter,
    held_slots,
    process_state,
    process_tags,
    recover_dead_runs,
)
from agentomnia_assets.status import fast_run_health

REPO = Path(__file__).resolve().parents[1]

# A run in its own process that claims the `duckdb` slot, says so, and then never finishes.
HOLDER = """
import sys, time
from pathlib import Path
import dagster as dg
from agentomnia_assets.recovery import process_tags

@dg.asset(pool="duckdb")
def holder() -> None:
    Path(sys.argv[1]).write_text("holding", encoding="utf-8")
    time.sleep(600)

with dg.DagsterInstance.get() as instance:
    dg.materialize([holder], instance=instance, tags=process_tags())
"""


@asset(pool="duckdb")
def waiter() -> None:
    """A second step of the same pool: it can only start once the holder's slot is free."""


@pytest.fixture
def instance(home: Path) -> Iterator[DagsterInstance]:
    ensure_dagster_home(home)
    with DagsterInstance.get() as inst:
        yield inst


class Holder:
    def __init__(self, home: Path, tmp: Path) -> None:
        self.flag = tmp / "holding"
        env = {**os.environ, "AGENTOMNIA_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(self.flag)],
            env=env,
            cwd=REPO,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        while not self.flag.exists():
            assert self.proc.poll() is None, "the holder run exited before it took the slot"
            assert time.monotonic() < deadline, "the holder run never took the slot"
            time.sleep(0.1)

    def kill(self) -> None:
        """What an OOM kill or a lost machine does: SIGKILL, no chance to report back."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.kill()


@pytest.fixture
def holder(home: Path, tmp_path: Path, instance: DagsterInstance) -> Iterator[Holder]:
    h = Holder(home, tmp_path)
    yield h
    h.stop()


def _holder_run(instance: DagsterInstance) -> Any:
    (record,) = instance.get_run_records(RunsFilter(statuses=[DagsterRunStatus.STARTED]))
    return record.dagster_run


def _materialize_in_thread(instance: DagsterInstance) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def go() -> None:
        out["success"] = materialize([waiter], instance=instance, tags=process_tags()).success

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread, out


# -- which process runs a run -------------------------------------------------------------------------


def test_process_state_tells_a_live_process_from_a_dead_one_a_reused_pid_and_a_zombie() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        tags = process_tags(proc.pid)
        assert process_state(tags) == "alive"
        assert process_state({**tags, PID_STARTED_TAG: str(float(tags[PID_STARTED_TAG]) - 3600)}) == "gone"
        assert process_state({**tags, HOST_TAG: "another-host"}) == "unknown"
        assert process_state({}) == "unknown"
        proc.kill()
        time.sleep(0.2)  # killed, not yet reaped: a zombie still answers os.kill(pid, 0)
        assert process_state(tags) == "gone"
    finally:
        proc.kill()
        proc.wait()
    assert process_state(tags) == "gone"


# -- a dead run is named, cleaned up, and stops blocking the pool -------------------------------------


def test_a_killed_run_is_named_by_status_then_failed_and_its_slot_freed(
    home: Path, instance: DagsterInstance, holder: Holder
) -> None:
    run = _holder_run(instance)
    assert run.tags[PID_TAG] == str(holder.proc.pid)
    health = fast_run_health(home / "dagster")
    assert health is not None and health["stuck_runs"] == []
    assert [(s["pool"], s["run_id"], s["step"], s["process"]) for s in health["slots"]] == [
        ("duckdb", run.run_id, "holder", "alive")
    ]
    holder.kill()

    status = subprocess.run(
        [sys.executable, "-m", "agentomnia.cli", "status", "--json"],
        env={**os.environ, "AGENTOMNIA_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")},
        cwd=REPO, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    data = json.loads(status.stdout)
    (stuck,) = data["stuck_runs"]
    assert stuck["run_id"] == run.run_id and stuck["pid"] == str(holder.proc.pid)
    assert [(s["pool"], s["step"]) for s in stuck["slots"]] == [("duckdb", "holder")]
    assert stuck["slots"][0]["since"]
    assert data["slots"][0]["process"] == "gone" and data["slots"][0]["run_status"] == "STARTED"
    text = subprocess.run(
        [sys.executable, "-m", "agentomnia.cli", "status"],
        env={**os.environ, "AGENTOMNIA_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")},
        cwd=REPO, capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert "stuck runs" in text and run.run_id[:8] in text and "process gone" in text

    said: list[str] = []
    (dead,) = recover_dead_runs(instance, said.append)
    assert dead.run_id == run.run_id and dead.new_status == "FAILED"
    assert len(said) == 1 and run.run_id[:8] in said[0] and "step holder since" in said[0]
    after = instance.get_run_by_id(run.run_id)
    assert after is not None and after.status == DagsterRunStatus.FAILURE
    assert after.tags[ENDED_TAG] == "process gone"
    assert held_slots(instance) == []
    assert recover_dead_runs(instance, said.append) == [] and len(said) == 1  # nothing left to clean

    thread, out = _materialize_in_thread(instance)
    thread.join(timeout=120)
    assert out.get("success") is True, "a step of the pool still could not start"


def test_a_waiting_run_names_the_holder_and_cleans_it_up_once_its_process_is_gone(
    instance: DagsterInstance, holder: Holder
) -> None:
    run = _holder_run(instance)
    said: list[str] = []
    with SlotWaitReporter(instance, said.append, after_s=1.0, every_s=1.0, poll_s=0.2):
        thread, out = _materialize_in_thread(instance)
        deadline = time.monotonic() + 60
        while not any("waiting" in line for line in said):
            assert time.monotonic() < deadline, "no word about the wait"
            time.sleep(0.2)
        line = next(line for line in said if "waiting" in line)
        assert "pool 'duckdb'" in line and "step waiter" in line
        assert f"run {run.run_id[:8]} step holder since" in line and "running" in line
        assert thread.is_alive(), "the waiter ran while the slot was held"
        holder.kill()
        thread.join(timeout=60)
    assert out.get("success") is True
    assert any(line.startswith(f"cleaned up run {run.run_id[:8]}") for line in said)
    assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.FAILURE  # type: ignore[union-attr]


def test_agentomnia_run_says_who_holds_its_slot_and_sigint_cancels_it_while_it_waits(
    home: Path, instance: DagsterInstance, holder: Holder, tmp_path: Path
) -> None:
    """A run stuck waiting for a slot is in Dagster's own loop, where an interrupt is only noted: the
    supervising `agentomnia run` then stops it after the grace period and cancels its run itself."""
    run = _holder_run(instance)
    log = tmp_path / "run.log"
    env = {
        **os.environ, "AGENTOMNIA_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
        "AGENTOMNIA_CANCEL_GRACE_S": "3",
    }  # fmt: skip
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentomnia.cli", "run", "--no-evolve"],
            env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while "waiting" not in log.read_text(errors="replace"):
            assert proc.poll() is None, log.read_text(errors="replace")[-2000:]
            assert time.monotonic() < deadline, "`agentomnia run` waited without a word"
            time.sleep(0.5)
        line = next(x for x in log.read_text().splitlines() if x.startswith("waiting"))
        assert "pool 'duckdb'" in line and f"held by run {run.run_id[:8]} step holder since" in line
        tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=120) != 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert "stopped by SIGINT" in log.read_text()
    mine = [
        r.dagster_run
        for r in instance.get_run_records()
        if r.dagster_run.run_id != run.run_id and r.dagster_run.tags.get(PID_TAG)
    ]
    stopped = [r.status for r in mine if r.status != DagsterRunStatus.SUCCESS]  # the static part may be done
    assert stopped == [DagsterRunStatus.CANCELED], log.read_text()[-3000:]
    assert [s.run_id for s in held_slots(instance)] == [run.run_id]  # the live holder keeps its slot
    time.sleep(0.5)
    assert not [p.pid for p in tree if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def test_the_daemons_run_monitoring_fails_a_dead_run_and_frees_its_slot(home: Path, tmp_path: Path) -> None:
    """The monitor asks the instance's run launcher (from the dagster.yaml `init` writes) about the worker."""
    from dagster._daemon.monitoring.concurrency import execute_concurrency_slots_iteration
    from dagster._daemon.monitoring.run_monitoring import monitor_started_run

    dagster_home = ensure_dagster_home(home)
    config = dagster_home / "dagster.yaml"
    assert config.read_text() == DAGSTER_YAML
    config.write_text(
        DAGSTER_YAML.replace("free_slots_after_run_end_seconds: 30", "free_slots_after_run_end_seconds: 1")
    )
    holder = Holder(home, tmp_path)
    try:
        with DagsterInstance.get() as instance:
            assert instance.run_monitoring_enabled
            assert type(instance.run_launcher).__name__ == "AgentomniaRunLauncher"
            assert instance.run_launcher.supports_check_run_worker_health
            log = logging.getLogger("test-monitoring")
            run = _holder_run(instance)
            monitor_started_run(instance, None, instance.get_run_record_by_id(run.run_id), log)  # type: ignore[arg-type]
            assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.STARTED  # type: ignore[union-attr]
            holder.kill()
            monitor_started_run(instance, None, instance.get_run_record_by_id(run.run_id), log)  # type: ignore[arg-type]
            assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.FAILURE  # type: ignore[union-attr]
            assert [s.run_id for s in held_slots(instance)] == [run.run_id]
            time.sleep(1.5)
            context = SimpleNamespace(instance=instance)
            list(execute_concurrency_slots_iteration(context, log))  # type: ignore[arg-type]
            assert held_slots(instance) == []
    finally:
        holder.stop()


def test_an_older_untouched_dagster_yaml_gains_run_monitoring_and_an_edited_one_is_kept(home: Path) -> None:
    from agentomnia_assets import instance as module

    config = home / "dagster" / "dagster.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(module._PREVIOUS_DEFAULT)
    ensure_dagster_home(home)
    assert config.read_text() == DAGSTER_YAML
    config.write_text(module._PREVIOUS_DEFAULT + "# mine\n")
    ensure_dagster_home(home)
    assert config.read_text().endswith("# mine\n")


# -- what a rerun keeps ---------------------------------------------------------------------------


def test_a_rerun_keeps_only_assets_materialized_completely(instance: DagsterInstance) -> None:
    from agentomnia_assets.pipeline import kept_assets

    outcome = {"check": True, "last": False}

    @asset
    def first() -> None: ...

    @asset(deps=[first])
    def second() -> None: ...

    @asset(deps=[second])
    def third() -> None:
        if not outcome["last"]:
            raise RuntimeError("killed here")

    @asset_check(asset=second, blocking=True)
    def second_ok() -> AssetCheckResult:
        return AssetCheckResult(passed=outcome["check"])

    assets = [first, second, third]
    graph = Definitions(assets=assets, asset_checks=[second_ok]).resolve_asset_graph()

    def run() -> str:
        result = materialize([*assets, second_ok], instance=instance, raise_on_error=False)
        return result.run_id

    assert set(kept_assets(instance, [run()], assets, graph)) == {first.key, second.key}
    outcome["check"] = False  # a failed blocking check: its asset is not complete, nor anything below
    assert set(kept_assets(instance, [run()], assets, graph)) == {first.key}
    outcome.update(check=True, last=True)
    assert set(kept_assets(instance, [run()], assets, graph)) == {first.key, second.key, third.key}


def test_a_rerun_continues_an_interrupted_invocation_but_not_one_that_failed_on_its_own(
    instance: DagsterInstance,
) -> None:
    from agentomnia_assets.pipeline import start_invocation

    @asset
    def broken() -> None:
        raise RuntimeError("a bug, not an interruption")

    first = start_invocation(instance, "r0", "default")
    assert first.attempt == 1 and first.earlier == []
    result = materialize([broken], instance=instance, tags=first.tags("static"), raise_on_error=False)
    assert not result.success
    assert start_invocation(instance, "r0", "default").id != first.id  # a step raised: start over
    instance.add_run_tags(result.run_id, {ENDED_TAG: "process gone"})  # as `recover_dead_runs` marks it
    again = start_invocation(instance, "r0", "default")
    assert (again.id, again.attempt, again.earlier) == (first.id, 2, [result.run_id])
    assert start_invocation(instance, "r0", "full").id != first.id  # another scale is another invocation
    os.environ["AGENTOMNIA_RESUME"] = "0"
    try:
        assert start_invocation(instance, "r0", "default").id != first.id
    finally:
        del os.environ["AGENTOMNIA_RESUME"]


# -- interrupted writes --------------------------------------------------------------------------


def test_a_full_disk_during_an_artifact_write_keeps_the_previous_artifact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "artifacts" / "environments" / "r0" / "data.parquet"
    write_parquet(path, [{"id": "a", "n": 1}, {"id": "b", "n": 2}])
    before = path.read_bytes()
    real = pq.write_table

    def fill_the_disk(table: Any, where: Any, *args: Any, **kwargs: Any) -> None:
        real(table, where, *args, **kwargs)
        with open(where, "r+b") as handle:  # half of the file made it to disk, then the disk was full
            handle.truncate(os.path.getsize(where) // 2)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pq, "write_table", fill_the_disk)
    with pytest.raises(OSError) as raised:
        write_parquet(path, [{"id": "c", "n": 3}])
    assert raised.value.errno == errno.ENOSPC
    assert path.read_bytes() == before
    assert read_parquet(path) == [{"id": "a", "n": 1}, {"id": "b", "n": 2}]
    assert sorted(p.name for p in path.parent.iterdir()) == ["data.parquet"]


def test_a_sandbox_worker_killed_mid_call_fails_that_call_and_is_replaced() -> None:
    from agentomnia.sandbox import Bundle, Sandbox
    from tests.sandbox.conftest import make_tool
    from tests.sandbox.test_sandbox_pool import HANG

    with Sandbox(workers=1, call_timeout_s=60.0, cpu_seconds=60, idle_timeout_s=0) as box:
        session = box.open(Bundle.from_source(HANG, [make_tool("hang")], {}))
        pid = box.worker_pids()[0]
        result: dict[str, Any] = {}

        def call() -> None:
            try:
                result["value"] = session.call("hang", {})
            except Exception as exc:  # a failed call may raise or return a failed ToolResult
                result["error"] = exc

        thread = threading.Thread(target=call)
        thread.start()
        time.sleep(1.0)
        assert thread.is_alive(), "the call should still be running"
        os.kill(pid, signal.SIGKILL)
        thread.join(timeout=60)
        assert not thread.is_alive(), "the call never came back after its worker died"
        value = result.get("value")
        assert "error" in result or (value is not None and not value.ok)
        assert box.worker_pids()[0] != pid and psutil.pid_exists(box.worker_pids()[0])
        workers = box.worker_pids()
    for worker in workers:  # closing the sandbox leaves no worker behind
        assert not psutil.pid_exists(worker) or psutil.Process(worker).status() == psutil.STATUS_ZOMBIE
