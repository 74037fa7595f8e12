"""OpenAI-compatible chat backend (vLLM, SGLang, hosted APIs) with retries, a concurrency
limit, token accounting, schema-checked JSON output and a request-hash cache.

The cache is consulted before any request and holds every answer a server gave, well-formed or
not: its checks run again when it is replayed, so a rerun with the same inputs replays the same
answers and fails the same way where one was malformed, without asking again. Transport failures
(timeouts, HTTP errors) are not answers and are never cached.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema
import openai

from agentomnia.config import LLMSettings
from agentomnia.llm.cache import ResponseCache, request_hash
from agentomnia.llm.ledger import Ledger
from agentomnia.llm.protocol import LLMError, LLMOutputError, LLMResponse, Message, Usage

_RETRYABLE = (
    openai.RateLimitError,
    openai.APIConnectionError,
    openai.APITimeoutError,
    openai.InternalServerError,
)


class OpenAICompatibleLLM:
    def __init__(
        self,
        settings: LLMSettings,
        cache: ResponseCache | None = None,
        *,
        api_key: str | None = None,
        ledger: Ledger | None = None,
    ) -> None:
        self.settings = settings
        self.ledger = ledger if ledger is not None else Ledger()
        self.model = settings.model
        self.cache = cache
        key = api_key if api_key is not None else os.environ.get(settings.api_key_env, "")
        # The SDK's own retries are off: ours count attempts, honour backoff and keep usage honest.
        self._client = openai.OpenAI(
            base_url=settings.base_url, api_key=key or "unused", max_retries=0, timeout=settings.timeout_s
        )
        self._slots = threading.BoundedSemaphore(settings.concurrency)
        self._usage = Usage()
        self._usage_lock = threading.Lock()
        # Servers that take a schema only as `{"type": "json_object", "schema": ...}` (llama.cpp's
        # Python server refuses `json_schema`): learned from the first refusal, then used throughout.
        self._json_object = False

    @property
    def usage(self) -> Usage:
        with self._usage_lock:
            return self._usage.model_copy()

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
    ) -> LLMResponse:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": temperature,
        }
        if max_tokens is None:
            max_tokens = self.settings.max_tokens  # no answer runs on without end
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        if tools:
            request["tools"] = [dict(t) for t in tools]
        if seed is not None:  # a sampled answer that repeats: attempt i of a pass@K always draws the same
            request["seed"] = seed
        if schema is not None:
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": dict(schema), "strict": True},
            }
        key = request_hash(request)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            text, p_tok, c_tok = hit
            self._account(Usage(cache_hits=1))
            message = json.loads(text)
            return self._response(
                schema_name,
                message,
                schema,
                key,
                Usage(prompt_tokens=p_tok, completion_tokens=c_tok),
                cached=True,
            )

        try:
            completion = self._send(request)
        except LLMError:
            self.ledger.call(schema_name, "failed")
            raise
        choice = completion.choices[0].message
        message = {
            "content": choice.content or "",
            "tool_calls": [tc.model_dump(mode="json") for tc in (choice.tool_calls or [])],
        }
        if getattr(completion.choices[0], "finish_reason", None) == "length":
            message["finish_reason"] = "length"  # cached with the answer, so a replay is cut off too
        usage = Usage(
            prompt_tokens=getattr(completion.usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(completion.usage, "completion_tokens", 0) or 0,
            requests=1,
        )
        self._account(usage)
        if self.cache is not None:
            self.cache.put(
                key,
                request,
                json.dumps(message, sort_keys=True),
                usage.prompt_tokens,
                usage.completion_tokens,
            )
        return self._response(schema_name, message, schema, key, usage, cached=False)

    def _shaped(self, request: dict[str, Any]) -> dict[str, Any]:
        """The request as this endpoint takes it (the cache key is always the request's own)."""
        fmt = request.get("response_format")
        if self._json_object and isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            return {
                **request,
                "response_format": {"type": "json_object", "schema": fmt["json_schema"]["schema"]},
            }
        return request

    def _send(self, request: dict[str, Any]) -> Any:
        attempts = self.settings.max_retries + 1
        last: Exception | None = None
        attempt = 0
        while attempt < attempts:
            try:
                with self._slots:
                    return self._client.chat.completions.create(**self._shaped(request))
            except openai.APIStatusError as exc:
                if not self._json_object and _refuses_json_schema(request, exc):
                    self._json_object = True  # resend in the form it takes; that costs no attempt
                    continue
                if not isinstance(exc, _RETRYABLE):
                    fix = (
                        "serve the model with a longer context (vLLM --max-model-len, llama.cpp --n_ctx) "
                        "or lower AGENTOMNIA_LLM_MAX_TOKENS"
                        if "context" in str(exc.message).lower()
                        else "check AGENTOMNIA_LLM_BASE_URL, AGENTOMNIA_LLM_MODEL and the API key variable"
                    )
                    raise LLMError(
                        f"{self.settings.base_url} answered HTTP {exc.status_code} for model {self.model!r}: "
                        f"{exc.message}; {fix}"
                    ) from exc
                last = exc
            except _RETRYABLE as exc:
                last = exc
            attempt += 1
            if attempt < attempts:
                time.sleep(self.settings.backoff_s * (2 ** (attempt - 1)) * (0.5 + random.random()))
        raise LLMError(
            f"{self.settings.base_url} failed {attempts} times for model {self.model!r} "
            f"(last: {type(last).__name__}: {last}); check the endpoint is up or raise max_retries"
        ) from last

    def _response(
        self,
        purpose: str,
        message: dict[str, Any],
        schema: Mapping[str, Any] | None,
        key: str,
        usage: Usage,
        *,
        cached: bool,
    ) -> LLMResponse:
        """The answer checked against its schema, counted on the ledger as valid or invalid."""
        tokens = {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens}
        text = message.get("content") or ""
        data = None
        if message.get("finish_reason") == "length":
            self.ledger.call(purpose, "invalid", cached=cached, **tokens)
            raise LLMOutputError(
                f"model {self.model!r} stopped at the token limit ({usage.completion_tokens} tokens), so its "
                f"answer is cut off: {text[-120:]!r}; raise AGENTOMNIA_LLM_MAX_TOKENS or ask for less; the "
                "answer is cached as given, so a rerun replays it"
            )
        if schema is not None:
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                self.ledger.call(purpose, "invalid", cached=cached, **tokens)
                raise LLMOutputError(
                    f"model {self.model!r} returned text that is not JSON ({exc.msg} at char {exc.pos}): "
                    f"{text[:200]!r}; use an endpoint that constrains output to a schema (`agentomnia llm check`); "
                    "the answer is cached as given, so a rerun replays it"
                ) from exc
            try:
                jsonschema.validate(data, dict(schema))
            except jsonschema.ValidationError as exc:
                self.ledger.call(purpose, "invalid", cached=cached, **tokens)
                where = "/".join(str(p) for p in exc.absolute_path) or "<root>"
                raise LLMOutputError(
                    f"model {self.model!r} returned JSON that breaks the schema at {where}: {exc.message}; "
                    "the answer is cached as given, so a rerun replays it"
                ) from exc
        self.ledger.call(purpose, "valid", cached=cached, **tokens)
        return LLMResponse(
            text=text,
            data=data,
            tool_calls=message.get("tool_calls") or [],
            usage=usage,
            cached=cached,
            request_hash=key,
        )

    def _account(self, usage: Usage) -> None:
        with self._usage_lock:
            self._usage.add(usage)


def _refuses_json_schema(request: Mapping[str, Any], exc: openai.APIStatusError) -> bool:
    """Whether an error says the endpoint does not take `response_format: json_schema` (llama.cpp's
    server answers 500 "Input should be 'text' or 'json_object'")."""
    fmt = request.get("response_format")
    if (
        not isinstance(fmt, dict)
        or fmt.get("type") != "json_schema"
        or exc.status_code not in (400, 422, 500)
    ):
        return False
    text = f"{exc.message} {exc.body}".lower()
    return "json_object" in text or ("response_format" in text and "json_schema" in text)
