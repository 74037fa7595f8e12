"""The Dagster UI end to end: real webserver and daemon, a round launched over GraphQL, pages in Chromium.

The in-process pipeline test proves the assets compute; this one proves a user can drive them the
way they will: the code location loads in the webserver, every asset of `defs` is served, a new
`rounds` partition can be added and materialized from the API (the daemon dequeues and runs it),
and the asset graph and the run page render the asset names and the run's success in a browser.

The round reads a small seed inbox (one MCP tool list and one skill copied from the shipped
corpus) rather than the whole corpus, and the run config trims rollouts and tasks, so the run
takes minutes on two cores. Screenshots, page text, server logs and timings are kept as artifacts
in `$AGENTOMNIA_TEST_ARTIFACTS` (default: the test's tmp folder) and copied to
`.agentomnia-test-artifacts/ui/` at the repository root.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentomnia.seeds.ingest import corpus_dir
from agentomnia_assets.instance import ensure_dagster_home
from tests.e2e.ui_support import (
    DagsterServers,
    GraphQL,
    create_instance_storage,
    describe_error,
    expand_all_groups,
    free_port,
    headless_chromium,
    shown,
    visit,
    wait_until,
)

REPO = Path(__file__).resolve().parents[2]
ROUND = "r1"  # not the base round: raw_seeds then reads only the inbox under $AGENTOMNIA_HOME/seeds/
INBOX = ("mcp/helpdesk-tickets.json", "skills/playlist-curation/SKILL.md")
CHAIN = (
    "raw_seeds",
    "environment_candidates",
    "selected_environment_seeds",
    "state_specs",
    "toolsets",
    "environments",
    "dag_tasks",
)
KNOWN = ("raw_seeds", "environment_candidates", "environments", "dag_tasks", "trajectories")
# small enough for minutes on two cores; the keys are the assets' Config fields
RUN_CONFIG = {
    "ops": {
        "state_specs": {"config": {"max_environments": 1}},
        "environments": {"config": {"rollouts": 2, "rollout_steps": 6}},
        "dag_tasks": {"config": {"standard_per_env": 1, "challenge_per_env": 1}},
    },
    # one process for the whole run: each step of the multiprocess executor would load torch and
    # the embedder again, which on two busy cores costs minutes
    "execution": {"config": {"in_process": {}}},
}
TIMEOUTS = {"server_s": 240.0, "location_s": 300.0, "queued_s": 180.0, "run_s": 1200.0, "page_s": 120.0}

WORKSPACE_QUERY = """
query { workspaceOrError { __typename ... on Workspace { locationEntries { name loadStatus
  locationOrLoadError { __typename ... on RepositoryLocation { name repositories { name } }
                        ... on PythonError { message stack } } } } } }
"""
ASSET_NODES_QUERY = "query { assetNodes { assetKey { path } groupName description } }"
ADD_PARTITION = """
mutation($repo: RepositorySelector!, $key: String!) {
  addDynamicPartition(repositorySelector: $repo, partitionsDefName: "rounds", partitionKey: $key) {
    __typename ... on AddDynamicPartitionSuccess { partitionKey } ... on Error { message }
    ... on PythonError { stack } } }
"""
LAUNCH_RUN = """
mutation($params: ExecutionParams!) { launchRun(executionParams: $params) {
  __typename ... on LaunchRunSuccess { run { runId status } } ... on Error { message }
  ... on RunConfigValidationInvalid { errors { message } } ... on PythonError { stack } } }
"""
RUN_QUERY = """
query($id: ID!) { runOrError(runId: $id) { __typename ... on Run { runId status startTime endTime
  assetMaterializations { assetKey { path } partition } } ... on Error { message } } }
"""
LOGS_QUERY = """
query($id: ID!) { logsForRun(runId: $id, limit: 5000) { __typename ... on EventConnection { events {
  __typename ... on MessageEvent { message stepKey level }
  ... on ErrorEvent { error { message stack } } } } ... on Error { message } } }
"""


@pytest.fixture
def artifacts(tmp_path: Path) -> Iterator[Path]:
    """Where screenshots and logs go; copied next to the repository afterwards, pass or fail."""
    root = Path(os.environ.get("AGENTOMNIA_TEST_ARTIFACTS", tmp_path / "artifacts")) / "ui"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    print(f"\nbrowser test artifacts: {root}", file=sys.stderr)
    yield root
    keep = REPO / ".agentomnia-test-artifacts" / "ui"
    if keep.resolve() != root.resolve():
        shutil.rmtree(keep, ignore_errors=True)
        shutil.copytree(root, keep)
        print(f"browser test artifacts copied to {keep}", file=sys.stderr)


@pytest.fixture
def servers(tmp_path: Path, artifacts: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DagsterServers]:
    """Webserver and daemon on loopback over a fresh platform home; always stopped, whole process groups."""
    home = tmp_path / "home"
    monkeypatch.setenv("AGENTOMNIA_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster"))
    create_instance_storage(ensure_dagster_home(home))
    (home / "seeds").mkdir(parents=True)
    for rel in INBOX:
        src = corpus_dir() / rel
        # skills are folders named after the skill; keep that name on the flat inbox copy
        name = f"{src.parent.name}.md" if src.name == "SKILL.md" else src.name
        shutil.copyfile(src, home / "seeds" / name)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "DO_NOT_TRACK": "1",
        "AGENTOMNIA_MODE": "offline",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    procs = DagsterServers(
        bin_dir=Path(sys.executable).parent,
        workspace=REPO / "workspace.yaml",
        port=free_port(),
        log_dir=artifacts,
    )
    try:
        procs.start(env)
        yield procs
    finally:
        stragglers = procs.stop()
        if stragglers:
            print(f"killed processes left behind by the servers: {stragglers}", file=sys.stderr)


def _location(gql: GraphQL) -> dict[str, str] | None:
    """The loaded location's repository selector; None while loading; fails on a load error."""
    entries = gql(WORKSPACE_QUERY)["workspaceOrError"].get("locationEntries") or []
    for entry in entries:
        loc = entry["locationOrLoadError"]
        if loc and loc["__typename"] == "PythonError":
            raise AssertionError(f"code location {entry['name']} failed to load: {describe_error(loc)}")
        if entry["loadStatus"] == "LOADED" and loc and loc["__typename"] == "RepositoryLocation":
            return {"repositoryLocationName": loc["name"], "repositoryName": loc["repositories"][0]["name"]}
    return None


def _event_log_tail(gql: GraphQL, run_id: str, lines: int = 40) -> str:
    events = gql(LOGS_QUERY, {"id": run_id})["logsForRun"].get("events") or []
    rows = []
    for e in events[-lines:]:
        row = f"[{e.get('level', '')}] {e.get('stepKey') or '-'}: {e.get('message', '')}"
        if e.get("error"):
            row += f"\n    {e['error']['message']}\n    {''.join(e['error']['stack'] or [])[-1500:]}"
        rows.append(row)
    return "\n".join(rows)


@dataclass(frozen=True)
class Expected:
    """What `defs` says the UI must show, read at test time so new assets and groups join the check."""

    groups: dict[str, list[str]]  # group name -> its asset names
    checks: list[dict[str, Any]]  # the chain's asset checks, as GraphQL AssetCheckHandleInput

    @property
    def assets(self) -> set[str]:
        return {a for names in self.groups.values() for a in names}


def _expected() -> Expected:
    from agentomnia_assets.definitions import defs

    graph = defs.resolve_asset_graph()
    groups: dict[str, list[str]] = {}
    for key in sorted(graph.get_all_asset_keys()):
        groups.setdefault(graph.get(key).group_name, []).append(key.to_user_string())
    # the chain's checks go into the run, so the blocking ones gate it as they do from the UI
    checks = [
        {"assetKey": {"path": list(k.asset_key.path)}, "name": k.name}
        for k in sorted(graph.asset_check_keys)
        if k.asset_key.to_user_string() in CHAIN
    ]
    return Expected(groups=groups, checks=checks)


def _launch_round(gql: GraphQL, repo: dict[str, str], checks: list[dict[str, Any]]) -> str:
    """Add the round partition and launch the chain for it; the run id."""
    added = gql(ADD_PARTITION, {"repo": repo, "key": ROUND})["addDynamicPartition"]
    assert added["__typename"] == "AddDynamicPartitionSuccess", describe_error(added)
    params = {
        "selector": {**repo, "jobName": "__ASSET_JOB", "assetSelection": [{"path": [a]} for a in CHAIN],
                     "assetCheckSelection": checks},
        "runConfigData": RUN_CONFIG,
        "mode": "default",
        "executionMetadata": {"tags": [{"key": "dagster/partition", "value": ROUND},
                                       {"key": "agentomnia/trigger", "value": "ui-e2e-test"}]},
    }  # fmt: skip
    launched = gql(LAUNCH_RUN, {"params": params})["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", f"launchRun refused: {describe_error(launched)}"
    return str(launched["run"]["runId"])


def _finished_run(gql: GraphQL, servers: DagsterServers, run_id: str) -> dict[str, Any]:
    """Poll the run until it ends; fail with its event log and the server logs unless it succeeded."""

    def state() -> dict[str, Any]:
        servers.check_alive()
        run: dict[str, Any] = gql(RUN_QUERY, {"id": run_id})["runOrError"]
        assert run["__typename"] == "Run", describe_error(run)
        return run

    wait_until(
        f"run {run_id} leaving the queue (is dagster-daemon dequeuing? see {servers.log_dir}/daemon.log)",
        lambda: state()["status"] not in ("QUEUED", "NOT_STARTED"),
        TIMEOUTS["queued_s"],
        interval_s=2.0,
    )
    run: dict[str, Any] = wait_until(
        f"run {run_id} finishing",
        lambda: (r := state())["status"] in ("SUCCESS", "FAILURE", "CANCELED") and r,
        TIMEOUTS["run_s"],
        interval_s=3.0,
    )
    if run["status"] != "SUCCESS":
        pytest.fail(
            f"run {run_id} ended {run['status']}; event log tail:\n{_event_log_tail(gql, run_id)}\n"
            f"server logs:\n{servers.logs()}"
        )
    return run


def test_elided_graph_labels_count_as_shown() -> None:
    # the zoomed-out graph elides the middle of long names; anything else must be the whole name
    page = "Global asset lineage\nenviro…_candidates\nraw_seeds\nveri…_trajectories"
    assert shown(page, "environment_candidates") and shown(page, "verified_trajectories")
    assert shown(page, "raw_seeds")
    assert not shown(page, "environment_stats") and not shown(page, "rl_dataset")
    assert not shown("…", "dag_tasks"), "a bare ellipsis must not match every name"


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_ui_serves_assets_materializes_a_round_and_renders_it(
    servers: DagsterServers, artifacts: Path, tmp_path: Path
) -> None:
    timings: dict[str, float] = {}
    started = time.monotonic()
    gql = GraphQL(servers.url)

    def phase(name: str) -> None:
        timings[name] = round(time.monotonic() - started - sum(timings.values()), 1)

    expected = _expected()
    assert set(KNOWN) | set(CHAIN) <= expected.assets, (
        f"defs lost assets this test relies on: {sorted((set(KNOWN) | set(CHAIN)) - expected.assets)}"
    )

    # 1. the server answers, and the code location has loaded
    status, body = wait_until(
        "GET /server_info", lambda: gql.get("/server_info"), TIMEOUTS["server_s"], on_tick=servers.check_alive
    )
    assert status == 200 and b"dagster_webserver_version" in body, body[:500]
    repo = wait_until(
        "code location loaded", lambda: _location(gql), TIMEOUTS["location_s"], on_tick=servers.check_alive
    )
    phase("server_up_s")

    # 2. every asset of defs is a node of the served graph, in its group, and says what it is
    served = {"/".join(n["assetKey"]["path"]): n for n in gql(ASSET_NODES_QUERY)["assetNodes"]}
    assert expected.assets <= set(served), (
        f"assets in defs but not served: {sorted(expected.assets - set(served))}"
    )
    misgrouped = sorted(
        a for g, names in expected.groups.items() for a in names if served[a]["groupName"] != g
    )
    assert not misgrouped, f"assets served in another group than defs gives: {misgrouped}"
    undescribed = sorted(a for a in expected.assets if not (served[a]["description"] or "").strip())
    assert not undescribed, f"assets without a description in the UI: {undescribed}"

    # 3. a new round, materialized through the API and run by the daemon
    run_id = _launch_round(gql, repo, expected.checks)
    run = _finished_run(gql, servers, run_id)
    materialized = {("/".join(m["assetKey"]["path"]), m["partition"]) for m in run["assetMaterializations"]}
    missing_rows = sorted(a for a in CHAIN if (a, ROUND) not in materialized)
    assert not missing_rows, f"run {run_id} succeeded but did not materialize {missing_rows} for {ROUND}"
    phase("run_s")

    # 4. the same, as a person sees it: the whole lineage, every group's graph, the run page
    repo_path = f"{repo['repositoryName']}@{repo['repositoryLocationName']}"
    groups = sorted(expected.groups)
    probes = sorted(expected.assets - set(groups))
    with headless_chromium(tmp_path / "chromium-profile", artifacts / "chromedriver.log") as driver:
        # the global lineage opens with groups collapsed; expanded, it shows every asset at once
        pages = [visit(driver, f"{servers.url}/asset-groups", [*groups, *sorted(expected.assets)],
                       artifacts / "asset-lineage.png", TIMEOUTS["page_s"], ready=groups, action=expand_all_groups(probes))]  # fmt: skip
        pages += [
            visit(driver, f"{servers.url}/locations/{repo_path}/asset-groups/{group}", names,
                  artifacts / f"asset-group-{group}.png", TIMEOUTS["page_s"])
            for group, names in sorted(expected.groups.items())
        ]  # fmt: skip
        run_page = visit(driver, f"{servers.url}/runs/{run_id}",
                         [run_id[:8], "Success", f"partition: {ROUND}", f"{len(CHAIN)} assets"],
                         artifacts / "run.png", TIMEOUTS["page_s"])  # fmt: skip
    phase("browser_s")
    timings["total_s"] = round(time.monotonic() - started, 1)
    (artifacts / "timings.json").write_text(json.dumps(timings, indent=1), encoding="utf-8")
    print(f"browser test timings: {timings}", file=sys.stderr)

    for page in [*pages, run_page]:
        assert not page.missing, f"{page.url} never showed {page.missing}; see {page.screenshot}"
        # a blank or half-painted page compresses to a few kilobytes
        assert page.screenshot.stat().st_size > 20_000, f"{page.screenshot} is nearly empty"
