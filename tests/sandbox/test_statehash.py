"""The canonical text of a state is the same whichever encoder writes it: orjson where it can,
json.dumps where it cannot, byte for byte."""

from __future__ import annotations

import collections
import dataclasses
import decimal
import enum
import json
import random
import uuid
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import pytest

from agentomnia.sandbox.statehash import _leaf, canonical_state


def _reference(state: Any) -> str:
    return json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_leaf)


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


@dataclasses.dataclass
class Point:
    x: int


class Amount(float):
    """A float subclass an environment may define: json writes it as the number."""


class Code(str):
    """A str subclass: both writers write its text."""


Pair = collections.namedtuple("Pair", "left right")


_CHARS = [chr(c) for c in range(0, 0x30)] + list('"\\/\x7f\u2028\u2029é漢\U0001f600abcXYZ019 ')


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(_CHARS) for _ in range(rng.randint(0, 12)))


def _number(rng: random.Random) -> Any:
    kind = rng.randrange(6)
    if kind == 0:
        return rng.randint(-(2**63), 2**63 - 1)
    if kind == 1:
        return round(rng.uniform(-1e6, 1e6), rng.randint(0, 6))
    if kind == 2:
        return rng.uniform(-1, 1) * 10 ** rng.randint(-12, 22)  # written with an exponent by both
    if kind == 3:
        return rng.choice([0.0, -0.0, 1.0, 0.1, 1e15, 1e16, 123456789.125, 2.5e-5, 5e-324])
    if kind == 4:
        return rng.choice([True, False, None])
    return rng.randint(0, 1000)


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(10 if depth < 3 else 3)
    if kind == 0:
        return _number(rng)
    if kind == 1:
        return _text(rng)
    if kind == 2:
        return rng.choice([
            date(2026, 3, 1), datetime(2026, 3, 1, 9, 30, 5, 120), datetime(2026, 3, 1, tzinfo=UTC), time(7, 5),
            timedelta(hours=2), decimal.Decimal("12.50"), Colour.RED, Level.HIGH, uuid.UUID(int=7),
            b"\x00\xff", Point(3), frozenset({"b", "a"}), {3, 1, 2}, Amount(2.5e-5), Amount(12.5), Code("c"),
            Pair(1, "b"), collections.OrderedDict(b=1, a=2), collections.deque([1, 2]), collections.Counter("aab"),
        ])  # fmt: skip
    if kind in (3, 4, 5):
        return {_text(rng): _value(rng, depth + 1) for _ in range(rng.randint(0, 5))}
    if kind in (6, 7):
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 5))]
    if kind == 8:
        return tuple(_value(rng, depth + 1) for _ in range(rng.randint(0, 3)))
    return {"items": {f"ITM-{i:03d}": {"price": _number(rng), "name": _text(rng)} for i in range(3)}}


@pytest.mark.parametrize("seed", range(40))
def test_canonical_text_is_json_dumps_byte_for_byte(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(50):
        state = {_text(rng): _value(rng) for _ in range(rng.randint(1, 6))}
        assert canonical_state(state) == _reference(state)


def test_what_orjson_refuses_is_written_by_json() -> None:
    """Integers past 64 bits, keys that are not strings: the json path, as before."""
    big = {"n": 2**70, "m": -(2**64)}
    assert canonical_state(big) == _reference(big)
    keyed = {"by_id": {3: "c", 1: "a"}}
    assert canonical_state(keyed) == '{"by_id":{"1":"a","3":"c"}}'
    assert (
        canonical_state({"x": float("nan"), "y": float("inf")}) == '{"x":null,"y":null}'
    )  # JSON has neither


def test_a_shop_sized_state_is_written_by_orjson(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A state of tau2-bench retail's size takes the fast path: json.dumps is never called."""
    from agentomnia.sandbox import statehash
    from agentomnia.sandbox.fixtures.generate import shop_s0

    state = shop_s0(customers_n=50, orders_n=100)
    expected = _reference(state)

    def refuse(*args: Any, **kwargs: Any) -> str:
        raise AssertionError("json.dumps was called")

    monkeypatch.setattr(statehash.json, "dumps", refuse)
    assert canonical_state(state) == expected
