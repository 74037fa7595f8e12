"""How far each running stage has got: items done of total, for the person watching a run.

A stage that works through a list (candidates to build, environments to make tasks on, tasks to
validate) reports each finished item to the process's board under its step's name; `agentomnia run`
reads the board while the stage runs and says `37/139 environments, 2.1/s`. The board is only a view:
nothing reads it to decide anything, and a stage that reports nothing simply shows no count.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Progress:
    step: str
    unit: str
    done: int
    total: int
    started: float  # time.monotonic() when the first item began
    updated: float

    @property
    def rate(self) -> float:
        """Items per second since the stage's first item began."""
        return self.done / max(1e-9, self.updated - self.started)

    def line(self) -> str:
        """`37/139 environments, 2.1/s`; the rate only once a tenth of a second has gone by."""
        counted = f"{self.done}/{self.total} {self.unit}"
        return counted if self.updated - self.started < 0.1 else f"{counted}, {self.rate:.1f}/s"


_lock = threading.Lock()
_board: dict[str, Progress] = {}


def report(step: str, done: int, total: int, unit: str) -> None:
    now = time.monotonic()
    with _lock:
        old = _board.get(step)
        started = old.started if old is not None and old.unit == unit and done >= old.done else now
        _board[step] = Progress(step, unit, done, total, started, now)


def snapshot() -> dict[str, Progress]:
    with _lock:
        return dict(_board)


def clear(step: str) -> None:
    with _lock:
        _board.pop(step, None)


def tracked_map(
    step: str,
    unit: str,
    fn: Callable[[T], R],
    items: Iterable[T],
    *,
    workers: int = 1,
    processes: int = 0,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
) -> list[R]:
    """`[fn(x) for x in items]` on `workers` threads, in order, each finished item reported.

    With `processes` > 1 the items run on that many spawned worker processes instead (each first runs
    `initializer(*initargs)`): work bound by the interpreter gets every core, where threads of one
    process take turns. `fn`, the items and the results must then pickle (`fn` a module-level
    function)."""
    todo: Sequence[T] = list(items)
    count = [0]
    count_lock = threading.Lock()
    report(step, 0, len(todo), unit)

    def done() -> None:
        with count_lock:
            count[0] += 1
            report(step, count[0], len(todo), unit)

    def one(item: T) -> R:
        result = fn(item)
        done()
        return result

    try:
        if processes > 1:
            context = multiprocessing.get_context("spawn")  # never fork a process that holds threads
            with ProcessPoolExecutor(
                max_workers=max(1, min(processes, len(todo))), mp_context=context, initializer=initializer, initargs=initargs
            ) as pool:  # fmt: skip
                futures = [pool.submit(fn, item) for item in todo]
                for future in futures:
                    future.add_done_callback(lambda _: done())
                return [f.result() for f in futures]
        if workers <= 1:
            return [one(x) for x in todo]
        with ThreadPoolExecutor(max_workers=workers) as threads:
            out: list[Any] = list(threads.map(one, todo))
        return out
    finally:
        clear(step)
