"""The state of an environment and its hash: canonical JSON, then SHA-256.

The state is `vars(instance)` minus double-underscore attributes (OmniaBench's definition). Its
canonical JSON has sorted keys and no whitespace; sets are sorted, dates become ISO strings, and
objects of classes the environment defined become their attributes, so equal states hash equally in
any worker and any run. For JSON-valued states the text is exactly `records.canonical_json`.
"""

from __future__ import annotations

import contextlib
import decimal
import hashlib
import json
import re
from datetime import date as _date
from datetime import datetime as _datetime
from datetime import time as _time
from datetime import timedelta
from enum import Enum
from typing import Any
from uuid import UUID

import orjson

from agentomnia.sandbox import rules


def _sort_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_leaf)


def _leaf(value: Any) -> Any:
    """JSON form of a non-JSON value found in a state (json.dumps `default` hook)."""
    if isinstance(value, float):  # a subclass (orjson hands those here): a number, as json writes it
        return float(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=_sort_key)
    if isinstance(value, _datetime | _date | _time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return value.hex()
    if isinstance(value, list | tuple):
        return list(value)
    if hasattr(type(value), "__iter__") and type(value).__module__ == "collections":
        return list(value)  # deque and friends
    if type(value).__module__ == rules.ENV_MODULE_NAME:
        # An object of a class the environment defined: its attributes are its state.
        found = _instance_state(value)
        if found is not None:
            return {"__type__": type(value).__name__, **found}
    # Functions, generators, stdlib objects: no faithful JSON form (check_env flags these).
    return f"<{type(value).__name__}>"


def _instance_state(value: Any) -> dict[str, Any] | None:
    try:
        found = object.__getattribute__(value, "__dict__")
    except AttributeError:
        return None
    if not isinstance(found, dict):
        return None
    return {str(k): v for k, v in found.items()}


def _normalize(value: Any) -> Any:
    """Slow path for states json cannot sort: every key becomes a string first."""
    if isinstance(value, dict):
        return {_key(k): _normalize(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalize(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    converted = _leaf(value)
    if isinstance(converted, str) and converted.startswith("<"):
        return converted
    return _normalize(converted)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int | float):
        return json.dumps(key)
    return _sort_key(_normalize(key))


def public_state(instance_dict: dict[str, Any]) -> dict[str, Any]:
    """The state as OmniaBench defines it: the attributes, minus double-underscore ones."""
    return {k: v for k, v in instance_dict.items() if not rules.is_dunder(k)}


# orjson writes what json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False) writes, at
# a tenth of the time (0.9 MB of shop state: 0.9 ms against 10.7 ms), except for what it refuses
# (integers past 64 bits, keys that are not strings, lone surrogates: a TypeError) and floats from
# 1e-9 to 1e-4: json's "2.5e-05" and "1.2e-06" are orjson's "0.000025" and "1.2e-6". Dates and
# dataclasses go to `_leaf`, as with json. A text that holds either form, inside a string or not, is
# written by json again; both are literal searches (0.5 ms each), where a character class before
# them would cost 13 ms.
_ORJSON_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_SHORT_EXPONENT = re.compile(rb"e-[1-9](?![0-9])")


def canonical_state(state: dict[str, Any]) -> str:
    """Canonical JSON of a state: identical to `records.canonical_json` for JSON-valued states
    (NaN and the infinities, which JSON has not, are written null)."""
    with contextlib.suppress(TypeError):  # what orjson refuses is json's to write, below
        text = orjson.dumps(state, default=_leaf, option=_ORJSON_OPTIONS)
        if b"0.0000" not in text and not _SHORT_EXPONENT.search(text):
            return text.decode("utf-8")
    try:
        return json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_leaf)
    except TypeError:
        return json.dumps(_normalize(state), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def state_digest(canonical: str) -> str:
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
