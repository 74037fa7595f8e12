"""The call contract, enforced by the runtime (run in-process here; the worker runs the same code)."""

from __future__ import annotations

import hashlib
import json
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from agentomnia.records import canonical_json
from agentomnia.sandbox import Bundle, LocalSession, open_local
from agentomnia.sandbox.bundle import config_key, config_seed
from agentomnia.sandbox.deadlines import Deadlines, Limits
from agentomnia.sandbox.envsession import CompiledEnv, EnvSession
from agentomnia.sandbox.policy import prepare
from agentomnia.sandbox.statehash import canonical_state

QUIRKY = """
import random, uuid, datetime


class Quirky:
    def __init__(self, init_config):
        self.items = dict(init_config.get("items", {}))
        self.log = []

    def add(self, name: str, qty: int = 1):
        self.items[name] = self.items.get(name, 0) + qty
        return {"ok": True, "data": self.items[name], "error": None}

    def add_then_fail(self, name: str):
        self.items[name] = 999
        self.log.append(name)
        raise KeyError(name)

    def add_then_refuse(self, name: str):
        self.items[name] = -1
        return {"ok": False, "data": None, "error": {"code": "refused", "message": "no"}}

    def wrong_shape(self):
        return [1, 2]

    def not_json(self):
        return {"ok": True, "data": {1, 2}, "error": None}

    def huge(self, size: int):
        return {"ok": True, "data": "x" * size, "error": None}

    def draw(self):
        self.log.append([random.random(), str(uuid.uuid4()), datetime.datetime.now().isoformat()])
        return {"ok": True, "data": self.log[-1], "error": None}

    def draw_then_fail(self):
        random.random()
        raise ValueError("after drawing")

    def recurse(self, n: int = 0):
        return self.recurse(n + 1)
"""


@pytest.fixture(scope="module")
def quirky(tool: Callable[..., dict[str, Any]]) -> Bundle:
    name = {"name": {"type": "string"}}
    tools = [
        tool("add", {"name": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}}, ["name"]),
        tool("add_then_fail", name, ["name"]),
        tool("add_then_refuse", name, ["name"]),
        tool("wrong_shape"),
        tool("not_json"),
        tool("huge", {"size": {"type": "integer"}}, ["size"]),
        tool("draw"),
        tool("draw_then_fail"),
        tool("recurse"),
        tool("ghost"),
    ]
    return Bundle.from_source(QUIRKY, tools, {"items": {"apple": 1}})


def test_unknown_tools_and_bad_arguments_are_named(quirky: Bundle) -> None:
    env = open_local(quirky)
    missing = env.call("nope")
    assert (
        missing.error is not None and missing.error.code == "unknown_tool" and "add" in missing.error.message
    )
    ghost = env.call("ghost")
    assert ghost.error is not None and "no such public method" in ghost.error.message
    cases: list[tuple[dict[str, Any], str]] = [
        ({}, "missing required argument `name`"),
        ({"name": 3}, "argument `name`"),
        ({"name": "a", "qty": 0}, "argument `qty`"),
        ({"name": "a", "colour": "red"}, "unexpected argument `colour`"),
    ]
    for args, needle in cases:
        result = env.call("add", args)
        assert result.error is not None and result.error.code == "invalid_arguments"
        assert needle in result.error.message


def test_an_open_schema_admits_arguments_the_method_does_not_take_and_drops_them(
    tool: Callable[..., dict[str, Any]],
) -> None:
    """A seed whose schema leaves `additionalProperties` open (JSON Schema's default) is served as its
    schema says: an extra argument is accepted and not passed on, as such a service ignores it."""
    open_add = tool("add", {"name": {"type": "string"}}, ["name"])
    del open_add["function"]["parameters"]["additionalProperties"]
    env = open_local(Bundle.from_source(QUIRKY, [open_add], {"items": {}}))
    result = env.call("add", {"name": "fig", "colour": "red"})
    assert result.ok, result.error
    assert env.state()["items"] == {"fig": 1}
    missing = env.call("add", {"colour": "red"})
    assert missing.error is not None and "missing required argument `name`" in missing.error.message


def test_failed_calls_leave_state_unchanged(quirky: Bundle) -> None:
    env = open_local(quirky)
    env.call("add", {"name": "pear"})
    before, state = env.state_hash(), env.state()
    raised = env.call("add_then_fail", {"name": "pear"})
    assert raised.error is not None and raised.error.code == "tool_raised"
    assert "KeyError" in raised.error.message and "(line " in raised.error.message
    refused = env.call("add_then_refuse", {"name": "apple"})
    assert refused.error is not None and refused.error.code == "refused"
    assert env.state_hash() == before
    assert env.state() == state


@pytest.mark.parametrize(
    ("tool_name", "args", "code"),
    [
        ("wrong_shape", {}, "bad_return"),
        ("not_json", {}, "bad_return"),
        ("huge", {"size": 2_000_000}, "result_too_large"),
        ("recurse", {}, "recursion_limit"),
    ],
)
def test_protocol_breaches_become_precise_failures(
    quirky: Bundle, tool_name: str, args: dict[str, Any], code: str
) -> None:
    result = open_local(quirky).call(tool_name, args)
    assert result.error is not None and result.error.code == code, result


def test_randomness_and_clock_are_per_session_and_rolled_back(quirky: Bundle) -> None:
    first, second = open_local(quirky), open_local(quirky)
    a = [first.call("draw").data, first.call("draw_then_fail").ok, first.call("draw").data]
    b = [second.call("draw").data, second.call("draw").data]
    assert a[1] is False
    assert [a[0], a[2]] == b
    assert a[0][2] == "2025-01-06T09:00:01" and a[2][2] == "2025-01-06T09:00:02"
    other = open_local(quirky, {"items": {"plum": 2}})
    assert other.call("draw").data[0] != a[0][0]  # another init_config seeds another stream


def test_state_hash_is_sha256_of_the_records_canonical_json(shop: Bundle) -> None:
    env = open_local(shop)
    env.call("create_order", {"customer_id": "CUS-003", "items": [{"product_id": "PRD-001", "quantity": 1}]})
    state = env.state()
    assert env.state_hash() == hashlib.sha256(canonical_json(state).encode("utf-8")).hexdigest()


def test_canonical_state_handles_sets_dates_and_odd_keys() -> None:
    import datetime
    import decimal

    text = canonical_state(
        {"tags": {"b", "a"}, "when": datetime.date(2025, 1, 2), "price": decimal.Decimal("1.50")}
    )
    assert json.loads(text) == {"price": "1.50", "tags": ["a", "b"], "when": "2025-01-02"}
    mixed = canonical_state({"table": {1: "x", "2": "y", (3, 4): "z"}})
    assert json.loads(mixed)["table"] == {"1": "x", "2": "y", "[3,4]": "z"}
    assert canonical_state({"a": 1}) == canonical_json({"a": 1})


def test_snapshots_restore_exactly(shop: Bundle) -> None:
    env = open_local(shop)
    marker = env.snapshot()
    before = env.state_hash()
    env.call("restock_product", {"product_id": "PRD-001", "warehouse_id": "WH-DEN", "quantity": 5})
    assert env.state_hash() != before
    env.restore(marker)
    assert env.state_hash() == before


def test_omniabench_compatibility_mode(tool: Callable[..., dict[str, Any]]) -> None:
    source = """
class Legacy:
    def __init__(self):
        self.balance = 0

    def deposit(self, amount: int):
        self.balance += amount
        return {"success": True, "balance": self.balance}
"""
    bundle = Bundle.from_source(
        source,
        [tool("deposit", {"amount": {"type": "integer"}}, ["amount"])],
        {"balance": 10, "owner": "ada"},
        init_mode="attributes",
        returns="any",
    )
    env = open_local(bundle)
    assert env.state() == {"balance": 10, "owner": "ada"}
    result = env.call("deposit", {"amount": 5})
    assert result.ok and result.data == {"success": True, "balance": 15}


def test_classes_defined_with_future_annotations_work(tool: Callable[..., dict[str, Any]]) -> None:
    source = """
from __future__ import annotations
from dataclasses import dataclass, asdict
from typing import ClassVar


@dataclass
class Item:
    name: str
    qty: int = 0
    unit: ClassVar[str] = "each"


class Store:
    def __init__(self, init_config: dict) -> None:
        self.items = {k: asdict(Item(k, v)) for k, v in init_config.items()}

    def names(self) -> dict:
        return {"ok": True, "data": sorted(self.items), "error": None}
"""
    env = open_local(Bundle.from_source(source, [tool("names")], {"b": 1, "a": 2}))
    assert env.call("names").data == ["a", "b"]
    assert env.state()["items"]["a"] == {"name": "a", "qty": 2}


def test_reset_rebuilds_from_scratch(mock: Bundle) -> None:
    env = open_local(mock)
    initial = env.state_hash()
    env.call("create_task", {"user_id": "user_1", "title": "x"})
    env.reset()
    assert env.state_hash() == initial
    env.reset({"users": {}, "tasks": {}})
    assert env.state() == {"users": {}, "tasks": {}, "next_task_number": 1}


def test_env_session_reports_methods_and_bad_schemas(tool: Callable[..., dict[str, Any]]) -> None:
    source = "class E:\n    def __init__(self, c):\n        self.c = c\n\n    def ping(self, x, y=1):\n        return {'ok': True}\n"
    bundle = Bundle.from_source(source, [tool("ping", {"x": {"type": "nonsense"}}, ["x"])], {})
    env = CompiledEnv.from_payload(bundle.worker_payload(prepare(bundle.source, "env").payload))
    session = EnvSession(env, pickle.dumps({}), config_seed(config_key({})), Limits(), Deadlines())
    description = session.describe()
    assert description["methods"]["ping"] == {"accepted": ["x", "y"], "required": ["x"], "var_keyword": False}
    assert "ping" in description["schema_errors"]


def test_local_session_is_an_environment(mock: Bundle) -> None:
    from agentomnia.sandbox import Environment

    env: LocalSession = open_local(mock)
    assert isinstance(env, Environment)
    env.close()
    with pytest.raises(Exception, match="closed"):
        env.call("get_user", {"user_id": "user_1"})
