"""Settings shared by the engine, the Dagster layer and the CLI.

Everything is read from environment variables with safe offline defaults, so a fresh clone runs
without configuration: `AGENTOMNIA_HOME` (default `./.agentomnia`) holds all state, and the
proposer mode is `offline` unless `AGENTOMNIA_MODE=llm` selects an OpenAI-compatible endpoint.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Mode = Literal["offline", "llm"]


class LLMSettings(BaseModel):
    """Where the OpenAI-compatible endpoint is and how hard to push it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str = "http://127.0.0.1:8000/v1"
    # Several endpoints serving the same model (replicas, judge servers): requests are routed over them
    # by shared prefix and load (`agentomnia.llm.router`). Empty: `base_url` alone.
    base_urls: tuple[str, ...] = ()
    model: str = "qwen3-8b"
    api_key_env: str = Field(default="OPENAI_API_KEY", description="name of the variable holding the key")
    concurrency: int = Field(default=8, ge=1)
    max_retries: int = Field(default=4, ge=0)
    timeout_s: float = Field(default=120.0, gt=0)
    backoff_s: float = Field(default=1.0, ge=0)
    # the longest answer a stage gets when it names no limit of its own (None: the server's limit)
    max_tokens: int | None = Field(default=4096, ge=1)

    @classmethod
    def from_env(cls) -> LLMSettings:
        env = os.environ
        return cls(
            base_url=env.get("AGENTOMNIA_LLM_BASE_URL", cls.model_fields["base_url"].default),
            base_urls=tuple(
                u.strip() for u in env.get("AGENTOMNIA_LLM_BASE_URLS", "").split(",") if u.strip()
            ),
            model=env.get("AGENTOMNIA_LLM_MODEL", cls.model_fields["model"].default),
            api_key_env=env.get("AGENTOMNIA_LLM_API_KEY_ENV", "OPENAI_API_KEY"),
            concurrency=int(env.get("AGENTOMNIA_LLM_CONCURRENCY", "8")),
            max_tokens=int(env.get("AGENTOMNIA_LLM_MAX_TOKENS", "4096")) or None,
            timeout_s=float(env.get("AGENTOMNIA_LLM_TIMEOUT_S", "120")),
            max_retries=int(env.get("AGENTOMNIA_LLM_MAX_RETRIES", "4")),
        )


def home() -> Path:
    """The root of all platform state; created on first use."""
    path = Path(os.environ.get("AGENTOMNIA_HOME", ".agentomnia")).expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def mode() -> Mode:
    value = os.environ.get("AGENTOMNIA_MODE", "offline").strip().lower()
    if value not in ("offline", "llm"):
        raise ValueError(f"AGENTOMNIA_MODE={value!r} is not a mode; use 'offline' (default) or 'llm'")
    return value  # type: ignore[return-value]
