"""`agentomnia bench sandbox`: what isolation costs, measured on the shop fixture.

Measured (medians over `repeats` runs): tool calls per second for one session (per call and
batched with `call_many`) and for `sessions` sessions on `workers` workers driven by one thread
each; reset and open latency; worker memory per warm environment. The same workload also runs in
this process through the same runtime without a process boundary (`LocalSession`, the reference
the overhead ratios are taken against) and, for scale, as bare method calls with no guards,
validation or rollback at all.

The workload is a fixed, seeded mix of the fixture's 22 tools (reads weighted 2:1 over writes,
5% deliberately invalid calls); about a third of calls fail the way an agent's calls do (unknown
ids, wrong order state), which exercises rollback.
"""

from __future__ import annotations

import copy
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from agentomnia.sandbox.fixtures import FixtureName, fixture_bundle
from agentomnia.sandbox.local import open_local
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.sandbox.session import Session
from agentomnia.sandbox.workload import ArgumentSampler

TARGETS = {
    "pool_batched_calls_per_s": (">=", 5000.0),
    "reset_ms": ("<=", 2.0),
    "isolation_overhead_batched": ("<=", 5.0),
}


def run_bench(
    calls: int = 2000,
    sessions: int = 8,
    workers: int = 2,
    *,
    batch: int = 50,
    repeats: int = 3,
    seed: int = 0,
    fixture: FixtureName = "shop",
) -> dict[str, Any]:
    """Run every measurement; returns medians, ratios and target verdicts (see `format_table`)."""
    bundle = fixture_bundle(fixture)
    workload = ArgumentSampler(bundle, seed=seed).calls(calls, read_weight=2.0)
    chunks = [workload[i : i + batch] for i in range(0, len(workload), batch)]
    rates: dict[str, float] = {}
    latency: dict[str, float] = {}

    local = open_local(bundle)

    def local_run() -> None:
        local.reset()
        local.call_many(workload)

    rates["inprocess_reference_calls_per_s"] = _rate(local_run, len(workload), repeats)
    rates["inprocess_unguarded_calls_per_s"] = _rate(
        _unguarded_runner(bundle.source, bundle.class_name, bundle.s0, workload), len(workload), repeats
    )
    latency["inprocess_reset_ms"] = _median_ms(lambda: local.reset(), 30)

    with Sandbox(workers=workers, idle_timeout_s=0, max_sessions=max(64, sessions * 4)) as sandbox:
        opened: list[Session] = []
        open_times = []
        for _ in range(sessions):
            started = time.perf_counter()
            opened.append(sandbox.open(bundle))
            open_times.append((time.perf_counter() - started) * 1000)
        latency["open_ms"] = statistics.median(
            open_times[1:] or open_times
        )  # the first also ships the bundle
        single = opened[0]
        per_call = workload[: min(len(workload), 1000)]

        def single_calls() -> None:
            single.reset()
            for tool, args in per_call:
                single.call(tool, args)

        def single_batched() -> None:
            single.reset()
            for chunk in chunks:
                single.call_many(chunk)

        rates["single_call_calls_per_s"] = _rate(single_calls, len(per_call), repeats)
        rates["single_batched_calls_per_s"] = _rate(single_batched, len(workload), repeats)
        rates["pool_batched_calls_per_s"] = _rate(
            lambda: _threaded(opened, lambda s: [s.call_many(c) for c in chunks]),
            len(workload) * len(opened),
            repeats,
        )
        rates["pool_call_calls_per_s"] = _rate(
            lambda: _threaded(opened, lambda s: [s.call(t, a) for t, a in per_call]),
            len(per_call) * len(opened),
            repeats,
        )
        latency["reset_ms"] = _median_ms(lambda: single.reset(), 50)
        latency["state_hash_ms"] = _median_ms(lambda: single.state_hash(), 20)
        memory = _memory_per_env(sandbox, bundle, 16)

    ratios = {
        "isolation_overhead_batched": rates["inprocess_reference_calls_per_s"]
        / rates["single_batched_calls_per_s"],
        "isolation_overhead_per_call": rates["inprocess_reference_calls_per_s"]
        / rates["single_call_calls_per_s"],
        "pool_speedup_over_reference": rates["pool_batched_calls_per_s"]
        / rates["inprocess_reference_calls_per_s"],
        "guard_overhead_inprocess": rates["inprocess_unguarded_calls_per_s"]
        / rates["inprocess_reference_calls_per_s"],
    }
    measured = {**rates, **latency, **ratios}
    targets = {
        name: {
            "value": measured[name],
            "target": f"{op} {bound:g}",
            "met": measured[name] >= bound if op == ">=" else measured[name] <= bound,
        }
        for name, (op, bound) in TARGETS.items()
    }
    return {
        "config": {
            "calls": len(workload),
            "sessions": sessions,
            "workers": workers,
            "batch": batch,
            "repeats": repeats,
            "fixture": fixture,
        },
        "calls_per_s": rates,
        "latency_ms": latency,
        "memory_mb_per_env": memory,
        "ratios": ratios,
        "targets": targets,
    }


def format_table(result: dict[str, Any]) -> str:
    """The benchmark result as an aligned text table, targets marked."""
    rows: list[tuple[str, str, str]] = []
    for name, value in result["calls_per_s"].items():
        rows.append((name, f"{value:,.0f}", ""))
    for name, value in result["latency_ms"].items():
        rows.append((name, f"{value:.3f}", ""))
    rows.append(("memory_mb_per_env", f"{result['memory_mb_per_env']:.2f}", ""))
    for name, value in result["ratios"].items():
        rows.append((name, f"{value:.2f}x", ""))
    verdicts = {
        name: f"{t['target']} {'ok' if t['met'] else 'MISSED'}" for name, t in result["targets"].items()
    }
    rows = [(name, value, verdicts.get(name, "")) for name, value, _ in rows]
    config = result["config"]
    header = (
        f"sandbox benchmark: {config['fixture']} fixture, {config['calls']} calls, {config['sessions']} sessions, "
        f"{config['workers']} workers, batches of {config['batch']}, median of {config['repeats']}"
    )
    width = max(len(r[0]) for r in rows)
    value_width = max(len(r[1]) for r in rows)
    lines = [header, "-" * len(header)]
    lines += [f"{name:<{width}}  {value:>{value_width}}  {verdict}".rstrip() for name, value, verdict in rows]
    return "\n".join(lines)


def _rate(run: Callable[[], Any], calls: int, repeats: int) -> float:
    samples = []
    for _ in range(max(1, repeats)):
        started = time.perf_counter()
        run()
        samples.append(calls / max(time.perf_counter() - started, 1e-9))
    return statistics.median(samples)


def _median_ms(action: Callable[[], Any], count: int) -> float:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def _threaded(sessions: Sequence[Session], work: Callable[[Session], Any]) -> None:
    for session in sessions:
        session.reset()
    threads = [threading.Thread(target=work, args=(session,)) for session in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _unguarded_runner(
    source: str, class_name: str, s0: dict[str, Any], workload: list[tuple[str, dict[str, Any]]]
) -> Callable[[], None]:
    """Bare method calls on a plainly exec'd class (OmniaBench's runtime): trusted source only."""
    namespace: dict[str, Any] = {"__name__": "bench_reference"}
    exec(compile(source, "<bench-reference>", "exec"), namespace)  # the shipped fixture, not generated code
    cls = namespace[class_name]

    def run() -> None:
        instance = cls(copy.deepcopy(s0))
        for tool, args in workload:
            try:
                getattr(instance, tool)(**args)
            except Exception:  # the reference ignores failures, like a runtime with no contract
                continue

    return run


def _memory_per_env(sandbox: Sandbox, bundle: Any, count: int) -> float:
    before = sum(worker["rss_bytes"] for worker in sandbox.stats()["workers"])
    extra = [sandbox.open(bundle) for _ in range(count)]
    for session in extra:
        session.call("list_products", {})
    after = sum(worker["rss_bytes"] for worker in sandbox.stats()["workers"])
    for session in extra:
        session.close()
    return max(after - before, 0) / count / (1024 * 1024)
