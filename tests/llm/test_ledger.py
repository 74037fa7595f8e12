"""What each stage asked the model, counted where the answers come back: calls, cache hits, tokens,
usable and kept answers, offline fallbacks; saved per stage and read back by `agentomnia llm usage`
and the round report."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentomnia.catalog import RAW_SEEDS
from agentomnia.cli import main
from agentomnia.llm import LLMError, LLMOutputError, OpenAICompatibleLLM
from agentomnia.llm.ledger import Ledger, fallback, round_usage, save_usage, usage_rows, verdict
from agentomnia.reporting.model import Section
from agentomnia.reporting.reader import RoundReader
from agentomnia.reporting.sections.llm import model_use
from agentomnia.storage import Storage
from tests.fixtures.chat_server import ChatServer, client, serving

SCHEMA = {"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}}


@pytest.fixture
def server() -> Iterator[ChatServer]:
    yield from serving()


def _llm(server: ChatServer, tmp_path: Path) -> OpenAICompatibleLLM:
    return client(server, tmp_path, max_retries=0, timeout_s=2.0)


def test_calls_are_counted_by_purpose_and_outcome(server: ChatServer, tmp_path: Path) -> None:
    server.script = [(200, '{"city": "Lyon"}'), (200, '{"town": 3}'), (500, "")]
    llm = _llm(server, tmp_path)
    ask = [{"role": "user", "content": "Where?"}]
    assert llm.complete(ask, schema=SCHEMA, schema_name="place").data == {"city": "Lyon"}
    assert llm.complete(ask, schema=SCHEMA, schema_name="place").cached  # replayed, not sent
    with pytest.raises(LLMOutputError):
        llm.complete([{"role": "user", "content": "And?"}], schema=SCHEMA, schema_name="place")
    with pytest.raises(LLMError, match="500"):
        llm.complete([{"role": "user", "content": "Again?"}], schema_name="note")
    verdict(llm, "place", True)
    fallback(llm, "place")

    counts = llm.ledger.snapshot()
    place, note = counts["place"], counts["note"]
    assert (place.calls, place.requests, place.cache_hits) == (3, 2, 1)
    assert (place.valid, place.invalid, place.failed) == (2, 1, 0)
    assert (place.accepted, place.rejected, place.fallbacks) == (1, 0, 1)
    assert place.prompt_tokens > 0 and place.valid_rate == pytest.approx(2 / 3)
    assert (note.calls, note.requests, note.failed, note.valid) == (1, 1, 1, 0)
    assert len(server.requests) == 3  # the cache hit asked nothing


def test_stand_ins_without_a_ledger_are_left_alone() -> None:
    verdict(object(), "x", True)  # a scripted model in a test, or offline mode: nothing to record
    fallback(None, "x")


def test_a_round_s_usage_is_read_back_per_stage_by_the_cli_and_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("AGENTOMNIA_HOME", str(home))
    env = Ledger()
    env.call("env_candidate", "valid", prompt_tokens=100, completion_tokens=20)
    env.call("env_candidate", "invalid", cached=True)
    env.verdict("env_candidate", True)
    env.fallback("env_candidate")
    save_usage(
        env,
        home / "artifacts" / "environment_candidates" / "r0" / "llm.json",
        stage="environment_candidates",
        model="m",
    )
    teacher = Ledger()
    for _ in range(3):
        teacher.call("teacher_turn", "valid", completion_tokens=5)
    teacher.verdict("teacher_turn", False)
    save_usage(
        teacher, home / "artifacts" / "trajectories" / "r0" / "llm.json", stage="trajectories", model="m"
    )

    usage = round_usage(home / "artifacts", "r0")
    assert set(usage) == {"environment_candidates", "trajectories"}
    rows = {r["stage"]: r for r in usage_rows(usage)}
    env_row = rows["environment_candidates"]
    assert (env_row["calls"], env_row["requests"], env_row["cache_hits"], env_row["fallbacks"]) == (
        2,
        1,
        1,
        1,
    )
    assert env_row["valid_rate"] == 0.5 and env_row["accepted_rate"] == 1.0
    assert rows["trajectories"]["accepted_rate"] == 0.0 and rows["trajectories"]["completion_tokens"] == 15

    assert main(["llm", "usage", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["stage"] for r in data["rounds"]["r0"]] == ["environment_candidates", "trajectories"]

    section = Section("llm", "Model use per stage")
    model_use(RoundReader(Storage(home), "r0"), section)
    html = section.html()
    assert "environment_candidates" in html and "teacher_turn" in html and "all stages" in html

    Storage(home).round("r1").dir(RAW_SEEDS)  # a round that ran, offline
    offline = Section("llm", "Model use per stage")
    model_use(RoundReader(Storage(home), "r1"), offline)
    assert "ran offline" in offline.html() and offline.shown
    never = Section("llm", "Model use per stage")
    model_use(RoundReader(Storage(home), "r2"), never)
    assert not never.shown and [m.item for m in never.missing] == ["model use"]


def test_a_validated_answer_is_counted_kept_or_refused_with_the_rules_standing_in(tmp_path: Path) -> None:
    """Diagnosis, PRD prose and PRD seed requests ask through `ask_validated`: the ledger says how many
    answers were kept and how often the rules stood in, as every other stage's does."""
    from pydantic import BaseModel

    from agentomnia.evolution.revise import ask_validated
    from tests.fixtures.chat_server import client, serving

    class Verdict(BaseModel):
        passed: bool

    for server in serving():
        server.script = [(200, '{"passed": true}')]
        llm = client(server, tmp_path)
        value, _ = ask_validated(
            llm, [{"role": "user", "content": "Did it pass?"}], Verdict, schema_name="verdict"
        )
        assert value == Verdict(passed=True)
        server.script = [(200, '{"passed": "maybe"}')]
        value, attempts = ask_validated(
            llm,
            [{"role": "user", "content": "And this one?"}],
            Verdict,
            schema_name="verdict",
            max_attempts=2,
        )
        assert value is None and len(attempts) == 2
        counts = llm.ledger.snapshot()["verdict"]
        assert (counts.calls, counts.accepted, counts.rejected, counts.fallbacks) == (3, 1, 1, 1)
