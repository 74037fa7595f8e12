"""Small, real training data on the shipped `mock` task-tracker bundle.

The trajectory stage produces the real SFT and RL datasets; this module builds a few dozen rows of the
same shape from hand-written task templates, with tool results produced by actually running the calls,
so the trainers' tests and smoke runs exercise the genuine contract (OpenAI messages with tool_calls,
`tools`, Task records, bundle folders, golden trajectories) without depending on that stage.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.fixtures import FIXTURES_DIR, fixture_bundle
from agentomnia.sandbox.local import open_local
from agentomnia.tasks.models import Check, RubricItem, Task
from agentomnia.taxonomy import Coordinate

SYSTEM = "You are a careful assistant for a task tracker. Use the tools, then answer briefly."
_TITLES = (
    "Draft the budget",
    "Call the supplier",
    "Renew the domain",
    "Plan the retro",
    "Fix the login bug",
    "Order toner",
)
_STATUSES = ("open", "in_progress", "done")


def _coordinate() -> Coordinate:
    return Coordinate(
        split="tob",
        taxonomy_id=20096,
        l1="Logistics",
        l2="Logistics Specialist",
        capabilities=("tool_use", "state_management"),
        difficulty=2,
        primary_difficulty="tool_parameter_grounding",
    )


def _specs() -> list[dict[str, Any]]:
    """(query, calls, final answer template, rubric checks, expected answer) per task variant."""
    specs: list[dict[str, Any]] = []
    for i, title in enumerate(_TITLES):
        user = f"user_{1 + i % 2}"
        specs.append(
            {
                "query": f"Create a task titled '{title}' for {user} and mark it in progress.",
                "calls": [
                    ("create_task", {"user_id": user, "title": title}),
                    ("update_task_status", {"task_id": "task_4", "status": "in_progress"}),
                ],
                "answer": f"Created task_4 '{title}' for {user}; it is now in progress.",
                "checks": [
                    Check(
                        kind="record_exists",
                        table="tasks",
                        match={"title": title, "user_id": user, "status": "in_progress"},
                    )
                ],
            }
        )
    for task_id, status in (
        ("task_1", "done"),
        ("task_1", "in_progress"),
        ("task_2", "done"),
        ("task_2", "open"),
    ):
        specs.append(
            {
                "query": f"Set the status of {task_id} to {status}.",
                "calls": [("update_task_status", {"task_id": task_id, "status": status})],
                "answer": f"{task_id} is now {status}.",
                "checks": [
                    Check(kind="field_equals", table="tasks", key=task_id, field="status", value=status)
                ],
            }
        )
    for task_id, user in (("task_1", "user_2"), ("task_2", "user_2"), ("task_3", "user_1")):
        specs.append(
            {
                "query": f"Reassign {task_id} to {user}.",
                "calls": [("assign_task", {"task_id": task_id, "user_id": user})],
                "answer": f"{task_id} now belongs to {user}.",
                "checks": [
                    Check(kind="field_equals", table="tasks", key=task_id, field="user_id", value=user)
                ],
            }
        )
    for user, status, count in (
        ("user_1", "open", 1),
        ("user_1", "in_progress", 1),
        ("user_2", "done", 1),
        ("user_2", "open", 0),
    ):
        specs.append(
            {
                "query": f'How many {status.replace("_", " ")} tasks does {user} have? Reply as JSON {{"count": n}}.',
                "calls": [("list_tasks", {"user_id": user, "status": status})],
                "answer": json.dumps({"count": count}),
                "checks": [
                    Check(kind="answer_equals", field="count", value=count),
                    Check(kind="not_called", tool="update_task_status"),
                ],
                "expected_answer": {"count": count},
            }
        )
    return specs  # fmt: skip


def _golden(bundle: Bundle, calls: list[tuple[str, dict[str, Any]]], answer: str) -> list[dict[str, Any]]:
    """The assistant/tool messages of a golden run, with real tool results from the environment."""
    messages: list[dict[str, Any]] = []
    with open_local(bundle) as env:
        for n, (tool, args) in enumerate(calls):
            result = env.call(tool, args)
            if not result.ok:
                raise RuntimeError(f"golden call {tool}({args}) failed on the mock bundle: {result.error}")
            call_id = f"call_{n}"
            messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": tool, "arguments": json.dumps(args)},
                        }
                    ],
                }
            )
            messages.append({"role": "tool", "tool_call_id": call_id, "content": result.model_dump_json()})
    messages.append({"role": "assistant", "content": answer})
    return messages


def demo_rows(bundle_dir: Path | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(sft_rows, rl_rows) on the mock bundle; `bundle_dir` is where RL rows say the bundle lives."""
    folder = bundle_dir or FIXTURES_DIR / "mock"
    bundle = fixture_bundle("mock")
    sft_rows: list[dict[str, Any]] = []
    rl_rows: list[dict[str, Any]] = []
    for spec in _specs():
        prompt = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": spec["query"]}]
        golden = _golden(bundle, spec["calls"], spec["answer"])
        sft_rows.append({"messages": prompt + golden, "tools": bundle.tools})
        rubric = tuple(
            RubricItem(id=f"T{n + 1}", text=f"outcome check {check.kind}", scope="task", check=check)
            for n, check in enumerate(spec["checks"])
        )
        task = Task(
            env_id="mock",
            kind="dag_standard",
            coordinate=_coordinate(),
            init_config=bundle.s0,
            query=spec["query"],
            rubric=rubric,
            expected_answer=spec.get("expected_answer", {}),
        )
        rl_rows.append(
            {"prompt": prompt, "task": task.model_dump_json(), "bundle_dir": str(folder), "golden": golden}
        )
    return sft_rows, rl_rows


def save_sft_dataset(rows: list[Mapping[str, Any]], path: Path) -> Path:
    """Write rows as the SFT stage's contract: a `datasets.Dataset` saved with save_to_disk."""
    from datasets import Dataset

    Dataset.from_list([dict(r) for r in rows], on_mixed_types="use_json").save_to_disk(str(path))
    return path
