"""LLM protocol, the OpenAI-compatible backend and its response cache.

`make_llm(mode, settings, cache_path)` is the one place that decides whether a model is used:
offline mode returns None and every stage falls back to its deterministic proposer.
"""

from __future__ import annotations

from pathlib import Path

from agentomnia.config import LLMSettings, Mode
from agentomnia.llm.cache import ResponseCache, request_hash
from agentomnia.llm.openai_backend import OpenAICompatibleLLM
from agentomnia.llm.protocol import LLM, LLMError, LLMOutputError, LLMResponse, Usage


def make_llm(mode: Mode, settings: LLMSettings, cache_path: Path | None) -> LLM | None:
    if mode == "offline":
        return None
    return OpenAICompatibleLLM(settings, ResponseCache(cache_path) if cache_path is not None else None)


__all__ = [
    "LLM",
    "LLMError",
    "LLMOutputError",
    "LLMResponse",
    "OpenAICompatibleLLM",
    "ResponseCache",
    "Usage",
    "make_llm",
    "request_hash",
]
