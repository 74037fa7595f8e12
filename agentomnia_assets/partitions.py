"""Round partitions: `r0` is the base round; each self-evolution round adds the next one."""

from __future__ import annotations

import re

from dagster import AssetExecutionContext, DynamicPartitionsDefinition

rounds = DynamicPartitionsDefinition(name="rounds")

BASE_ROUND = "r0"
_ROUND = re.compile(r"^r(\d+)$")


def round_index(key: str) -> int:
    match = _ROUND.match(key)
    if match is None:
        raise ValueError(f"round key {key!r} is not of the form r<N> (r0, r1, ...)")
    return int(match.group(1))


def next_round(existing: list[str]) -> str:
    """The round after the highest existing one (`r0` when there is none)."""
    indices = [round_index(k) for k in existing if _ROUND.match(k)]
    return f"r{max(indices) + 1}" if indices else BASE_ROUND


def previous_round(key: str, existing: list[str]) -> str | None:
    """The highest existing round below `key` (None for the base round or when there is none)."""
    index = round_index(key)
    below = [round_index(k) for k in existing if _ROUND.match(k) and round_index(k) < index]
    return f"r{max(below)}" if below else None


PARENT_TAG = "agentomnia/parent_round"  # on a self-evolution run: the round whose failures started it


def parent_round(context: AssetExecutionContext) -> str | None:
    """The round this run's round follows: the one its run is tagged with, else the highest earlier."""
    tagged = context.run.tags.get(PARENT_TAG)
    if tagged:
        return tagged
    existing = list(context.instance.get_dynamic_partitions(rounds.name))  # type: ignore[arg-type]
    return previous_round(context.partition_key, existing)
