"""`status` reads asset materializations from the SQLite event-log index without loading Dagster."""

from __future__ import annotations

from pathlib import Path

from dagster import DagsterInstance, StaticPartitionsDefinition, asset, materialize

from agentomnia_assets.instance import ensure_dagster_home
from agentomnia_assets.status import fast_asset_status, save_asset_list

PARTS = StaticPartitionsDefinition(["r0", "r1"])


@asset(partitions_def=PARTS)
def probe() -> int:
    return 1


def test_the_fast_path_reports_what_dagster_recorded(home: Path) -> None:
    dagster_home = ensure_dagster_home(home)
    assert fast_asset_status(dagster_home) is None  # no asset list saved yet: the slow path answers
    with DagsterInstance.get() as instance:
        assert materialize([probe], instance=instance, partition_key="r1").success
        latest = instance.get_latest_materialization_event(probe.key)
    save_asset_list(dagster_home, ["probe", "never_run"])
    status = fast_asset_status(dagster_home)
    assert status is not None
    by_name = {s["asset"]: s for s in status}
    assert [s["asset"] for s in status] == ["probe", "never_run"]
    assert by_name["probe"]["status"] == "materialized" and by_name["probe"]["partition"] == "r1"
    assert latest is not None and by_name["probe"]["when"] is not None
    assert by_name["never_run"] == {"asset": "never_run", "status": "never", "partition": None, "when": None}


def test_another_event_log_storage_takes_the_slow_path(home: Path) -> None:
    dagster_home = ensure_dagster_home(home)
    save_asset_list(dagster_home, ["probe"])
    assert fast_asset_status(dagster_home) is not None
    config = dagster_home / "dagster.yaml"
    config.write_text(config.read_text() + "\nstorage:\n  postgres:\n    postgres_url: postgresql://x/y\n")
    assert fast_asset_status(dagster_home) is None


def test_every_run_saves_the_asset_list_so_the_first_status_is_fast(home: Path) -> None:
    from agentomnia.storage import Storage
    from agentomnia_assets.pipeline import _save_asset_list

    _save_asset_list(Storage(home))
    status = fast_asset_status(home / "dagster")
    assert status is not None
    names = {s["asset"] for s in status}
    assert {"taxonomy", "environments", "scale_corpus"} <= names
    assert all(s["status"] == "never" for s in status)
