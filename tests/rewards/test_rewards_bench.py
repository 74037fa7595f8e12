"""`bench rewards`: the same rollouts scored as they end and behind a barrier give the same rewards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentomnia.rewards.bench import bench_rewards, format_rewards_bench, load_rl_rows
from trainers.demo import demo_rows


def _dataset(folder: Path) -> Path:
    out = folder / "rl" / "r0"
    out.mkdir(parents=True)
    rows = demo_rows()[1]
    (out / "rl.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return out


def test_streamed_and_barrier_rewards_agree_and_both_modes_are_timed(tmp_path: Path) -> None:
    rows = load_rl_rows(_dataset(tmp_path).parent)  # the newest round under datasets/rl
    result = bench_rewards(rows, group=2, repeats=1, generation_ms=1.0, reward_workers=2)
    assert result["rollouts"] == 2 * len(rows) and result["unscored"] == 0
    # the full replays pass; members cut one turn short fail where the last call mattered
    assert len(rows) <= result["passed"] < result["rollouts"]
    for mode in ("barrier", "stream"):
        assert result[f"{mode}_wall_s"] > 0 and result[f"{mode}_rewards_per_s"] > 0
    assert "stream/barrier" in format_rewards_bench(result)
    # the verdicts are reported, not asserted (timings on a shared machine are for the benchmark)
    targets = result["targets"]
    assert set(targets) == {"wall_ratio_stream_to_barrier", "latency_ratio_stream_to_barrier"}
    assert targets["wall_ratio_stream_to_barrier"]["met"] == (result["wall_ratio_stream_to_barrier"] <= 1.05)
    assert "target wall_ratio_stream_to_barrier <= 1.05" in format_rewards_bench(result)


def test_rl_rows_that_are_missing_or_malformed_are_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="run `make run` first"):
        load_rl_rows(tmp_path)
    bad = tmp_path / "rl.jsonl"
    bad.write_text(json.dumps({"task": "{}"}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"rl.jsonl:1: .*missing \['bundle_dir', 'golden'\]"):
        load_rl_rows(bad)


def test_a_golden_call_that_does_not_parse_names_its_row(tmp_path: Path) -> None:
    rows = demo_rows()[1][:2]
    broken = dict(rows[1])
    golden = [dict(m) for m in broken["golden"]]
    golden[0] = {
        **golden[0],
        "tool_calls": [{"type": "function", "function": {"name": "list_tasks", "arguments": "{oops"}}],
    }
    broken["golden"] = golden
    with pytest.raises(ValueError, match=r"RL row 2 .*arguments of `list_tasks` are not JSON"):
        bench_rewards([rows[0], broken], group=1, repeats=1, generation_ms=0.0)
