"""How cheaply DAG tasks are made: verified tasks per minute and CPU seconds per kept task.

    report = bench_dag_tasks(sorted(Path("envs").iterdir()), per_env_standard=9, per_env_challenge=1)
    agentomnia bench tasks ~/.agentomnia/envs -n 60 --standard 4 --challenge 1

Each environment folder gets its DAG-Standard and DAG-Challenge tasks in one call
(`synthesize_dag_variants`), environments running concurrently on `workers` threads over a sandbox
of as many workers. Timed: the synthesis alone (the sandbox's start-up is not). CPU is counted on
both sides — this process and the sandbox workers — because a rejected candidate costs both.
Afterwards, untimed, every kept task is re-checked the way the `dag_oracle_passes` asset check does
(`check_task` in a fresh session) and its query is run through the leakage rules, so a speed-up
that lets a bad task through shows up as `oracle_failures` or `leaking` instead of as a gain.
Rejections are counted by stage and by cause (`cause`): a candidate turned down costs a reset and a
few calls and yields nothing, so a change that makes fewer of them shows there first.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil

from agentomnia.envs.spec import EnvSpec
from agentomnia.rejection import Rejection
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.dag.synth import check_task, synthesize_dag_variants
from agentomnia.tasks.families import DAG, is_challenging_kind
from agentomnia.tasks.leakage import leakage_problems
from agentomnia.tasks.models import Task

Synthesize = Callable[[Path, Sandbox, list[tuple[str, int]], int], tuple[list[Task], list[Rejection]]]


def _variants(
    env: Path, sandbox: Sandbox, plan: list[tuple[str, int]], seed: int
) -> tuple[list[Task], list[Rejection]]:
    return synthesize_dag_variants(env, sandbox, plan, seed=seed)


def cause(rejection: Rejection) -> str:
    """What turned a candidate down: a refused precondition or requirement, else the stage that
    refused it (`grounding`: nothing fitting to point at, `execution`: the call failed, ...)."""
    return "precondition" if "precondition_failed" in rejection.reason else rejection.stage


def environment_folders(folder: str | Path, limit: int = 0) -> list[Path]:
    """The environment bundles in `folder` (those with a spec.json), in name order, at most `limit`."""
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"{root} is not a folder of environment bundles (`make run` makes some)")
    found = sorted(d for d in root.iterdir() if (d / "spec.json").is_file())
    if not found:
        raise ValueError(f"{root} holds no environment bundle (a folder with a spec.json)")
    return found[:limit] if limit > 0 else found


def format_dag_bench(r: dict[str, Any]) -> str:
    lines = [f"{k:<28} {v}" for k, v in r.items() if k not in ("rejected_by_stage", "rejected_by_cause")]
    lines += [f"  rejected ({k}){'':<{max(1, 16 - len(k))}} {v}" for k, v in r["rejected_by_cause"].items()]
    return "\n".join(lines)


def _worker_cpu(sandbox: Sandbox) -> float:
    """User + system CPU seconds the sandbox's live workers have used so far."""
    total = 0.0
    for pid in sandbox.worker_pids():
        try:
            times = psutil.Process(pid).cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue  # a worker replaced mid-run: its time is lost to the count, not to the run
        total += times.user + times.system
    return total


def bench_dag_tasks(
    env_dirs: Sequence[str | Path],
    per_env_standard: int = 9,
    per_env_challenge: int = 1,
    workers: int = 2,
    *,
    seed: int = 0,
    verify: bool = True,
    synthesize: Synthesize | None = None,
) -> dict[str, Any]:
    """Synthesize DAG tasks over `env_dirs` and report throughput, cost per kept task and rejections.

    `synthesize` replaces the per-environment call (to measure another implementation with the
    same harness); by default it is `synthesize_dag_variants`.
    """
    run = synthesize or _variants
    plan = [
        (v, n) for v, n in (("dag-standard", per_env_standard), ("dag-challenge", per_env_challenge)) if n
    ]
    folders = [Path(d) for d in env_dirs]
    box = Sandbox(workers, idle_timeout_s=0)
    try:
        worker_before = _worker_cpu(box)
        cpu_before = time.process_time()
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(lambda d: run(d, box, plan, seed), folders))
        wall = time.perf_counter() - started
        parent_cpu = time.process_time() - cpu_before
        worker_cpu = _worker_cpu(box) - worker_before
        tasks = [t for kept, _ in results for t in kept]
        rejected = [r for _, rej in results for r in rej]
        oracle_failures: list[str] = []
        leaking: list[str] = []
        if verify:
            bundles = {d: Bundle.load(d) for d in folders}
            by_env = {t.env_id: d for d, (kept, _) in zip(folders, results, strict=True) for t in kept}
            specs = {d: EnvSpec.model_validate(b.spec or {}) for d, b in bundles.items()}
            for t in tasks:
                folder = by_env[t.env_id]
                result = check_task(t, box, bundles[folder], specs[folder])
                if not result.passed:
                    oracle_failures.append(f"{t.id}: {result.detail or result.consistency or result.state}")
                if leakage_problems(t.query, specs[folder], forbid_ids=is_challenging_kind(t.kind)):
                    leaking.append(t.id)
    finally:
        box.close()
    causes = Counter(cause(r) for r in rejected)
    stages: dict[str, dict[str, int]] = {}
    for r in rejected:
        per = stages.setdefault(str(r.detail.get("kind")), {})
        per[r.stage] = per.get(r.stage, 0) + 1
    kept = len(tasks)
    verified = kept - len(oracle_failures) if verify else kept
    candidates = kept + len(rejected)
    return {
        "environments": len(folders),
        "kept": kept,
        "kept_by_variant": {k: sum(1 for t in tasks if t.kind == k) for k in DAG.kinds},
        "rejected": len(rejected),
        "kept_share": round(kept / candidates, 3) if candidates else 0.0,
        "rejected_by_stage": {k: dict(sorted(v.items())) for k, v in sorted(stages.items())},
        "rejected_by_cause": dict(causes.most_common()),
        "wall_seconds": round(wall, 2),
        "verified_tasks_per_min": round(verified / wall * 60, 1) if wall else 0.0,
        "cpu_seconds_per_kept": round((parent_cpu + worker_cpu) / kept, 4) if kept else None,
        "parent_cpu_seconds_per_kept": round(parent_cpu / kept, 4) if kept else None,
        "worker_cpu_seconds_per_kept": round(worker_cpu / kept, 4) if kept else None,
        "oracle_failures": len(oracle_failures),
        "oracle_failure_examples": oracle_failures[:3],
        "leaking": len(leaking),
        "verified": verify,
        "workers": workers,
    }
