"""Words for records and values in a task description, with or without identifiers.

DAG-Standard descriptions may quote a record's id; DAG-Challenge ones refer to records only by what
distinguishes them in the task's own initial state (its name plus as few further facts as make it
unique), so the agent has to find the record. A record that no short description singles out
cannot be a Challenge target: `describe_record` returns None and the caller picks another.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from agentomnia.dates import iso_dates, spoken_date
from agentomnia.envs.naming import article
from agentomnia.envs.spec import EntitySpec, EnvSpec
from agentomnia.envs.values import written_figure

_CUE_TYPES = ("enum", "bool", "str", "int", "money", "float", "date")
_ID_SHAPE = re.compile(r"^[A-Z0-9]{2,4}-\d+$")


def words(name: str) -> str:
    """`monthly_fee` -> `monthly fee`, a seed's `userStatus` -> `user status`: how a field is said in
    prose (never as its key). An acronym stays as written (`SKUCode` is left alone), and one written
    in lower case is said as people write it (`po_line` -> `PO line`, `ncrs` -> `NCRs`, `ph_level`
    -> `pH level`)."""
    said = _CAMEL.sub(lambda m: " " + m.group(1).lower(), name).replace("_", " ").strip()
    said = _E_WORD.sub("e-", said)  # `e_filing` is an e-filing, `ebook_id` stays an ebook
    said = _WORD.sub(lambda m: _acronym(m.group(0)), _directed(_spelled_out(said)))
    return _NAMED.get(said, said)


# fields named by a phrase that is no noun, and the noun people say for them ("the quantity on hand",
# never "what should the on hand be?")
# (`in_stock` is as often a yes/no field, so only "on hand" is named so)
_NAMED = {"on hand": "quantity on hand"}


# abbreviations of field names that people write out: `version_no` is the version number (never
# "desc", which as a value is a sort order, descending, as often as a description)
_SPELLED = {
    "qty": "quantity", "amt": "amount", "dept": "department", "seq": "sequence",
    "addr": "address", "avg": "average", "pct": "percentage", "cnt": "count", "msg": "message",
    "txn": "transaction", "acct": "account", "mgr": "manager", "org": "organization", "cust": "customer",
    "tel": "telephone", "num": "number", "no": "number", "nbr": "number", "yr": "year", "mo": "month",
    "hrs": "hours", "mins": "minutes", "secs": "seconds", "wt": "weight", "dur": "duration",
    "lat": "latitude", "lng": "longitude", "lon": "longitude", "todo": "to-do", "todos": "to-dos",
}  # fmt: skip


def _spelled_out(said: str) -> str:
    """Each abbreviation written out: "version no" -> "version number", "num guests" -> "number of
    guests"; "no" only after another word and never after "yes" (`no_show` stays a no-show)."""
    parts = said.split(" ")
    out: list[str] = []
    for i, part in enumerate(parts):
        full = _SPELLED.get(part)
        if full is None or (part == "no" and (i == 0 or parts[i - 1] == "yes")):
            out.append(part)
        elif part in ("num", "no", "nbr") and i == 0 and len(parts) > 1:
            out.append("number of")
        else:
            out.append(full)
    return " ".join(out)


_E_WORD = re.compile(r"^e (?=[a-z]{3})")


def _directed(said: str) -> str:
    """A field named for where something goes or comes from, as people say it: `to_cost_center` is
    the destination cost center, `from_status` the previous status, `to_date` the end date,
    `to_currency` the target currency and `from_user` the sender (never "the to cost center of the
    transfer")."""
    m = re.fullmatch(r"(to|from) ([a-z].*)", said)
    if m is None or m[2] in ("do", "dos", "do item"):
        return said
    to, rest = m[1] == "to", m[2]
    last = rest.rpartition(" ")[2]
    if last in _CHANGED:
        return f"{'new' if to else 'previous'} {rest}"
    if last in _WHEN:
        return f"{'end' if to else 'start'} {rest}"
    if rest in _PEOPLE:
        return "recipient" if to else "sender"
    if last in _CONVERTED:
        return f"{'target' if to else 'source'} {rest}"
    return f"{'destination' if to else 'source'} {rest}"


_CHANGED = frozenset({"status", "stage", "state", "tier", "level", "version", "value", "role", "plan", "grade",
                      "phase", "rank", "price", "rate", "owner", "assignee", "priority", "quantity"})  # fmt: skip
_WHEN = frozenset({"date", "time", "day", "datetime", "timestamp", "year", "month", "week", "period", "hour"})
_CONVERTED = frozenset({"currency", "language", "unit", "format", "locale", "timezone", "units"})
_PEOPLE = frozenset({"user", "member", "person", "party", "contact", "employee", "customer", "player", "agent",
                     "account holder", "participant", "profile"})  # fmt: skip


_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])(?=[a-z])")
_WORD = re.compile(r"\b[a-z]{2,6}\b")
# abbreviations people write in capitals, as whole words of a name
_ACRONYMS = frozenset({
    "po", "sku", "sla", "eta", "etd", "vat", "gst", "kyc", "aml", "api", "url", "vin", "imei", "iban",
    "pdf", "csv", "hr", "qa", "qc", "ehr", "emr", "icd", "cpt", "npi", "ndc", "mrn", "rma", "asn",
    "bol", "nda", "mel", "apu", "mfa", "sso", "sms", "ssl", "dns", "vpn", "cve", "cvss", "ssn", "ein",
    "tin", "pos", "atm", "otp", "faq", "kpi", "okr", "roi", "upc", "ean", "gtin", "isbn", "ip", "uom",
    "moq", "eoq", "rfq", "rfp", "ppe", "hvac", "ev", "gps", "rsvp", "ssd", "cpu", "gpu", "ram", "os",
    "ui", "ux", "sdk", "id", "ncr", "capa", "xp", "plc", "crf", "crm", "erp", "bom", "wip", "lms",
    "iot", "etl", "seo", "cms", "pto", "dob", "icu", "ecg", "ekg", "mri", "bmi", "ldl", "hdl", "nps",
    "hoa", "gpa", "cpr", "ems", "ap", "ar", "gl", "pcn", "drm", "ftp", "pr", "tsa", "ata", "aog", "otb", "ro",
    "fodmap", "sop", "ira", "lufs", "etf", "hsa", "ipo", "msrp", "lmp", "hs", "rn", "lpn", "cna", "cpa", "cfa",
    "mba", "dds",
})  # fmt: skip
_WRITTEN = {
    "ph": "pH",
    "rx": "Rx",
    "roth": "Roth",
    "phd": "PhD",
}  # written neither in capitals nor in lower case
_NOT_PLURAL = frozenset({"hrs", "tins", "rams"})  # hours, and words


def _acronym(word: str) -> str:
    if word in _WRITTEN:
        return _WRITTEN[word]
    if word in _ACRONYMS:
        return word.upper()
    if word.endswith("s") and word[:-1] in _ACRONYMS and word not in _NOT_PLURAL:  # `ncrs` -> `NCRs`
        return word[:-1].upper() + "s"
    return word


def is_state_word(word: str) -> bool:
    """Whether a yes/no field's word says a state a record is in ("opened", "active", "paid", an
    adjective such as "serious" or "billable"), so it is said as "it is opened" / "mark it as serious"
    rather than as a setting turned on ("turn its away mode on")."""
    return (
        word.endswith("ed")
        or word in _STATES
        or word in _PARTICIPLES
        or (
            len(word) > 5
            and word.endswith(_ADJECTIVE_ENDS)
            and not word.endswith("ment")
            and word not in _NOT_ADJECTIVES
        )
    )


_STATES = frozenset({
    "open", "due", "active", "enabled", "available", "urgent", "public", "private", "vip", "live", "valid",
    "vegan", "final", "late", "overdue", "premium", "critical", "current", "primary", "secondary", "default",
    "pending", "recurring", "featured", "fragile", "visible", "online", "offline", "remote", "complete",
    "idle", "busy", "closed", "secure", "free", "paused", "mandatory", "temporary", "voluntary", "advisory",
    "compulsory", "preliminary", "new", "ready", "empty", "full", "dirty", "clean", "safe", "sterile",
    "optional", "abnormal", "normal", "internal", "external", "official", "seasonal", "original", "digital",
    "manual", "global", "local", "virtual", "physical", "medical", "legal", "illegal",
})  # fmt: skip
# endings of adjectives ("serious", "billable", "confidential", "sensitive", "wireless", "urgent")
_ADJECTIVE_ENDS = ("ous", "able", "ible", "ial", "ive", "ful", "less", "ic", "ent", "ant")
_NOT_ADJECTIVES = frozenset({
    "parent", "content", "comment", "tenant", "variant", "assistant", "applicant", "consultant", "consent",
    "participant", "archive", "incentive", "objective", "logic", "topic", "music", "clinic", "client",
    "patient", "student", "event", "agent", "talent", "restaurant", "merchant", "warrant", "servant",
    "traffic", "graphic", "mechanic", "executive", "representative", "detective", "narrative", "directive",
    "initiative", "alternative", "relative", "material", "tutorial", "credential", "potential",
})  # fmt: skip


def lead_word(name: str) -> str:
    """The first word of a name, lower-cased: `list_episodes` and `listEpisodes` -> `list`."""
    return words(name).partition(" ")[0].lower()


# Unit suffixes of field names (`water_temp_c`, `long_edge_px`) and how a person writes the unit.
UNITS = {
    "c": "°C", "f": "°F", "k": "K", "kmh": "km/h", "kph": "km/h", "mph": "mph", "pct": "%",
    "percent": "%", "kg": "kg", "g": "g", "mg": "mg", "lb": "lb", "lbs": "lb", "km": "km", "m": "m",
    "cm": "cm", "mm": "mm", "ft": "ft", "px": "px", "kwh": "kWh", "kw": "kW", "mw": "MW", "mb": "MB",
    "gb": "GB", "tb": "TB", "ml": "ml", "usd": "USD", "eur": "EUR", "gbp": "GBP", "bps": "bps",
    "days": "days", "hours": "hours", "hrs": "hours", "minutes": "minutes", "mins": "minutes",
    "sec": "seconds", "secs": "seconds", "seconds": "seconds", "s": "seconds", "ms": "ms", "min": "minutes",
    "m2": "m²", "m3": "m³", "sqft": "sq ft", "kwh_m2": "kWh/m²", "m3_h": "m³/h", "m3_s": "m³/s",
    "l_min": "L/min", "l_h": "L/h", "mg_l": "mg/L", "ug_m3": "µg/m³", "mg_kg": "mg/kg", "kg_m2": "kg/m²",
    "kg_h": "kg/h", "t_h": "t/h", "km_h": "km/h", "m_s": "m/s", "ml_min": "mL/min", "mmol_l": "mmol/L",
    "mg_dl": "mg/dL", "ppm": "ppm", "ppb": "ppb", "db": "dB", "hz": "Hz", "mhz": "MHz", "kva": "kVA",
    "mbps": "Mbps", "pallets": "pallets", "tonnes": "tonnes", "litres": "litres", "liters": "liters",
    "weeks": "weeks", "months": "months", "years": "years", "t": "t",
    "kv": "kV", "mmhg": "mmHg", "bpm": "bpm", "kb": "KB", "bytes": "bytes", "sqm": "m²",
    "m3_day": "m³/day", "m3_d": "m³/day", "l_day": "L/day", "kg_day": "kg/day", "t_day": "t/day",
    "kwh_day": "kWh/day", "m3_hr": "m³/h", "lufs": "LUFS", "cents": "cents", "pence": "pence",
}  # fmt: skip
# what a rate is per, after "_per_": `flow_m3_per_day` is a flow in m³/day
_PER = {"day": "day", "hour": "hour", "hr": "hour", "week": "week", "month": "month", "year": "year"}


# an ambiguous suffix is a unit only after a word that measures in it (`vitamin_c`, `grade_a` are not)
_TEMPERATURE = ("temp", "temperature")
_SIZE = ("weight", "mass", "size", "protein", "fat", "carbs", "sugar", "fiber", "dose", "portion", "amount")
_LENGTH = ("length", "width", "height", "depth", "distance", "altitude", "elevation", "radius", "diameter")
_TIME = (
    "buffer",
    "duration",
    "time",
    "delay",
    "wait",
    "prep",
    "cook",
    "break",
    "lead",
    "travel",
    "drive",
    "response",
    "interval",
    "runtime",
    "length",
    "overtime",
    "downtime",
    "slot",
    "grace",
    "window",
)
# "t" ends a mass in tonnes (`quantity_t`), and nothing else it could end (`time_t`)
_TONNES = ("quantity", "weight", "mass", "load", "capacity", "cargo", "payload", "tonnage", "output", "yield")
# "min" ends a duration in minutes (`travel_buffer_min`) but a minimum elsewhere (`temp_min`)
_MEASURED: dict[str, tuple[str, ...]] = {"c": _TEMPERATURE, "f": _TEMPERATURE, "k": _TEMPERATURE, "g": _SIZE,
                                         "m": _LENGTH, "min": _TIME, "pallets": ("capacity",),
                                         "t": _TONNES}  # fmt: skip


_ONE = {
    "hours": "hour",
    "hrs": "hour",
    "days": "day",
    "minutes": "minute",
    "mins": "minute",
    "seconds": "second",
    "weeks": "week",
    "months": "month",
    "years": "year",
}


def field_label(name: str, kind: str | None = None) -> str:
    """A field as it reads beside a value: its words, with a unit suffix written as the unit
    (`water_temp_c` -> `water temp (°C)`, `rotation_length_days` -> `rotation length (days)`); an
    amount of money (`kind` "money") named by a participle alone is said as one (`committed` ->
    `committed amount`: "whose committed amount is above 500,000", never "whose committed is")."""
    if kind == "money" and "_" not in name and _participle(name.lower()):
        return f"{words(name)} amount"
    parts = name.split("_")
    per = re.match(r"^(.+?)_([a-z0-9]+)_per_([a-z]+)$", name.lower())
    if (
        per and per[2] in UNITS and (per[3] in UNITS or per[3] in _PER)
    ):  # `dose_mg_per_kg` -> "dose (mg/kg)", never "dose mg per (kg)"
        return f"{words(per[1])} ({UNITS[per[2]]}/{_PER.get(per[3]) or _ONE.get(per[3], UNITS[per[3]])})"
    if len(parts) > 2 and "_".join(parts[-2:]).lower() in UNITS:  # a rate or density: `design_flow_m3_h`
        return f"{words('_'.join(parts[:-2]))} ({UNITS['_'.join(parts[-2:]).lower()]})"
    head, _, tail = name.rpartition("_")
    if head.endswith("_per") and tail in UNITS:  # a rate: `price_per_kwh` -> "price per kWh"
        unit = UNITS[tail]
        return f"{words(head)} {unit[:-1] if unit in _COUNTED else unit}"  # "idle fee per minute"
    if head and tail in UNITS and (tail not in _MEASURED or head.rpartition("_")[2] in _MEASURED[tail]):
        said = words(head)
        if said in _ESTIMATES and tail in _QUANTITY:  # `planned_km`: "planned distance", never "planned"
            said = f"{said} {_QUANTITY[tail]}"
        return f"{said} ({UNITS[tail]})"
    if name.lower() in _MEASURES:  # a field named for its unit alone: `ml` -> "volume (ml)"
        return f"{_MEASURES[name.lower()]} ({UNITS[name.lower()]})"
    if name.lower() in ("at", "ts", "timestamp"):  # a time named by its preposition: "the latest time"
        return "time"
    said = words(name)
    stem, sep, rest = said.rpartition(" at")
    if sep and not rest and " " not in stem and not _participle(stem) and stem not in _DATED:
        return f"{stem} time"  # `start_at`: "the latest start time", never "the latest start at"
    return said


# a field named by what kind of figure it is and its unit alone (`planned_km`, `estimated_min`) is
# said with what the unit measures: the planned distance, the estimated time
_ESTIMATES = frozenset({"planned", "estimated", "expected", "projected", "budgeted", "scheduled", "actual",
                        "target", "forecast", "allowed", "quoted", "measured", "recorded", "logged"})  # fmt: skip
_QUANTITY = {**dict.fromkeys(("km", "m", "cm", "mm", "ft"), "distance"), **dict.fromkeys(("kg", "g", "lb", "lbs"), "weight"),
             **dict.fromkeys(("s", "sec", "secs", "seconds", "min", "mins", "minutes", "hours", "hrs"), "time")}  # fmt: skip
_NUMBER = re.compile(r"^-?\d[\d,]*(\.\d+)?$")
_CLOSED_UP = ("°C", "°F", "%")  # written against the number: 38.5°C, 15%
_COUNTED = ("days", "hours", "minutes", "seconds", "nights", "weeks", "months", "years")
_MEASURES = {"ml": "volume", "litres": "volume", "liters": "volume", "kg": "weight", "lb": "weight",
             "lbs": "weight", "km": "distance", "minutes": "duration", "mins": "duration", "hours": "duration",
             "hrs": "duration", "days": "duration"}  # fmt: skip


def labelled(name: str, value: str, kind: str | None = None) -> tuple[str, str]:
    """(label, value) of a field a request states, a measured number with its unit after it as
    people write it: ("weight", "72.7 kg"), ("wait", "1 day"), ("water temp", "38.5°C"); anything
    else as `field_label` says it ("weight (kg)" of a value that is no number)."""
    label = field_label(name, kind)
    if label.endswith(" at") and iso_dates(value):
        label = label[:-3] + " on"  # "created on March 1, 2026 at 1:30 PM", never "created at March 1"
    head, sign = _unit_of(label)
    if sign is None or not _NUMBER.match(value):
        return label, value
    if value == "1" and sign in _COUNTED:
        sign = sign[:-1]  # "1 day"
    return head, f"{value}{sign}" if sign in _CLOSED_UP else f"{value} {sign}"


def between(name: str, start: str, end: str) -> str:
    """Records whose date field lies in a span, as a request picks them: "started between December 12,
    2025 and March 21, 2026" where the field is a verb's ("started_on"), "due between ..." where it says
    when something is due (`due_date`, `due_next`), "whose valid from date is between ..." where it ends
    in a preposition, else "with start date between ..." (see `span_words`)."""
    first, last = (spoken_date(v) or v for v in (start, end))
    said = span_words(name)
    if said is None:
        return f"with {field_label(name)} between {first} and {last}"
    return f"{said}{' is' if said.endswith(' date') else ''} between {first} and {last}"


# participles that do not end in -ed, as date fields name what was done ("made_on", "held_at", "sent_at")
_IRREGULAR_DONE = frozenset({"made", "held", "sent", "paid", "built", "done", "given", "taken", "seen", "run",
                             "set", "won", "lost", "sold", "bought", "found", "kept", "left", "met", "read",
                             "shown", "told", "written", "begun", "drawn", "grown", "spent", "shot", "put"})  # fmt: skip


def span_words(name: str) -> str | None:
    """The words before "between" that pick records by when `name` says they happened: "shipped"
    (`shipped_on`), "made" (`made_on`), "starting" (`starts_on`), "due" (`due_date`, `due_next`), "whose
    inspection is due" (`inspection_due`), "whose valid from date" (`valid_from`); None for a plain date
    (`birth_date`, `start_date`), which is said with its label."""
    label = field_label(name)
    due = re.fullmatch(r"(?:(.+) )?due(?: (?:next|on|by|date))?", label)
    if due:
        return f"whose {due[1]} is due" if due[1] else "due"
    verb = date_verb(name)
    if verb:
        return verb
    stem, _, last = label.rpartition(" ")
    if last not in ("on", "at", "by", "from", "until") or not stem:
        return None
    if stem.split()[-1] in _IRREGULAR_DONE:
        return stem
    if re.fullmatch(r"[a-z]+[^s]s", stem):
        return f"{stem[:-1]}ing"  # "starting" of `starts_on`
    return f"whose {label} date"


def date_verb(name: str) -> str | None:
    """The participle a date field's words lead with, which can pick records on its own: "started"
    of `started_on`, "filed" of `filed_at`; None for `due_date` or `start_date`."""
    label = words(name)
    stem = re.sub(r" (on|at|date)$", "", label)
    return stem if stem != label and stem.endswith("ed") else None


def stated(name: str, value: str, kind: str | None = None) -> str:
    """A field and its value as a request states them: "weight 72.7 kg", "status on hold",
    "committed amount 217,416" (`kind`: the field's type, see `field_label`)."""
    return " ".join(labelled(name, value, kind))


def kind_of(entity: EntitySpec, name: str) -> str | None:
    """The type of `entity`'s field `name` (None for a field it does not have)."""
    a = entity.attribute(name)
    return a.type if a is not None else None


_SIGNS = sorted({*UNITS.values(), *(c[:-1] for c in _COUNTED)}, key=len, reverse=True)  # longest first
_UNIT_AFTER = re.compile(
    rf"(?:{'|'.join(re.escape(s) for s in _CLOSED_UP)}"
    rf"|\s(?:{'|'.join(re.escape(s) for s in _SIGNS if s not in _CLOSED_UP)})(?:/[a-z]+)?)(?![\w²³/])"
)


def unit_after(text: str) -> str:
    """The unit `labelled` wrote at the start of `text` (" kg", "°C", " day"), or ""."""
    m = _UNIT_AFTER.match(text)
    return m[0] if m else ""


def compared_label(name: str, kind: str | None = None) -> str:
    """A field as a comparison names it, without its unit: "the highest price", not "the highest
    price cents" or "the highest water temp (°C)"."""
    return re.sub(r" (cents|pence)$", "", _unit_of(field_label(name, kind))[0])


def measured_label(name: str, kind: str | None = None) -> str:
    """A field as a question or a sum names it, its unit said after it: "runtime in seconds", "water
    temp in °C", "markup percentage" (never "the runtime (seconds) of edit cut EDI-009")."""
    head, unit = _unit_of(field_label(name, kind))
    return head if unit is None else f"{head} percentage" if unit == "%" else f"{head} in {unit}"


def _unit_of(label: str) -> tuple[str, str | None]:
    """A `field_label` split into its words and the unit it writes in brackets: ("water temp", "°C");
    (label, None) when it has none."""
    m = re.match(r"^(.+) \(([^()]+)\)$", label)
    return (m[1], m[2]) if m else (label, None)


# dates that say when something is due or planned to happen, not when it happened: "the most
# recently scheduled" would misread them
_PLANNED = frozenset(
    {"scheduled", "planned", "expected", "estimated", "promised", "needed", "required", "due", "born", "set"}
)


def done_when(attr: str) -> str | None:
    """The past-tense event a date field records, when it records one: `reported_at` -> "reported",
    `last_serviced_on` -> "serviced"; None for `due_date`, `start_date` or `scheduled_at`, whose
    latest value is not the thing done most recently."""
    said = words(attr)
    stem = re.sub(r" (on|at|date)$", "", said).removeprefix("last ")
    if stem == said or not _participle(stem) or " " in stem or stem in _PLANNED:
        return None
    return stem


# nouns with no plural: several of them are "records" ("the playback progress records", never
# "playback progresses")
_UNCOUNTABLE = frozenset({
    "progress", "feedback", "equipment", "information", "software", "staff", "research", "evidence",
    "furniture", "luggage", "baggage", "advice", "knowledge", "metadata", "analytics", "weather",
    "traffic", "mail", "inventory", "clothing", "livestock", "seating",
})  # fmt: skip


def plural(name: str) -> str:
    """`lab_analysis` -> `lab analyses`: English plurals of the last word (irregular ones too, from
    `inflect`); an uncountable noun is counted in records."""
    w = words(name)
    if w.endswith(("sales", "series", "news", "data")):
        return w  # already plural, or the same in both
    head, _, last = w.rpartition(" ")
    if last in _UNCOUNTABLE:
        return f"{w} records"
    if not last.isalpha() or last.isupper():  # a code or an acronym: `SKU` -> `SKUs`
        return w + "s"
    said = _english().plural_noun(last)
    return f"{head} {said}" if head else said


def singular(table: str) -> str:
    """`purchase_orders` -> `purchase_order`, `leases` -> `lease`, `analyses` -> `analysis`: a table's
    last word in the singular (`inflect`); a word with no plural form stays."""
    head, sep, last = table.rpartition("_")
    if last in ("data", "metadata", "media", "analytics"):
        return table  # a table of data holds data, not "datum" records
    one = _english().singular_noun(last) if last.isalpha() and last.islower() else False
    return f"{head}{sep}{one}" if one else table


_NOT_PLURAL_END = ("ss", "us", "is", "as", "os", "news", "series", "species", "lens", "chassis", "yes")


def is_plural(label: str) -> bool:
    """Whether a field's words end in a plural noun, so a sentence says "its operational restrictions
    are ...", never "... is ..."; a word that only ends in s (status, address, basis) is not one."""
    last = label.rpartition(" ")[2]
    if len(last) < 4 or not last.isalpha() or not last.endswith("s") or last in _UNCOUNTABLE:
        return False
    return not last.endswith(_NOT_PLURAL_END) and bool(_english().singular_noun(last))


_ENGLISH = threading.Lock()  # one thread loads inflect; the others wait for the whole module


@cache
def _english() -> Any:
    """inflect's engine. inflect wraps its methods in typeguard's `@typechecked`, which re-parses and
    recompiles the module's source for each at import: 1.3 s in every process that builds or words
    tasks, against 0.07 s without. Its checks only reject arguments of the wrong type, and this
    module passes it words, so it is imported with the decorator as the identity. Task synthesis
    runs on threads: under the lock, a second thread never sees the module half made."""
    with _ENGLISH:
        if "inflect" not in sys.modules:
            import typeguard

            checked = typeguard.typechecked
            typeguard.typechecked = _as_is  # type: ignore[assignment]
            try:
                import inflect
            finally:
                typeguard.typechecked = checked
        import inflect

        return inflect.engine()


def _as_is(target: Any = None, **_: Any) -> Any:
    """`@typechecked` and `@typechecked(...)` that leave the function as it is."""
    return target if target is not None else (lambda function: function)


def say(value: Any, name: str = "") -> str:
    """A value of the field `name` as it reads in a sentence: a number as `written_figure` writes it
    (603,241; zip 90210), a date as people write it (March 13, 2026), other text quoted."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return written_figure(value, name)
    if isinstance(value, str):
        return spoken_date(value) or f"'{value}'"
    if isinstance(value, list):
        return ", ".join(say(v, name) for v in value) or "nothing"
    return str(value)


def said(entity: EntitySpec, attr: str, value: Any) -> str:
    """A value of one of `entity`'s fields as a sentence has it: an enum as its words (status on
    hold, kind LDL, level B1), anything else as `say` writes it."""
    a = entity.attribute(attr)
    if a is not None and a.type == "enum" and isinstance(value, str):
        return spoken_code(value)
    return say(value, attr)


_BLOOD = re.compile(r"(a|b|ab|o)[_ ]?(pos|neg|positive|negative)")
_DONE_BY = re.compile(
    r"(manager|customer|client|employee|guest|host|admin|owner|user|driver|seller|buyer|patient|doctor|vendor"
    r"|supplier|carrier|reviewer|approver|member|tenant|landlord|agent|candidate|student|teacher|system)"
    r"_([a-z]+ed)"
)
# days and months as an enum writes them short, and as people say them
_DAY_LIST = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTH_LIST = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
               "October", "November", "December")  # fmt: skip
DAY_NAMES = {
    **{d[:3].lower(): d for d in _DAY_LIST}, **{d.lower(): d for d in _DAY_LIST}, "tues": "Tuesday",
    "thu": "Thursday", "thur": "Thursday", "thurs": "Thursday", "weds": "Wednesday",
    **{m[:3].lower(): m for m in _MONTH_LIST}, **{m.lower(): m for m in _MONTH_LIST}, "sept": "September",
}  # fmt: skip
_CODE = re.compile(r"\b[a-ln-z]\d\b")  # a level or grade: B1, P2, Q3 (never a unit such as m3)


def spoken_code(value: str) -> str:
    """An enum value as people write it: `on_hold` -> "on hold", `ldl` -> "LDL", `b1` -> "B1",
    `missing_po` -> "missing PO"; a MIME type or an address is left as it is, and so is a language
    code ("ar")."""
    if "/" in value or "." in value:
        return value.replace("_", " ")
    day = DAY_NAMES.get(value.lower())
    if day is not None:  # `tue` is Tuesday, `sep` September
        return day
    done_by = _DONE_BY.fullmatch(value.lower())
    if done_by:  # `manager_submitted` is "submitted by the manager", never "manager submitted"
        return f"{done_by.group(2)} by the {done_by.group(1)}"
    blood = _BLOOD.fullmatch(value.lower())
    if blood:  # `ab_pos` is blood group AB positive, never "ab POS" (a point of sale)
        return f"{blood.group(1).upper()} {'positive' if blood.group(2).startswith('pos') else 'negative'}"
    words_ = _WORD.sub(
        lambda m: m.group(0) if m.group(0) == "ar" else _acronym(m.group(0)), value.replace("_", " ")
    )
    return _CODE.sub(lambda m: m.group(0).upper(), words_)


def cue(entity: EntitySpec, attr: str, value: Any) -> str:
    a = entity.attribute(attr)
    if a is not None and a.type == "bool":
        return f"{words(attr)} set to {'yes' if value else 'no'}"
    if a is not None and a.type == "enum":  # said as a word ("result not tested"), as the checks read it
        return f"{words(attr)} {said(entity, attr, str(value))}"
    return f"{words(attr)} {say(value, attr)}"


def _usable(entity: EntitySpec, attr: str, value: Any) -> bool:
    a = entity.attribute(attr)
    if a is None or a.type not in _CUE_TYPES or attr == entity.key or value is None or value == "":
        return False
    return not (isinstance(value, str) and (_ID_SHAPE.match(value) or len(value) > 60 or "@" in value))


_NAME_FIELD = re.compile(
    r"^(name|title|full_name|display_name|label|subject|code|headline)$|_(name|title|code)$"
)


def is_name_field(name: str) -> bool:
    """Whether an attribute is what a record is called ("name", "title", "scac_code"), as against a
    value that merely tells records apart (a note, a merchant category, who approved it)."""
    return _NAME_FIELD.search(name) is not None and not name.endswith(("_by_name", "person_name"))


def describe_record(
    spec: EnvSpec, state: Mapping[str, Any], entity_name: str, key: str, *, allow_ids: bool
) -> str | None:
    """A phrase that picks exactly this record in `state`, or None if no short one exists."""
    entity = spec.entity(entity_name)
    table: Mapping[str, Mapping[str, Any]] = state.get(entity.table) or {}
    record = table.get(key)
    if record is None:
        return None
    label = entity.label_attribute
    if label is not None and not is_name_field(label.name):
        label = None  # a note or an author tells records apart but is no record's name: said as a cue
    if allow_ids:
        shown = record.get(label.name) if label is not None else None
        return f"{words(entity.name)} {key}" + (f" ({shown})" if isinstance(shown, str) and shown else "")
    order: list[str] = []
    if label is not None and _usable(entity, label.name, record.get(label.name)):
        order.append(label.name)
    for t in _CUE_TYPES:
        for a in entity.attributes:
            if a.type == t and a.name not in order and _usable(entity, a.name, record.get(a.name)):
                order.append(a.name)
    chosen: list[str] = []
    others = [r for k, r in table.items() if k != key]
    # the fewest facts a person would give: its name, and one more fact that no other record shares
    # where one does ("the player with the nickname 'robertsamber'", not "... whose region is eu and
    # whose reason is compensation" first); else facts added one by one until it is the only one
    known_as = [a for a in order[:1] if label is not None and a == label.name]
    left = [r for r in others if all(r.get(a) == record.get(a) for a in known_as)]
    alone = next(
        (a for a in order if a not in known_as and all(r.get(a) != record.get(a) for r in left)), None
    )
    if not left or alone is not None:
        order = known_as + ([alone] if left and alone is not None else [])
    for attr in order:
        if len(chosen) == 3:
            break
        before = len(others)
        remaining = [r for r in others if r.get(attr) == record.get(attr)]
        if len(remaining) < before or attr == (label.name if label else None):
            chosen.append(attr)
            others = remaining
        if not others:
            break
    if others or not chosen:
        return None
    named = ""
    cues: list[str] = []
    for attr in chosen:
        if label is not None and attr == label.name and not re.search(r"(^|_)code$", attr):
            named = f" {'named' if 'name' in attr else 'called'} {say(record[attr])}"
        else:  # a code is a cue, not a name: "the claim with claim code 76", never "called '76'"
            cues.append(attr)
    return singled_out(entity, record, cues, named)


# Fields whose value says what state a record is in, and fields whose value says what kind of record
# it is: both are said before the record's noun ("the scheduled laundry order", "the dinner meal").
_STATE_FIELD = re.compile(r"^(status|state|stage|phase)$|_(status|state)$")
_KIND_FIELD = re.compile(r"(^|_)(type|kind|category|format|mode|method|channel|slot|sex|gender|source|size)$")
_GRADE_FIELD = re.compile(r"^(priority|severity|tier|risk|risk_level|grade)$")  # "the high priority ticket"
# values that read wrongly in front of a noun: "the new order" is the one the request creates
_NO_MODIFIER = frozenset({"new", "other", "none", "unknown", "n/a", "na", "mixed", "any", "all", "default"})
# words a yes/no field's name or a state may open with that make it a place or a scope a record is in:
# `for_everyone`, `in_stock`, `on_hold` ("the messages that are not for everyone", never "without for
# everyone"; "the tickets that are on hold", "are over budget")
PREPOSITIONS = frozenset(
    {"in", "on", "at", "under", "out", "off", "for", "to", "by", "within", "over", "from"}
)
_PREPOSITION = PREPOSITIONS | {"awaiting", "pending"}  # a state also reads so: "are awaiting approval"
_LINKING = ("on", "at", "by", "until", "from", "to", "for", "in")
# words that lead into a date as a participle does: "effective on March 23, 2026", "valid from ...",
# "starts on ..." (never "the model weight with effective on March 23, 2026")
# verbs among them, with where in a record's life each falls and its -ing form ("a new posting expiring
# on ...", never "a new posting expires on ...")
DATED_VERBS = {
    "opens": (0, "opening"), "begins": (0, "beginning"), "starts": (0, "starting"), "runs": (1, "running"),
    "occurs": (1, "occurring"), "closes": (2, "closing"), "ends": (2, "ending"), "expires": (3, "expiring"),
}  # fmt: skip
_DATED = frozenset({"effective", "valid", "payable", "available", "open", "active", "live", *DATED_VERBS})
_VERB_FIRST = frozenset({"needs", "requires", "allows", "accepts", "includes", "has", "uses", "wants"})


_NUMBERING = frozenset({"no", "number", "num", "nr", "index", "rank", "seq", "sequence", "version"})
# past participles that are not "-ed": "paid on", "sent at", "born on"
_PARTICIPLES = frozenset({
    "paid", "sent", "held", "made", "done", "born", "given", "taken", "seen", "built", "sold", "bought",
    "eaten", "written", "spent", "drawn", "chosen", "run", "set", "put", "read", "won", "lost", "met",
    "shown", "known", "kept", "left", "due", "broken", "frozen", "hidden", "driven", "proven",
    "forgotten", "stolen", "spoken", "beaten", "ridden", "shaken", "sworn", "worn", "torn",
})  # fmt: skip


def introduces(label: str) -> bool:
    """Whether a field's words already lead into its value after a noun: a participle and its
    preposition ("eaten on", "administered by", "paid at"), or a participle alone ("approved by" is
    one, "issued" another when the value is a person or a date)."""
    said_ = label.lower().split()
    if len(said_) < 2 or said_[-1] not in _LINKING:
        return False
    return _participle(said_[-2]) or (said_[-1] in ("on", "from", "until", "to") and said_[-2] in _DATED)


def _participle(word: str) -> bool:
    """Whether a word is a past participle ("approved", "paid", "eaten"); "token" and "kitchen" are not."""
    return (word.endswith("ed") and len(word) > 3) or word in _PARTICIPLES


def plural_word(word: str) -> bool:
    return word.endswith("s") and not word.endswith(("ss", "us", "is", "ics")) and len(word) > 3


def singled_out(
    entity: EntitySpec, record: Mapping[str, Any], cues: list[str], named: str = "", *, many: bool = False
) -> str:
    """The phrase a person uses for one record by some of its values: the values that say its state
    or kind go before the noun, a yes/no state too ("the sealed bag"), a date or a person that a
    field's words already introduce goes after it ("the vaccination administered by 'Rebekah
    Bruce'", "the meal eaten on '2026-02-15'"), a number with its measure ("with a total of 65.77",
    "with 248123 followers") and other text with its label ("with the garment note 'Small tear'");
    any other choice is said as what the record's field is ("whose reason is billing error").

    `many` says the records that share the values instead ("the active programs", "the programs
    whose condition is hypertension")."""
    are, does = ("are", "do") if many else ("is", "does")
    states: list[str] = []
    grades: list[str] = []
    tail: list[str] = []
    before: list[str] = []
    after: list[str] = []
    having: list[str] = []
    whose: list[str] = []
    for attr in cues:
        a = entity.attribute(attr)
        value = record.get(attr)
        label = field_label(attr, kind_of(entity, attr))
        last = label.split()[-1].lower()
        if introduces(label) and not (a is not None and a.type == "bool"):
            # "administered by 'Rebekah Bruce'", "proposed by creditor"
            after.append(f"{label} {said(entity, attr, value)}")
        elif a is not None and a.type == "enum" and isinstance(value, str):
            shown = said(entity, attr, value)
            bare = shown.lower()
            noun = words(entity.name).split()[-1].lower()  # never "the terminated termination"
            echoed = bare in words(entity.name).lower().split()  # never "the trusted trusted device"
            if (
                bare in _NO_MODIFIER
                or not re.fullmatch(r"[a-z][a-z -]*", bare)
                or bare[:5] == noun[:5]
                or echoed
            ):
                whose.append(f"whose {label} is {shown}")
            elif _STATE_FIELD.search(attr):
                first = bare.split()[0]
                if first in _PREPOSITION and " " in bare:
                    after.append(shown)  # "the order on hold"
                elif not states and (" " not in bare or first.endswith("ly") or first == "not"):
                    states.append(shown)  # "the scheduled order", "the partially paid invoice"
                else:
                    whose.append(f"whose {label} is {shown}")  # never "the crew on site outage"
            elif _KIND_FIELD.search(attr) and not before:  # one kind before a noun, never a pile
                before.append(shown)
            elif _GRADE_FIELD.search(attr) and not grades:
                grades.append(f"{shown} {label}")
            else:
                whose.append(f"whose {label} is {shown}")
        elif a is not None and a.type == "bool":
            said_ = words(attr).split()
            head = said_[0].lower()
            if len(said_) > 1 and _participle(head):  # "approved by client", "not approved by client"
                (after if value else tail).append(("" if value else "not ") + words(attr))
                continue
            if len(said_) > 1 and _participle(said_[-1].lower()) and head not in ("is", "has"):
                # `signature_captured`: "whose signature is captured", "whose signature is not captured"
                whose.append(f"whose {' '.join(said_[:-1])} is {'' if value else 'not '}{said_[-1]}")
                continue
            flag = words(attr).removeprefix("is ").removeprefix("has ")
            if " " not in flag and (is_state_word(flag) or head != "has"):
                echoed = flag in words(entity.name).lower().split()  # "the trusted devices that are trusted"
                if value and not echoed:
                    states.append(flag)
                else:
                    tail.append(f"that {are} {'' if value else 'not '}{flag}")
            elif head == "has" and len(words(attr).split()) > 1:  # `has_receipt`
                (having.append(flag) if value else after.append(f"without {flag}"))
            elif head in _VERB_FIRST:
                rest = words(attr).split(" ", 1)[-1]
                verb = _base(head) if many else head
                tail.append(f"that {verb} {rest}" if value else f"that {does} not {_base(head)} {rest}")
            elif len(said_) > 1 and (is_state_word(head) or head in PREPOSITIONS):
                # `open_24h`, `for_everyone`: "that are open 24h", never "with open 24h"
                tail.append(f"that {are} {'' if value else 'not '}{flag}")
            else:  # "with data sharing consent", "without data sharing consent"
                (having.append(flag) if value else after.append(f"without {flag}"))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            words_ = label.split()
            head, measured = labelled(attr, say(value, attr), kind_of(entity, attr))
            if head != label:  # a measure with its unit: "with a total of 89.08 hours", "175 minutes worked"
                one = " " not in head and _participle(head.lower())
                having.append(f"{measured} {head}" if one else f"{article(head)} of {measured}")
            elif last in _NUMBERING:
                having.append(f"{label} {say(value, attr)}")  # "with lap no 2"
            elif last in ("over", "above", "under", "below", "within", "than"):
                having.append(
                    f"{label} {say(value, attr)}"
                )  # "with receipt required over 10", never "over of 10"
            elif plural_word(words_[-1]) and "(" not in label and a is not None and a.type == "int":
                # "with 248123 followers", "with 1 guest"
                having.append(f"{say(value, attr)} {_one(label, -1) if value == 1 else label}")
            elif (
                len(words_) > 1
                and plural_word(words_[0])
                and "(" not in label
                and a is not None
                and a.type == "int"
            ):
                # "with 4 items consumed", "with 20757 records read", "with 1 item consumed"
                having.append(f"{say(value, attr)} {_one(label, 0) if value == 1 else label}")
            elif plural_word(words_[-1]):
                having.append(f"{label} of {say(value, attr)}")  # an amount: "with total arrears of 1395.19"
            else:
                having.append(f"{article(label)} of {say(value, attr)}")  # "with a total of 65.77"
        elif last == "of":
            after.append(f"{label} {say(value, attr)}")  # "the statement as of '2026-05-01'"
        elif last in _LINKING or label.split()[0] in ("is", "has"):
            # "with move out on '2025-08-05'", as the field reads
            having.append(f"{label} {say(value, attr)}")
        elif a is not None and a.type == "date":
            having.append(f"{article(label)} of {say(value, attr)}")  # "with a start date of '2026-03-13'"
        else:
            having.append(f"the {label} {say(value, attr)}")  # "with the zone 'North Hills'"
    noun = plural(entity.name) if many else words(entity.name)
    phrase = " ".join(["the", *states, *grades, *before, noun]) + named
    if after:
        phrase += " " + listing(after)
    if having:
        phrase += " with " + listing(having)
    if tail:
        phrase += " " + listing(tail)
    if whose:
        phrase += (", " if having or after or tail else " ") + listing(whose)
    return phrase


def predicate(entity: EntitySpec, attr: str, value: Any) -> str:
    """What records that share a value are said to do, after "how many of those ...": "are active",
    "are not sealed", "need accommodation", "have condition hypertension"."""
    a = entity.attribute(attr)
    said_ = words(attr).split()
    if a is not None and a.type == "bool":
        head = said_[0].lower()
        flag = " ".join(said_[1:]) if head in ("is", "has") and len(said_) > 1 else " ".join(said_)
        if head == "has" and len(said_) > 1:
            return f"have {flag}" if value else f"do not have {flag}"
        if head in _VERB_FIRST:
            rest = " ".join(said_[1:])
            return f"{_base(head)} {rest}" if value else f"do not {_base(head)} {rest}"
        if " " not in flag or _participle(said_[0].lower()):
            return f"are {flag}" if value else f"are not {flag}"
        return f"have {flag}" if value else f"do not have {flag}"
    if introduces(words(attr)):  # "are cancelled by guest", never "have cancelled by guest"
        return f"are {words(attr)} {said(entity, attr, value)}"
    if a is not None and a.type == "enum" and isinstance(value, str) and _STATE_FIELD.search(attr):
        shown = said(entity, attr, value)
        if " " not in shown and shown.lower() not in _NO_MODIFIER:
            return f"are {shown}"
        if shown.split()[0].lower() in _PREPOSITION:  # "are in service", "are on hold"
            return f"are {shown}"
    return f"have {cue(entity, attr, value)}"


def counted(label: str, value: str) -> str | None:
    """A whole number of a field named by what it counts, as a count: "3 guests", "1 serving"; None
    for any other field or value."""
    if " " in label or not plural_word(label) or not re.fullmatch(r"\d+", value):
        return None
    return f"{value} {_one(label, 0) if value == '1' else label}"


def _one(label: str, at: int) -> str:
    """A label with its counted word singular: `guests` -> `guest`, `items consumed` -> `item consumed`."""
    said_ = label.split()
    w = said_[at]
    said_[at] = (
        w[:-3] + "y" if w.endswith("ies") else w[:-2] if w.endswith(("ches", "shes", "xes")) else w[:-1]
    )
    return " ".join(said_)


def _base(verb: str) -> str:
    """`needs` -> `need`, `has` -> `have`: the verb after "does not"."""
    return "have" if verb == "has" else verb.removesuffix("s")


def listing(parts: Sequence[str]) -> str:
    """`a`, `b`, `c` -> "a, b and c" (empty parts left out)."""
    parts = [p for p in parts if p]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1] if parts else ""
