"""Module views and the ambient (seeded randomness, logical clock) that generated code sees.

Generated code never receives a real module object. An import returns a *view*: a fresh module
holding only the public, non-module members of the real one, minus the members withheld in
`rules.WITHHELD_MEMBERS`. Views are read-only from inside the sandbox because attribute stores are
guarded, so one view can serve every session in a worker.

Two things would otherwise make environments non-deterministic and leak between sessions: the
process-wide `random` generator and the wall clock. Each session therefore owns an `Ambient` with
its own seeded generator and a logical clock that starts at a fixed instant and advances one second
per tool call; `random`, `uuid.uuid4`, `datetime.now()` and `date.today()` read it. The ambient is
saved and restored together with the state, so replaying the same calls from the same initial
configuration gives the same state, in any worker, in any run.
"""

from __future__ import annotations

import collections
import collections.abc
import copy as _copy
import dataclasses
import datetime as _dt
import decimal
import enum
import functools
import itertools
import json
import math
import random as _random
import re
import statistics
import string
import types
import typing
import uuid as _uuid
from collections.abc import Callable
from typing import Any

from agentomnia.sandbox import rules

DEFAULT_CLOCK_START = _dt.datetime(2025, 1, 6, 9, 0, 0)


class _TrackedRandom(_random.Random):
    """A generator that tells its ambient before its state first changes within a call."""

    ambient: Ambient | None = None

    def random(self) -> float:
        if self.ambient is not None:
            self.ambient.touch()
        return super().random()

    def getrandbits(self, k: int) -> int:
        if self.ambient is not None:
            self.ambient.touch()
        return super().getrandbits(k)

    def seed(self, a: Any = None, version: int = 2) -> None:
        if self.ambient is not None:
            self.ambient.touch()
        super().seed(a, version)

    def setstate(self, state: Any) -> None:
        if self.ambient is not None:
            self.ambient.touch()
        super().setstate(state)


class Ambient:
    """Per-session sources of variation: a seeded generator and a logical clock.

    Within a call the generator's state is saved lazily, on first use (`touch`), so a failed call
    that drew random numbers can be undone without paying for a full save on every call.
    """

    __slots__ = ("clock_start", "mark", "rng", "seed", "ticks", "tracking")

    def __init__(self, seed: int, clock_start: _dt.datetime = DEFAULT_CLOCK_START) -> None:
        self.seed = seed
        self.clock_start = clock_start
        self.ticks = 0
        self.mark: object = None
        self.tracking = False
        self.rng = _TrackedRandom(seed)
        self.rng.ambient = self

    def reseed(self, seed: int) -> None:
        self.tracking = False
        self.seed = seed
        self.rng.seed(seed)
        self.ticks = 0

    def now(self) -> _dt.datetime:
        return self.clock_start + _dt.timedelta(seconds=self.ticks)

    # one call
    def begin_call(self) -> None:
        self.mark = None
        self.tracking = True
        self.ticks += 1

    def touch(self) -> None:
        if self.tracking and self.mark is None:
            self.mark = self.rng.getstate()

    def end_call(self, keep: bool) -> None:
        self.tracking = False
        if not keep:
            self.ticks -= 1
            if self.mark is not None:
                self.rng.setstate(self.mark)
        self.mark = None

    # snapshots
    def save(self) -> tuple[object, int]:
        return self.rng.getstate(), self.ticks

    def load(self, saved: tuple[object, int]) -> None:
        state, ticks = saved
        self.tracking = False
        self.rng.setstate(state)
        self.ticks = ticks


class _Current:
    """The ambient and class registry of the code running right now (a worker runs one at a time)."""

    __slots__ = ("ambient", "register")

    def __init__(self) -> None:
        self.ambient: Ambient = Ambient(0)
        self.register: Callable[[type], None] = lambda cls: None


CURRENT = _Current()


class datetime(_dt.datetime):
    """`datetime.datetime` whose `now`/`today`/`utcnow` read the session's logical clock."""

    @classmethod
    def now(cls, tz: _dt.tzinfo | None = None) -> datetime:
        moment = CURRENT.ambient.now()
        if tz is not None:
            moment = moment.replace(tzinfo=_dt.UTC).astimezone(tz)
        return cls.combine(moment.date(), moment.timetz())

    @classmethod
    def today(cls) -> datetime:
        return cls.now()

    @classmethod
    def utcnow(cls) -> datetime:
        return cls.now()


class date(_dt.date):
    """`datetime.date` whose `today` reads the session's logical clock."""

    @classmethod
    def today(cls) -> date:
        moment = CURRENT.ambient.now()
        return cls(moment.year, moment.month, moment.day)


class Random(_random.Random):
    """`random.Random` that seeds itself from the session generator when no seed is given."""

    def __init__(self, x: Any = None) -> None:
        super().__init__(CURRENT.ambient.rng.getrandbits(64) if x is None else x)

    def seed(self, a: Any = None, version: int = 2) -> None:
        super().seed(CURRENT.ambient.rng.getrandbits(64) if a is None else a, version)


def uuid4() -> _uuid.UUID:
    return _uuid.UUID(int=CURRENT.ambient.rng.getrandbits(128), version=4)


def _make_dataclass(cls_name: str, fields: Any, *args: Any, **kwargs: Any) -> type:
    if kwargs.get("namespace") is not None:
        raise ValueError(
            "make_dataclass(namespace=...) is not available in the sandbox; define a class instead"
        )
    for field in fields:
        name = field if isinstance(field, str) else field[0]
        if not isinstance(name, str) or name.startswith("_"):
            raise ValueError(f"make_dataclass field {name!r}: field names must be public identifiers")
    cls = dataclasses.make_dataclass(cls_name, fields, *args, **kwargs)
    CURRENT.register(cls)
    return cls


_SOURCES: dict[str, types.ModuleType] = {
    "__future__": __import__("__future__"),
    "collections": collections,
    "collections.abc": collections.abc,
    "copy": _copy,
    "dataclasses": dataclasses,
    "datetime": _dt,
    "decimal": decimal,
    "enum": enum,
    "functools": functools,
    "itertools": itertools,
    "json": json,
    "math": math,
    "random": _random,
    "re": re,
    "statistics": statistics,
    "string": string,
    "typing": typing,
    "uuid": _uuid,
}

_REPLACEMENTS: dict[str, dict[str, object]] = {
    "datetime": {"datetime": datetime, "date": date},
    "uuid": {"uuid4": uuid4},
    "dataclasses": {"make_dataclass": _make_dataclass},
    "random": {"Random": Random},
}

# `enum` exposes many helpers; generated code needs only the classes and decorators.
_ONLY: dict[str, frozenset[str]] = {
    "enum": frozenset(
        {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag", "auto", "unique", "EnumMeta", "EnumType"}
    ),
}

_RANDOM_METHODS = (
    "random",
    "uniform",
    "triangular",
    "randint",
    "randrange",
    "choice",
    "choices",
    "sample",
    "shuffle",
    "gauss",
    "normalvariate",
    "lognormvariate",
    "expovariate",
    "vonmisesvariate",
    "gammavariate",
    "betavariate",
    "paretovariate",
    "weibullvariate",
    "getrandbits",
    "randbytes",
    "getstate",
    "setstate",
)


def _missing(module_name: str) -> Callable[[str], object]:
    withheld = rules.WITHHELD_MEMBERS.get(module_name, {})

    def __getattr__(name: str) -> object:  # the module-level attribute hook of PEP 562
        reason = withheld.get(name)
        if reason:
            raise AttributeError(f"`{module_name}.{name}` is not available in the sandbox: {reason}")
        raise AttributeError(f"module `{module_name}` has no public attribute `{name}` in the sandbox")

    return __getattr__


def _build_view(name: str, members: dict[str, object]) -> types.ModuleType:
    view = types.ModuleType(name)
    view.__dict__.update(members)
    view.__dict__["__getattr__"] = _missing(name)
    return view


def _public_members(name: str) -> dict[str, object]:
    module = _SOURCES[name]
    withheld = rules.WITHHELD_MEMBERS.get(name, {})
    only = _ONLY.get(name)
    members: dict[str, object] = {}
    for attr in dir(module):
        if attr.startswith("_") or attr in withheld or (only is not None and attr not in only):
            continue
        value = getattr(module, attr)
        if isinstance(value, types.ModuleType):
            continue
        members[attr] = value
    members.update(_REPLACEMENTS.get(name, {}))
    return members


def _shared_views() -> dict[str, types.ModuleType]:
    views = {name: _build_view(name, _public_members(name)) for name in _SOURCES if name != "random"}
    views["collections"].__dict__["abc"] = views["collections.abc"]
    return views


SHARED_VIEWS: dict[str, types.ModuleType] = _shared_views()
_RANDOM_BASE = _public_members("random")


def random_view(ambient: Ambient) -> types.ModuleType:
    """The `random` module bound to one session's generator."""
    members = dict(_RANDOM_BASE)
    for method in _RANDOM_METHODS:
        members[method] = getattr(ambient.rng, method)

    def seed(a: Any = None, version: int = 2) -> None:
        ambient.rng.seed(ambient.rng.getrandbits(64) if a is None else a, version)

    members["seed"] = seed
    return _build_view("random", members)


def _decimal_template() -> decimal.Context:
    return decimal.Context(
        prec=28,
        rounding=decimal.ROUND_HALF_EVEN,
        Emin=-999999,
        Emax=999999,
        capitals=1,
        clamp=0,
        flags=[],
        traps=[decimal.InvalidOperation, decimal.DivisionByZero, decimal.Overflow],
    )


_DECIMAL_TEMPLATE = _decimal_template()


def fresh_decimal_context() -> decimal.Context:
    """The decimal context every call starts from (never the shared DefaultContext)."""
    return _DECIMAL_TEMPLATE.copy()
