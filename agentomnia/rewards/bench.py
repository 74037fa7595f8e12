"""`agentomnia bench rewards`: rewards scored as each rollout ends against the batch-at-end barrier.

The rollouts are real: each RL row (prompt, task, bundle, golden trajectory) gives a group of rollouts
that replay its golden tool calls in their own sandbox session, as GRPO's tool loop does, in lockstep
iterations. One iteration is one batched decoding step of the policy (`generation_ms`, the one thing
the benchmark stands in for, since it loads no model) followed by every active rollout's tool calls.
Half of each group stops one tool turn short, so rollouts end at different iterations and some fail.

A rollout that has answered is scored the way training scores it: its final state read from the
sandbox, its answer parsed, and the router's reward with the task's verifier code run in the sandbox
(the offline judge as safeguard). The two modes run the same rollouts and must give the same rewards:

- `barrier`: every rollout is scored after the last one ends (the batch-at-end baseline);
- `stream`: each rollout is scored on a thread as soon as it ends, while the others are generated.

Reported per mode, as medians over the repeats (the modes alternate, so noise hits both): the batch's
wall time from the first decoding step to the last reward, rewards per second over that time, and the
time from a rollout's end to its reward (median and worst).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from agentomnia.rewards.judges import transcript_judge
from agentomnia.rewards.router import score_task
from agentomnia.rewards.rules import extract_answer
from agentomnia.rewards.stream import RewardStream, latency_summary
from agentomnia.sandbox import Sandbox
from agentomnia.sandbox.bundle import Bundle
from agentomnia.tasks.grading import Outcome
from agentomnia.tasks.models import Task
from agentomnia.trajectories.messages import parse_arguments

Turn = list[tuple[str, dict[str, Any]]]


def rl_rows_file(path: str | Path) -> Path:
    """The `rl.jsonl` of an RL dataset folder (or the file itself); the newest round's under a home's
    `datasets/rl` when `path` is that folder."""
    p = Path(path)
    if p.is_file():
        return p
    if (p / "rl.jsonl").is_file():
        return p / "rl.jsonl"
    rounds = sorted(p.glob("*/rl.jsonl"), key=lambda f: f.stat().st_mtime)
    if rounds:
        return rounds[-1]
    raise ValueError(
        f"no RL rows at {p}: pass an RL dataset folder (it holds rl.jsonl), or run `make run` first so "
        "$AGENTOMNIA_HOME/datasets/rl/<round> exists"
    )


def load_rl_rows(path: str | Path) -> list[dict[str, Any]]:
    file = rl_rows_file(path)
    rows = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not rows:
        raise ValueError(f"{file} holds no RL rows")
    for n, row in enumerate(rows, 1):
        missing = {"task", "bundle_dir", "golden"} - set(row)
        if missing:
            raise ValueError(
                f"{file}:{n}: an RL row needs task, bundle_dir and golden; missing {sorted(missing)}"
            )
    return rows


def _turns(golden: Sequence[Mapping[str, Any]]) -> tuple[list[Turn], str]:
    """The golden trajectory's tool turns (the calls of each assistant message) and its final answer."""
    turns: list[Turn] = []
    answer = ""
    for message in golden:
        if message.get("role") != "assistant":
            continue
        calls: Turn = []
        for call in message.get("tool_calls") or []:
            name, args, problem = parse_arguments(call)
            if args is None:
                raise ValueError(f"a golden call does not parse: {problem}")
            calls.append((name, args))
        if calls:
            turns.append(calls)
        else:
            answer = str(message.get("content") or "")
    return turns, answer


class _Rollout:
    def __init__(self, task: Task, bundle: Bundle, turns: list[Turn], answer: str) -> None:
        self.task, self.bundle, self.turns, self.answer = task, bundle, turns, answer
        self.session: Any = None
        self.calls: list[tuple[str, dict[str, Any]]] = []


def _rollouts(rows: Sequence[Mapping[str, Any]], group: int) -> list[_Rollout]:
    bundles: dict[str, Bundle] = {}
    out: list[_Rollout] = []
    for n, row in enumerate(rows, 1):
        raw = row["task"]
        task = Task.model_validate_json(raw) if isinstance(raw, str) else Task.model_validate(raw)
        key = str(row["bundle_dir"])
        if key not in bundles:
            bundles[key] = Bundle.load(key)
        bundle = bundles[key]
        golden = json.loads(row["golden"]) if isinstance(row["golden"], str) else row["golden"]
        try:
            turns, answer = _turns(golden)
        except ValueError as exc:
            raise ValueError(f"RL row {n} ({row['bundle_dir']}): {exc}; fix or drop that row") from None
        for j in range(group):
            # every other member of the group stops one tool turn short: it ends sooner and may fail
            kept = turns if j % 2 == 0 or not turns else turns[:-1]
            out.append(_Rollout(task, bundle, kept, answer))
    return out


def _score(rollout: _Rollout, sandbox: Sandbox) -> float | None:
    def verifier(code: str, initial_state: Mapping[str, Any], final_state: Mapping[str, Any]) -> bool | None:
        passed: bool | None = sandbox.run_check(code, initial_state, final_state).passed
        return passed

    outcome = Outcome(
        final_state=rollout.session.state(),
        answer=extract_answer(rollout.answer, rollout.task.expected_answer),
        calls=list(rollout.calls),
    )
    return score_task(rollout.task, outcome, verifier=verifier, judge=transcript_judge()).value


def _batch(
    rollouts: Sequence[_Rollout], sandbox: Sandbox, workers: int, generation_s: float
) -> tuple[float, list[float | None], dict[str, float | None]]:
    """One batch in lockstep iterations; (wall seconds to the last reward, rewards, latency summary)."""
    for r in rollouts:
        r.session = sandbox.open(r.bundle, r.task.init_config)
        r.calls = []
    try:
        with RewardStream[float | None](workers) as stream:
            started = time.perf_counter()
            active = list(range(len(rollouts)))
            step = 0
            while active:
                time.sleep(generation_s)  # one batched decoding step of every active rollout
                still: list[int] = []
                for i in active:
                    r = rollouts[i]
                    if step < len(r.turns):
                        for tool, args in r.turns[step]:
                            r.session.call(tool, args)
                            r.calls.append((tool, args))
                        still.append(i)
                    else:  # this step decoded its final answer: the rollout has ended
                        stream.submit(i, partial(_score, r, sandbox))
                active, step = still, step + 1
            rewards = [stream.result(i) for i in range(len(rollouts))]
            wall = time.perf_counter() - started
            latency = latency_summary(list(stream.timings().values()))
    finally:
        for r in rollouts:
            r.session.close()
    return wall, rewards, latency


def bench_rewards(
    rows: Sequence[Mapping[str, Any]],
    *,
    group: int = 4,
    repeats: int = 5,
    generation_ms: float = 20.0,
    reward_workers: int = 4,
    sandbox_workers: int = 2,
) -> dict[str, Any]:
    """Stream against barrier on the same rollouts (see the module docstring)."""
    if group < 1 or repeats < 1 or reward_workers < 1:
        raise ValueError("group, repeats and reward_workers must be at least 1")
    rollouts = _rollouts(rows, group)
    modes = {"barrier": 0, "stream": reward_workers}
    walls: dict[str, list[float]] = {m: [] for m in modes}
    p50s: dict[str, list[float]] = {m: [] for m in modes}
    worst: dict[str, list[float]] = {m: [] for m in modes}
    rewards: dict[str, list[float | None]] = {}
    with Sandbox(sandbox_workers, idle_timeout_s=0, max_sessions=len(rollouts) + 8) as sandbox:
        _batch(rollouts, sandbox, 0, 0.0)  # warm the workers: environment classes and check code load once
        for rep in range(repeats):
            order = list(modes) if rep % 2 == 0 else list(reversed(modes))
            for mode in order:
                wall, got, latency = _batch(rollouts, sandbox, modes[mode], generation_ms / 1000)
                walls[mode].append(wall)
                p50s[mode].append(float(latency["latency_p50_ms"] or 0.0))
                worst[mode].append(float(latency["latency_max_ms"] or 0.0))
                if rewards.setdefault(mode, got) != got:
                    raise RuntimeError(f"{mode} scored the same rollouts differently between repeats")
    if rewards["stream"] != rewards["barrier"]:
        raise RuntimeError("streamed and barrier rewards differ on the same rollouts")
    scored = [r for r in rewards["stream"] if r is not None]
    result: dict[str, Any] = {
        "rows": len(rows),
        "rollouts": len(rollouts),
        "group": group,
        "repeats": repeats,
        "generation_ms": generation_ms,
        "reward_workers": reward_workers,
        "passed": sum(1 for r in scored if r >= 1.0),
        "unscored": len(rollouts) - len(scored),
    }
    for mode in modes:
        wall = statistics.median(walls[mode])
        result[f"{mode}_wall_s"] = round(wall, 4)
        result[f"{mode}_rewards_per_s"] = round(len(rollouts) / wall, 1)
        result[f"{mode}_latency_p50_ms"] = round(statistics.median(p50s[mode]), 2)
        result[f"{mode}_latency_max_ms"] = round(statistics.median(worst[mode]), 2)
    result["wall_ratio_stream_to_barrier"] = round(result["stream_wall_s"] / result["barrier_wall_s"], 3)
    result["latency_ratio_stream_to_barrier"] = round(
        result["stream_latency_p50_ms"] / max(result["barrier_latency_p50_ms"], 1e-9), 3
    )
    # streaming must not be slower than the barrier (5% for the noise of a shared machine), and must
    # hand rewards back sooner
    result["targets"] = {
        "wall_ratio_stream_to_barrier": {"value": result["wall_ratio_stream_to_barrier"], "target": "<= 1.05",
                                         "met": result["wall_ratio_stream_to_barrier"] <= 1.05},
        "latency_ratio_stream_to_barrier": {"value": result["latency_ratio_stream_to_barrier"], "target": "< 1",
                                            "met": result["latency_ratio_stream_to_barrier"] < 1},
    }  # fmt: skip
    return result


def format_rewards_bench(r: Mapping[str, Any]) -> str:
    head = (
        f"{r['rollouts']} rollouts ({r['rows']} tasks x group {r['group']}), {r['passed']} passed, "
        f"{r['unscored']} unscored; decoding step {r['generation_ms']} ms; medians of {r['repeats']} repeats"
    )
    lines = [head, f"{'mode':<9} {'wall s':>8} {'rewards/s':>10} {'end->reward p50 ms':>19} {'max ms':>9}"]
    for mode in ("barrier", "stream"):
        lines.append(
            f"{mode:<9} {r[f'{mode}_wall_s']:>8} {r[f'{mode}_rewards_per_s']:>10} "
            f"{r[f'{mode}_latency_p50_ms']:>19} {r[f'{mode}_latency_max_ms']:>9}"
        )
    lines.append(
        f"stream/barrier: wall {r['wall_ratio_stream_to_barrier']}, end->reward p50 {r['latency_ratio_stream_to_barrier']}"
    )
    for name, t in (r.get("targets") or {}).items():
        lines.append(f"target {name} {t['target']}: {t['value']} ({'met' if t['met'] else 'NOT met'})")
    return "\n".join(lines)
