"""`agentomnia status` without loading the orchestrator: under a second at any corpus size.

Loading the Dagster definitions to ask each asset for its latest materialization takes seconds
(imports, then one event-log query per asset). When the home's instance keeps its event log in
Dagster's default SQLite storage, the same answer is one read-only query of the log's index
(`history/runs/index.db`, table `asset_keys`), in the order of the asset list the slow path saved
the last time it ran (`asset_keys.json`). Any other storage (PostgreSQL in `deploy/`), or a home
where either file is missing, takes the slow path, which then saves the list.
"""

from __future__ import annotations

import json
import sqlite3
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


def _partition(serialized: str | None) -> str | None:
    if not serialized:
        return None
    try:
        entry = json.loads(serialized)["event_log_entry"]["dagster_event"]["event_specific_data"]
        return entry["materialization"].get("partition")  # type: ignore[no-any-return]
    except (KeyError, TypeError, ValueError):
        return None


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
        for key, when, serialized, wiped in rows:
            if when is None or (wiped is not None and str(wiped) >= str(when)):
                continue
            try:
                name = "/".join(json.loads(key))
            except ValueError:
                continue
            latest[name] = (str(when)[:19], _partition(serialized))
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
