"""The fast argument validator agrees with jsonschema on everything it claims to handle."""

from __future__ import annotations

import random
from typing import Any

import jsonschema
import pytest

from agentomnia.sandbox import Bundle
from agentomnia.sandbox.schema import compile_schema, json_equal

_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -3,
    2.0,
    2.5,
    "",
    "a",
    "PRD-001",
    "x" * 60,
    [],
    [1, "a"],
    [{"product_id": "PRD-001", "quantity": 2}],
    [{"product_id": "PRD-001", "quantity": 0}],
    {},
    {"product_id": "P", "quantity": 1, "extra": True},
]


def _instances(schema: dict[str, Any], rng: random.Random, count: int) -> list[Any]:
    """Mostly near-valid objects (each property drawn from a pool), plus random junk."""
    properties = list((schema.get("properties") or {}).keys())
    out: list[Any] = [rng.choice(_VALUES) for _ in range(count // 4)]
    for _ in range(count):
        instance = {name: rng.choice(_VALUES) for name in properties if rng.random() < 0.8}
        if rng.random() < 0.1:
            instance["unexpected"] = 1
        out.append(instance)
    return out


@pytest.mark.parametrize("fixture", ["shop", "mock"])
def test_fast_validator_matches_jsonschema_on_fixture_schemas(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    bundle: Bundle = request.getfixturevalue(fixture)
    rng = random.Random(5)
    compared = 0
    for tool in bundle.tools:
        schema = tool["function"]["parameters"]
        fast = compile_schema(schema)
        assert fast is not None, f"{tool['function']['name']} should use the fast path"
        reference = jsonschema.Draft202012Validator(schema)
        for instance in _instances(schema, rng, 60):
            assert fast(instance) == reference.is_valid(instance), (tool["function"]["name"], instance)
            compared += 1
    assert compared >= 75 * len(bundle.tools)


def test_keyword_semantics_follow_json_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 1, "exclusiveMaximum": 10},
            "flag": {"type": "boolean"},
            "kind": {"enum": [1, "one"]},
            "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}, "maxItems": 2},
            "either": {"type": ["string", "null"]},
        },
        "required": ["n"],
    }
    fast = compile_schema(schema)
    assert fast is not None
    reference = jsonschema.Draft202012Validator(schema)
    cases = [
        {"n": 1},
        {"n": 1.0},
        {"n": True},
        {"n": 10},
        {"n": 2, "kind": True},
        {"n": 2, "kind": 1.0},
        {"n": 2, "tags": ["ok", "Bad"]},
        {"n": 2, "tags": ["a", "b", "c"]},
        {"n": 2, "either": None},
        {"n": 2, "either": 3},
        {"n": 2, "extra": object()},
        {},
    ]
    for case in cases:
        assert fast(case) == reference.is_valid(case), case


def test_unsupported_keywords_fall_back_to_jsonschema() -> None:
    for schema in (
        {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        {"$ref": "#/$defs/x", "$defs": {"x": {"type": "string"}}},
        {"type": "array", "uniqueItems": True},
        {"type": "number", "multipleOf": 3},
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
    ):
        assert compile_schema(schema) is None


def test_json_equality_distinguishes_booleans_from_numbers() -> None:
    assert json_equal(1, 1.0)
    assert not json_equal(True, 1)
    assert json_equal({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]})
    assert not json_equal([1, 2], [2, 1])
