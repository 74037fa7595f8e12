"""Values from declared JSON schemas: every value made for a real-world schema shape validates, every
violation does not, both are deterministic, and states and calls of seed-declared entities carry typed
keys (an int for an integer id, a matching SID for a patterned one)."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from agentomnia.envs.calls import invalid_calls, valid_calls
from agentomnia.envs.spec import AttributeSpec, EntitySpec, EnvSpec, ToolSpec
from agentomnia.envs.state import generate_state, make_value, state_violations
from agentomnia.envs.values import regex_string, schema_key, schema_value, schema_violation
from agentomnia.taxonomy import Coordinate
from agentomnia.taxonomy.knowledge import Relation, Rule
from tests.fixtures.domains import LOGISTICS_DOMAIN_ID

SID = {"type": "string", "pattern": "^SM[0-9a-fA-F]{32}$", "minLength": 34, "maxLength": 34}
ACCOUNT_SID = {"type": "string", "pattern": "^AC[0-9a-fA-F]{32}$", "minLength": 34, "maxLength": 34}
INT64_ID = {"type": "integer", "format": "int64", "minimum": 1}

SHAPES: dict[str, dict[str, Any]] = {
    "twilio_sid": SID,
    "int64_id_min": INT64_ID,
    "nullable_int64": {"type": ["integer", "null"], "format": "int64"},
    "int32_bounded": {"type": "integer", "format": "int32", "minimum": 0, "maximum": 10},
    "uuid": {"type": "string", "format": "uuid"},
    "email": {"type": "string", "format": "email"},
    "date": {"type": "string", "format": "date"},
    "date_time": {"type": "string", "format": "date-time"},
    "time": {"type": "string", "format": "time"},
    "uri": {"type": "string", "format": "uri"},
    "ipv4": {"type": "string", "format": "ipv4"},
    "hostname": {"type": "string", "format": "hostname"},
    "nullable_any_of": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    "nullable_any_of_ref": {
        "anyOf": [{"type": "string", "format": "uuid"}, {"type": "null"}],
        "description": "x",
    },
    "one_of_int_or_number": {"oneOf": [{"type": "integer"}, {"type": "number", "multipleOf": 0.5}]},
    "enum": {"type": "string", "enum": ["queued", "sending", "sent", "failed"]},
    "nullable_enum": {"type": ["string", "null"], "enum": ["low", "high", None]},
    "const": {"const": "v1"},
    "enum_array": {"type": "array", "items": {"type": "string", "enum": ["sms", "mms", "voice", "fax"]}},
    "enum_array_unique_min": {
        "type": "array",
        "items": {"type": "string", "enum": ["read", "write"]},
        "minItems": 1,
        "uniqueItems": True,
    },
    "bounded_array": {
        "type": "array",
        "items": {"type": "integer", "minimum": 3},
        "minItems": 2,
        "maxItems": 2,
    },
    "phone_e164": {"type": "string", "pattern": "^\\+[1-9]\\d{1,14}$"},
    "unanchored_pattern": {"type": "string", "pattern": "[A-Z]{3}", "minLength": 12},
    "alternation_pattern": {"type": "string", "pattern": "^(AC|PN|MG)[0-9a-f]{32}$"},
    "slug_lengths": {"type": "string", "pattern": "^[a-z0-9-]+$", "minLength": 5, "maxLength": 12},
    "bounded_string": {"type": "string", "minLength": 3, "maxLength": 5},
    "price": {"type": "number", "minimum": 0, "exclusiveMaximum": 1000, "multipleOf": 0.01},
    "rate": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
    "even": {"type": "integer", "multipleOf": 2, "minimum": 11, "maximum": 15},
    "boolean": {"type": "boolean"},
    "nested_object": {
        "type": "object",
        "properties": {
            "id": INT64_ID,
            "to": {"type": "string", "pattern": "^\\+[1-9]\\d{1,14}$"},
            "status": {"type": "string", "enum": ["queued", "sent"]},
            "meta": {
                "type": "object",
                "properties": {
                    "created": {"type": "string", "format": "date-time"},
                    "tags": {"type": "array"},
                },
                "required": ["created"],
                "additionalProperties": False,
            },
        },
        "required": ["id", "to", "meta"],
    },
    "all_of": {"allOf": [{"type": "integer", "minimum": 5}, {"maximum": 9}]},
    "untyped_bounds": {"minimum": 2, "maximum": 4},
}


def _valid(schema: dict[str, Any], value: Any, *, formats: bool = True) -> bool:
    checker = Draft202012Validator.FORMAT_CHECKER if formats else None
    return bool(Draft202012Validator(schema, format_checker=checker).is_valid(value))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_generated_value_validates(shape: str) -> None:
    schema = SHAPES[shape]
    for seed in range(30):
        for name in ("", "email", "phone", "status", "body"):
            value = schema_value(schema, random.Random(seed), name=name, index=seed + 1)
            assert _valid(schema, value), f"{shape} seed={seed} name={name!r}: {value!r}"


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_values_prefer_non_null_and_are_deterministic(shape: str) -> None:
    schema = SHAPES[shape]
    values = [schema_value(schema, random.Random(seed), name="x") for seed in range(10)]
    assert values == [schema_value(schema, random.Random(seed), name="x") for seed in range(10)]
    assert all(v is not None for v in values)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_violation_is_refused(shape: str) -> None:
    schema = SHAPES[shape]
    bad = schema_violation(schema, random.Random(0))
    assert bad is not None, shape
    assert not _valid(schema, bad, formats=False), (
        f"{shape}: {bad!r} is accepted"
    )  # refused without formats too
    assert bad == schema_violation(schema, random.Random(0))


def test_violations_break_the_expected_keyword() -> None:
    rng = random.Random(0)
    assert schema_violation({"type": "string", "enum": ["a", "b"]}, rng) == "__no_such_option__"
    assert schema_violation({"type": "integer"}, rng) == "not-a-valid-value"
    assert not isinstance(schema_violation({"type": "string"}, rng), str)  # a wrong type
    assert schema_violation({}, rng) is None  # anything goes: nothing to break
    assert schema_violation(True, rng) is None  # type: ignore[arg-type]
    untyped = schema_violation({"pattern": "^a+$"}, rng)  # only strings are held to the pattern
    assert isinstance(untyped, str) and not re.search("^a+$", untyped)


def test_twilio_sid_and_name_hints() -> None:
    for seed in range(20):
        sid = schema_value(SID, random.Random(seed), name="sid")
        assert re.fullmatch("SM[0-9a-fA-F]{32}", sid) and len(sid) == 34
    # a loose string keeps the name's reading
    assert "@" in schema_value({"type": "string"}, random.Random(1), name="email")
    assert schema_value({"type": "string"}, random.Random(1), name="phone_number").startswith("+1-555-")
    assert schema_value({"type": "integer"}, random.Random(1), name="year") in range(2015, 2027)


def test_regex_strings_use_search_semantics_and_lengths() -> None:
    rng = random.Random(3)
    for pattern, low, high in [
        ("^[a-z]+$", 5, 10),
        ("[0-9]{2}", 8, 8),
        ("^(a|bc)+x?$", 4, 9),
        (r"^\w+@\w+\.com$", 0, 30),
    ]:
        s = regex_string(pattern, rng, min_len=low, max_len=high)
        assert s is not None and re.search(pattern, s) and low <= len(s) <= high, (pattern, s)
    assert regex_string("(", rng) is None  # not a regular expression


def test_determinism_does_not_depend_on_hash_seed() -> None:
    script = (
        "import json, random\n"
        "from agentomnia.envs.values import schema_value, schema_violation\n"
        f"shapes = json.loads({json.dumps(json.dumps(SHAPES))})\n"
        "out = {k: [schema_value(s, random.Random(i), name=k) for i in range(3)] + [schema_violation(s, random.Random(0))]"
        " for k, s in shapes.items()}\n"
        "print(json.dumps(out, sort_keys=True))\n"
    )
    outputs = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1


def test_schema_keys_count_up_and_stay_unique() -> None:
    rng = random.Random(0)
    assert [schema_key(INT64_ID, rng, index=i) for i in (1, 2, 3)] == [1, 2, 3]
    assert schema_key({"type": "integer", "minimum": 100}, rng, index=2) == 101
    assert schema_key(INT64_ID, rng, index=1, taken={"1", "2"}) == 3
    assert schema_key({"type": "integer", "maximum": 2}, rng, index=3, taken={"1", "2"}) is None
    assert schema_key({"type": "string"}, rng, index=7, fallback="PET-007") == "PET-007"
    sids = {schema_key(SID, rng, index=i) for i in range(30)}
    assert len(sids) == 30


# ---------------------------------------------------------------- states and calls of declared entities


def _seed_tool(
    name: str, op: str, entity: str, props: dict[str, Any], required: list[str], binding: dict[str, Any]
) -> ToolSpec:
    kind = "read" if op in ("get", "list") else "write"
    return ToolSpec(
        name=name, description=name.replace("_", " "), kind=kind, op=op, entity=entity,  # type: ignore[arg-type]
        parameters={"type": "object", "properties": props, "required": required}, binding=binding, origin="seed",
    )  # fmt: skip


def messaging_spec() -> EnvSpec:
    """Accounts keyed by int64 ids, messages keyed by Twilio SIDs (pointing at accounts by id), and
    plain notes keyed the platform's way."""
    account = EntitySpec(
        name="account", table="accounts", description="An account.", key="account_id", id_prefix="ACC",
        attributes=(
            AttributeSpec(name="account_id", type="int", declared=INT64_ID, source="seed"),
            AttributeSpec(name="friendly_name", type="str", declared={"type": "string", "maxLength": 64}, source="seed"),
            AttributeSpec(name="email", type="str", declared={"type": "string"}, source="seed"),
            AttributeSpec(name="auth_sid", type="str", declared=ACCOUNT_SID, source="seed"),
            AttributeSpec(name="created", type="datetime", declared={"type": "string", "format": "date-time"}, source="seed"),
            AttributeSpec(name="balance", type="money"),
        ),
    )  # fmt: skip
    message = EntitySpec(
        name="message", table="messages", description="A text message.", key="sid", id_prefix="MSG",
        attributes=(
            AttributeSpec(name="sid", type="str", declared=SID, source="seed"),
            AttributeSpec(name="account_id", type="ref", ref="account", declared={"type": "integer", "format": "int64"}, source="seed"),
            AttributeSpec(name="to", type="str", declared={"type": "string", "pattern": "^\\+[1-9]\\d{1,14}$"}, source="seed"),
            AttributeSpec(name="status", type="enum", enum=("queued", "sent", "failed"),
                          declared={"type": "string", "enum": ["queued", "sent", "failed"]}, source="seed"),
            AttributeSpec(name="price", type="float", nullable=True,
                          declared={"anyOf": [{"type": "number", "minimum": 0}, {"type": "null"}]}, source="seed"),
            AttributeSpec(name="segments", type="int", declared={"type": ["integer", "null"], "format": "int32", "minimum": 1}, source="seed"),
            AttributeSpec(name="channels", type="list",
                          declared={"type": "array", "items": {"type": "string", "enum": ["sms", "mms", "whatsapp"]}}, source="seed"),
            AttributeSpec(name="external_id", type="str", declared={"type": "string", "format": "uuid"}, source="seed"),
        ),
    )  # fmt: skip
    note = EntitySpec(
        name="note", table="notes", description="A note on an account.", key="note_id", id_prefix="NOTE",
        attributes=(
            AttributeSpec(name="note_id", type="str"), AttributeSpec(name="account_id", type="ref", ref="account"),
            AttributeSpec(name="body", type="text"),
        ),
    )  # fmt: skip
    rules = (
        Rule(id="balance_cap", text="Balances stay under 500.", kind="range", entity="account", attr="balance", min=0, max=500),
        Rule(id="email_once", text="One account per email.", kind="unique", entity="account", attrs=("email",)),
    )  # fmt: skip
    msg_props = {
        "Sid": SID, "AccountId": {"type": "integer", "format": "int64"},
        "To": {"type": "string", "pattern": "^\\+[1-9]\\d{1,14}$"},
        "Status": {"type": "string", "enum": ["queued", "sent", "failed"]},
        "Price": {"anyOf": [{"type": "number", "minimum": 0}, {"type": "null"}]},
    }  # fmt: skip
    tools = (
        _seed_tool("get_account", "get", "account", {"account_id": INT64_ID}, ["account_id"], {"key": "account_id"}),
        _seed_tool("delete_account", "delete", "account", {"account_id": INT64_ID}, ["account_id"], {"key": "account_id"}),
        _seed_tool("fetch_message", "get", "message", {"Sid": SID}, ["Sid"], {"key": "Sid"}),
        _seed_tool(
            "update_message", "update", "message", msg_props, ["Sid", "To"],
            {"key": "Sid", "fields": {"To": "to", "Status": "status", "Price": "price", "AccountId": "account_id"}},
        ),
        _seed_tool(
            "create_message", "create", "message", {k: v for k, v in msg_props.items() if k != "Sid"}, ["AccountId", "To"],
            {"fields": {"To": "to", "Status": "status", "Price": "price", "AccountId": "account_id"}},
        ),
    )  # fmt: skip
    return EnvSpec(
        name="messaging", class_name="Messaging", description="Accounts send messages.",
        coordinate=Coordinate.for_domain(LOGISTICS_DOMAIN_ID, ["tool_use"], ["tool_parameter_grounding"]),
        candidate_id="messaging", seed_ids=(), entities=(account, message, note),
        relations=(Relation(source="message", attr="account_id", target="account"),
                   Relation(source="note", attr="account_id", target="account")),
        rules=rules, tools=tools,
    )  # fmt: skip


@pytest.fixture(scope="module")
def spec() -> EnvSpec:
    return messaging_spec()


@pytest.fixture(scope="module")
def s0(spec: EnvSpec) -> dict[str, Any]:
    return generate_state(spec, seed=4)


def test_state_keys_are_typed_and_tables_keyed_by_str(spec: EnvSpec, s0: dict[str, Any]) -> None:
    accounts, messages, notes = s0["accounts"], s0["messages"], s0["notes"]
    ids = [rec["account_id"] for rec in accounts.values()]
    assert all(type(i) is int for i in ids) and sorted(ids) == list(range(1, len(ids) + 1))
    assert all(key == str(rec["account_id"]) for key, rec in accounts.items())
    for key, rec in messages.items():
        assert key == rec["sid"] and re.fullmatch("SM[0-9a-fA-F]{32}", key)
        assert type(rec["account_id"]) is int and str(rec["account_id"]) in accounts
    assert len(set(messages)) == len(messages)
    assert all(re.fullmatch(r"NOTE-\d{3}", k) for k in notes)  # undeclared keys as before
    assert all(
        type(rec["account_id"]) is int and str(rec["account_id"]) in accounts for rec in notes.values()
    )
    assert state_violations(spec, s0) == []
    assert generate_state(spec, seed=4) == s0 and generate_state(spec, seed=5) != s0


def test_state_values_satisfy_declared_schemas(spec: EnvSpec) -> None:
    for seed in range(4):
        state = generate_state(spec, seed=seed)
        for e in spec.entities:
            for rec in state[e.table].values():
                for a in e.attributes:
                    if a.declared is not None:
                        assert _valid(a.declared, rec[a.name]), f"{e.name}.{a.name}={rec[a.name]!r}"
    account = spec.entity("account")
    email = account.attribute("email")
    assert email is not None and "@" in make_value(
        email, account, random.Random(0), 3
    )  # loose, still an e-mail


def test_state_violations_check_typed_keys(spec: EnvSpec, s0: dict[str, Any]) -> None:
    broken = json.loads(json.dumps(s0))  # keys stay str, typed values stay typed
    key = sorted(broken["accounts"])[0]
    broken["accounts"][key]["account_id"] = key  # the string form where an int is declared
    problems = state_violations(spec, broken)
    assert any("account_id" in p and "expected" in p for p in problems), problems
    msg = sorted(broken["messages"])[0]
    broken["messages"][msg]["account_id"] = 99999
    assert any("points to missing account" in p for p in state_violations(spec, broken))


def test_valid_calls_name_records_by_typed_keys(spec: EnvSpec, s0: dict[str, Any]) -> None:
    for tool in spec.tools:
        props = tool.parameters["properties"]
        for args in valid_calls(spec, s0, tool, random.Random(7)):
            for p, v in args.items():
                assert _valid(props[p], v), f"{tool.name}.{p}={v!r} breaks {props[p]}"
            if tool.name == "get_account":
                assert type(args["account_id"]) is int and str(args["account_id"]) in s0["accounts"]
            if tool.name in ("fetch_message", "update_message"):
                assert args["Sid"] in s0["messages"]
            if "AccountId" in args:
                assert type(args["AccountId"]) is int and str(args["AccountId"]) in s0["accounts"]
    first = [next(valid_calls(spec, s0, t, random.Random(1))) for t in spec.tools]
    assert first == [next(valid_calls(spec, s0, t, random.Random(1))) for t in spec.tools]


def test_invalid_calls_break_the_schema_or_name_no_record(spec: EnvSpec, s0: dict[str, Any]) -> None:
    for tool in spec.tools:
        props = tool.parameters["properties"]
        bad = invalid_calls(spec, s0, tool)
        assert bad == invalid_calls(spec, s0, tool)
        kinds = {what.split(" `")[0] for what, _ in bad}
        assert "ill-typed" in kinds, tool.name
        for what, args in bad:
            if what.startswith("ill-typed"):
                p = what.split("`")[1]
                assert not _valid(props[p], args[p], formats=False), (tool.name, what, args[p])
            if what.startswith("unknown"):
                p = what.split("`")[1]
                assert _valid(props[p], args[p]) and str(args[p]) not in s0[spec.entity(tool.entity).table]
    unknown = dict(invalid_calls(spec, s0, spec.tool("get_account")))["unknown `account_id`"]
    assert type(unknown["account_id"]) is int


def test_a_deletable_entity_keeps_a_record_nothing_refers_to(spec: EnvSpec) -> None:
    for seed in range(5):
        state = generate_state(spec, seed=seed, sizes={"account": 3, "message": 14, "note": 14})
        referred = {
            str(r["account_id"])
            for t in ("messages", "notes")
            for r in state[t].values()
            if r["account_id"] is not None
        }
        free = set(state["accounts"]) - referred
        assert free and state_violations(spec, state) == []
        args = next(valid_calls(spec, state, spec.tool("delete_account"), random.Random(seed)))
        assert str(args["account_id"]) in free and type(args["account_id"]) is int


def test_values_are_given_the_type_their_parameter_declares() -> None:
    from agentomnia.envs.values import as_declared

    assert as_declared("4", {"type": "integer", "format": "int64"}) == 4
    assert as_declared("2.5", {"type": "number"}) == 2.5
    assert as_declared("available", {"type": "array", "items": {"type": "string"}}) == ["available"]
    assert as_declared("7", {"type": "array", "items": {"type": "integer"}}) == [7]
    assert as_declared("USE-004", {"type": "integer"}) == "USE-004"  # left for validation to refuse
    assert as_declared("4", {"type": "string"}) == "4" and as_declared(4, {"type": "integer"}) == 4
    assert as_declared(None, {"type": "integer"}) is None
    # a seed's integer id handed to a domain tool whose `pet_id` takes ids as text
    assert as_declared(9, {"type": "string"}) == "9" and as_declared(True, {"type": "string"}) is True


def test_nested_objects_carry_what_they_declare() -> None:
    tag = {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}}
    pet = {"type": "object", "properties": {"category": tag, "tags": {"type": "array", "items": tag}}}
    empty = fields = 0
    for seed in range(40):
        v = schema_value(pet, random.Random(seed), name="pet")
        for obj in [v.get("category"), *(v.get("tags") or [])]:
            if obj is not None:
                empty += obj == {}
                fields += len(obj)
    assert empty == 0
    assert fields > 0


def test_a_measurement_reads_on_its_own_scale_whatever_the_schema_allows() -> None:
    """A seed's encounter allows a heart rate of 20-250: the values made read as heart rates, not as
    whatever that interval holds (22 beats a minute, an oxygen saturation of 51%, a body at 31 °C)."""
    from agentomnia.envs.semantic import number_for
    from agentomnia.envs.spec import AttributeSpec
    from agentomnia.envs.values import schema_value

    rng = random.Random(7)
    rates = [
        schema_value({"type": "integer", "minimum": 20, "maximum": 250}, rng, name="heart_rate_bpm")
        for _ in range(50)
    ]
    assert all(58 <= r <= 125 for r in rates) and len(set(rates)) > 10
    spo2 = [schema_value({"type": "number", "maximum": 100}, rng, name="spo2_percent") for _ in range(50)]
    assert all(93 <= s <= 100 for s in spo2)
    assert all(60 <= schema_value({"type": "integer"}, rng, name="diastolic_mmhg") <= 95 for _ in range(20))
    # the platform's own attributes use the same scales
    assert all(58 <= number_for(AttributeSpec(name="pulse", type="int"), rng) <= 125 for _ in range(20))
    # a temperature taken at a visit is a body's; one in a room is not
    from agentomnia.envs.values import LEAF_WHERE

    token = LEAF_WHERE.set("encounter.vitals")
    try:
        body = [
            schema_value({"type": "number", "minimum": 30, "maximum": 45}, rng, name="temperature_c")
            for _ in range(30)
        ]
    finally:
        LEAF_WHERE.reset(token)
    assert all(36.3 <= t <= 39.5 for t in body)
    assert all(
        36.3 <= number_for(AttributeSpec(name="temperature_c", type="float"), rng, "visit") <= 39.5
        for _ in range(20)
    )
    assert any(
        not 36.3 <= number_for(AttributeSpec(name="temperature_c", type="float"), rng, "room") <= 39.5
        for _ in range(20)
    )
    # a schema that leaves no room for the scale still wins
    assert schema_value({"type": "integer", "minimum": 200, "maximum": 210}, rng, name="heart_rate") >= 200


def test_a_key_a_date_pattern_pins_is_a_month_back_from_the_clock() -> None:
    """A budget kept per month (`/budgets/{month}`, `^\\d{4}-(0[1-9]|1[0-2])$`) is keyed 2026-03,
    2026-02, ..., never '0797-08' or '4983-12'; a pattern that pins no date is drawn as before."""
    month = {"type": "string", "pattern": r"^\d{4}-(0[1-9]|1[0-2])$"}
    taken: set[str] = set()
    keys = []
    for i in range(1, 15):
        key = schema_key(month, random.Random(i), index=i, taken=taken, name="budget_id")
        taken.add(str(key))
        keys.append(key)
    assert keys[:3] == ["2026-03", "2026-02", "2026-01"] and len(set(keys)) == 14
    assert all(2024 <= int(str(k)[:4]) <= 2026 for k in keys)
    code = {"type": "string", "pattern": r"^[A-Z]{3}\d{4}$"}
    assert re.fullmatch(r"[A-Z]{3}\d{4}", str(schema_key(code, random.Random(1), index=1, name="code")))


def test_a_nested_number_runs_to_what_its_name_says() -> None:
    """A timesheet day's `worked_hours` inside a seed's object is a day's hours (was 291.59 beside 370.02
    hours of leave); a week's `total_hours` a week's, a `quantity` a count; both within the schema."""
    day = {"type": "object", "required": ["worked_hours", "leave_hours", "quantity"], "properties": {
        "worked_hours": {"type": "number", "minimum": 0}, "leave_hours": {"type": "number", "minimum": 0},
        "quantity": {"type": "integer", "minimum": 0}}}  # fmt: skip
    for seed in range(25):
        made = schema_value(day, random.Random(seed))
        assert 0.5 <= made["worked_hours"] <= 12 and 0.5 <= made["leave_hours"] <= 12, made
        assert 1 <= made["quantity"] <= 48, made
        week = schema_value({"type": "number", "minimum": 0}, random.Random(seed), name="total_hours")
        assert 8 <= week <= 48
