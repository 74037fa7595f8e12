"""check_env: the shipped fixtures pass; broken environments fail the right check with a cause."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentomnia.sandbox import Bundle, Sandbox, check_env
from agentomnia.sandbox.conformance import CHECKS

ToolFactory = Callable[..., dict[str, Any]]


def test_shipped_fixtures_conform(sandbox: Sandbox, mock: Bundle, shop: Bundle) -> None:
    for bundle in (mock, shop):
        report = check_env(sandbox, bundle, sequences=6, steps=8)
        assert report.passed, report.summary()
        assert [c.name for c in report.checks] == list(CHECKS)
        assert report.calls > 0 and report.id


def test_policy_failure_stops_early(sandbox: Sandbox, tool: ToolFactory) -> None:
    report = check_env(sandbox, Bundle.from_source("import os\nclass E:\n    pass\n", [tool("x")], {}))
    assert not report.passed
    assert report.check("policy").passed is False and "line 1" in report.check("policy").message
    assert report.check("load").message.startswith("not run")


SLOPPY = """
class Sloppy:
    def __init__(self, init_config):
        self.items = dict(init_config.get("items", {}))
        self.views = 0
        self.hook = lambda: None

    def peek(self, name: str):
        self.views += 1
        return {"ok": True, "data": self.items.get(name), "error": None}

    def token(self):
        return {"ok": True, "data": hash(object()) % 1000003, "error": None}

    def put(self, name: str, size: int):
        self.items[name] = size
        return {"ok": True, "data": None, "error": None}

    def helper(self):
        return {"ok": True, "data": None, "error": None}
"""


def test_broken_environment_fails_with_named_causes(sandbox: Sandbox, tool: ToolFactory) -> None:
    tools = [
        tool("peek", {"name": {"type": "string"}}, ["name"]),
        tool("token"),
        tool("put", {"name": {"type": "string"}, "colour": {"type": "string"}}, ["name"]),
        tool("missing_method"),
    ]
    bundle = Bundle.from_source(SLOPPY, tools, {"items": {"a": 1}}, read_tools=["peek"])
    report = check_env(sandbox, bundle, sequences=6, steps=8)
    assert not report.passed
    schemas = report.check("schemas")
    assert not schemas.passed
    joined = " ".join(schemas.details)
    assert "missing_method" in joined and "`colour` is not a parameter" in joined and "`size`" in joined
    assert any("helper" in d for d in schemas.details)
    determinism = report.check("determinism")
    assert (
        not determinism.passed
        and "`token`" in determinism.message
        and "object identity" in determinism.message
    )
    assert not report.check("read_only").passed and "peek" in report.check("read_only").message
    assert not report.check("state").passed and "function" in report.check("state").message
    assert report.check("close").passed


def test_the_protocol_is_the_core_and_capabilities_are_optional(sandbox: Sandbox, mock: Bundle) -> None:
    from agentomnia.records import ToolResult
    from agentomnia.sandbox import Environment, SupportsBatch, SupportsSnapshot, open_local
    from agentomnia.sandbox.environment import call_all, run_batch
    from agentomnia.sandbox.session import Batch

    class Core:
        """Only what every environment must do: no batching, no snapshots."""

        def __init__(self) -> None:
            self.count = 0

        def tools(self) -> list[dict[str, Any]]:
            return []

        def call(self, tool: str, args: Any = None) -> ToolResult:
            self.count += 1
            return ToolResult(ok=True, data=self.count, error=None)

        def state(self) -> dict[str, Any]:
            return {"count": self.count}

        def state_hash(self, *, fresh: bool = False) -> str:
            return str(self.count)

        def reset(self, init_config: Any = None) -> None:
            self.count = 0

        def close(self) -> None:
            """Nothing to release: the counter lives in this object."""

    core = Core()
    assert isinstance(core, Environment)
    assert not isinstance(core, SupportsBatch) and not isinstance(core, SupportsSnapshot)
    assert [r.data for r in call_all(core, [("x", {}), ("y", {})])] == [1, 2]
    batch = Batch()
    reset_at, calls_at, hash_at = batch.reset(), batch.calls([("x", {})]), batch.hash()
    answers = run_batch(core, batch)
    assert (
        answers[reset_at] is True and [r.data for r in answers[calls_at]] == [1] and answers[hash_at] == "1"
    )
    with sandbox.open(mock) as session:
        assert isinstance(session, SupportsBatch) and isinstance(session, SupportsSnapshot)
    local = open_local(mock)
    assert isinstance(local, SupportsBatch) and isinstance(local, SupportsSnapshot)
    local.close()
