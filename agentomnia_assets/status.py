"""`agentomnia status` without loading the orchestrator: under a second at any corpus size.

Loading the Dagster definitions to ask each asset for its latest materialization takes seconds
(imports, then one event-log query per asset). When the home's instance keeps its event log in
Dagster's default SQLite storage, the same answer is one read-only query of the log's index
(`history/runs/index.db`, table `asset_keys`), in the order of the asset list the slow path saved
the last time it ran (`asset_keys.json`). Any other storage (PostgreSQL in `deploy/`), or a home
where either file is missing, takes the slow path, which then saves the list.

`fast_run_health` reads the same way which runs hold concurrency slots (`concurrency_slots` and
`pending_steps` in the index) and which runs are in progress (`runs.db`), and checks whether the
process each run names in its tags still lives: a run in progress whose process is gone is stuck.
"""

from __future__ import annotations

import json
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

MANIFEST = "asset_keys.json"
_STORAGE_KEYS = ("storage", "event_log_storage", "run_storage")


def _manifest(dagster_home: Path) -> Path:
    return dagster_home / MANIFEST


def save_asset_list(dagster_home: Path, assets: list[str]) -> None:
    path = _manifest(dagster_home)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(assets), encoding="utf-8")
    tmp.replace(path)


def _default_sqlite(dagster_home: Path) -> bool:
    config = dagster_home / "dagster.yaml"
    if not config.exists():
        return False
    try:
        data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError:
        return False
    return isinstance(data, dict) and not any(k in data for k in _STORAGE_KEYS)


def _materialized(serialized: str | None) -> tuple[float | None, str | None]:
    """When the recorded materialization happened, and its partition; (None, None) when there is none.

    The index's `last_materialization_timestamp` also moves when a run only plans the asset, so a run
    killed before the asset's step finished would make it look materialized: the record itself decides."""
    if not serialized:
        return None, None
    try:
        entry = json.loads(serialized)["event_log_entry"]
        data = entry["dagster_event"]["event_specific_data"]
        return float(entry["timestamp"]), data["materialization"].get("partition")
    except (KeyError, TypeError, ValueError):
        return None, None


def _epoch(db_time: Any) -> float:
    try:
        return datetime.fromisoformat(str(db_time)).replace(tzinfo=UTC).timestamp()
    except ValueError:
        return 0.0


def fast_asset_status(dagster_home: Path) -> list[dict[str, Any]] | None:
    """Each asset's latest materialization from the SQLite index, or None when that path does not apply."""
    manifest = _manifest(dagster_home)
    if not manifest.exists() or not _default_sqlite(dagster_home):
        return None
    try:
        assets = [str(a) for a in json.loads(manifest.read_text(encoding="utf-8"))]
    except ValueError:
        return None
    index = dagster_home / "history" / "runs" / "index.db"
    latest: dict[str, tuple[str | None, str | None]] = {}
    if index.exists():
        try:
            con = sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=2.0)
            try:
                rows = con.execute(
                    "SELECT asset_key, last_materialization_timestamp, last_materialization, wipe_timestamp "
                    "FROM asset_keys"
                ).fetchall()
            finally:
                con.close()
        except sqlite3.Error:
            return None
        for key, _when, serialized, wiped in rows:
            stamp, partition = _materialized(serialized)
            if stamp is None or (wiped is not None and _epoch(wiped) >= stamp):
                continue
            try:
                name = "/".join(json.loads(key))
            except ValueError:
                continue
            latest[name] = (time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp)), partition)
    out = []
    for name in assets:
        when, partition = latest.get(name, (None, None))
        out.append(
            {
                "asset": name,
                "status": "materialized" if when else "never",
                "partition": partition,
                "when": when,
            }
        )
    return out


def _rows(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]] | None:
    """Rows of a read-only query; [] when the file or table does not exist yet, None on other errors."""
    if not db.exists():
        return []
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=2.0)
        try:
            return con.execute(sql, params).fetchall()
        finally:
            con.close()
    except sqlite3.OperationalError as exc:
        return [] if "no such table" in str(exc) else None
    except sqlite3.Error:
        return None


def fast_run_health(dagster_home: Path) -> dict[str, Any] | None:
    """Held slots and stuck runs from the SQLite storage, or None when the instance keeps them elsewhere."""
    from agentomnia.runs import (
        HOST_TAG,
        IN_PROGRESS,
        PID_STARTED_TAG,
        PID_TAG,
        health_report,
        process_state,
        when,
    )

    if (dagster_home / "dagster.yaml").exists() and not _default_sqlite(dagster_home):
        return None
    history = dagster_home / "history"
    slot_rows = _rows(
        history / "runs" / "index.db",
        "SELECT s.concurrency_key, s.run_id, s.step_key, p.assigned_timestamp FROM concurrency_slots s "
        "LEFT JOIN pending_steps p ON p.run_id = s.run_id AND p.step_key = s.step_key "
        "AND p.concurrency_key = s.concurrency_key WHERE s.run_id IS NOT NULL ORDER BY s.concurrency_key, s.id",
    )
    marks = ", ".join("?" * len(IN_PROGRESS))
    run_rows = _rows(
        history / "runs.db",
        f"SELECT run_id, status, pipeline_name, start_time FROM runs WHERE status IN ({marks})",
        IN_PROGRESS,
    )
    if slot_rows is None or run_rows is None:
        return None
    wanted = {r[0] for r in run_rows} | {s[1] for s in slot_rows}
    missing = sorted(wanted - {r[0] for r in run_rows})
    if missing:
        more = _rows(
            history / "runs.db",
            f"SELECT run_id, status, pipeline_name, start_time FROM runs WHERE run_id IN ({', '.join('?' * len(missing))})",
            tuple(missing),
        )
        run_rows += more or []
    tags: dict[str, dict[str, str]] = {}
    if wanted:
        ids = sorted(wanted)
        keys = (PID_TAG, HOST_TAG, PID_STARTED_TAG)
        for run_id, key, value in (
            _rows(
                history / "runs.db",
                f"SELECT run_id, key, value FROM run_tags WHERE run_id IN ({', '.join('?' * len(ids))}) "
                f"AND key IN ({', '.join('?' * len(keys))})",
                (*ids, *keys),
            )
            or []
        ):
            tags.setdefault(run_id, {})[key] = value
    runs = []
    for run_id, status, job, start_time in run_rows:
        t = tags.get(run_id, {})
        runs.append(
            {
                "run_id": run_id,
                "status": status,
                "job": job,
                "started": when(start_time) if start_time else None,
                "pid": t.get(PID_TAG),
                "host": t.get(HOST_TAG),
                "process": process_state(t) if t.get(PID_TAG) else "unknown",
            }
        )
    slots = [
        {"pool": pool, "run_id": run_id, "step": step, "since": when(since) if since else None}
        for pool, run_id, step, since in slot_rows
    ]
    return health_report(slots, runs)
