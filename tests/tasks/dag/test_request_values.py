"""What a DAG request asks to write reads like the domain: numbers on the domain's own scale (the
value vocabulary's ranges), and a field with a unit suffix said with its unit."""

from __future__ import annotations

import random
from datetime import date, datetime
from pathlib import Path

import networkx as nx

from agentomnia.envs.spec import AttributeSpec, EntitySpec, EnvSpec, ToolSpec
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.dag.augment import VirtualNode
from agentomnia.tasks.dag.describe import field_label, plural, stated, words
from agentomnia.tasks.dag.generate import Generator, _naming
from agentomnia.taxonomy.vocab import vocab_for


def test_new_numbers_come_from_the_domains_ranges(
    freight_spec: EnvSpec, freight_bundle: Bundle, freight_sandbox: Sandbox
) -> None:
    vocab = vocab_for(freight_spec.coordinate.taxonomy_id)
    assert vocab is not None
    ranged = [
        (tool, param, entry)
        for tool in freight_spec.tools
        if tool.kind == "write"
        for param, attr in tool.binding.get("fields", {}).items()
        if (entry := vocab.values.get(tool.entity, {}).get(attr)) is not None and entry.kind == "range"
    ]
    assert len(ranged) >= 3
    session = freight_sandbox.open(freight_bundle, freight_bundle.s0)
    try:
        gen = Generator(freight_spec, session, nx.MultiDiGraph(), random.Random(5), allow_ids=True)
        for tool, param, entry in ranged:
            for _ in range(5):
                value = gen._new_value(tool, param, None)
                assert value is not None and entry.min <= value <= entry.max, (tool.name, param, value, entry)
    finally:
        session.close()


def test_a_time_named_by_its_preposition_is_said_as_a_time() -> None:
    # "the area with the latest time", never "the area with the latest at"
    assert field_label("at") == "time" and field_label("timestamp") == "time"
    assert field_label("created_at") == "created at"
    # a noun before "at" names a time: "the latest start time", "with pickup time between ..."
    assert field_label("start_at") == "start time" and field_label("pickup_at") == "pickup time"
    assert field_label("expires_at") == "expires at" and field_label("in_bed_at") == "in bed at"
    from agentomnia.tasks.dag.describe import between

    assert between("start_at", "2025-10-12", "2025-12-27") == (
        "with start time between October 12, 2025 and December 27, 2025"
    )


def test_a_unit_suffix_is_said_as_its_unit() -> None:
    assert field_label("water_temp_c") == "water temp (°C)"
    assert field_label("max_wind_kmh") == "max wind (km/h)"
    assert field_label("travel_buffer_min") == "travel buffer (minutes)"
    assert field_label("discount_pct") == "discount (%)"
    # rates and densities spread over two parts of the name
    assert field_label("design_flow_m3_h") == "design flow (m³/h)"
    assert field_label("dose_mg_l") == "dose (mg/L)" and field_label("floor_area_m2") == "floor area (m²)"
    assert field_label("capacity_pallets") == "capacity (pallets)"
    # a rate written out: `dose_mg_per_kg` is a dose in mg per kg, never "dose mg per (kg)"
    assert (
        field_label("dose_mg_per_kg") == "dose (mg/kg)"
        and field_label("fee_usd_per_hours") == "fee (USD/hour)"
    )
    assert field_label("calls_per_day") == "calls per day"  # no unit before "per": words
    assert field_label("pallets") == "pallets" and field_label("empty_pallets") == "empty pallets"
    # a suffix that is no unit there stays a word
    assert field_label("vitamin_c") == "vitamin c" and field_label("temp_min") == "temp min"
    assert field_label("grade_a") == "grade a" and field_label("name") == "name"
    # a name that is a kind of figure and a unit alone says what the unit measures
    assert (
        field_label("planned_km") == "planned distance (km)"
        and field_label("expected_kg") == "expected weight (kg)"
    )
    assert (
        field_label("estimated_minutes") == "estimated time (minutes)"
        and field_label("runtime_s") == "runtime (seconds)"
    )
    assert (
        stated("payback_months", "16.5") == "payback 16.5 months" and stated("age_years", "1") == "age 1 year"
    )
    assert stated("quantity_t", "1,395.69") == "quantity 1,395.69 t" and field_label("time_t") == "time t"
    # an amount named by a participle alone is said as an amount; a yes/no field of that name is not
    assert (
        field_label("committed", "money") == "committed amount"
        and field_label("refunded", "bool") == "refunded"
    )
    assert stated("allocated", "217,416", "money") == "allocated amount 217,416"


def test_a_seeds_camel_case_names_are_said_as_words() -> None:
    """An OpenAPI seed's `userStatus` reads "user status" and its `petId` names the pet; an acronym
    is left as written."""
    assert words("userStatus") == "user status" and words("shipDate") == "ship date"
    assert words("SKUCode") == "SKUCode" and words("monthly_fee") == "monthly fee"
    assert field_label("photoUrls") == "photo URLs"
    assert Generator._ref_word("petId") == "pet" and Generator._ref_word("pet_id") == "pet"
    assert Generator._ref_word("Id") == "Id" and Generator._ref_word("PID") == "PID"


def test_a_field_named_for_a_direction_is_said_as_people_say_it() -> None:
    """ "the destination cost center of the transfer", "its previous status", "the end date", "the
    sender": never "the to cost center" or "with to location set to ..."; a to-do stays one."""
    assert (
        words("to_cost_center") == "destination cost center" and words("from_location") == "source location"
    )
    assert words("from_status") == "previous status" and words("toStatus") == "new status"
    assert words("to_date") == "end date" and words("from_date") == "start date"
    assert words("to_currency") == "target currency" and words("from_user") == "sender"
    assert (
        Generator._ref_word("to_user_id") == "to_user"
        and words(Generator._ref_word("to_user_id")) == "recipient"
    )
    assert words("to_do") == "to do" and words("total_to_pay") == "total to pay"
    assert field_label("to_location") == "destination location"


def test_an_abbreviation_is_said_as_people_write_it() -> None:
    """ "the AP invoice", "the NCRs of that line", "its pH level": never "the ap invoice" or "set the
    ncr"; an hour count is written out; basis points and a sow stay words."""
    assert words("ap_invoice") == "AP invoice" and words("capa_id") == "CAPA ID"
    assert words("ncrs") == "NCRs" and words("xp_reward") == "XP reward" and words("plcs") == "PLCs"
    assert words("ph_level") == "pH level" and words("rx_number") == "Rx number"
    assert words("pos_terminal") == "POS terminal" and words("po_lines") == "PO lines"
    assert words("duration_hrs") == "duration hours" and words("spread_bps") == "spread bps"
    assert words("sow_id") == "sow ID" and words("apps") == "apps" and words("gross") == "gross"
    assert field_label("voltage_kv") == "voltage (kV)" and field_label("duration_hrs") == "duration (hours)"
    # a rate per day is one unit ("capacity (m³/day)", never "capacity m3 day"); coordinates are words
    assert field_label("capacity_m3_day") == "capacity (m³/day)"
    assert field_label("flow_m3_per_day") == "flow (m³/day)" and field_label("start_day") == "start day"
    assert (
        words("gps_lng") == "GPS longitude" and words("lat") == "latitude" and words("alt_text") == "alt text"
    )
    # a field named for its unit alone says what it measures: "a volume of 200 ml", never "ml 200"
    assert field_label("ml") == "volume (ml)" and field_label("minutes") == "duration (minutes)"
    # a rate keeps its unit after "per": "price per kWh 0.36", never "price per 0.36 kWh"
    assert stated("price_per_kwh", "0.36") == "price per kWh 0.36"
    assert stated("idle_fee_per_min", "0.1") == "idle fee per minute 0.1"
    # a to-do is one in the plural too ("to-dos", never "todoes"); SOPs, Roth IRAs and LUFS in capitals
    assert words("todo") == "to-do" and plural("todo") == "to-dos" and plural("todo_item") == "to-do items"
    assert words("sop_version") == "SOP version" and words("roth_ira") == "Roth IRA"
    assert words("rn") == "RN" and words("phd") == "PhD"  # a nurse's credential, a degree
    assert field_label("loudness_lufs") == "loudness (LUFS)"
    # a price in cents is a price ("the price in cents of ...", never "what are the price cents")
    assert field_label("price_cents") == "price (cents)" and words("qty_on_hand") == "quantity on hand"


def _entity(name: str, *attributes: AttributeSpec) -> EntitySpec:
    """An entity `name` keyed by `<name>_id`, with `attributes` beside its key."""
    key = AttributeSpec(name=f"{name}_id", type="str")
    return EntitySpec(name=name, table=f"{name}s", key=key.name, description=f"A {name}.",
                      id_prefix=name[:3].upper(), attributes=[key, *attributes])  # fmt: skip


def test_an_enum_value_that_is_a_code_is_written_as_one() -> None:
    """ "the LDL biometric readings", "placement level B1", "missing PO": never "ldl", "b1", "po"; a
    MIME type, a unit and a language code stay as they are."""
    from agentomnia.tasks.dag.describe import spoken_code

    assert [spoken_code(v) for v in ("ldl", "b1", "p2", "missing_po", "id_card", "on_hold")] == [
        "LDL", "B1", "P2", "missing PO", "ID card", "on hold",
    ]  # fmt: skip
    assert [spoken_code(v) for v in ("application/pdf", "m3", "ar")] == ["application/pdf", "m3", "ar"]
    # a blood group is said as one ("AB positive", never "ab POS"), a diet as its acronym
    assert [spoken_code(v) for v in ("ab_pos", "o_neg", "low_fodmap", "pos_terminal")] == [
        "AB positive", "O negative", "low FODMAP", "POS terminal",
    ]  # fmt: skip
    # a day or a month an enum writes short is said in full
    assert [spoken_code(v) for v in ("tue", "Thurs", "sep", "may", "sunday")] == [
        "Tuesday", "Thursday", "September", "May", "Sunday",
    ]  # fmt: skip
    # a state named by who did it is said as done by them
    assert spoken_code("manager_submitted") == "submitted by the manager"
    assert spoken_code("guest_cancelled") == "cancelled by the guest"


def test_a_yes_no_field_named_by_an_adjective_is_a_state() -> None:
    """ "mark it as serious", "the billable entries": an adjective says a state a record is in, so it
    is never "turned on"; a noun (consent, a payment, a parent) is not one."""
    from agentomnia.tasks.dag.describe import is_state_word

    states = ("serious", "billable", "confidential", "wireless", "urgent", "optional", "taxable", "opened")
    assert all(is_state_word(w) for w in states)
    assert not any(is_state_word(w) for w in ("consent", "payment", "parent", "notifications", "archive"))


def test_records_counted_by_who_did_a_thing_are_said_to_have_been_done_by_them() -> None:
    """ "how many of those cancellations are cancelled by guest", never "have cancelled by guest"; the
    number of open charges, never "the number of the open charges"."""
    from agentomnia.tasks.dag.describe import predicate
    from agentomnia.tasks.dag.generate import _no_article

    entity = _entity(
        "cancellation",
        AttributeSpec(name="cancelled_by", type="enum", enum=["guest", "hotel"]),
        AttributeSpec(name="status", type="enum", enum=["open", "on_hold"]),
    )
    assert predicate(entity, "cancelled_by", "guest") == "are cancelled by guest"
    assert predicate(entity, "status", "on_hold") == "are on hold"
    assert _no_article("the open rent charges") == "open rent charges"
    assert _no_article("the only such charges") == "the only such charges"


def test_a_list_record_nothing_numbers_apart_is_told_apart_by_its_name(
    freight_spec: EnvSpec, freight_bundle: Bundle, freight_sandbox: Sandbox
) -> None:
    """Where no number or date singles out one of a list's records, a name no other record has does
    ("the carrier named 'Atlas'"), chosen without a draw so a prediction and the call agree;
    a question that asks for that name is not told it."""
    entity = next(e for e in freight_spec.entities if e.label_attribute is not None)
    label = entity.label_attribute
    assert label is not None
    items = [{label.name: "Northwind"}, {label.name: "Atlas"}, {label.name: "Northwind"}]
    session = freight_sandbox.open(freight_bundle, freight_bundle.s0)
    try:
        gen = Generator(freight_spec, session, nx.MultiDiGraph(), random.Random(5), allow_ids=True)
        assert gen._pick_item(entity, items) == (1, f"{_naming(label.name)} 'Atlas'")
        assert _naming("full_name") == "named" and _naming("title") == "called"
        assert _naming("tracking_number") == "with tracking number"
        assert gen._pick_item(entity, items, by_name=False) is None
        assert gen._pick_item(entity, [items[0], items[2]]) is None  # no name is its own
        # a record known only by a note has no name to be called by
        noted = EntitySpec(name="refill_request", table="refill_requests", description="A refill.",
                           key="refill_request_id", id_prefix="REF",
                           attributes=(AttributeSpec(name="refill_request_id", type="str"),
                                       AttributeSpec(name="note", type="str")))  # fmt: skip
        assert noted.label_attribute is not None and noted.label_attribute.name == "note"
        notes = [
            {"note": "Looked over the refill request today; all in order."},
            {"note": "Flagged for review."},
        ]
        assert gen._pick_item(noted, notes) is None
    finally:
        session.close()


def test_questions_over_figures_never_combine_a_gap_or_two_counts_of_one_list(
    freight_spec: EnvSpec, freight_bundle: Bundle, freight_sandbox: Sandbox
) -> None:
    from agentomnia.tasks.dag.generate import Reported

    session = freight_sandbox.open(freight_bundle, freight_bundle.s0)
    try:
        for seed in range(30):
            gen = Generator(freight_spec, session, nx.MultiDiGraph(), random.Random(seed), allow_ids=True)
            for i in range(4):
                gen.out.dag.add_call(f"c{i}")
            # three shipments' declared values, and a count with two counts taken over its list
            gen.out.reports += [
                Reported("c0", "first_value", 1200.0, "a", True, unit="attr:declared_value"),
                Reported("c1", "second_value", 800.0, "b", True, unit="attr:declared_value"),
                Reported("c2", "unit_count", 6, "c", True, unit="count:handling_units:all"),
                Reported("c3", "third_value", 950.0, "d", True, unit="attr:declared_value"),
            ]
            for field, n in (("units_pallet", 4), ("units_hazardous", 1)):
                node = VirtualNode(
                    id=f"f{field}", type="FILTER", inputs=("c2",), field=field, value=n, text=""
                )
                gen.out.dag.add_virtual(node)
                gen.out.reports.append(
                    Reported(node.id, field, n, field, True, unit="count:handling_units:type")
                )
            gen.add_virtual(4, stack=True)
            made = {v.id: v for v in gen.out.dag.virtual}
            for v in made.values():
                if v.type in ("COMPUTE", "TRANSFORM", "LOGIC"):
                    assert not {made[i].type for i in v.inputs if i in made} & {"TRANSFORM"}, v
                    assert not set(v.inputs) <= {"funits_pallet", "funits_hazardous", "c2"}, v
    finally:
        session.close()


def test_who_did_something_is_asked_as_who(
    freight_spec: EnvSpec, freight_bundle: Bundle, freight_sandbox: Sandbox
) -> None:
    from agentomnia.tasks.dag.generate import Executed

    tool = next(t for t in freight_spec.tools if t.op == "get")
    entity = freight_spec.entity(tool.entity)
    signed = entity.model_copy(
        update={"attributes": (*entity.attributes, AttributeSpec(name="approved_by", type="str"))}
    )
    spec = freight_spec.model_copy(
        update={"entities": [signed if e.name == entity.name else e for e in freight_spec.entities]}
    )
    session = freight_sandbox.open(freight_bundle, freight_bundle.s0)
    try:
        gen = Generator(spec, session, nx.MultiDiGraph(), random.Random(0), allow_ids=True)
        record = {entity.key: "X-001", "approved_by": "Dana Perez"}
        gen._report(Executed(0, tool, {}, {}, record, None, None), f"{words(entity.name)} X-001")
    finally:
        session.close()
    assert f"who approved {words(entity.name)} X-001" in gen.out.clauses[-1]
    assert "the approved by" not in gen.out.clauses[-1]


def test_dates_a_request_gives_read_from_the_clock(
    freight_spec: EnvSpec, freight_bundle: Bundle, freight_sandbox: Sandbox
) -> None:
    """A date written now is near the environment's clock: when something was logged is today or just
    before, what is scheduled or starts lies ahead, what is due lies further ahead; never the half
    year back that s0's spread of past records would give."""
    from datetime import timedelta

    from agentomnia.envs.semantic import NOW, timely_date

    rng = random.Random(3)
    for _ in range(20):
        logged = datetime.fromisoformat(timely_date(AttributeSpec(name="logged_at", type="datetime"), rng))
        starts = date.fromisoformat(timely_date(AttributeSpec(name="valid_from", type="date"), rng))
        planned = date.fromisoformat(timely_date(AttributeSpec(name="scheduled_on", type="date"), rng))
        ends = date.fromisoformat(timely_date(AttributeSpec(name="valid_to", type="date"), rng))
        # what the record says has happened lies by the clock (a payment "paid on March 27" was not)
        paid = date.fromisoformat(timely_date(AttributeSpec(name="paid_on", type="date"), rng))
        returned = datetime.fromisoformat(
            timely_date(AttributeSpec(name="returned_at", type="datetime"), rng)
        )
        assert NOW.date() - timedelta(days=4) <= paid <= NOW.date() and returned <= NOW, (paid, returned)
        assert NOW - timedelta(days=4) <= logged <= NOW and 8 <= logged.hour <= 17, logged
        assert NOW.date() <= starts < ends and planned >= NOW.date(), (starts, planned, ends)
    dated = [
        (tool, param)
        for tool in freight_spec.tools
        if tool.kind == "write"
        for param, attr in tool.binding.get("fields", {}).items()
        if (a := freight_spec.entity(tool.entity).attribute(attr)) is not None
        and a.type in ("date", "datetime")
    ]
    assert dated
    session = freight_sandbox.open(freight_bundle, freight_bundle.s0)
    try:
        gen = Generator(freight_spec, session, nx.MultiDiGraph(), random.Random(5), allow_ids=True)
        for tool, param in dated:
            value = gen._new_value(tool, param, None)
            moment = datetime.fromisoformat(str(value).rstrip("Z"))
            assert abs(moment - NOW) < timedelta(days=121), (tool.name, param, value)
    finally:
        session.close()


def test_whoever_did_something_is_named_by_the_deed() -> None:
    """A reference `approved_by` is "the approver of that draw", never "the approved by of that draw";
    a seconds suffix reads as seconds."""
    assert Generator._ref_word("approved_by") == "approver"
    assert Generator._ref_word("final_reviewed_by_id") == "final_reviewer"
    assert Generator._ref_word("petId") == "pet" and Generator._ref_word("assigned_to") == "assigned_to"
    assert field_label("duration_s") == "duration (seconds)"


def test_a_large_figure_is_written_out() -> None:
    """1433463.86 reads as 1,433,463.86, never 1.43346e+06 (which no one could type back)."""
    from agentomnia.tasks.dag.describe import say

    assert say(1433463.86) == "1,433,463.86" and say(2500000.0) == "2,500,000"
    assert say(2398.61) == "2,398.61" and say(12.0) == "12" and say(0.5) == "0.5"


def test_a_new_persons_email_is_made_from_their_name(tmp_path: Path, sandbox: Sandbox) -> None:
    """'Register a new account manager with email jacob_bolton@hotmail.com and full name Kevin
    White' reads as made up: a new record's e-mail is drawn after its name, from it."""
    import contextlib
    import io

    from agentomnia.cli import main

    seed = Path(__file__).parents[3] / "agentomnia/seeds/corpus/openapi/folio-document-control.yaml"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["env", "build", "--seed", str(seed), "--out", str(tmp_path / "folio"), "--json"]) == 0
    spec = EnvSpec.model_validate_json((tmp_path / "folio" / "spec.json").read_text(encoding="utf-8"))
    bundle = Bundle.load(tmp_path / "folio")
    tool = spec.tool("create_user")
    fields = {a: p for p, a in tool.binding["fields"].items()}
    name, mail = fields["full_name"], fields["email"]
    tool = tool.model_copy(
        update={"parameters": {**tool.parameters, "required": [mail, name]}}
    )  # e-mail first
    session = sandbox.open(bundle, bundle.s0)
    try:
        gen = Generator(spec, session, nx.MultiDiGraph(), random.Random(3), allow_ids=True)
        for _ in range(6):
            args = gen.ground(tool, None)[0]
            first, *_, last = str(args[name]).lower().split()
            local = str(args[mail]).split("@")[0]
            assert first[0] in local and (first in local or last in local), (args[name], args[mail])
    finally:
        session.close()


def _ref_field(spec: EnvSpec, tool_op: str, *, text: bool = False) -> tuple[ToolSpec, str, str]:
    """A tool of `tool_op` whose entity has a reference attribute (and, with `text`, a text one),
    with that attribute's name and the tool's parameter for it (the attribute's own name where the
    tool does not bind it)."""
    for tool in spec.tools:
        entity = spec.entity(tool.entity)
        if tool.op != tool_op or (text and not any(a.type == "str" for a in entity.attributes)):
            continue
        bound = {**tool.binding.get("fields", {}), **tool.binding.get("filters", {})}
        for a in entity.attributes:
            if a.type == "ref" and a.ref and a.name != entity.key:
                param = next((p for p, attr in bound.items() if attr == a.name), a.name)
                return tool, a.name, param
    raise AssertionError(f"freight has no {tool_op} tool over an entity with a reference")


def test_an_update_sends_what_it_was_not_asked_to_change_as_the_record_has_it(
    freight_spec: EnvSpec, freight_bundle: Bundle, freight_sandbox: Sandbox
) -> None:
    """An update that must be sent a field it was not asked to change (a par level's location, for
    a PUT of the whole record) sends the record's own value: the request never moves the record
    somewhere it did not say, and every value that does change is one the request states."""
    tool, attr, param = _ref_field(freight_spec, "update")
    fields = {**tool.binding.get("fields", {}), param: attr}
    strict = tool.model_copy(
        update={
            "binding": {**tool.binding, "fields": fields},
            "parameters": {
                **tool.parameters,
                "properties": {**tool.parameters.get("properties", {}), param: {"type": "string"}},
                "required": sorted({*tool.parameters.get("required", []), *fields}),
            },
        }
    )
    spec = freight_spec.model_copy(
        update={"tools": [strict if t.name == tool.name else t for t in freight_spec.tools]}
    )
    entity = spec.entity(strict.entity)
    session = freight_sandbox.open(freight_bundle, freight_bundle.s0)
    kept = 0
    try:
        for seed in range(8):
            gen = Generator(spec, session, nx.MultiDiGraph(), random.Random(seed), allow_ids=True)
            args, sources, focus, _phrase, extra = gen.ground(strict, None)
            assert focus is not None
            record = gen._table(entity)[focus[1]]
            changed = [p for p, a in fields.items() if args.get(p) != record.get(a)]
            assert changed and all(sources[p] == "query" for p in changed), (args, sources, record)
            if record.get(attr) is not None:
                assert args[param] == record[attr] and sources[param] != "query"
                assert not any(part.startswith(f"{Generator._ref_word(param)}: ") for part in extra), extra
                kept += 1
    finally:
        session.close()
    assert kept


def test_a_search_sent_without_its_text_names_the_records_its_filter_selects(
    freight_spec: EnvSpec, freight_bundle: Bundle, freight_sandbox: Sandbox
) -> None:
    """A seed's search whose text parameter is `q` and optional, and whose filter is required
    (`listSupplierItems(supplier_id, q?)`), is asked for as the records of the filter's record
    ("the items of supplier ..."), never "the items matching None"."""
    tool, attr, param = _ref_field(freight_spec, "list", text=True)
    entity = freight_spec.entity(tool.entity)
    text = next(a.name for a in entity.attributes if a.type == "str")
    search = tool.model_copy(
        update={
            "op": "search",
            "binding": {"fields": {}, "filters": {param: attr}, "query": "q", "text_fields": [text]},
            "parameters": {
                "type": "object",
                "properties": {param: {"type": "string"}, "q": {"type": "string"}},
                "required": [param],
            },
        }
    )
    spec = freight_spec.model_copy(
        update={"tools": [search if t.name == tool.name else t for t in freight_spec.tools]}
    )
    target = spec.entity(entity.attribute(attr).ref)  # type: ignore[union-attr, arg-type]
    session = freight_sandbox.open(freight_bundle, freight_bundle.s0)
    try:
        for seed in range(5):
            gen = Generator(spec, session, nx.MultiDiGraph(), random.Random(seed), allow_ids=True)
            args, _sources, _focus, phrase, _extra = gen.ground(search, None)
            assert phrase is not None and "None" not in phrase, phrase
            assert phrase.startswith(f"the {plural(entity.name)} of "), phrase
            assert str(args[param]) in phrase or words(target.name) in phrase, (phrase, args)
    finally:
        session.close()


def test_a_number_a_request_states_is_the_number_it_means() -> None:
    """43779.35 is said as 43,779.35 (`:g` said 43779.3, and the check expected 43779.35); its
    thousands are separated as people write them, but never a year's or a code's."""
    from agentomnia.envs.values import written_number
    from agentomnia.tasks.dag.describe import say

    assert say(43779.35) == "43,779.35" and say(1433463.86) == "1,433,463.86" and say(192.0) == "192"
    assert say(381918413, "annual_revenue") == "381,918,413" and say(-12500.5) == "-12,500.5"
    assert say(8721, "capacity_kg") == "8,721" and say(2019) == "2019" and say(2019, "model_year") == "2019"
    assert say(1957, "word_count") == "1,957" and say(1850, "calories") == "1,850"  # a count, never a year
    for code in ("zip_code", "order_number", "year_built", "phone", "employee_no", "isbn", "postal_code"):
        assert say(90210, code) == "90210", code
    assert written_number(0.1 + 0.2) == "0.3" and written_number(-2.5) == "-2.5"
    assert written_number(-0.0000001) == "0"


def test_a_number_with_its_thousands_separated_reads_back_as_itself() -> None:
    """What reads numbers out of a request or a reply takes 381,918,413 as one number, and a list
    written without spaces ([100,200]) as its items."""
    from agentomnia.omniabench.heuristic.agent import _coerce
    from agentomnia.tasks.dag.interaction import _literals
    from agentomnia.tasks.quality import _stated
    from agentomnia.trajectories.evidence import numbers_in

    assert numbers_in("a price of 603,241 and -2,500.5 kg") == [603241.0, -2500.5]
    assert numbers_in("[100,200,300] or 1,5") == [100.0, 200.0, 300.0, 1.0, 5.0]
    assert _stated(603241, "It should have a price of 603,241.") and _stated(90210, "zip 90210")
    assert not _stated(603241, "It should have a price of 603.")
    assert _literals(603241) == ["603,241", "603241"] and _literals(2019) == ["2019"]
    # a record named by a figure is never asked for it back ("the parts per shift of the site survey
    # with 5,126 parts per shift"), and a figure inside a longer one is not that figure
    from agentomnia.tasks.dag.generate import _stated as named_by

    assert named_by(5126, "the site survey with 5,126 parts per shift") and named_by(5126, "with 5126 parts")
    assert not named_by(126, "the site survey with 5,126 parts per shift") and not named_by(
        12, "a total of 12.5"
    )
    assert (
        _coerce("603,241", {"type": "integer"}) == 603241 and _coerce("2,500.5", {"type": "number"}) == 2500.5
    )


def test_a_state_the_noun_already_says_is_not_said_twice() -> None:
    """ "the trusted devices whose status is trusted", never "the trusted trusted devices"."""
    from agentomnia.tasks.dag.describe import singled_out

    entity = _entity(
        "trusted_device",
        AttributeSpec(name="status", type="enum", enum=["trusted", "revoked"]),
        AttributeSpec(name="trusted", type="bool"),
    )
    assert singled_out(entity, {"status": "trusted"}, ["status"], many=True) == (
        "the trusted devices whose status is trusted"
    )
    assert singled_out(entity, {"status": "revoked"}, ["status"], many=True) == "the revoked trusted devices"
    assert (
        singled_out(entity, {"trusted": True}, ["trusted"], many=True)
        == "the trusted devices that are trusted"
    )


def test_a_count_by_a_yes_no_field_asks_what_the_records_do() -> None:
    """ "how many alarm setpoints are not enabled" (keyed "alarm setpoints not enabled"), never
    "how many alarm setpoints there are whose enabled is 'False'" keyed "alarm_setpoints_false"."""
    from agentomnia.tasks.dag.generate import group_question

    setpoint = _entity(
        "alarm_setpoint",
        AttributeSpec(name="enabled", type="bool"),
        AttributeSpec(name="priority", type="enum", enum=("low", "high", "in_service")),
    )
    assert group_question(setpoint, "enabled", "False") == (
        "that are not enabled",
        "how many alarm setpoints are not enabled",
        "not enabled",
    )
    assert group_question(setpoint, "enabled", "True")[1:] == (
        "how many alarm setpoints are enabled",
        "enabled",
    )
    whose, question, named = group_question(setpoint, "priority", "in_service")
    assert (
        question == "how many alarm setpoints there are whose priority is in service"
        and named == "in_service"
    )


def test_a_yes_no_field_that_says_a_state_reads_as_one() -> None:
    """ "the depots that are open 24h", never "the depots with open 24h"."""
    from agentomnia.tasks.dag.describe import singled_out

    depot = _entity("depot", AttributeSpec(name="open_24h", type="bool"))
    assert singled_out(depot, {"open_24h": True}, ["open_24h"], many=True) == "the depots that are open 24h"
    assert singled_out(depot, {"open_24h": False}, ["open_24h"]) == "the depot that is not open 24h"


def test_a_figure_of_a_record_is_asked_for_once_unless_a_write_changed_it_since(
    freight_spec: EnvSpec, freight_bundle: Bundle, freight_sandbox: Sandbox
) -> None:
    """ "The population of that zone ... the population of the zone named 'Jackson County'" asks one
    figure twice (and a gap between the two is always 0); after a write to the record, asking again is
    the point ("... and what is it now?")."""
    from agentomnia.tasks.dag.generate import Executed, Reported

    get = next(t for t in freight_spec.tools if t.op == "get")
    write = next(t for t in freight_spec.tools if t.kind == "write" and t.entity == get.entity)
    focus = (get.entity, "K-1")
    session = freight_sandbox.open(freight_bundle, freight_bundle.s0)
    try:
        gen = Generator(freight_spec, session, nx.MultiDiGraph(), random.Random(5), allow_ids=True)
        first = Executed(0, get, {}, {}, {}, focus, "that record")
        gen.out.calls.append(first)
        gen.out.reports.append(Reported("c0", "weight", 3.5, "its weight", True, step=0, unit="attr:weight"))
        again = Executed(1, get, {}, {}, {}, focus, "the record named 'X'")
        assert gen._asked_already(again, "weight") and not gen._asked_already(again, "volume")
        assert not gen._asked_already(Executed(1, get, {}, {}, {}, (get.entity, "K-2"), "another"), "weight")
        gen.out.calls.append(Executed(1, write, {}, {}, {}, focus, "that record"))
        assert not gen._asked_already(Executed(2, get, {}, {}, {}, focus, "that record"), "weight")
    finally:
        session.close()
