"""Which process executes a run, and whether it still lives: the engine side of crash recovery.

A run names the process that executes it in its tags (`agentomnia/pid`, `agentomnia/pid_started`,
`agentomnia/host`). `process_state` answers from those tags alone: `os.kill(pid, 0)` on the same
host, with the process's start time to tell a reused pid from the original and a zombie counted as
gone. Nothing here imports Dagster: `agentomnia status` uses it on Dagster's SQLite files directly,
and `agentomnia_assets.recovery` on the instance.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psutil

PID_TAG = "agentomnia/pid"
PID_STARTED_TAG = "agentomnia/pid_started"
HOST_TAG = "agentomnia/host"
SUPERVISOR_TAG = "agentomnia/supervisor"
ENDED_TAG = "agentomnia/ended"  # why a run that could not report back was ended: a rerun finishes it
SUPERVISOR_ENV = "AGENTOMNIA_SUPERVISOR_PID"
IN_PROGRESS = ("NOT_STARTED", "STARTING", "STARTED", "CANCELING")

Say = Callable[[str], None]


_CLEAR = "\r\x1b[K"  # to the start of the line, then erase it
_status_lock = threading.Lock()
_status_shown = False  # a status line stands on the terminal, without its newline


def say_stderr(line: str) -> None:
    """Say `line` for good, on standard error, in place of the status line standing there."""
    global _status_shown
    with _status_lock:
        print((_CLEAR if _status_shown else "") + line, file=sys.stderr, flush=True)
        _status_shown = False


def show_stderr(line: str) -> None:
    """Show `line` as the terminal's status line, until the next line replaces it: what is running
    now and how far it has got. Where standard error is not a terminal (a log, CI), a line is kept."""
    global _status_shown
    stream = sys.stderr
    if not (hasattr(stream, "isatty") and stream.isatty()):
        say_stderr(line)
        return
    width = shutil.get_terminal_size().columns
    with _status_lock:
        stream.write(_CLEAR + line[: max(1, width - 1)])  # a wrapped line could not be taken back
        stream.flush()
        _status_shown = True


def clear_status() -> None:
    """Take the status line off the terminal (before other output, or at the end of a run)."""
    global _status_shown
    with _status_lock:
        if _status_shown:
            sys.stderr.write(_CLEAR)
            sys.stderr.flush()
            _status_shown = False


def short(run_id: str) -> str:
    return run_id[:8]


def when(value: datetime | float | str | None) -> str:
    """A local wall-clock time for messages; naive datetimes are UTC (as Dagster stores them)."""
    if value is None or value == "":
        return "?"
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return str(value)
    if isinstance(value, (int, float)):
        value = datetime.fromtimestamp(float(value), UTC)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone().strftime("%Y-%m-%d %H:%M:%S")


# -- which process runs a run ------------------------------------------------------------------------


def host() -> str:
    return socket.gethostname()


def _create_time(pid: int) -> float | None:
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.Error, ValueError):
        return None


def process_tags(pid: int | None = None) -> dict[str, str]:
    """The tags that name the process executing a run (by default this one)."""
    pid = os.getpid() if pid is None else pid
    tags = {PID_TAG: str(pid), HOST_TAG: host()}
    started = _create_time(pid)
    if started is not None:
        tags[PID_STARTED_TAG] = f"{started:.2f}"
    supervisor = os.environ.get(SUPERVISOR_ENV, "")
    if supervisor.isdigit():
        tags[SUPERVISOR_TAG] = supervisor
    return tags


def process_state(tags: Mapping[str, str]) -> str:
    """`alive`, `gone` or `unknown` (no pid recorded, or the run executes on another host).

    `os.kill(pid, 0)` says whether the pid exists; the recorded start time tells a reused pid from the
    original process, and a zombie (killed, not yet reaped) counts as gone."""
    pid = str(tags.get(PID_TAG, ""))
    if not pid.isdigit() or tags.get(HOST_TAG) != host():
        return "unknown"
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return "gone"
    except PermissionError:
        pass  # it exists, under another user
    try:
        proc = psutil.Process(int(pid))
        if proc.status() == psutil.STATUS_ZOMBIE:
            return "gone"
        started = tags.get(PID_STARTED_TAG)
        if started and abs(proc.create_time() - float(started)) > 1.0:
            return "gone"  # the pid now belongs to another process
    except psutil.NoSuchProcess:
        return "gone"
    except (psutil.Error, ValueError):
        return "alive"  # it exists but cannot be looked into (access denied): never call it gone
    return "alive"


def describe_process(tags: Mapping[str, str]) -> str:
    pid, where = tags.get(PID_TAG), tags.get(HOST_TAG)
    if not pid:
        return "not started by `agentomnia run` (the UI, the daemon or a test): no process to check"
    state = process_state(tags)
    text = {"alive": "running", "gone": "gone", "unknown": "cannot be checked from this host"}[state]
    return f"pid {pid} on {where}: {text}"


def health_report(slots: list[dict[str, Any]], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """`slots` (each with its run's status and process state) and `stuck_runs`: in progress, process gone."""
    by_id = {r["run_id"]: r for r in runs}
    for s in slots:
        run = by_id.get(s["run_id"])
        s["run_status"] = run["status"] if run else "unknown"
        s["process"] = run["process"] if run else "unknown"
    stuck = []
    for r in runs:
        if r["status"] in IN_PROGRESS and r["process"] == "gone":
            held = [{"pool": s["pool"], "step": s["step"], "since": s["since"]} for s in slots if s["run_id"] == r["run_id"]]  # fmt: skip
            stuck.append(
                {k: r[k] for k in ("run_id", "status", "job", "started", "pid", "host")} | {"slots": held}
            )
    return {"slots": slots, "stuck_runs": stuck}


def render_health(report: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    if report.get("stuck_runs"):
        lines += ["", "stuck runs (in progress, but their process is gone; `agentomnia run` cleans them up)"]
        for r in report["stuck_runs"]:
            held = ", ".join(
                f"{s['pool']} slot of step {s['step']} since {s['since'] or '?'}" for s in r["slots"]
            )
            lines.append(
                f"  {short(r['run_id'])}  {r['status']:<9} since {r['started'] or '?'}  pid {r['pid']} on {r['host']}"
                f"  holds: {held or 'no slot'}"
            )  # fmt: skip
    if report.get("slots"):
        lines += ["", "concurrency slots held (pool / run / step / since)"]
        for s in report["slots"]:
            state = {"alive": "process running", "gone": "process gone", "unknown": "process not checkable"}
            lines.append(
                f"  {s['pool']:<8} {short(s['run_id'])}  {s['step']:<26} {s['since'] or '?'}  "
                f"({s['run_status']}, {state.get(s['process'], s['process'])})"
            )
    return lines


@dataclass
class ProcessTracker:
    """Every descendant of a process seen so far, so that those it leaves behind can be stopped even
    after they were orphaned (sandbox workers run in sessions of their own)."""

    procs: dict[tuple[int, float], psutil.Process] = field(default_factory=dict)

    def scan(self, root: psutil.Process) -> None:
        with contextlib.suppress(psutil.Error):
            for p in root.children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    self.procs.setdefault((p.pid, p.create_time()), p)

    def alive(self) -> list[psutil.Process]:
        out = []
        for p in self.procs.values():
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    out.append(p)
            except psutil.Error:
                continue
        return out

    def stop(self, timeout_s: float = 5.0) -> int:
        """SIGTERM every tracked process still alive, SIGKILL what remains; how many were stopped."""
        left = self.alive()
        for p in left:
            with contextlib.suppress(psutil.Error):
                p.terminate()
        _, still = psutil.wait_procs(left, timeout=timeout_s)
        for p in still:
            with contextlib.suppress(psutil.Error):
                p.kill()
        psutil.wait_procs(still, timeout=timeout_s)
        return len(left)


def set_parent_death_signal(parent: int) -> None:
    """Linux: the kernel SIGKILLs this process when its parent dies (the supervisor was killed)."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)
