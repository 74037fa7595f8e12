"""The benchmark runs end to end at a small size and reports every figure with its target."""

from __future__ import annotations

import pytest

from agentomnia.sandbox import format_table, run_bench
from agentomnia.sandbox.bench import TARGETS


@pytest.mark.slow
def test_small_benchmark_reports_all_figures() -> None:
    result = run_bench(calls=200, sessions=2, workers=2, batch=25, repeats=1)
    for rate in result["calls_per_s"].values():
        assert rate > 0
    assert set(result["targets"]) == set(TARGETS)
    assert result["latency_ms"]["reset_ms"] > 0 and result["latency_ms"]["open_ms"] > 0
    assert result["ratios"]["isolation_overhead_batched"] > 0
    assert result["memory_mb_per_env"] >= 0
    table = format_table(result)
    for name in ("pool_batched_calls_per_s", "reset_ms", "isolation_overhead_batched", "memory_mb_per_env"):
        assert name in table
    assert "200 calls" in table
    # the tau2-sized figures sit beside tau2-bench's own, with the size of the state they were taken on
    big = result["config"]["tau2_size_state"]
    assert (big["customers"], big["orders"]) == (500, 1000) and big["json_bytes"] > 500_000
    assert result["calls_per_s"]["tau2_size_call_calls_per_s"] > 0
    assert result["calls_per_s"]["tau2_size_get_order_calls_per_s"] > 0
    # the same look-ups through a sandbox that sleeps for every reply, and what watching gains
    assert result["calls_per_s"]["tau2_size_call_sleeping_calls_per_s"] > 0
    assert result["ratios"]["reply_spin_speedup"] == pytest.approx(
        result["calls_per_s"]["tau2_size_call_calls_per_s"]
        / result["calls_per_s"]["tau2_size_call_sleeping_calls_per_s"]
    )
    assert (
        result["latency_ms"]["tau2_size_reset_ms"] > 0 and result["latency_ms"]["tau2_size_state_hash_ms"] > 0
    )
    assert result["ratios"]["tau2_reset_over_tau2_size"] > 0
    assert "500 customers and 1000 orders" in " ".join(table.split())


@pytest.mark.slow
def test_sessions_benchmark_holds_every_session_open_and_counts_every_call() -> None:
    from agentomnia.sandbox.bench import format_sessions, run_sessions_bench

    result = run_sessions_bench(n=40, calls_per_session=3, workers=2, threads=8)
    assert result["live_sessions"] == 40  # all open at once when the calls were made
    calls = result["calls"]
    assert calls["errors"] == 0, calls["first_errors"]
    assert calls["made"] == 40 * 3
    assert 0 < calls["p50_ms"] <= calls["p99_ms"] <= calls["max_ms"]
    assert 0 < calls["tool_failures"] < calls["made"]  # the workload's invalid calls fail, the rest succeed
    assert result["mb_per_session"]["workers"] >= 0
    table = format_sessions(result)
    assert "40 shop sessions open at once" in table and "call p50 / p99 / max ms" in table


def test_sessions_verb_refuses_an_empty_run(tmp_path, monkeypatch) -> None:
    from agentomnia.cli import main

    monkeypatch.setenv("AGENTOMNIA_HOME", str(tmp_path))
    assert main(["bench", "sessions", "--n", "0"]) != 0
