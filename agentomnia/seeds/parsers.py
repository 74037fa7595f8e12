"""Parsers for the four seed kinds. Each turns one input into Seeds or raises SeedInputError.

The error carries the place inside the input and what to fix; `ingest` turns it into a
rejected record, so one broken file never stops the others.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from agentomnia.seeds.models import Seed, SeedTool
from agentomnia.seeds.openapi import (
    TOOL_NAME,
    SpecRejected,
    operation_tools,
    pointer,
    sanitize_name,
    translate_nullable,
)

MAX_BYTES = 10 * 1024 * 1024


class SeedInputError(ValueError):
    def __init__(self, reason: str, *, place: str = "", fix: str = "") -> None:
        super().__init__(reason)
        self.reason, self.place, self.fix = reason, place, fix


# -- reading -------------------------------------------------------------------------------


def read_text(path: Path, max_bytes: int = MAX_BYTES) -> str:
    size = path.stat().st_size
    if size > max_bytes:
        raise SeedInputError(
            f"file is {size / 1e6:.1f} MB; seeds are limited to {max_bytes / 1e6:.0f} MB",
            fix="split it into smaller files or raise the limit with --max-bytes",
        )
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SeedInputError(
            f"bytes are not UTF-8 ({exc.reason}, byte 0x{raw[exc.start]:02x})",
            place=f"line {line}, byte offset {exc.start}",
            fix="re-encode the file as UTF-8",
        ) from None


_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: ten times faster


class _SeedLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """Safe YAML as JSON sees it: a timestamp stays a string (JSON has no dates)."""

    yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
    }


def load_structured(text: str, path: Path) -> Any:
    """JSON for .json files (exact error positions), YAML otherwise."""
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise SeedInputError(
                f"invalid JSON: {exc.msg}",
                place=f"line {exc.lineno}, column {exc.colno}",
                fix="fix the JSON syntax",
            ) from None
    try:
        return yaml.load(text, Loader=_SeedLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        place = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SeedInputError(f"invalid YAML: {problem}", place=place, fix="fix the YAML syntax") from None


def _title(stem: str) -> str:
    return re.sub(r"[-_]+", " ", stem).strip().title()


# -- MCP -----------------------------------------------------------------------------------


def parse_mcp(doc: Any, *, source: str, name: str) -> Seed:
    """An MCP `tools/list` result (`{"tools": [...]}`) or a bare list of tools.

    Lenient: a tool entry that cannot be used is skipped, a name that is not 1-64 of
    `[A-Za-z0-9_.-]` is sanitised and a repeated name is renamed, each with a repair in
    `metadata["repairs"]`. Input schemas are kept exactly, except that OpenAPI-style
    `nullable: true` is translated into JSON Schema. Only a list with no usable tool is rejected.
    """
    tools_raw = doc.get("tools") if isinstance(doc, Mapping) else doc
    base = "#/tools" if isinstance(doc, Mapping) else "#"
    if not isinstance(tools_raw, list):
        raise SeedInputError(
            "not an MCP tool list",
            place=base,
            fix='give the JSON of a tools/list result, {"tools": [{"name", "description", "inputSchema"}]}, or a list of tools',
        )
    if not tools_raw:
        raise SeedInputError("the tool list is empty", place=base, fix="list at least one tool")
    tools: list[SeedTool] = []
    repairs: list[dict[str, str]] = []
    taken: dict[str, str] = {}
    for i, t in enumerate(tools_raw):
        place = pointer(base, i)
        problem = _mcp_tool_problem(t)
        if problem:
            repairs.append({"place": place, "problem": problem, "fix": "skipped the tool"})
            continue
        tname = t["name"]
        if not TOOL_NAME.match(tname):
            clean = sanitize_name(tname)
            repairs.append({"place": pointer(place, "name"),
                            "problem": f"tool name {tname!r} is not 1-64 letters, digits, '_', '.', '-'",
                            "fix": f"named the tool {clean!r}"})  # fmt: skip
            tname = clean
        if tname in taken:
            new = next(
                f"{tname[:60]}_{n}" for n in range(2, len(taken) + 3) if f"{tname[:60]}_{n}" not in taken
            )
            repairs.append({"place": pointer(place, "name"),
                            "problem": f"tool name {tname!r} is already used by the tool at {taken[tname]}",
                            "fix": f"named this one {new!r}"})  # fmt: skip
            tname = new
        taken[tname] = place
        schema = t.get("inputSchema")
        if schema is None:
            schema = {"type": "object", "properties": {}}
        output = t.get("outputSchema")
        notes = t.get("annotations") or {}
        tools.append(
            SeedTool(
                name=tname,
                description=str(t.get("description") or ""),
                input_schema=translate_nullable(schema),
                output_schema=translate_nullable(output) if output else None,
                read_only=_hint(notes, "readOnlyHint"),
                destructive=_hint(notes, "destructiveHint"),
                place=place,
            )
        )
    if not tools:
        raise SeedInputError(
            "no usable tool in the list: " + "; ".join(f"{r['place']}: {r['problem']}" for r in repairs[:3]),
            place=base,
            fix="fix or remove the tools named here: each needs a name and an object inputSchema",
        )
    server = doc.get("server") if isinstance(doc, Mapping) else None
    title = (server.get("name") if isinstance(server, Mapping) else None) or _title(name)
    description = (doc.get("description") if isinstance(doc, Mapping) else None) or (
        f"MCP server with {len(tools)} tools: " + ", ".join(t.name for t in tools[:12])
    )
    return Seed(
        kind="mcp",
        source=source,
        name=name,
        title=str(title),
        description=str(description),
        tools=tuple(tools),
        metadata={"repairs": repairs} if repairs else {},
    )


def _hint(notes: Any, key: str) -> bool | None:
    """An MCP annotation hint when it is a boolean (anything else says nothing)."""
    value = notes.get(key) if isinstance(notes, Mapping) else None
    return value if isinstance(value, bool) else None


def _mcp_tool_problem(t: Any) -> str:
    """Why a tool entry cannot be used at all, or ''."""
    if not isinstance(t, Mapping):
        return "a tool must be an object with name, description and inputSchema"
    tname = t.get("name")
    if not isinstance(tname, str) or not tname.strip():
        return f"tool name {tname!r} is missing or not a string"
    if t.get("inputSchema") is not None and not _is_object_schema(t["inputSchema"]):
        return f"inputSchema of tool `{tname}` is not an object schema"
    output = t.get("outputSchema")
    if output is not None and not isinstance(output, Mapping):
        return f"outputSchema of tool `{tname}` is not a JSON schema object"
    return ""


def _is_object_schema(schema: Any) -> bool:
    if not isinstance(schema, Mapping):
        return False
    if schema.get("type", "object") != "object":
        return False
    return isinstance(schema.get("properties", {}), Mapping)


# -- OpenAPI / Swagger ---------------------------------------------------------------------


def parse_openapi(doc: Any, *, text: str = "", source: str, name: str) -> Seed:
    """OpenAPI 3.0/3.1 or Swagger 2.0: one tool per path operation (see `agentomnia.seeds.openapi`).

    Defects that leave an operation usable are repaired and listed in `metadata["repairs"]`;
    only a document with no usable operation (or an external `$ref`) is rejected. `text` is
    accepted for callers that pass the source text; the parsed `doc` is what is read.
    """
    if not isinstance(doc, Mapping):
        raise SeedInputError(
            "an OpenAPI document must be a mapping",
            place="#",
            fix="start with `openapi: 3.x` or `swagger: '2.0'`",
        )
    version = str(doc.get("openapi") or doc.get("swagger") or "")
    if not (version.startswith("3.0") or version.startswith("3.1") or version == "2.0"):
        raise SeedInputError(
            f"unsupported OpenAPI version {version!r}",
            place="#/openapi" if "openapi" in doc else "#/swagger",
            fix="use OpenAPI 3.0, 3.1 or Swagger 2.0",
        )
    try:
        tools, repairs, seen = operation_tools(doc, version=version)
    except SpecRejected as exc:
        raise SeedInputError(exc.reason, place=exc.place, fix=exc.fix) from None
    info = doc.get("info")
    if not tools:
        if seen:
            reason = f"none of the {seen} operations can be used: " + "; ".join(
                f"{r['place']}: {r['problem']}" for r in repairs[:3]
            )
            raise SeedInputError(reason, place="#/paths", fix="fix the operations named here")
        reason = "the document defines no operations"
        if not isinstance(info, Mapping):
            reason = "not a valid OpenAPI document: it has no `info` object and defines no operations"
        raise SeedInputError(reason, place="#/paths", fix="add at least one path operation")
    if not isinstance(info, Mapping):
        repairs.append({"place": "#/info", "problem": "the document has no `info` object",
                        "fix": "titled the seed after its file name"})  # fmt: skip
        info = {}
    metadata: dict[str, Any] = {"openapi_version": version, "api_version": str(info.get("version", ""))}
    if repairs:
        metadata["repairs"] = repairs
    return Seed(
        kind="api",
        source=source,
        name=name,
        title=str(info.get("title") or _title(name)),
        description=str(info.get("description") or ""),
        tools=tuple(tools),
        metadata=metadata,
    )


# -- skills --------------------------------------------------------------------------------


def parse_skill(text: str, *, source: str, name: str) -> Seed:
    """A SKILL.md: YAML front matter with `name` and `description`, then a markdown body."""
    if not text.strip():
        raise SeedInputError("SKILL.md is empty", fix="write front matter (name, description) and a body")
    match = re.match(r"^\ufeff?---\s*\n(.*?)\n---\s*(?:\n|$)(.*)$", text, re.DOTALL)
    if match is None:
        raise SeedInputError(
            "no YAML front matter",
            place="line 1",
            fix="start the file with '---', name: ..., description: ..., '---'",
        )
    try:
        front = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise SeedInputError(f"front matter is not valid YAML: {exc}", place="front matter") from None
    if not isinstance(front, Mapping):
        raise SeedInputError(
            "front matter must be a mapping", place="front matter", fix="write name: and description:"
        )
    missing = [
        k for k in ("name", "description") if not isinstance(front.get(k), str) or not front[k].strip()
    ]
    if missing:
        raise SeedInputError(
            f"front matter lacks {' and '.join(missing)}",
            place="front matter",
            fix="add them as non-empty strings",
        )
    body = match.group(2).strip()
    if not body:
        raise SeedInputError(
            "the skill has no body", place="after the front matter", fix="describe the procedure"
        )
    extra = {k: v for k, v in front.items() if k not in ("name", "description")}
    return Seed(
        kind="skill",
        source=source,
        name=str(front["name"]).strip(),
        title=_title(str(front["name"])),
        description=str(front["description"]).strip(),
        text=body,
        metadata=json.loads(json.dumps(extra, default=str)),
    )


# -- queries -------------------------------------------------------------------------------


class QueryColumns(dict[str, str]):
    """Which input column holds what: `query` (required), `id`, and any others to keep."""

    @classmethod
    def default(cls) -> QueryColumns:
        return cls(query="query", id="id")


def query_rows_from_text(text: str, path: Path) -> Iterator[tuple[str, dict[str, Any] | SeedInputError]]:
    """(place, row) for JSONL or CSV; a row that cannot be read is given as its error."""
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        if not reader.fieldnames:
            raise SeedInputError(
                "the CSV has no header row", place="line 1", fix="add a header with a query column"
            )
        for i, row in enumerate(reader, start=2):
            yield f"line {i}", dict(row)
        return
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            yield (
                f"line {i}",
                SeedInputError(f"invalid JSON: {exc.msg}", place=f"line {i}", fix="one JSON object per line"),
            )
            continue
        if not isinstance(row, dict):
            yield f"line {i}", SeedInputError("a JSONL row must be an object", place=f"line {i}")
            continue
        yield f"line {i}", row


def query_seed(
    row: Mapping[str, Any], *, columns: Mapping[str, str], source: str, place: str, default_name: str
) -> Seed:
    qcol = columns.get("query", "query")
    text = row.get(qcol)
    if not isinstance(text, str) or not text.strip():
        raise SeedInputError(
            f"column {qcol!r} is missing or empty",
            place=place,
            fix=f"fill it, or map another column with --query-column (columns here: {', '.join(map(str, row))})",
        )
    text = " ".join(text.split())
    ident = row.get(columns.get("id", "id")) or default_name
    used = {qcol, columns.get("id", "id")}
    metadata = {str(k): v for k, v in row.items() if k not in used and v not in (None, "")}
    return Seed(
        kind="query",
        source=f"{source}#{place.replace(' ', '')}",
        name=str(ident),
        title=text[:80],
        description=text,
        text=text,
        metadata=json.loads(json.dumps(metadata, default=str)),
    )
