"""Serve one synthesized environment as an MCP server over stdio, its tools executed in the sandbox.

Agent frameworks speak the Model Context Protocol, so an environment bundle becomes usable from any
MCP client (an IDE agent, an evaluation harness) without our rollout loop: `tools/list` answers from
the bundle's `tools.json` (name, description, JSON-schema input; read-only tools are annotated as
such), and `tools/call` runs the method in a sandbox session that starts from the bundle's `s0`.
The session lives as long as the connection (one stdio connection per server process), so writes
persist across calls and a new connection starts from `s0` again. Results travel as the project's
ToolResult protocol, `{"ok", "data", "error"}`, as JSON text content (and as structured content),
with `isError` set when `ok` is false. The generated code runs only in the sandbox's contained
workers, never in this process.

    python -m agentomnia.interop.mcp_server ENV_DIR        # or: agentomnia export mcp ENV_DIR
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

import agentomnia
from agentomnia.records import ToolResult
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.errors import SandboxError
from agentomnia.sandbox.sandbox import Sandbox, SandboxConfig
from agentomnia.sandbox.session import Session


def mcp_tools(bundle: Bundle) -> list[types.Tool]:
    """The bundle's OpenAI-format tools as MCP tool descriptions."""
    out = []
    for tool in bundle.tools:
        function = tool["function"]
        name = str(function["name"])
        out.append(
            types.Tool(
                name=name,
                description=str(function.get("description", "")),
                input_schema=dict(function.get("parameters") or {"type": "object", "properties": {}}),
                annotations=types.ToolAnnotations(read_only_hint=name in bundle.read_tools),
            )
        )
    return out


def tool_result_content(result: ToolResult) -> types.CallToolResult:
    """A ToolResult as MCP content: its JSON as text, the same object as structured content."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=result.model_dump_json())],
        structured_content=result.model_dump(mode="json"),
        is_error=not result.ok,
    )


def _describe(bundle: Bundle) -> str:
    spec = bundle.spec or {}
    return str(spec.get("description") or spec.get("name") or bundle.class_name)


def build_server(bundle: Bundle, session: Session) -> Server[Any]:
    """An MCP server whose tools are `bundle`'s, each call executed in `session`."""
    tools = mcp_tools(bundle)
    known = {t.name for t in tools}
    lock = anyio.Lock()  # a sandbox session serves one call at a time

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name not in known:
            return tool_result_content(
                ToolResult.failure("unknown_tool", f"tool `{params.name}` does not exist; call tools/list")
            )
        async with lock:
            try:
                result = await anyio.to_thread.run_sync(
                    session.call, params.name, dict(params.arguments or {})
                )
            except SandboxError as exc:
                # The session itself is gone (worker lost and not restorable): say so instead of crashing.
                result = ToolResult.failure(exc.code, f"{exc.message}; reconnect to start again from s0")
        return tool_result_content(result)

    return Server(
        f"agentomnia-{bundle.class_name}",
        version=agentomnia.__version__,
        instructions=f"A stateful environment: {_describe(bundle)}. Tools return {{ok, data, error}} as JSON.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def serve_environment(env_dir: str | Path, *, sandbox_config: SandboxConfig | None = None) -> None:
    """Serve the bundle in `env_dir` over stdio until the client disconnects.

    The environment is built in the sandbox before serving starts, so a bundle that does not load
    fails here with the reason instead of on the first call."""
    bundle = Bundle.load(env_dir)
    sandbox = Sandbox.from_config(sandbox_config or SandboxConfig(workers=1, idle_timeout_s=0))
    try:
        session = sandbox.open(bundle)
        server = build_server(bundle, session)

        async def run() -> None:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

        anyio.run(run)
    finally:
        sandbox.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agentomnia.interop.mcp_server",
        description="Serve one environment bundle as an MCP server over stdio (tools run in the sandbox).",
    )
    parser.add_argument("env_dir", type=Path, help="bundle folder (env.py, tools.json, s0.json, ...)")
    parser.add_argument("--call-timeout", type=float, default=5.0, help="seconds one tool call may run")
    args = parser.parse_args(argv)
    config = SandboxConfig(
        workers=1,
        idle_timeout_s=0,
        call_timeout_s=args.call_timeout,
        cpu_seconds=max(10, int(args.call_timeout) + 5),
    )
    try:
        serve_environment(args.env_dir, sandbox_config=config)
    except (FileNotFoundError, ValueError, SandboxError) as exc:
        print(f"cannot serve {args.env_dir}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
