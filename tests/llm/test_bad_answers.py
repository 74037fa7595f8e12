"""A bad model answer costs one item, never a stage: malformed JSON, an answer that breaks the
schema, a refusal, a server error and a timeout, each from a real chat-completions server on
127.0.0.1, at every seam that asks the model for one item. Each falls back to what the platform
does without a model, and says so where the record has room for it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentomnia.embeddings import HashingEmbedder
from agentomnia.envs.repair import llm_patch
from agentomnia.llm import OpenAICompatibleLLM
from agentomnia.seeds.inference import DomainMatcher, infer_candidates
from agentomnia.tasks.models import Task
from agentomnia.tasks.wording import rephrase
from agentomnia.taxonomy import load_taxonomy
from agentomnia.trajectories import rollout
from agentomnia.trajectories.users import LLMUser
from tests.fixtures.chat_server import ChatServer, bad_answers, client, serving
from tests.fixtures.domains import PARCEL

BAD = bad_answers('{"summary": "parcel claims", "state_components": [', '{"summary": 7}')


@pytest.fixture
def server() -> Iterator[ChatServer]:
    yield from serving()


def _llm(server: ChatServer, tmp_path: Path) -> OpenAICompatibleLLM:
    return client(server, tmp_path, max_retries=1, timeout_s=0.5)


@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_bad_answer_falls_back_item_by_item(kind: str, server: ChatServer, tmp_path: Path) -> None:
    server.script, server.stall_s = list(BAD[kind]), 1.5
    llm = _llm(server, tmp_path)

    # an environment candidate: the offline proposer's, with why the model's could not stand
    seed = PARCEL.seed()
    candidates, failed = infer_candidates([seed], DomainMatcher(load_taxonomy(), HashingEmbedder()), llm)
    assert not failed and len(candidates) == 1
    (cand,) = candidates
    assert cand.proposer == "offline" and cand.fallback.startswith("the model's candidate was unusable")
    # the same id as the offline proposer's: a fallback is that candidate, with a note
    offline, _ = infer_candidates([seed], DomainMatcher(load_taxonomy(), HashingEmbedder()))
    assert cand.id == offline[0].id

    # a DAG request the model was asked to reword keeps its composed wording
    assert rephrase(llm, "Please approve claim CLA-001. Tell me its amount as JSON.") is None

    # a tool the model was asked to repair gets no patch: the repair loop goes on without one
    source = "class Env:\n    def approve_claim(self, claim_id):\n        return {'ok': True, 'data': None, 'error': None}\n"
    assert llm_patch(llm, source, "approve_claim", "refuses a pending claim") is None
    assert server.requests, "every seam asked the server"

    # the stage's ledger says what became of each answer: none usable, the offline proposer stood in
    counts = llm.ledger.snapshot()
    asked = counts["env_candidate"]
    broken = asked.failed if kind in ("server error", "timed out") else asked.invalid
    assert asked.calls >= 1 and asked.valid == 0 and broken == asked.calls, asked
    assert (asked.fallbacks, asked.accepted) == (1, 0)
    assert counts["method_repair"].valid == 0


class _Asking:
    """Asks the user once, then stops: the user simulator must answer."""

    name = "asking"

    def act(self, messages: Any, tools: Any) -> dict[str, Any]:
        return {"role": "assistant", "content": "Which claim do you mean?"}


def test_a_simulated_user_that_cannot_answer_ends_its_run_only(
    server: ChatServer, tmp_path: Path, tasks: list[Task], parcel: Any
) -> None:
    server.script = list(BAD["server error"])
    multi = next(t for t in tasks if t.interaction == "multi")
    result = rollout(
        multi, parcel.bundle, parcel.sandbox, _Asking(), user=LLMUser(multi, _llm(server, tmp_path))
    )
    assert result.stop_reason == "error" and "user simulator" in (result.error or "")
