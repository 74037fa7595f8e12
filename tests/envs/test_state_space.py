"""State-space construction: id parameters become entities and references, roles become people,
enums keep the seed's spelling, write verbs imply lifecycle moves, and a knowledge base merges in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentomnia.envs.spec import EnvSpec, spec_problems
from agentomnia.envs.state_space import StateSpaceReport, attribute_from_schema, build_state_space
from agentomnia.seeds.parsers import parse_mcp
from tests.fixtures.domains import PARCEL, SeedSpec
from tests.fixtures.mock import MOCK

EXPENSE_TOOLS: dict[str, Any] = {
    "tools": [
        {"name": "approve_expense", "description": "Approve an expense.",
         "inputSchema": {"type": "object", "properties": {
             "expense_id": {"type": "string"}, "approver_id": {"type": "string"}, "amount": {"type": "number"},
             "category": {"type": "string", "enum": ["travel", "meals"]}}, "required": ["expense_id"]}},
        {"name": "get_expense", "description": "Show an expense.", "annotations": {"readOnlyHint": True},
         "inputSchema": {"type": "object", "properties": {"expense_id": {"type": "string"}}}},
        {"name": "tag_widget", "description": "Tag a widget with an expense.",
         "inputSchema": {"type": "object", "properties": {"expense_id": {"type": "string"}, "widget_id": {"type": "string"}}}},
    ]
}  # fmt: skip
EXPENSES = SeedSpec("expenses", EXPENSE_TOOLS)


@pytest.fixture(scope="module")
def expenses() -> tuple[EnvSpec, StateSpaceReport]:
    """The expense seed in a domain stripped of its knowledge base: everything comes from the seed."""
    bare = EXPENSES.domain().model_copy(update={"knowledge": None})
    seed = parse_mcp(EXPENSE_TOOLS, source=EXPENSES.source, name=EXPENSES.name)
    return build_state_space(EXPENSES.candidate(), [seed], bare)


def test_id_parameters_become_entities_and_references(expenses: tuple[EnvSpec, StateSpaceReport]) -> None:
    spec, report = expenses
    assert {e.name for e in spec.entities} == {"expense", "user", "widget"}
    assert report.kb_entities == 0 and sorted(report.seed_entities_added) == ["expense", "user", "widget"]
    widget = spec.entity("widget")
    ref = widget.attribute("expense_id")
    assert ref is not None and ref.type == "ref" and ref.ref == "expense"
    assert {(r.source, r.attr, r.target) for r in spec.relations} == {
        ("expense", "approver_id", "user"),
        ("widget", "expense_id", "expense"),
    }
    assert report.tool_entities == {
        "approve_expense": "expense",
        "get_expense": "expense",
        "tag_widget": "widget",
    }
    assert spec_problems(spec) == []


def test_a_made_up_name_only_for_records_that_have_one_or_nothing_else(
    expenses: tuple[EnvSpec, StateSpaceReport],
) -> None:
    """A person is called by a name, so a seed's `user` gets one; an expense is known by its amount and
    category, so no title is invented for it; a bare widget holds nothing else to be named by."""
    spec, _ = expenses
    named = {
        e.name for e in spec.entities if (a := e.attribute("name")) is not None and a.source == "derived"
    }
    assert named == {"user", "widget"}


def test_roles_map_to_people_enums_keep_their_spelling_and_verbs_imply_moves(
    expenses: tuple[EnvSpec, StateSpaceReport],
) -> None:
    spec, report = expenses
    assert report.roles_mapped == {"approver": "user"}
    expense = spec.entity("expense")
    category, status, amount = (expense.attribute(n) for n in ("category", "status", "amount"))
    assert category is not None and category.enum == ("travel", "meals")
    assert status is not None and "approved" in status.enum and status.source == "derived"
    assert amount is not None and amount.type == "money"
    assert spec.entity("user").label_attribute is not None  # a label is added where the seed gave none


@pytest.mark.parametrize(
    ("name", "schema", "expected"),
    [
        ("due", {"type": "string", "format": "date"}, "date"),
        ("at", {"type": "string", "format": "date-time"}, "datetime"),
        ("refund", {"type": "number"}, "money"),
        ("weight", {"type": "number"}, "float"),
        ("count", {"type": "integer"}, "int"),
        ("tags", {"type": "array"}, "list"),
        ("level", {"type": ["null", "string"], "enum": ["low", "high"]}, "enum"),
        ("only", {"type": "string", "enum": ["one"]}, "str"),
    ],
)
def test_attribute_types_follow_the_json_schema(name: str, schema: dict[str, Any], expected: str) -> None:
    assert attribute_from_schema(name, schema, set()).type == expected


def test_a_knowledge_base_entity_absorbs_the_seed_entity_of_the_same_name() -> None:
    spec, report = build_state_space(MOCK.candidate(), [MOCK.seed()], MOCK.domain())
    assert report.kb_entities > 0 and "task" in report.seed_entities_merged
    task = spec.entity("task")
    assert task.source == "merged" and task.attribute("user_id") is not None  # the seed's own parameter
    assert "user" in report.seed_entities_added  # the domain knew members, the seed names users


def test_the_parcel_seed_keeps_its_enum_and_references_its_shipments() -> None:
    spec, report = build_state_space(PARCEL.candidate(), [PARCEL.seed()], PARCEL.domain())
    claim = spec.entity("claim")
    reason = claim.attribute("reason")
    assert reason is not None and set(reason.enum) >= {"damaged", "lost", "late"}
    assert any(r.source == "claim" and r.target == "shipment" for r in spec.relations)
    assert report.tool_entities["approve_claim"] == "claim"


EV_TOOLS: dict[str, Any] = {
    "tools": [
        {"name": "start_session", "description": "Start charging a vehicle.",
         "inputSchema": {"type": "object", "properties": {
             "charger_id": {"type": "string"}, "vehicle_id": {"type": "string"}}, "required": ["charger_id"]}},
        {"name": "get_session", "description": "Show a session.", "annotations": {"readOnlyHint": True},
         "inputSchema": {"type": "object", "properties": {"session_id": {"type": "string"}}, "required": ["session_id"]}},
        {"name": "cancel_reservation", "description": "Cancel a reservation.",
         "inputSchema": {"type": "object", "properties": {"reservation_id": {"type": "string"}}, "required": ["reservation_id"]}},
        {"name": "get_station", "description": "Show a station.", "annotations": {"readOnlyHint": True},
         "inputSchema": {"type": "object", "properties": {"station_id": {"type": "string"}}, "required": ["station_id"]}},
    ]
}  # fmt: skip


def test_a_seeds_short_name_for_a_domain_entity_is_that_entity() -> None:
    """An EV seed's `session` and `reservation` are the domain's charging_session and
    charger_reservation (one entity each ends in that name): one world, not two side by side. A name
    the domain has no single entity for (`station`) stays the seed's own."""
    ev = SeedSpec("ev-seed", EV_TOOLS, domain_id=10074)
    spec, report = build_state_space(ev.candidate(), [ev.seed()], ev.domain())
    assert report.kb_used
    assert report.aliases == {
        "session": "charging_session",
        "reservation": "charger_reservation",
        "vehicle": "electric_vehicle",  # named by start_session's vehicle_id
    }
    assert report.tool_entities["get_session"] == "charging_session"
    assert report.tool_entities["cancel_reservation"] == "charger_reservation"
    names = {e.name for e in spec.entities}
    assert not {"session", "reservation", "vehicle"} & names and "station" in names
    assert spec_problems(spec) == []


def test_a_list_answers_envelope_is_not_read_as_the_records_it_lists() -> None:
    from agentomnia.envs.state_space import _object_properties

    record = {
        "type": "object",
        "properties": {"room_id": {"type": "string"}, "capacity": {"type": "integer"}},
    }
    envelope = {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": record},
            "next_cursor": {"type": "string"},
            "total": {"type": "integer"},
        },
    }
    assert set(_object_properties(envelope)) == {"room_id", "capacity"}
    assert set(_object_properties({"type": "array", "items": envelope})) == {"room_id", "capacity"}
    # a record that holds one list among fields of its own stays that record
    booking = {
        "type": "object",
        "properties": {
            "booking_id": {"type": "string"},
            "guests": {"type": "array", "items": {"type": "string"}},
        },
    }
    assert set(_object_properties(booking)) == {"booking_id", "guests"}


def test_a_record_is_never_labelled_by_a_link_or_by_who_changed_it() -> None:
    from agentomnia.envs.spec import AttributeSpec, EntitySpec

    def entity(*attrs: tuple[str, str]) -> EntitySpec:
        return EntitySpec(
            name="thing", table="things", key="thing_id", description="A thing.", id_prefix="THI",
            attributes=tuple(AttributeSpec(name=n, type=t) for n, t in (("thing_id", "str"), *attrs)),
        )  # fmt: skip

    reading = entity(("value", "float"), ("photo_url", "str"))
    assert reading.label_attribute is None  # "meter reading MET-011", never "(https://...)"
    setpoint = entity(("dose_mg_l", "float"), ("changed_by", "str"))
    assert setpoint.label_attribute is None
    order = entity(("approver", "str"), ("photo_url", "str"))
    assert order.label_attribute is not None and order.label_attribute.name == "approver"
    named = entity(("changed_by", "str"), ("name", "str"))
    assert named.label_attribute is not None and named.label_attribute.name == "name"


VET_TOOLS: dict[str, Any] = {
    "tools": [
        {"name": "register_patient", "description": "Register a pet as a patient of the practice.",
         "inputSchema": {"type": "object", "properties": {
             "patient_id": {"type": "string"}, "name": {"type": "string"},
             "born_on": {"type": "string", "format": "date"}, "phone_number": {"type": "string"}},
             "required": ["patient_id", "name"]}},
        {"name": "get_patient", "description": "Show a patient.", "annotations": {"readOnlyHint": True},
         "inputSchema": {"type": "object", "properties": {"patient_id": {"type": "string"}}, "required": ["patient_id"]}},
    ]
}  # fmt: skip


def test_a_fact_the_seed_names_its_own_way_is_kept_once() -> None:
    """The seed's `born_on` and the domain's `birth_date` are one date: the domain's gives way, so a
    patient never holds two birth dates that disagree. What the seed declares stays as declared."""
    vet = SeedSpec("vet-seed", VET_TOOLS, domain_id=20146)
    spec, report = build_state_space(vet.candidate(), [vet.seed()], vet.domain())
    patient = spec.entity("patient")
    born = patient.attribute("born_on")
    assert (
        born is not None and born.source == "seed" and born.declared == {"type": "string", "format": "date"}
    )
    assert patient.attribute("birth_date") is None
    assert report.attributes_merged == {"patient.birth_date": "the seed's born_on records the same fact"}
    assert patient.attribute("name") is not None  # the same name is one attribute already, not a merge
    assert spec_problems(spec) == []


def test_one_fact_under_two_names_or_in_two_units() -> None:
    from agentomnia.envs.naming import same_fact, same_unit, unit_factor

    assert same_fact("started_at", "start_time") and same_fact("avg_hr", "average_heart_rate")
    assert same_fact("distance_km", "distance_m") and same_fact("moving_time_s", "moving_seconds")
    assert same_fact("target_km", "target")  # with and without its unit
    assert not same_fact("price", "price_min")  # a minimum price, not minutes
    assert not same_fact("distance_km", "elevation_gain_m") and not same_fact("weight_kg", "height_cm")
    assert not same_fact("duration_minutes", "weight_kg")  # two kinds of unit are two facts
    assert same_unit("starts_at", "start_at") and not same_unit("distance_km", "distance_m")
    assert (
        unit_factor("distance_km", "distance_m") == 1000.0
        and unit_factor("moving_time_s", "moving_seconds") == 1.0
    )
    assert unit_factor("target_km", "target") == 1.0 and unit_factor("ride_minutes", "ride_h") == 60 / 3600
    # one event dated under two names: the same verb or a synonym, with any date ending
    assert same_fact("given_on", "administered_on") and same_fact("issued_on", "issue_date")
    assert same_fact("due_date", "due_on") and same_fact("date_given", "given_at")
    assert not same_fact("given_on", "expires_on") and not same_fact("seen_at", "seed_at")


STRIDE = Path(__file__).parents[2] / "agentomnia/seeds/corpus/openapi/stride-activity-tracker.json"


def test_a_seed_that_names_its_domains_facts_its_own_way_keeps_each_once() -> None:
    """The activity tracker's OpenAPI spec says `start_time`, `average_heart_rate` and `distance_m`;
    its domain says `started_at`, `avg_hr` and `distance_km`. Names no operation of the domain uses
    give way to the seed's; `distance_km`, which the domain's operations add up, stays, and every
    record's `distance_m` is the same distance in metres."""
    from agentomnia.envs.state import generate_state
    from agentomnia.seeds.inference import propose_offline
    from agentomnia.seeds.ingest import ingest
    from agentomnia.taxonomy import load_taxonomy

    [seed] = ingest([STRIDE]).accepted
    domain = load_taxonomy().by_id(10086)
    spec, report = build_state_space(propose_offline(seed, domain, 1.0, 0.0, [1.0]), [seed], domain)
    activity = spec.entity("activity")
    names = {a.name for a in activity.attributes}
    assert {"start_time", "average_heart_rate", "distance_m", "distance_km"} <= names
    assert not names & {"started_at", "avg_hr"}
    assert (
        report.attributes_merged["activity.avg_hr"] == "the seed's average_heart_rate records the same fact"
    )
    assert spec_problems(spec) == []
    state = generate_state(spec, seed=0)
    activities = list(state["activities"].values())
    assert activities and all(
        r["distance_m"] == pytest.approx(r["distance_km"] * 1000)
        for r in activities
        if r.get("distance_km") is not None
    )


def test_a_copy_of_a_fact_takes_its_own_unit_and_shape() -> None:
    from agentomnia.envs.spec import AttributeSpec
    from agentomnia.envs.state import _converted

    def attr(name: str, kind: str) -> AttributeSpec:
        return AttributeSpec(name=name, type=kind)  # type: ignore[arg-type]

    assert _converted(85.65, attr("distance_km", "float"), attr("distance_m", "float")) == 85650.0
    assert _converted(2.5, attr("moving_time_h", "float"), attr("moving_seconds", "int")) == 9000
    starts, start_time = attr("starts_at", "datetime"), attr("start_time", "str")
    # a seed's time of day beside the domain's timestamp is that timestamp's time, in its own shape
    assert _converted("2025-12-15T16:45:00", starts, start_time, "07:30") == "16:45"
    assert _converted("2025-12-15T16:45:00", starts, attr("start_date", "date")) == "2025-12-15"
    assert (
        _converted("2025-12-15T16:45:00", starts, start_time, "early") is None
    )  # not a time of day: left alone


def test_a_pets_breed_is_one_of_its_species_and_its_weight_and_age_are_its_breeds() -> None:
    """The vet's vocabulary links species, breed and weight: a patient is never a cat of breed
    'Labrador Retriever' (was 11 of 56 patients over five states), nor a 79.6 kg rabbit, nor born in
    1988 like a person (a patient with a species is an animal)."""
    from datetime import date

    from agentomnia.envs.state import generate_state
    from agentomnia.taxonomy.vocab import VocabEntry, vocab_for

    vet = SeedSpec("vet-seed", VET_TOOLS, domain_id=20146)
    spec, _ = build_state_space(vet.candidate(), [vet.seed()], vet.domain())
    vocab = vocab_for(20146)
    group = vocab.group("patient", "breed") if vocab is not None else None
    assert group is not None and group.attrs == ("species", "breed", "weight_kg")
    species_of = {row[1]: row[0] for row in group.rows}
    weight_of = {row[1]: row[2] for row in group.rows}
    assert isinstance(weight_of["Holland Lop"], VocabEntry) and weight_of["Holland Lop"].max < 3
    patients = [r for seed in range(5) for r in generate_state(spec, seed=seed)["patients"].values()]
    pairs = [(r["species"], r["breed"]) for r in patients if r.get("breed") is not None]
    assert len(pairs) > 20 and all(species_of[breed] == species for species, breed in pairs), pairs
    weighed = [
        (r["breed"], r["weight_kg"]) for r in patients if r.get("breed") and r.get("weight_kg") is not None
    ]
    assert len(weighed) > 20
    for breed, kg in weighed:
        assert weight_of[breed].min <= kg <= weight_of[breed].max, (breed, kg)
    born = [date.fromisoformat(str(r["born_on"])[:10]) for r in patients if r.get("born_on")]
    assert born and all(2026 - d.year <= 16 for d in born), born


def test_a_linked_enum_column_lists_the_enums_own_values() -> None:
    from agentomnia.taxonomy.knowledge import load_knowledge
    from agentomnia.taxonomy.vocab import LinkedGroup, group_problem

    patient = next(e for e in load_knowledge()[20146].entities if e.name == "patient")
    rows = tuple((s, f"Breed {n}") for n, s in enumerate(["dog", "cat", "dog", "cat", "dog", "hamster"]))
    problem = group_problem(LinkedGroup(attrs=("species", "breed"), rows=rows), patient, {}, {}, set())
    assert problem is not None and "'hamster'" in problem and "not one of its values" in problem


def test_a_linked_rows_number_may_be_a_range_of_its_own() -> None:
    """A row's number may be a range (`{min: 9, max: 14}`): read as one, checked against the domain's
    range rule, refused where it is no range or sits in a text column."""
    from agentomnia.taxonomy.knowledge import load_knowledge
    from agentomnia.taxonomy.vocab import LinkedGroup, VocabEntry, _group, group_problem

    group, why = _group({"attrs": ["species", "breed", "weight_kg"],
                         "rows": [["dog", "Beagle", {"min": 9, "max": 14, "decimals": 1}], ["cat", "Siamese", 4.2]]})  # fmt: skip
    assert group is not None and why == ""
    assert (
        group.rows[0][2] == VocabEntry(kind="range", min=9.0, max=14.0, decimals=1)
        and group.rows[1][2] == 4.2
    )
    for cell, said in (({"min": 5, "max": 2}, "min above max"), ({"pattern": "x"}, "min: X, max: Y")):
        bad, why = _group({"attrs": ["breed", "weight_kg"], "rows": [["Beagle", cell]]})
        assert bad is None and said in why, why
    patient = next(e for e in load_knowledge()[20146].entities if e.name == "patient")
    rows = tuple(
        (s, f"Breed {n}", VocabEntry(kind="range", min=1.0, max=9.0))
        for n, s in enumerate(["dog", "cat"] * 3)
    )
    ok = LinkedGroup(attrs=("species", "breed", "weight_kg"), rows=rows)
    assert group_problem(ok, patient, {}, {}, set()) is None
    heavy = LinkedGroup(
        attrs=("species", "breed", "weight_kg"),
        rows=(*rows[:-1], ("cat", "Breed 9", VocabEntry(kind="range", min=1.0, max=900.0))),
    )
    problem = group_problem(heavy, patient, {}, {("patient", "weight_kg"): (0.05, 120.0)}, set())
    assert problem is not None and "900" in problem and "range rule" in problem
    texts = LinkedGroup(
        attrs=("species", "breed"),
        rows=tuple(
            (s, VocabEntry(kind="range", min=1.0, max=n)) for n, s in enumerate(["dog", "cat"] * 3, 2)
        ),
    )
    problem = group_problem(texts, patient, {}, {}, set())
    assert problem is not None and "only a number's cell may be a range" in problem


def test_a_request_gives_a_species_that_goes_with_its_breed() -> None:
    """The values a request states for a new patient come from one linked row too: never "breed
    'Labrador Retriever', species reptile"."""
    from agentomnia.envs.semantic import linked_options
    from agentomnia.envs.state import world_for

    vet = SeedSpec("vet-seed", VET_TOOLS, domain_id=20146)
    spec, _ = build_state_space(vet.candidate(), [vet.seed()], vet.domain())
    patient, world = spec.entity("patient"), world_for(spec)
    options = ["dog", "cat", "rabbit", "bird", "reptile"]
    assert linked_options(world, patient, "species", {"breed": "Labrador Retriever"}, options) == ["dog"]
    assert linked_options(world, patient, "species", {"breed": "Holland Lop"}, options) == ["rabbit"]
    # nothing held yet: what the group lists (a reptile has no row), so the breed drawn after agrees
    assert "reptile" not in linked_options(world, patient, "species", {}, options)
    assert linked_options(world, patient, "name", {}, ["Rex"]) == []  # no group links a name
