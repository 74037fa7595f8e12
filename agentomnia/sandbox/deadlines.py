"""Wall-clock budgets for code run in a worker, and the scope a namespace runs in under one.

A worker arms one alarm (`SIGALRM`) for the innermost budget; nested budgets (a program's, then
each of its tool calls) never outlive the one around them. `running` makes a namespace current
(its ambient generator and clock, its class registry, a fresh decimal context) for as long as the
budget holds. Nothing here imports pydantic: a worker loads it before its imports are blocked.
"""

from __future__ import annotations

import decimal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from agentomnia.sandbox import views
from agentomnia.sandbox.guards import Namespace


class CallTimeout(BaseException):
    """Raised inside running code when its wall-clock budget is spent.

    A BaseException, so the `except Exception` that generated tools are full of cannot swallow it.
    """


class Deadlines:
    """Nested wall-clock budgets. `arm(seconds)` schedules (or cancels, with None) the one alarm."""

    def __init__(self, arm: Callable[[float | None], None] | None = None) -> None:
        self._arm = arm
        self._stack: list[float] = []

    def push(self, seconds: float | None) -> None:
        if self._arm is None or seconds is None:
            return
        now = time.monotonic()
        deadline = now + seconds
        if self._stack:
            deadline = min(deadline, self._stack[-1])
        self._stack.append(deadline)
        self._arm(max(deadline - now, 1e-4))

    def pop(self, seconds: float | None) -> None:
        if self._arm is None or seconds is None:
            return
        if self._stack:
            self._stack.pop()
        if self._stack:
            self._arm(max(self._stack[-1] - time.monotonic(), 1e-4))
        else:
            self._arm(None)

    def clear(self) -> None:
        """Forget every budget (a request boundary: nothing may outlive the request that set it)."""
        self._stack.clear()
        if self._arm is not None:
            self._arm(None)

    @contextmanager
    def budget(self, seconds: float | None) -> Iterator[None]:
        self.push(seconds)
        try:
            yield
        finally:
            self.pop(seconds)


@dataclass(frozen=True)
class Limits:
    """Per-call limits applied by the runtime (process limits live in `containment`)."""

    call_timeout_s: float | None = 5.0
    max_result_bytes: int = 1_000_000
    max_program_calls: int = 2_000


class running:
    """Make a namespace current (its ambient, class registry, a fresh decimal context) under a budget.

    A plain class rather than a generator-based context manager: it wraps every tool call.
    """

    __slots__ = ("deadlines", "namespace", "saved", "seconds")

    def __init__(self, deadlines: Deadlines, namespace: Namespace, seconds: float | None) -> None:
        self.deadlines = deadlines
        self.namespace = namespace
        self.seconds = seconds
        self.saved: tuple[views.Ambient, Callable[[type], None]] | None = None

    def __enter__(self) -> None:
        current = views.CURRENT
        self.saved = (current.ambient, current.register)
        current.ambient, current.register = self.namespace.ambient, self.namespace.register
        decimal.setcontext(views.fresh_decimal_context())
        self.deadlines.push(self.seconds)

    def __exit__(self, *exc: object) -> None:
        self.deadlines.pop(self.seconds)
        assert self.saved is not None
        views.CURRENT.ambient, views.CURRENT.register = self.saved
