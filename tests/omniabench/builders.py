"""Hand-built tasks and results for the benchmark tests that need no environment."""

from __future__ import annotations

from typing import Any

from agentomnia.omniabench.models import EvalResult, Failure, FieldDiff, Route
from agentomnia.tasks.models import Check, Persona, ReferenceCall, RubricItem, Task, TaskKind
from agentomnia.taxonomy import Coordinate
from agentomnia.trajectories.messages import (
    assistant_message,
    system_message,
    tool_call,
    tool_message,
    user_message,
)
from agentomnia.trajectories.models import Step, StopReason

S0: dict[str, Any] = {
    "claims": {
        "CLA-001": {"claim_id": "CLA-001", "status": "open", "amount": 120.0, "shipment_id": "SHP-001"},
        "CLA-002": {"claim_id": "CLA-002", "status": "open", "amount": 75.5, "shipment_id": "SHP-001"},
        "CLA-003": {"claim_id": "CLA-003", "status": "open", "amount": 300.0, "shipment_id": "SHP-002"},
    },
    "shipments": {
        "SHP-001": {"shipment_id": "SHP-001", "carrier": "Northwind Freight"},
        "SHP-002": {"shipment_id": "SHP-002", "carrier": "Bluewater Lines"},
    },
}

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": text,
            "parameters": {"type": "object", "properties": props, "required": sorted(props)},
        },
    }
    for name, text, props in (
        ("list_claims", "List the claims of a shipment.", {"shipment_id": {"type": "string"}}),
        ("get_claim", "Read one claim.", {"claim_id": {"type": "string"}}),
        (
            "set_claim_status",
            "Change a claim's status.",
            {"claim_id": {"type": "string"}, "status": {"type": "string", "enum": ["approved", "rejected"]}},
        ),
        ("delete_claim", "Delete a claim.", {"claim_id": {"type": "string"}}),
    )
]


def coordinate(
    taxonomy_id: int = 20096,
    capabilities: tuple[str, ...] = ("tool_use",),
    atoms: tuple[str, ...] = ("tool_parameter_grounding",),
) -> Coordinate:
    return Coordinate.for_domain(taxonomy_id, capabilities, atoms, primary=atoms[0])


def make_task(
    query: str,
    *,
    kind: TaskKind = "dag_standard",
    taxonomy_id: int = 20096,
    capabilities: tuple[str, ...] = ("tool_use",),
    atoms: tuple[str, ...] = ("tool_parameter_grounding",),
    multi: bool = False,
) -> Task:
    """A small task on the claims state above; the query is what similarity tests vary."""
    return Task(
        env_id="env-claims",
        kind=kind,
        coordinate=coordinate(taxonomy_id, capabilities, atoms),
        init_config=S0,
        query=query,
        reference_calls=(ReferenceCall(tool="set_claim_status", args={"claim_id": "CLA-001", "status": "approved"}),),
        rubric=(
            RubricItem(id="T1", text="Claim CLA-001 ends approved.", scope="task",
                       check=Check(kind="field_equals", table="claims", key="CLA-001", field="status", value="approved")),
        ),
        interaction="multi" if multi else "single",
        persona=Persona(name="shipper") if multi else None,
    )  # fmt: skip


def approve_task() -> Task:
    """Approve CLA-001 after looking up the shipment's claims; never delete anything; report the amount."""
    return Task(
        env_id="env-claims",
        kind="dag_standard",
        coordinate=coordinate(capabilities=("state_management", "tool_use")),
        init_config=S0,
        query="The damage claim on shipment SHP-001 for 120 dollars is valid. Approve it and tell me its amount.",
        reference_calls=(
            ReferenceCall(tool="list_claims", args={"shipment_id": "SHP-001"}, sources={"shipment_id": "query"}),
            ReferenceCall(tool="set_claim_status", args={"claim_id": "CLA-001", "status": "approved"},
                          sources={"claim_id": "out:0.data.items.0.claim_id", "status": "literal"}),
        ),
        expected_answer={"amount": 120.0},
        expected_diff=({"table": "claims", "key": "CLA-001", "field": "status", "before": "open", "after": "approved"},),
        rubric=(
            RubricItem(id="T1", text="Claim CLA-001 ends approved.", scope="task", weight=2,
                       check=Check(kind="field_equals", table="claims", key="CLA-001", field="status", value="approved")),
            RubricItem(id="T2", text="Reports the claim amount.", scope="task",
                       check=Check(kind="answer_equals", field="amount", value=120.0)),
            RubricItem(id="G1", text="Deletes no claim.", scope="general",
                       check=Check(kind="not_called", tool="delete_claim")),
        ),
    )  # fmt: skip


class Run:
    """Builds an OpenAI-format transcript and its steps together, the way the rollout loop does."""

    def __init__(self, query: str) -> None:
        self.messages: list[dict[str, Any]] = [
            system_message("You operate the claims desk."),
            user_message(query),
        ]
        self.steps: list[Step] = []
        self._hash = "h0"

    def call(
        self, tool: str, args: dict[str, Any], *, ok: bool = True, data: Any = None, error: tuple[str, str] | None = None,
        valid: bool = True, writes: bool = False,
    ) -> Run:  # fmt: skip
        from agentomnia.records import ToolResult

        call_id = f"call_{len(self.steps)}"
        self.messages.append(assistant_message(f"I call {tool}.", [tool_call(call_id, tool, args)]))
        result = ToolResult.success(data) if ok else ToolResult.failure(*(error or ("failed", "it failed")))
        if ok and writes:
            self._hash = f"h{len(self.steps) + 1}"
        self.steps.append(Step(index=len(self.steps), turn=len(self.messages) - 1, tool=tool, arguments=args, ok=ok,
                               error_code=None if ok else result.error.code if result.error else None,
                               state_hash=self._hash, valid=valid))  # fmt: skip
        self.messages.append(tool_message(call_id, tool, result))
        return self

    def say(self, text: str) -> Run:
        self.messages.append(assistant_message(text))
        return self


def result_of(
    task: Task,
    run: Run | None = None,
    *,
    components: dict[str, bool | None] | None = None,
    details: dict[str, str] | None = None,
    answer: dict[str, Any] | None = None,
    diff: tuple[FieldDiff, ...] = (),
    stop: StopReason = "answer",
    score: float | None = 0.0,
    passed: bool = False,
    trial: int = 0,
    infra: str | None = None,
    route: Route = "dag_s",
    challenging: bool = False,
    eval_id: str = "e1",
    error: str | None = None,
) -> EvalResult:
    run = run or Run(task.query)
    return EvalResult(
        eval_id=eval_id, task_id=task.id, env_id=task.env_id, task_kind=task.kind, route=route,
        challenging=challenging, coordinate=task.coordinate, policy="test-policy", trial=trial, score=score,
        passed=passed, components=components or {}, details=details or {}, infra_error=infra, error=error,
        stop_reason=stop, state_diff=diff, answer=answer or {}, messages=tuple(run.messages),
        steps=tuple(run.steps), initial_hash="h0",
    )  # fmt: skip


def make_failure(
    n: int, eval_id: str = "e1", round_key: str = "r0", tags: tuple[str, ...] = ("incomplete",)
) -> Failure:
    """A distinct failure record per `n` (trial n of one task)."""
    return Failure(
        eval_id=eval_id, result_id=f"res-{eval_id}-{n}", task_id="task-1", env_id="env-claims",
        task_kind="dag_standard", route="dag_s", policy="baseline:test", trial=n,
        coordinate=coordinate(capabilities=("tool_use", "state_management"), atoms=("tool_parameter_grounding", "dynamic_planning")),
        score=0.5, tags=tags, evidence=tuple(f"evidence for {t} #{n}" for t in tags), round=round_key,
    )  # fmt: skip
