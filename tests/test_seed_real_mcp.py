"""MCP ingestion against the tool lists of real MCP servers, captured live over stdio.

The servers are PyPI packages pinned in the `test` extra of pyproject.toml; each starts offline and
answers `tools/list` without credentials. A test skips when its package is not installed. Nothing
captured is stored in the repository: each list goes to a temporary file and is ingested from there.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from agentomnia.seeds.ingest import ingest
from agentomnia.seeds.mcp_live import tools_list_from_server

# (module run with `python -m`, extra arguments, tools it is known to offer at the pinned version)
SERVERS: list[tuple[str, list[str], set[str]]] = [
    ("mcp_server_time", [], {"get_current_time", "convert_time"}),
    ("mcp_server_git", [], {"git_status", "git_diff", "git_commit", "git_log"}),
    ("mcp_server_fetch", [], {"fetch"}),
]


def type_pairs(schema: Mapping[str, Any]) -> dict[str, tuple[frozenset[str], bool]]:
    """property -> (JSON types without null, whether null is allowed), from `type` and anyOf/oneOf."""
    out = {}
    for name, prop in (schema.get("properties") or {}).items():
        types: set[str] = set()
        for part in [prop, *(prop.get("anyOf") or []), *(prop.get("oneOf") or [])]:
            t = part.get("type") if isinstance(part, Mapping) else None
            types |= {t} if isinstance(t, str) else set(t or [])
        out[name] = (frozenset(types - {"null"}), "null" in types or prop.get("nullable") is True)
    return out


@pytest.mark.parametrize(("module", "args", "known"), SERVERS, ids=[s[0] for s in SERVERS])
def test_real_mcp_server_tool_list_ingests_faithfully(
    tmp_path: Path, module: str, args: list[str], known: set[str]
) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[test]')")
    captured = tools_list_from_server(
        sys.executable, ["-m", module, *args], timeout_s=60, env=dict(os.environ)
    )
    raw_tools = captured["tools"]
    assert known <= {t["name"] for t in raw_tools}
    path = tmp_path / f"{module}.json"
    path.write_text(json.dumps(captured), encoding="utf-8")

    result = ingest([path])
    assert result.rejected == [], [r.message for r in result.rejected]
    [seed] = result.accepted
    assert seed.kind == "mcp" and "repairs" not in seed.metadata
    assert [t.name for t in seed.tools] == [t["name"] for t in raw_tools]
    for i, (tool, raw) in enumerate(zip(seed.tools, raw_tools, strict=True)):
        schema = raw.get("inputSchema", {})
        assert tool.place == f"#/tools/{i}"
        assert list(tool.input_schema.get("properties") or {}) == list(schema.get("properties") or {})
        assert set(tool.input_schema.get("required") or []) == set(schema.get("required") or [])
        assert type_pairs(tool.input_schema) == type_pairs(schema)
        if "nullable" not in json.dumps(schema):
            assert tool.input_schema == schema  # kept exactly
