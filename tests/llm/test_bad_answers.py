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


@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_bad_answer_leaves_each_later_seam_as_it_is_made_without_a_model(
    kind: str, server: ChatServer, tmp_path: Path, parcel: Any
) -> None:
    """The attributes, operations and s0 values a model adds to an environment, the dependency edges it
    proposes, the failure diagnosis it writes and a PRD's prose: after a bad answer each is what the
    platform makes without a model, the diagnosis and the PRD say why, and the ledger counts no answer
    as usable."""
    from agentomnia.envs.proposals import augment_state_space, propose_operations, realistic_records
    from agentomnia.evolution.diagnosis import diagnose
    from agentomnia.evolution.prd import generate_prds, polish
    from agentomnia.tasks.dag.graph import model_edges
    from tests.evolution.conftest import make_failure

    server.script, server.stall_s = list(BAD[kind]), 1.5
    llm = _llm(server, tmp_path)
    spec, s0 = parcel.built.spec, parcel.s0
    assert augment_state_space(llm, spec)[:2] == (spec, [])
    assert propose_operations(llm, spec, [t.name for t in spec.tools]) == ([], {}, [])
    assert realistic_records(llm, spec, dict(s0))[0] == s0
    assert model_edges(llm, spec) == []
    failures = [
        make_failure("t-pet-1", 10005, ["wrong_tool"]),
        make_failure("t-pet-2", 10005, ["bad_arguments"]),
    ]
    rules = diagnose(failures, round_key="r1")
    report = diagnose(failures, round_key="r1", llm=llm, max_attempts=1)
    assert (
        report.task_diagnoses == rules.task_diagnoses
        and report.capability_diagnoses == rules.capability_diagnoses
    )
    assert report.fallbacks and all("after 1 attempt(s)" in f for f in report.fallbacks), report.fallbacks
    prd = generate_prds(rules, round_key="r1")[0]
    assert polish(prd, llm, max_attempts=1)[0] == prd
    counts = llm.ledger.snapshot()
    for purpose in (
        "state_attribute",
        "tool_proposal",
        "s0_record",
        "dependency_edges",
        "task_diagnosis",
        "prd_text",
    ):
        assert counts[purpose].calls >= 1 and counts[purpose].valid == 0, (purpose, counts[purpose])
