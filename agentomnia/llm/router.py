"""Several endpoints serving one model, used as one: requests go where their prefix is cached, unless
that endpoint is busier than the others.

Judging at RL scale (paper §5.2.2) sends many requests that share a long prefix: every rubric item of
a rollout repeats the rollout's transcript, and only the item at the end differs. A server that has
just read that prefix holds it in its KV cache, so the item is cheapest there. `RoutedLLM` sends each
request to its prefix's home endpoint (a stable hash of everything but the last message) and moves it
to the least loaded endpoint only when the home has more than `slack` requests in flight beyond that
one. Load is counted per endpoint as requests in flight, under a lock; each endpoint keeps its own
concurrency limit and retries.

`make_llm` builds one when `AGENTOMNIA_LLM_BASE_URLS` names more than one endpoint.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from agentomnia.llm.ledger import Ledger, ledger_of
from agentomnia.llm.protocol import LLM, LLMResponse, Message, Usage

DEFAULT_SLACK = 2


def prefix_key(messages: Sequence[Message]) -> str:
    """The shared part of a request: every message but the last (the part that differs per item)."""
    head = [dict(m) for m in messages[:-1]] if len(messages) > 1 else [dict(m) for m in messages]
    return hashlib.sha256(json.dumps(head, sort_keys=True, default=str).encode("utf-8")).hexdigest()


class RoutedLLM:
    """An `LLM` over `endpoints` (same model behind each): prefix affinity, bounded by load."""

    def __init__(self, endpoints: Sequence[LLM], *, slack: int = DEFAULT_SLACK) -> None:
        if not endpoints:
            raise ValueError("a routed LLM needs at least one endpoint")
        if slack < 0:
            raise ValueError(f"slack must not be negative, got {slack}")
        self.endpoints = list(endpoints)
        self.model = self.endpoints[0].model
        # one ledger for the stage: the endpoints' own when they share one (make_llm builds them so)
        self.ledger = ledger_of(self.endpoints[0]) or Ledger()
        self.slack = slack
        self.in_flight = [0] * len(self.endpoints)
        self.sent = [0] * len(self.endpoints)  # requests each endpoint received
        self.moved = 0  # requests sent away from their prefix's home because it was busy
        self._lock = threading.Lock()

    def home(self, messages: Sequence[Message]) -> int:
        return int(prefix_key(messages)[:12], 16) % len(self.endpoints)

    def _acquire(self, messages: Sequence[Message]) -> int:
        home = self.home(messages)
        with self._lock:
            least = min(range(len(self.endpoints)), key=lambda i: (self.in_flight[i], i))
            chosen = home if self.in_flight[home] - self.in_flight[least] <= self.slack else least
            self.moved += chosen != home
            self.in_flight[chosen] += 1
            self.sent[chosen] += 1
        return chosen

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: Mapping[str, Any] | None = None,
        schema_name: str = "output",
        temperature: float = 0.0,
        max_tokens: int | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        seed: int | None = None,
    ) -> LLMResponse:
        index = self._acquire(messages)
        try:
            return self.endpoints[index].complete(
                messages, schema=schema, schema_name=schema_name, temperature=temperature,
                max_tokens=max_tokens, tools=tools, seed=seed,
            )  # fmt: skip
        finally:
            with self._lock:
                self.in_flight[index] -= 1

    @property
    def usage(self) -> Usage:
        total = Usage()
        for endpoint in self.endpoints:
            total.add(endpoint.usage)
        return total

    def stats(self) -> dict[str, Any]:
        """Requests per endpoint and how many left their prefix's home for load."""
        with self._lock:
            return {"sent": list(self.sent), "moved": self.moved, "in_flight": list(self.in_flight)}
