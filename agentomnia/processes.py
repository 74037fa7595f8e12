"""What every worker process the platform spawns does for itself: leave with its parent, keep
stdout clean for the parent's output, and run generated code in a sandbox of its own."""

from __future__ import annotations

import atexit
import multiprocessing
import os
import sys
import threading
import time

from agentomnia.sandbox.sandbox import Sandbox, SandboxConfig

_SANDBOX: Sandbox | None = None  # a worker process's own sandbox (`start_sandbox`)


def exit_with_parent(every_s: float = 1.0) -> threading.Thread:
    """Exit this process once its parent is gone, instead of idling on as an orphan.

    A pool worker holds both ends of the executor's call queue, so a parent killed with SIGKILL (an
    out-of-memory kill, a terminated run) never closes it and the worker would block forever, or
    finish its shard for nobody. The shard it leaves half-done has no `done.json` and is redone on
    resume; its sandbox workers see their socket close and exit too."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every_s)
        os._exit(3)

    thread = threading.Thread(target=watch, name="exit-with-parent", daemon=True)
    thread.start()
    return thread


def stdout_to_stderr() -> None:
    """Point this process's file descriptor 1 at its stderr.

    A worker has nothing to say on stdout, but native libraries print there (HiGHS, under the MILP
    solver, writes a debug line now and then), which would corrupt what the parent prints there,
    such as `bench scale --json`."""
    sys.stdout.flush()
    os.dup2(2, 1)


def start_sandbox(config: SandboxConfig) -> None:
    """A pool worker's initializer: leave with the parent, and open a one-worker sandbox with the
    limits of `config` (the parent's), closed when the process exits (`own_sandbox`)."""
    global _SANDBOX
    exit_with_parent()
    _SANDBOX = Sandbox(1, **config.model_dump(exclude={"workers", "scratch_dir"}))
    atexit.register(_SANDBOX.close)


def own_sandbox() -> Sandbox:
    """The sandbox `start_sandbox` opened in this worker process."""
    if _SANDBOX is None:
        raise RuntimeError("this process has no sandbox: start its pool with initializer=start_sandbox")
    return _SANDBOX


def may_start_processes() -> bool:
    """Whether this process may start worker processes: not when it is itself a daemon (a Celery
    prefork worker running a step, a pool worker), which Python forbids to have children."""
    return not multiprocessing.current_process().daemon


def worker_processes(configured: int | None = None) -> int:
    """Worker processes a stage runs on: `configured`, or one per core when None; none in a process
    that may not start any (`may_start_processes`), where the stage runs on threads."""
    if not may_start_processes():
        return 0
    return (os.cpu_count() or 1) if configured is None else configured
