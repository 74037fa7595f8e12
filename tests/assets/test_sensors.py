"""The self-evolution sensors on a test instance: thresholds, cursors, idempotence, busy files, the inbox."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from dagster import SensorResult, SkipReason, build_sensor_context, instance_for_test

from agentomnia.evolution import example_prd_path
from agentomnia.omniabench.store import FailureStore
from resources import StorageResource
from sensors import (
    EVOLVE_ON_ENV,
    FAILURE_THRESHOLD_ENV,
    failure_threshold,
    omniabench_failure_sensor,
    prd_inbox_sensor,
)
from tests.fixtures.benchmark import make_failure


def _evaluation(
    home: Path, eval_id: str, failures: int, *, finish: bool = True, round_key: str = "r0",
    policy: str = "baseline:heuristic",
) -> None:  # fmt: skip
    store = FailureStore(home / "lineage.duckdb")
    store.start(eval_id, round_key, policy, "bench-1", tasks=10, trials=3)
    store.add_failures([make_failure(n, eval_id=eval_id, round_key=round_key) for n in range(failures)])
    if finish:
        store.finish(eval_id, 0.4)


def _tick(instance, home: Path, cursor: str | None = None):  # type: ignore[no-untyped-def]
    context = build_sensor_context(
        instance=instance, cursor=cursor, resources={"storage": StorageResource(home=str(home))}
    )
    return omniabench_failure_sensor(context)


def test_failures_above_threshold_add_a_round_and_request_its_run(home: Path) -> None:
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("rounds", ["r0"])
        _evaluation(home, "ev-a", failures=6)
        result = _tick(instance, home)
        assert isinstance(result, SensorResult)
        [request] = result.run_requests or []
        assert request.partition_key == "r1" and request.run_key == "evolve-ev-a"
        assert request.tags["agentomnia/parent_round"] == "r0"
        assert request.tags["agentomnia/source_eval"] == "ev-a"
        [added] = result.dynamic_partitions_requests or []
        assert list(added.partition_keys or []) == ["r1"]
        # the next tick with the advanced cursor has nothing new
        again = _tick(instance, home, cursor=result.cursor)
        assert isinstance(again, SkipReason)


def test_unfinished_and_small_evaluations_do_not_trigger(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAILURE_THRESHOLD_ENV, "5")
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("rounds", ["r0"])
        _evaluation(home, "ev-running", failures=9, finish=False)
        assert isinstance(_tick(instance, home), SkipReason)
        _evaluation(home, "ev-small", failures=2)
        result = _tick(instance, home)
        assert isinstance(result, SensorResult) and not result.run_requests
        assert "below threshold" in str(result.skip_reason)
        # finishing the long one later still triggers it, whatever the cursor has passed
        FailureStore(home / "lineage.duckdb").finish("ev-running", 0.1)
        later = _tick(instance, home, cursor=result.cursor)
        assert isinstance(later, SensorResult)
        assert [r.run_key for r in later.run_requests or []] == ["evolve-ev-running"]


def test_two_evaluations_in_one_tick_get_two_rounds(home: Path) -> None:
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("rounds", ["r0", "r1"])
        _evaluation(home, "ev-1", failures=5, round_key="r1")
        _evaluation(home, "ev-2", failures=7, round_key="r1")
        result = _tick(instance, home)
        assert isinstance(result, SensorResult)
        assert sorted(str(r.partition_key) for r in result.run_requests or []) == ["r2", "r3"]


def test_the_round_s_trained_agent_drives_the_loop_unless_another_policy_is_named(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentomnia.storage import Storage

    rl, sft = Storage(home).round("r0").trained_policies()
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("rounds", ["r0"])
        _evaluation(home, "ev-heuristic", failures=9)
        _evaluation(home, "ev-sft", failures=8, policy=sft)
        _evaluation(home, "ev-rl", failures=7, policy=rl)
        result = _tick(instance, home)
        assert isinstance(result, SensorResult)
        # one round, from the RL checkpoint's failures; the others are named as not driving it
        assert [r.run_key for r in result.run_requests or []] == ["evolve-ev-rl"]
        monkeypatch.setenv(EVOLVE_ON_ENV, "baseline:heuristic")
        named = _tick(instance, home)
        assert isinstance(named, SensorResult)
        assert [r.run_key for r in named.run_requests or []] == ["evolve-ev-heuristic"]
    with instance_for_test() as instance:
        # a round that evaluated no trained agent evolves on what it did evaluate
        monkeypatch.delenv(EVOLVE_ON_ENV)
        instance.add_dynamic_partitions("rounds", ["r0", "r1"])
        _evaluation(home, "ev-r1-heuristic", failures=6, round_key="r1")
        result = _tick(instance, home, cursor=None)
        assert isinstance(result, SensorResult)
        assert "evolve-ev-r1-heuristic" in [r.run_key for r in result.run_requests or []]
        assert "evolve-ev-heuristic" not in [r.run_key for r in result.run_requests or []]


def test_a_busy_file_skips_the_tick(home: Path) -> None:
    import fcntl
    import os

    _evaluation(home, "ev-a", failures=6)
    lock = home / "lineage.duckdb.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        with instance_for_test() as instance:
            result = _tick(instance, home)
        assert isinstance(result, SkipReason) and "busy" in str(result.skip_message)
    finally:
        os.close(fd)


def test_threshold_setting_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAILURE_THRESHOLD_ENV, "three")
    with pytest.raises(ValueError, match="whole number"):
        failure_threshold()
    monkeypatch.setenv(FAILURE_THRESHOLD_ENV, "12")
    assert failure_threshold() == 12


def test_inbox_sensor_requests_a_round_for_a_valid_prd_and_reports_bad_ones(home: Path) -> None:
    inbox = home / "prd_inbox"
    inbox.mkdir(parents=True)
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("rounds", ["r0"])

        def tick(cursor: str | None = None):  # type: ignore[no-untyped-def]
            ctx = build_sensor_context(instance=instance, cursor=cursor,
                                       resources={"storage": StorageResource(home=str(home))})  # fmt: skip
            return prd_inbox_sensor(ctx)

        assert isinstance(tick(), SkipReason)  # empty inbox
        (inbox / "broken.md").write_text("---\npriority: P9\n---\n# nothing here\n")
        bad = tick()
        assert isinstance(bad, SensorResult) and not bad.run_requests
        shutil.copy(example_prd_path(), inbox / "pets.md")
        good = tick(bad.cursor)
        assert isinstance(good, SensorResult)
        [request] = good.run_requests or []
        assert request.partition_key == "r1" and request.tags["agentomnia/trigger"] == "prd_inbox_sensor"
        assert isinstance(tick(good.cursor), SkipReason)  # unchanged files do not trigger again
