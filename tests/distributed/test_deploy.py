"""The deployment's code location and configuration, checked without starting any server."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from dagster import AssetKey

from agentomnia.lineage import Edge, LineageRow, LineageStore
from agentomnia.lineage.segments import SegmentStore, list_segments
from agentomnia_assets.definitions import defs as single_host
from deploy import cluster as deployment
from deploy.celery_job import (
    ROUND_ASSETS,
    SEGMENTS_DIR,
    SegmentLineageResource,
    defs,
    lineage_compaction_job,
)

DEPLOY = Path(deployment.__file__).parent


def test_the_code_location_is_the_single_host_one_on_celery_with_segment_lineage() -> None:
    graph, base = defs.resolve_asset_graph(), single_host.resolve_asset_graph()
    assert graph.get_all_asset_keys() == base.get_all_asset_keys()
    assert graph.asset_check_keys == base.asset_check_keys
    for name in ("distributed_round_job", "synthesis_job"):
        assert defs.resolve_job_def(name).executor_def.name == "celery_on_redis", name
    round_job = defs.resolve_job_def("distributed_round_job")
    assert round_job.partitions_def is not None
    assert {k.to_user_string() for k in round_job.asset_layer.executable_asset_keys} == set(ROUND_ASSETS)
    assert AssetKey("dag_tasks") in round_job.asset_layer.executable_asset_keys
    assert isinstance((defs.resources or {})["lineage"], SegmentLineageResource)


def test_segment_lineage_resource_writes_segments_and_reads_the_store_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTOMNIA_HOME", str(tmp_path))
    LineageStore(tmp_path / "lineage.duckdb").record([LineageRow(id="seed1", kind="seed")])
    store = SegmentLineageResource().get()
    store.record(
        [LineageRow(id="env1", kind="environment")],
        [Edge(child="env1", parent="seed1", relation="built_from")],
    )
    assert [p.parent for p in list_segments(tmp_path / SEGMENTS_DIR)] == [tmp_path / SEGMENTS_DIR]
    assert store.trace("env1").ids() == {"seed1"}


@pytest.mark.parametrize("absorb", [False, True])
def test_compaction_job_merges_or_absorbs_segments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, absorb: bool
) -> None:
    monkeypatch.setenv("AGENTOMNIA_HOME", str(tmp_path))
    folder = tmp_path / SEGMENTS_DIR
    for writer in ("host-a", "host-b"):
        SegmentStore(folder, writer=writer).record([LineageRow(id=f"{writer}-seed", kind="seed")])
    result = lineage_compaction_job.execute_in_process(
        run_config={"ops": {"compact_lineage_segments": {"config": {"absorb": absorb}}}},
        resources={"lineage": SegmentLineageResource()},
    )
    assert result.success
    assert len(list_segments(folder)) == (0 if absorb else 1)
    assert (tmp_path / "lineage.duckdb").exists() == absorb
    assert {r.id for r in SegmentStore(folder, store=tmp_path / "lineage.duckdb").find()} == {
        "host-a-seed",
        "host-b-seed",
    }


def test_instance_config_keeps_every_store_in_postgres_from_the_environment() -> None:
    config = yaml.safe_load((DEPLOY / "dagster.yaml").read_text())
    db = config["storage"]["postgres"]["postgres_db"]
    assert {k: v["env"] for k, v in db.items() if isinstance(v, dict)} == {
        "hostname": "AGENTOMNIA_PG_HOST",
        "port": "AGENTOMNIA_PG_PORT",
        "username": "AGENTOMNIA_PG_USER",
        "password": "AGENTOMNIA_PG_PASSWORD",
        "db_name": "AGENTOMNIA_PG_DB",
    }
    assert config["telemetry"]["enabled"] is False
    workspace = yaml.safe_load((DEPLOY / "workspace.yaml").read_text())
    assert workspace["load_from"][0]["python_module"]["module_name"] == "deploy.celery_job"


def test_cluster_env_names_every_variable_the_configs_read(tmp_path: Path) -> None:
    cluster = deployment.Cluster(
        state_dir=str(tmp_path), home=str(tmp_path / "home"), pg_data=str(tmp_path / "pg"), pg_bin="/usr/bin",
        pg_port=5999, pg_password="it's secret", redis_port=6999,
    )  # fmt: skip
    env = cluster.env()
    assert env["AGENTOMNIA_CELERY_BROKER"] == "redis://127.0.0.1:6999/0"
    assert env["DAGSTER_HOME"] == str(tmp_path / "dagster")
    assert str(DEPLOY / "celery_config") in env["PYTHONPATH"].split(":")
    cluster.save()
    assert (tmp_path / "cluster.env").stat().st_mode & 0o077 == 0  # it holds the password
    assert "export AGENTOMNIA_PG_PASSWORD='it'\"'\"'s secret'" in (tmp_path / "cluster.env").read_text()
    assert deployment.load(tmp_path) == cluster


def test_status_and_down_without_a_deployment(tmp_path: Path) -> None:
    assert deployment.status(tmp_path) == {}
    deployment.down(tmp_path)  # nothing to stop is not an error
    assert deployment.main(["--state", str(tmp_path), "status"]) == 1
    assert deployment.main(["--state", str(tmp_path), "round"]) == 2
