"""The OpenAI-compatible backend against a real chat-completions server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentomnia.config import LLMSettings
from agentomnia.llm import LLMError, LLMOutputError, OpenAICompatibleLLM, ResponseCache

SCHEMA = {
    "type": "object",
    "properties": {"domain": {"type": "string"}, "score": {"type": "number"}},
    "required": ["domain", "score"],
    "additionalProperties": False,
}


class ChatServer:
    """Answers /v1/chat/completions from a script of (status, content) pairs, then repeats the last."""

    def __init__(self) -> None:
        self.script: list[tuple[int, str]] = []
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                status, content = server.script.pop(0) if len(server.script) > 1 else server.script[0]
                if status != 200:
                    payload: dict[str, Any] = {"error": {"message": "slow down", "type": "rate_limit"}}
                else:
                    payload = {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": content},
                            }
                        ],
                        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
                    }
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: object) -> None:
                """Keep the test output free of request logs."""

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture
def server() -> Iterator[ChatServer]:
    s = ChatServer()
    yield s
    s.httpd.shutdown()


def _llm(server: ChatServer, tmp_path: Path, retries: int = 3) -> OpenAICompatibleLLM:
    settings = LLMSettings(
        base_url=server.url, model="tiny", max_retries=retries, backoff_s=0.01, timeout_s=10
    )
    return OpenAICompatibleLLM(settings, ResponseCache(tmp_path / "cache.duckdb"), api_key="test-key")


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


def test_malformed_json_is_a_clear_error_and_not_cached(server: ChatServer, tmp_path: Path) -> None:
    server.script = [(200, '{"domain": "Logistics", "score": ')]
    llm = _llm(server, tmp_path)
    with pytest.raises(LLMOutputError, match="not JSON.*not cached"):
        llm.complete(MESSAGES, schema=SCHEMA)
    server.script = [(200, '{"domain": "Logistics"}')]
    with pytest.raises(LLMOutputError, match="breaks the schema"):
        llm.complete(MESSAGES, schema=SCHEMA)
    assert len(llm.cache) == 0  # type: ignore[arg-type]


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
