"""Names: plurals for tables, verbs for operations, id prefixes, class names."""

from __future__ import annotations

import re

_IRREGULAR = {"person": "people", "child": "children", "staff": "staff", "data": "data", "series": "series"}


def plural(name: str) -> str:
    head, _, last = name.rpartition("_")
    if last in _IRREGULAR:
        out = _IRREGULAR[last]
    elif re.search(r"[^aeiou]y$", last):
        out = last[:-1] + "ies"
    elif last.endswith(("s", "x", "z", "ch", "sh")):
        out = last + "es"
    else:
        out = last + "s"
    return f"{head}_{out}" if head else out


def class_name(name: str) -> str:
    parts = re.split(r"[^A-Za-z0-9]+", name)
    out = "".join(p[:1].upper() + p[1:] for p in parts if p) or "Synth"
    if out[0].isdigit():
        out = "Env" + out
    return out + ("" if out.endswith("Env") else "Env")


def id_prefix(entity: str, taken: set[str]) -> str:
    letters = re.sub(r"[^a-z]", "", entity.lower())
    base = (letters[:3] or "rec").upper()
    prefix, n = base, 1
    while prefix in taken:
        n += 1
        prefix = f"{base[:2]}{n}"
    taken.add(prefix)
    return prefix


def snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    s = re.sub(r"[^A-Za-z0-9]+", "_", s).strip("_").lower()
    return s if s and not s[0].isdigit() else f"x_{s}"


# Verbs that move a record's lifecycle, and the status value each one targets.
# Statuses a record ends in, whatever stage it was at: no step of a pipeline, reached from any.
ENDING_STATUSES = frozenset({
    "rejected", "cancelled", "canceled", "withdrawn", "declined", "failed", "expired", "void", "voided",
    "refused", "denied", "abandoned", "lost", "aborted", "revoked"})  # fmt: skip

TRANSITION_VERBS: dict[str, tuple[str, ...]] = {
    "approve": ("approved",), "reject": ("rejected", "declined"), "cancel": ("cancelled", "canceled"),
    "close": ("closed",), "complete": ("completed", "done"), "finish": ("completed", "finished"),
    "archive": ("archived",), "confirm": ("confirmed",), "resolve": ("resolved",), "reopen": ("open", "reopened"),
    "activate": ("active",), "deactivate": ("inactive",), "suspend": ("suspended",), "start": ("in_progress", "started", "active"),
    "stop": ("stopped",), "escalate": ("escalated",), "acknowledge": ("acknowledged",), "release": ("released",),
    "void": ("void", "voided"), "dispatch": ("dispatched",), "restore": ("restored", "active"), "submit": ("submitted",),
    "publish": ("published",), "ship": ("shipped",), "deliver": ("delivered",), "pay": ("paid",), "refund": ("refunded",),
    "expire": ("expired",), "block": ("blocked",), "unblock": ("active",), "unarchive": ("active", "unarchived", "open"), "verify": ("verified",), "accept": ("accepted",),
    "decline": ("declined", "rejected"), "hold": ("on_hold", "held"), "check_in": ("checked_in",), "check_out": ("checked_out",),
    "fail": ("failed",), "pause": ("paused",), "resume": ("active", "in_progress"), "lock": ("locked",), "unlock": ("active",),
    "mark": (), "flag": ("flagged",), "dismiss": ("dismissed",), "freeze": ("frozen",), "unfreeze": ("active",),
    "deny": ("denied", "rejected"), "sign": ("signed",), "fulfil": ("fulfilled",), "fulfill": ("fulfilled",), "settle": ("settled",), "schedule": ("scheduled",),
    "finalize": ("finalized", "final"), "finalise": ("finalised", "final"), "renew": ("renewed", "active"), "return": ("returned",),
    "retire": ("retired",), "revoke": ("revoked",), "terminate": ("terminated",), "withdraw": ("withdrawn",),
    "decommission": ("decommissioned",), "redeem": ("redeemed",), "reverse": ("reversed",), "reinstate": ("active", "reinstated"),
    "enable": ("enabled", "active"), "disable": ("disabled", "inactive"),
}  # fmt: skip
CREATE_VERBS = frozenset(
    [
        "create",
        "add",
        "new",
        "open",
        "book",
        "register",
        "record",
        "log",
        "upload",
        "post",
        "send",
        "invite",
        "issue",
        "raise",
        "file",
        "place",
        "enroll",
        "request",
        "make",
        "generate",
        "draft",
        "import",
        "schedule",
        "reserve",
        "report",
    ]
)
UPDATE_VERBS = frozenset(
    ["update", "edit", "set", "change", "modify", "patch", "adjust", "rename", "amend", "configure"]
)
ASSIGN_VERBS = frozenset(
    ["assign", "reassign", "transfer", "move", "link", "attach", "allocate", "route", "delegate"]
)
DELETE_VERBS = frozenset(["delete", "remove", "purge", "drop", "unlink", "detach", "destroy"])
READ_VERBS = frozenset(["get", "fetch", "read", "show", "view", "lookup", "describe", "retrieve", "check"])
LIST_VERBS = frozenset(["list", "search", "find", "query", "browse", "filter", "export"])
AGG_VERBS = frozenset(
    ["count", "summarize", "summarise", "stats", "statistics", "total", "aggregate", "calculate", "compute"]
)


def verb_of(tool_name: str) -> str:
    return snake(tool_name).split("_")[0]


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def python_name(name: str) -> str:
    """A Python identifier for a seed's name: itself when it already is one (and no keyword)."""
    import keyword

    if _IDENTIFIER.match(name) and not keyword.iskeyword(name):
        return name
    out = re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_") or "x"
    if out[0].isdigit() or keyword.iskeyword(out):
        out = f"x_{out}"
    return out


def method_names(tool_names: list[str]) -> dict[str, str]:
    """The Python method behind each tool. A tool whose name is an identifier is its own method; any
    other (`get-patent`, `api_keys.create`) gets a private method `_tool_<name>`, and the class binds
    the tool's exact name to it, so `getattr(env, "get-patent")` works and the name stays the seed's."""
    out: dict[str, str] = {}
    taken = set(tool_names)
    for name in tool_names:
        if _IDENTIFIER.match(name) and not name.startswith("_"):
            out[name] = name
            continue
        base = "_tool_" + python_name(name)
        method, n = base, 1
        while method in taken:
            n += 1
            method = f"{base}_{n}"
        taken.add(method)
        out[name] = method
    return out


_SOUNDS_CONSONANT = re.compile(r"^(uni|use|usu|uti|ure|eu|one|once)", re.IGNORECASE)
_SOUNDS_VOWEL = re.compile(r"^(hour|honest|honou?r|heir)", re.IGNORECASE)


def article(noun: str) -> str:
    """The noun with its indefinite article as it sounds: "an invoice", "an hour", "a user", "a record",
    "an SLA report", "a KPI"."""
    first = noun.split(" ", 1)[0]
    if len(first) > 1 and first.isupper() and first.isalpha():  # spelt out: "an SLA report", "a KPI"
        return ("an " if first[0] in "AEFHILMNORSX" else "a ") + noun
    vowel = noun[:1].lower() in "aeiou" and not _SOUNDS_CONSONANT.match(noun)
    return ("an " if vowel or _SOUNDS_VOWEL.match(noun) else "a ") + noun


# Attribute names that record one fact: a seed's `born_on` and its domain's `birth_date` are one date,
# and an entity that kept both would hold two birth dates that disagree.
SAME_FACT: tuple[frozenset[str], ...] = (
    frozenset({"birth_date", "born_on", "dob", "date_of_birth", "birthday", "birthdate"}),
    frozenset({"email", "email_address", "e_mail"}),
    frozenset({"phone", "phone_number", "telephone", "telephone_number"}),
    frozenset({"zip", "zip_code", "postal_code", "postcode"}),
    frozenset({"start_time", "started_at", "start_at", "starts_at", "start_datetime"}),
    frozenset({"end_time", "ended_at", "end_at", "ends_at", "end_datetime"}),
    frozenset({"start_date", "starts_on", "start_on", "begins_on"}),
    frozenset({"end_date", "ends_on", "end_on"}),
    frozenset({"average_heart_rate", "avg_hr", "avg_heart_rate", "average_hr", "mean_heart_rate"}),
    frozenset({"max_heart_rate", "max_hr"}),
    frozenset({"note", "notes"}),
    frozenset({"name", "full_name"}),
)

# A measure's unit as the last word of its name (`distance_km`, `moving_seconds`) and what it measures:
# `distance_km` and a seed's `distance_m` are one distance in two units. "min" is left out: in
# `price_min` it is a minimum, not minutes.
_UNIT_OF = {
    **dict.fromkeys(("m", "km", "mi", "ft", "cm", "mm", "miles", "meters", "metres"), "length"),
    **dict.fromkeys(("s", "sec", "secs", "seconds", "ms", "mins", "minutes", "h", "hrs", "hours"), "time"),
    **dict.fromkeys(("kg", "g", "lb", "lbs", "grams"), "mass"),
    **dict.fromkeys(("pct", "percent"), "share"),
    **dict.fromkeys(("kwh", "wh", "kcal", "cal"), "energy"),
}


# how many of a kind's base unit (metre, second, gram) one unit is; a kind's units convert by these
_IN_BASE = {
    "m": 1.0, "metres": 1.0, "meters": 1.0, "km": 1000.0, "mi": 1609.344, "miles": 1609.344, "ft": 0.3048,
    "cm": 0.01, "mm": 0.001, "s": 1.0, "sec": 1.0, "secs": 1.0, "seconds": 1.0, "ms": 0.001, "mins": 60.0,
    "minutes": 60.0, "h": 3600.0, "hrs": 3600.0, "hours": 3600.0, "kg": 1000.0, "g": 1.0, "grams": 1.0,
    "lb": 453.59237, "lbs": 453.59237, "pct": 1.0, "percent": 1.0,
}  # fmt: skip


def unit_factor(source: str, target: str) -> float | None:
    """What a value of attribute `source` is multiplied by to give it as attribute `target` of the same
    fact (`distance_km` -> `distance_m`: 1000); 1.0 when either gives no unit, None when the units
    do not convert (kcal and kWh)."""
    a, b = source.rpartition("_")[2], target.rpartition("_")[2]
    if measured(source)[1] is None or measured(target)[1] is None:
        return 1.0
    if a not in _IN_BASE or b not in _IN_BASE:
        return 1.0 if a == b else None
    return _IN_BASE[a] / _IN_BASE[b]


def measured(name: str) -> tuple[str, str | None]:
    """(what is measured, the kind of its unit): `moving_time_s` -> ("moving", "time"),
    `distance_km` -> ("distance", "length"), `target` -> ("target", None)."""
    head, _, tail = name.rpartition("_")
    if not head or tail not in _UNIT_OF:
        return name, None
    return head.removesuffix("_time"), _UNIT_OF[tail]


def same_fact(a: str, b: str) -> bool:
    """Whether attribute names `a` and `b` (different names) record the same fact: synonyms, or one
    measure in two units of a kind (`distance_km`, `distance_m`) or with and without its unit."""
    if a == b:
        return False
    if any(a in group and b in group for group in SAME_FACT):
        return True
    when_a, when_b = _event(a), _event(b)
    if when_a is not None and when_a == when_b:
        return True  # `given_on` beside `administered_on`, `issued_on` beside `issue_date`
    (stem_a, unit_a), (stem_b, unit_b) = measured(a), measured(b)
    return (
        stem_a == stem_b
        and (unit_a or unit_b) is not None
        and (unit_a is None or unit_b is None or unit_a == unit_b)
    )


_WHEN = re.compile(r"^(?:date_)?([a-z]+)(?:_on|_at|_date|_datetime)$|^date_([a-z]+)$")
# verbs that name one event: a vaccine given is a vaccine administered
_SAME_EVENT = {"giv": "administer"}


def _event(name: str) -> str | None:
    """The event a date attribute dates, as a verb stem (`given_on`: giv, `date_administered`:
    administer, `issue_date`: issu), or None when the name dates no single-word event."""
    m = _WHEN.match(name)
    if m is None:
        return None
    verb = m.group(1) or m.group(2)
    for ending in ("ed", "en", "e"):  # given and give, issued and issue, created and create
        if verb.endswith(ending) and len(verb) - len(ending) >= 3:
            verb = verb[: -len(ending)]
            break
    return _SAME_EVENT.get(verb, verb)


def fact_kind(attr_type: str) -> str:
    """The kind of value an attribute type holds, as far as one fact may be declared with either (a
    date or a timestamp, a count or an amount, a code or a name)."""
    return {"datetime": "date", "text": "str", "enum": "str", "float": "int", "money": "int"}.get(
        attr_type, attr_type
    )


def same_unit(a: str, b: str) -> bool:
    """Whether two names of one fact give it in the same unit (a synonym, not `distance_km` beside
    `distance_m`), so a rule about one holds for the other."""
    if (measured(a)[1] is None) != (measured(b)[1] is None):
        return False  # `target` beside `target_km`: the bare one's unit is not said
    return unit_factor(a, b) == 1.0


# The lifecycle values after which a record is gone for good: it takes nothing new (a voided envelope, a
# closed account). Narrower than the toolset's `ENDED`: an invoice on hold still takes follow-ups.
GONE = (
    "closed", "cancelled", "canceled", "archived", "expired", "void", "voided", "deleted", "terminated",
    "retired", "withdrawn", "revoked", "discontinued", "disposed", "scrapped", "decommissioned", "dissolved",
    "deceased", "rejected", "declined", "obsolete", "superseded", "ended",
)  # fmt: skip


def gone_for_good(value: str) -> bool:
    """A lifecycle value (or one of its words) after which a record takes no part in anything new."""
    return value in GONE or any(w in GONE for w in value.split("_"))
