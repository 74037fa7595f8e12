"""The Kubernetes path, checked offline: the image recipe, the Helm values, the code location built
on a stand-in for dagster-k8s (which is not installed here), and the round launcher's GraphQL."""

from __future__ import annotations

import json
import re
import shlex
import sys
import tomllib
import types
from pathlib import Path
from typing import Any

import pytest
import yaml
from dagster import validate_run_config

from deploy.k8s import k8s_job
from deploy.k8s import round as k8s_round
from tests.deploy_k8s import k8s_stub
from tests.deploy_k8s.conftest import REPO, shell_commands

DOCKERFILE = REPO / "Dockerfile"
VALUES = REPO / "deploy" / "k8s" / "values.yaml"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))

# Keys the chart's values schema accepts at the levels values.yaml sets (dagster Helm chart 1.13,
# helm/dagster/schema/schema/charts/...): a misspelt key would be ignored by Helm, silently.
CHART_TOP_LEVEL = {
    "dagsterWebserver", "dagster-user-deployments", "postgresql", "generatePostgresqlPasswordSecret",
    "generateCeleryConfigSecret", "rabbitmq", "redis", "flower", "ingress", "imagePullSecrets",
    "computeLogManager", "scheduler", "runLauncher", "pythonLogs", "dagsterDaemon", "busybox", "migrate",
    "telemetry", "serviceAccount", "global", "retention", "concurrency", "additionalInstanceConfig",
}  # fmt: skip
USER_DEPLOYMENT = {
    "name", "image", "port", "dagsterApiGrpcArgs", "codeServerArgs", "includeConfigInLaunchedRuns", "env",
    "envConfigMaps", "envSecrets", "annotations", "nodeSelector", "affinity", "tolerations",
    "podSecurityContext", "securityContext", "resources", "livenessProbe", "readinessProbe", "startupProbe",
    "labels", "volumeMounts", "volumes", "schedulerName", "initContainers", "sidecarContainers",
}  # fmt: skip
K8S_RUN_LAUNCHER = {
    "image", "imagePullPolicy", "jobNamespace", "loadInclusterConfig", "kubeconfigFile", "envConfigMaps",
    "envSecrets", "envVars", "volumeMounts", "volumes", "labels", "failPodOnRunFailure", "resources",
    "schedulerName", "securityContext", "runK8sConfig",
}  # fmt: skip
RUN_K8S_CONFIG = {
    "containerConfig",
    "podSpecConfig",
    "podTemplateSpecMetadata",
    "jobSpecConfig",
    "jobMetadata",
}
CONCURRENCY = {"enabled": None, "pools": {"defaultLimit", "granularity", "opGranularityRunBuffer"},
               "runs": {"maxConcurrentRuns", "tagConcurrencyLimits"}}  # fmt: skip


@pytest.fixture
def fake_dagster_k8s(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType("dagster_k8s")
    module.k8s_job_executor = k8s_stub.k8s_job_executor  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "dagster_k8s", module)
    return module


def _dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    lines = [
        line
        for line in DOCKERFILE.read_text(encoding="utf-8").splitlines()
        if not line.lstrip().startswith("#")
    ]
    text = re.sub(r"\\\n", " ", "\n".join(lines))
    out = []
    for line in text.splitlines():
        if line.strip():
            instruction, _, rest = line.strip().partition(" ")
            out.append((instruction.upper(), " ".join(rest.split())))
    return out


def _labels() -> dict[str, str]:
    labels: dict[str, str] = {}
    for instruction, rest in _dockerfile():
        if instruction == "LABEL":
            for word in shlex.split(rest):
                key, _, value = word.partition("=")
                labels[key] = value
    return labels


def _values() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(VALUES.read_text(encoding="utf-8"))
    return data


def _deployment() -> dict[str, Any]:
    deployments = _values()["dagster-user-deployments"]["deployments"]
    assert len(deployments) == 1
    deployment: dict[str, Any] = deployments[0]
    return deployment


# ------------------------------------------------------------------------------------------ image


def test_the_image_installs_cpu_torch_before_the_project_and_runs_as_a_user() -> None:
    steps = _dockerfile()
    assert steps[0] == ("FROM", "python:3.11-slim")
    runs = [rest for instruction, rest in steps if instruction == "RUN"]
    torch_at = next(i for i, r in enumerate(runs) if "torch==" in r)
    project_at = next(i for i, r in enumerate(runs) if re.search(r'pip install\s+"?\.(\[|\s|")', r))
    assert torch_at < project_at, "torch must be installed before the project (else pip pulls a CUDA build)"
    assert ("ARG", "TORCH_INDEX=https://download.pytorch.org/whl/cpu") in steps  # CPU unless asked otherwise
    assert "${TORCH_INDEX}" in runs[torch_at] and "${TORCH_VERSION}" in runs[torch_at]
    pinned = next(d for d in PYPROJECT["project"]["dependencies"] if d.startswith("torch=="))
    assert ("ARG", f"TORCH_VERSION={pinned.removeprefix('torch==')}") in steps
    user = next(rest for instruction, rest in steps if instruction == "USER")
    assert user.isdigit() and int(user) != 0, f"the image must run as a non-root numeric user, not {user!r}"
    assert not any(instruction == "ENTRYPOINT" for instruction, _ in steps), (
        "the chart passes the whole `dagster api grpc ...` command as container args; an ENTRYPOINT would prefix it"
    )


def test_the_image_installs_extras_that_exist_and_the_k8s_extra_pins_dagster_k8s() -> None:
    project_install = next(r for i, r in _dockerfile() if i == "RUN" and re.search(r"pip install \"\.\[", r))
    extras = set(re.search(r'"\.\[([^\]]+)\]"', project_install).group(1).split(","))  # type: ignore[union-attr]
    assert extras == {"distributed", "k8s"}
    defined = PYPROJECT["project"].get("optional-dependencies", {})
    assert extras <= set(defined), (
        f"pyproject.toml lacks the extras {sorted(extras - set(defined))}; add under "
        '[project.optional-dependencies]: k8s = ["dagster-k8s==0.29.27"]'
    )
    dagster = next(d for d in PYPROJECT["project"]["dependencies"] if d.startswith("dagster=="))
    _, minor, patch = dagster.removeprefix("dagster==").split(".")
    assert defined["k8s"] == [
        f"dagster-k8s==0.{int(minor) + 16}.{patch}"
    ]  # integrations: 1.x.y <-> 0.(x+16).y
    assert f"dagster-celery==0.{int(minor) + 16}.{patch}" in defined["distributed"]


def test_the_image_serves_the_code_location_the_values_file_names() -> None:
    steps = _dockerfile()
    cmd = json.loads(next(rest for instruction, rest in steps if instruction == "CMD"))
    deployment = _deployment()
    assert cmd[:3] == ["dagster", "api", "grpc"]
    assert cmd[cmd.index("-m") + 1] == deployment["dagsterApiGrpcArgs"][1] == k8s_job.__name__
    assert deployment["dagsterApiGrpcArgs"][0] == "-m"
    assert int(cmd[cmd.index("-p") + 1]) == deployment["port"] == 3030
    assert ("EXPOSE", "3030") in steps


def test_dockerignore_keeps_the_code_and_drops_local_state() -> None:
    ignored = {
        line.strip()
        for line in (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv", ".agentomnia"} <= ignored
    needed = {"agentomnia", "agentomnia_assets", "resources", "jobs", "sensors", "trainers", "deploy",
              "pyproject.toml", "README.md"}  # fmt: skip
    assert not needed & ignored
    assert not any(p.startswith(("agentomnia/", "deploy/", "trainers/")) for p in ignored)


# ------------------------------------------------------------------------------------------ helm


def test_values_use_only_keys_the_chart_knows() -> None:
    values = _values()
    assert set(values) <= CHART_TOP_LEVEL, set(values) - CHART_TOP_LEVEL
    assert set(_deployment()) <= USER_DEPLOYMENT, set(_deployment()) - USER_DEPLOYMENT
    launcher = values["runLauncher"]
    assert launcher["type"] == "K8sRunLauncher"
    config = launcher["config"]["k8sRunLauncher"]
    assert set(config) <= K8S_RUN_LAUNCHER, set(config) - K8S_RUN_LAUNCHER
    assert set(config["runK8sConfig"]) <= RUN_K8S_CONFIG
    concurrency = values["concurrency"]
    assert set(concurrency) <= set(CONCURRENCY)
    for key in ("pools", "runs"):
        assert set(concurrency[key]) <= CONCURRENCY[key]  # type: ignore[operator]


def test_values_run_the_image_the_dockerfile_builds_and_the_readme_tags() -> None:
    labels = _labels()
    image = _deployment()["image"]
    assert labels["org.opencontainers.image.version"] == PYPROJECT["project"]["version"] == image["tag"]
    assert image["repository"].rsplit("/", 1)[-1] == labels["org.opencontainers.image.title"] == "agentomnia"
    commands = shell_commands((REPO / "deploy" / "k8s" / "README.md").read_text(encoding="utf-8"))
    build = next(c for c in commands if c[:2] == ["docker", "build"] and "--build-arg" not in c)
    assert build[build.index("-t") + 1] == f"{image['repository']}:{image['tag']}"
    helm = next(c for c in commands if c[:3] == ["helm", "upgrade", "--install"])
    assert helm[helm.index("-f") + 1] == "deploy/k8s/values.yaml"
    dagster = next(d for d in PYPROJECT["project"]["dependencies"] if d.startswith("dagster=="))
    assert helm[helm.index("--version") + 1] == dagster.removeprefix("dagster==")


def test_values_share_one_volume_and_user_with_the_image_and_the_claim() -> None:
    deployment, launcher = _deployment(), _values()["runLauncher"]["config"]["k8sRunLauncher"]
    claim = yaml.safe_load((REPO / "deploy" / "k8s" / "pvc.yaml").read_text(encoding="utf-8"))
    assert claim["kind"] == "PersistentVolumeClaim" and claim["spec"]["accessModes"] == ["ReadWriteMany"]
    env_block = next(
        rest for instruction, rest in _dockerfile() if instruction == "ENV" and "AGENTOMNIA_HOME" in rest
    )
    image_home = re.search(r"AGENTOMNIA_HOME=(\S+)", env_block).group(1)  # type: ignore[union-attr]
    env = {e["name"]: e["value"] for e in deployment["env"]}
    assert env["AGENTOMNIA_HOME"] == image_home
    for spec in (deployment, launcher):
        (volume,) = spec["volumes"]
        (mount,) = spec["volumeMounts"]
        assert volume["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
        assert mount["name"] == volume["name"] and mount["mountPath"] == image_home
    user = int(next(rest for instruction, rest in _dockerfile() if instruction == "USER"))
    for context in (
        deployment["podSecurityContext"],
        launcher["runK8sConfig"]["podSpecConfig"]["securityContext"],
    ):
        assert context["runAsUser"] == context["fsGroup"] == user and context["runAsNonRoot"] is True


def test_values_keep_the_duckdb_pool_limit_of_the_celery_deployment() -> None:
    instance = yaml.safe_load((REPO / "deploy" / "dagster.yaml").read_text(encoding="utf-8"))
    concurrency = _values()["concurrency"]
    assert concurrency["enabled"] is True
    assert concurrency["pools"]["defaultLimit"] == instance["concurrency"]["pools"]["default_limit"] == 1
    assert _values()["postgresql"]["enabled"] is True


# ------------------------------------------------------------------------------------ definitions


def test_the_module_imports_without_dagster_k8s_and_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "dagster_k8s", None)  # an import of it now fails, as where it is absent
    with pytest.raises(k8s_job.MissingK8sIntegration, match=r"`k8s` extra"):
        k8s_job.defs()


def test_the_k8s_job_selects_the_synthesis_assets_and_runs_on_the_k8s_executor(fake_dagster_k8s: Any) -> None:
    from agentomnia_assets.definitions import defs as single_host
    from deploy.celery_job import SegmentLineageResource

    defs = k8s_job.defs()
    job = defs.resolve_job_def(k8s_job.K8S_JOB)
    synthesis = single_host.resolve_job_def("synthesis_job")
    assert job.asset_layer.executable_asset_keys == synthesis.asset_layer.executable_asset_keys
    assert len(set(job.asset_layer.executable_asset_keys)) > 5
    assert job.partitions_def is not None and job.partitions_def == synthesis.partitions_def
    assert job.executor_def.name == k8s_job.EXECUTOR_NAME
    for name in ("synthesis_job", "training_job", "evolution_job", "distributed_round_job"):
        assert defs.resolve_job_def(name).executor_def.name == k8s_job.EXECUTOR_NAME, name
    assert (
        defs.resolve_asset_graph().get_all_asset_keys()
        == single_host.resolve_asset_graph().get_all_asset_keys()
    )
    assert isinstance((defs.resources or {})["lineage"], SegmentLineageResource)


def test_the_executor_settings_fit_dagster_k8s_s_schema(fake_dagster_k8s: Any) -> None:
    job = k8s_job.defs().resolve_job_def(k8s_job.K8S_JOB)
    validate_run_config(job, {})  # raises if EXECUTOR_CONFIG has a key or type the executor rejects
    bad = k8s_job.build_defs(fake_dagster_k8s.k8s_job_executor.configured({"max_pods": 3}, name="bad"))
    with pytest.raises(Exception, match="max_pods"):
        validate_run_config(bad.resolve_job_def(k8s_job.K8S_JOB), {})


# ----------------------------------------------------------------------------------- round launcher


def test_the_round_launcher_s_graphql_fits_the_webserver_schema() -> None:
    from dagster_graphql.schema import create_schema
    from graphql import parse, validate

    schema = create_schema().graphql_schema
    for document in (k8s_round.ADD_PARTITION, k8s_round.LAUNCH_RUN, k8s_round.RUN_STATUS):
        assert [e.message for e in validate(schema, parse(document))] == []
    assert _deployment()["name"] == k8s_round.LOCATION


def test_the_round_launcher_adds_the_partition_launches_and_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    statuses = iter(["STARTED", "SUCCESS"])

    def fake(url: str, query: str, variables: dict[str, Any], timeout_s: float = 60.0) -> dict[str, Any]:
        calls.append((query, variables))
        if query is k8s_round.ADD_PARTITION:
            return {"addDynamicPartition": {"__typename": "DuplicateDynamicPartitionError"}}
        if query is k8s_round.LAUNCH_RUN:
            return {"launchRun": {"__typename": "LaunchRunSuccess", "run": {"runId": "run-1"}}}
        return {"runOrError": {"__typename": "Run", "status": next(statuses)}}

    monkeypatch.setattr(k8s_round, "graphql", fake)
    monkeypatch.setattr(k8s_round.time, "sleep", lambda s: None)
    assert k8s_round.main(["--url", "http://x", "--round", "r3", "--wait"]) == 0
    add, launch = calls[0][1], calls[1][1]["params"]
    assert add == {"repository": {"repositoryLocationName": "agentomnia", "repositoryName": "__repository__"},
                   "partitions": "rounds", "key": "r3"}  # fmt: skip
    assert launch["selector"]["jobName"] == k8s_job.K8S_JOB
    assert launch["executionMetadata"]["tags"] == [{"key": "dagster/partition", "value": "r3"}]
    assert len(calls) == 4  # add, launch, two polls


def test_the_round_launcher_reports_a_failed_launch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def fake(url: str, query: str, variables: dict[str, Any], timeout_s: float = 60.0) -> dict[str, Any]:
        if query is k8s_round.ADD_PARTITION:
            return {"addDynamicPartition": {"__typename": "AddDynamicPartitionSuccess"}}
        return {"launchRun": {"__typename": "RunConfigValidationInvalid", "errors": [{"message": "bad op"}]}}

    monkeypatch.setattr(k8s_round, "graphql", fake)
    assert k8s_round.main(["--url", "http://x", "--round", "r0"]) == 1
    assert "RunConfigValidationInvalid" in capsys.readouterr().err


@pytest.mark.slow
def test_a_webserver_loads_the_location_and_the_launcher_queues_a_round(tmp_path: Path) -> None:
    """The code location as the chart serves it (module loaded by Dagster, `@definitions` resolved,
    named `agentomnia`), driven over HTTP by round.py; runs stay queued (no daemon, no cluster)."""
    import os
    import socket
    import subprocess
    import time
    import urllib.request

    stub = tmp_path / "stub" / "dagster_k8s"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text(
        "from tests.deploy_k8s.k8s_stub import k8s_job_executor as k8s_job_executor\n"
    )
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text("run_coordinator:\n  module: dagster.core.run_coordinator\n"
                                       "  class: QueuedRunCoordinator\ntelemetry:\n  enabled: false\n")  # fmt: skip
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text(yaml.safe_dump({"load_from": [{"python_module": {
        "module_name": k8s_job.__name__, "working_directory": str(REPO), "location_name": k8s_round.LOCATION}}]}))  # fmt: skip
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "DAGSTER_HOME": str(home), "AGENTOMNIA_HOME": str(tmp_path / "home"),
           "PYTHONPATH": os.pathsep.join([str(tmp_path / "stub"), str(REPO)])}  # fmt: skip
    web = Path(sys.executable).parent / "dagster-webserver"
    log = (tmp_path / "web.log").open("w")
    proc = subprocess.Popen([str(web), "-w", str(workspace), "-h", "127.0.0.1", "-p", str(port)],
                            env=env, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                with urllib.request.urlopen(f"{url}/server_info", timeout=5):
                    break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "web.log").read_text()
                time.sleep(1)
        assert k8s_round.add_round(url, "r0") is True
        assert k8s_round.add_round(url, "r0") is False
        run_id = k8s_round.launch(url, "r0")
        status = k8s_round.graphql(url, k8s_round.RUN_STATUS, {"runId": run_id})["runOrError"]
        assert status == {"__typename": "Run", "status": "QUEUED"}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
