"""A small MCP server's tool list (a clock with two tools, one answering with `$defs`) builds into an
environment: its tools kept as declared, the floor of tools met with plain ones, nested values that
read as what they are named."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.fixtures.cli import run_cli

TIME_RESULT = {
    "type": "object",
    "properties": {
        "timezone": {"type": "string"},
        "datetime": {"type": "string"},
        "day_of_week": {"type": "string"},
        "is_dst": {"type": "boolean"},
    },
    "required": ["timezone", "datetime", "day_of_week", "is_dst"],
}
CLOCK_TOOLS = {
    "tools": [
        {
            "name": "get_current_time",
            "description": "The current time in an IANA timezone.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "timezone": {"type": "string", "description": "IANA name, e.g. 'Europe/Oslo'"}
                },
                "required": ["timezone"],
            },
            "outputSchema": TIME_RESULT,
            "annotations": {"readOnlyHint": True},
        },
        {
            "name": "convert_time",
            "description": "Convert a wall-clock time from one timezone to another.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "source_timezone": {"type": "string"},
                    "time": {"type": "string", "description": "24-hour HH:MM"},
                    "target_timezone": {"type": "string"},
                },
                "required": ["source_timezone", "time", "target_timezone"],
            },
            "outputSchema": {
                "type": "object",
                "$defs": {"TimeResult": TIME_RESULT},
                "properties": {
                    "source": {"$ref": "#/$defs/TimeResult"},
                    "target": {"$ref": "#/$defs/TimeResult"},
                    "time_difference": {"type": "string"},
                },
                "required": ["source", "target", "time_difference"],
            },
            "annotations": {"readOnlyHint": True},
        },
    ]
}


def test_a_two_tool_mcp_server_builds_with_its_tools_as_declared(home: Path, tmp_path: Path) -> None:
    seed = tmp_path / "clock.json"
    seed.write_text(json.dumps(CLOCK_TOOLS))
    out = tmp_path / "clock-env"
    built = run_cli(
        "env", "build", "--seed", str(seed), "--out", str(out), "--json", home=home, timeout_s=300
    )
    assert built.returncode == 0, built.stderr
    report = json.loads(built.stdout)
    assert report["verified"] and report["seed_tools_kept"] == report["seed_tools"] == 2
    tools = {t["function"]["name"]: t["function"] for t in json.loads((out / "tools.json").read_text())}
    assert len(tools) >= 8
    # the seed's tools keep their names and parameters exactly
    for declared in CLOCK_TOOLS["tools"]:
        assert tools[declared["name"]]["parameters"]["properties"] == declared["inputSchema"]["properties"]
    # no `$ref` in what the platform made points nowhere: nested records carry the referenced fields
    made = json.dumps([t for n, t in tools.items() if n not in ("get_current_time", "convert_time")])
    assert "$defs/TimeResult" not in made
    s0 = json.loads((out / "s0.json").read_text())
    nested = [
        r["source"] for table in s0.values() for r in table.values() if isinstance(r.get("source"), dict)
    ]
    assert nested, s0
    for value in nested:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", value["datetime"]), value
        assert value["day_of_week"] in (
            "Monday",
            "Tuesday",
            "Wednesday",
            "Thursday",
            "Friday",
            "Saturday",
            "Sunday",
        )
