"""Dates as a person writes them, and read back.

Tools take and return ISO 8601 ('2026-03-13', '2026-03-01T13:30:00', '2026-03-01T13:30:00Z'); a
request says "March 13, 2026", "March 1, 2026 at 1:30 PM" or "March 1, 2026 at 1:30 PM UTC".
`spoken_date` writes the one, `iso_dates` reads the other back out of a text, so every check that
looks for a stated value finds it in either form. Only the forms a spoken date reads back to exactly
are spoken; any other (an offset, a fraction of a second, minutes without seconds) stays as it is.
"""

from __future__ import annotations

import re
from datetime import date, datetime

_ISO = re.compile(r"\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}:\d{2}Z?)?")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")  # fmt: skip
SPOKEN_DATE = re.compile(
    rf"\b({'|'.join(_MONTHS)}) (\d{{1,2}}), (\d{{4}})"
    r"(?: at (\d{1,2}):(\d{2})(?::(\d{2}))? ([AP]M)( UTC)?)?(?![\w:])"
)


def spoken_date(value: str) -> str | None:
    """'2026-03-13' as "March 13, 2026", '2026-03-01T13:30:00' as "March 1, 2026 at 1:30 PM" (with
    "UTC" after it for '...Z'); None for anything else (a text that is no such date, or one no
    calendar has)."""
    if not _ISO.fullmatch(value):
        return None
    try:
        moment = datetime.fromisoformat(value.removesuffix("Z"))
    except ValueError:
        return None
    day = f"{_MONTHS[moment.month - 1]} {moment.day}, {moment.year}"
    if len(value) == 10:
        return day
    hour = moment.hour % 12 or 12
    seconds = f":{moment.second:02d}" if moment.second else ""
    zone = " UTC" if value.endswith("Z") else ""
    return f"{day} at {hour}:{moment.minute:02d}{seconds} {'AM' if moment.hour < 12 else 'PM'}{zone}"


def date_forms(value: str) -> list[str]:
    """The ways a request may state `value`: as it is, and spoken when it is a date."""
    spoken = spoken_date(value)
    return [value, spoken] if spoken else [value]


def iso_dates(text: str) -> list[str]:
    """The ISO form of every spoken date in `text`, in order: "March 1, 2026 at 1:30 PM" gives
    '2026-03-01T13:30:00'; a day no calendar has is skipped."""
    out = []
    for m in SPOKEN_DATE.finditer(text):
        month, day, year, hour, minute, second, half, utc = m.groups()
        try:
            d = date(int(year), _MONTHS.index(month) + 1, int(day))
        except ValueError:
            continue
        if hour is None:
            out.append(d.isoformat())
            continue
        h = int(hour) % 12 + (12 if half == "PM" else 0)
        if int(hour) > 12 or int(minute) > 59 or int(second or 0) > 59:
            continue
        out.append(f"{d.isoformat()}T{h:02d}:{minute}:{second or '00'}{'Z' if utc else ''}")
    return out


def with_iso_dates(text: str) -> str:
    """`text` with every spoken date written back in ISO form, for a reader that knows only that one."""
    return SPOKEN_DATE.sub(lambda m: next(iter(iso_dates(m[0])), m[0]), text)
