"""The `agentomnia` command.

Every verb prints a readable answer, or with `--json` one JSON document on stdout, and exits
non-zero with the reason on stderr when it fails. Verbs that drive the Dagster layer (`run`,
`status`, `init`) import it lazily from the project checkout: the engine itself never imports
Dagster, and the CLI is the one entry point that sits above both.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentomnia.storage import Storage


class CLIError(RuntimeError):
    """A failure the user can act on; printed without a traceback."""


class Unmet(CLIError):
    """A check that ran and found problems: its whole answer is printed, then the exit code is 1."""

    def __init__(self, data: Any, text: str) -> None:
        super().__init__(text)
        self.data, self.text = data, text


Result = tuple[Any, str]  # (JSON-able data, human-readable text)
Handler = Callable[[argparse.Namespace], Result]


def project_root() -> Path:
    """The checkout holding workspace.yaml (the Dagster layer is imported from there)."""
    env = os.environ.get("AGENTOMNIA_PROJECT_ROOT")
    candidates = [Path(env)] if env else []
    candidates += [Path(__file__).resolve().parents[1], Path.cwd()]
    for c in candidates:
        if (c / "workspace.yaml").exists() and (c / "agentomnia_assets").is_dir():
            return c
    raise CLIError(
        "cannot find the project checkout (a folder with workspace.yaml and agentomnia_assets/); "
        "run from it or set AGENTOMNIA_PROJECT_ROOT"
    )


def _dagster_layer() -> None:
    root = str(project_root())
    if root not in sys.path:
        sys.path.insert(0, root)


# -- verbs ---------------------------------------------------------------------------------


def cmd_init(args: argparse.Namespace) -> Result:
    _dagster_layer()
    from agentomnia_assets.instance import ensure_dagster_home

    storage = Storage()
    dagster_home = ensure_dagster_home(storage.root)
    config = dagster_home / "dagster.yaml"
    monitored = "run_monitoring:" in config.read_text(encoding="utf-8")
    warmed = _warm_caches()
    data = {
        "home": str(storage.root),
        "dagster_home": str(dagster_home),
        "run_monitoring": monitored,
        "caches_s": warmed,
    }
    return (
        data,
        f"platform home {storage.root}\ndagster instance {config}"
        + (
            " (run monitoring on: runs whose process died are failed and give their pool slots back)"
            if monitored
            else ""
        )
        + f"\ncaches ready in {warmed:.1f} s (the parsed knowledge base, vocabularies and one vector per domain)",
    )


def _warm_caches() -> float:
    """Parse the knowledge base and the vocabularies' word lists and embed the 354 domains into the
    home's caches, once: the first command that places a seed on the taxonomy would otherwise pay
    ~15 s for it."""
    from agentomnia.embeddings import default_embedder
    from agentomnia.taxonomy.domains import load_taxonomy
    from agentomnia.taxonomy.search import domain_vectors
    from agentomnia.taxonomy.vocab import name_lists

    started = time.perf_counter()
    domain_vectors(load_taxonomy(require_knowledge=False), default_embedder())
    name_lists()  # the word lists every vocabulary lends (a seed's `project`, a nested `make`)
    return round(time.perf_counter() - started, 2)


def cmd_run(args: argparse.Namespace) -> Result:
    """The run executes in a child process this one supervises (`agentomnia_assets.recovery`): SIGINT
    or SIGTERM cancels it cleanly, and a child that dies has its runs marked failed and slots freed."""
    _dagster_layer()
    if args.scale != "paper" and args.environments is not None:
        raise CLIError("--environments sizes a scale run; use it with --scale paper")
    if args.scale == "paper" and args.environments is not None and args.environments < 1:
        raise CLIError(f"--environments must be at least 1 (got {args.environments})")
    from agentomnia_assets.recovery import (
        RunError,
        RunInterrupted,
        RunWorkerDied,
        raise_child_error,
        supervise,
    )

    if args.scale == "paper":
        target, kwargs = "paper", {k: getattr(args, k) for k in ("round", "environments", "workers")}
    else:
        target = "round"
        kwargs = {"round_key": args.round, "scale": args.scale, "evolve": not args.no_evolve}
    if args.quiet:
        os.environ["AGENTOMNIA_QUIET"] = "1"  # the child reads it: no stage lines, no log-file line
    try:
        data, text = supervise(
            "agentomnia_assets.pipeline:child_main", target, kwargs, project_root=project_root()
        )
    except (RunInterrupted, RunWorkerDied) as exc:
        raise CLIError(str(exc)) from exc
    except RunError as exc:
        if exc.kind == "CLIError":
            raise CLIError(str(exc)) from exc
        raise_child_error(exc)
    return data, text


def cmd_status(args: argparse.Namespace) -> Result:
    storage = Storage()
    from agentomnia.lineage import LineageStore

    counts = LineageStore(storage.lineage_path).counts()
    _dagster_layer()
    from agentomnia_assets.status import fast_asset_status

    assets = fast_asset_status(storage.root / "dagster")
    if assets is None:  # another event-log storage, or the asset list is not known yet
        from agentomnia_assets.pipeline import latest_materializations

        assets = latest_materializations(storage)
    from agentomnia.runs import render_health
    from agentomnia_assets.status import fast_run_health

    health = fast_run_health(storage.root / "dagster")
    if health is None:  # runs and slots live in another storage: ask the instance
        from dagster import DagsterInstance

        from agentomnia_assets.instance import ensure_dagster_home
        from agentomnia_assets.recovery import run_health

        ensure_dagster_home(storage.root)
        health = run_health(DagsterInstance.get())
    lines = [f"platform home {storage.root}", "", "records (kind / round / status: count)"]
    lines += [f"  {c['kind']:<22} {c['round']:<6} {c['status']:<10} {c['count']}" for c in counts] or [
        "  none yet"
    ]
    lines += ["", "assets (latest materialization)"]
    lines += [
        f"  {a['asset']:<34} {a['status']:<9} {a['partition'] or '-':<6} {a['when'] or ''}" for a in assets
    ]
    lines += render_health(health)
    data = {"home": str(storage.root), "records": counts, "assets": assets, **health}
    return data, "\n".join(lines)


def cmd_lineage_trace(args: argparse.Namespace) -> Result:
    from agentomnia.lineage import LineageStore, UnknownRecord

    store = LineageStore(Storage().lineage_path)
    try:
        trace = store.trace(args.id, "down" if args.down else "up")
    except UnknownRecord as exc:
        raise CLIError(str(exc)) from exc
    data = {
        "root": trace.root.model_dump(mode="json"),
        "direction": trace.direction,
        "records": [
            r.model_dump(mode="json") if r else {"id": i, "missing": True} for i, r in trace.rows.items()
        ],
        "edges": [e.model_dump() for e in trace.edges],
    }
    return data, trace.render()


def _seed_summary(result: Any) -> Result:
    data = {
        "accepted": [
            {"id": s.id, "kind": s.kind, "name": s.name, "source": s.source, "tools": len(s.tools)}
            for s in result.accepted
        ],
        "rejected": [
            {"source": r.subject, "place": r.place, "reason": r.reason, "fix": r.fix} for r in result.rejected
        ],
    }
    lines = [f"accepted {len(result.accepted)}, rejected {len(result.rejected)}"]
    lines += [
        f"  + {s.kind:<5} {s.id}  {s.name} ({len(s.tools)} tools)  <- {s.source}" for s in result.accepted
    ]
    lines += [f"  - {r.message}" for r in result.rejected]
    return data, "\n".join(lines)


def cmd_seeds_ingest(args: argparse.Namespace) -> Result:
    import shutil

    from agentomnia.seeds.ingest import ingest

    columns = {"query": args.query_column, "id": args.id_column}
    result = ingest(
        [Path(p) for p in args.paths], query_columns=columns, max_bytes=int(args.max_mb * 1024 * 1024)
    )
    if args.add:
        inbox = Storage().root / "seeds"
        for p in {Path(s.source.split("#")[0]) for s in result.accepted}:
            if p.exists():
                target = inbox / (p.parent.name if p.name.upper() == "SKILL.MD" else "") / p.name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copytree(p, target, dirs_exist_ok=True) if p.is_dir() else shutil.copy2(p, target)
    data, text = _seed_summary(result)
    return data, text + (f"\nadded to {Storage().root / 'seeds'}" if args.add else "")


def cmd_seeds_from_mcp(args: argparse.Namespace) -> Result:
    from agentomnia.seeds.ingest import ingest
    from agentomnia.seeds.mcp_live import tools_list_from_server
    from agentomnia.seeds.parsers import SeedInputError

    command = [c for c in args.command if c != "--"]
    if not command:
        raise CLIError(
            "give the server command after --, e.g. agentomnia seeds from-mcp -- python my_server.py"
        )
    try:
        listing = tools_list_from_server(command[0], command[1:], timeout_s=args.timeout)
    except SeedInputError as exc:
        raise CLIError(f"{exc.reason}; {exc.fix}") from exc
    name = args.name or "".join(
        ch if ch.isalnum() or ch in "-_" else "-" for ch in str(listing["server"]["name"])
    )
    out = Path(args.out) if args.out else Storage().root / "seeds" / "mcp" / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(listing, indent=2, ensure_ascii=False), encoding="utf-8")
    data, text = _seed_summary(ingest([out]))
    if data["rejected"]:
        raise CLIError(f"saved {out}, but it is not a usable seed: {data['rejected'][0]['reason']}")
    data["saved"] = str(out)
    return data, f"saved {out}\n{text}"


def _sandbox() -> Any:
    from agentomnia.sandbox.sandbox import Sandbox

    return Sandbox(workers=1, idle_timeout_s=0)


def cmd_env_build(args: argparse.Namespace) -> Result:
    import time

    from agentomnia.embeddings import default_embedder
    from agentomnia.envs.build import write_bundle
    from agentomnia.seeds.inference import DomainMatcher
    from agentomnia.seeds.ingest import ingest
    from agentomnia.stages import StageContext, build_candidate, candidates_stage
    from agentomnia.taxonomy import load_taxonomy

    clock = {"start": time.perf_counter()}
    result = ingest([Path(args.seed)])
    clock["ingest"] = time.perf_counter()
    if not result.accepted:
        reason = result.rejected[0].message if result.rejected else "no seed found"
        raise CLIError(f"{args.seed} is not a usable seed: {reason}")
    seed = result.accepted[0]
    taxonomy = load_taxonomy()
    ctx = StageContext(seed.round)
    model = _configured_llm()  # None offline; in llm mode every stage asks the configured model
    if args.domain:
        from agentomnia.seeds.inference import propose_offline, seed_text, words

        domain = taxonomy.by_id(args.domain)
        candidates = [propose_offline(seed, domain, 1.0, 0.0, [1.0])]
        del seed_text, words
    else:
        inferred = candidates_stage(ctx, [seed], DomainMatcher(taxonomy, default_embedder()), model)
        if not inferred.kept:
            raise CLIError(f"environment inference failed: {inferred.rejected[0].reason}")
        candidates = inferred.kept
    candidate = candidates[0]
    clock["infer"] = time.perf_counter()
    box = _sandbox()
    try:
        made = build_candidate(ctx, candidate, {seed.id: seed}, taxonomy, box, Storage(), llm=model)
    finally:
        box.close()
    if not made.kept:
        refused = made.rejected[0]
        raise CLIError(f"environment not built ({refused.stage}): {refused.reason}")
    built = made.kept[0]
    folder = write_bundle(built, Path(args.out))
    clock["build"] = time.perf_counter()
    spec = built.spec
    operations = seed_operations(seed, built)
    data: dict[str, Any] = {
        "env_id": built.env_id,
        "path": str(folder),
        "domain": spec.coordinate.l1 + " > " + spec.coordinate.l2,
        "entities": len(spec.entities),
        "attributes": spec.attribute_count,
        "tools": [t.name for t in spec.tools],
        "verified": built.report.passed,
        "levels": {
            "init": built.report.init.passed,
            "tool": built.report.tool.passed,
            "env": built.report.env.passed,
        },
        "contract": built.report.contract.passed if built.report.contract is not None else False,
        "dropped_tools": [d.model_dump() for d in built.dropped_tools],
        "seed_tools_kept": sum(1 for o in operations if o["status"] == "kept"),
        "seed_tools": len(seed.tools),
        "seed_operations": operations,
        "repairs": seed.metadata.get("repairs", []),
        "domain_fit": built.state_space.domain_fit,
        "kb_used": built.state_space.kb_used,
        "seconds": {
            "ingest": round(clock["ingest"] - clock["start"], 3),
            "infer": round(clock["infer"] - clock["ingest"], 3),
            "build": round(clock["build"] - clock["infer"], 3),
            "total": round(clock["build"] - clock["start"], 3),
        },
    }
    text = (
        f"built {built.env_id} in {folder} ({data['domain']})\n"
        f"  {data['entities']} entities, {data['attributes']} attributes, {len(spec.tools)} tools "
        f"({data['seed_tools_kept']}/{data['seed_tools']} of the seed's), verified: {data['levels']}\n"
        + "".join(f"  dropped {d['name']}: {d['reason']}\n" for d in data["dropped_tools"])
    )
    return data, text.rstrip()


def seed_operations(seed: Any, built: Any) -> list[dict[str, Any]]:
    """Each of the seed's operations and what became of it: kept as the tool of the same name (with
    the behaviour it was given), or dropped with the reason."""
    tools = {t.name: t for t in built.spec.tools}
    dropped = {d.name: d.reason for d in built.dropped_tools}
    notes = {n.candidate: n for n in built.normalization if n.origin == "seed"}
    out = []
    for op in seed.tools:
        tool = tools.get(op.name)
        if tool is not None:
            out.append({"name": op.name, "status": "kept", "op": tool.op, "entity": tool.entity,
                        "inferred": tool.inferred, "note": notes[op.name].reason if op.name in notes else ""})  # fmt: skip
        else:
            why = dropped.get(op.name) or (notes[op.name].reason if op.name in notes else "not offered")
            out.append({"name": op.name, "status": "dropped", "reason": why})
    return out


def _state_diff(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    diff = []
    for table in sorted(set(before) | set(after)):
        b, a = before.get(table), after.get(table)
        if not isinstance(b, dict) or not isinstance(a, dict):
            if b != a:
                diff.append({"path": table, "before": b, "after": a})
            continue
        for key in sorted(set(b) | set(a)):
            if b.get(key) == a.get(key):
                continue
            if key not in b or key not in a or not isinstance(a[key], dict) or not isinstance(b[key], dict):
                diff.append({"path": f"{table}.{key}", "before": b.get(key), "after": a.get(key)})
                continue
            for field in sorted(set(b[key]) | set(a[key])):
                if b[key].get(field) != a[key].get(field):
                    diff.append(
                        {
                            "path": f"{table}.{key}.{field}",
                            "before": b[key].get(field),
                            "after": a[key].get(field),
                        }
                    )
    return diff


def cmd_env_call(args: argparse.Namespace) -> Result:
    from agentomnia.sandbox.bundle import Bundle

    bundle = Bundle.load(Path(args.dir))
    try:
        call_args = json.loads(args.args)
    except json.JSONDecodeError as exc:
        raise CLIError(
            f'--args is not JSON ({exc.msg} at char {exc.pos}); quote it, e.g. --args \'{{"id": "X-1"}}\''
        ) from exc
    state = json.loads(Path(args.state).read_text()) if args.state else None
    box = _sandbox()
    try:
        session = box.open(bundle, state)
        before = session.state()
        result = session.call(args.tool, call_args)
        after = session.state()
        if args.save_state:
            Path(args.save_state).write_text(json.dumps(after, ensure_ascii=False, sort_keys=True))
    finally:
        box.close()
    diff = _state_diff(before, after)
    data = {"result": result.model_dump(mode="json"), "diff": diff}
    lines = [json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False)[:4000], ""]
    lines += [f"  {d['path']}: {d['before']!r} -> {d['after']!r}" for d in diff] or ["  (state unchanged)"]
    return data, "\n".join(lines)


def cmd_env_check(args: argparse.Namespace) -> Result:
    from agentomnia.envs.spec import EnvSpec
    from agentomnia.envs.verify import verify
    from agentomnia.sandbox.bundle import Bundle

    folder = Path(args.dir)
    bundle = Bundle.load(folder)
    spec_path = folder / "spec.json"
    if not spec_path.exists():
        raise CLIError(f"{folder} has no spec.json: only bundles this platform built can be re-verified")
    spec = EnvSpec.model_validate_json(spec_path.read_text())
    box = _sandbox()
    try:
        report, _ = verify(box, bundle, spec, bundle.s0)
    finally:
        box.close()
    data: dict[str, Any] = {
        "verified": report.passed,
        "levels": {"init": report.init.passed, "tool": report.tool.passed, "env": report.env.passed},
        "contract": report.contract.model_dump() if report.contract is not None else None,
        "checks": report.init.checks + report.tool.checks + report.env.checks,
        "failures": report.init.failures
        + report.tool.failures
        + report.env.failures
        + (
            [f"contract: {p}" for p in report.contract.problems]
            if report.contract is not None
            else ["contract: not run"]
        ),
    }
    if not report.passed:
        raise CLIError(f"{folder} fails verification: " + "; ".join(data["failures"][:5]))
    return data, f"{folder}: verified ({data['checks']} checks, levels {data['levels']})"


def cmd_taxonomy_show(args: argparse.Namespace) -> Result:
    from agentomnia.taxonomy import load_taxonomy, show_rows

    taxonomy = load_taxonomy()
    rows = show_rows(taxonomy, split=args.split, l1=args.l1)
    if not rows:
        raise CLIError(
            f"no level-2 domains for split={args.split!r} l1={args.l1!r}; see `agentomnia taxonomy show` for names"
        )
    lines = [
        f"{r['id']}  {r['split']}  {r['l1']} > {r['l2']}  ({r['entities']} entities, {r.get('attributes', '?')} attributes)"
        for r in rows
    ]
    return rows, "\n".join(lines)


def cmd_taxonomy_find(args: argparse.Namespace) -> Result:
    from agentomnia.taxonomy.search import find_rows

    rows = find_rows(args.text, k=args.k, split=args.split)
    return rows, "\n".join(
        f"{r['rank']}. {r['id']}  {r['split']}  {r['l1']} > {r['l2']}  ({r['score']:.3f})" for r in rows
    )


def cmd_taxonomy_vectors(args: argparse.Namespace) -> Result:
    from agentomnia.taxonomy.search import shipped_vectors

    data = shipped_vectors(write=args.write)
    text = f"{data['file']}: {data['covered']} of {data['domains']} domain texts"
    if data["not_covered"]:
        shown = ", ".join(str(i) for i in data["not_covered"][:8])
        more = len(data["not_covered"]) - 8
        text += (
            f"; not covered: {shown}{f' and {more} more' if more > 0 else ''} (their knowledge changed: "
            "run `agentomnia taxonomy vectors --write` and commit the file)"
        )
    return data, text


def cmd_bench_sandbox(args: argparse.Namespace) -> Result:
    from agentomnia.sandbox.bench import format_table, run_bench

    result = run_bench(calls=args.calls, sessions=args.sessions, workers=args.workers)
    return result, format_table(result)


def cmd_bench_sessions(args: argparse.Namespace) -> Result:
    from agentomnia.sandbox.bench import format_sessions, run_sessions_bench

    if args.n < 1 or args.calls < 1:
        raise CLIError("--n and --calls must be at least 1")
    result = run_sessions_bench(
        n=args.n, calls_per_session=args.calls, workers=args.workers, threads=args.threads
    )
    return result, format_sessions(result)


def cmd_bench_envs(args: argparse.Namespace) -> Result:
    from agentomnia.envs.bench import format_envs_bench, run_envs_bench

    result = run_envs_bench(limit=args.n, workers=args.workers, processes=args.processes)
    return result, format_envs_bench(result)


def cmd_bench_tasks(args: argparse.Namespace) -> Result:
    from agentomnia.tasks.dag.bench import bench_dag_tasks, environment_folders, format_dag_bench

    try:
        folders = environment_folders(args.folder or Storage().root / "envs", args.n)
    except ValueError as exc:
        raise CLIError(str(exc)) from exc
    if args.standard < 0 or args.challenge < 0 or args.standard + args.challenge == 0:
        raise CLIError("ask for at least one task per environment (--standard, --challenge)")
    result = bench_dag_tasks(
        folders, per_env_standard=args.standard, per_env_challenge=args.challenge, workers=args.workers,
        seed=args.seed, verify=not args.no_verify,
    )  # fmt: skip
    return result, format_dag_bench(result)


def cmd_bench_rewards(args: argparse.Namespace) -> Result:
    from agentomnia.rewards.bench import bench_rewards, format_rewards_bench, load_rl_rows

    try:
        rows = load_rl_rows(args.dataset or Storage().root / "datasets" / "rl")
        result = bench_rewards(
            rows[: args.n] if args.n else rows, group=args.group, repeats=args.repeats,
            generation_ms=args.generation_ms, reward_workers=args.workers,
        )  # fmt: skip
    except (ValueError, OSError) as exc:
        raise CLIError(str(exc)) from exc
    return result, format_rewards_bench(result)


def cmd_bench_sft(args: argparse.Namespace) -> Result:
    _dagster_layer()  # the trainers live in the checkout beside the Dagster layer
    from trainers.bench import bench_sft, format_sft_bench

    folder = Path(args.dataset) if args.dataset else None
    if folder is None:
        made = sorted((Storage().root / "datasets" / "sft").glob("r*/hf"), key=lambda p: p.stat().st_mtime)
        if not made:
            raise CLIError(
                "no SFT dataset in the platform home yet; run `agentomnia run` or pass a dataset folder"
            )
        folder = made[-1]
    try:
        result = bench_sft(folder, steps=args.steps, repeats=args.repeats, rows=args.n)
    except (ValueError, OSError) as exc:
        raise CLIError(str(exc)) from exc
    return result, format_sft_bench(result)


def cmd_bench_specs(args: argparse.Namespace) -> Result:
    from agentomnia.envs.bench import format_specs_bench, run_specs_bench

    try:
        result = run_specs_bench(args.folder, repeats=args.repeats)
    except (ValueError, OSError) as exc:
        raise CLIError(str(exc)) from exc
    return result, format_specs_bench(result)


def _run_paper_scale(args: argparse.Namespace) -> Result:
    """`run --scale paper`: the `scale_corpus` asset for the round (default `paper`), through Dagster."""
    from agentomnia.scale.runner import ScaleSummary, scale_dir
    from agentomnia_assets.pipeline import run_scale_corpus

    round_key = "paper" if args.round == "r0" else args.round
    if args.environments is not None and args.environments < 1:
        raise CLIError(f"--environments must be at least 1 (got {args.environments})")
    run_scale_corpus(round_key, environments=args.environments, workers=args.workers)
    summary = ScaleSummary.model_validate_json(
        (scale_dir(Storage(), round_key) / "summary.json").read_text(encoding="utf-8")
    )
    return summary.model_dump(mode="json"), summary.render()


def cmd_bench_scale(args: argparse.Namespace) -> Result:
    """Throughput of a scale run of N environments, in a fresh home unless --home names one."""
    import tempfile

    from agentomnia.scale.plan import ScalePlan
    from agentomnia.scale.runner import run_scale

    if args.envs < 1:
        raise CLIError(f"--envs must be at least 1 (got {args.envs})")
    plan = ScalePlan.for_environments(args.envs, shard_environments=args.shard_environments)
    say = None if args.json else (lambda line: print(line, file=sys.stderr, flush=True))
    if args.home:
        summary = run_scale(
            plan, storage=Storage(args.home), round_key="bench", workers=args.workers, progress=say
        )
    else:
        with tempfile.TemporaryDirectory(prefix="agentomnia-bench-scale-") as home:
            summary = run_scale(
                plan, storage=Storage(home), round_key="bench", workers=args.workers, progress=say
            )
    return summary.bench(), summary.render()


def cmd_bench_lineage(args: argparse.Namespace) -> Result:
    from agentomnia.lineage.bench import bench_lineage

    try:
        result = bench_lineage(args.records, repeats=args.repeats)
    except ValueError as exc:
        raise CLIError(str(exc)) from exc
    return result.model_dump(mode="json"), result.render()


def cmd_tasks_synth(args: argparse.Namespace) -> Result:
    from agentomnia.tasks.families import requested_kind
    from agentomnia.tasks.folder import write_tasks

    try:
        family, kind = requested_kind(args.kind)
    except KeyError as exc:
        raise CLIError(
            f"unknown task kind {args.kind!r}; use dag-standard, dag-challenge, program or solver"
        ) from exc
    if family.needs_env and not args.env:
        raise CLIError(
            f"--kind {args.kind} needs --env BUNDLE_DIR (an environment built by `agentomnia env build` or a run)"
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    box = _sandbox()
    try:
        made = family.synthesize(
            box, kind=kind, n=args.n, seed=args.seed, env=Path(args.env) if args.env else None, out=out,
            llm=_configured_llm(),
        )  # fmt: skip
    finally:
        box.close()
    tasks, rejected = made.tasks, made.rejected
    write_tasks(out, tasks, made.env_dirs)
    data = {
        "requested": args.n,
        "kept": len(tasks),
        "rejected": [{"stage": r.stage, "reason": r.reason} for r in rejected],
        "out": str(out),
    }
    lines = [f"kept {len(tasks)} of {args.n} requested -> {out}"]
    lines += [f"  {t.id}  {t.kind}  {len(t.reference_calls)} calls: {t.query[:100]}" for t in tasks]
    lines += [f"  rejected ({r.stage}): {r.reason[:120]}" for r in rejected[:10]]
    return data, "\n".join(lines)


def cmd_tasks_check(args: argparse.Namespace) -> Result:
    from agentomnia.sandbox.bundle import Bundle
    from agentomnia.tasks.families import family_of
    from agentomnia.tasks.folder import MANIFEST_NAME, env_search_paths, locate_env, task_files
    from agentomnia.tasks.models import Task

    folder = Path(args.dir)
    files = task_files(folder)
    if not files:
        raise CLIError(f"{folder} holds no task files (*.json)")
    envs = Path(args.envs) if args.envs else None
    box = _sandbox()
    failures: list[dict[str, Any]] = []
    oracle = empty = 0
    try:
        for f in files:
            try:
                task = Task.model_validate_json(f.read_text())
            except ValueError as exc:
                failures.append({"file": f.name, "problem": f"not a task: {str(exc)[:200]}"})
                continue
            env_dir = locate_env(folder, task.env_id, envs)
            if env_dir is None:
                where = ", ".join(str(p) for p in env_search_paths(folder, envs))
                failures.append(
                    {
                        "file": f.name,
                        "problem": f"environment {task.env_id} not found in {folder / MANIFEST_NAME} "
                        f"nor under {where}; pass --envs",
                    }
                )
                continue
            report = family_of(task).validate(task, box, Bundle.load(env_dir))
            oracle += report.reference_passes
            empty += report.empty_fails
            if not report.passed:
                failures.append({"file": f.name, "task": task.id, "problem": report.reason[:300]})
    finally:
        box.close()
    data = {"tasks": len(files), "oracle_pass": oracle, "empty_fail": empty, "failures": failures}
    if failures:
        raise CLIError(
            f"{len(failures)} of {len(files)} tasks fail their checks: "
            + "; ".join(f"{x['file']}: {x['problem']}" for x in failures[:3])
        )
    return data, f"{len(files)} tasks: oracle passes {oracle}, empty run fails {empty}"


def cmd_llm_check(args: argparse.Namespace) -> Result:
    from agentomnia import config
    from agentomnia.llm.check import check_endpoint

    settings = config.LLMSettings.from_env()
    update = {k: v for k, v in {"base_url": args.base_url, "model": args.model}.items() if v}
    settings = settings.model_copy(update={**update, "timeout_s": args.timeout})
    report = check_endpoint(settings, samples=args.samples)
    data, text = report.model_dump(mode="json"), report.render()
    if not report.ok:
        raise Unmet(data, text)
    return data, text


def cmd_llm_usage(args: argparse.Namespace) -> Result:
    from agentomnia.llm.ledger import round_usage, usage_rows

    storage = Storage()
    rounds = (
        [args.round]
        if args.round
        else sorted({p.parent.name for p in storage.artifacts_root.glob("*/*/llm.json")})
    )
    data: dict[str, Any] = {"home": str(storage.root), "rounds": {}}
    lines: list[str] = []
    for key in rounds:
        rows = usage_rows(round_usage(storage.artifacts_root, key))
        data["rounds"][key] = rows
        lines.append(f"round {key}: " + ("no stage asked a model" if not rows else f"{len(rows)} stages"))
        lines += [
            f"  {r['stage']:<28} {r['calls']:>5} calls ({r['requests']} sent, {r['cache_hits']} cached), "
            f"{r['prompt_tokens'] + r['completion_tokens']} tokens, valid {_rate(r['valid_rate'])}, "
            f"kept {_rate(r['accepted_rate'])}, fallbacks {r['fallbacks']}"
            for r in rows
        ]
    if not rounds:
        lines.append(
            f"no stage under {storage.root} has asked a model (llm mode writes artifacts/<stage>/<round>/llm.json)"
        )
    return data, "\n".join(lines)


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


# -- parser --------------------------------------------------------------------------------


def _configured_llm() -> Any:
    from agentomnia import config
    from agentomnia.llm import make_llm

    storage = Storage()
    return make_llm(config.mode(), config.LLMSettings.from_env(), storage.llm_cache_path)


def _report_text(title: str, report: Any) -> str:
    return f"{title}\n\n{report.render()}"


def cmd_omniabench_run(args: argparse.Namespace) -> Result:
    from agentomnia.lineage import LineageStore
    from agentomnia.omniabench.decoders import DecoderPool, decoder_count
    from agentomnia.omniabench.service import NoBenchmark, run_evaluation
    from agentomnia.sandbox.sandbox import Sandbox

    options = None
    if args.max_new_tokens is not None:
        if not args.policy.startswith("hf:"):
            raise CLIError(f"--max-new-tokens applies to hf: policies only, not {args.policy!r}")
        if args.max_new_tokens < 1:
            raise CLIError(f"--max-new-tokens must be at least 1, not {args.max_new_tokens}")
        options = {"max_new_tokens": args.max_new_tokens}
    if args.decoders is not None and not args.policy.startswith("hf:"):
        raise CLIError(f"--decoders applies to hf: policies only, not {args.policy!r}")
    if args.decoders is not None and args.decoders < 0:
        raise CLIError(f"--decoders must be 0 (decode in this process) or more, not {args.decoders}")
    storage = Storage()
    box = Sandbox(workers=max(1, args.workers), idle_timeout_s=0)
    processes = (
        (decoder_count() if args.decoders is None else args.decoders) if args.policy.startswith("hf:") else 0
    )
    try:
        with contextlib.ExitStack() as stack:
            pool = stack.enter_context(DecoderPool(processes)) if processes else None
            outcome = run_evaluation(
                storage, box, LineageStore(storage.lineage_path), policy=args.policy, round_key=args.round,
                trials=args.trials, max_steps=args.max_steps, llm=_configured_llm(), limit=args.limit,
                source="imported" if args.imported else "benchmark", policy_options=options, decoders=pool,
            )  # fmt: skip
    except NoBenchmark as exc:
        raise CLIError(str(exc)) from exc
    except ValueError as exc:  # an unknown policy spec or a bad checkpoint folder
        raise CLIError(str(exc)) from exc
    finally:
        box.close()
    data = {
        "eval_id": outcome.eval_id, "policy": outcome.policy, "round": outcome.round, "tasks": outcome.tasks,
        "trials": outcome.trials, "failures": outcome.failures, "new_failures": outcome.new_failures,
        "infra_errors": outcome.infra_errors, "seconds": round(outcome.seconds, 2), "results": str(outcome.path),
        "report": outcome.report.model_dump(mode="json"),
    }  # fmt: skip
    head = (
        f"{outcome.policy} on OmniaBench, round {outcome.round}: {outcome.tasks} tasks x {outcome.trials} trials, "
        f"{outcome.failures} failed trials ({outcome.new_failures} new in the failure table), "
        f"{outcome.infra_errors} infrastructure errors, {outcome.seconds:.1f}s"
    )
    return data, _report_text(head, outcome.report)


def cmd_omniabench_report(args: argparse.Namespace) -> Result:
    from agentomnia.omniabench.metrics import report
    from agentomnia.omniabench.service import load_results

    found = load_results(Storage(), args.round, args.policy)
    if not found:
        raise CLIError(
            f"no OmniaBench results for round {args.round}"
            + (f" and policy {args.policy}" if args.policy else "")
            + "; run `agentomnia omniabench run --policy P --round R` first"
        )
    data, texts = {}, []
    for policy, results in sorted(found.items()):
        trials = max(r.trial for r in results) + 1
        rep = report(results, k=trials)
        data[policy] = rep.model_dump(mode="json")
        texts.append(_report_text(f"{policy}, round {args.round} ({trials} trials per task)", rep))
    return {"round": args.round, "policies": data}, "\n\n".join(texts)


def cmd_evolution_status(args: argparse.Namespace) -> Result:
    from agentomnia.catalog import EVALUATIONS, PRDS, RAW_SEEDS, Catalog
    from agentomnia.omniabench.learning import FIGURE_LABELS, FIGURES
    from agentomnia.omniabench.store import FailureStore

    storage = Storage()
    catalog = Catalog(storage)
    rounds = sorted(
        {r for a in (RAW_SEEDS, PRDS, EVALUATIONS) for r in catalog.rounds_with(a) if r.startswith("r")},
        key=lambda r: int(r[1:]) if r[1:].isdigit() else 10**9,
    )
    evaluations: dict[str, list[Any]] = {}
    if storage.lineage_path.exists():
        for e in FailureStore(storage.lineage_path).evaluations():
            evaluations.setdefault(e.round, []).append(e)
    out = []
    lines = [f"self-evolution in {storage.root}", ""]
    for r in rounds:
        prds = catalog.round(r).prds()
        align = catalog.round(r).alignment() or {}
        # the mean score (the share of a task's checks met, averaged) moves before pass@1 does: a
        # policy that meets some checks of every item still passes none of them
        scores: dict[str, Any] = {}
        for path in catalog.round(r).evaluation_files():
            try:
                report = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            scores[str(report.get("eval_id"))] = (report.get("overall") or {}).get("mean_score")
        evals = [
            {"eval_id": e.eval_id, "policy": e.policy, "status": e.status, "pass_at_1": e.pass_at_1,
             "mean_score": scores.get(e.eval_id)}
            for e in evaluations.get(r, [])
        ]  # fmt: skip
        prd_rows = [
            {"id": p.prd_id, "priority": p.priority, "status": p.status, "source": p.source, "title": p.title}
            for p in sorted(prds, key=lambda p: (p.priority, p.prd_id))
        ]
        learning = catalog.round(r).learning() or {}
        figures = [
            {k: row.get(k) for k in ("policy", "checkpoint", *FIGURES, "probes")}
            for row in learning.get("rows", []) if row.get("route") == "all"
        ]  # fmt: skip
        entry: dict[str, Any] = {
            "round": r,
            "parent_round": align.get("parent_round"),
            "prds": prd_rows,
            "kl_round": align.get("kl_round"),
            "kl_previous": align.get("kl_previous"),
            "evaluations": evals,
            "learning": figures,
        }  # fmt: skip
        out.append(entry)
        kl = (
            f"KL(round||failures) {entry['kl_round']:.3f} vs KL(previous||failures) {entry['kl_previous']:.3f}"
            if isinstance(entry["kl_round"], float) and isinstance(entry["kl_previous"], float)
            else "KL n/a"
        )
        lines.append(f"{r}  parent {entry['parent_round'] or '-'}  {len(prds)} PRDs  {kl}")
        for p in prd_rows:
            lines.append(
                f"    {p['priority']}  {p['id']:<14} {p['status']:<9} {p['source']:<24} {p['title'][:60]}"
            )
        for ev in evals:
            p1 = f"{ev['pass_at_1']:.3f}" if ev["pass_at_1"] is not None else "n/a"
            mean = f"{ev['mean_score']:.3f}" if isinstance(ev["mean_score"], float) else "n/a"
            lines.append(
                f"    eval {ev['eval_id']}  {ev['policy']:<24} {ev['status']:<9} pass@1 {p1}  mean score {mean}"
            )
        for fig in figures:
            shares = "  ".join(
                f"{name} {fig[key]:.3f}" if isinstance(fig[key], float) else f"{name} n/a"
                for key, name in FIGURE_LABELS.items()
            )
            lines.append(f"    learning {fig['policy']:<6} {shares}  ({fig['probes']} reference steps)")
    if not rounds:
        lines.append("no rounds yet; `agentomnia run` makes the first")
    return {"home": str(storage.root), "rounds": out}, "\n".join(lines)


def cmd_export_omniabench(args: argparse.Namespace) -> Result:
    from agentomnia.interop import export_omniabench

    summary = export_omniabench(args.round, Path(args.out), verify=not args.no_verify)
    lines = [
        f"exported round {args.round} to {summary.out_dir}: {summary.environments} environments, "
        f"{summary.tasks} tasks ({', '.join(f'{k} {v}' for k, v in sorted(summary.by_route.items()))})",
        f"  check functions {summary.checklist_functions} (derived {summary.derived_checks}), "
        f"answer verifiers {summary.answer_verifiers}, judge-only items {summary.judge_only_items}",
    ]
    lines += [f"  skipped {s.task_id}: {s.reason}" for s in summary.skipped]
    return summary.model_dump(mode="json"), "\n".join(lines)


def cmd_import_omniabench(args: argparse.Namespace) -> Result:
    from agentomnia.interop import import_omniabench

    summary = import_omniabench(
        args.files, round_key=args.round, domain_map=args.domain_map, taxonomy_id=args.taxonomy_id,
        route=args.route, verify=not args.no_verify,
    )  # fmt: skip
    lines = [
        f"imported {summary.tasks} tasks on {summary.environments} environments from {len(summary.files)} files "
        f"into round {args.round}; {len(summary.rejected)} rejected",
        f"  evaluate them with: agentomnia omniabench run --policy P --round {args.round} --imported",
    ]
    lines += [f"  rejected {r.subject} {r.place} ({r.stage}): {r.reason}" for r in summary.rejected[:30]]
    if summary.unknown_fields:
        lines.append(
            "  kept unknown fields: " + ", ".join(f"{k} x{v}" for k, v in summary.unknown_fields.items())
        )
    return summary.model_dump(mode="json"), "\n".join(lines)


def cmd_export_mcp(args: argparse.Namespace) -> Result:
    from agentomnia.interop import serve_environment

    folder = Path(args.dir)
    if not (folder / "env.py").exists() or not (folder / "tools.json").exists():
        raise CLIError(f"{folder} is not an environment bundle (it needs env.py and tools.json)")
    serve_environment(folder)  # serves on stdio until the client disconnects
    return {"served": str(folder)}, ""


def cmd_report(args: argparse.Namespace) -> Result:
    from agentomnia.reporting import write_report

    try:
        summary = write_report(args.round, Path(args.out))
    except (ValueError, FileNotFoundError) as exc:
        raise CLIError(str(exc)) from exc
    if not set(summary.sections) - {"benchmark", "overview"}:  # the benchmark split is not per round
        raise CLIError(
            f"round {args.round} has nothing materialized; see `agentomnia status` for the rounds there are"
        )
    lines = [
        f"report for round {args.round}: {summary.path} ({summary.bytes:,} bytes, {summary.images} plots)"
    ]
    lines += [f"  not shown: {m.section} / {m.item}: {m.reason}" for m in summary.missing]
    return summary.model_dump(mode="json"), "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentomnia", description=__doc__.splitlines()[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    verbs = parser.add_subparsers(dest="verb", required=True)

    def verb(sub: Any, name: str, handler: Handler, help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, parents=[common], description=help_)
        p.set_defaults(handler=handler)
        return p

    verb(verbs, "init", cmd_init, "create the platform home and its Dagster instance configuration")
    p = verb(
        verbs, "run", cmd_run, "materialize the whole default pipeline for one round and print a summary"
    )
    p.add_argument("--round", default="r0", help="round partition to materialize (default r0)")
    p.add_argument(
        "--scale",
        default="default",
        choices=["default", "full", "paper"],
        help=(
            "how much to make (default: minutes on 2 cores; full: every stage at target size on the shipped "
            "corpus; paper: the paper-size synthesis corpus, sharded and resumable, as round `paper`)"
        ),
    )
    p.add_argument(
        "--environments", type=int, default=None,
        help="with --scale paper: environments to make instead of the paper's 5,018 (tasks in proportion)",
    )  # fmt: skip
    p.add_argument("--workers", type=int, default=2, help="with --scale paper: worker processes")
    p.add_argument(
        "--no-evolve",
        action="store_true",
        help="stop after the round; by default one failure-sensor tick follows and runs the PRD-guided round it asks for",
    )
    p.add_argument("--quiet", action="store_true", help="print only the final summary (no stage progress)")
    verb(verbs, "status", cmd_status, "records by kind and round, and each asset's latest materialization")

    lineage = verbs.add_parser("lineage", help="row-level lineage").add_subparsers(
        dest="lineage_verb", required=True
    )
    p = verb(
        lineage, "trace", cmd_lineage_trace, "a record's ancestors (or descendants with --down) as a tree"
    )
    p.add_argument("id", help="record id (content hash)")
    p.add_argument("--down", action="store_true", help="show descendants instead of ancestors")
    seeds = verbs.add_parser("seeds", help="seed files").add_subparsers(dest="seeds_verb", required=True)
    p = verb(
        seeds,
        "ingest",
        cmd_seeds_ingest,
        "parse seed files and folders; print accepted and rejected with reasons",
    )
    p.add_argument("paths", nargs="+", help="files or folders (walked recursively)")
    p.add_argument(
        "--query-column", default="query", help="column holding the query text (JSONL/CSV/Parquet/HF)"
    )
    p.add_argument("--id-column", default="id", help="column holding a query id")
    p.add_argument("--max-mb", type=float, default=10.0, help="size limit per file")
    p.add_argument(
        "--add", action="store_true", help="copy accepted inputs into $AGENTOMNIA_HOME/seeds for the next run"
    )
    p = verb(
        seeds,
        "from-mcp",
        cmd_seeds_from_mcp,
        "launch an MCP server over stdio, save its tools/list as a seed",
    )
    p.add_argument("--out", help="where to save (default $AGENTOMNIA_HOME/seeds/mcp/<server>.json)")
    p.add_argument("--name", help="file name stem (default: the server's name)")
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    tax = verbs.add_parser(
        "taxonomy", help="the Domain x Capability x Atomic Difficulty taxonomy"
    ).add_subparsers(dest="taxonomy_verb", required=True)
    p = verb(tax, "show", cmd_taxonomy_show, "level-2 domains with their knowledge-base sizes")
    p.add_argument("--split", choices=["toc", "tob", "toe"])
    p.add_argument("--l1", help="a level-1 domain name, e.g. Logistics")
    p = verb(tax, "find", cmd_taxonomy_find, "nearest level-2 domains to free text (by embedding)")
    p.add_argument("text")
    p.add_argument("-k", type=int, default=3)
    p.add_argument("--split", choices=["toc", "tob", "toe"])
    p = verb(
        tax, "vectors", cmd_taxonomy_vectors,
        "the domain vectors the package ships (a new home embeds none of the 354 domains itself)",
    )  # fmt: skip
    p.add_argument(
        "--write", action="store_true", help="embed every domain text again and ship those vectors"
    )

    bench = verbs.add_parser(
        "bench", help="benchmarks (medians and ratios, measured side by side)"
    ).add_subparsers(dest="bench_verb", required=True)
    p = verb(
        bench,
        "sandbox",
        cmd_bench_sandbox,
        "sandbox calls/s, reset and open latency, memory; isolation overhead vs in-process",
    )
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--sessions", type=int, default=8)
    p.add_argument("--workers", type=int, default=2)
    p = verb(
        bench, "sessions", cmd_bench_sessions,
        "N sessions open at once: open and call latency (p50/p99), calls/s and memory per session",
    )  # fmt: skip
    p.add_argument("--n", type=int, default=1024, help="sessions open at the same time")
    p.add_argument("--calls", type=int, default=20, help="calls each session makes")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=32, help="client threads driving the sessions")
    p = verb(
        bench, "envs", cmd_bench_envs, "environments built and verified per minute on the shipped corpus"
    )
    p.add_argument("-n", type=int, default=40, help="how many selected candidates to build")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument(
        "--processes", type=int, default=0, metavar="N",
        help="also build the same candidates on N worker processes (as the environments asset does offline) "
        "and report them beside the threads, with the ratio",
    )  # fmt: skip
    p = verb(
        bench, "tasks", cmd_bench_tasks,
        "DAG tasks kept, rejected (by cause) and made per minute over a folder of environment bundles",
    )  # fmt: skip
    p.add_argument("folder", nargs="?", help="environment bundles (default: the platform home's envs)")
    p.add_argument("-n", type=int, default=60, help="how many bundles, in name order (0: all)")
    p.add_argument("--standard", type=int, default=4, help="DAG-Standard tasks asked per environment")
    p.add_argument("--challenge", type=int, default=1, help="DAG-Challenge tasks asked per environment")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--no-verify", action="store_true", help="skip re-checking every kept task afterwards")
    p = verb(
        bench, "rewards", cmd_bench_rewards,
        "rewards scored as each rollout ends against scoring the batch at the end, on the same rollouts",
    )  # fmt: skip
    p.add_argument("dataset", nargs="?", help="an RL dataset folder (default: the home's newest round)")
    p.add_argument("-n", type=int, default=0, help="how many RL rows (0: all)")
    p.add_argument("--group", type=int, default=4, help="rollouts per task (GRPO's G)")
    p.add_argument("--repeats", type=int, default=5, help="batches per mode; medians are reported")
    p.add_argument(
        "--generation-ms", type=float, default=20.0, help="one batched decoding step of the policy"
    )
    p.add_argument("--workers", type=int, default=4, help="threads scoring rollouts as they end")
    p = verb(
        bench, "sft", cmd_bench_sft,
        "SFT steps per second with TRL's chunked LM head against the loss from the full logits, same rows",
    )  # fmt: skip
    p.add_argument("dataset", nargs="?", help="an SFT dataset folder (default: the home's newest round)")
    p.add_argument("-n", type=int, default=0, help="how many rows (0: all)")
    p.add_argument("--steps", type=int, default=8, help="optimizer steps per run")
    p.add_argument("--repeats", type=int, default=3, help="runs per loss path; medians are reported")
    p = verb(
        bench, "specs", cmd_bench_specs,
        "per seed file of a folder (OpenAPI specs, MCP tool lists): operations kept as tools, seconds to ingest, infer and build",
    )  # fmt: skip
    p.add_argument("folder", help="a folder of seed files")
    p.add_argument("--repeats", type=int, default=3, help="builds per seed; medians are reported")
    p = verb(
        bench, "scale", cmd_bench_scale,
        "end-to-end throughput of a sharded scale run of N environments (and the paper's tasks per environment)",
    )  # fmt: skip
    p.add_argument("--envs", type=int, default=500, help="environments to make")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--shard-environments", type=int, default=60, help="environments per shard, about")
    p.add_argument("--home", default=None, help="platform home to run in (default: a fresh temporary one)")
    p = verb(
        bench, "lineage", cmd_bench_lineage,
        "trace / find / counts latency on a synthetic paper-shaped lineage graph of N records",
    )  # fmt: skip
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--repeats", type=int, default=20, help="timed calls per query (medians and p95)")

    tasks = verbs.add_parser("tasks", help="task synthesis and checks").add_subparsers(
        dest="tasks_verb", required=True
    )
    p = verb(
        tasks,
        "synth",
        cmd_tasks_synth,
        "synthesize verified tasks on one environment bundle; one JSON file per task",
    )
    p.add_argument("--env", help="environment bundle folder (not needed for solver tasks)")
    p.add_argument("--kind", required=True, choices=["dag-standard", "dag-challenge", "program", "solver"])
    p.add_argument("--n", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p = verb(
        tasks, "check", cmd_tasks_check, "re-run oracle and consistency checks on every task file in a folder"
    )
    p.add_argument("dir")
    p.add_argument("--envs", help="folder holding the environment bundles (default $AGENTOMNIA_HOME/envs)")

    env = verbs.add_parser("env", help="synthesized environments").add_subparsers(
        dest="env_verb", required=True
    )
    p = verb(env, "build", cmd_env_build, "one seed file of any kind -> one verified environment bundle")
    p.add_argument(
        "--seed", required=True, help="a seed file (MCP tool list, OpenAPI spec, SKILL.md, queries)"
    )
    p.add_argument("--out", required=True, help="bundle folder to write")
    p.add_argument("--domain", type=int, help="taxonomy id to build for (default: inferred from the seed)")
    p = verb(
        env,
        "call",
        cmd_env_call,
        "call one tool of a bundle in the sandbox; print the ToolResult and the state diff",
    )
    p.add_argument("dir", help="bundle folder")
    p.add_argument("tool")
    p.add_argument("--args", default="{}", help="JSON object of arguments")
    p.add_argument("--state", help="JSON file with the state to start from (default: the bundle's s0)")
    p.add_argument("--save-state", help="write the state after the call to this JSON file")
    p = verb(
        env,
        "check",
        cmd_env_check,
        "re-run the three-level verification of a bundle; exit non-zero on failure",
    )
    p.add_argument("dir", help="bundle folder")
    omnia = verbs.add_parser("omniabench", help="the held-out benchmark").add_subparsers(
        dest="omniabench_verb", required=True
    )
    p = verb(
        omnia, "run", cmd_omniabench_run, "evaluate a policy on OmniaBench; results and failures are stored"
    )
    p.add_argument("--policy", required=True,
                   help="openai:<model> | hf:<checkpoint folder> | baseline:heuristic | baseline:noop | reference")  # fmt: skip
    p.add_argument("--round", default="r0", help="the round the evaluation belongs to (default r0)")
    p.add_argument("--trials", type=int, default=3, help="runs per task (pass@k and pass^k use k = trials)")
    p.add_argument("--max-steps", type=int, default=20, help="assistant turns per run")
    p.add_argument("--limit", type=int, default=0, help="only the first N benchmark tasks (0 = all)")
    p.add_argument("--workers", type=int, default=2, help="sandbox worker processes")
    p.add_argument(
        "--max-new-tokens", type=int, default=None, metavar="N",
        help="hf: policies only: tokens per assistant turn (default 512; the pipeline's eval uses 96, "
        "`omniabench_eval`'s max_new_tokens)",
    )  # fmt: skip
    p.add_argument(
        "--decoders", type=int, default=None, metavar="N",
        help="hf: policies only: processes that decode, their trials side by side (default one per core on "
        "a CPU, at most four; 0 decodes in this process, one trial at a time)",
    )  # fmt: skip
    p.add_argument(
        "--imported", action="store_true", help="evaluate the tasks `import omniabench` filed under the round"
    )
    p = verb(
        omnia,
        "report",
        cmd_omniabench_report,
        "pass@1 / pass@k / pass^k by route, split, L1, capability, atom",
    )
    p.add_argument("--round", default="r0")
    p.add_argument("--policy", help="only this policy (default: every policy evaluated in the round)")
    evo = verbs.add_parser("evolution", help="failure-driven self-evolution").add_subparsers(
        dest="evolution_verb", required=True
    )
    verb(
        evo,
        "status",
        cmd_evolution_status,
        "rounds, their PRDs with priorities, evaluations and KL alignment",
    )
    export = verbs.add_parser("export", help="hand data to other tools").add_subparsers(
        dest="export_verb", required=True
    )
    p = verb(
        export, "omniabench", cmd_export_omniabench, "a round's environments and tasks as OmniaBench items"
    )
    p.add_argument("--round", default="r0")
    p.add_argument("--out", required=True, help="folder for environments.json, route1..4.json, manifest.json")
    p.add_argument(
        "--no-verify", action="store_true", help="skip building each environment the OmniaBench way"
    )
    p = verb(export, "mcp", cmd_export_mcp, "serve one environment bundle as an MCP server on stdio")
    p.set_defaults(stdout_is_protocol=True)  # stdout carries MCP messages only; anything else goes to stderr
    p.add_argument("dir", help="environment bundle folder ($AGENTOMNIA_HOME/envs/<env_id>)")
    imp = verbs.add_parser("import", help="bring data from other tools").add_subparsers(
        dest="import_verb", required=True
    )
    p = verb(
        imp,
        "omniabench",
        cmd_import_omniabench,
        "OmniaBench route JSON files -> tasks the runner can evaluate",
    )
    p.add_argument(
        "files", nargs="+", help="route*.json files (with environments.json next to them if separate)"
    )
    p.add_argument("--round", default="r0", help="round to file the imported tasks under")
    p.add_argument("--domain-map", help="task_domain_map.csv giving each item its taxonomy domain")
    p.add_argument("--taxonomy-id", type=int, help="domain for items the map does not cover")
    p.add_argument(
        "--route", choices=["route1", "route2", "route3", "route4"], help="route when file names do not say"
    )
    p.add_argument(
        "--no-verify", action="store_true", help="do not load each environment in the sandbox first"
    )
    llm = verbs.add_parser("llm", help="the model endpoint llm mode uses").add_subparsers(
        dest="llm_verb", required=True
    )
    p = verb(
        llm, "check", cmd_llm_check,
        "probe the configured endpoint: reachable, model listed, JSON schema honoured, tool calls parsed, "
        "latency and tokens/s; exit 1 with what to fix",
    )  # fmt: skip
    p.add_argument("--base-url", help="endpoint to probe (default $AGENTOMNIA_LLM_BASE_URL)")
    p.add_argument("--model", help="model id to ask for (default $AGENTOMNIA_LLM_MODEL)")
    p.add_argument("--samples", type=int, default=3, help="short answers to time (default 3)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    p = verb(
        llm, "usage", cmd_llm_usage,
        "what each stage asked the model in llm mode: calls, tokens, cache hits, usable and kept answers, fallbacks",
    )  # fmt: skip
    p.add_argument("--round", help="one round (default: every round that asked a model)")
    p = verb(
        verbs, "report", cmd_report, "one self-contained HTML page for a round: every stage, plots embedded"
    )
    p.add_argument("--round", default="r0")
    p.add_argument("--out", default="report.html", help="file, or a folder that gets report-<round>.html")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = sys.stderr if getattr(args, "stdout_is_protocol", False) else sys.stdout
    try:
        data, text = args.handler(args)
    except Unmet as exc:
        print(
            json.dumps(exc.data, indent=2, ensure_ascii=False, default=str) if args.json else exc.text,
            file=out,
        )
        return 1
    except CLIError as exc:
        print(f"agentomnia: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # the CLI boundary: every failure becomes a message and an exit code
        if os.environ.get("AGENTOMNIA_DEBUG"):
            raise
        print(f"agentomnia {args.verb}: {type(exc).__name__}: {exc}", file=sys.stderr)
        print("(set AGENTOMNIA_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False, default=str), file=out)
    elif text:
        print(text, file=out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
