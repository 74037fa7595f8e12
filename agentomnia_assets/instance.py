"""The Dagster instance under `$AGENTOMNIA_HOME/dagster`: its dagster.yaml and how to open it.

Every step that writes DuckDB carries `pool="duckdb"`; the instance limits each pool to one step
at a time, so at most one step writes the lineage file at once across runs (sensor, schedule and
UI-launched runs included). Telemetry is off: nothing leaves the machine.

A run whose process dies without reporting back would hold its pool slot forever. `agentomnia run`
cleans such runs up before it starts (`agentomnia_assets.recovery`); with the daemon running, Dagster's
run monitoring does the same: the instance's run launcher answers the monitor's health check from the
process each run names in its tags, and slots of ended runs are freed.
"""

from __future__ import annotations

import os
from pathlib import Path

DUCKDB_POOL = "duckdb"

_PREVIOUS_DEFAULT = """\
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

DAGSTER_YAML = (
    _PREVIOUS_DEFAULT
    + """\
# A run whose process died (killed, out of memory, lost machine) never reports back and would hold
# its pool slot forever. The daemon's run monitoring marks it failed: this launcher (Dagster's default
# one plus a health check) reports the run's worker dead once the process named in the run's tags is
# gone from this host. Slots of runs that ended are then freed. `agentomnia run` does the same itself
# before it starts, so this matters when the daemon runs (`make ui`).
run_launcher:
  module: agentomnia_assets.recovery
  class: AgentomniaRunLauncher
run_monitoring:
  enabled: true
  poll_interval_seconds: 30
  start_timeout_seconds: 300
  cancel_timeout_seconds: 300
  max_resume_run_attempts: 0
  free_slots_after_run_end_seconds: 30
"""
)


def ensure_dagster_home(agentomnia_home: Path) -> Path:
    """Create `<home>/dagster/dagster.yaml` if missing and point DAGSTER_HOME at it."""
    dagster_home = agentomnia_home / "dagster"
    dagster_home.mkdir(parents=True, exist_ok=True)
    config = dagster_home / "dagster.yaml"
    # an untouched file from before run monitoring is brought up to date; an edited one is left alone
    if not config.exists() or config.read_text(encoding="utf-8") == _PREVIOUS_DEFAULT:
        tmp = config.with_name(f".dagster.yaml.{os.getpid()}.tmp")
        tmp.write_text(DAGSTER_YAML, encoding="utf-8")
        tmp.replace(config)
    os.environ["DAGSTER_HOME"] = str(dagster_home)
    return dagster_home
