"""The OpenAI-compatible backend against a real chat-completions server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentomnia.llm import LLMError, LLMOutputError, OpenAICompatibleLLM
from tests.fixtures.chat_server import CUT, ChatServer, client, serving

SCHEMA = {
    "type": "object",
    "properties": {"domain": {"type": "string"}, "score": {"type": "number"}},
    "required": ["domain", "score"],
    "additionalProperties": False,
}


@pytest.fixture
def server() -> Iterator[ChatServer]:
    yield from serving()


def _llm(server: ChatServer, tmp_path: Path, retries: int = 3) -> OpenAICompatibleLLM:
    return client(server, tmp_path, max_retries=retries)


MESSAGES = [{"role": "user", "content": "classify: refund a damaged parcel"}]


def test_success_is_parsed_validated_and_cached(server: ChatServer, tmp_path: Path) -> None:
    server.script = [(200, '{"domain": "Logistics", "score": 0.9}')]
    llm = _llm(server, tmp_path)
    out = llm.complete(MESSAGES, schema=SCHEMA)
    assert out.data == {"domain": "Logistics", "score": 0.9} and not out.cached
    assert server.requests[0]["response_format"]["json_schema"]["schema"] == SCHEMA
    assert llm.usage.prompt_tokens == 11 and llm.usage.completion_tokens == 7 and llm.usage.requests == 1
    assert len(llm.cache) == 1  # type: ignore[arg-type]


def test_rate_limit_is_retried(server: ChatServer, tmp_path: Path) -> None:
    server.script = [(429, ""), (200, '{"domain": "Travel", "score": 0.5}')]
    out = _llm(server, tmp_path).complete(MESSAGES, schema=SCHEMA)
    assert out.data["domain"] == "Travel"
    assert len(server.requests) == 2


def test_retries_are_bounded(server: ChatServer, tmp_path: Path) -> None:
    server.script = [(429, "")]
    with pytest.raises(LLMError, match="failed 3 times"):
        _llm(server, tmp_path, retries=2).complete(MESSAGES)
    assert len(server.requests) == 3


def test_malformed_json_is_a_clear_error_and_replays_the_same(server: ChatServer, tmp_path: Path) -> None:
    server.script = [(200, '{"domain": "Logistics", "score": ')]
    llm = _llm(server, tmp_path)
    with pytest.raises(LLMOutputError, match="not JSON.*cached as given"):
        llm.complete(MESSAGES, schema=SCHEMA)
    other = [{"role": "user", "content": "another"}]
    server.script = [(200, '{"domain": "Logistics"}')]
    with pytest.raises(LLMOutputError, match="breaks the schema"):
        llm.complete(other, schema=SCHEMA)
    # the model's answers are what they are: a rerun meets the same errors without asking again
    assert len(server.requests) == 2
    fresh = _llm(server, tmp_path)
    with pytest.raises(LLMOutputError, match="not JSON"):
        fresh.complete(MESSAGES, schema=SCHEMA)
    with pytest.raises(LLMOutputError, match="breaks the schema"):
        fresh.complete(other, schema=SCHEMA)
    assert len(server.requests) == 2 and fresh.usage.cache_hits == 2


def test_an_answer_cut_at_the_token_limit_is_refused_even_when_it_parses(
    server: ChatServer, tmp_path: Path
) -> None:
    """A free-text turn or a JSON answer that happens to close before the limit is still cut short: the
    finish reason says so, the ledger counts it invalid, and the cached answer replays the same."""
    server.script = [(CUT, '{"domain": "Logistics", "score": 1}')]
    llm = _llm(server, tmp_path)
    with pytest.raises(LLMOutputError, match="token limit .*cut off"):
        llm.complete(MESSAGES, schema=SCHEMA)
    with pytest.raises(LLMOutputError, match="token limit"):
        llm.complete(
            [{"role": "user", "content": "say hello"}]
        )  # no schema: the text is cut off all the same
    with pytest.raises(LLMOutputError, match="token limit"):
        _llm(server, tmp_path).complete(MESSAGES, schema=SCHEMA)
    assert len(server.requests) == 2


def test_cache_hit_makes_no_request(server: ChatServer, tmp_path: Path) -> None:
    server.script = [(200, '{"domain": "Logistics", "score": 0.9}')]
    _llm(server, tmp_path).complete(MESSAGES, schema=SCHEMA)
    assert len(server.requests) == 1
    fresh = _llm(server, tmp_path)  # a new process would look the same: only the cache file is shared
    again = fresh.complete(MESSAGES, schema=SCHEMA)
    assert again.cached and again.data == {"domain": "Logistics", "score": 0.9}
    assert len(server.requests) == 1
    assert fresh.usage.cache_hits == 1 and fresh.usage.requests == 0
    other = fresh.complete([{"role": "user", "content": "something else"}], schema=SCHEMA)
    assert not other.cached and len(server.requests) == 2


def test_a_server_that_takes_schemas_only_as_json_object_is_answered_that_way(
    server: ChatServer, tmp_path: Path
) -> None:
    """llama.cpp's Python server refuses `response_format: json_schema` (HTTP 500 "Input should be
    'text' or 'json_object'") and takes `{"type": "json_object", "schema": ...}`: the backend learns
    that from the first refusal, keeps the request's own cache key, and asks that way from then on."""
    server.script = [
        (500, "1 validation error: response_format.type Input should be 'text' or 'json_object'"),
        (200, '{"domain": "Logistics", "score": 0.9}'),
    ]
    llm = _llm(server, tmp_path)
    out = llm.complete(MESSAGES, schema=SCHEMA)
    assert out.data == {"domain": "Logistics", "score": 0.9}
    first, second = server.requests
    assert first["response_format"]["type"] == "json_schema"
    assert second["response_format"] == {"type": "json_object", "schema": SCHEMA}
    llm.complete([{"role": "user", "content": "another"}], schema=SCHEMA)
    assert server.requests[2]["response_format"]["type"] == "json_object"  # no refusal again
    # the cache holds the answer under the request as asked: a fresh backend replays it without a call
    again = _llm(server, tmp_path).complete(MESSAGES, schema=SCHEMA)
    assert again.cached and len(server.requests) == 3
    # a plain server error is no refusal of the format: it is retried and then reported
    server.script = [(500, "out of memory")]
    with pytest.raises(LLMError, match="failed"):
        _llm(server, tmp_path, retries=1).complete([{"role": "user", "content": "third"}], schema=SCHEMA)
