"""The Dagster resources build their engine objects from config, falling back to the environment."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import build_init_resource_context

from agentomnia.lineage import LineageStore
from agentomnia.llm import OpenAICompatibleLLM
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.storage import Storage
from resources import (
    EmbedderResource,
    LineageResource,
    LLMResource,
    SandboxResource,
    StorageResource,
    default_resources,
)


def test_storage_uses_its_home_or_the_environments(home: Path, tmp_path: Path) -> None:
    assert StorageResource().get().root == home.resolve()
    explicit = StorageResource(home=str(tmp_path / "elsewhere")).get()
    assert isinstance(explicit, Storage) and explicit.root == (tmp_path / "elsewhere").resolve()
    assert explicit.root.is_dir()


def test_lineage_opens_the_store_of_its_home_with_its_lock_timeout(home: Path) -> None:
    store = LineageResource(timeout_s=3.0).get()
    assert isinstance(store, LineageStore)
    assert Path(store.path).resolve() == Storage(home).lineage_path.resolve()


def test_llm_is_none_offline_and_an_endpoint_client_in_llm_mode(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTOMNIA_MODE", raising=False)
    assert LLMResource().resolved_mode() == "offline" and LLMResource().get() is None
    monkeypatch.setenv("AGENTOMNIA_MODE", "llm")
    monkeypatch.setenv("AGENTOMNIA_LLM_MODEL", "from-env")
    assert LLMResource(mode="offline").get() is None  # config beats the environment
    client = LLMResource(base_url="http://127.0.0.1:9/v1", concurrency=2, max_retries=1).get()
    assert isinstance(client, OpenAICompatibleLLM)
    assert client.model == "from-env" and client.settings.base_url == "http://127.0.0.1:9/v1"
    assert (client.settings.concurrency, client.settings.max_retries) == (2, 1)
    assert client.cache is not None  # responses are cached under the platform home
    with pytest.raises(ValueError, match="use 'offline' or 'llm'"):
        LLMResource(mode="online").resolved_mode()


def test_sandbox_is_built_from_config_once_per_run_and_closed_after(home: Path) -> None:
    resource = SandboxResource(workers=1, call_timeout_s=2.5, cpu_seconds=3, memory_mb=512)
    context = build_init_resource_context()
    resource.setup_for_execution(context)
    box = resource.get()
    try:
        assert isinstance(box, Sandbox) and resource.get() is box
        assert (box.config.workers, box.config.call_timeout_s, box.config.cpu_seconds, box.config.memory_mb) == (
            1, 2.5, 3, 512,
        )  # fmt: skip
    finally:
        resource.teardown_after_execution(context)
    assert resource.get() is not box  # the next run gets a fresh pool
    resource.teardown_after_execution(context)


def test_defaults_name_every_resource_the_assets_ask_for() -> None:
    resources = default_resources()
    assert set(resources) == {"storage", "lineage", "llm", "embedder", "sandbox"}
    assert isinstance(resources["embedder"], EmbedderResource) and resources["embedder"].model_path == ""
    with pytest.raises(Exception, match="workers"):
        SandboxResource(workers=0)
