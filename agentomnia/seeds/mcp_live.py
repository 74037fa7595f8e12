"""Read the tool list of a real MCP server over stdio and keep it as a seed.

`agentomnia seeds from-mcp -- COMMAND [ARGS...]` launches the server with the MCP Python SDK,
asks `tools/list` (following pagination) and writes the result as JSON, the same shape the
MCP parser reads from files.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from agentomnia.seeds.parsers import SeedInputError


async def _list_tools(command: str, args: Sequence[str], env: dict[str, str] | None) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=command, args=list(args), env=env)
    tools: list[dict[str, Any]] = []
    async with Client(params) as client:
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor) if cursor else await client.list_tools()
            tools += [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools]
            cursor = getattr(page, "next_cursor", None) or getattr(page, "nextCursor", None)
            if not cursor:
                break
        info = getattr(client, "server_info", None)
    server = (
        {"name": getattr(info, "name", command), "version": getattr(info, "version", "")}
        if info
        else {"name": command}
    )
    return {"server": server, "tools": tools}


def tools_list_from_server(
    command: str, args: Sequence[str] = (), *, timeout_s: float = 60.0, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """`{"server": {...}, "tools": [...]}` from a live server, or SeedInputError naming what failed."""
    try:
        return asyncio.run(asyncio.wait_for(_list_tools(command, args, env), timeout_s))
    except TimeoutError:
        raise SeedInputError(
            f"MCP server `{command}` did not answer tools/list within {timeout_s:.0f}s",
            fix="check the command starts an MCP server on stdio",
        ) from None
    except (OSError, RuntimeError, ValueError) as exc:
        raise SeedInputError(
            f"MCP server `{command}` failed: {exc}", fix="run the command by hand to see its error"
        ) from None
