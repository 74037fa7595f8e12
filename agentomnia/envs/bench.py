"""`agentomnia bench envs`: environments built and verified per minute on the shipped corpus.

Seeds are ingested, inferred and selected first (not timed as environment building); then each
selected candidate goes through state space -> toolset -> code -> s0 -> three-level verification
with builds running concurrently on the sandbox's workers. Reported: environments per minute,
median build seconds, verification's share of the time, CPU seconds per environment (this
process and the sandbox workers), kept share, tools per environment. `--processes N` builds the
same candidates again on N worker processes and reports them beside, with the ratio.
"""

from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psutil

from agentomnia.embeddings import default_embedder
from agentomnia.envs.build import BuildConfig, BuiltEnv, build_environment
from agentomnia.processes import own_sandbox, start_sandbox
from agentomnia.progress import tracked_map
from agentomnia.rejection import Rejection
from agentomnia.sandbox.sandbox import Sandbox, SandboxConfig
from agentomnia.seeds.inference import DomainMatcher, candidate_text, infer_candidates
from agentomnia.seeds.ingest import shipped_corpus
from agentomnia.seeds.selection import select
from agentomnia.taxonomy import load_taxonomy


def _build(candidate: Any, seeds: list[Any], box: Sandbox) -> tuple[BuiltEnv | Rejection, float | None]:
    """(result, seconds to a toolset-backed result or None when the build stopped before a toolset)."""
    started = time.perf_counter()
    domain = load_taxonomy().by_id(candidate.coordinate.taxonomy_id)
    outcome = build_environment(candidate, seeds, domain, box, config=BuildConfig())
    return outcome.result, (time.perf_counter() - started if outcome.toolset is not None else None)


def _build_in_worker(job: tuple[Any, list[Any]]) -> tuple[BuiltEnv | Rejection, float | None]:
    return _build(job[0], job[1], own_sandbox())


def run_envs_bench(limit: int = 40, workers: int = 2, processes: int = 0) -> dict[str, Any]:
    """The figures of the module docstring for builds on `workers` threads of this process; with
    `processes` > 1, the same candidates built again on that many worker processes (each with a
    one-worker sandbox, as the environments asset builds offline), reported beside them with the
    ratio and whether both built the same environments."""
    prep_started = time.perf_counter()
    seeds = shipped_corpus().accepted
    taxonomy = load_taxonomy()
    matcher = DomainMatcher(taxonomy, default_embedder())
    candidates, _ = infer_candidates(seeds, matcher)
    selection = select(candidates, matcher.text_vectors([candidate_text(c) for c in candidates]))
    chosen = selection.selected[:limit]
    by_id = {s.id: s for s in seeds}
    jobs = [(c, [by_id[i] for i in c.seed_ids if i in by_id]) for c in chosen]
    prep = time.perf_counter() - prep_started

    box = Sandbox(workers, idle_timeout_s=0)
    started = time.perf_counter()
    cpu_started, worker_cpu_started = time.process_time(), _cpu_seconds(box.worker_pids())
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            outcomes = list(pool.map(lambda job: _build(job[0], job[1], box), jobs))
        parent_cpu = time.process_time() - cpu_started
        worker_cpu = _cpu_seconds(box.worker_pids()) - worker_cpu_started
    finally:
        box.close()
    wall = time.perf_counter() - started
    results = [r for r, _ in outcomes]
    durations = [d for _, d in outcomes if d is not None]
    verify_seconds = [r.report.seconds for r in results if isinstance(r, BuiltEnv)]
    built = [r for r in results if isinstance(r, BuiltEnv)]
    per_env = max(1, len(chosen))
    out: dict[str, Any] = {
        "candidates": len(chosen),
        "environments": len(built),
        "kept_share": round(len(built) / max(1, len(chosen)), 3),
        "wall_seconds": round(wall, 2),
        "environments_per_min": round(len(built) / wall * 60, 1) if wall else 0.0,
        "median_build_seconds": round(statistics.median(durations), 3) if durations else None,
        "verification_share": round(sum(verify_seconds) / max(1e-9, sum(durations)), 3),
        "cpu_seconds_per_env": round((parent_cpu + worker_cpu) / per_env, 3),
        "parent_cpu_seconds_per_env": round(parent_cpu / per_env, 3),
        "worker_cpu_seconds_per_env": round(worker_cpu / per_env, 3),
        "tools_mean": round(statistics.fmean(len(b.spec.tools) for b in built), 1) if built else 0.0,
        "entities_mean": round(statistics.fmean(len(b.spec.entities) for b in built), 1) if built else 0.0,
        "attributes_mean": round(statistics.fmean(b.spec.attribute_count for b in built), 1)
        if built
        else 0.0,
        "preparation_seconds": round(prep, 1),
        "workers": workers,
        "target_environments_per_min": 60.0,
    }
    if processes > 1:
        started = time.perf_counter()
        apart = tracked_map("bench", "environments", _build_in_worker, jobs, processes=processes,
                            initializer=start_sandbox, initargs=(SandboxConfig(),))  # fmt: skip
        apart_wall = time.perf_counter() - started
        apart_built = [r for r, _ in apart if isinstance(r, BuiltEnv)]
        out.update({
            "processes": processes,
            "processes_wall_seconds": round(apart_wall, 2),
            "processes_environments_per_min": round(len(apart_built) / apart_wall * 60, 1) if apart_wall else 0.0,
            "processes_speedup": round(wall / apart_wall, 2) if apart_wall else 0.0,
            "processes_same_environments": sorted(b.env_id for b in apart_built) == sorted(b.env_id for b in built),
        })  # fmt: skip
    return out


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of the sandbox workers (a worker replaced mid-run is not counted)."""
    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except (psutil.Error, ValueError):
            continue
        total += times.user + times.system
    return total


def format_envs_bench(r: dict[str, Any]) -> str:
    lines = [f"{k:<28} {v}" for k, v in r.items()]
    verdict = "meets" if r["environments_per_min"] >= r["target_environments_per_min"] else "misses"
    lines.append(
        f"{'verdict':<28} {verdict} the target of {r['target_environments_per_min']:.0f} environments/min"
    )
    return "\n".join(lines)


def run_specs_bench(folder: str, repeats: int = 3) -> dict[str, Any]:
    """`agentomnia bench specs DIR`: every seed file in DIR ingested, its domain inferred and its
    environment built and verified, `repeats` times each; per seed the median seconds of each stage
    and what became of its operations (kept as tools of the same name, behaviour read or generic)."""
    from pathlib import Path

    from agentomnia.seeds.ingest import ingest
    from agentomnia.stages import StageContext, build_candidate, candidates_stage
    from agentomnia.storage import Storage

    files = sorted(p for p in Path(folder).iterdir() if p.suffix.lower() in (".yaml", ".yml", ".json"))
    if not files:
        raise ValueError(f"{folder} holds no .yaml/.yml/.json seed files")
    taxonomy = load_taxonomy()
    matcher = DomainMatcher(taxonomy, default_embedder())
    box = Sandbox(1, idle_timeout_s=0)
    rows: list[dict[str, Any]] = []
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="agentomnia-specs-bench-"))
    try:
        for path in files:
            timings: dict[str, list[float]] = {"ingest": [], "infer": [], "build": [], "total": []}
            row: dict[str, Any] = {"seed": path.name}
            for _ in range(max(1, repeats)):
                t0 = time.perf_counter()
                result = ingest([path])
                t1 = time.perf_counter()
                if not result.accepted:
                    row["error"] = result.rejected[0].message if result.rejected else "no seed"
                    break
                seed = result.accepted[0]
                ctx = StageContext(seed.round)
                inferred = candidates_stage(ctx, [seed], matcher)
                t2 = time.perf_counter()
                if not inferred.kept:
                    row["error"] = inferred.rejected[0].reason
                    break
                # a fresh home per repeat: a bundle already built would be reused, not built again
                store = Storage(Path(tempfile.mkdtemp(dir=home)))
                made = build_candidate(ctx, inferred.kept[0], {seed.id: seed}, taxonomy, box, store)
                t3 = time.perf_counter()
                for k, v in (("ingest", t1 - t0), ("infer", t2 - t1), ("build", t3 - t2), ("total", t3 - t0)):
                    timings[k].append(v)
                if not made.kept:
                    row["error"] = f"{made.rejected[0].stage}: {made.rejected[0].reason}"
                    break
                built = made.kept[0]
                names = {t.name: t for t in built.spec.tools}
                row.update({
                    "operations": len(seed.tools),
                    "kept": sum(1 for t in seed.tools if t.name in names),
                    "generic": sum(1 for t in seed.tools if t.name in names and not names[t.name].inferred),
                    "tools": len(built.spec.tools),
                    "verified": built.report.passed,
                    "domain": built.spec.coordinate.l2,
                    "domain_fit": built.state_space.domain_fit,
                    "repairs": len(seed.metadata.get("repairs", [])),
                })  # fmt: skip
            row.update({f"{k}_seconds": round(statistics.median(v), 3) for k, v in timings.items() if v})
            rows.append(row)
    finally:
        box.close()
    ops = sum(r.get("operations", 0) for r in rows)
    kept = sum(r.get("kept", 0) for r in rows)
    builds = [r["build_seconds"] for r in rows if "build_seconds" in r]
    totals = [r["total_seconds"] for r in rows if "total_seconds" in r]
    return {
        "seeds": rows,
        "operations": ops,
        "kept": kept,
        "kept_share": round(kept / max(1, ops), 4),
        "failed": [r["seed"] for r in rows if "error" in r],
        "median_build_seconds": round(statistics.median(builds), 3) if builds else None,
        "median_total_seconds": round(statistics.median(totals), 3) if totals else None,
        "repeats": repeats,
    }


def format_specs_bench(r: dict[str, Any]) -> str:
    head = f"{'seed':<24} {'ops':>4} {'kept':>5} {'generic':>7} {'tools':>5}  {'ingest':>7} {'infer':>6} {'build':>6} {'total':>6}  domain"
    lines = [head]
    for s in r["seeds"]:
        if "error" in s:
            lines.append(f"{s['seed']:<24} FAILED: {s['error'][:90]}")
            continue
        lines.append(
            f"{s['seed']:<24} {s['operations']:>4} {s['kept']:>5} {s['generic']:>7} {s['tools']:>5}  "
            f"{s['ingest_seconds']:>7.3f} {s['infer_seconds']:>6.2f} {s['build_seconds']:>6.2f} {s['total_seconds']:>6.2f}  "
            f"{s['domain']} (fit {s['domain_fit']})"
        )
    lines.append(
        f"operations kept as tools: {r['kept']}/{r['operations']} ({r['kept_share']:.1%}); "
        f"median build {r['median_build_seconds']} s, median ingest+infer+build {r['median_total_seconds']} s "
        f"(medians of {r['repeats']} repeats)"
    )
    return "\n".join(lines)
