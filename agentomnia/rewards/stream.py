"""Rewards as rollouts complete (paper §5.2.2): score each rollout the moment it ends, while the rest of
its group is still being generated, instead of scoring the whole batch behind a barrier at the end.

`RewardStream` takes a finished rollout as a key and a thunk that scores it. With `workers > 0` the thunk
starts at once on a thread of its own (the scoring waits on the sandbox and the judge, not on Python, so
threads overlap it with generation); `result(key)` waits for that rollout's reward only. With
`workers=0` the stream is the batch-at-end baseline: nothing runs until `result` is asked for, and then
every rollout is scored in turn. Both modes run the same thunks, so a benchmark can set them side by side.

Every reward carries its timing: when the rollout ended (`submit`), when its scoring started and when
its reward was ready. `timings()` gives them, and `latency` is what §5.2.2 cares about: the time from a
rollout's end to its reward.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class RewardTiming:
    """Seconds on the stream's clock: the rollout ended, its scoring started, its reward was ready."""

    ended: float
    started: float
    ready: float

    @property
    def latency(self) -> float:
        """From the rollout's end to its reward."""
        return self.ready - self.ended

    @property
    def scoring(self) -> float:
        """The scoring's own time (the rest of the latency is waiting)."""
        return self.ready - self.started


class RewardStream(Generic[T]):
    """Scores finished rollouts concurrently (`workers > 0`) or all at the end (`workers=0`)."""

    def __init__(self, workers: int = 4, *, clock: Callable[[], float] = time.perf_counter) -> None:
        if workers < 0:
            raise ValueError(f"workers must be 0 (score at the end) or more, got {workers}")
        self.workers = workers
        self._clock = clock
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="reward") if workers else None
        self._lock = threading.Lock()
        self._ended: dict[Hashable, float] = {}
        self._waiting: dict[Hashable, Callable[[], T]] = {}
        self._futures: dict[Hashable, Future[T]] = {}
        self._timings: dict[Hashable, RewardTiming] = {}

    @property
    def streaming(self) -> bool:
        return self._pool is not None

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._ended

    def submit(self, key: Hashable, score: Callable[[], T]) -> bool:
        """Hand over a finished rollout; False when `key` was already handed over (its first thunk stands)."""
        with self._lock:
            if key in self._ended:
                return False
            ended = self._ended[key] = self._clock()
            if self._pool is None:
                self._waiting[key] = score
                return True
            self._futures[key] = self._pool.submit(self._run, key, ended, score)
        return True

    def _run(self, key: Hashable, ended: float, score: Callable[[], T]) -> T:
        started = self._clock()
        try:
            return score()
        finally:
            ready = self._clock()
            with self._lock:
                self._timings[key] = RewardTiming(ended, started, ready)

    def result(self, key: Hashable) -> T:
        """The reward of `key`, waiting for it when it is still being scored. At the barrier (workers=0),
        the first call scores every rollout handed over so far, in the order they ended."""
        with self._lock:
            future = self._futures.get(key)
            known = key in self._ended
        if not known:
            raise KeyError(f"rollout {key!r} was never handed to the reward stream; submit it when it ends")
        if future is None:
            self._drain()
            with self._lock:
                future = self._futures[key]
        return future.result()

    def _drain(self) -> None:
        """The barrier: score what is waiting, one rollout after another."""
        while True:
            with self._lock:
                if not self._waiting:
                    return
                key = next(iter(self._waiting))
                score = self._waiting.pop(key)
                ended = self._ended[key]
            future: Future[T] = Future()
            try:
                future.set_result(self._run(key, ended, score))
            except BaseException as exc:  # the caller of `result` gets it, as from a thread
                future.set_exception(exc)
            with self._lock:
                self._futures[key] = future

    def wait_all(self) -> None:
        """Every reward handed over so far is ready (the barrier scores them now)."""
        self._drain()
        with self._lock:
            futures = list(self._futures.values())
        for future in futures:
            future.exception()

    def timings(self) -> dict[Hashable, RewardTiming]:
        with self._lock:
            return dict(self._timings)

    def clear(self) -> None:
        """Forget every rollout (the next batch reuses keys); call once their rewards were read."""
        self.wait_all()
        with self._lock:
            self._ended.clear()
            self._waiting.clear()
            self._futures.clear()
            self._timings.clear()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def __enter__(self) -> RewardStream[T]:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def latency_summary(timings: list[RewardTiming]) -> dict[str, float | None]:
    """Median and worst time from a rollout's end to its reward, and the median scoring time, in ms."""
    if not timings:
        return {"latency_p50_ms": None, "latency_max_ms": None, "scoring_p50_ms": None}
    return {
        "latency_p50_ms": round(statistics.median(t.latency for t in timings) * 1000, 3),
        "latency_max_ms": round(max(t.latency for t in timings) * 1000, 3),
        "scoring_p50_ms": round(statistics.median(t.scoring for t in timings) * 1000, 3),
    }
