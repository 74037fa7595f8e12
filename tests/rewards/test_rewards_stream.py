"""The reward stream: rollouts scored as they end (threads) or all at the end (the barrier baseline)."""

from __future__ import annotations

import threading

import pytest

from agentomnia.rewards import RewardStream, latency_summary


def test_a_streamed_reward_is_ready_while_later_rollouts_are_still_running() -> None:
    scored = threading.Event()
    with RewardStream[float](workers=2) as stream:
        stream.submit("a", lambda: (scored.set(), 1.0)[1])
        # rollout b is still being generated: a's reward must not wait for it
        assert scored.wait(timeout=10), "the first rollout was not scored before the second ended"
        stream.submit("b", lambda: 0.0)
        assert stream.result("a") == 1.0 and stream.result("b") == 0.0
        timings = stream.timings()
        assert timings["a"].ready <= timings["b"].ended


def test_the_barrier_scores_nothing_until_a_reward_is_asked_for_then_all_in_the_order_they_ended() -> None:
    order: list[str] = []
    stream = RewardStream[str](workers=0)
    for key in ("b", "a", "c"):
        stream.submit(key, lambda key=key: (order.append(key), key)[1])
    assert order == [] and not stream.streaming
    assert stream.result("a") == "a"
    assert order == ["b", "a", "c"]  # one barrier scored them all, in the order they ended
    assert stream.result("c") == "c" and order == ["b", "a", "c"]
    assert all(t.ready >= t.ended for t in stream.timings().values())


@pytest.mark.parametrize("workers", [0, 2])
def test_a_scoring_error_reaches_its_own_rollout_only(workers: int) -> None:
    def broken() -> float:
        raise RuntimeError("the verifier crashed")

    with RewardStream[float](workers=workers) as stream:
        stream.submit("bad", broken)
        stream.submit("good", lambda: 1.0)
        with pytest.raises(RuntimeError, match="the verifier crashed"):
            stream.result("bad")
        assert stream.result("good") == 1.0


def test_a_rollout_is_handed_over_once_and_keys_are_freed_between_batches() -> None:
    with RewardStream[int](workers=1) as stream:
        assert stream.submit("r", lambda: 1)
        assert not stream.submit("r", lambda: 2)  # the first hand-over stands
        assert "r" in stream and stream.result("r") == 1
        stream.clear()
        assert "r" not in stream and stream.timings() == {}
        with pytest.raises(KeyError, match="never handed to the reward stream"):
            stream.result("r")
        assert stream.submit("r", lambda: 3) and stream.result("r") == 3


def test_latency_summary_reports_milliseconds_from_end_to_reward() -> None:
    ticks = iter([0.0, 0.5, 0.5])
    stream = RewardStream[int](workers=0, clock=lambda: next(ticks))
    stream.submit("x", lambda: 1)  # ended 0.0
    stream.result("x")  # started 0.5, ready 0.5
    summary = latency_summary(list(stream.timings().values()))
    assert summary == {"latency_p50_ms": 500.0, "latency_max_ms": 500.0, "scoring_p50_ms": 0.0}
    assert latency_summary([])["latency_p50_ms"] is None
