"""The hand check of tool schemas against the 2020-12 metaschema never accepts what jsonschema refuses."""

from __future__ import annotations

import copy
import random
from typing import Any

import jsonschema
import jsonschema_specifications
import pytest

from agentomnia.sandbox import Bundle
from agentomnia.sandbox.schema import METASCHEMA_KEYWORDS, ToolSchema, plainly_valid_schema

_ODD_VALUES: list[Any] = [
    None, True, False, 0, -1, 1.5, 2.0, "", "x", "string", "nonsense", [], ["a"], ["a", "a"], [1],
    ["string", "null"], ["string", "string"], {}, {"type": "string"}, {"type": 3}, [{"type": "string"}],
]  # fmt: skip
_KEYWORDS = sorted(
    {"type", "properties", "required", "additionalProperties", "items", "enum", "const", "default",
     "description", "title", "format", "minimum", "maximum", "exclusiveMinimum", "minLength",
     "maxItems", "uniqueItems", "readOnly", "examples", "pattern", "$ref", "allOf", "nullable",
     "x-custom", "dependencies", "$comment"}
)  # fmt: skip


def test_keyword_list_covers_every_keyword_the_metaschema_constrains() -> None:
    constrained: set[str] = set()
    for uri, resource in jsonschema_specifications.REGISTRY.items():
        if "/draft/2020-12/" in uri:
            constrained |= set(resource.contents.get("properties", {}))
    assert constrained and constrained <= METASCHEMA_KEYWORDS


def _metaschema_accepts(schema: Any) -> bool:
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.exceptions.SchemaError:
        return False
    return True


def _mutated(schema: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    out = copy.deepcopy(schema)
    target = out
    props = list((out.get("properties") or {}).values())
    if props and rng.random() < 0.6:
        target = rng.choice(props)
        if not isinstance(target, dict):
            return out
    for _ in range(rng.randint(1, 2)):
        target[rng.choice(_KEYWORDS)] = copy.deepcopy(rng.choice(_ODD_VALUES))
    return out


@pytest.mark.parametrize("fixture", ["shop", "mock"])
def test_plain_schemas_are_accepted_only_when_the_metaschema_accepts_them(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    bundle: Bundle = request.getfixturevalue(fixture)
    rng = random.Random(11)
    accepted = refused = 0
    for tool in bundle.tools:
        schema = tool["function"]["parameters"]
        assert plainly_valid_schema(schema), tool["function"]["name"]
        assert _metaschema_accepts(schema)
        for _ in range(150):
            variant = _mutated(schema, rng)
            if plainly_valid_schema(variant):
                accepted += 1
                assert _metaschema_accepts(variant), variant
            else:
                refused += 1
    assert accepted > 100 and refused > 100  # both sides of the decision were exercised


def test_a_broken_schema_still_reports_its_error_and_a_plain_one_validates() -> None:
    broken = ToolSchema(name="t", parameters={"type": "object", "properties": {"x": {"type": "nonsense"}}})
    broken.build()
    assert broken.schema_error is not None and "nonsense" in broken.schema_error
    plain = ToolSchema(
        name="t",
        parameters={
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 1}},
            "required": ["n"],
        },
    )
    plain.build()
    assert plain.schema_error is None and plain.fast is not None
    assert plain.check({"n": 2}) is None
    assert plain.check({"n": 0}) == "argument `n`: 0 is less than the minimum of 1"
    assert plain.check({}) == "missing required argument `n`"
