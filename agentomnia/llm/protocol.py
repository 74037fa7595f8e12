"""The one seam every proposing step goes through when the platform runs in `llm` mode.

Stages ask for a completion, optionally constrained by a JSON schema, and get back text,
the parsed JSON (validated against the schema) and token usage. In `offline` mode no LLM exists
and stages use their deterministic proposers; both produce the same record types.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field


class Usage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    cache_hits: int = 0

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.requests += other.requests
        self.cache_hits += other.cache_hits


class LLMResponse(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    data: Any = None  # parsed JSON when a schema was given
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)  # OpenAI format, arguments as JSON text
    usage: Usage = Field(default_factory=Usage)
    cached: bool = False
    request_hash: str


class LLMError(RuntimeError):
    """The endpoint failed after all retries, or the request could not be made."""


class LLMOutputError(LLMError):
    """The endpoint answered, but not with what the schema asked for. Nothing is cached."""


Message = Mapping[str, Any]


class LLM(Protocol):
    """A chat model behind an OpenAI-compatible API."""

    model: str

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: Mapping[str, Any] | None = None,
        schema_name: str = "output",
        temperature: float = 0.0,
        max_tokens: int | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        seed: int | None = None,
    ) -> LLMResponse: ...

    @property
    def usage(self) -> Usage: ...


def list_answer(key: str, properties: Mapping[str, Any], *, max_items: int) -> dict[str, Any]:
    """The JSON schema of an answer that is a list of items under `key`, each an object with exactly
    `properties`, all required (the shape a proposing stage asks for: edges, attributes, operations)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [key],
        "properties": {
            key: {
                "type": "array",
                "maxItems": max_items,
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": list(properties),
                    "properties": dict(properties),
                },
            }
        },
    }
