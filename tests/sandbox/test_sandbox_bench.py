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
