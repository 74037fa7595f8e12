"""Import and export: OmniaBench items both ways, and environments served over MCP.

    from agentomnia.interop import export_omniabench, import_omniabench, serve_environment

    export_omniabench("r0", "out/")                      # environments.json, route1..4.json, manifest.json
    import_omniabench(["route2.json"], taxonomy_id=20096)  # Task records + bundles under $AGENTOMNIA_HOME
    serve_environment(Path("envs/<env_id>"))              # an MCP server on stdio until the client leaves

`serve_environment` loads on first use: the MCP SDK takes seconds to import and only the server needs it.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from agentomnia.interop.omniabench import (
    ROUTES,
    ExportSkip,
    ExportSummary,
    RouteInfo,
    environment_item,
    export_omniabench,
    export_tasks,
    route_of,
    task_item,
)
from agentomnia.interop.omniabench_import import (
    ImportResult,
    ImportSummary,
    import_omniabench,
    read_domain_map,
    read_omniabench,
    verify_in_sandbox,
)

if TYPE_CHECKING:
    from agentomnia.interop.mcp_server import build_server, serve_environment

_LAZY = {"serve_environment": "mcp_server", "build_server": "mcp_server"}

__all__ = [
    "ROUTES",
    "ExportSkip",
    "ExportSummary",
    "ImportResult",
    "ImportSummary",
    "RouteInfo",
    "build_server",
    "environment_item",
    "export_omniabench",
    "export_tasks",
    "import_omniabench",
    "read_domain_map",
    "read_omniabench",
    "route_of",
    "serve_environment",
    "task_item",
    "verify_in_sandbox",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentomnia.interop' has no attribute {name!r}")
    value = getattr(import_module(f"agentomnia.interop.{module}"), name)
    globals()[name] = value
    return value
