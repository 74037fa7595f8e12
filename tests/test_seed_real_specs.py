"""OpenAPI/Swagger ingestion against real published specs, and each repair on small inline documents.

The real specs live outside the project (`../shared/seeds/openapi/`, see its README); the tests that
read them skip when the folder is absent. Expectations are computed here from the raw YAML with a
tiny resolver of our own, independent of `agentomnia.seeds.openapi`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentomnia.seeds.ingest import ingest
from agentomnia.seeds.models import Seed, SeedTool

ROOT = Path(__file__).resolve().parents[1]
SPEC_DIRS = [ROOT / "shared" / "seeds" / "openapi", ROOT.parent / "shared" / "seeds" / "openapi"]
SPECS = [
    "petstore20", "petstore31", "traintravel", "museum", "twilio_messaging", "resend",
    "spotify", "stride", "bufferapp", "healthcaregov", "uspto", "linkexample",
]  # fmt: skip
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
NAME_OK = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


def spec_path(name: str) -> Path:
    for d in SPEC_DIRS:
        if (d / f"{name}.yaml").is_file():
            return d / f"{name}.yaml"
    pytest.skip(f"real spec {name}.yaml not present (looked in {', '.join(map(str, SPEC_DIRS))})")


# -- a tiny independent reading of the raw document ---------------------------------------


def esc(token: Any) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def deref(doc: Mapping[str, Any], node: Any) -> Any:
    for _ in range(50):
        if not (isinstance(node, Mapping) and isinstance(node.get("$ref"), str)):
            return node
        target: Any = doc
        for tok in node["$ref"][2:].split("/"):
            target = target[tok.replace("~1", "/").replace("~0", "~")]
        node = target
    raise AssertionError("ref chain too long")


def all_props(doc: Mapping[str, Any], schema: Any) -> tuple[dict[str, Any], list[str]]:
    """Properties and required names of a schema, through $refs and allOf."""
    schema = deref(doc, schema)
    props: dict[str, Any] = {}
    required: list[str] = []
    if not isinstance(schema, Mapping):
        return props, required
    for sub in schema.get("allOf") or []:
        p, r = all_props(doc, sub)
        props.update(p)
        required += r
    props.update(schema.get("properties") or {})
    required += schema.get("required") or []
    return props, list(dict.fromkeys(required))


def declared_type(doc: Mapping[str, Any], schema: Any) -> tuple[frozenset[str], bool]:
    """(JSON types without null, whether null is allowed) as the raw schema declares them."""
    schema = deref(doc, schema)
    if not isinstance(schema, Mapping):
        return frozenset(), False
    t = schema.get("type")
    types = {t} if isinstance(t, str) else set(t or [])
    nullable = schema.get("nullable") is True or "null" in types
    if not types:
        for sub in schema.get("allOf") or []:
            sub_types, sub_null = declared_type(doc, sub)
            if sub_types:
                types, nullable = set(sub_types), nullable or sub_null
                break
    types = {"string" if x == "file" else x for x in types} - {"null"}
    return frozenset(types), nullable


def tool_type(schema: Any) -> tuple[frozenset[str], bool]:
    t = schema.get("type") if isinstance(schema, Mapping) else None
    types = {t} if isinstance(t, str) else set(t or [])
    return frozenset(types - {"null"}), "null" in types


def walk(node: Any) -> Iterator[tuple[Any, Any]]:
    if isinstance(node, Mapping):
        for k, v in node.items():
            yield k, v
            yield from walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from walk(v)


def expected_tools(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """place -> {name, props: {name: (location, raw schema)}, required} from the raw document."""
    swagger = str(doc.get("swagger")) == "2.0"
    out: dict[str, dict[str, Any]] = {}
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method not in METHODS:
                continue
            place = f"#/paths/{esc(path)}/{method}"
            op_id = op.get("operationId")
            if op_id is None:
                name = f"{method}_" + (re.sub(r"[^A-Za-z0-9]+", "_", path).strip("_") or "root")
            else:
                name = op_id if NAME_OK.match(op_id) else re.sub(r"[^A-Za-z0-9_.\-]", "_", op_id)[:64]
            params: dict[tuple[str, str], Any] = {}
            for p in [*(item.get("parameters") or []), *(op.get("parameters") or [])]:
                p = deref(doc, p)
                params[(p["in"], p["name"])] = p
            props: dict[str, tuple[str, Any]] = {}
            required: list[str] = []
            body: tuple[Any, bool, str] | None = None
            for (where, pname), p in params.items():
                if where == "body":
                    body = (p.get("schema", {}), p.get("required") is True, "body")
                elif where in ("path", "query", "formData"):
                    props[pname] = (where, p if swagger else p.get("schema", {}))
                    if p.get("required") is True or where == "path":
                        required.append(pname)
            rb = deref(doc, op.get("requestBody"))
            if isinstance(rb, Mapping):
                content = rb["content"]
                media = "application/json" if "application/json" in content else next(iter(content))
                loc = (
                    "formData"
                    if media in ("application/x-www-form-urlencoded", "multipart/form-data")
                    else "body"
                )
                body = (content[media].get("schema", {}), rb.get("required") is True, loc)
            if body is not None:
                schema, body_required, loc = body
                bprops, breq = all_props(doc, schema)
                resolved = deref(doc, schema)
                flat = bool(bprops) and not any(k in resolved for k in ("oneOf", "anyOf"))
                if flat:
                    renamed = {k: (f"body_{k}" if k in props else k) for k in bprops}
                    for k, v in bprops.items():
                        props[renamed[k]] = (loc, v)
                    required += [renamed[k] for k in breq if k in renamed and renamed[k] not in required]
                else:
                    props["body"] = ("body", schema)
                    if body_required:
                        required.append("body")
            # a path parameter no parameter declares (`{id}`, or Express's `/:id`) is added, a repair
            for braced, express in re.findall(r"{([^{}/]+)}|(?<=/):([A-Za-z_][A-Za-z0-9_]*)(?=/|$)", path):
                if (braced or express) not in props:
                    props[braced or express] = ("path", {"type": "string"})
                    required.append(braced or express)
            out[place] = {"name": name, "props": props, "required": required, "op_id": op_id}
    return out


def load_raw(path: Path) -> Any:
    return yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def ingest_one(path: Path) -> Seed:
    result = ingest([path])
    assert result.rejected == [], [r.message for r in result.rejected]
    assert len(result.accepted) == 1
    return result.accepted[0]


# -- the real specs ------------------------------------------------------------------------


@pytest.mark.parametrize("name", SPECS)
def test_real_spec_ingests_faithfully(name: str) -> None:
    path = spec_path(name)
    doc = load_raw(path)
    seed = ingest_one(path)
    expected = expected_tools(doc)
    tools = {t.place: t for t in seed.tools}
    # every path x method is a tool, under the operationId (or the method_path name)
    assert set(tools) == set(expected)
    assert len({t.name for t in seed.tools}) == len(seed.tools)
    repairs = seed.metadata.get("repairs", [])
    repaired_at = {r["place"] for r in repairs}
    for place, exp in expected.items():
        tool = tools[place]
        assert tool.name == exp["name"], place
        if exp["op_id"] is not None and exp["name"] != exp["op_id"]:
            assert f"{place}/operationId" in repaired_at  # a sanitised name is always recorded
        schema = tool.input_schema
        assert schema["type"] == "object" and "additionalProperties" not in schema
        assert list(schema["properties"]) == list(exp["props"]), place
        assert schema["required"] == exp["required"], place
        assert tool.locations == {k: loc for k, (loc, _) in exp["props"].items()}, place
        assert tool.method == place.rsplit("/", 1)[1].upper()
        for pname, (_, raw) in exp["props"].items():
            assert tool_type(schema["properties"][pname]) == declared_type(doc, raw), (place, pname)
        # resolved and translated: no $ref, no nullable left anywhere in what a tool takes
        keys = {k for k, _ in walk(schema)}
        assert "$ref" not in keys and "nullable" not in keys and "allOf" not in keys, place
    for r in repairs:
        assert r["place"].startswith("#/") and r["problem"] and r["fix"]
        assert "skipped" not in r["fix"], r  # no real operation is lost


def test_twilio_sids_keep_their_constraints() -> None:
    seed = ingest_one(spec_path("twilio_messaging"))
    fetch = next(t for t in seed.tools if t.name == "FetchService")
    assert fetch.input_schema["properties"]["Sid"] == {
        "type": "string",
        "minLength": 34,
        "maxLength": 34,
        "pattern": "^MG[0-9a-fA-F]{32}$",
        "description": "The SID of the Service resource to fetch.",
    }
    assert fetch.place == "#/paths/~1v1~1Services~1{Sid}/get" and fetch.locations == {"Sid": "path"}
    # response fields declared `nullable: true` in 3.0 become JSON-Schema type lists
    assert fetch.output_schema is not None
    assert fetch.output_schema["properties"]["sid"]["type"] == ["string", "null"]


def test_uspto_hyphenated_operation_ids_are_kept() -> None:
    seed = ingest_one(spec_path("uspto"))
    assert {t.name for t in seed.tools} == {"list-data-sets", "list-searchable-fields", "perform-search"}
    assert "repairs" not in seed.metadata


def test_museum_all_of_body_is_flattened() -> None:
    seed = ingest_one(spec_path("museum"))
    buy = next(t for t in seed.tools if t.name == "buyMuseumTickets")
    assert set(buy.input_schema["properties"]) >= {"ticketType", "ticketDate", "email"}
    assert set(buy.locations.values()) == {"body"}


def test_petstore20_swagger_parameters() -> None:
    seed = ingest_one(spec_path("petstore20"))
    tools = {t.name: t for t in seed.tools}
    upload = tools["uploadFile"]
    assert upload.locations == {"petId": "path", "additionalMetadata": "formData", "file": "formData"}
    assert upload.input_schema["properties"]["file"]["type"] == "string"
    assert upload.input_schema["properties"]["petId"]["format"] == "int64"
    assert tools["getPetById"].place == "#/paths/~1pet~1{petId}/get"


# -- repairs on small documents ------------------------------------------------------------


def api(tmp_path: Path, doc: Mapping[str, Any], name: str = "api.json") -> Seed:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return ingest_one(path)


def oas(
    paths: dict[str, Any], schemas: dict[str, Any] | None = None, version: str = "3.0.3"
) -> dict[str, Any]:
    return {
        "openapi": version,
        "info": {"title": "T", "version": "1"},
        "paths": paths,
        "components": {"schemas": schemas or {}},
    }


def json_body(schema: Any, required: bool = False) -> dict[str, Any]:
    return {"required": required, "content": {"application/json": {"schema": schema}}}


OK = {"200": {"description": "ok"}}


def by_name(seed: Seed) -> dict[str, SeedTool]:
    return {t.name: t for t in seed.tools}


def repairs_at(seed: Seed, place: str) -> list[dict[str, str]]:
    return [r for r in seed.metadata.get("repairs", []) if r["place"] == place]


def test_hyphens_dots_and_camel_case_are_kept_exactly(tmp_path: Path) -> None:
    doc = oas({
        "/a": {"get": {"operationId": "list-data-sets", "responses": OK}},
        "/b": {"get": {"operationId": "pets.list", "responses": OK}},
        "/c/{cId}": {"get": {"operationId": "getCById", "responses": OK,
                             "parameters": [{"name": "cId", "in": "path", "required": True, "schema": {"type": "string"}}]}},
        "/d": {"get": {"responses": OK}},
    })  # fmt: skip
    seed = api(tmp_path, doc)
    assert [t.name for t in seed.tools] == ["list-data-sets", "pets.list", "getCById", "get_d"]
    assert "repairs" not in seed.metadata
    assert seed.tools[2].place == "#/paths/~1c~1{cId}/get"


def test_an_invalid_operation_id_is_sanitised_with_a_repair(tmp_path: Path) -> None:
    seed = api(tmp_path, oas({"/e": {"post": {"operationId": "emails/send", "responses": OK}}}))
    assert seed.tools[0].name == "emails_send"
    [r] = repairs_at(seed, "#/paths/~1e/post/operationId")
    assert "emails/send" in r["problem"] and "emails_send" in r["fix"]


def test_duplicate_required_is_deduplicated(tmp_path: Path) -> None:
    schemas = {"Claim": {"type": "object", "required": ["amount", "parcel", "amount"],
                         "properties": {"parcel": {"type": "string"}, "amount": {"type": "number"}}}}  # fmt: skip
    doc = oas({"/claims": {"post": {"operationId": "createClaim", "responses": OK,
                                    "requestBody": json_body({"$ref": "#/components/schemas/Claim"})}}}, schemas)  # fmt: skip
    seed = api(tmp_path, doc)
    tool = seed.tools[0]
    assert tool.input_schema == {
        "type": "object",
        "properties": {"parcel": {"type": "string"}, "amount": {"type": "number"}},
        "required": ["amount", "parcel"],
    }
    [r] = seed.metadata["repairs"]
    assert r["place"] == "#/components/schemas/Claim/required" and "amount" in r["problem"]


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([{"type": "string"}], {"type": "string"}),
        ([{"type": "string"}, {"type": "integer"}], {"anyOf": [{"type": "string"}, {"type": "integer"}]}),
    ],
)
def test_tuple_items_become_one_schema(tmp_path: Path, items: list[Any], expected: dict[str, Any]) -> None:
    param = {"name": "tags", "in": "query", "schema": {"type": "array", "items": items, "maxItems": 3}}
    seed = api(
        tmp_path, oas({"/t": {"get": {"operationId": "listT", "parameters": [param], "responses": OK}}})
    )
    assert seed.tools[0].input_schema["properties"]["tags"] == {
        "type": "array",
        "items": expected,
        "maxItems": 3,
    }
    [r] = seed.metadata["repairs"]
    assert r["place"] == "#/paths/~1t/get/parameters/0/schema/items"


def test_duplicate_operation_id_keeps_the_first(tmp_path: Path) -> None:
    doc = oas({
        "/a": {"get": {"operationId": "list", "responses": OK}},
        "/b": {"get": {"operationId": "list", "responses": OK}, "post": {"operationId": "list", "responses": OK}},
    })  # fmt: skip
    seed = api(tmp_path, doc)
    assert [(t.name, t.path) for t in seed.tools] == [("list", "/a"), ("list_get", "/b"), ("list_post", "/b")]
    [r] = repairs_at(seed, "#/paths/~1b/get/operationId")
    assert "#/paths/~1a/get" in r["problem"] and "list_get" in r["fix"]
    assert len(seed.metadata["repairs"]) == 2


def test_a_default_its_schema_rejects_is_dropped(tmp_path: Path) -> None:
    params = [
        {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "default": "ten"}},
        {"name": "page", "in": "query", "schema": {"type": "integer", "default": 1}},
        {"name": "size", "in": "query", "schema": {"type": "string", "enum": ["s", "m"], "default": "xl"}},
    ]
    seed = api(
        tmp_path, oas({"/t": {"get": {"operationId": "listT", "parameters": params, "responses": OK}}})
    )
    props = seed.tools[0].input_schema["properties"]
    assert props == {
        "limit": {"type": "integer", "minimum": 1},
        "page": {"type": "integer", "default": 1},
        "size": {"type": "string", "enum": ["s", "m"]},
    }
    places = [r["place"] for r in seed.metadata["repairs"]]
    assert places == [
        "#/paths/~1t/get/parameters/0/schema/default",
        "#/paths/~1t/get/parameters/2/schema/default",
    ]


def test_boolean_exclusive_bounds_become_json_schema_bounds(tmp_path: Path) -> None:
    import jsonschema

    volume = {
        "type": "number",
        "minimum": 0,
        "exclusiveMinimum": True,
        "maximum": 50,
        "exclusiveMaximum": False,
    }
    params = [
        {"name": "volume", "in": "query", "schema": volume},
        {"name": "ratio", "in": "query", "schema": {"type": "number", "exclusiveMaximum": True}},
    ]
    seed = api(
        tmp_path, oas({"/t": {"get": {"operationId": "listT", "parameters": params, "responses": OK}}})
    )
    props = seed.tools[0].input_schema["properties"]
    # the same numbers are allowed: above 0, up to and with 50
    assert props["volume"] == {"type": "number", "exclusiveMinimum": 0, "maximum": 50}
    assert props["ratio"] == {"type": "number"}
    jsonschema.Draft202012Validator.check_schema(seed.tools[0].input_schema)
    (repair,) = seed.metadata["repairs"]
    assert repair["place"] == "#/paths/~1t/get/parameters/1/schema/exclusiveMaximum"
    # OpenAPI 3.1 is JSON Schema already: a boolean there is the seed's own error, left to verification
    seed31 = api(
        tmp_path,
        oas(
            {"/t": {"get": {"operationId": "listT", "parameters": params, "responses": OK}}}, version="3.1.0"
        ),
        "b.json",
    )
    assert seed31.tools[0].input_schema["properties"]["volume"]["exclusiveMinimum"] is True


def test_dangling_refs_are_repaired_and_operations_kept(tmp_path: Path) -> None:
    schemas = {"Parcel": {"type": "object", "properties": {"id": {"type": "string"},
                                                           "owner": {"$ref": "#/components/schemas/Nope"}}}}  # fmt: skip
    doc = oas({
        "/parcels": {"post": {"operationId": "createParcel", "responses": OK,
                              "requestBody": json_body({"$ref": "#/components/schemas/Parcel"})}},
        "/whole": {"post": {"operationId": "postWhole", "responses": OK,
                            "requestBody": json_body({"$ref": "#/components/schemas/Missing"}, required=True)}},
        "/p": {"get": {"operationId": "getP", "responses": OK,
                       "parameters": [{"$ref": "#/components/parameters/Gone"},
                                      {"name": "q", "in": "query", "schema": {"type": "string"}}]}},
    }, schemas)  # fmt: skip
    seed = api(tmp_path, doc)
    tools = by_name(seed)
    assert tools["createParcel"].input_schema["properties"] == {"id": {"type": "string"}, "owner": {}}
    assert tools["postWhole"].input_schema == {
        "type": "object",
        "properties": {"body": {}},
        "required": ["body"],
    }
    assert tools["getP"].input_schema["properties"] == {"q": {"type": "string"}}
    places = {r["place"] for r in seed.metadata["repairs"]}
    assert places == {
        "#/components/schemas/Parcel/properties/owner",
        "#/paths/~1whole/post/requestBody/content/application~1json/schema",
        "#/paths/~1p/get/parameters/0",
    }


def test_a_body_property_named_like_a_parameter_is_renamed(tmp_path: Path) -> None:
    doc = oas({"/u/{name}": {"put": {
        "operationId": "putU", "responses": OK,
        "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}],
        "requestBody": json_body({"type": "object", "required": ["name"],
                                  "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}),
    }}})  # fmt: skip
    tool = api(tmp_path, doc).tools[0]
    assert list(tool.input_schema["properties"]) == ["name", "body_name", "age"]
    assert tool.input_schema["required"] == ["name", "body_name"]
    assert tool.locations == {"name": "path", "body_name": "body", "age": "body"}


def test_unreadable_operation_is_skipped_and_the_rest_kept(tmp_path: Path) -> None:
    doc = oas(
        {"/a": {"get": "an operation written as a string", "post": {"operationId": "postA", "responses": OK}}}
    )
    seed = api(tmp_path, doc)
    assert [t.name for t in seed.tools] == ["postA"]
    [r] = seed.metadata["repairs"]
    assert r["place"] == "#/paths/~1a/get" and r["fix"] == "skipped the operation"


def test_no_usable_operation_is_a_plain_rejection(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(
        json.dumps(oas({"/a": {"get": "an operation written as a string", "post": ["x"]}})), encoding="utf-8"
    )
    result = ingest([path])
    assert result.accepted == []
    [rej] = result.rejected
    assert rej.place == "#/paths" and "none of the 2 operations can be used" in rej.reason
    assert "Error" not in rej.reason and rej.fix


def test_external_ref_is_still_rejected_with_its_pointer(tmp_path: Path) -> None:
    doc = oas({"/a": {"get": {"operationId": "getA", "responses": {
        "200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "other.yaml#/X"}}}}}}}})  # fmt: skip
    path = tmp_path / "ext.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    [rej] = ingest([path]).rejected
    assert "external $ref" in rej.reason
    assert rej.place == "#/paths/~1a/get/responses/200/content/application~1json/schema"


def test_resolution_merges_all_of_cuts_recursion_and_translates_nullable(tmp_path: Path) -> None:
    schemas = {
        "Base": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}},
        "Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}},
        "Pet": {"allOf": [{"$ref": "#/components/schemas/Base"},
                          {"type": "object", "required": ["kind"],
                           "properties": {"kind": {"type": "string", "enum": ["cat", "dog"], "nullable": True},
                                          "tree": {"$ref": "#/components/schemas/Node"},
                                          "pick": {"oneOf": [{"type": "string"}, {"type": "integer"}], "nullable": True}}}]},
    }  # fmt: skip
    doc = oas({"/pets": {"post": {"operationId": "addPet", "responses": OK,
                                  "requestBody": json_body({"$ref": "#/components/schemas/Pet"})}}}, schemas)  # fmt: skip
    seed = api(tmp_path, doc)
    tool = seed.tools[0]
    props = tool.input_schema["properties"]
    assert list(props) == ["id", "kind", "tree", "pick"]
    assert tool.input_schema["required"] == ["id", "kind"]
    assert props["kind"] == {"type": ["string", "null"], "enum": ["cat", "dog", None]}
    assert props["pick"] == {"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}
    cut = props["tree"]["properties"]["children"]["items"]
    assert cut == {"type": "object", "description": "recursive reference to #/components/schemas/Node"}
    assert "repairs" not in seed.metadata


def test_mutual_recursion_is_cut_at_the_second_visit_wherever_it_starts(tmp_path: Path) -> None:
    schemas = {
        "A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
        "B": {"type": "object", "properties": {"a": {"$ref": "#/components/schemas/A"}}},
    }
    doc = oas({
        "/a": {"post": {"operationId": "postA", "responses": OK,
                        "requestBody": json_body({"$ref": "#/components/schemas/A"})}},
        "/b": {"post": {"operationId": "postB", "responses": OK,
                        "requestBody": json_body({"$ref": "#/components/schemas/B"})}},
    }, schemas)  # fmt: skip
    tools = by_name(api(tmp_path, doc))
    cut_a = {"type": "object", "description": "recursive reference to #/components/schemas/A"}
    cut_b = {"type": "object", "description": "recursive reference to #/components/schemas/B"}
    assert tools["postA"].input_schema["properties"]["b"] == {"type": "object", "properties": {"a": cut_a}}
    assert tools["postB"].input_schema["properties"]["a"] == {"type": "object", "properties": {"b": cut_b}}


def test_a_dense_web_of_recursive_schemas_stays_small_and_fast(tmp_path: Path) -> None:
    n = 10
    schemas = {
        f"S{i}": {
            "type": "object",
            "properties": {f"p{j}": {"$ref": f"#/components/schemas/S{j}"} for j in range(n)},
        }
        for i in range(n)
    }
    paths = {
        f"/s{i}": {"post": {"operationId": f"post{i}", "responses": OK,
                            "requestBody": json_body({"$ref": f"#/components/schemas/S{i}"})}}
        for i in range(n)
    }  # fmt: skip
    seed = api(tmp_path, oas(paths, schemas))
    assert len(seed.tools) == n
    assert all(list(t.input_schema["properties"]) == [f"p{j}" for j in range(n)] for t in seed.tools)
    assert max(len(json.dumps(t.input_schema)) for t in seed.tools) < 300_000
    [r] = seed.metadata["repairs"]
    assert "recursive schemas grow past" in r["problem"] and r["place"].startswith("#/")


def test_refs_into_paths_are_followed(tmp_path: Path) -> None:
    shared = {"name": "id", "in": "path", "required": True, "schema": {"type": "string", "format": "uuid"}}
    doc = oas({
        "/a/{id}": {"get": {"operationId": "getA", "parameters": [shared], "responses": OK}},
        "/b/{id}": {"get": {"operationId": "getB", "responses": OK,
                            "parameters": [{"$ref": "#/paths/~1a~1{id}/get/parameters/0"}]}},
        "/c": None,
    })  # fmt: skip
    seed = api(tmp_path, doc)
    tools = by_name(seed)
    assert tools["getB"].input_schema["properties"] == {"id": {"type": "string", "format": "uuid"}}
    assert [r["place"] for r in seed.metadata["repairs"]] == ["#/paths/~1c"]


def test_swagger_parameters_become_json_schema_properties(tmp_path: Path) -> None:
    doc = {
        "swagger": "2.0",
        "info": {"title": "Depot", "version": "1"},
        "paths": {
            "/slots/{slotId}": {
                "parameters": [{"name": "slotId", "in": "path", "required": True, "type": "integer", "format": "int64"}],
                "post": {
                    "operationId": "fillSlot",
                    "parameters": [
                        {"name": "note", "in": "formData", "type": "string", "maxLength": 20},
                        {"name": "scan", "in": "formData", "type": "file", "required": True},
                        {"name": "tags", "in": "query", "type": "array", "items": {"type": "string"},
                         "collectionFormat": "csv", "description": "labels"},
                        {"name": "X-Trace", "in": "header", "type": "string"},
                    ],
                    "responses": {"200": {"description": "ok"}},
                },
                "put": {
                    "operationId": "replaceSlot",
                    "parameters": [{"name": "b", "in": "body", "required": True,
                                    "schema": {"type": "array", "items": {"$ref": "#/definitions/Line"}}}],
                    "responses": {"200": {"description": "ok"}},
                },
            }
        },
        "definitions": {"Line": {"type": "object", "properties": {"sku": {"type": "string"}}}},
    }  # fmt: skip
    tools = by_name(api(tmp_path, doc))
    fill = tools["fillSlot"]
    assert fill.input_schema == {
        "type": "object",
        "properties": {
            "slotId": {"type": "integer", "format": "int64"},
            "note": {"type": "string", "maxLength": 20},
            "scan": {"type": "string", "format": "binary"},
            "tags": {"type": "array", "items": {"type": "string"}, "description": "labels"},
        },
        "required": ["slotId", "scan"],
    }
    assert fill.locations == {"slotId": "path", "note": "formData", "scan": "formData", "tags": "query"}
    replace = tools["replaceSlot"]
    assert replace.input_schema["properties"]["body"] == {
        "type": "array",
        "items": {"type": "object", "properties": {"sku": {"type": "string"}}},
    }
    assert replace.input_schema["required"] == ["slotId", "body"]
    assert replace.locations == {"slotId": "path", "body": "body"}


def test_form_encoded_body_and_non_object_bodies(tmp_path: Path) -> None:
    form = {"content": {"application/x-www-form-urlencoded": {"schema": {
        "type": "object", "required": ["To"], "properties": {"To": {"type": "string"}, "Body": {"type": "string"}}}}}}  # fmt: skip
    one_of = json_body({"oneOf": [{"type": "object", "properties": {"a": {"type": "string"}}},
                                  {"type": "object", "properties": {"b": {"type": "string"}}}]}, required=True)  # fmt: skip
    doc = oas({
        "/m": {"post": {"operationId": "sendM", "requestBody": form, "responses": OK}},
        "/o": {"post": {"operationId": "postO", "requestBody": one_of, "responses": OK}},
        "/n": {"post": {"operationId": "postN", "requestBody": json_body({"type": "object"}), "responses": OK}},
    })  # fmt: skip
    tools = by_name(api(tmp_path, doc))
    assert tools["sendM"].locations == {"To": "formData", "Body": "formData"}
    assert tools["sendM"].input_schema["required"] == ["To"]
    assert list(tools["postO"].input_schema["properties"]) == ["body"]
    assert tools["postO"].input_schema["required"] == ["body"]
    assert tools["postN"].input_schema == {
        "type": "object",
        "properties": {"body": {"type": "object"}},
        "required": [],
    }


def test_undeclared_path_parameter_is_added_with_a_repair(tmp_path: Path) -> None:
    seed = api(tmp_path, oas({"/orders/{orderId}": {"get": {"operationId": "getOrder", "responses": OK}}}))
    tool = seed.tools[0]
    assert tool.input_schema["properties"] == {"orderId": {"type": "string"}}
    assert tool.input_schema["required"] == ["orderId"] and tool.locations == {"orderId": "path"}
    assert [r["place"] for r in seed.metadata["repairs"]] == ["#/paths/~1orders~1{orderId}/get"]


def test_an_express_style_path_parameter_is_added_with_a_repair(tmp_path: Path) -> None:
    doc = oas({"/site/:cloudId/chat:glance/:key": {"get": {"operationId": "getGlance", "responses": OK}}})
    seed = api(tmp_path, doc)
    tool = seed.tools[0]
    # `chat:glance` is a segment with a colon in it, not a parameter
    assert tool.input_schema["properties"] == {"cloudId": {"type": "string"}, "key": {"type": "string"}}
    assert tool.locations == {"cloudId": "path", "key": "path"}
    assert [r["problem"] for r in seed.metadata["repairs"]] == [
        "the path names :cloudId but no parameter declares it",
        "the path names :key but no parameter declares it",
    ]


# -- MCP tool lists ------------------------------------------------------------------------


def test_mcp_list_is_lenient_and_keeps_schemas(tmp_path: Path) -> None:
    optional = {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
    doc: dict[str, Any] = {
        "tools": [
            {"name": "get_parcel", "inputSchema": {"type": "object", "properties": {"id": {"type": "string"},
                                                                                    "note": optional}}},
            {"name": "get_parcel", "inputSchema": {"type": "object", "properties": {"ref": {"type": "string", "nullable": True}}}},
            "not a tool",
            {"name": "bad schema", "inputSchema": {"type": "string"}},
            {"name": "find cards", "inputSchema": {"type": "object"}},
        ]
    }  # fmt: skip
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    seed = ingest_one(path)
    assert [t.name for t in seed.tools] == ["get_parcel", "get_parcel_2", "find_cards"]
    assert seed.tools[0].input_schema == doc["tools"][0]["inputSchema"]  # anyOf [X, null] kept exactly
    assert seed.tools[1].input_schema["properties"]["ref"] == {"type": ["string", "null"]}
    assert [t.place for t in seed.tools] == ["#/tools/0", "#/tools/1", "#/tools/4"]
    assert all(t.locations == {} for t in seed.tools)
    assert [(r["place"], r["fix"]) for r in seed.metadata["repairs"]] == [
        ("#/tools/1/name", "named this one 'get_parcel_2'"),
        ("#/tools/2", "skipped the tool"),
        ("#/tools/3", "skipped the tool"),
        ("#/tools/4/name", "named the tool 'find_cards'"),
    ]
