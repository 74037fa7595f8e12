"""A stand-in for `dagster_k8s` (not installed here): `k8s_job_executor` with the real one's name and
config schema (dagster-k8s 0.29: DagsterK8sJobConfig.config_type_job() plus the executor's own keys),
so definitions that use it build and their executor settings validate. It never executes a step."""

from __future__ import annotations

from typing import Any

from dagster import Field, IntSource, Permissive, StringSource, executor

_LIST = Field(list, is_required=False)
K8S_EXECUTOR_SCHEMA = {
    "job_image": Field(StringSource, is_required=False),
    "image_pull_policy": Field(StringSource, is_required=False),
    "image_pull_secrets": _LIST,
    "service_account_name": Field(StringSource, is_required=False),
    "env_config_maps": _LIST,
    "env_secrets": _LIST,
    "env_vars": _LIST,
    "volume_mounts": _LIST,
    "volumes": _LIST,
    "labels": Field(dict, is_required=False),
    "resources": Field(Permissive(), is_required=False),
    "scheduler_name": Field(StringSource, is_required=False),
    "security_context": Field(dict, is_required=False),
    "job_namespace": Field(StringSource, is_required=False),
    "retries": Field(Permissive(), is_required=False),
    "max_concurrent": Field(IntSource, is_required=False),
    "tag_concurrency_limits": _LIST,
}


@executor(name="k8s", config_schema=K8S_EXECUTOR_SCHEMA)
def k8s_job_executor(init_context: Any) -> Any:
    raise NotImplementedError("a stand-in for dagster-k8s: definitions are built and validated, never run")
