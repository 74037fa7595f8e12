"""Hand-made benchmark failures and a scripted model for the self-evolution tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from agentomnia.evolution.diagnosis import DiagnosisReport, diagnose
from agentomnia.llm import LLMResponse, Usage
from agentomnia.omniabench.models import Failure
from agentomnia.taxonomy import Coordinate


def make_failure(
    task_id: str,
    taxonomy_id: int,
    tags: Sequence[str],
    *,
    capabilities: Sequence[str] = ("tool_use",),
    atoms: Sequence[str] = ("tool_parameter_grounding",),
    evidence: Sequence[str] | None = None,
    trial: int = 0,
    score: float | None = 0.0,
    task_kind: str = "dag_standard",
    route: str = "dag_s",
    eval_id: str = "eval-r0-heuristic",
) -> Failure:
    return Failure.model_validate(
        {
            "eval_id": eval_id,
            "result_id": f"res-{task_id}-{trial}",
            "task_id": task_id,
            "env_id": f"env-{taxonomy_id}",
            "task_kind": task_kind,
            "route": route,
            "policy": "baseline:heuristic",
            "trial": trial,
            "coordinate": Coordinate.for_domain(taxonomy_id, capabilities, list(atoms)),
            "score": score,
            "tags": tuple(tags),
            "evidence": tuple(evidence if evidence is not None else [f"{t} seen in {task_id}" for t in tags]),
        }
    )


def sample_failures() -> list[Failure]:
    """Seven failures: a tool-use cluster in pet services, and smaller ones elsewhere."""
    return [
        make_failure(
            "t-pet-1",
            10005,
            ["wrong_tool", "invalid_arguments"],
            evidence=[
                "step 1 called list_appointments, but the reference books with book_appointment",
                "book_appointment refused pet_id 'Biscuit': not a known pet id",
            ],
        ),
        make_failure(
            "t-pet-1", 10005, ["wrong_tool"], trial=1, evidence=["step 2 called cancel_appointment"]
        ),
        make_failure(
            "t-pet-2", 10005, ["wrong_tool"], evidence=["called find_free_kennels instead of list_pets"]
        ),
        make_failure(
            "t-pet-3",
            10005,
            ["wrong_tool"],
            score=0.9,
            evidence=["called get_care_log where check_vaccinations was needed"],
        ),
        make_failure(
            "t-adv-1",
            20000,
            ["hallucinated_value"],
            capabilities=("information_gathering", "state_management"),
            atoms=("structured_information",),
            evidence=["argument model_id 'MP-9' appears in no observation"],
        ),
        make_failure(
            "t-adv-2",
            20000,
            ["collateral_change"],
            capabilities=("state_management",),
            atoms=("dynamic_planning",),
            evidence=["account AC-7 status changed from open to restricted, which the task never asked"],
        ),
        make_failure(
            "t-trip-1",
            10016,
            ["missed_constraint"],
            capabilities=("state_management", "task_understanding"),
            atoms=("risk_clarification",),
            task_kind="dag_challenge",
            route="dag",
            evidence=["booked a fare above the stated budget of 300"],
        ),
    ]


@pytest.fixture(scope="session")
def failures() -> list[Failure]:
    return sample_failures()


@pytest.fixture(scope="session")
def report(failures: list[Failure]) -> DiagnosisReport:
    return diagnose(failures, round_key="r1")


class ScriptedLLM:
    """Answers each request with the next reply scripted for its schema name.

    A reply is a callable taking the conversation (so it can echo a draft it was shown) and
    returning the data to answer with, or an exception to raise.
    """

    model = "scripted"

    def __init__(self, replies: Mapping[str, Sequence[Callable[[list[dict[str, Any]]], Any]]]) -> None:
        self.replies = {k: list(v) for k, v in replies.items()}
        self.calls: list[tuple[str, list[dict[str, Any]]]] = []

    def complete(self, messages: Sequence[Mapping[str, Any]], **kwargs: Any) -> LLMResponse:
        name = kwargs["schema_name"]
        assert kwargs.get("schema"), "protocol answers must be requested with a JSON schema"
        conversation = [dict(m) for m in messages]
        self.calls.append((name, conversation))
        queue = self.replies[name]
        reply = queue.pop(0) if len(queue) > 1 else queue[0]
        data = reply(conversation)
        if isinstance(data, Exception):
            raise data
        return LLMResponse(text=json.dumps(data), data=data, request_hash=f"h{len(self.calls)}")

    @property
    def usage(self) -> Usage:
        return Usage()


def draft_in(conversation: list[dict[str, Any]], marker: str) -> dict[str, Any]:
    """The JSON draft printed after `marker` in the first prompt."""
    text = conversation[0]["content"]
    return json.loads(text[text.index(marker) + len(marker) :])
