"""RL difficulty from a served model (llm mode): pass@K of the model itself, sampled once per attempt
with its own seed, so K attempts are K samples and a rerun replays each from the cache."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentomnia.tasks.models import Task
from agentomnia.trajectories.rl import llm_policy, pass_at_k
from tests.fixtures.chat_server import ChatServer, client, serving


@pytest.fixture
def server() -> Iterator[ChatServer]:
    yield from serving()


def _call(tool: str, arguments: str) -> dict[str, Any]:
    return {"content": None, "tool_calls": [{"id": "c1", "type": "function",
                                             "function": {"name": tool, "arguments": arguments}}]}  # fmt: skip


def test_pass_at_k_samples_the_served_model(
    server: ChatServer, tmp_path: Path, tasks: list[Task], parcel: Any
) -> None:
    task = next(t for t in tasks if t.interaction == "single" and len(t.reference_calls) == 1)
    ref = task.reference_calls[0]
    # attempt 0 does the task, attempt 1 answers without acting; each ends with a closing message
    server.script = [
        (200, _call(ref.tool, json.dumps(dict(ref.args)))),
        (200, "Done."),
        (200, "I cannot help with that."),
    ]
    llm = client(server, tmp_path)
    first = pass_at_k(task, parcel.bundle, parcel.sandbox, llm_policy(llm), k=2, max_steps=4)
    assert first.policy == "llm:tiny" and first.k == 2, first
    assert (first.valid, first.passes) == (2, 1), first  # the attempt that acted passed, the other did not
    seeds = [r.get("seed") for r in server.requests]
    assert len(set(seeds)) == 2 and None not in seeds  # one sampling seed per attempt, sent each turn
    assert all(r["temperature"] == 0.7 for r in server.requests)
    # the same K attempts again: every turn replayed from the cache, nothing sent
    sent = len(server.requests)
    again = pass_at_k(
        task, parcel.bundle, parcel.sandbox, llm_policy(client(server, tmp_path)), k=2, max_steps=4
    )
    assert len(server.requests) == sent and again == first
