"""One round on the many-machines deployment, on this machine: PostgreSQL instance storage, a Redis
broker, two Celery workers, the daemon and the webserver (deploy/cluster.py), compared record for
record with the same round run in a single process. Midway, the worker process running one step is
killed (SIGKILL, as an out-of-memory kill does): the step goes back to the queue, runs again, and the
round still matches.

The single-process run goes first; the deployment's home starts with a copy of its sentence
embedding cache (text hash -> vector, a pure function of the text), which spares the workers the
slowest computation of the round and leaves everything the deployment changes — where steps run,
how artifacts and lineage travel between hosts — to be compared.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import psutil
import pyarrow.parquet as pq
import pytest
from dagster import AssetKey, DagsterEventType, instance_for_test, materialize

from agentomnia.lineage import LineageStore
from agentomnia.lineage.segments import SegmentStore
from deploy import cluster as deployment
from deploy.celery_job import ROUND_ASSETS, SEGMENTS_DIR, small_round_config

pytestmark = [pytest.mark.distributed, pytest.mark.slow]

ROUND = "r0"
RUN_CONFIG = small_round_config(max_environments=3)
TIMINGS: dict[str, float] = {}


@pytest.fixture(scope="module")
def single_process_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    from agentomnia_assets.definitions import defs

    home = tmp_path_factory.mktemp("single") / "home"
    started = time.perf_counter()
    with pytest.MonkeyPatch.context() as mp, instance_for_test() as instance:
        mp.setenv("AGENTOMNIA_HOME", str(home))
        instance.add_dynamic_partitions("rounds", [ROUND])
        result = materialize(
            [*defs.assets, *defs.asset_checks],  # type: ignore[list-item, misc]
            selection=[AssetKey(name) for name in ROUND_ASSETS],
            partition_key=ROUND,
            instance=instance,
            resources=defs.resources,
            run_config=RUN_CONFIG,
        )
    assert result.success
    TIMINGS["single_process_run_s"] = time.perf_counter() - started
    yield home


@pytest.fixture(scope="module")
def cluster(single_process_home: Path) -> Iterator[deployment.Cluster]:
    try:
        deployment.ensure_packages(install=True)
    except deployment.ClusterError as exc:
        pytest.skip(str(exc))  # only where apt-get cannot run (not root); CI runs as root
    # a folder of its own under the system temp dir: PostgreSQL's user must be able to reach it
    state = Path(tempfile.mkdtemp(prefix="agentomnia-cluster-"))
    home = state / "home"
    if (single_process_home / "cache" / "embeddings").is_dir():
        shutil.copytree(single_process_home / "cache" / "embeddings", home / "cache" / "embeddings")
    started = time.perf_counter()
    try:
        up = deployment.up(state, home=home, workers=2, ui=True, web_port=deployment.free_port())
        TIMINGS["cluster_up_s"] = time.perf_counter() - started
        yield up
    finally:
        stopping = time.perf_counter()
        deployment.down(state, purge=True)
        TIMINGS["cluster_down_s"] = time.perf_counter() - stopping
        print("\ndistributed test timings:", json.dumps({k: round(v, 1) for k, v in TIMINGS.items()}))


def _artifact_ids(home: Path) -> dict[str, list[str]]:
    """Every Parquet artifact of the round, by asset and file: its sorted id column."""
    out: dict[str, list[str]] = {}
    for asset in ROUND_ASSETS:
        for path in sorted((home / "artifacts" / asset / ROUND).glob("*.parquet")):
            table = pq.read_table(path)
            column = next(c for c in ("id", "env_id", "candidate_id", "env") if c in table.column_names)
            out[f"{asset}/{path.name}"] = sorted(str(v) for v in table.column(column).to_pylist())
    return out


def _lineage(store: LineageStore) -> tuple[set[str], Counter[tuple[str, str]], set[tuple[str, str, str]]]:
    """Kept record ids, rejections as (kind, reason) counts, and the edges between kept records."""
    kept = {r[0] for r in store.file.query("SELECT id FROM records WHERE status = 'ok'")}
    rejected = Counter(
        (k, r) for k, r in store.file.query("SELECT kind, reason FROM records WHERE status <> 'ok'")
    )
    edges = {
        (c, p, rel)
        for c, p, rel in store.file.query("SELECT child, parent, relation FROM edges")
        if c in kept and p in kept
    }
    return kept, rejected, edges


def _ui_run_status(cluster: deployment.Cluster, run_id: str) -> str:
    query = {"query": f'{{ runOrError(runId: "{run_id}") {{ __typename ... on Run {{ status }} }} }}'}
    request = urllib.request.Request(
        f"{cluster.web_url}/graphql",
        data=json.dumps(query).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as resp:
        return str(json.load(resp)["data"]["runOrError"]["status"])


# Steps of several seconds with steps before and after them. Which of them is still running when the
# test looks depends on the machine's load (with the embedding cache copied, none takes long), so the
# test kills the first one it finds running.
KILL_CANDIDATES = ("environment_candidates", "selected_environment_seeds", "environments", "dag_tasks")


def _kill_a_running_step(cluster: deployment.Cluster, run_id: str) -> tuple[str, str]:
    """SIGKILL the Celery pool process executing one of the candidate steps while it runs, as an
    out-of-memory kill would; (the step, the worker's name)."""
    deadline = time.monotonic() + 1200
    while time.monotonic() < deadline:
        workers = deployment.step_workers(cluster, run_id)
        done = _steps_with(cluster, run_id, DagsterEventType.STEP_SUCCESS)
        running = [s for s in KILL_CANDIDATES if s in workers and s not in done]
        if running:
            name = workers[running[0]].split("@")[0]
            pool = psutil.Process(cluster.services[name].pid).children(recursive=True)
            assert pool, f"{name} has no pool process"
            for proc in pool:
                proc.kill()
            return running[0], name
        assert not set(KILL_CANDIDATES) <= done, (
            f"every one of {KILL_CANDIDATES} ended before it could be killed"
        )
        time.sleep(0.25)
    raise AssertionError(f"none of {KILL_CANDIDATES} started within 20 minutes")


def _steps_with(cluster: deployment.Cluster, run_id: str, kind: DagsterEventType) -> set[str]:
    with deployment.instance(cluster) as inst:
        return {
            r.dagster_event.step_key
            for r in inst.all_logs(run_id, of_type=kind)
            if r.dagster_event is not None and r.dagster_event.step_key
        }


def _step_events(cluster: deployment.Cluster, run_id: str, step: str, kind: DagsterEventType) -> int:
    with deployment.instance(cluster) as inst:
        return sum(
            1
            for r in inst.all_logs(run_id, of_type=kind)
            if r.dagster_event is not None and r.dagster_event.step_key == step
        )


def test_a_round_runs_across_two_workers_and_matches_a_single_process_run(
    cluster: deployment.Cluster, single_process_home: Path
) -> None:
    started = time.perf_counter()
    run_id = deployment.launch_round(cluster, ROUND, RUN_CONFIG)
    step, killed = _kill_a_running_step(cluster, run_id)
    final = deployment.wait_for_run(cluster, run_id, timeout_s=1500)
    TIMINGS["distributed_run_s"] = time.perf_counter() - started
    assert final == "SUCCESS", deployment.step_failures(cluster, run_id)
    # the killed step went back to the queue and ran again, on whichever worker took it
    assert _step_events(cluster, run_id, step, DagsterEventType.STEP_START) >= 2, (
        f"{step} was not rerun after {killed} lost it"
    )

    # every asset step went through the broker, and both workers took a share
    workers = deployment.step_workers(cluster, run_id)
    assert set(ROUND_ASSETS) <= set(workers), (
        f"steps not run by a Celery worker: {set(ROUND_ASSETS) - set(workers)}"
    )
    assert {w.split("@")[0] for w in workers.values()} == {"worker1", "worker2"}, workers

    # the webserver reads the same PostgreSQL instance the workers wrote
    assert _ui_run_status(cluster, run_id) == "SUCCESS"

    # the same records, by content-hashed id, as the single-process run
    home = Path(cluster.home)
    distributed, single = _artifact_ids(home), _artifact_ids(single_process_home)
    assert set(distributed) == set(single)
    assert {k: v for k, v in distributed.items() if v != single[k]} == {}
    assert len(distributed["dag_tasks/data.parquet"]) > 0, "the round made no DAG tasks; nothing was compared"

    # lineage: written as segments by every worker that ran an asset step (each its own process; the
    # broker decides how the asset steps are shared, and one worker may run only asset checks, which
    # write no lineage), and equal to the single-process DuckDB store
    segments = SegmentStore(home / SEGMENTS_DIR, store=home / "lineage.duckdb")
    writers = {p.name.split("__")[0] for p in segments.segments()}
    asset_workers = {workers[name] for name in ROUND_ASSETS}
    assert len(writers) >= len(asset_workers), (writers, asset_workers)
    assert not (home / "lineage.duckdb").exists(), "the deployment wrote the DuckDB file instead of segments"
    kept, rejected, edges = _lineage(segments)
    assert (kept, rejected, edges) == _lineage(LineageStore(single_process_home / "lineage.duckdb"))
