"""The Dagster instance under `$AGENTOMNIA_HOME/dagster`: its dagster.yaml and how to open it.

Every step that writes DuckDB carries `pool="duckdb"`; the instance limits each pool to one step
at a time, so at most one step writes the lineage file at once across runs (sensor, schedule and
UI-launched runs included). Telemetry is off: nothing leaves the machine.
"""

from __future__ import annotations

import os
from pathlib import Path

DUCKDB_POOL = "duckdb"

DAGSTER_YAML = """\
# Written by `agentomnia init`; edit freely, it is not overwritten once present.
telemetry:
  enabled: false
nux:
  enabled: false
concurrency:
  pools:
    # every pool, `duckdb` included, runs one step at a time
    default_limit: 1
  runs:
    max_concurrent_runs: 4
"""


def ensure_dagster_home(agentomnia_home: Path) -> Path:
    """Create `<home>/dagster/dagster.yaml` if missing and point DAGSTER_HOME at it."""
    dagster_home = agentomnia_home / "dagster"
    dagster_home.mkdir(parents=True, exist_ok=True)
    config = dagster_home / "dagster.yaml"
    if not config.exists():
        config.write_text(DAGSTER_YAML, encoding="utf-8")
    os.environ["DAGSTER_HOME"] = str(dagster_home)
    return dagster_home
