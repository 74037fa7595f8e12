"""Values from JSON schemas: one that satisfies a schema, and one that breaks it.

Seeds declare what their values look like (a Twilio SID is `^SM[0-9a-fA-F]{32}$`, an id is an
int64, a timestamp a `date-time`), so an initial state and the calls that verify an environment
must make values of that shape. `schema_value` makes one for a resolved JSON schema (type, enum and
const, anyOf/oneOf/allOf, format, pattern, length, numeric bounds and multipleOf, arrays, objects),
using an attribute's name as a hint where the schema leaves freedom (an `email` string reads as an
e-mail). `schema_violation` makes one that the schema refuses, for invalid calls. `schema_key` makes
record keys: integers counted up from 1 (or the schema's minimum), other keys drawn and kept unique.

Everything is a function of the `random.Random` it is given (no global random state, no iteration
over sets of strings), so the same rng state gives the same value in every process. Each value is
checked with jsonschema (draft 2020-12, with format checks) before it is returned; a schema that no
value can be found for within a few tries gets the closest attempt.
"""

from __future__ import annotations

import base64
import copy
import importlib
import json
import math
import random
import re
import string
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from datetime import date, datetime, timedelta
from fractions import Fraction
from functools import lru_cache
from typing import Any, TypeGuard
from urllib.parse import urlparse

from jsonschema import Draft202012Validator, FormatChecker

FIRST = ["Ava", "Liam", "Mia", "Noah", "Zoe", "Ethan", "Lena", "Omar", "Iris", "Leo", "Nora", "Kai", "Maya", "Ivan", "Sara", "Theo", "Aria", "Jonas", "Lucia", "Ravi", "Chloe", "Mateo", "Hana", "Felix", "Ines", "Yusuf", "Elena", "Marco", "Priya", "Diego"]  # fmt: skip
LAST = ["Chen", "Patel", "Garcia", "Novak", "Kim", "Silva", "Müller", "Okafor", "Rossi", "Haddad", "Tanaka", "Larsen", "Dubois", "Costa", "Ivanova", "Nguyen", "Schmidt", "Moreau", "Khan", "Lopez"]  # fmt: skip
CITIES = [
    "Lisbon",
    "Austin",
    "Osaka",
    "Lyon",
    "Denver",
    "Porto",
    "Seoul",
    "Leeds",
    "Turin",
    "Calgary",
    "Dublin",
    "Tallinn",
]
WORDS = ["alpha", "harbor", "summit", "cedar", "orbit", "maple", "vertex", "river", "quartz", "atlas", "nimbus", "coral", "falcon", "lumen", "pioneer", "beacon", "meridian", "canyon", "willow", "ember"]  # fmt: skip
# Free text a schema leaves open, said the way a person of any domain would write it.
NOTES = [
    "Customer asked to move this to next week.", "Checked and confirmed, nothing further needed.",
    "Waiting on the signed paperwork before we continue.", "Please call before delivery; the gate code changed.",
    "Approved by the team lead after a second review.", "Duplicate of an earlier request, kept for reference.",
    "Priority raised after a complaint from the client.", "Paid in full; receipt sent by e-mail.",
    "Documents scanned and filed with the original.", "Follow up on Monday if there is no reply.",
    "Needs a quote from the supplier before approval.", "Handled over the phone, no visit required.",
]  # fmt: skip
BASE_DAY = date(2026, 3, 2)
BASE_MOMENT = datetime(2026, 3, 2, 9, 0)

_JSON_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")
_INT_FORMATS = {
    "int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1), "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1), "uint8": (0, 2**8 - 1), "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1), "uint64": (0, 2**64 - 1),
}  # fmt: skip
_STRING_FORMATS = frozenset(
    {
        "date", "date-time", "time", "duration", "email", "idn-email", "uri", "url", "iri", "uri-reference",
        "iri-reference", "uri-template", "uuid", "ipv4", "ipv6", "hostname", "idn-hostname", "byte",
        "binary", "password", "json-pointer", "relative-json-pointer", "regex", "phone",
    }
)  # fmt: skip
_MAX_DEPTH = 6


# ---------------------------------------------------------------- checking


def _format_checker() -> FormatChecker:
    """jsonschema's draft 2020-12 format checks plus the ones it has no package for here (uri,
    hostname, intN). A bare `FormatChecker()` would mix in other drafts' (draft 3's `time`)."""
    checker = FormatChecker(formats=())
    checker.checkers = dict(Draft202012Validator.FORMAT_CHECKER.checkers)

    def uri(v: object) -> bool:
        if not isinstance(v, str):
            return True
        parts = urlparse(v)
        return bool(parts.scheme) and bool(parts.netloc or parts.path) and not re.search(r"\s", v)

    def reference(v: object) -> bool:
        return not isinstance(v, str) or not re.search(r"\s", v)

    def hostname(v: object) -> bool:
        label = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
        return not isinstance(v, str) or (
            len(v) <= 253 and re.fullmatch(rf"{label}(?:\.{label})*", v) is not None
        )

    def int_range(lo: int, hi: int) -> Callable[[object], bool]:
        def check(v: object) -> bool:
            if isinstance(v, str):
                return re.fullmatch(r"-?\d+", v) is not None and lo <= int(v) <= hi
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                return True
            return float(v).is_integer() and lo <= v <= hi

        return check

    for name in ("uri", "url", "iri"):
        checker.checks(name)(uri)
    for name in ("uri-reference", "iri-reference", "uri-template"):
        checker.checks(name)(reference)
    if "hostname" not in checker.checkers:
        checker.checks("hostname")(hostname)
    for name, (lo, hi) in _INT_FORMATS.items():
        checker.checks(name)(int_range(lo, hi))
    return checker


_FORMATS = _format_checker()


@lru_cache(maxsize=4096)
def _validator(text: str, formats: bool) -> Any:
    return Draft202012Validator(json.loads(text), format_checker=_FORMATS if formats else None)


def check(value: Any, schema: Any, *, formats: bool = True) -> bool | None:
    """Whether `value` satisfies `schema` (draft 2020-12; `formats`: also assert formats), or None
    when the schema cannot be checked (an invalid pattern, an unknown type name, a cycle)."""
    if schema is True or schema is None:
        return True
    if schema is False:
        return False
    try:
        text = json.dumps(schema, sort_keys=True, default=repr)
        return bool(_validator(text, formats).is_valid(value))
    except Exception:  # a schema jsonschema cannot apply: nothing can be said either way
        return None


def conforms(value: Any, schema: Any, *, formats: bool = True) -> bool:
    return check(value, schema, formats=formats) is True


def allows_null(schema: Any) -> bool:
    return conforms(None, schema, formats=False)


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def json_types(schema: Any) -> list[str] | None:
    """The JSON types a schema admits, in its own order (None: any type)."""
    if not isinstance(schema, Mapping):
        return [] if schema is False else None
    t = schema.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [x for x in t if isinstance(x, str)]
    if "const" in schema:
        return [json_type(schema["const"])]
    if isinstance(schema.get("enum"), list):
        return list(dict.fromkeys(json_type(v) for v in schema["enum"]))
    for comb in ("anyOf", "oneOf"):
        branches = schema.get(comb)
        if isinstance(branches, list) and branches:
            out: list[str] = []
            for b in branches:
                bt = json_types(b)
                if bt is None:
                    return None
                out += [x for x in bt if x not in out]
            return out
    if isinstance(schema.get("allOf"), list):
        found = [bt for bt in (json_types(b) for b in schema["allOf"]) if bt is not None]
        if found:
            return [
                x for x in found[0] if all(x in bt or (x == "integer" and "number" in bt) for bt in found)
            ]
    return None


def type_matches(schema: Any, value: Any) -> bool:
    """Whether the value's JSON type is one the schema admits (the type alone, no other keyword)."""
    types = json_types(schema)
    if types is None:
        return True
    kind = json_type(value)
    if kind == "integer":
        return "integer" in types or "number" in types
    if kind == "number":
        return "number" in types or ("integer" in types and float(value).is_integer())
    return kind in types


def written_number(value: float) -> str:
    """A number as a person writes it: every figure it has (43779.35, never the 43779.3 that `:g`
    rounds to), no exponent (1433463.86, not 1.43346e+06), and no ".0" on a whole one."""
    text = f"{round(value, 6):.6f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


# a field whose number is a code or a year, written without separators (zip 90210, model year 2019)
_CODE_NUMBER = re.compile(
    r"(^|_)(id|ids|zip|zipcode|postal|postcode|pin|phone|fax|isbn|issn|sku|upc|ean|gtin|serial|year|years)"
    r"(_|$)|(^|_)(number|no|num|nr|code|ref|reference|extension|ext|version|seq|sequence)$"
)


# fields that count or measure something: 1,957 words or 1,850 kcal is never a year
_MEASURE = re.compile(
    r"(^|_)(count|counts|total|amount|qty|quantity|pages|words|calories|kcal|steps|units|balance|price|cost|"
    r"fee|capacity|points|score|seats|attendance|stock|weight|kg|ml|km|miles|minutes|hours|sold)(_|$)"
)


def written_figure(value: float, name: str = "") -> str:
    """A number a request states, as people write it: thousands separated (381,918,413 and
    43,779.35; never 381918413), every figure it has (`written_number`). A year (2019) and a number
    of a field that is a code or a year (`zip_code`, `order_number`, `year_built`) stay as written."""
    text = written_number(float(value)) if isinstance(value, float) else str(value)
    whole, dot, fraction = text.partition(".")
    digits = whole.lstrip("-")
    if (
        len(digits) < 4
        or not digits.isdigit()
        or _CODE_NUMBER.search(name.lower())
        or (
            len(digits) == 4
            and not fraction
            and 1800 <= int(digits) < 2200
            and not _MEASURE.search(name.lower())
        )
    ):
        return text
    return f"{whole[: len(whole) - len(digits)]}{int(digits):,}{dot}{fraction}"


def as_declared(value: Any, schema: Any) -> Any:
    """`value` in the type `schema` declares where it is a plain rendering of such a value: the string
    '4' for an integer (a record's key is kept as text), '2.5' for a number, the integer 4 as '4' for
    a string (a seed's integer id given to a parameter that takes ids as text), one value for an
    array of them. Anything else is returned as it is, for validation to judge."""
    if value is None or type_matches(schema, value):
        return value
    types = json_types(schema) or []
    if isinstance(value, str):
        text = value.strip()
        if "integer" in types and re.fullmatch(r"[+-]?\d+", text):
            return int(text)
        if "number" in types and re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
            return float(text)
    if types == ["string"] and isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # a seed's integer id handed to a parameter that takes keys as text
    if "array" in types and not isinstance(value, list) and isinstance(schema, Mapping):
        return [as_declared(value, schema.get("items", True))]
    return value


# ---------------------------------------------------------------- hints from a name


# Where a value is made from a seed's schema for a record of a known domain, the caller may say what
# a string called so reads like in that domain (`semantic.leaf_string`); None leaves it to the names here.
LEAF_STRINGS: ContextVar[Callable[[str, random.Random], str | None] | None] = ContextVar(
    "leaf_strings", default=None
)
# A nested object's own name or title is named after the object: a venue's `name` is `venue_name`.
_NAMED_BY_PARENT = frozenset({"name", "title", "label", "display_name"})
_QUALIFIERS = frozenset({"current", "latest", "last", "previous", "primary", "default", "main", "new", "old"})


def hint_string(name: str, rng: random.Random, index: int = 1) -> str:
    """A plausible string for a value called `name` (the schema leaves the shape free): the world's
    own where a world is being made (`LEAF_STRINGS`: its people, mailboxes, file addresses and the
    domain's notes), else one of the kind the name reads as."""
    n = name.lower()
    hook = LEAF_STRINGS.get()
    if hook is not None and not re.search(r"(^|_)(id|sid|uid|key)$", n):  # an id keeps its own shape
        value = hook(name, rng)
        if value is not None:
            return value
    if "email" in n:
        return f"{rng.choice(FIRST).lower()}.{rng.choice(LAST).lower()}{index}@example.com".replace("ü", "u")
    if re.search("phone|mobile|fax", n):
        return f"+1-555-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}"
    if re.search(r"(^|_)first_?name$", n):
        return rng.choice(FIRST)
    if re.search(r"(^|_)(last_?name|surname)$", n):
        return rng.choice(LAST)
    if re.search(r"full_?name|display_?name|contact|person|author|owner", n):
        return f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    if "address" in n:
        return f"{rng.randint(1, 400)} {rng.choice(WORDS).title()} St, {rng.choice(CITIES)}"
    if re.search("city|location|region|site", n):
        return rng.choice(CITIES)
    if re.search("currency", n):
        return rng.choice(("USD", "EUR", "JPY", "GBP"))
    if re.search("country", n):
        return rng.choice(("US", "PT", "JP", "FR", "DE", "GB"))
    if re.search("url|link|uri|href|website", n):
        return f"https://example.com/{rng.choice(WORDS)}/{index}"
    if re.search("code|sku|number|reference|serial|plate", n):
        return f"{(re.sub('[^a-z]', '', n)[:3] or 'ref').upper()}-{rng.randint(10000, 99999)}"
    if re.search(r"(^|_)(id|sid|uid|key)$", n):  # a follow-up's `follow_up_id`: "FU-48213"
        words = [w for w in re.split(r"[^a-z]+", re.sub(r"(^|_)(id|sid|uid|key)$", "", n)) if w]
        stem = "".join(w[0] for w in words) if len(words) > 1 else (words[0][:3] if words else "id")
        return f"{stem.upper()}-{rng.randint(10000, 99999)}"
    if re.search("note|description|comment|reason|summary|details|body|message|text|content", n):
        return rng.choice(NOTES)
    from agentomnia.envs.semantic import QUALIFIERS, THEMES  # semantic builds on this module

    return f"{rng.choice(QUALIFIERS)} {rng.choice(THEMES)}"


# Measurements whose scale does not change with the record they sit in: a heart rate is 58-125 beats a
# minute in a clinic's encounter, a vet's visit or a runner's workout. (name pattern, low, high, decimals)
MEASURE_RANGES: tuple[tuple[re.Pattern[str], float, float, int], ...] = tuple(
    (re.compile(p), lo, hi, dec)
    for p, lo, hi, dec in (
        (r"(^|_)max(imum)?_(hr|heart_?rate)(_bpm)?$", 165, 205, 0),  # the most it beats, not a rate at rest
        (r"(^|_)resting_(hr|heart_?rate)(_bpm)?$", 45, 80, 0),
        (r"heart_?rate|pulse|(^|_)hr(_bpm)?$", 58, 125, 0),
        (r"systolic", 100, 150, 0),
        (r"diastolic", 60, 95, 0),
        (r"spo2|o2_?sat|oxygen_sat", 93, 100, 0),
        (r"resp(iratory)?_rate|breaths?_per_min|breathing_rate", 12, 30, 0),
        (r"colou?r_temp|kelvin|(^|_)cct($|_)", 2700, 6500, 0),
        (r"blood_glucose|glucose_mg", 70, 180, 0),
    )
)


# Where a nested value sits (`encounter.vitals`), for the measurements whose scale depends on it: a
# temperature taken at a visit is a body's, one in a freezer's log is not.
LEAF_WHERE: ContextVar[str] = ContextVar("leaf_where", default="")
_CLINICAL = re.compile(r"encounter|visit|consult|vital|exam|triage|patient|admission|check_?up|appointment")


_PHOTO = re.compile(r"photo|image|picture|edit|preset|develop|filter|raw_file")
_SLIDER = re.compile(
    r"^(exposure(_ev)?|temp(erature)?|tint|contrast|saturation|vibrance|highlights|shadows|whites|blacks|clarity"
    r"|dehaze|texture)$"
)


def measure_range(name: str, where: str = "") -> tuple[float, float, int] | None:
    """The plausible range (low, high, decimals) of a measurement called `name` in a record or object
    `where` (entity.attribute), where its scale is fixed: vital signs, and a temperature taken at a visit."""
    n = name.lower()
    place = (where or LEAF_WHERE.get()).lower()
    if re.search(r"(^|_)temp(erature)?(_|$)", n) and _CLINICAL.search(place):
        return (97.3, 103.1, 1) if re.search(r"_f$|fahrenheit", n) else (36.3, 39.5, 1)
    if _PHOTO.search(place) and re.fullmatch(r"(width|height)(_px)?", n):  # a camera's frame, in pixels
        return (1080.0, 8192.0, 0)
    if _PHOTO.search(place) and (slider := _SLIDER.search(n)):  # a photo edit's develop settings
        if slider[0].startswith("temp"):
            return (2800.0, 7500.0, 0)  # white balance in kelvin, as a raw editor keeps it
        return (-5.0, 5.0, 2) if slider[0].startswith("exposure") else (-100.0, 100.0, 0)
    return next(((lo, hi, dec) for rx, lo, hi, dec in MEASURE_RANGES if rx.search(n)), None)


_NUMBER_RANGES: list[tuple[str, float, float, int]] = [
    # (name pattern, low, high, decimals) for money/float/int attributes; the first that matches wins, so
    # what a name says precisely (a capability index, a tariff per kWh) comes before what it says loosely
    # (a price, an amount, a count, hours)
    # -- measurements and counts with a scale of their own
    (r"(^|_)bathrooms$", 1, 4, 0),
    (r"(^|_)(cpk|ppk)$", 0.6, 2.5, 2),  # process capability index
    (r"(^|_)(aperture|f_?stop|f_?number)$", 1.4, 22, 1),  # a lens's f-number
    (r"(^|_)iso(_speed)?$", 100, 6400, 0),  # a camera's sensitivity
    (r"(^|_)(perceived_effort|rpe)$", 1, 10, 0),  # rate of perceived exertion
    (r"(^|_)sets$", 2, 6, 0),
    (r"(^|_)reps$", 3, 20, 0),
    (r"(^|_)cvss", 0.1, 10, 1),
    (r"(^|_)csat(_average|_avg|_score)?$", 1, 5, 2),  # customer satisfaction on a five-point scale
    (r"(^|_)saturation$", 0, 100, 0),
    (r"(^|_)(age_limit|min_age|minimum_age)$", 12, 21, 0),
    (r"(^|_)(attempts?|retries|retry_count)(_number|_no|_per_[a-z]+)?$", 1, 5, 0),
    (r"(^|_)extensions(_used|_granted|_taken)?$", 0, 3, 0),
    (r"(^|_)refills(_remaining|_authorized|_allowed|_left|_used)?$", 0, 11, 0),
    (r"(^|_)active_(holds|loans|deferrals|reservations)$", 0, 8, 0),
    (r"(^|_)open_(defects|queries|issues|findings|deferrals)$", 0, 15, 0),
    (r"(^|_)(out_of_tolerance|nonconforming|defectives)$", 0, 6, 0),  # parts of an inspected sample
    (r"(^|_)(min|minimum|required)_(staff|staffing|coverage|headcount)$", 1, 6, 0),
    (r"(^|_)suspended$", 0, 5, 0),
    (r"(^|_)credits_(remaining|left)$", 0, 20, 0),
    (r"^credits$", 0.5, 12, 1),  # course credits, a housekeeper's workload credits
    (r"^((start|end|first|last|current)_)?page(_number|_no)?$", 1, 250, 0),  # not a rate per page
    (r"(^|_)print_run$", 500, 20000, 0),
    (r"word_count", 800, 110000, 0),
    (r"file_size_kb|(^|_)size_kb$", 12, 25000, 0),
    (r"(^|_)(file_)?size_bytes$|(^|_)bytes$", 2000, 25000000, 0),
    (r"storage_used_mb|(^|_)storage_mb$", 50, 50000, 1),
    (r"roaming(_data)?_gb$", 0, 8, 2),
    (r"(^|_)data(_allowance|_used|_usage)?_gb$", 1, 100, 2),  # a mobile line's month
    (r"(^|_)(length|width|depth)_cm$", 10, 120, 1),  # a parcel's sides
    (r"square_feet|sq_?ft", 400, 2800, 0),  # a home's floor area
    (r"(^|_)(capacity_pallets|pallet_capacity|pallet_positions)$", 20, 2000, 0),
    (r"(^|_)(pallets|pallet_count)$", 1, 33, 0),  # a truck's load
    (r"battery(_capacity)?_kwh$", 35, 110, 1),  # an electric car's battery
    (r"per_kwh$", 0.15, 0.85, 2),  # a charging or power tariff
    (r"^kwh$|energy_kwh$|kwh_(used|delivered|consumed|charged)$", 0.5, 75, 2),  # a day's or a charge's
    (r"ramp_rate", 0.5, 25, 1),  # a generating unit's MW per minute
    (r"yield_t_(per_)?ha$|(^|_)(t|tonnes)_per_ha$", 1, 15, 2),  # a crop's tonnes per hectare
    (r"dose_mg_per_kg|mg_per_kg", 0.1, 50, 2),
    (r"(^|_)wind_(speed|gust)(_kmh|_kph)?$", 0, 90, 1),
    (r"odometer|(^|_)mileage(_km|_mi|_in|_out|_reading)?$", 5000, 180000, 0),  # a vehicle's odometer
    (r"(^|_)distance_m$", 200, 25000, 1),
    (r"(^|_)(flight|engine|operating|machine|airframe)_hours$|hours_since_|hours?_meter$", 100, 40000, 1),
    (r"(^|_)(service_due|life_limit)_hours$", 100, 40000, 1),  # hour-meter readings, not a day's hours
    (r"(^|_)flight_cycles$|cycles_since_", 200, 40000, 0),
    (r"accrual_per_month|monthly_accrual", 1.25, 2.5, 2),  # days of leave earned a month
    (r"useful_life_months", 24, 120, 0),
    (r"(^|_)(duration|term|contract|lease_term|min_term)_months$", 3, 36, 0),
    (r"equity_units|stock_options|(^|_)rsus?$", 500, 20000, 0),
    (r"(^|_)(management|commission|agency|platform|broker)_fee_(pct|percent)$", 3, 12, 1),
    (r"(^|_)(pct|percent)$", 0, 100, 1),  # before `budget` and `fee`: an error budget's percent left
    # -- money whose scale the name says
    (r"(^|_)(hourly_)?wage$|(^|_)pay_rate$", 12, 45, 2),
    (r"labou?r_rate$", 80, 220, 2),  # a workshop's rate per hour
    (r"(^|_)(daily|nightly|day|night|per_diem)_rate$|(^|_)per_diem$", 45, 380, 2),
    (r"(rate|price|cost|allowance)_per_(km|mile)$|(^|_)mileage_rate$", 0.25, 0.75, 2),
    (r"(fee|price|cost|rate|charge)_per_min(ute)?$", 0.1, 1.0, 2),
    (r"(^|_)(delivery|service|booking|convenience|shipping)_fee$", 0.99, 15, 2),
    (r"(^|_)(late_cancellation|cancellation|no_show|late)_fee$", 15, 150, 2),
    (r"(^|_)tip(_amount)?$|gratuity", 1, 30, 2),
    (r"(^|_)discount(_amount|_value)?$", 1, 60, 2),
    (r"(^|_)deductible$", 250, 2500, 0),
    (r"(^|_)overage(_charges?|_fees?|_amount)?$", 0, 150, 2),  # a phone line's month over its plan
    (r"(^|_)(monthly_|market_|base_|asking_)?rent(_amount)?$", 650, 4200, 2),
    (r"actual_cash_value|(^|_)acv$", 2500, 40000, 2),  # a car's
    (r"signing_bonus|sign_on_bonus|relocation_bonus", 1000, 25000, 0),
    (r"(^|_)(net|gross)_sales$", 1000, 15000, 2),  # a store's or a department's day
    # a cost code's cost to date, committed and at completion, and a budget's contingency left: on the
    # scale of a line's budget (a record's own budget is not known here)
    (r"(actual|spent)_to_date$|(^|_)committed$|estimate_at_completion|(^|_)eac$", 500, 25000, 2),
    (r"contingency_(remaining|used|balance)$", 500, 25000, 2),
    (r"approval_(threshold|limit)", 1000, 50000, 0),
    # -- the loose ones
    (r"(total|weekly|week|contracted)_hours", 8, 48, 1),  # before `total`: hours, not an amount
    (r"hours", 0.5, 12, 1),
    (r"salary|annual_income|income", 32000, 185000, 0),
    (r"net_worth|revenue|turnover", 150000, 25000000, 0),
    (r"hourly_rate|rate_per_hour", 18, 240, 2),
    (r"budget|contract_value|limit_amount|credit_limit|requested_limit|approved_limit", 5000, 500000, 0),
    (r"balance", 0, 48000, 2),
    (r"ticket_price|fare", 12, 480, 2),
    (r"copay|co_pay", 5, 75, 2),
    (r"deposit", 50, 2500, 2),
    (r"unit_price|unit_cost|price|cost|(^|_)fees?($|_)", 4, 900, 2),  # a fee, not a square foot
    (r"amount|total|paid|refund|value", 15, 4800, 2),
    (r"weight_kg|weight", 0.2, 95, 1),
    (r"height_cm", 150, 198, 0),
    (r"height_m|depth_m|length_m|span_m|width_m", 1.5, 60, 2),
    (r"area_m2|floor_area|sq_?m", 40, 12000, 0),
    (r"(^|_)temp(erature)?(_|$)", -5, 38, 1),  # not an attempt
    (r"speed_kmh|speed", 10, 120, 0),  # before `km`
    (r"distance_km|km", 1, 850, 1),
    (r"(^|_)age(_years|_in_years)?$", 18, 84, 0),  # not a page, an average or a wage
    (r"latitude|lat$", -55, 65, 4),
    (r"longitude|lng$|lon$", -160, 170, 4),
    # `(^|_)ratio`: not a duration, a concentration or a registration
    (r"percent|pct|_rate$|(^|_)ratio|share|probability|confidence|utilization", 0.02, 0.98, 3),
    (r"quantity|qty|units|count|pieces", 1, 48, 0),
    (r"capacity|seats|slots", 4, 240, 0),
    (r"stock|on_hand|inventory|available", 0, 420, 0),
    (r"duration_min|minutes|_min$", 15, 180, 0),
    (r"duration_s|seconds|_s$", 5, 1800, 0),
    (r"days", 1, 45, 0),
    (r"weeks", 1, 26, 0),
    (r"dose_mg|_mg$", 5, 800, 1),
    (r"volume_ml|_ml$", 5, 500, 1),
    (r"pages", 24, 860, 0),
    (r"year", 2012, 2026, 0),
]


_MINOR_UNITS = re.compile(r"^(.*?)_?(cents|pence|in_cents|minor_units)$")  # an amount in cents


def number_range(name: str) -> tuple[float, float, int] | None:
    """The plausible range (low, high, decimals) of a number called `name`: a measurement's where it
    sits (`measure_range`), else by its name alone (`_NUMBER_RANGES`); None when the name says nothing."""
    minor = _MINOR_UNITS.match(name)
    if minor and minor[1]:  # `price_cents` is the price in cents: a hundred times the price's range
        found = number_range(minor[1])
        return (found[0] * 100, found[1] * 100, 0) if found is not None else None
    if (measured := measure_range(name)) is not None:  # a heart rate, a blood pressure, a colour temperature
        return measured
    return _named_range(name)


@lru_cache(maxsize=4096)
def _named_range(name: str) -> tuple[float, float, int] | None:
    if re.search(r"rating|stars", name):
        return (1, 5, 1)
    for pattern, lo, hi, dec in _NUMBER_RANGES:
        if re.search(pattern, name):
            if re.search(r"percent|pct", name) and pattern.startswith("percent"):
                return (0, 100, 1)
            return (lo, hi, dec)
    return None


def int_hint(name: str, rng: random.Random) -> int:
    n = name.lower()
    if (minor := _MINOR_UNITS.match(n)) is not None and minor[1]:  # `total_cents`: the total, in cents
        found = number_range(n)
        return (
            rng.randint(int(found[0]), int(found[1])) if found else round(_number_hint(minor[1], rng) * 100)
        )
    if (measured := measure_range(n)) is not None:
        return rng.randint(math.ceil(measured[0]), math.floor(measured[1]))
    if "year" in n:
        return rng.randint(2015, 2026)
    if re.search("rating|score|level|priority|grade|tier|stars", n):
        return rng.randint(1, 5)
    if re.search("percent|pct", n):
        return rng.randint(0, 100)
    if re.search("minute|duration", n):
        return rng.choice((15, 30, 45, 60, 90, 120))
    if re.search("second|timeout|ttl", n):
        return rng.choice((30, 60, 300, 3600))
    if re.search("page_?size|limit|count|max|per_page", n):
        return rng.choice((10, 20, 25, 50))
    if re.search(r"(^|_)(page|offset)$", n):
        return rng.randint(0, 3)
    found = _named_range(n)  # what such a number runs to (a day's hours, a quantity, a capacity)
    if found is not None and found[1] - found[0] >= 2:
        return rng.randint(math.ceil(found[0]), max(math.ceil(found[0]), math.floor(found[1])))
    return rng.randint(1, 60)


def _number_hint(name: str, rng: random.Random) -> float:
    n = name.lower()
    if (measured := measure_range(n)) is not None:
        return round(rng.uniform(measured[0], measured[1]), measured[2])
    if re.search("rate|ratio|share|probability|confidence", n):
        return round(rng.uniform(0.05, 0.99), 3)
    if re.search("rating|score", n):
        return round(rng.uniform(1, 5), 1)
    if re.search("lat", n):
        return round(rng.uniform(-60, 60), 4)
    if re.search("lon|lng", n):
        return round(rng.uniform(-170, 170), 4)
    if re.search("salary|budget|limit|revenue|credit(?!s$)", n):  # workload or course `credits` are few
        return round(rng.uniform(500, 20000), 2)
    if (found := _named_range(n)) is not None:  # a day's hours, a weight, a distance
        return round(rng.uniform(found[0], found[1]), found[2])
    return round(rng.uniform(0.5, 500), 2)


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") and not name.endswith("ss") else name


# ---------------------------------------------------------------- strings from regular expressions

_sre: Any = importlib.import_module("re._parser")  # the parser `re` itself uses (no public stub)
_OP = {name: getattr(_sre, name, None) for name in (
    "LITERAL", "NOT_LITERAL", "ANY", "IN", "MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT", "BRANCH",
    "SUBPATTERN", "ATOMIC_GROUP", "GROUPREF", "GROUPREF_EXISTS", "AT", "ASSERT", "ASSERT_NOT", "CATEGORY",
    "RANGE", "RANGE_UNI_IGNORE", "NEGATE",
)}  # fmt: skip
_REPEATS = {_OP["MAX_REPEAT"], _OP["MIN_REPEAT"], _OP["POSSESSIVE_REPEAT"]} - {None}
_ALNUM = string.ascii_letters + string.digits
_PRINTABLE = _ALNUM + "-_.~!#$%&'*+/=?^`{|}@:;,<>()[]\"\\ "
_CATEGORY_RX = {
    "CATEGORY_DIGIT": r"\d", "CATEGORY_NOT_DIGIT": r"\D", "CATEGORY_SPACE": r"\s", "CATEGORY_NOT_SPACE": r"\S",
    "CATEGORY_WORD": r"\w", "CATEGORY_NOT_WORD": r"\W", "CATEGORY_LINEBREAK": r"\n", "CATEGORY_NOT_LINEBREAK": r".",
}  # fmt: skip


def _in_class(c: str, items: list[tuple[Any, Any]]) -> bool:
    o = ord(c)
    for op, av in items:
        if op == _OP["LITERAL"] and o == av:
            return True
        if op == _OP["RANGE"] and av[0] <= o <= av[1]:
            return True
        if op == _OP["RANGE_UNI_IGNORE"] and (av[0] <= o <= av[1] or av[0] <= ord(c.lower()) <= av[1]):
            return True
        if op == _OP["CATEGORY"] and re.fullmatch(_CATEGORY_RX.get(getattr(av, "name", ""), "(?!)"), c):
            return True
    return False


@lru_cache(maxsize=1024)
def _class_pool(items: tuple[tuple[Any, Any], ...]) -> tuple[str, str]:
    """The printable ASCII characters a character class takes, and the alphanumeric ones among them."""
    negate = any(op == _OP["NEGATE"] for op, _ in items)
    pool = "".join(c for c in _PRINTABLE if _in_class(c, list(items)) != negate)
    return pool, "".join(c for c in pool if c.isalnum())


def _class_char(items: list[tuple[Any, Any]], rng: random.Random) -> str:
    try:
        pool, alnum = _class_pool(tuple(items))
    except TypeError:  # an item the cache cannot hash
        pool, alnum = _class_pool.__wrapped__(tuple(items))
    if pool:
        return rng.choice(alnum if alnum and rng.random() < 0.85 else pool)
    for op, av in items:  # a class of characters beyond ASCII only
        if op == _OP["LITERAL"]:
            return chr(av)
        if op in (_OP["RANGE"], _OP["RANGE_UNI_IGNORE"]):
            return chr(rng.randint(av[0], av[1]))
    return "a"


def _emit(items: Any, rng: random.Random, stretch: int, groups: dict[int, str]) -> str:
    out: list[str] = []
    for op, av in items:
        if op == _OP["LITERAL"]:
            out.append(chr(av))
        elif op == _OP["NOT_LITERAL"]:
            out.append(rng.choice([c for c in _ALNUM if ord(c) != av]))
        elif op == _OP["ANY"]:
            out.append(rng.choice(_ALNUM))
        elif op == _OP["IN"]:
            out.append(_class_char(list(av), rng))
        elif op == _OP["CATEGORY"]:
            out.append(_class_char([(op, av)], rng))
        elif op in _REPEATS:
            low, high, sub = av
            top = low + stretch if high == _sre.MAXREPEAT else min(high, low + stretch)
            out += [_emit(sub, rng, stretch, groups) for _ in range(rng.randint(low, max(low, top)))]
        elif op == _OP["BRANCH"]:
            out.append(_emit(rng.choice(av[1]), rng, stretch, groups))
        elif op == _OP["SUBPATTERN"]:
            text = _emit(av[-1], rng, stretch, groups)
            if av[0]:
                groups[av[0]] = text
            out.append(text)
        elif op == _OP["ATOMIC_GROUP"]:
            out.append(_emit(av, rng, stretch, groups))
        elif op == _OP["GROUPREF"]:
            out.append(groups.get(av, ""))
        elif op == _OP["GROUPREF_EXISTS"]:
            branch = av[1] if av[0] in groups else av[2]
            out.append(_emit(branch, rng, stretch, groups) if branch is not None else "")
        # AT (anchors) and lookarounds emit nothing; the caller checks the result with `re`
    return "".join(out)


@lru_cache(maxsize=2048)
def _parsed(pattern: str) -> tuple[re.Pattern[str], Any]:
    return re.compile(pattern), _sre.parse(pattern)


def regex_string(
    pattern: str,
    rng: random.Random,
    *,
    min_len: int = 0,
    max_len: int | None = None,
    accept: Callable[[str], bool] | None = None,
    tries: int = 60,
) -> str | None:
    """A string that `re.search(pattern, ...)` finds (JSON Schema's semantics) with a length in
    [min_len, max_len] that `accept` takes, or None when none turns up in `tries` draws."""
    try:
        compiled, parsed = _parsed(pattern)
    except (re.error, RecursionError, OverflowError, TypeError):
        return None
    stretch = max(3, min_len // 2)

    def good(s: str) -> bool:
        return (
            compiled.search(s) is not None
            and len(s) >= min_len
            and (max_len is None or len(s) <= max_len)
            and (accept is None or accept(s))
        )

    for _ in range(tries):
        s = _emit(parsed, rng, stretch, {})
        if good(s):
            return s
        if compiled.search(s) is None:
            continue
        if len(s) < min_len:
            pad = "".join(rng.choice(_ALNUM) for _ in range(min_len - len(s)))
            for padded in (s + pad, pad + s):  # an unanchored pattern still finds its match
                if good(padded):
                    return padded
            stretch += max(1, (min_len - len(s)) // 2)
        elif max_len is not None and len(s) > max_len:
            stretch = max(0, stretch - max(1, (len(s) - max_len) // 2))
    return None


# ---------------------------------------------------------------- values that satisfy a schema


def format_value(fmt: str, rng: random.Random, name: str = "", index: int = 1) -> Any:
    """A string of a known `format` (None for a format this module does not know)."""
    if fmt == "date":
        return (BASE_DAY + timedelta(days=rng.randint(-240, 120))).isoformat()
    if fmt == "date-time":
        moment = BASE_MOMENT + timedelta(days=rng.randint(-240, 120), minutes=15 * rng.randint(0, 40))
        return moment.isoformat(timespec="seconds") + "Z"
    if fmt == "time":
        return f"{rng.randint(7, 19):02d}:{15 * rng.randint(0, 3):02d}:00Z"
    if fmt == "duration":
        return rng.choice(("PT15M", "PT1H", "P1D", "P7D", "PT30M"))
    if fmt in ("email", "idn-email"):
        return hint_string("email", rng, index)
    if fmt in ("uri", "url", "iri"):
        hook = LEAF_STRINGS.get()  # the world's own addresses: a stored file's, a site's page
        named = re.sub(r"(url|uri|link|href)s$", r"\1", name.lower())  # one of `evidence_urls`
        named = named if re.search("url|uri|link|href|website", named) else f"{named}_url"
        found = hook(named, rng) if hook is not None else None
        if isinstance(found, str) and found.startswith(("http://", "https://")):
            return found
        return f"https://example.com/{rng.choice(WORDS)}/{index}"
    if fmt in ("uri-reference", "iri-reference", "uri-template"):
        return f"/{rng.choice(WORDS)}/{index}"
    if fmt == "uuid":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    if fmt == "ipv4":
        return f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
    if fmt == "ipv6":
        return f"2001:db8::{rng.randint(1, 0xFFFF):x}"
    if fmt in ("hostname", "idn-hostname"):
        return f"{rng.choice(WORDS)}{index}.example.com"
    if fmt == "byte":
        return base64.b64encode(f"{rng.choice(WORDS)} {index}".encode()).decode()
    if fmt == "binary":
        return f"{rng.choice(WORDS)}-{index}"
    if fmt == "password":
        return "".join(rng.choice(_ALNUM) for _ in range(12))
    if fmt == "json-pointer":
        return f"/{rng.choice(WORDS)}/{index}"
    if fmt == "relative-json-pointer":
        return f"0/{rng.choice(WORDS)}"
    if fmt == "regex":
        return "^[a-z]+$"
    if fmt == "phone":
        return hint_string("phone", rng, index)
    if fmt in _INT_FORMATS:
        lo, hi = _INT_FORMATS[fmt]
        return str(min(max(int_hint(name, rng), lo), hi))
    if fmt in ("double", "float", "decimal", "number"):
        return f"{_number_hint(name, rng):.2f}"
    return None


def _merge(base: Mapping[str, Any], extra: Any) -> dict[str, Any]:
    """`base` and `extra` as one schema (both must hold): bounds tighten, properties and required add up."""
    out = dict(base)
    if not isinstance(extra, Mapping):
        return out
    for k, v in extra.items():
        if k not in out:
            out[k] = v
        elif k in ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties") and _num(v):
            out[k] = max(out[k], v) if _num(out[k]) else v
        elif k in ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties") and _num(v):
            out[k] = min(out[k], v) if _num(out[k]) else v
        elif k == "properties" and isinstance(v, Mapping) and isinstance(out[k], Mapping):
            props = dict(out[k])
            for p, s in v.items():
                props[p] = _merge(props[p], s) if isinstance(props.get(p), Mapping) else s
            out[k] = props
        elif k == "required" and isinstance(v, list) and isinstance(out[k], list):
            out[k] = list(dict.fromkeys([*out[k], *v]))
        elif k == "type":
            mine = out[k] if isinstance(out[k], list) else [out[k]]
            theirs = v if isinstance(v, list) else [v]
            both = [t for t in mine if t in theirs or (t == "integer" and "number" in theirs)]
            both += [t for t in theirs if t == "integer" and "number" in mine and t not in both]
            out[k] = both if len(both) != 1 else both[0]
        elif k == "allOf" and isinstance(v, list) and isinstance(out[k], list):
            out[k] = [*out[k], *v]
        else:
            out[k] = v
    return out


def _num(v: Any) -> TypeGuard[int | float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _inferred_types(schema: Mapping[str, Any]) -> list[str]:
    t = schema.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [x for x in t if isinstance(x, str)]
    keys = set(schema)
    fmt = schema.get("format")
    if keys & {"properties", "required", "additionalProperties", "minProperties", "patternProperties"}:
        return ["object"]
    if keys & {"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"}:
        return ["array"]
    if keys & {"pattern", "minLength", "maxLength"} or fmt in _STRING_FORMATS:
        return ["string"]
    if (
        keys & {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
        or fmt in _INT_FORMATS
    ):
        return ["integer"] if fmt in _INT_FORMATS else ["number"]
    return []


def _checked(schema: Any, rng: random.Random, name: str, index: int, depth: int, tries: int = 8) -> Any:
    """A value for `schema`, redrawn until jsonschema accepts it (else the last draw)."""
    value = _make(schema, rng, name, index, depth)
    for _ in range(tries - 1):
        if check(value, schema) is not False:
            return value
        value = _make(schema, rng, name, index, depth)
    return value


def _make(schema: Any, rng: random.Random, name: str, index: int, depth: int) -> Any:
    if depth > 2 * _MAX_DEPTH:  # a schema that nests itself without end (a resolved recursive $ref)
        return None
    if schema is None or schema is True:
        return hint_string(name, rng, index)
    if not isinstance(schema, Mapping):
        return None
    if "const" in schema:
        return copy.deepcopy(schema["const"])
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        options = [o for o in schema["enum"] if o is not None] or list(schema["enum"])
        rest = {k: v for k, v in schema.items() if k != "enum"}
        fitting = [o for o in options if check(o, rest) is not False] or options
        return copy.deepcopy(rng.choice(fitting))
    if isinstance(schema.get("allOf"), list):
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            merged = _merge(merged, part)
        return _make(merged, rng, name, index, depth)
    for comb in ("anyOf", "oneOf"):
        branches = schema.get(comb)
        if isinstance(branches, list) and branches:
            rest = {k: v for k, v in schema.items() if k != comb}
            nulls = [b for b in branches if json_types(b) == ["null"]]
            others = [b for b in branches if json_types(b) != ["null"]]
            value: Any = None
            for branch in [*rng.sample(others, len(others)), *nulls]:
                value = _checked(_merge(rest, branch), rng, name, index, depth, tries=3)
                if check(value, schema) is not False:
                    return value
            return value
    types = [t for t in _inferred_types(schema) if t in _JSON_TYPES]
    kinds = [t for t in types if t != "null"]
    if not kinds:
        return None if types == ["null"] else _string(schema, rng, name, index)
    kind = kinds[0]
    if kind == "string":
        return _string(schema, rng, name, index)
    if kind == "integer":
        return _integer(schema, rng, name)
    if kind == "number":
        return _number(schema, rng, name)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        return _array(schema, rng, name, index, depth)
    return _object(schema, rng, name, index, depth)


def _fit_length(s: str, low: int, high: int | None, rng: random.Random) -> str:
    if high is not None and len(s) > high:
        s = s[:high].rstrip() if len(s[:high].rstrip()) >= low else s[:high]
    if len(s) < low:
        s += "".join(rng.choice(string.ascii_lowercase) for _ in range(low - len(s)))
    return s


_TIMELY = re.compile(r"month|period|date|year|(^|_)day|_at$|time|week|quarter|(^|_)as_of$")


def _dated_texts(name: str, rng: random.Random) -> list[str]:
    """A day near the clock written the ways patterns pin dates ("2026-01", "2026-01-14", "2026-W03",
    "Q1 2026"), for a string whose name says it is a time; [] for other names."""
    if not _TIMELY.search(name.lower()):
        return []
    day = BASE_DAY + timedelta(days=rng.randint(-240, 60))
    return _written_dates(
        day, datetime.combine(day, datetime.min.time()) + timedelta(minutes=15 * rng.randint(32, 72))
    )


# a pattern that pins a year ("^\d{4}-(0[1-9]|1[0-2])$"): its values are dates whatever the field is called
_DATED_PATTERN = re.compile(r"(\\d\{4\}|\[0-9\]\{4\})[-/]|0\[1-9\]\|1\[0-2\]")


def _dated_key(schema: Mapping[str, Any], index: int, taken: set[str] | frozenset[str]) -> str | None:
    """A key that a date pattern pins (a budget kept per month, `/budgets/{month}`): the `index`-th month
    back from the clock, written as the pattern wants it ("2026-03"), never "0797-08"; None when the
    pattern pins no date."""
    pattern = schema.get("pattern")
    if not isinstance(pattern, str) or not _DATED_PATTERN.search(pattern):
        return None
    for back in range(index - 1, index + 120):
        months = BASE_DAY.year * 12 + BASE_DAY.month - 1 - back  # one month further back each time
        day = date(months // 12, months % 12 + 1, min(BASE_DAY.day, 28))
        for text in _written_dates(day, datetime.combine(day, datetime.min.time()) + timedelta(hours=9)):
            try:
                fits = re.search(pattern, text) is not None
            except re.error:
                return None
            if fits and text not in taken and conforms(text, schema):
                return text
    return None


def _written_dates(day: date, at: datetime) -> list[str]:
    week = day.isocalendar()
    return [
        day.strftime("%Y-%m"), day.isoformat(), at.isoformat(), f"{at.isoformat()}Z", str(day.year),
        f"{week.year}-W{week.week:02d}", f"{day.year}-Q{(day.month - 1) // 3 + 1}",
        f"Q{(day.month - 1) // 3 + 1} {day.year}", day.strftime("%Y%m%d"), day.strftime("%m/%d/%Y"),
        day.strftime("%Y/%m"), day.strftime("%d.%m.%Y"),
    ]  # fmt: skip


def _numbers_as_text(name: str, rng: random.Random) -> Iterator[str]:
    """A number its name gives a scale to, written the ways a pattern of digits may want it: an
    `amount` held as text is "129.50", not what the pattern alone makes ("-0258.9"). Nothing for a
    name that says no scale (a code of digits stays the pattern's)."""
    found = number_range(name.lower())
    if found is None:
        return
    value = round(rng.uniform(found[0], found[1]), found[2])
    for decimals in (found[2], 2, 1, 0):
        yield f"{value:.{decimals}f}"


def _string(schema: Mapping[str, Any], rng: random.Random, name: str, index: int) -> str:
    low = int(schema.get("minLength") or 0)
    high = int(schema["maxLength"]) if _num(schema.get("maxLength")) else None
    fmt = schema.get("format") if isinstance(schema.get("format"), str) else None
    pattern = schema.get("pattern") if isinstance(schema.get("pattern"), str) else None
    shape = {"type": "string", **({"format": fmt} if fmt else {})}

    def fits_format(s: str) -> bool:
        return fmt is None or check(s, shape) is not False

    def good(s: str) -> bool:
        if len(s) < low or (high is not None and len(s) > high) or not fits_format(s):
            return False
        if pattern is None:
            return True
        try:
            return re.search(pattern, s) is not None
        except re.error:
            return True  # a pattern Python cannot read: nothing to hold the value to

    first = format_value(fmt, rng, name, index) if fmt else None
    if not isinstance(first, str):
        first = hint_string(name, rng, index)
    if good(first):
        return first
    if pattern is None:
        fitted = _fit_length(first, low, high, rng)
        if good(fitted):
            return fitted
        for _ in range(6):
            again = format_value(fmt, rng, name, index) if fmt else None
            if isinstance(again, str) and good(again):
                return again
    else:
        # a `month` pinned to "^[0-9]{4}-[0-9]{2}$" is a month near the clock, not the year 4983
        for text in (*_dated_texts(name, rng), *_numbers_as_text(name, rng)):
            if good(text):
                return text
        made = regex_string(pattern, rng, min_len=low, max_len=high, accept=fits_format)
        if made is not None:
            return made
    size = max(low, min(high if high is not None else 8, 8))
    return "".join(rng.choice(_ALNUM) for _ in range(size))


def _bounds(schema: Mapping[str, Any]) -> tuple[float | None, bool, float | None, bool]:
    """(low, low is exclusive, high, high is exclusive), with OpenAPI 3.0's boolean exclusives too."""
    low: float | None = schema.get("minimum") if _num(schema.get("minimum")) else None
    high: float | None = schema.get("maximum") if _num(schema.get("maximum")) else None
    low_ex = high_ex = False
    ex_lo, ex_hi = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if ex_lo is True:
        low_ex = low is not None
    elif _num(ex_lo) and (low is None or ex_lo >= low):
        low, low_ex = ex_lo, True
    if ex_hi is True:
        high_ex = high is not None
    elif _num(ex_hi) and (high is None or ex_hi <= high):
        high, high_ex = ex_hi, True
    fmt = schema.get("format")
    if fmt in _INT_FORMATS:
        f_lo, f_hi = _INT_FORMATS[fmt]
        if low is None or low < f_lo:
            low, low_ex = f_lo, False
        if high is None or high > f_hi:
            high, high_ex = f_hi, False
    return low, low_ex, high, high_ex


def int_bounds(schema: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """The smallest and largest integer a schema's bounds allow (None: unbounded)."""
    low, low_ex, high, high_ex = _bounds(schema)
    lo = None if low is None else (math.floor(low) + 1 if low_ex else math.ceil(low))
    hi = None if high is None else (math.ceil(high) - 1 if high_ex else math.floor(high))
    return lo, hi


def _int_step(schema: Mapping[str, Any]) -> int:
    m = schema.get("multipleOf")
    if not _num(m) or m <= 0:
        return 1
    return Fraction(str(m)).numerator if isinstance(m, float) else int(m)


def _integer(schema: Mapping[str, Any], rng: random.Random, name: str) -> int:
    lo, hi = int_bounds(schema)
    step = _int_step(schema)
    v = int_hint(name, rng)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        if lo is not None and hi is not None:
            # a slider's whole scale (-100..100); near the bottom of a wide one, never 2,000..2,099 of 50,000
            v = rng.randint(lo, hi if hi - lo <= 1000 else lo + 99) if hi >= lo else lo
        elif lo is not None:
            v = lo + rng.randint(0, 99)
        else:
            v = (hi or 0) - rng.randint(0, 99)
    if step != 1:  # integer arithmetic: int64 bounds lose precision as floats
        v = -(-v // step) * step
        if hi is not None and v > hi:
            v = (hi // step) * step
    return v


def _decimals(m: float) -> int:
    text = repr(float(m))
    return len(text.split(".")[1]) if "." in text and "e" not in text else 6


def _number(schema: Mapping[str, Any], rng: random.Random, name: str) -> float | int:
    low, low_ex, high, high_ex = _bounds(schema)

    def inside(x: float) -> bool:
        return (
            (low is None or x > low or (x == low and not low_ex))
            and (high is None or x < high or (x == high and not high_ex))
        )  # fmt: skip

    v: float = _number_hint(name, rng)
    if not inside(v):
        if low is not None and high is not None:
            v = round(rng.uniform(low, high), 2)
            if not inside(v):
                v = (low + high) / 2
        elif low is not None:
            v = round(low + rng.uniform(0.5, 100), 2)
        elif high is not None:
            v = round(high - rng.uniform(0.5, 100), 2)
    m = schema.get("multipleOf")
    if _num(m) and m > 0:
        k = round(v / m)
        places = _decimals(m)
        for dk in (0, 1, -1, 2, -2, 3, -3):
            cand = round((k + dk) * m, places)
            cand = int(cand) if float(cand).is_integer() else cand
            if inside(cand) and check(cand, {"multipleOf": m}) is not False:
                return cand
    return v


def _array(schema: Mapping[str, Any], rng: random.Random, name: str, index: int, depth: int) -> list[Any]:
    items = schema.get("items", True)
    raw_prefix = schema.get("prefixItems")
    prefix: list[Any] = raw_prefix if isinstance(raw_prefix, list) else []
    if isinstance(items, list):  # draft 4 tuple form
        prefix, items = items, schema.get("additionalItems", True)
    low = int(schema.get("minItems") or 0)
    high = int(schema["maxItems"]) if _num(schema.get("maxItems")) else None
    if items is False:
        high = len(prefix) if high is None else min(high, len(prefix))
    wanted = rng.randint(1, 3) if depth < _MAX_DEPTH else 0
    n = max(low, wanted if high is None else min(wanted, high))
    unique = schema.get("uniqueItems") is True
    item_name = _singular(name)
    options = items.get("enum") if isinstance(items, Mapping) and not prefix else None
    if isinstance(options, list) and options and set(items) <= {"enum", "type", "description", "title"}:
        pool = [o for o in options if o is not None] or list(options)
        if unique or n <= len(pool):  # distinct options read best (`["read", "write"]`)
            return copy.deepcopy(rng.sample(pool, min(max(n, 0), len(pool))))
        return copy.deepcopy([rng.choice(pool) for _ in range(n)])
    out: list[Any] = []
    for j in range(n):
        sub = prefix[j] if j < len(prefix) else items
        for _ in range(8):
            v = _checked(sub, rng, item_name, index + j, depth + 1, tries=4)
            if not unique or all(not _same(v, o) for o in out):
                out.append(v)
                break
        else:
            if len(out) >= low:
                break
            out.append(v)
    contains = schema.get("contains")
    if isinstance(contains, Mapping) and not any(check(o, contains) for o in out):
        hit = _checked(
            _merge(items if isinstance(items, Mapping) else {}, contains), rng, item_name, index, depth + 1
        )
        if out and high is not None and len(out) >= high:
            out[-1] = hit
        else:
            out.append(hit)
    return out


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, default=repr) == json.dumps(b, sort_keys=True, default=repr)


def _object(
    schema: Mapping[str, Any], rng: random.Random, name: str, index: int, depth: int
) -> dict[str, Any]:
    raw_props, raw_patterns = schema.get("properties"), schema.get("patternProperties")
    props: Mapping[str, Any] = raw_props if isinstance(raw_props, Mapping) else {}
    patterns: Mapping[str, Any] = raw_patterns if isinstance(raw_patterns, Mapping) else {}
    required = [r for r in (schema.get("required") or []) if isinstance(r, str)]
    extra = schema.get("additionalProperties", True)
    high = int(schema["maxProperties"]) if _num(schema.get("maxProperties")) else None
    out: dict[str, Any] = {}
    # a record's nested objects carry most of what they declare (a tag has its name, a category its
    # id and name): an empty or one-field object reads as a placeholder; deeper levels stay sparse
    optional_odds = 0.85 if depth < 2 else 0.2

    def hint(p: str) -> str:
        # a document's `current_version.label` is a version's label, not a name the word "current" leads
        owner = name.split("_", 1)[1] if name.split("_", 1)[0] in _QUALIFIERS and "_" in name else name
        return f"{owner}_{p}" if p in _NAMED_BY_PARENT and name else p

    for p, sub in props.items():
        if p in required or (rng.random() < optional_odds and (high is None or len(out) < high)):
            out[p] = _checked(sub, rng, hint(p), index, depth + 1, tries=4)
    if not out and props and (high is None or high > 0):
        p = next(iter(props))
        out[p] = _checked(props[p], rng, hint(p), index, depth + 1, tries=4)
    for p in required:
        if p not in out:
            sub = next((s for rx, s in patterns.items() if _searches(rx, p)), extra)
            out[p] = _checked(sub if sub is not False else True, rng, p, index, depth + 1, tries=4)
    low = int(schema.get("minProperties") or 0)
    spare = [p for p in props if p not in out]
    while len(out) < low:
        if spare:
            p = spare.pop(0)
            out[p] = _checked(props[p], rng, p, index, depth + 1, tries=4)
        elif extra is not False:
            p = f"field_{len(out) + 1}"
            out[p] = _checked(extra, rng, p, index, depth + 1, tries=4)
        else:
            break
    if high is not None:
        for p in [p for p in out if p not in required][: max(0, len(out) - high)]:
            del out[p]
    return out


def _searches(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return False


def schema_value(schema: Any, rng: random.Random, *, name: str = "", index: int = 1) -> Any:
    """A value that satisfies `schema` (a resolved JSON schema, draft 2020-12 or OpenAPI's subset).

    Null only when null is the only thing the schema admits; otherwise a non-null type, branch and
    value are preferred. `name` hints plausible strings and numbers where the schema leaves freedom,
    `index` numbers them (`ava.chen3@example.com`). Deterministic given the state of `rng`.
    """
    if schema is False:
        return None
    return _checked(schema, rng, name, index, 0, tries=12)


def fits_hint(value: Any, schema: Any) -> bool:
    """Whether a value made from a name hint (not from the schema) satisfies a declared schema and
    is not a generic stand-in (`[]`, `{"note": ...}`) for a collection whose shape the schema describes."""
    if value is None or not conforms(value, schema):
        return False
    if isinstance(schema, Mapping) and isinstance(value, (list, dict)):
        return not (set(schema) & {"items", "prefixItems", "properties", "contains", "anyOf", "oneOf"})
    return True


def schema_key(
    schema: Any,
    rng: random.Random,
    *,
    index: int,
    taken: set[str] | frozenset[str] = frozenset(),
    name: str = "",
    fallback: Any = None,
) -> Any:
    """A record key for a declared key schema, whose `str` is not in `taken` (None if none can be made).

    `fallback` (the platform's own `PFX-007`) is kept when the schema takes it; integer keys count
    up from 1 (or the schema's lower bound) so the `index`-th key is `index` where it is free; other
    keys (uuids, patterned ids) are drawn until one is new.
    """
    if fallback is not None and str(fallback) not in taken and conforms(fallback, schema):
        return fallback
    kinds = [t for t in (json_types(schema) or []) if t != "null"]
    base = schema
    if not kinds and isinstance(schema, Mapping):
        branch = next(
            (
                b
                for c in ("anyOf", "oneOf")
                for b in schema.get(c) or []
                if json_types(b) not in (None, ["null"])
            ),
            None,
        )
        kinds = [t for t in (json_types(branch) or []) if t != "null"]
        base = _merge({k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}, branch)
    if kinds and kinds[0] in ("integer", "number") and isinstance(base, Mapping):
        lo, hi = int_bounds(base)
        step = _int_step(base)
        start = lo if lo is not None and lo > 1 else 1
        if hi is not None and start > hi:
            start = lo if lo is not None else hi
        start = -(-start // step) * step
        v = start + (index - 1) * step
        while str(v) in taken:
            v += step
        if (hi is None or v <= hi) and conforms(v, schema):
            return v
        v = start
        while str(v) in taken and (hi is None or v <= hi):
            v += step
        return v if (hi is None or v <= hi) and conforms(v, schema) else None
    if (
        kinds == ["string"]
        and isinstance(base, Mapping)
        and (dated := _dated_key(base, index, taken)) is not None
    ):
        return dated
    for _ in range(40):
        v = schema_value(schema, rng, name=name, index=index)
        scalar = isinstance(v, (str, int, float)) and not isinstance(v, bool)
        if scalar and str(v) not in taken and conforms(v, schema):
            return v
    return None


# ---------------------------------------------------------------- values that break a schema


def _near_misses(schema: Mapping[str, Any], rng: random.Random, depth: int = 0) -> list[Any]:
    """Values of the schema's own type that break one of its bounds (checked by the caller)."""
    out: list[Any] = []
    if depth > 3:
        return out
    low, high = schema.get("minLength"), schema.get("maxLength")
    if isinstance(schema.get("pattern"), str):
        out += [
            "",
            "!" * min(max(1, int(low or 1)), 4096),
            "".join(rng.choice("#%&*") for _ in range(int(low or 3) or 3)),
        ]
    if _num(high) and high < 4096:  # a longer string than that is no call anyone would send
        out.append("x" * (int(high) + 1))
    if _num(low) and 0 < low <= 4096:
        out.append("x" * (int(low) - 1))
    lo, lo_ex, hi, hi_ex = _bounds(schema)
    if lo is not None:
        out += [lo, lo - 1] if lo_ex else [lo - 1, lo - 0.5]
    if hi is not None:
        out += [hi, hi + 1] if hi_ex else [hi + 1, hi + 0.5]
    m = schema.get("multipleOf")
    if _num(m) and m > 0:
        out += [m * 1.5 if isinstance(m, int) or m >= 1 else m / 3, m + m / 2]
    items = schema.get("items")
    if isinstance(items, Mapping):
        bad = schema_violation(items, rng, _depth=depth + 1)
        if bad is not None:
            out.append([bad])
    if _num(schema.get("maxItems")) and schema["maxItems"] < 1024:
        out.append(["x"] * (int(schema["maxItems"]) + 1))
    if _num(schema.get("minItems")) and schema["minItems"] > 0:
        out.append([])
    props = schema.get("properties")
    if schema.get("required") or isinstance(props, Mapping):
        out.append({})
        if isinstance(props, Mapping):
            for p, sub in props.items():
                bad = schema_violation(sub, rng, _depth=depth + 1)
                if bad is not None:
                    filled = schema_value(schema, rng, name=p)
                    if isinstance(filled, dict):
                        out.append({**filled, p: bad})
                    break
    for comb in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(comb) or []:
            if isinstance(branch, Mapping):
                out += _near_misses(branch, rng, depth + 1)
    return out


def schema_violation(schema: Any, rng: random.Random, *, _depth: int = 0) -> Any | None:
    """A value `schema` refuses even without format checks (so any validator refuses it): out of its
    enum, of a type it does not admit, or breaking its pattern, length, range or item and property
    rules, in that order of preference. None if no such value turns up."""
    if schema is False:
        return "not-a-valid-value"
    if not isinstance(schema, Mapping):
        return None
    candidates: list[Any] = []
    if "enum" in schema or "const" in schema:
        candidates.append("__no_such_option__")
    candidates += ["not-a-valid-value", 987654321, 0.5, True, ["not-a-valid-value"], {"not_a_valid_field": 1}]
    candidates += _near_misses(schema, rng, _depth)
    for c in candidates:
        if check(c, schema, formats=False) is False:
            return c
    return None
