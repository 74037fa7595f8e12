"""Kill-and-replace: a broken worker is replaced and its sessions are rebuilt by replaying history."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest

from agentomnia.sandbox import Bundle, Sandbox, SessionLost

ToolFactory = Callable[..., dict[str, Any]]

HANG = """
import collections, itertools


class Hang:
    def __init__(self, init_config):
        self.n = 0

    def hang(self):
        collections.deque(itertools.repeat(1), maxlen=0)
"""


def _hang_bundle(tool: ToolFactory) -> Bundle:
    return Bundle.from_source(HANG, [tool("hang")], {})


def test_history_with_resets_snapshots_and_programs_survives_a_crash(mock: Bundle, tool: ToolFactory) -> None:
    with Sandbox(workers=1, call_timeout_s=0.5, cpu_seconds=2, grace_s=0.5, idle_timeout_s=0) as box:
        session = box.open(mock)
        session.call("create_task", {"user_id": "user_1", "title": "before snapshot"})
        marker = session.snapshot()
        session.reset({"users": {"u": {"user_id": "u", "name": "U", "email": "u@x"}}, "tasks": {}})
        session.call("create_task", {"user_id": "u", "title": "after reset"})
        box.run_program(
            "def solve(call):\n    return call('create_task', user_id='u', title='by program')\n", session
        )
        session.call("create_task", {"user_id": "nobody", "title": "fails, so not replayed"})
        expected = session.state_hash()
        pid = box.worker_pids()[0]

        crash = box.open(_hang_bundle(tool)).call("hang")
        assert crash.error is not None and crash.error.code == "timeout" and "replaced" in crash.error.message

        assert box.worker_pids()[0] != pid
        assert session.state_hash() == expected
        assert len(session.state()["tasks"]) == 2
        session.restore(marker)
        assert [t["title"] for t in session.state()["tasks"].values()][-1] == "before snapshot"


def test_worker_killed_from_outside_is_replaced_before_the_next_request(mock: Bundle) -> None:
    with Sandbox(workers=1, idle_timeout_s=0) as box:
        session = box.open(mock)
        session.call("create_task", {"user_id": "user_2", "title": "keep me"})
        expected = session.state_hash()
        os.kill(box.worker_pids()[0], signal.SIGKILL)
        time.sleep(0.1)
        assert session.state_hash() == expected
        assert box.stats()["workers"][0]["replacements"] == 1


def test_sessions_past_their_history_budget_are_lost_not_wrong(mock: Bundle, tool: ToolFactory) -> None:
    with Sandbox(
        workers=1, call_timeout_s=0.5, cpu_seconds=2, grace_s=0.5, max_history=3, idle_timeout_s=0
    ) as box:
        session = box.open(mock)
        for index in range(5):
            session.call("create_task", {"user_id": "user_1", "title": f"t{index}"})
        box.open(_hang_bundle(tool)).call("hang")
        with pytest.raises(SessionLost, match="max_history"):
            session.state_hash()
        # A reset makes the session replayable again, so a fresh session is the way forward.
        fresh = box.open(mock)
        assert fresh.call("get_user", {"user_id": "user_1"}).ok


def test_sessions_spread_over_workers(mock: Bundle) -> None:
    with Sandbox(workers=2, idle_timeout_s=0) as box:
        sessions = [box.open(mock) for _ in range(4)]
        assert sorted(w["sessions"] for w in box.stats()["workers"]) == [2, 2]
        for session in sessions:
            assert session.call("get_user", {"user_id": "user_1"}).ok


def test_cpu_limit_ends_the_worker_with_a_precise_code(mock: Bundle, tool: ToolFactory) -> None:
    with Sandbox(workers=1, call_timeout_s=1.0, cpu_seconds=1, grace_s=10.0, idle_timeout_s=0) as box:
        bystander = box.open(mock)
        bystander.call("create_task", {"user_id": "user_1", "title": "still here"})
        expected = bystander.state_hash()
        result = box.open(_hang_bundle(tool)).call("hang")
        assert result.error is not None and result.error.code == "cpu_limit", result
        assert bystander.state_hash() == expected


def test_a_lone_request_watches_for_its_reply_and_sleeps_past_the_budget(mock: Bundle) -> None:
    """`_spun` sees a reply that is already there, gives up after its budget when none comes, and a
    sandbox that never watches (`reply_spin_us=0`) answers the same as one that does."""
    import select
    import socket

    from agentomnia.sandbox.pool import _core_to_spare, _spun

    here, there = socket.socketpair()
    try:
        poller = select.poll()
        poller.register(here.fileno(), select.POLLIN)
        started = time.perf_counter()
        assert not _spun(poller, 0.002)
        assert time.perf_counter() - started >= 0.002  # it watched for the whole budget, then gave up
        there.send(b"x")
        assert _spun(poller, 0.002)
    finally:
        here.close()
        there.close()
    assert isinstance(_core_to_spare(every_s=0.0), bool)
    answers = []
    for spin in (0.0, 50.0):
        with Sandbox(workers=1, idle_timeout_s=0, reply_spin_us=spin) as sandbox:
            assert sandbox.config.reply_spin_us == spin
            session = sandbox.open(mock)
            answers.append([session.call("get_user", {"user_id": "user_1"}).data, session.state_hash()])
    assert answers[0] == answers[1]
    with pytest.raises(ValueError, match="reply_spin_us"):
        Sandbox(workers=1, reply_spin_us=-1)
