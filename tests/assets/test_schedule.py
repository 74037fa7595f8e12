"""The nightly synthesis schedule adds the next round and asks for its run."""

from __future__ import annotations

from datetime import UTC, datetime

from dagster import RunRequest, build_schedule_context, instance_for_test

from agentomnia_assets.partitions import next_round, round_index
from jobs import nightly_synthesis


def test_nightly_schedule_adds_the_next_round() -> None:
    with instance_for_test() as instance:
        first = nightly_synthesis(
            build_schedule_context(
                instance=instance, scheduled_execution_time=datetime(2026, 11, 29, 2, tzinfo=UTC)
            )
        )
        assert (
            isinstance(first, RunRequest)
            and first.partition_key == "r0"
            and first.run_key == "nightly-20261129"
        )
        second = nightly_synthesis(
            build_schedule_context(
                instance=instance, scheduled_execution_time=datetime(2026, 11, 30, 2, tzinfo=UTC)
            )
        )
        assert isinstance(second, RunRequest) and second.partition_key == "r1"
        assert set(instance.get_dynamic_partitions("rounds")) == {"r0", "r1"}


def test_round_keys() -> None:
    assert next_round([]) == "r0" and next_round(["r0", "r3", "r1"]) == "r4"
    assert round_index("r12") == 12
    try:
        round_index("round-1")
    except ValueError as exc:
        assert "r<N>" in str(exc)
    else:
        raise AssertionError("a malformed round key must be refused")
