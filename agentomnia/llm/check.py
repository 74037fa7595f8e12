"""Probe a configured OpenAI-compatible endpoint before a run leans on it (`agentomnia llm check`).

Each probe asks for one thing every llm-mode stage needs and, where it fails, says what to change:
the endpoint answers, the model is listed, JSON output follows a schema (natively as `json_schema`,
or as llama.cpp's `json_object` form), tool calls come back parsed, and how fast answers arrive.
Nothing is cached: a check measures the live endpoint.
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

import openai
from pydantic import BaseModel

from agentomnia.config import LLMSettings
from agentomnia.llm.openai_backend import OpenAICompatibleLLM
from agentomnia.llm.protocol import LLMError, LLMOutputError

_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "population_millions": {"type": "number"},
        "coastal": {"type": "boolean"},
    },
    "required": ["city", "population_millions", "coastal"],
}
_TOOL = {
    "type": "function",
    "function": {
        "name": "get_order",
        "description": "Look up one order by its id.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string", "description": "the order's id, e.g. ORD-1042"}},
            "required": ["order_id"],
        },
    },
}


class Probe(BaseModel):
    name: str
    ok: bool
    detail: str
    fix: str = ""
    seconds: float = 0.0


class CheckReport(BaseModel):
    base_url: str
    model: str
    ok: bool
    probes: list[Probe]
    latency_s_median: float | None = None
    completion_tokens_per_s: float | None = None

    def render(self) -> str:
        lines = [f"{self.base_url}  model {self.model!r}: {'ready' if self.ok else 'NOT READY'}"]
        for p in self.probes:
            lines.append(f"  [{'ok' if p.ok else 'FAIL'}] {p.name}: {p.detail}")
            if p.fix:
                lines.append(f"         fix: {p.fix}")
        if self.latency_s_median is not None:
            lines.append(
                f"  latency (median of short answers): {self.latency_s_median:.2f} s; "
                f"{self.completion_tokens_per_s or 0:.1f} completion tokens/s"
            )
        return "\n".join(lines)


def check_endpoint(
    settings: LLMSettings, *, api_key: str | None = None, samples: int = 3, max_tokens: int = 48
) -> CheckReport:
    """Run every probe against `settings.base_url`; later probes still run when an earlier one fails,
    except that nothing is asked of an endpoint that cannot be reached."""
    settings = settings.model_copy(update={"max_retries": 0})
    llm = OpenAICompatibleLLM(settings, None, api_key=api_key)
    probes = [_reachable(llm)]
    if not probes[0].ok:
        return CheckReport(base_url=settings.base_url, model=settings.model, ok=False, probes=probes)
    probes.append(_listed(llm))
    timings: list[float] = []
    tokens = 0
    chat = _chat(llm, samples, max_tokens, timings)
    probes.append(chat[0])
    tokens = chat[1]
    probes.append(_json_schema(llm))
    probes.append(_tool_calls(llm))
    elapsed = sum(timings)
    return CheckReport(
        base_url=settings.base_url,
        model=settings.model,
        ok=all(p.ok for p in probes),
        probes=probes,
        latency_s_median=round(statistics.median(timings), 3) if timings else None,
        completion_tokens_per_s=round(tokens / elapsed, 1) if timings and elapsed > 0 else None,
    )


def _client(llm: OpenAICompatibleLLM) -> Any:
    return llm._client


def _reachable(llm: OpenAICompatibleLLM) -> Probe:
    start = time.perf_counter()
    try:
        _client(llm).models.list()
    except openai.APIStatusError as exc:
        if exc.status_code in (401, 403):
            return Probe(
                name="reachable", ok=False, seconds=time.perf_counter() - start,
                detail=f"HTTP {exc.status_code}: the endpoint refused the key",
                fix=f"put the key in ${llm.settings.api_key_env} (or name another variable with AGENTOMNIA_LLM_API_KEY_ENV)",
            )  # fmt: skip
        # some gateways serve chat but not /models: reachable all the same
        return Probe(
            name="reachable", ok=True, seconds=time.perf_counter() - start,
            detail=f"answers (GET /models gave HTTP {exc.status_code})",
        )  # fmt: skip
    except openai.APIError as exc:
        return Probe(
            name="reachable", ok=False, seconds=time.perf_counter() - start,
            detail=f"no answer from {llm.settings.base_url}: {type(exc).__name__}: {exc}",
            fix="start the server, or set AGENTOMNIA_LLM_BASE_URL to where it listens (it ends in /v1)",
        )  # fmt: skip
    return Probe(name="reachable", ok=True, detail="answers GET /models", seconds=time.perf_counter() - start)


def _listed(llm: OpenAICompatibleLLM) -> Probe:
    try:
        ids = [m.id for m in _client(llm).models.list()]
    except openai.APIError as exc:
        return Probe(
            name="model listed", ok=True, detail=f"the endpoint lists no models ({exc}); not checked"
        )
    if llm.model in ids:
        return Probe(name="model listed", ok=True, detail=f"{llm.model!r} is among {len(ids)} served")
    return Probe(
        name="model listed", ok=False,
        detail=f"{llm.model!r} is not served here; the endpoint lists {', '.join(map(repr, ids[:8])) or 'nothing'}",
        fix="set AGENTOMNIA_LLM_MODEL to a listed id (vLLM: --served-model-name; llama.cpp: --model_alias)",
    )  # fmt: skip


def _chat(llm: OpenAICompatibleLLM, samples: int, max_tokens: int, timings: list[float]) -> tuple[Probe, int]:
    tokens = 0
    prompts = ["Name three fruits.", "Say hello to a new colleague.", "Count from one to five."]
    for i in range(max(1, samples)):
        start = time.perf_counter()
        try:
            out = llm.complete(
                [{"role": "user", "content": prompts[i % len(prompts)]}], max_tokens=max_tokens
            )
        except LLMError as exc:
            return Probe(
                name="chat", ok=False, detail=str(exc),
                fix="the endpoint must serve POST /chat/completions for this model",
            ), tokens  # fmt: skip
        timings.append(time.perf_counter() - start)
        tokens += out.usage.completion_tokens
        if not out.text.strip():
            return Probe(
                name="chat", ok=False, detail="answered with empty text", seconds=timings[-1],
                fix="check the model's chat template (the server must apply one)",
            ), tokens  # fmt: skip
    if tokens == 0:
        return Probe(
            name="chat", ok=False, detail="answers, but reports no token usage",
            fix="serve with usage reporting on: the platform counts tokens per stage",
        ), tokens  # fmt: skip
    return Probe(
        name="chat", ok=True, seconds=sum(timings),
        detail=f"{len(timings)} short answers, {tokens} completion tokens counted",
    ), tokens  # fmt: skip


def _failed(name: str, exc: Exception, start: float, fix: str) -> Probe:
    return Probe(name=name, ok=False, detail=str(exc)[:300], seconds=time.perf_counter() - start, fix=fix)


def _json_schema(llm: OpenAICompatibleLLM) -> Probe:
    start = time.perf_counter()
    try:
        out = llm.complete(
            [{"role": "user", "content": "Describe Lisbon as JSON: city, population in millions, coastal."}],
            schema=_SCHEMA, schema_name="city", max_tokens=96,
        )  # fmt: skip
    except LLMError as exc:
        return _failed("JSON schema", exc, start, (
            "serve with constrained decoding (vLLM/SGLang: a guided-decoding backend; llama.cpp: json_object with a schema)"
            if isinstance(exc, LLMOutputError)
            else "the endpoint must take response_format json_schema (or llama.cpp's json_object with a schema)"
        ))  # fmt: skip
    form = "json_object with a schema (llama.cpp's form)" if llm._json_object else "json_schema"
    return Probe(
        name="JSON schema", ok=True, seconds=time.perf_counter() - start,
        detail=f"honoured as {form}: {json.dumps(out.data, ensure_ascii=False)[:120]}",
    )  # fmt: skip


def _tool_calls(llm: OpenAICompatibleLLM) -> Probe:
    start = time.perf_counter()
    try:
        out = llm.complete(
            [
                {"role": "system", "content": "You are a support agent. Use the tools to answer."},
                {"role": "user", "content": "Where is my order ORD-1042?"},
            ],
            tools=[_TOOL], max_tokens=96,
        )  # fmt: skip
    except LLMError as exc:
        return _failed("tool calls", exc, start, "the endpoint must take `tools` in chat requests")
    seconds = time.perf_counter() - start
    fix = (
        "serve with a tool-call parser (vLLM: --enable-auto-tool-choice --tool-call-parser <family>; "
        "SGLang: --tool-call-parser; llama-cpp-python: --chat_format chatml-function-calling)"
    )
    if not out.tool_calls:
        forced = _forced_call(llm)
        if forced is not None:
            return Probe(
                name="tool calls", ok=False, seconds=seconds,
                detail=f"the server parses tool calls (forced, it gave get_order({forced[:60]})), but free "
                f"to choose, the model answered in text: {out.text[:100]!r}",
                fix="use a model tuned for tool use: agents and teachers let the model choose",
            )  # fmt: skip
        return Probe(
            name="tool calls", ok=False, seconds=seconds, fix=fix,
            detail=f"the model answered in text, not a parsed tool call: {out.text[:120]!r}",
        )  # fmt: skip
    call = out.tool_calls[0].get("function") or {}
    try:
        args = json.loads(call.get("arguments") or "{}")
    except json.JSONDecodeError:
        args = None
    if call.get("name") != "get_order" or not isinstance(args, dict):
        return Probe(
            name="tool calls", ok=False, seconds=seconds, fix=fix,
            detail=f"a tool call came back malformed: {json.dumps(call)[:160]}",
        )  # fmt: skip
    return Probe(
        name="tool calls", ok=True, seconds=seconds,
        detail=f"parsed: get_order({json.dumps(args, ensure_ascii=False)[:80]})",
    )  # fmt: skip


def _forced_call(llm: OpenAICompatibleLLM) -> str | None:
    """The arguments of a tool call the server returns when the call is forced (`tool_choice` names
    the tool), or None: whether the server parses tool calls at all, apart from what the model likes."""
    try:
        completion = _client(llm).chat.completions.create(
            model=llm.model, max_tokens=96, tools=[_TOOL],
            messages=[{"role": "user", "content": "Where is my order ORD-1042?"}],
            tool_choice={"type": "function", "function": {"name": "get_order"}},
        )  # fmt: skip
    except openai.APIError:
        return None
    calls = completion.choices[0].message.tool_calls or []
    if not calls or calls[0].function.name != "get_order":
        return None
    return str(calls[0].function.arguments)
