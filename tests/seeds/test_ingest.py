"""Seed ingestion: every kind parses, and every broken input becomes a clear rejection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentomnia.seeds.ingest import ingest

GOOD_MCP = {
    "tools": [
        {
            "name": "get_parcel",
            "description": "Look up a parcel by id.",
            "inputSchema": {
                "type": "object",
                "properties": {"parcel_id": {"type": "string"}},
                "required": ["parcel_id"],
            },
            "annotations": {"readOnlyHint": True},
        },
        {
            "name": "open_claim",
            "description": "Open a damage claim.",
            "inputSchema": {
                "type": "object",
                "properties": {"parcel_id": {"type": "string"}, "amount": {"type": "number", "minimum": 0}},
            },
            "annotations": {"destructiveHint": False},
        },
    ]
}

GOOD_OPENAPI = """
openapi: 3.0.3
info: {title: Parcel Claims API, version: "1.0", description: Claims for damaged parcels.}
paths:
  /parcels/{parcel_id}:
    parameters:
      - {name: parcel_id, in: path, required: true, schema: {type: string}}
    get:
      operationId: getParcel
      responses:
        "200":
          description: the parcel
          content: {application/json: {schema: {$ref: "#/components/schemas/Parcel"}}}
  /claims:
    post:
      operationId: createClaim
      requestBody:
        content: {application/json: {schema: {$ref: "#/components/schemas/ClaimInput"}}}
      responses:
        "201": {description: created}
components:
  schemas:
    Parcel:
      type: object
      properties:
        id: {type: string}
        status: {type: string, enum: [in_transit, delivered, damaged]}
        owner: {$ref: "#/components/schemas/Customer"}
    Customer: {type: object, properties: {name: {type: string}}}
    ClaimInput:
      type: object
      required: [parcel_id, amount]
      properties: {parcel_id: {type: string}, amount: {type: number}}
"""

GOOD_SWAGGER = {
    "swagger": "2.0",
    "info": {"title": "Depot", "version": "1"},
    "paths": {
        "/slots": {
            "get": {
                "operationId": "listSlots",
                "parameters": [{"name": "day", "in": "query", "type": "string", "format": "date"}],
                "responses": {"200": {"description": "ok", "schema": {"$ref": "#/definitions/Slots"}}},
            },
            "post": {
                "operationId": "bookSlot",
                "parameters": [{"name": "body", "in": "body", "schema": {"$ref": "#/definitions/Booking"}}],
                "responses": {"201": {"description": "booked"}},
            },
        }
    },
    "definitions": {
        "Slots": {"type": "array", "items": {"type": "string"}},
        "Booking": {"type": "object", "required": ["slot"], "properties": {"slot": {"type": "string"}}},
    },
}

GOOD_SKILL = "---\nname: parcel-claims\ndescription: Open and settle damage claims.\n---\n# Steps\n1. Find the parcel.\n"


def _write(base: Path, name: str, content: str | bytes) -> Path:
    path = base / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def good_corpus(base: Path) -> None:
    _write(base, "mcp/parcels.json", json.dumps(GOOD_MCP))
    _write(base, "api/claims.yaml", GOOD_OPENAPI)
    _write(base, "api/depot.json", json.dumps(GOOD_SWAGGER))
    _write(base, "skills/parcel-claims/SKILL.md", GOOD_SKILL)
    _write(
        base,
        "queries/q.jsonl",
        '{"id": "q1", "query": "Refund my damaged parcel P-1"}\n{"id": "q2", "query": "Where is P-2?"}\n',
    )
    _write(base, "queries/q.csv", "id,query,channel\nq3,Cancel order 77,app\n")


# (file name, content, expected substring of the rejection reason or place)
BROKEN: list[tuple[str, str | bytes, str]] = [
    ("b01.json", '{"tools": [', "invalid JSON"),
    ("b02.yaml", "openapi: 3.0.0\ninfo: {title: x\n", "invalid YAML"),
    (
        "b04.json",
        json.dumps({"tools": [{"name": "find_cards", "inputSchema": {"type": "string"}}]}),
        "inputSchema of tool `find_cards` is not an object schema",
    ),
    (
        "b05.json",
        json.dumps({"tools": [{"name": "x", "inputSchema": {"type": "object", "properties": []}}]}),
        "not an object schema",
    ),
    ("b06/SKILL.md", "", "SKILL.md is empty"),
    ("b07/SKILL.md", "# no front matter\nbody", "no YAML front matter"),
    ("b08/SKILL.md", "---\nname: x\n---\nbody\n", "lacks description"),
    ("b09/SKILL.md", "---\nname: x\ndescription: y\n---\n\n", "no body"),
    ("b10.json", b'{"tools": [{"name": "caf\xe9"}]}', "not UTF-8"),
    ("b11.json", json.dumps({"tools": []}), "tool list is empty"),
    (
        "b14.yaml",
        "openapi: 4.0.0\ninfo: {title: x, version: '1'}\npaths: {}\n",
        "unsupported OpenAPI version",
    ),
    (
        "b15.yaml",
        GOOD_OPENAPI.replace('"#/components/schemas/Customer"', '"other.yaml#/Customer"'),
        "external $ref",
    ),
    ("b16.yaml", "openapi: 3.0.0\ninfo: {title: x, version: '1'}\npaths: {}\n", "no operations"),
    ("b17.yaml", "openapi: 3.0.0\npaths: {}\n", "not a valid OpenAPI document"),
    ("b18.json", json.dumps({"hello": "world"}), "neither an OpenAPI document"),
    ("b19.txt", "just text", "cannot tell what kind"),
    ("b20.jsonl", '{"query": ""}\n', "column 'query' is missing or empty"),
    ("b21.jsonl", "not json at all\n", "invalid JSON"),
    ("b22.csv", "", "no header row"),
    ("b23.json", json.dumps([1, 2]), "a tool must be an object"),
    (
        "b24.json",
        json.dumps({"tools": [{"name": "t", "inputSchema": {"type": "object"}, "outputSchema": "text"}]}),
        "outputSchema",
    ),
]


def test_good_corpus_parses_every_kind(tmp_path: Path) -> None:
    good_corpus(tmp_path)
    result = ingest([tmp_path], relative_to=tmp_path)
    assert result.rejected == []
    by_kind = {k: [s for s in result.accepted if s.kind == k] for k in ("mcp", "api", "skill", "query")}
    assert {len(v) for v in by_kind.values()} >= {1}
    assert len(by_kind["query"]) == 3 and len(by_kind["api"]) == 2
    claims = next(s for s in by_kind["api"] if s.name == "claims")
    tools = {t.name: t for t in claims.tools}
    assert tools["getParcel"].input_schema["required"] == ["parcel_id"]
    assert tools["getParcel"].read_only is True
    # nested $ref chains are resolved
    assert tools["getParcel"].output_schema["properties"]["owner"]["properties"]["name"]["type"] == "string"  # type: ignore[index]
    assert set(tools["createClaim"].input_schema["properties"]) == {"parcel_id", "amount"}
    depot = {t.name: t for t in next(s for s in by_kind["api"] if s.name == "depot").tools}
    assert depot["bookSlot"].input_schema["properties"]["slot"] == {"type": "string"}
    assert depot["listSlots"].input_schema["properties"]["day"]["format"] == "date"
    csv_seed = next(s for s in by_kind["query"] if s.name == "q3")
    assert csv_seed.metadata == {"channel": "app"}


def test_ingesting_twice_gives_the_same_ids(tmp_path: Path) -> None:
    good_corpus(tmp_path)
    first = {s.id for s in ingest([tmp_path]).accepted}
    assert first == {s.id for s in ingest([tmp_path]).accepted}
    # the id follows content, not location
    copy = tmp_path / "copy"
    _write(copy, "parcels.json", json.dumps(GOOD_MCP))
    assert {s.id for s in ingest([copy]).accepted} <= first


# Common real-world defects: repaired with a record of where and what, never rejected whole.
REPAIRED: list[tuple[str, str, str]] = [
    (
        "r03.yaml",
        GOOD_OPENAPI.replace('"#/components/schemas/Customer"', '"#/components/schemas/Nope"'),
        "#/components/schemas/Parcel/properties/owner",
    ),
    (
        "r12.json",
        json.dumps({"tools": [{"name": "has space", "inputSchema": {"type": "object"}}]}),
        "#/tools/0",
    ),
    ("r13.json", json.dumps({"tools": [GOOD_MCP["tools"][0], GOOD_MCP["tools"][0]]}), "#/tools/1"),
]


@pytest.mark.parametrize(("name", "content", "place"), REPAIRED, ids=[r[0] for r in REPAIRED])
def test_common_defects_are_repaired_with_a_record(
    tmp_path: Path, name: str, content: str, place: str
) -> None:
    _write(tmp_path, name, content)
    result = ingest([tmp_path], relative_to=tmp_path)
    assert result.rejected == []
    (seed,) = result.accepted
    repairs = seed.metadata["repairs"]
    assert repairs and all(r["problem"] and r["fix"] for r in repairs)
    assert any(r["place"].startswith(place) or place in r["place"] for r in repairs), repairs


@pytest.mark.parametrize(("name", "content", "expected"), BROKEN, ids=[b[0] for b in BROKEN])
def test_each_broken_input_is_rejected_clearly(
    tmp_path: Path, name: str, content: str | bytes, expected: str
) -> None:
    good_corpus(tmp_path / "good")
    _write(tmp_path / "bad", name, content)
    result = ingest([tmp_path / "good", tmp_path / "bad"], relative_to=tmp_path)
    rejected = [r for r in result.rejected if r.subject.startswith("bad")]
    assert len(rejected) == 1, [r.message for r in result.rejected]
    message = rejected[0].message
    assert expected in message
    assert name.split("/")[0] in message  # names the file
    # everything else in the batch still went in
    assert len([s for s in result.accepted if s.source.startswith("good")]) == 7


def test_oversized_file_is_rejected_without_reading_it_whole(tmp_path: Path) -> None:
    good_corpus(tmp_path / "good")
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(50 * 1024 * 1024)
    result = ingest([tmp_path / "good", big])
    assert len(result.accepted) == 7
    assert len(result.rejected) == 1 and "52.4 MB" in result.rejected[0].reason


def test_query_column_mapping_and_datasets(tmp_path: Path) -> None:
    import datasets

    rows = [{"uid": "a", "prompt": "Book a table for four at 7pm"}, {"uid": "b", "prompt": "Split the bill"}]
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "hf"))
    datasets.Dataset.from_list(rows).to_parquet(str(tmp_path / "q.parquet"))
    mapping = {"query": "prompt", "id": "uid"}
    result = ingest([tmp_path / "hf", tmp_path / "q.parquet"], query_columns=mapping)
    assert result.rejected == []
    assert sorted(s.name for s in result.accepted) == ["a", "a", "b", "b"]
    assert len({s.id for s in result.accepted}) == 2  # same content, same id
    unmapped = ingest([tmp_path / "q.parquet"])
    assert len(unmapped.rejected) == 2 and "--query-column" in unmapped.rejected[0].fix
