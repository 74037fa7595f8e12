"""`agentomnia llm check` against endpoints that do and do not give what llm mode needs."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from agentomnia.cli import main
from agentomnia.config import LLMSettings
from agentomnia.llm.check import check_endpoint
from tests.fixtures.chat_server import ChatServer, serving

CITY = json.dumps({"city": "Lisbon", "population_millions": 0.55, "coastal": True})
CALL = {
    "content": None,
    "tool_calls": [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_order", "arguments": '{"order_id": "ORD-1042"}'},
        }
    ],
}


@pytest.fixture
def server() -> Iterator[ChatServer]:
    yield from serving()


def _settings(url: str, model: str = "m") -> LLMSettings:
    return LLMSettings(base_url=url, model=model, timeout_s=10)


def test_an_endpoint_that_gives_everything_is_ready(
    server: ChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.models = ["m", "other"]
    server.script = [(200, "Apple, pear, plum.")] * 3 + [(200, CITY), (200, CALL)]
    assert main(["llm", "check", "--json", "--base-url", server.url, "--model", "m"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True
    assert [p["name"] for p in report["probes"]] == [
        "reachable",
        "model listed",
        "chat",
        "JSON schema",
        "tool calls",
    ]
    assert "json_schema" in report["probes"][3]["detail"] and "ORD-1042" in report["probes"][4]["detail"]
    assert report["latency_s_median"] > 0 and report["completion_tokens_per_s"] > 0
    # the probes asked for what the stages ask for: a schema'd answer and an agent turn with tools
    assert server.requests[3]["response_format"]["type"] == "json_schema"
    assert server.requests[4]["tools"][0]["function"]["name"] == "get_order"


def test_what_is_missing_is_named_with_its_fix(
    server: ChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.models = ["qwen3-8b"]
    server.script = [(200, "Sure! Here you go.")]  # a model that only ever chats
    assert main(["llm", "check", "--base-url", server.url, "--model", "m"]) == 1
    text = capsys.readouterr().out
    assert "NOT READY" in text
    report = check_endpoint(_settings(server.url))
    probes = {p.name: p for p in report.probes}
    assert probes["reachable"].ok and probes["chat"].ok
    assert not probes["model listed"].ok and "'qwen3-8b'" in probes["model listed"].detail
    assert "AGENTOMNIA_LLM_MODEL" in probes["model listed"].fix
    assert not probes["JSON schema"].ok and "not JSON" in probes["JSON schema"].detail
    assert not probes["tool calls"].ok and "--tool-call-parser" in probes["tool calls"].fix
    assert not report.ok


def test_llama_cpp_json_object_form_counts_as_honoured(server: ChatServer) -> None:
    server.models = ["m"]
    refusal = "1 validation error: response_format.type Input should be 'text' or 'json_object'"
    server.script = [(200, "Hello there.")] * 3 + [(500, refusal), (200, CITY), (200, CALL)]
    report = check_endpoint(_settings(server.url))
    probe = next(p for p in report.probes if p.name == "JSON schema")
    assert probe.ok and "json_object" in probe.detail, probe
    assert server.requests[4]["response_format"]["type"] == "json_object"
    assert report.ok


def test_an_endpoint_that_is_not_there(capsys: pytest.CaptureFixture[str]) -> None:
    report = check_endpoint(_settings("http://127.0.0.1:9/v1"))
    assert not report.ok and [p.name for p in report.probes] == ["reachable"]
    assert "AGENTOMNIA_LLM_BASE_URL" in report.probes[0].fix
    assert main(["llm", "check", "--json", "--base-url", "http://127.0.0.1:9/v1"]) == 1
    assert json.loads(capsys.readouterr().out)["ok"] is False
