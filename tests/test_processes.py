"""Worker processes: a stage asks for them only where Python lets this process have children."""

from __future__ import annotations

import multiprocessing
from typing import Any

from agentomnia.omniabench.decoders import decoder_count
from agentomnia.processes import may_start_processes, worker_processes


def _report(queue: Any) -> None:
    queue.put((may_start_processes(), worker_processes(None), worker_processes(3), decoder_count("cpu", 4)))


def test_a_daemonic_process_runs_its_stages_on_threads() -> None:
    """A Celery prefork worker runs each step in a daemonic process, which may not start processes
    (Python refuses with an AssertionError): there every stage asks for none and runs on threads."""
    assert may_start_processes() and worker_processes(3) == 3 and worker_processes(0) == 0
    assert worker_processes(None) >= 1
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_report, args=(queue,), daemon=True)
    child.start()
    try:
        assert queue.get(timeout=60) == (False, 0, 0, 0)
    finally:
        child.join(timeout=10)
