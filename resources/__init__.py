"""Dagster resources: thin configurable wrappers that hand engine components to assets.

Each resource reads its defaults from the environment at use time (AGENTOMNIA_HOME,
AGENTOMNIA_MODE, AGENTOMNIA_LLM_*), so the same definitions run on a laptop and a cluster with
nothing but environment variables changed.
"""

from __future__ import annotations

from pathlib import Path

from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field, PrivateAttr

from agentomnia import config
from agentomnia.config import LLMSettings
from agentomnia.embeddings import Embedder, MiniLMEmbedder
from agentomnia.lineage import LineageStore
from agentomnia.llm import LLM, make_llm
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.storage import Storage


class StorageResource(ConfigurableResource):
    """Paths of one platform home (`$AGENTOMNIA_HOME` unless `home` is set)."""

    home: str = Field(default="", description="platform home; empty means $AGENTOMNIA_HOME or ./.agentomnia")

    def get(self) -> Storage:
        return Storage(Path(self.home) if self.home else None)


class LineageResource(ConfigurableResource):
    """The DuckDB lineage store of the platform home."""

    home: str = Field(default="", description="platform home; empty means $AGENTOMNIA_HOME or ./.agentomnia")
    timeout_s: float = Field(default=60.0, description="how long a write waits for the file lock")

    def get(self) -> LineageStore:
        storage = Storage(Path(self.home) if self.home else None)
        return LineageStore(storage.lineage_path, timeout_s=self.timeout_s)


class LLMResource(ConfigurableResource):
    """An OpenAI-compatible endpoint in `llm` mode; None (deterministic proposers) in `offline` mode."""

    mode: str = Field(default="", description="offline | llm; empty means $AGENTOMNIA_MODE (default offline)")
    base_url: str = Field(default="", description="empty means $AGENTOMNIA_LLM_BASE_URL")
    model: str = Field(default="", description="empty means $AGENTOMNIA_LLM_MODEL")
    api_key_env: str = Field(
        default="OPENAI_API_KEY", description="name of the variable that holds the API key"
    )
    concurrency: int = Field(default=8, ge=1)
    max_retries: int = Field(default=4, ge=0)
    home: str = Field(default="", description="where the response cache lives; empty means $AGENTOMNIA_HOME")

    def resolved_mode(self) -> config.Mode:
        if not self.mode:
            return config.mode()
        if self.mode not in ("offline", "llm"):
            raise ValueError(f"LLMResource.mode={self.mode!r}; use 'offline' or 'llm'")
        return self.mode  # type: ignore[return-value]

    def get(self) -> LLM | None:
        env = LLMSettings.from_env()
        settings = env.model_copy(
            update={
                "base_url": self.base_url or env.base_url,
                "model": self.model or env.model,
                "api_key_env": self.api_key_env,
                "concurrency": self.concurrency,
                "max_retries": self.max_retries,
            }
        )
        storage = Storage(Path(self.home) if self.home else None)
        return make_llm(self.resolved_mode(), settings, storage.llm_cache_path)


_EMBEDDERS: dict[str, MiniLMEmbedder] = {}


class EmbedderResource(ConfigurableResource):
    """The packaged MiniLM sentence embedder (offline), with a vector cache under the platform home."""

    home: str = Field(default="", description="platform home; empty means $AGENTOMNIA_HOME or ./.agentomnia")
    model_path: str = Field(
        default="", description="a local sentence-transformers folder; empty means the packaged MiniLM"
    )

    def get(self) -> Embedder:
        cache = Storage(Path(self.home) if self.home else None).root / "cache" / "embeddings"
        key = f"{self.model_path}::{cache}"
        if key not in _EMBEDDERS:
            _EMBEDDERS[key] = MiniLMEmbedder(self.model_path or None, cache_dir=cache)
        return _EMBEDDERS[key]


class SandboxResource(ConfigurableResource):
    """The worker pool every piece of generated code runs in; started per run, closed when it ends."""

    workers: int = Field(default=2, ge=1, description="worker processes (one per core is a good start)")
    call_timeout_s: float = Field(default=5.0, gt=0, description="wall-clock budget of one tool call")
    cpu_seconds: int = Field(
        default=10, ge=1, description="CPU budget of one request; the worker is replaced past it"
    )
    memory_mb: int = Field(default=1024, ge=256, description="address-space limit per worker")
    reply_spin_us: float = Field(
        default=50.0,
        ge=0,
        description="how long a lone tool call watches for its reply before sleeping (0: never)",
    )

    _sandbox: Sandbox | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        self._sandbox = None

    def get(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = Sandbox(
                self.workers,
                call_timeout_s=self.call_timeout_s,
                cpu_seconds=self.cpu_seconds,
                memory_mb=self.memory_mb,
                reply_spin_us=self.reply_spin_us,
            )
        return self._sandbox

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None


def default_resources() -> dict[str, ConfigurableResource]:
    return {
        "storage": StorageResource(),
        "lineage": LineageResource(),
        "llm": LLMResource(),
        "embedder": EmbedderResource(),
        "sandbox": SandboxResource(),
    }
