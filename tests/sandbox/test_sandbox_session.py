"""Sessions over real worker processes: the protocol, isolation, admission control and reaping."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from agentomnia.sandbox import (
    Bundle,
    Environment,
    LoadError,
    PolicyError,
    Sandbox,
    SandboxBusy,
    SandboxError,
    SessionClosed,
    open_local,
)

ToolFactory = Callable[..., dict[str, Any]]

LEAKY = """
SHARED = []


class Leaky:
    notes = []

    def __init__(self, init_config):
        self.mine = []

    def remember(self, text: str):
        SHARED.append(text)
        Leaky.notes.append(text)
        self.mine.append(text)
        return {"ok": True, "data": {"shared": list(SHARED), "class": list(Leaky.notes), "mine": list(self.mine)}, "error": None}
"""

SLOW = """
class Slow:
    def __init__(self, init_config):
        self.n = 0

    def spin(self):
        while True:
            self.n += 1

    def ping(self):
        return {"ok": True, "data": self.n, "error": None}
"""


def test_protocol_round_trip(sandbox: Sandbox, mock: Bundle) -> None:
    with sandbox.open(mock) as session:
        assert isinstance(session, Environment)
        assert [t["function"]["name"] for t in session.tools()] == mock.tool_names
        initial = session.state_hash()
        created = session.call("create_task", {"user_id": "user_1", "title": "Write tests"})
        assert created.ok and created.data["task_id"] == "task_4"
        results = session.call_many(
            [("get_user", {"user_id": "user_2"}), ("nope", {}), ("list_tasks", {"user_id": "user_1"})]
        )
        assert [r.ok for r in results] == [True, False, True]
        assert len(results[2].data) == 3
        marker = session.snapshot()
        after_create = session.state_hash()
        session.call("update_task_status", {"task_id": "task_4", "status": "done"})
        session.restore(marker)
        assert session.state_hash() == after_create
        assert session.state()["tasks"]["task_4"]["status"] == "open"
        session.reset()
        assert session.state_hash() == initial
    assert session.closed
    session.close()  # twice is fine
    with pytest.raises(SessionClosed):
        session.call("get_user", {"user_id": "user_1"})


def test_hashes_match_the_in_process_runtime(sandbox: Sandbox, shop: Bundle) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("create_order", {"customer_id": "CUS-003", "items": [{"product_id": "PRD-001", "quantity": 2}]}),
        ("apply_coupon", {"order_id": "O-0046", "code": "welcome5"}),
        ("record_payment", {"order_id": "O-0046", "amount": 10.0, "method": "card"}),
        ("open_ticket", {"customer_id": "CUS-003", "subject": "Tent arrived damaged", "body": "torn fly"}),
    ]
    with sandbox.open(shop) as session:
        remote = [r.model_dump() for r in session.call_many(calls)]
        remote_hash = session.state_hash()
    local = open_local(shop)
    assert [r.model_dump() for r in local.call_many(calls)] == remote
    assert local.state_hash() == remote_hash


def test_sessions_in_one_worker_never_share_state(tool: ToolFactory) -> None:
    bundle = Bundle.from_source(LEAKY, [tool("remember", {"text": {"type": "string"}}, ["text"])], {})
    with Sandbox(workers=1, idle_timeout_s=0) as box:
        first, second = box.open(bundle), box.open(bundle)
        first.call("remember", {"text": "secret"})
        seen = second.call("remember", {"text": "other"}).data
        assert seen == {"shared": ["other"], "class": ["other"], "mine": ["other"]}
        assert "secret" not in str(second.state())


def test_policy_and_load_errors_on_open(sandbox: Sandbox, tool: ToolFactory) -> None:
    with pytest.raises(PolicyError, match="line 1"):
        sandbox.open(Bundle.from_source("import os\nclass E:\n    pass\n", [tool("x")], {}))
    broken = "class E:\n    def __init__(self, c):\n        self.x = c['missing']\n"
    with pytest.raises(LoadError, match="KeyError"):
        sandbox.open(Bundle.from_source(broken, [tool("x")], {}))
    assert sandbox.sessions() == [] or all(s.startswith("s") for s in sandbox.sessions())


def test_max_sessions_is_enforced(mock: Bundle) -> None:
    with Sandbox(workers=1, max_sessions=2, idle_timeout_s=0) as box:
        box.open(mock)
        spare = box.open(mock)
        with pytest.raises(SandboxBusy, match="max_sessions"):
            box.open(mock)
        spare.close()
        box.open(mock)


def test_admission_control_refuses_instead_of_queueing(tool: ToolFactory) -> None:
    bundle = Bundle.from_source(SLOW, [tool("spin"), tool("ping")], {})
    with Sandbox(workers=1, call_timeout_s=1.0, cpu_seconds=5, max_pending=1, idle_timeout_s=0) as box:
        session = box.open(bundle)
        other = box.open(bundle)
        outcome: dict[str, Any] = {}
        worker = threading.Thread(target=lambda: outcome.setdefault("spin", session.call("spin")))
        worker.start()
        deadline = time.monotonic() + 10
        while box.stats()["pending"] < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        with pytest.raises(SandboxBusy, match="max_pending"):
            other.call("ping")
        worker.join()
        assert outcome["spin"].error.code == "timeout"
        assert other.call("ping").ok


def test_idle_sessions_are_reaped(mock: Bundle) -> None:
    with Sandbox(workers=1, idle_timeout_s=0.2) as box:
        session = box.open(mock)
        deadline = time.monotonic() + 5
        while not session.closed and time.monotonic() < deadline:
            time.sleep(0.05)
        assert session.closed
        with pytest.raises(SessionClosed, match="idle"):
            session.call("get_user", {"user_id": "user_1"})


def test_closed_sandbox_refuses_work(mock: Bundle) -> None:
    box = Sandbox(workers=1, idle_timeout_s=0)
    session = box.open(mock)
    pids = box.worker_pids()
    box.close()
    box.close()
    with pytest.raises(SessionClosed):
        session.state()
    with pytest.raises(SandboxError, match="closed"):
        box.open(mock)
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            import os

            os.kill(pid, 0)
