"""Shared fixtures for the sandbox tests: the shipped bundles and one sandbox per module."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agentomnia.sandbox import Bundle, Sandbox, fixture_bundle


@pytest.fixture(scope="session")
def shop() -> Bundle:
    return fixture_bundle("shop")


@pytest.fixture(scope="session")
def mock() -> Bundle:
    return fixture_bundle("mock")


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """Two workers with short budgets, shared by the tests of one module."""
    with Sandbox(workers=2, call_timeout_s=1.0, cpu_seconds=5, grace_s=0.5, idle_timeout_s=0) as box:
        yield box


def make_tool(
    name: str, properties: dict[str, Any] | None = None, required: list[str] | None = None
) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"test tool {name}",
            "parameters": {
                "type": "object",
                "properties": properties or {},
                "required": required or [],
                "additionalProperties": False,
            },
        },
    }


ToolFactory = Callable[..., dict[str, Any]]


@pytest.fixture(scope="session")
def tool() -> ToolFactory:
    """Builds OpenAI function-format tool schemas for hand-written test environments."""
    return make_tool
