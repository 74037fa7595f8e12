"""`agentomnia seeds from-mcp` against a real MCP server launched over stdio."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

SERVER = textwrap.dedent(
    '''
    from typing import Literal
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("parcel-desk")

    @server.tool()
    def get_parcel(parcel_id: str) -> dict:
        """Look up one parcel by its id."""
        return {"parcel_id": parcel_id, "status": "delivered"}

    @server.tool()
    def open_claim(parcel_id: str, amount: float, reason: Literal["damaged", "lost", "late"]) -> dict:
        """Open a damage or loss claim for a parcel."""
        return {"claim_id": "C-1", "parcel_id": parcel_id}

    @server.tool()
    def list_claims(status: str = "open", limit: int = 20) -> list[dict]:
        """List claims by status."""
        return []

    server.run("stdio")
    '''
)


def test_from_mcp_saves_a_parsable_seed(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    out = tmp_path / "parcel.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentomnia.cli",
            "seeds",
            "from-mcp",
            "--json",
            "--out",
            str(out),
            "--",
            sys.executable,
            str(script),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["accepted"][0]["kind"] == "mcp" and report["accepted"][0]["tools"] == 3
    saved = json.loads(out.read_text())
    tools = {t["name"]: t for t in saved["tools"]}
    assert set(tools) == {"get_parcel", "open_claim", "list_claims"}
    claim = tools["open_claim"]["inputSchema"]
    assert claim["properties"]["reason"]["enum"] == ["damaged", "lost", "late"]
    assert set(claim["required"]) == {"parcel_id", "amount", "reason"}


def test_from_mcp_reports_a_server_that_is_not_there(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "agentomnia.cli", "seeds", "from-mcp", "--timeout", "20", "--out", str(tmp_path / "x.json"),
         "--", "/nonexistent/server"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "nonexistent" in proc.stderr and not (tmp_path / "x.json").exists()
