"""The platform's definitions on Kubernetes: every step a Kubernetes Job running the project's image.

The code location the Helm chart's user deployment serves (`dagster api grpc -m deploy.k8s.k8s_job`,
see deploy/k8s/values.yaml). It is the many-machines location of deploy/celery_job.py — same
assets, checks, jobs, schedules, sensors and segment lineage (steps run in separate pods, so the
DuckDB lineage file cannot be shared) — with `dagster_k8s.k8s_job_executor` instead of Celery, plus
`k8s_synthesis_job`: the asset selection of `synthesis_job`, named so a round on the cluster is
easy to tell apart in the UI.

dagster-k8s is imported only when the definitions are built (`@definitions`), so this module
imports, type-checks and is tested on a machine without it; the `k8s` extra installs it, and the
project image has it.
"""

from __future__ import annotations

from typing import Any

from dagster import Definitions, ExecutorDefinition, define_asset_job, definitions

from deploy import celery_job as many_hosts
from jobs import synthesis_job

K8S_JOB = "k8s_synthesis_job"
EXECUTOR_NAME = "k8s_steps"
# run config of the executor (dagster-k8s's schema). Pod resources, volumes and environment come from
# the run launcher in values.yaml, which also applies them to every step's pod.
EXECUTOR_CONFIG: dict[str, Any] = {
    # step pods of one run at a time; the `duckdb` pool still admits one DuckDB-writing step cluster-wide
    "max_concurrent": 8,
    "labels": {"app.kubernetes.io/part-of": "agentomnia"},
}


class MissingK8sIntegration(ImportError):
    """dagster-k8s is not installed where the Kubernetes definitions are being built."""


def k8s_executor() -> ExecutorDefinition:
    """`dagster_k8s.k8s_job_executor` with EXECUTOR_CONFIG; needs the `k8s` extra."""
    try:
        from dagster_k8s import k8s_job_executor
    except ImportError as exc:
        raise MissingK8sIntegration(
            "deploy.k8s.k8s_job needs dagster-k8s: install the project with its `k8s` extra "
            "(pip install '.[distributed,k8s]'), as the image in the repository's Dockerfile does"
        ) from exc
    executor: ExecutorDefinition = k8s_job_executor.configured(EXECUTOR_CONFIG, name=EXECUTOR_NAME)
    return executor


def build_defs(executor: ExecutorDefinition | None = None) -> Definitions:
    """deploy/celery_job.py's definitions on `executor` (default: the Kubernetes one) + k8s_synthesis_job."""
    steps = executor if executor is not None else k8s_executor()
    base = many_hosts.defs
    k8s_round = define_asset_job(
        K8S_JOB,
        selection=synthesis_job.selection,
        executor_def=steps,
        description=(
            "One round of synthesis, each step a Kubernetes Job running the project's image: PRDs in force -> "
            "seeds -> environments -> tasks -> trajectories -> SFT and RL datasets."
        ),
    )
    return Definitions(
        assets=base.assets,
        asset_checks=base.asset_checks,
        jobs=[*(base.jobs or []), k8s_round],
        schedules=base.schedules,
        sensors=base.sensors,
        resources=base.resources,
        executor=steps,
    )


@definitions
def defs() -> Definitions:
    """What `dagster api grpc -m deploy.k8s.k8s_job` serves."""
    return build_defs()
