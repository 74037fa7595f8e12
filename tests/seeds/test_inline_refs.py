"""Local `$ref`s inlined where a piece of a seed's schema is read apart from its `$defs`."""

from __future__ import annotations

from agentomnia.seeds.openapi import inline_local_refs

POINT = {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}}


def test_refs_into_defs_and_definitions_become_the_schema_they_name_with_their_siblings_on_top() -> None:
    schema = {
        "type": "object",
        "$defs": {"Point": POINT},
        "definitions": {"Label": {"type": "string", "maxLength": 20}},
        "properties": {
            "start": {"$ref": "#/$defs/Point", "description": "where it starts"},
            "tags": {"type": "array", "items": {"$ref": "#/definitions/Label"}},
        },
    }
    out = inline_local_refs(schema)
    assert out["properties"]["start"] == {**POINT, "description": "where it starts"}
    assert out["properties"]["tags"]["items"] == {"type": "string", "maxLength": 20}
    assert schema["properties"]["start"] == {"$ref": "#/$defs/Point", "description": "where it starts"}
    # a property read on its own, against the root it came from
    assert inline_local_refs(schema["properties"]["start"], schema)["properties"] == POINT["properties"]


def test_a_dangling_or_looping_ref_becomes_any_value_instead_of_failing() -> None:
    tree = {
        "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}},
        "properties": {
            "root": {"$ref": "#/$defs/Node"},
            "lost": {"$ref": "#/$defs/Nowhere", "title": "Lost"},
        },
    }
    out = inline_local_refs(tree)
    assert out["properties"]["root"]["properties"]["child"] == {}
    assert out["properties"]["lost"] == {"title": "Lost"}
    assert inline_local_refs({"$ref": "https://example.com/x.json"}) == {"$ref": "https://example.com/x.json"}
