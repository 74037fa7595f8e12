"""The leakage checker: tool names, parameter keys, dictated steps and ids are caught; plain prose is not."""

from __future__ import annotations

import pytest

from agentomnia.envs.spec import AttributeSpec, EntitySpec, EnvSpec, ToolSpec
from agentomnia.tasks.leakage import id_literals, leakage_problems
from agentomnia.taxonomy import Coordinate


def _entity(name: str, prefix: str) -> EntitySpec:
    key = f"{name}_id"
    attrs = (AttributeSpec(name=key, type="str"), AttributeSpec(name="name", type="str"))
    return EntitySpec(
        name=name, table=f"{name}s", description=name, key=key, attributes=attrs, id_prefix=prefix
    )


def _tool(name: str, op: str, entity: str, props: list[str]) -> ToolSpec:
    kind = "read" if op == "get" else "write"
    schema = {"type": "object", "properties": {p: {"type": "string"} for p in props}}
    return ToolSpec(name=name, description=name, kind=kind, op=op, entity=entity, parameters=schema)  # type: ignore[arg-type]


SPEC = EnvSpec(
    name="desk", class_name="Desk", description="A sales desk.",
    coordinate=Coordinate.for_domain(20096, ["tool_use"], ["tool_parameter_grounding"]),
    candidate_id="desk", seed_ids=(), entities=(_entity("customer", "CUS"), _entity("order", "ORD")),
    relations=(), rules=(),
    tools=(_tool("get_customer", "get", "customer", ["customer_id"]), _tool("pay_order", "transition", "order", ["order_id", "note"])),
)  # fmt: skip


def test_clean_prose_passes_every_variant() -> None:
    query = "Please mark the open order of the customer named 'Ava Chen' as paid, and tell me her credit."
    assert leakage_problems(query, SPEC, forbid_ids=True) == []


@pytest.mark.parametrize(
    ("query", "fragment"),
    [
        ("Run pay_order on her latest order.", "names tool `pay_order`"),
        ("Look her up with customer_id and report.", "spells parameter key `customer_id`"),
        ("Pay it with note=urgent.", "spells parameter key `note`"),
        ("Pay it and set `note` to urgent.", "spells parameter key `note`"),
        ("Step 1: find her. Step 2: pay.", "dictates steps"),
        ("First find the customer, then look at orders, finally pay the order.", "dictates steps"),
        ("Use the lookup tool to find her.", "dictates steps"),
    ],
)
def test_each_kind_of_leak_is_named(query: str, fragment: str) -> None:
    problems = leakage_problems(query, SPEC, forbid_ids=False)
    assert any(fragment in p for p in problems), problems


def test_ids_are_forbidden_only_where_the_variant_says() -> None:
    query = "Pay order ORD-004 for customer CUS-012."
    assert leakage_problems(query, SPEC, forbid_ids=False) == []
    problems = leakage_problems(query, SPEC, forbid_ids=True)
    assert len(problems) == 1 and "ORD-004" in problems[0] and "CUS-012" in problems[0]
    assert id_literals(query, SPEC) == ["CUS-012", "ORD-004"]


def test_plain_words_that_are_also_keys_do_not_count_as_leaks() -> None:
    # `note` is a parameter key, but as an ordinary word it is just English
    assert leakage_problems("Pay her order and add a note: she called twice.", SPEC, forbid_ids=True) == []


def test_switches_turn_checks_off() -> None:
    query = "Run pay_order with customer_id, step 1."
    assert (
        leakage_problems(
            query, SPEC, forbid_ids=True, forbid_tool_names=False, forbid_param_keys=False, forbid_steps=False
        )
        == []
    )
