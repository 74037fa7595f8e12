"""An environment served over MCP stdio, driven by the SDK's own client from another process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from agentomnia.sandbox.fixtures import FIXTURES_DIR

ROOT = Path(__file__).resolve().parents[2]
MOCK_DIR = FIXTURES_DIR / "mock"


def _server(env_dir: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "agentomnia.interop.mcp_server", str(env_dir)], cwd=str(ROOT)
    )


async def _connection(env_dir: Path, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    async with stdio_client(_server(env_dir)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        results = []
        for name, args in calls:
            reply = await session.call_tool(name, args)
            text = reply.content[0].text if reply.content and reply.content[0].type == "text" else ""
            results.append({"is_error": reply.is_error, "body": json.loads(text)})
        return {"tools": listed.tools, "results": results}


@pytest.mark.slow
def test_tools_are_listed_and_calls_change_state_within_a_connection() -> None:
    declared = json.loads((MOCK_DIR / "tools.json").read_text())
    first = anyio.run(
        _connection,
        MOCK_DIR,
        [
            ("create_task", {"user_id": "user_2", "title": "Write the release notes"}),
            ("list_tasks", {"user_id": "user_2"}),
            ("update_task_status", {"task_id": "task_3", "status": "open"}),
            ("create_task", {"user_id": "user_2"}),
        ],
    )
    tools = {t.name: t for t in first["tools"]}
    assert list(tools) == [t["function"]["name"] for t in declared]
    for spec in declared:
        tool = tools[spec["function"]["name"]]
        assert tool.description == spec["function"]["description"]
        assert tool.input_schema == spec["function"]["parameters"]
    created, listing, refused, invalid = first["results"]
    assert created == {
        "is_error": False,
        "body": {"ok": True, "error": None, "data": created["body"]["data"]},
    }
    new_id = created["body"]["data"]["task_id"]
    assert new_id == "task_4"
    titles = {t["task_id"]: t["title"] for t in listing["body"]["data"]}
    assert titles[new_id] == "Write the release notes"  # the read sees the write: one session per connection
    assert refused["is_error"] and refused["body"]["error"]["code"] == "conflict"
    assert invalid["is_error"] and invalid["body"]["error"]["code"] == "invalid_arguments"
    # A new connection starts again from s0.
    second = anyio.run(_connection, MOCK_DIR, [("list_tasks", {"user_id": "user_2"})])
    assert [t["task_id"] for t in second["results"][0]["body"]["data"]] == ["task_3"]


@pytest.mark.slow
def test_a_bundle_that_cannot_load_fails_before_serving(tmp_path: Path) -> None:
    (tmp_path / "env.py").write_text("import os\n\nclass Broken:\n    def __init__(self, c):\n        pass\n")
    (tmp_path / "tools.json").write_text("[]")
    done = subprocess.run(
        [sys.executable, "-m", "agentomnia.interop.mcp_server", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and "cannot serve" in done.stderr and "os" in done.stderr


def test_export_mcp_keeps_stdout_for_the_protocol_alone() -> None:
    """`agentomnia export mcp` ends its session without a byte on stdout that is no MCP message."""
    init = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "agentomnia.cli", "export", "mcp", str(MOCK_DIR)],
        input=json.dumps(init) + "\n", capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines, "the server answered nothing"
    assert all(json.loads(line).get("jsonrpc") == "2.0" for line in lines), done.stdout[-500:]
