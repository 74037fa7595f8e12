"""Batched requests answer exactly what the single requests would, and survive worker failures."""

from __future__ import annotations

import collections
import copy
import datetime
import decimal
import pickle
import types
from collections.abc import Callable
from typing import Any

import pytest

from agentomnia.records import ToolResult
from agentomnia.sandbox import Bundle, Sandbox, errors, guards
from agentomnia.sandbox.errors import LoadError, WorkerFailure
from agentomnia.sandbox.session import Batch

ToolFactory = Callable[..., dict[str, Any]]

HANG = """
import collections, itertools


class Hang:
    def __init__(self, init_config):
        self.n = init_config.get("n", 0)
        if init_config.get("explode"):
            raise ValueError("refuses this config")

    def bump(self):
        self.n += 1
        return {"ok": True, "data": self.n, "error": None}

    def hang(self):
        collections.deque(itertools.repeat(1), maxlen=0)
"""

CALLS = [
    ("create_task", {"user_id": "nobody", "title": "fails"}),
    ("create_task", {"user_id": "user_1", "title": "first that works"}),
    ("create_task", {"user_id": "user_2", "title": "never tried"}),
]


def _plain(answer: Any) -> Any:
    if isinstance(answer, list):
        return [r.model_dump() if isinstance(r, ToolResult) else r for r in answer]
    return answer


def _verification_like(batch: Batch, reset_to: dict[str, Any] | None = None) -> dict[str, int]:
    return {
        "tried": batch.calls(CALLS, first_ok=True),
        "after": batch.state(if_ok=True),
        "reset": batch.reset(reset_to, if_ok=True),
        "refused": batch.calls([("get_user", {"user_id": "nope"}), ("get_user", {})]),
        "hash": batch.hash(),
        "fresh": batch.hash(fresh=True),
        "skipped": batch.hash(if_ok=True),
    }


def test_a_batch_answers_like_the_same_steps_sent_one_by_one(sandbox: Sandbox, mock: Bundle) -> None:
    batched, single = sandbox.open(mock), sandbox.open(mock)
    try:
        batch = Batch()
        at = _verification_like(batch)
        answers = batched.run(batch)
        expected = single._run_one_by_one(batch.steps)
        assert [_plain(a) for a in answers] == [_plain(e) for e in expected]
        tried = answers[at["tried"]]
        assert [r.ok for r in tried] == [False, True]  # stopped at the first success
        state, digest = answers[at["after"]]
        assert any(t["title"] == "first that works" for t in state["tasks"].values())
        assert answers[at["reset"]] is True and answers[at["skipped"]] is None
        assert answers[at["hash"]] == answers[at["fresh"]] == batched.state_hash(fresh=True)
        assert digest != answers[at["hash"]]  # the reset put s0 back
        assert batched.state() == single.state()
    finally:
        batched.close()
        single.close()


def test_if_ok_steps_are_skipped_when_no_call_succeeds(sandbox: Sandbox, mock: Bundle) -> None:
    session = sandbox.open(mock)
    try:
        before = session.state_hash()
        batch = Batch()
        tried = batch.calls([("create_task", {"user_id": "nobody", "title": "x"})], first_ok=True)
        skipped = [batch.state(if_ok=True), batch.reset(if_ok=True), batch.hash(if_ok=True)]
        answers = session.run(batch)
        assert len(answers[tried]) == 1 and not answers[tried][0].ok
        assert [answers[i] for i in skipped] == [None, None, None]
        assert session.state_hash() == before
    finally:
        session.close()


def test_a_batch_reset_to_another_config_is_replayed_after_a_crash(tool: ToolFactory) -> None:
    bundle = Bundle.from_source(HANG, [tool("bump"), tool("hang")], {"n": 0})
    with Sandbox(workers=1, call_timeout_s=0.5, cpu_seconds=2, grace_s=0.5, idle_timeout_s=0) as box:
        session = box.open(bundle)
        batch = Batch()
        batch.calls([("bump", {}), ("bump", {})])
        batch.reset({"n": 40})
        batch.calls([("bump", {}), ("bump", {})])
        answers = session.run(batch)
        assert [r.data for r in answers[0]] == [1, 2] and [r.data for r in answers[2]] == [41, 42]
        expected = session.state_hash()
        crash = box.open(bundle).call("hang")  # takes the worker down; sessions are replayed
        assert crash.error is not None and crash.error.code == errors.TIMEOUT
        assert session.state_hash() == expected and session.state() == {"n": 42}
        session.reset()  # back to the config the batch reset to
        assert session.state() == {"n": 40}


def test_a_batch_that_kills_its_worker_is_rerun_step_by_step(tool: ToolFactory) -> None:
    bundle = Bundle.from_source(HANG, [tool("bump"), tool("hang")], {"n": 0})
    with Sandbox(workers=1, call_timeout_s=0.5, cpu_seconds=2, grace_s=0.5, idle_timeout_s=0) as box:
        session = box.open(bundle)
        batch = Batch()
        batch.calls([("bump", {})])
        hung = batch.calls([("hang", {}), ("bump", {})])
        state_at = batch.state()
        answers = session.run(batch)
        first, second = answers[hung]
        assert first.error is not None and first.error.code == errors.TIMEOUT
        assert second.error is not None  # the same request as the hang, as call_many reports it
        assert answers[state_at][0] == {"n": 1}
        assert box.stats()["workers"][0]["replacements"] == 2  # the batch, then the step on its own


def test_a_step_that_fails_ends_the_batch_and_raises_like_its_request(tool: ToolFactory) -> None:
    bundle = Bundle.from_source(HANG, [tool("bump"), tool("hang")], {"n": 0})
    with Sandbox(workers=1, idle_timeout_s=0) as box:
        session = box.open(bundle)
        batch = Batch()
        batch.calls([("bump", {})])
        batch.reset({"explode": True})
        batch.calls([("bump", {})])
        with pytest.raises(LoadError, match="refuses this config"):
            session.run(batch)
        assert session.state() == {"n": 1}  # the step before the failure stands; nothing after ran


def test_worker_failure_falls_back_to_single_requests(
    sandbox: Sandbox, mock: Bundle, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = sandbox.open(mock)
    twin = sandbox.open(mock)
    try:
        batch = Batch()
        at = _verification_like(batch)
        real = sandbox._request

        def flaky(record: Any, message: Any, **kwargs: Any) -> dict[str, Any]:
            if isinstance(message, str) and '"op":"batch"' in message:
                raise WorkerFailure("simulated", code=errors.WORKER_CRASHED)
            return real(record, message, **kwargs)

        monkeypatch.setattr(sandbox, "_request", flaky)
        answers = session.run(batch)
        monkeypatch.undo()
        expected = twin.run(batch)
        assert [_plain(a) for a in answers] == [_plain(e) for e in expected]
        assert answers[at["skipped"]] is None
    finally:
        session.close()
        twin.close()


# ---------------------------------------------------------------- copy.deepcopy in the sandbox


class _Custom:
    def __init__(self, payload: list[int]) -> None:
        self.payload = payload


def _values() -> list[Any]:
    shared = [1, {"x": 2}]
    looped: dict[str, Any] = {"name": "loop"}
    looped["self"] = looped
    listed: list[Any] = [1]
    listed.append(listed)
    custom = _Custom(shared)
    return [
        {"users": {"u1": {"id": "u1", "tags": ["a", "b"], "score": 1.5, "ok": True, "none": None}}},
        {"a": shared, "b": shared, "c": (shared, 1), "d": [custom, custom]},
        looped,
        listed,
        [datetime.date(2026, 1, 1), decimal.Decimal("1.10"), collections.OrderedDict(k=[1]), b"bytes", 3j],
        {(1, "t"): [1], 2: "int key", None: {"nested": [[], {}]}},
    ]


@pytest.mark.parametrize("index", range(6))
def test_sandbox_deepcopy_gives_what_copy_deepcopy_gives(index: int) -> None:
    value = _values()[index]
    ours, theirs = guards.deepcopy(value), copy.deepcopy(value)
    assert pickle.dumps(ours) == pickle.dumps(theirs)  # same values, same sharing, same cycles
    assert guards.deepcopy(value, {}) is not value


def test_sandbox_deepcopy_keeps_sharing_and_is_what_generated_code_imports() -> None:
    value = _values()[1]
    copied = guards.deepcopy(value)
    assert copied["a"] is copied["b"] is copied["c"][0] is copied["d"][0].payload
    assert copied["a"] is not value["a"] and copied["d"][0] is not value["d"][0]
    namespace = guards.Namespace(guards.views.Ambient(0), guards.Output())
    assert namespace.guard_import("copy").deepcopy is guards.deepcopy  # type: ignore[attr-defined]
    assert namespace.guard_import("copy", fromlist=("copy",)).copy is copy.copy  # type: ignore[attr-defined]


def test_closing_frees_the_state_and_collects_every_so_often(
    monkeypatch: pytest.MonkeyPatch, mock: Bundle
) -> None:
    from agentomnia.sandbox import deadlines, envsession, policy, worker
    from agentomnia.sandbox.bundle import config_key, config_seed

    collections_run: list[int] = []
    monkeypatch.setattr(worker, "gc", types.SimpleNamespace(collect=lambda: collections_run.append(1)))
    host = worker.Host(deadlines.Limits(call_timeout_s=None), 10.0, deadlines.Deadlines())
    payload = mock.worker_payload(policy.prepare(mock.source, "env").payload)
    env = envsession.CompiledEnv.from_payload(payload)
    blob = pickle.dumps(dict(mock.s0))
    sessions = []
    for index in range(worker._COLLECT_EVERY):
        session = envsession.EnvSession(
            env, blob, config_seed(config_key(mock.s0)), host.limits, host.deadlines
        )
        host.sessions[f"s{index}"] = session
        sessions.append(session)
    host._close({"sid": "s0"})
    assert sessions[0].instance.__dict__ == {} and not sessions[0].namespace.globals
    assert collections_run == []
    for index in range(1, worker._COLLECT_EVERY):
        host._close({"sid": f"s{index}"})
    assert collections_run == [1] and host.sessions == {}
