"""Runs that end without reporting back, and how `agentomnia run` never leaves one behind.

Every run `agentomnia run` starts names the process that executes it in its tags (`agentomnia/pid`,
`agentomnia/pid_started`, `agentomnia/host`). A run still marked NOT_STARTED, STARTING, STARTED or
CANCELING whose process is gone from this host (SIGKILL, out-of-memory kill, lost machine) is dead: it
will never report back, and any concurrency slot it claimed would stay claimed, so every later run's
step in that pool would wait forever. `recover_dead_runs` marks such runs FAILED (CANCELING ones
CANCELED), frees their slots and says so, one line per run; `agentomnia run` calls it before it starts
and again whenever it waits for a slot a dead run holds. The daemon does the same through Dagster's
run monitoring: the instance's run launcher (`AgentomniaRunLauncher`, written into dagster.yaml by
`agentomnia init`) answers the monitor's worker-health check from the same tags, and
`free_slots_after_run_end_seconds` frees the slots of every run that ended.

`supervise` runs the pipeline in a child process and stays with it: SIGINT or SIGTERM marks the child's
runs CANCELING, interrupts the child (Dagster stops the step and tears its resources down, sandbox
workers included), and after a grace period kills whatever is left; a child that dies on its own has
its runs marked FAILED at once. Either way the runs' slots are freed and no process the child started
outlives it. If the supervisor itself is killed, the kernel kills the child (PR_SET_PDEATHSIG) and
sandbox workers exit when their connection closes; the next run then finds the dead run as above.

Which process runs a run, and whether it lives, is `agentomnia.runs` (no Dagster there). This module
imports Dagster only inside its functions, so the supervising `agentomnia run` stays light.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from agentomnia.runs import (
    ENDED_TAG,
    HOST_TAG,
    IN_PROGRESS,
    PID_STARTED_TAG,
    PID_TAG,
    SUPERVISOR_ENV,
    SUPERVISOR_TAG,
    ProcessTracker,
    Say,
    describe_process,
    health_report,
    host,
    process_state,
    process_tags,
    render_health,
    say_stderr,
    set_parent_death_signal,
    short,
    when,
)

__all__ = [
    "ENDED_TAG",
    "HOST_TAG",
    "IN_PROGRESS",
    "PID_STARTED_TAG",
    "PID_TAG",
    "SUPERVISOR_TAG",
    "DeadRun",
    "HeldSlot",
    "RunError",
    "RunInterrupted",
    "RunWorkerDied",
    "SlotWaitReporter",
    "held_slots",
    "process_state",
    "process_tags",
    "recover_dead_runs",
    "render_health",
    "run_child",
    "run_health",
    "say_stderr",
    "short",
    "supervise",
]

if TYPE_CHECKING:
    from dagster import DagsterInstance
    from dagster._core.storage.dagster_run import DagsterRun

# -- slots and dead runs -----------------------------------------------------------------------------

ENDED_GRACE_S = 30.0  # as the daemon's `free_slots_after_run_end_seconds`


@dataclass(frozen=True)
class HeldSlot:
    """One claimed slot of a concurrency pool: which run and step hold it, since when."""

    pool: str
    run_id: str
    step: str
    since: datetime | None = None

    def text(self) -> str:
        return f"the {self.pool} slot held by step {self.step} since {when(self.since)}"


@dataclass(frozen=True)
class DeadRun:
    run_id: str
    status: str
    new_status: str
    pid: str
    host: str
    started: float | None
    slots: tuple[HeldSlot, ...] = ()

    def line(self) -> str:
        held = "; freed " + ", ".join(s.text() for s in self.slots) if self.slots else "; it held no slot"
        return (
            f"cleaned up run {short(self.run_id)} ({self.status} since {when(self.started)}, pid {self.pid} "
            f"on {self.host} is gone): marked {self.new_status}{held}"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "status": self.status,
            "marked": self.new_status,
            "pid": self.pid,
            "host": self.host,
            "started": when(self.started),
            "slots": [{"pool": s.pool, "step": s.step, "since": when(s.since)} for s in self.slots],
        }


def held_slots(instance: DagsterInstance) -> list[HeldSlot]:
    """Every claimed slot of every pool, with the time its step was given the slot."""
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return []
    keys = sorted(storage.get_concurrency_keys())
    out = []
    for pool, info in storage.get_concurrency_infos(keys).items():
        assigned = {
            (p.run_id, p.step_key): p.assigned_timestamp for p in info.pending_steps if p.assigned_timestamp
        }
        for slot in info.claimed_slots:
            out.append(HeldSlot(pool, slot.run_id, slot.step_key, assigned.get((slot.run_id, slot.step_key))))
    return out


def _in_progress_records(instance: DagsterInstance, tags: Mapping[str, str] | None = None) -> list[Any]:
    from dagster import DagsterRunStatus, RunsFilter

    statuses = [DagsterRunStatus(s) for s in IN_PROGRESS]
    return list(instance.get_run_records(RunsFilter(statuses=statuses, tags=dict(tags or {}))))


def _mark_ended(instance: DagsterInstance, run: DagsterRun, message: str) -> str:
    """Mark a run that will never report back: CANCELED when it was being canceled, else FAILED."""
    from dagster import DagsterRunStatus
    from dagster._core.events import JobFailureData, RunFailureReason

    instance.add_run_tags(run.run_id, {ENDED_TAG: "process gone"})
    if run.status == DagsterRunStatus.CANCELING:
        instance.report_run_canceled(run, message)
        return "CANCELED"
    instance.report_run_failed(
        run, message, JobFailureData(error=None, failure_reason=RunFailureReason.UNEXPECTED_TERMINATION)
    )
    return "FAILED"


def recover_dead_runs(
    instance: DagsterInstance, say: Say | None = say_stderr, *, only: Sequence[str] | None = None
) -> list[DeadRun]:
    """Mark every in-progress run whose process is gone from this host as ended, and free its slots.

    Slots still claimed by runs that already ended (or no longer exist) are freed too. `only` limits
    the check to these run ids. One line per cleaned run goes to `say`."""
    slots = held_slots(instance)
    cleaned: list[DeadRun] = []
    for record in _in_progress_records(instance):
        run = record.dagster_run
        if only is not None and run.run_id not in only:
            continue
        if process_state(run.tags) != "gone":
            continue
        fresh = instance.get_run_by_id(run.run_id)
        if fresh is None or fresh.is_finished:
            continue  # another process got there first
        pid, where = run.tags.get(PID_TAG, "?"), run.tags.get(HOST_TAG, "?")
        message = (
            f"The process executing this run (pid {pid} on {where}) is gone: it was killed or crashed "
            f"without reporting back. Marked ended by pid {os.getpid()}, which freed its concurrency slots."
        )
        new_status = _mark_ended(instance, fresh, message)
        held = tuple(s for s in slots if s.run_id == run.run_id)
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        dead = DeadRun(run.run_id, run.status.value, new_status, pid, where, record.start_time or None, held)
        cleaned.append(dead)
        if say is not None:
            say(dead.line())
    # slots of runs that ended (a while ago: a step may outlive its run's end briefly) or were deleted
    for run_id in sorted({s.run_id for s in slots} - {d.run_id for d in cleaned}):
        if only is not None and run_id not in only:
            continue
        rec = instance.get_run_record_by_id(run_id)
        if rec is not None and (
            not rec.dagster_run.is_finished or time.time() - (rec.end_time or 0.0) < ENDED_GRACE_S
        ):
            continue
        instance.event_log_storage.free_concurrency_slots_for_run(run_id)
        if say is not None:
            state = rec.dagster_run.status.value if rec is not None else "deleted"
            for s in (s for s in slots if s.run_id == run_id):
                say(f"freed {s.text()} of run {short(run_id)}, which had already ended ({state})")
    return cleaned


def run_health(instance: DagsterInstance) -> dict[str, Any]:
    """Held slots and in-progress runs, each with its process state (the slow path of `status`)."""
    slots = held_slots(instance)
    records = {r.dagster_run.run_id: r for r in _in_progress_records(instance)}
    for s in slots:
        if s.run_id not in records:
            rec = instance.get_run_record_by_id(s.run_id)
            if rec is not None:
                records[s.run_id] = rec
    runs = []
    for run_id, rec in records.items():
        run = rec.dagster_run
        runs.append(
            {
                "run_id": run_id,
                "status": run.status.value,
                "job": run.job_name,
                "started": when(rec.start_time) if rec.start_time else None,
                "pid": run.tags.get(PID_TAG),
                "host": run.tags.get(HOST_TAG),
                "process": process_state(run.tags) if run.tags.get(PID_TAG) else "unknown",
            }
        )
    return health_report(
        [{"pool": s.pool, "run_id": s.run_id, "step": s.step, "since": when(s.since) if s.since else None}
         for s in slots],
        runs,
    )  # fmt: skip


# -- waiting for a slot says why -----------------------------------------------------------------------


class SlotWaitReporter:
    """While this process's runs wait for a pool slot longer than `after_s`, say which run and step
    hold it (again every `every_s`); a holder whose process is gone is cleaned up on the spot."""

    def __init__(
        self,
        instance: DagsterInstance,
        say: Say = say_stderr,
        *,
        after_s: float = 5.0,
        every_s: float = 30.0,
        poll_s: float = 1.0,
    ) -> None:
        self.instance = instance
        self.say = say
        self.after_s = after_s
        self.every_s = every_s
        self.poll_s = poll_s
        self._stop = threading.Event()
        self._said: dict[tuple[str, str], float] = {}
        self._thread = threading.Thread(target=self._loop, name="agentomnia-slot-wait", daemon=True)

    def __enter__(self) -> SlotWaitReporter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)

    def _loop(self) -> None:
        while not self._stop.wait(self.poll_s):
            try:
                self.tick()
            except Exception as exc:  # a report must never break the run it reports on
                if os.environ.get("AGENTOMNIA_DEBUG"):
                    self.say(f"(slot wait report failed: {type(exc).__name__}: {exc})")

    def tick(self) -> list[str]:
        """One look at the pools; the lines said."""
        from dagster import DagsterRunStatus, RunsFilter

        storage = self.instance.event_log_storage
        if not storage.supports_global_concurrency_limits:
            return []
        mine = {
            r.dagster_run.run_id
            for r in self.instance.get_run_records(
                RunsFilter(
                    statuses=[DagsterRunStatus.STARTED],
                    tags={PID_TAG: str(os.getpid()), HOST_TAG: host()},
                )
            )
        }
        if not mine:
            return []
        said: list[str] = []
        now = time.time()
        infos = storage.get_concurrency_infos(sorted(storage.get_concurrency_keys()))
        for pool, info in infos.items():
            for pending in info.pending_steps:
                if pending.run_id not in mine or pending.assigned_timestamp is not None:
                    continue
                waited = now - pending.enqueued_timestamp.timestamp()
                key = (pending.run_id, pending.step_key)
                if waited < self.after_s or now - self._said.get(key, 0.0) < self.every_s:
                    continue
                self._said[key] = now
                holders = [c for c in info.claimed_slots if c.run_id not in mine]
                dead = [c.run_id for c in holders if self._state(c.run_id) == "gone"]
                if dead:
                    recover_dead_runs(self.instance, self.say, only=dead)
                    still = {s.run_id for s in held_slots(self.instance) if s.pool == pool}
                    if not still & set(dead):
                        self._said.pop(key, None)  # the slot is free: the wait ends, or it is said anew
                        continue
                since = {(p.run_id, p.step_key): p.assigned_timestamp for p in info.pending_steps}
                parts = []
                for c in holders:
                    run = self.instance.get_run_by_id(c.run_id)
                    status = run.status.value if run else "deleted"
                    proc = describe_process(run.tags) if run else "no such run"
                    parts.append(
                        f"run {short(c.run_id)} step {c.step_key} since {when(since.get((c.run_id, c.step_key)))}"
                        f" ({status}; {proc})"
                    )
                limit = info.limit if info.limit is not None else "?"
                line = (
                    f"waiting {waited:.0f}s for a slot of pool '{pool}' (limit {limit}) for step "
                    f"{pending.step_key}: "
                    + ("held by " + "; ".join(parts) if parts else "no run holds one (is the limit 0?)")
                )
                self.say(line)
                said.append(line)
        return said

    def _state(self, run_id: str) -> str:
        run = self.instance.get_run_by_id(run_id)
        if run is None:
            return "gone"
        if run.is_finished:
            return "gone"  # ended but never gave its slot back
        return process_state(run.tags)


# -- the run launcher the daemon's run monitoring asks -------------------------------------------------


def _launcher_class() -> type:
    from dagster import DefaultRunLauncher
    from dagster._core.launcher import CheckRunHealthResult, WorkerStatus

    class AgentomniaRunLauncher(DefaultRunLauncher):
        """Dagster's default launcher, plus a worker-health check for run monitoring.

        A run that names its process (every run `agentomnia run` starts) is healthy while that process
        lives; once it is gone from this host the monitor marks the run failed and, after
        `free_slots_after_run_end_seconds`, frees its slots. Runs the code server launched carry no pid:
        the code server watches those itself, so they are reported running."""

        @property
        def supports_check_run_worker_health(self) -> bool:
            return True

        def check_run_worker_health(self, run: Any) -> Any:
            state = process_state(run.tags)
            if state == "gone":
                return CheckRunHealthResult(
                    WorkerStatus.FAILED,
                    f"the process executing the run (pid {run.tags.get(PID_TAG)} on "
                    f"{run.tags.get(HOST_TAG)}) is gone",
                )
            return CheckRunHealthResult(
                WorkerStatus.RUNNING, "" if state == "alive" else describe_process(run.tags)
            )

    AgentomniaRunLauncher.__module__ = __name__
    return AgentomniaRunLauncher


_LAZY: dict[str, type] = {}


def __getattr__(name: str) -> Any:
    """`AgentomniaRunLauncher` is built on first use, so importing this module does not load Dagster."""
    if name == "AgentomniaRunLauncher":
        if name not in _LAZY:
            _LAZY[name] = _launcher_class()
        return _LAZY[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- supervising a run in a child process ------------------------------------------------------------


class RunInterrupted(RuntimeError):
    """SIGINT or SIGTERM stopped the run; its runs are CANCELED and its processes stopped."""


class RunWorkerDied(RuntimeError):
    """The child executing the run died without reporting back; its runs are marked FAILED."""


class RunError(RuntimeError):
    """The child reported an exception; `kind` is its class name."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _instance() -> DagsterInstance:
    """The platform home's instance (DAGSTER_HOME is set only by then in this process)."""
    from dagster import DagsterInstance

    from agentomnia.storage import Storage
    from agentomnia_assets.instance import ensure_dagster_home

    ensure_dagster_home(Storage().root)
    return DagsterInstance.get()


def _runs_of(instance: DagsterInstance, pid: int) -> list[Any]:
    return [r.dagster_run for r in _in_progress_records(instance, {PID_TAG: str(pid), HOST_TAG: host()})]


def _finish_runs(instance: DagsterInstance, pid: int, *, canceled: bool, message: str) -> list[str]:
    """End every in-progress run of the child `pid` and free the slots of all its runs."""
    from dagster import RunsFilter

    ended = []
    for run in _runs_of(instance, pid):
        fresh = instance.get_run_by_id(run.run_id)
        if fresh is None or fresh.is_finished:
            continue
        if canceled:
            instance.add_run_tags(fresh.run_id, {ENDED_TAG: "canceled"})
            instance.report_run_canceled(fresh, message)
        else:
            _mark_ended(instance, fresh, message)
        ended.append(run.run_id)
    if instance.event_log_storage.supports_global_concurrency_limits:
        for rec in instance.get_run_records(RunsFilter(tags={PID_TAG: str(pid), HOST_TAG: host()})):
            instance.event_log_storage.free_concurrency_slots_for_run(rec.dagster_run.run_id)
    return ended


def supervise(
    entry: str,
    target: str,
    kwargs: Mapping[str, Any],
    *,
    project_root: Path,
    grace_s: float | None = None,
    say: Say = say_stderr,
) -> Any:
    """Run `target` with `kwargs` in a child process through `entry` ("module:function", which calls
    `run_child` with its targets); the target's JSON result.

    The child runs in its own process group, so a terminal's Ctrl-C reaches this process only, which
    then cancels the runs before it interrupts the child."""
    if grace_s is None:  # how long an interrupted run may take to stop on its own before it is killed
        grace_s = float(os.environ.get("AGENTOMNIA_CANCEL_GRACE_S", "20"))
    module, function = entry.split(":")
    launcher = (
        "import importlib, sys; "
        f"raise SystemExit(getattr(importlib.import_module({module!r}), {function!r})(sys.argv[1]))"
    )
    with tempfile.TemporaryDirectory(prefix="agentomnia-run-") as tmp:
        spec = Path(tmp) / "spec.json"
        out = Path(tmp) / "result.json"
        spec.write_text(
            json.dumps({"target": target, "kwargs": dict(kwargs), "out": str(out)}), encoding="utf-8"
        )
        env = dict(os.environ)
        env[SUPERVISOR_ENV] = str(os.getpid())
        env["AGENTOMNIA_PROJECT_ROOT"] = str(project_root)
        env["PYTHONPATH"] = os.pathsep.join([str(project_root), *filter(None, [env.get("PYTHONPATH")])])
        requested: list[int] = []

        def on_signal(signo: int, _frame: Any) -> None:
            requested.append(signo)

        handled: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        previous: dict[int, Any] = {}
        main_thread = threading.current_thread() is threading.main_thread()
        if main_thread:
            for signo in handled:
                if signal.getsignal(signo) is not signal.SIG_IGN:  # `nohup`, `&` in a script: keep ignoring
                    previous[signo] = signal.signal(signo, on_signal)
        try:
            child = subprocess.Popen(
                [sys.executable, "-c", launcher, str(spec)],
                env=env,
                cwd=str(project_root),
                process_group=0,
                # what the run prints (trainer logs included) goes to stderr: stdout carries the result
                stdout=_stderr_fd(),
            )
            return _watch(child, out, requested, grace_s, say)
        finally:
            if main_thread:
                for signo, handler in previous.items():
                    signal.signal(signo, handler)


def _stderr_fd() -> int | None:
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return None  # no real stderr (an embedding host): the child keeps this process's stdout


def _watch(child: subprocess.Popen[bytes], out: Path, requested: list[int], grace_s: float, say: Say) -> Any:
    tracked = ProcessTracker()
    try:
        root = psutil.Process(child.pid)
    except psutil.Error:
        root = None
    deadline: float | None = None
    forwarded = 0
    instance: DagsterInstance | None = None
    while True:
        try:
            rc: int | None = child.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            rc = None
        if root is not None and rc is None:
            tracked.scan(root)
        if rc is not None:
            break
        if len(requested) > forwarded:
            forwarded = len(requested)
            if deadline is None:
                name = signal.Signals(requested[0]).name
                say(
                    f"{name}: canceling the run (stopping its steps and sandbox workers, up to {grace_s:.0f}s)"
                )
                instance = instance or _instance()
                for run in _runs_of(instance, child.pid):
                    fresh = instance.get_run_by_id(run.run_id)
                    if fresh is not None and not fresh.is_finished:
                        instance.report_run_canceling(fresh, f"{name} received by `agentomnia run`")
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.pid, signal.SIGINT)
                deadline = time.monotonic() + grace_s
            else:
                deadline = time.monotonic()  # a second signal: stop now
        if deadline is not None and time.monotonic() >= deadline:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                child.kill()
            rc = child.wait()
            break
    leftovers = tracked.stop()
    if requested:
        name = signal.Signals(requested[0]).name
        instance = instance or _instance()
        ended = _finish_runs(
            instance, child.pid, canceled=True, message=f"canceled: {name} received by `agentomnia run`"
        )
        gone = [short(r) for r in ended]
        raise RunInterrupted(
            f"stopped by {name}; the run is canceled, its slots are free"
            + (f" (marked {', '.join(gone)} canceled)" if gone else "")
            + (f"; stopped {leftovers} leftover process(es)" if leftovers else "")
        )
    if out.exists():
        result = json.loads(out.read_text(encoding="utf-8"))
        if "error" in result:
            raise RunError(result["error"]["type"], result["error"]["message"])
        return result["value"]
    how = f"killed by {signal.Signals(-rc).name}" if rc < 0 else f"exit code {rc}"
    instance = instance or _instance()
    ended = _finish_runs(
        instance, child.pid, canceled=False,
        message=f"the run worker (pid {child.pid}) died without reporting back ({how})",
    )  # fmt: skip
    raise RunWorkerDied(
        f"the run worker (pid {child.pid}) died without reporting back ({how}"
        + ("; out of memory?" if rc == -signal.SIGKILL else "")
        + ")"
        + (f"; marked {', '.join(short(r) for r in ended)} failed and freed its slots" if ended else "")
    )


def raise_child_error(exc: RunError) -> None:
    """Re-raise a child's exception as its own built-in class where there is one."""
    cls = getattr(builtins, exc.kind, None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        raise cls(str(exc)) from None
    raise type(exc.kind, (RuntimeError,), {})(str(exc)) from None


def _write_atomically(path: Path, value: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value, default=str), encoding="utf-8")
    os.replace(tmp, path)


def run_child(spec_path: str, targets: Mapping[str, Callable[..., Any]]) -> int:
    """The child's side of `supervise`: run the named target, write its result (or error) for the parent.

    Its exit code: 0 done, 1 the target raised (the error is in the result), 130 interrupted."""
    parent = os.environ.get(SUPERVISOR_ENV, "")
    if parent.isdigit():
        set_parent_death_signal(int(parent))
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    root = os.environ.get("AGENTOMNIA_PROJECT_ROOT")
    if root and root not in sys.path:
        sys.path.insert(0, root)
    out = Path(spec["out"])
    try:
        value = targets[spec["target"]](**spec["kwargs"])
    except BaseException as exc:  # every ending is reported to the supervisor, interrupts included
        if os.environ.get("AGENTOMNIA_DEBUG"):
            import traceback

            traceback.print_exc()
        if (
            isinstance(exc, (KeyboardInterrupt, SystemExit))
            or type(exc).__name__ == "DagsterExecutionInterruptedError"
        ):
            return 130
        _write_atomically(out, {"error": {"type": type(exc).__name__, "message": str(exc)}})
        return 1
    _write_atomically(out, {"value": value})
    return 0
