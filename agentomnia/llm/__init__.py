"""LLM protocol, the OpenAI-compatible backend and its response cache.

`make_llm(mode, settings, cache_path)` is the one place that decides whether a model is used:
offline mode returns None and every stage falls back to its deterministic proposer. Several endpoints
(`AGENTOMNIA_LLM_BASE_URLS`) are used as one, routed by shared prefix and load (`RoutedLLM`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentomnia.config import LLMSettings, Mode
from agentomnia.llm.cache import ResponseCache, request_hash
from agentomnia.llm.ledger import Ledger
from agentomnia.llm.protocol import LLM, LLMError, LLMOutputError, LLMResponse, Usage
from agentomnia.llm.router import RoutedLLM

if TYPE_CHECKING:
    from agentomnia.llm.openai_backend import OpenAICompatibleLLM


def __getattr__(name: str) -> Any:
    # The OpenAI client takes most of a second to import; offline commands never need it.
    if name == "OpenAICompatibleLLM":
        from agentomnia.llm.openai_backend import OpenAICompatibleLLM

        return OpenAICompatibleLLM
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_llm(
    mode: Mode, settings: LLMSettings, cache_path: Path | None, *, ledger: Ledger | None = None
) -> LLM | None:
    """The model handle of `mode` (None offline); `ledger` counts its calls with another handle's."""
    if mode == "offline":
        return None
    from agentomnia.llm.openai_backend import OpenAICompatibleLLM

    cache = ResponseCache(cache_path) if cache_path is not None else None
    urls = list(dict.fromkeys(settings.base_urls))
    if len(urls) < 2:
        return OpenAICompatibleLLM(
            settings.model_copy(update={"base_url": urls[0]}) if urls else settings, cache, ledger=ledger
        )
    # one cache and one ledger for all: a request's key names the model and the request, not the endpoint
    ledger = ledger or Ledger()
    return RoutedLLM(
        [OpenAICompatibleLLM(settings.model_copy(update={"base_url": u}), cache, ledger=ledger) for u in urls]
    )


__all__ = [
    "LLM",
    "LLMError",
    "LLMOutputError",
    "LLMResponse",
    "Ledger",
    "OpenAICompatibleLLM",
    "ResponseCache",
    "RoutedLLM",
    "Usage",
    "make_llm",
    "request_hash",
]
