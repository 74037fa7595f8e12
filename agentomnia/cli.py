"""The `agentomnia` command.

Every verb prints a readable answer, or with `--json` one JSON document on stdout, and exits
non-zero with the reason on stderr when it fails. Verbs that drive the Dagster layer (`run`,
`status`, `init`) import it lazily from the project checkout: the engine itself never imports
Dagster, and the CLI is the one entry point that sits above both.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentomnia.storage import Storage


class CLIError(RuntimeError):
    """A failure the user can act on; printed without a traceback."""


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
    return {"home": str(storage.root), "dagster_home": str(dagster_home)}, f"platform home {storage.root}"


def cmd_run(args: argparse.Namespace) -> Result:
    _dagster_layer()
    from agentomnia_assets.pipeline import run_pipeline

    summary = run_pipeline(round_key=args.round, scale=args.scale)
    return summary.model_dump(mode="json"), summary.render()


def cmd_status(args: argparse.Namespace) -> Result:
    storage = Storage()
    from agentomnia.lineage import LineageStore

    counts = LineageStore(storage.lineage_path).counts()
    _dagster_layer()
    from agentomnia_assets.pipeline import latest_materializations

    assets = latest_materializations(storage)
    lines = [f"platform home {storage.root}", "", "records (kind / round / status: count)"]
    lines += [f"  {c['kind']:<22} {c['round']:<6} {c['status']:<10} {c['count']}" for c in counts] or ["  none yet"]
    lines += ["", "assets (latest materialization)"]
    lines += [f"  {a['asset']:<34} {a['status']:<9} {a['partition'] or '-':<6} {a['when'] or ''}" for a in assets]
    return {"home": str(storage.root), "records": counts, "assets": assets}, "\n".join(lines)


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
        "records": [r.model_dump(mode="json") if r else {"id": i, "missing": True} for i, r in trace.rows.items()],
        "edges": [e.model_dump() for e in trace.edges],
    }
    return data, trace.render()


def _seed_summary(result: Any) -> Result:
    data = {
        "accepted": [{"id": s.id, "kind": s.kind, "name": s.name, "source": s.source, "tools": len(s.tools)} for s in result.accepted],
        "rejected": [{"source": r.source, "place": r.place, "reason": r.reason, "fix": r.fix} for r in result.rejected],
    }
    lines = [f"accepted {len(result.accepted)}, rejected {len(result.rejected)}"]
    lines += [f"  + {s.kind:<5} {s.id}  {s.name} ({len(s.tools)} tools)  <- {s.source}" for s in result.accepted]
    lines += [f"  - {r.message}" for r in result.rejected]
    return data, "\n".join(lines)


def cmd_seeds_ingest(args: argparse.Namespace) -> Result:
    import shutil

    from agentomnia.seeds.ingest import ingest

    columns = {"query": args.query_column, "id": args.id_column}
    result = ingest([Path(p) for p in args.paths], query_columns=columns, max_bytes=int(args.max_mb * 1024 * 1024))
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
        raise CLIError("give the server command after --, e.g. agentomnia seeds from-mcp -- python my_server.py")
    try:
        listing = tools_list_from_server(command[0], command[1:], timeout_s=args.timeout)
    except SeedInputError as exc:
        raise CLIError(f"{exc.reason}; {exc.fix}") from exc
    name = args.name or "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in str(listing["server"]["name"]))
    out = Path(args.out) if args.out else Storage().root / "seeds" / "mcp" / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(listing, indent=2, ensure_ascii=False), encoding="utf-8")
    data, text = _seed_summary(ingest([out]))
    if data["rejected"]:
        raise CLIError(f"saved {out}, but it is not a usable seed: {data['rejected'][0]['reason']}")
    data["saved"] = str(out)
    return data, f"saved {out}\n{text}"


# -- parser --------------------------------------------------------------------------------


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
    p = verb(verbs, "run", cmd_run, "materialize the whole default pipeline for one round and print a summary")
    p.add_argument("--round", default="r0", help="round partition to materialize (default r0)")
    p.add_argument("--scale", default="default", choices=["default", "full", "paper"], help="corpus size")
    verb(verbs, "status", cmd_status, "records by kind and round, and each asset's latest materialization")

    lineage = verbs.add_parser("lineage", help="row-level lineage").add_subparsers(dest="lineage_verb", required=True)
    p = verb(lineage, "trace", cmd_lineage_trace, "a record's ancestors (or descendants with --down) as a tree")
    p.add_argument("id", help="record id (content hash)")
    p.add_argument("--down", action="store_true", help="show descendants instead of ancestors")
    seeds = verbs.add_parser("seeds", help="seed files").add_subparsers(dest="seeds_verb", required=True)
    p = verb(seeds, "ingest", cmd_seeds_ingest, "parse seed files and folders; print accepted and rejected with reasons")
    p.add_argument("paths", nargs="+", help="files or folders (walked recursively)")
    p.add_argument("--query-column", default="query", help="column holding the query text (JSONL/CSV/Parquet/HF)")
    p.add_argument("--id-column", default="id", help="column holding a query id")
    p.add_argument("--max-mb", type=float, default=10.0, help="size limit per file")
    p.add_argument("--add", action="store_true", help="copy accepted inputs into $AGENTOMNIA_HOME/seeds for the next run")
    p = verb(seeds, "from-mcp", cmd_seeds_from_mcp, "launch an MCP server over stdio, save its tools/list as a seed")
    p.add_argument("--out", help="where to save (default $AGENTOMNIA_HOME/seeds/mcp/<server>.json)")
    p.add_argument("--name", help="file name stem (default: the server's name)")
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        data, text = args.handler(args)
    except CLIError as exc:
        print(f"agentomnia: {exc}", file=sys.stderr)
        return 1
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        print(f"agentomnia {args.verb}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
