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

MAX_BYTES = 10 * 1024 * 1024
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
_HTTP_METHODS = ("get", "post", "put", "patch", "delete", "head")


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
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        place = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SeedInputError(f"invalid YAML: {problem}", place=place, fix="fix the YAML syntax") from None


def _title(stem: str) -> str:
    return re.sub(r"[-_]+", " ", stem).strip().title()


# -- MCP -----------------------------------------------------------------------------------


def parse_mcp(doc: Any, *, source: str, name: str) -> Seed:
    """An MCP `tools/list` result (`{"tools": [...]}`) or a bare list of tools."""
    tools_raw = doc.get("tools") if isinstance(doc, Mapping) else doc
    if not isinstance(tools_raw, list):
        raise SeedInputError(
            "not an MCP tool list",
            fix='give the JSON of a tools/list result, {"tools": [{"name", "description", "inputSchema"}]}, or a list of tools',
        )
    if not tools_raw:
        raise SeedInputError("the tool list is empty", place="tools", fix="list at least one tool")
    tools: list[SeedTool] = []
    seen: set[str] = set()
    for i, t in enumerate(tools_raw):
        if not isinstance(t, Mapping):
            raise SeedInputError(
                "a tool must be an object", place=f"tools[{i}]", fix="give {name, description, inputSchema}"
            )
        tname = t.get("name")
        if not isinstance(tname, str) or not _TOOL_NAME.match(tname):
            raise SeedInputError(
                f"tool name {tname!r} is missing or not 1-64 letters, digits, '_', '.', '-'",
                place=f"tools[{i}]",
                fix="give every tool a valid name",
            )
        if tname in seen:
            raise SeedInputError(
                f"tool `{tname}` is listed twice", place=f"tools[{i}]", fix="rename or drop one"
            )
        seen.add(tname)
        schema = t.get("inputSchema", {"type": "object", "properties": {}})
        if not _is_object_schema(schema):
            raise SeedInputError(
                f"inputSchema of tool `{tname}` is not an object schema",
                place=f"tools[{i}].inputSchema",
                fix="fix the spec or drop the tool",
            )
        output = t.get("outputSchema")
        if output is not None and not isinstance(output, Mapping):
            raise SeedInputError(
                f"outputSchema of tool `{tname}` is not a JSON schema object",
                place=f"tools[{i}].outputSchema",
            )
        notes = t.get("annotations") or {}
        tools.append(
            SeedTool(
                name=tname,
                description=str(t.get("description") or ""),
                input_schema=dict(schema),
                output_schema=dict(output) if output else None,
                read_only=notes.get("readOnlyHint") if isinstance(notes, Mapping) else None,
                destructive=notes.get("destructiveHint") if isinstance(notes, Mapping) else None,
            )
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
    )


def _is_object_schema(schema: Any) -> bool:
    if not isinstance(schema, Mapping):
        return False
    if schema.get("type", "object") != "object":
        return False
    return isinstance(schema.get("properties", {}), Mapping)


# -- OpenAPI / Swagger ---------------------------------------------------------------------


def parse_openapi(doc: Any, *, text: str, source: str, name: str) -> Seed:
    """OpenAPI 3.0/3.1 or Swagger 2.0; `$ref`s are resolved by prance, validated by openapi-spec-validator."""
    if not isinstance(doc, Mapping):
        raise SeedInputError(
            "an OpenAPI document must be a mapping", fix="start with `openapi: 3.x` or `swagger: '2.0'`"
        )
    version = str(doc.get("openapi") or doc.get("swagger") or "")
    if not (version.startswith("3.0") or version.startswith("3.1") or version == "2.0"):
        raise SeedInputError(
            f"unsupported OpenAPI version {version!r}",
            place="openapi",
            fix="use OpenAPI 3.0, 3.1 or Swagger 2.0",
        )
    external = next(_external_refs(doc), None)
    if external is not None:
        ref, where = external
        raise SeedInputError(
            f"external $ref {ref!r} is not followed (seeds must be self-contained)",
            place=where,
            fix="inline the referenced schema under components/schemas (or definitions) and use a local #/ ref",
        )
    spec = _resolve(text)
    tools: list[SeedTool] = []
    for path, item in (spec.get("paths") or {}).items():
        if not isinstance(item, Mapping):
            continue
        shared = list(item.get("parameters") or [])
        for method in _HTTP_METHODS:
            op = item.get(method)
            if isinstance(op, Mapping):
                tools.append(_operation_tool(path, method, op, shared, swagger=version == "2.0"))
    if not tools:
        raise SeedInputError(
            "the document defines no operations", place="paths", fix="add at least one path operation"
        )
    names = [t.name for t in tools]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SeedInputError(
            f"operationIds repeat: {', '.join(dupes)}", place="paths", fix="make every operationId unique"
        )
    info = spec.get("info") or {}
    return Seed(
        kind="api",
        source=source,
        name=name,
        title=str(info.get("title") or _title(name)),
        description=str(info.get("description") or ""),
        tools=tuple(tools),
        metadata={"openapi_version": version, "api_version": str(info.get("version", ""))},
    )


def _external_refs(node: Any, where: str = "#") -> Iterator[tuple[str, str]]:
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            yield ref, where
        for k, v in node.items():
            yield from _external_refs(v, f"{where}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _external_refs(v, f"{where}/{i}")


def _resolve(text: str) -> dict[str, Any]:
    import prance
    from prance.util.url import ResolutionError

    def on_recursion(limit: int, ref: str, replacement: Any) -> dict[str, Any]:
        # A recursive schema (a category with sub-categories) is cut at one level, not rejected.
        return {"type": "object", "description": f"recursive reference to {ref}"}

    try:
        parser = prance.ResolvingParser(
            spec_string=text,
            backend="openapi-spec-validator",
            strict=False,
            lazy=False,
            recursion_limit_handler=on_recursion,
        )
    except ResolutionError as exc:
        ref = re.search(r'reference "([^"]+)"', str(exc))
        raise SeedInputError(
            f"dangling $ref: {str(exc).splitlines()[0]}",
            place=ref.group(1).split("#", 1)[-1] if ref else "",
            fix="define the referenced schema or correct the $ref path",
        ) from None
    except prance.ValidationError as exc:
        first = str(exc).strip().splitlines()
        raise SeedInputError(
            f"not a valid OpenAPI document: {first[0] if first else exc}",
            fix="validate it with an OpenAPI validator and fix the reported field",
        ) from None
    return dict(parser.specification or {})


def _operation_tool(
    path: str, method: str, op: Mapping[str, Any], shared: list[Any], *, swagger: bool
) -> SeedTool:
    name = op.get("operationId") or f"{method}_" + (re.sub(r"[^A-Za-z0-9]+", "_", path).strip("_") or "root")
    props: dict[str, Any] = {}
    required: list[str] = []
    params = {
        (p.get("in"), p.get("name")): p
        for p in [*shared, *(op.get("parameters") or [])]
        if isinstance(p, Mapping)
    }
    body_schema: Any = None
    for (where, pname), p in params.items():
        if where == "body":
            body_schema = p.get("schema")
            continue
        if where not in ("path", "query", "header", "formData") or not pname or where == "header":
            continue
        if swagger:
            schema = {
                k: v
                for k, v in p.items()
                if k not in ("in", "name", "required", "description", "collectionFormat")
            }
        else:
            schema = dict(p.get("schema") or {"type": "string"})
        if p.get("description") and "description" not in schema:
            schema["description"] = p["description"]
        props[pname] = schema
        if p.get("required") or where == "path":
            required.append(pname)
    if not swagger and isinstance(op.get("requestBody"), Mapping):
        content = op["requestBody"].get("content") or {}
        media: Any = content.get("application/json") or next(iter(content.values()), {})
        body_schema = media.get("schema") if isinstance(media, Mapping) else None
    if isinstance(body_schema, Mapping):
        if body_schema.get("type", "object") == "object" and isinstance(
            body_schema.get("properties"), Mapping
        ):
            for k, v in body_schema["properties"].items():
                props[k if k not in props else f"body_{k}"] = v
            required += [k for k in body_schema.get("required", []) if k in props]
        else:
            props["body"] = dict(body_schema)
            required.append("body")
    return SeedTool(
        name=str(name),
        description=str(op.get("summary") or op.get("description") or f"{method.upper()} {path}"),
        input_schema={"type": "object", "properties": props, "required": sorted(set(required))},
        output_schema=_success_schema(op, swagger=swagger),
        read_only=method in ("get", "head"),
        destructive=method == "delete",
        method=method.upper(),
        path=path,
    )


def _success_schema(op: Mapping[str, Any], *, swagger: bool) -> dict[str, Any] | None:
    for code, resp in sorted((op.get("responses") or {}).items(), key=lambda kv: str(kv[0])):
        if not str(code).startswith("2") or not isinstance(resp, Mapping):
            continue
        if swagger:
            schema = resp.get("schema")
        else:
            content = resp.get("content") or {}
            media: Any = content.get("application/json") or next(iter(content.values()), {})
            schema = media.get("schema") if isinstance(media, Mapping) else None
        if isinstance(schema, Mapping):
            return dict(schema)
    return None


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
