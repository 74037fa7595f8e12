"""1,000 random call sequences over several environments, replayed in fresh workers (in reverse order),
give identical results and state hashes."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import pytest

from agentomnia.sandbox import ArgumentSampler, Bundle, Sandbox

ToolFactory = Callable[..., dict[str, Any]]

# Everything that could vary between processes or runs: random draws, uuids, the clock, sets of
# strings (hash order), and float formatting.
AMBIENT = """
import datetime
import random
import uuid


class Raffle:
    def __init__(self, init_config):
        self.entrants = set(init_config.get("entrants", []))
        self.draws = []
        self.tickets = {}

    def enter(self, name: str):
        self.entrants.add(name)
        ticket = str(uuid.uuid4())
        self.tickets[ticket] = {"name": name, "at": datetime.datetime.now().isoformat(), "weight": random.random()}
        return {"ok": True, "data": ticket, "error": None}

    def draw(self, count: int = 1):
        if not self.entrants:
            return {"ok": False, "data": None, "error": {"code": "empty", "message": "nobody entered"}}
        pool = list(self.entrants)
        winners = random.sample(pool, min(count, len(pool)))
        self.draws.append({"winners": winners, "on": datetime.date.today().isoformat()})
        return {"ok": True, "data": winners, "error": None}

    def shuffle_names(self):
        names = sorted(self.entrants)
        random.shuffle(names)
        return {"ok": True, "data": names, "error": None}
"""

SEQUENCES = {"shop": 400, "mock": 300, "raffle": 300}


@pytest.fixture(scope="module")
def raffle(tool: ToolFactory) -> Bundle:
    tools = [
        tool("enter", {"name": {"type": "string", "enum": ["ada", "bo", "cy", "dee", "eve"]}}, ["name"]),
        tool("draw", {"count": {"type": "integer", "minimum": 1, "maximum": 3}}),
        tool("shuffle_names"),
    ]
    return Bundle.from_source(AMBIENT, tools, {"entrants": ["ada", "bo"]}, read_tools=["shuffle_names"])


def _plans(bundles: dict[str, Bundle]) -> list[tuple[str, list[tuple[str, dict[str, Any]]]]]:
    plans = []
    for name, count in SEQUENCES.items():
        for index in range(count):
            sampler = ArgumentSampler(bundles[name], seed=index)
            plans.append((name, sampler.calls(sampler.rng.randint(3, 9), read_weight=1.0)))
    return plans


def _run(
    bundles: dict[str, Bundle], plans: list[tuple[str, list[tuple[str, dict[str, Any]]]]], order: list[int]
) -> dict[int, tuple[str, str]]:
    outcomes: dict[int, tuple[str, str]] = {}
    with Sandbox(workers=2, idle_timeout_s=0) as box:
        sessions = {name: box.open(bundle) for name, bundle in bundles.items()}
        for index in order:
            name, plan = plans[index]
            session = sessions[name]
            session.reset()
            results = session.call_many(plan)
            digest = hashlib.sha256("".join(r.model_dump_json() for r in results).encode()).hexdigest()
            outcomes[index] = (digest, session.state_hash())
    return outcomes


@pytest.mark.slow
def test_thousand_sequences_replay_identically_in_fresh_workers(
    shop: Bundle, mock: Bundle, raffle: Bundle
) -> None:
    bundles = {"shop": shop, "mock": mock, "raffle": raffle}
    plans = _plans(bundles)
    assert len(plans) == 1000
    forward = _run(bundles, plans, list(range(len(plans))))
    backward = _run(bundles, plans, list(reversed(range(len(plans)))))
    mismatches = [i for i in forward if forward[i] != backward[i]]
    assert not mismatches, f"{len(mismatches)} sequences diverged, first: {plans[mismatches[0]]}"
    # The sequences really exercise state: most end somewhere other than s0.
    distinct = {state for _, state in forward.values()}
    assert len(distinct) > 500
