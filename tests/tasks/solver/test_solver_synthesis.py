"""The solver synthesis entry points: every family in one run, and the solver-guided strategy."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentomnia.envs.spec import EnvSpec
from agentomnia.llm.protocol import LLMResponse, Usage
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.leakage import leakage_problems
from agentomnia.tasks.solver import (
    FAMILIES,
    GUIDED_OFFLINE_NOTE,
    synthesize_guided_tasks,
    synthesize_solver_tasks,
)
from tests.fixtures.models import GreedyModel


def test_one_task_per_family_with_verified_bundles(sandbox: Sandbox, tmp_path: Path) -> None:
    tasks, dirs, rejections = synthesize_solver_tasks(sandbox, per_family=1, out_dir=tmp_path, seed=5)
    assert sorted(t.metadata["family"] for t in tasks) == sorted(FAMILIES)
    assert len(dirs) == len(tasks) and all((d / "verification.json").exists() for d in dirs)
    for task, folder in zip(tasks, dirs, strict=True):
        assert task.env_id == folder.name
        assert json.loads((folder / "verification.json").read_text())["verified"] is True
        spec = EnvSpec.model_validate_json((folder / "spec.json").read_text())
        assert leakage_problems(task.query, spec, forbid_ids=True) == []
        assert task.coordinate.primary_difficulty == "dynamic_planning"
        assert task.internal_spec["artifact"]["status"] == "optimal"
        assert task.rubric[0].check is not None and task.rubric[0].check.kind == "verifier"
    assert all(r.reason for r in rejections)


def test_the_same_seed_makes_the_same_task_ids_whatever_the_timings(sandbox: Sandbox, tmp_path: Path) -> None:
    first, _, _ = synthesize_solver_tasks(sandbox, per_family=1, out_dir=tmp_path / "a", seed=5)
    again, _, _ = synthesize_solver_tasks(sandbox, per_family=1, out_dir=tmp_path / "b", seed=5)
    assert [t.id for t in first] == [t.id for t in again]
    # timings are kept as unhashed metadata, not in the hashed spec
    assert all("seconds" not in t.internal_spec["artifact"] and "solver_seconds" in t.metadata for t in first)


def test_unknown_family_is_refused(sandbox: Sandbox, tmp_path: Path) -> None:
    try:
        synthesize_solver_tasks(sandbox, families=["nope"], per_family=1, out_dir=tmp_path)
    except ValueError as exc:
        assert "knapsack" in str(exc)
    else:
        raise AssertionError("an unknown family must be refused")


def test_guided_offline_skips_with_a_note(sandbox: Sandbox, tmp_path: Path) -> None:
    tasks, dirs, rejections, notes = synthesize_guided_tasks(sandbox, None, out_dir=tmp_path)
    assert (tasks, dirs, rejections) == ([], [], []) and notes == [GUIDED_OFFLINE_NOTE]


def test_guided_tasks_accept_equal_or_better_and_say_not_proven(sandbox: Sandbox, tmp_path: Path) -> None:
    tasks, _, rejections, notes = synthesize_guided_tasks(
        sandbox, GreedyModel(), families=["facility_selection"], per_family=3, out_dir=tmp_path
    )
    assert notes == [] and tasks, rejections
    for task in tasks:
        assert task.kind == "solver_guided" and "NOT proven optimal" in task.rubric[0].text
        family = FAMILIES["facility_selection"]
        optimum = task.internal_spec["artifact"]["plan"]
        # the solver's optimum is at least as good as the model's plan, so it passes
        final = family.apply(task.init_config, optimum)
        assert sandbox.run_check(task.verifier_code or "", task.init_config, final).passed is True


class _Rewording:
    """Rewords a request: keeping every value, or dropping its first number."""

    model = "reword-stub"

    def __init__(self, *, drop_a_number: bool) -> None:
        self.drop = drop_a_number
        self.asked: list[str] = []
        self.read: list[str] = []  # everything each request showed the model

    def complete(self, messages: Sequence[Mapping[str, Any]], **kwargs: Any) -> LLMResponse:
        text = str(messages[-1]["content"])
        self.asked.append(str(kwargs.get("schema_name")))
        self.read.append("\n".join(str(m.get("content")) for m in messages))
        if self.drop:
            text = re.sub(r"\d+", "a few", text, count=1)
        return LLMResponse(text="", data={"query": "Quick favour, please. " + text}, request_hash="stub")

    @property
    def usage(self) -> Usage:
        return Usage()


def test_the_model_rewords_a_solver_request_only_keeping_every_value(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    family = ["knapsack"]
    (offline,), _, _ = synthesize_solver_tasks(sandbox, families=family, per_family=1, out_dir=tmp_path / "o")
    keeping = _Rewording(drop_a_number=False)
    (kept,), _, _ = synthesize_solver_tasks(
        sandbox, families=family, per_family=1, out_dir=tmp_path / "k", llm=keeping
    )
    assert keeping.asked == ["task_description"]
    assert kept.query == "Quick favour, please. " + offline.query and kept.metadata["phrased_by"] == "llm"
    # a rewording that loses a number the optimum rests on is refused: the family's wording stands
    dropping = _Rewording(drop_a_number=True)
    (refused,), _, _ = synthesize_solver_tasks(
        sandbox, families=family, per_family=1, out_dir=tmp_path / "d", llm=dropping
    )
    assert refused.query == offline.query and refused.metadata["phrased_by"] == "template"
    assert "phrased_by" not in offline.metadata  # offline task ids are unchanged
    # in a PRD-guided round the model rewords with the PRDs' task guidance before it
    guidance = "Requests should give the budget in words a shopper uses, never as a constraint."
    guided = _Rewording(drop_a_number=False)
    synthesize_solver_tasks(
        sandbox, families=family, per_family=1, out_dir=tmp_path / "g", llm=guided, guidance=[guidance]
    )
    assert (
        guided.read
        and all(guidance in r for r in guided.read)
        and not any(guidance in r for r in keeping.read)
    )


def test_the_teacher_reads_and_works_out_every_familys_objective(sandbox: Sandbox, tmp_path: Path) -> None:
    """The guided teacher answers every family's plan and its objective, worked out from figures the
    run read: where the objective multiplies (a shift's hours by the person's rate, a lane's unit
    cost by its store's demand) it lists what it lacks first and shows each share's working."""
    from agentomnia.envs.values import written_number
    from agentomnia.sandbox.bundle import Bundle
    from agentomnia.trajectories import generate_trajectories

    tasks, dirs, _ = synthesize_solver_tasks(sandbox, per_family=1, out_dir=tmp_path, seed=5)
    bundles = {t.env_id: Bundle.load(d) for t, d in zip(tasks, dirs, strict=True)}
    runs = generate_trajectories(tasks, bundles, sandbox, guidance=True)
    assert [r.verified for r in runs] == [True] * len(tasks), [
        (t.metadata["family"], r.verification) for t, r in zip(tasks, runs, strict=True) if not r.verified
    ]
    for task, run in zip(tasks, runs, strict=True):
        final = str(run.messages[-1]["content"])
        summed = next(f for f in task.expected_answer if f != "plan")
        total = next(
            line for line in final.splitlines() if line.startswith(summed.replace("_", " ").capitalize())
        )
        assert total.endswith(f"{written_number(task.expected_answer[summed])}."), (
            task.metadata["family"],
            final,
        )
        if task.metadata["family"] in ("shift_scheduling", "facility_selection"):
            reads = [c["function"]["name"] for m in run.messages for c in m.get("tool_calls") or []]
            needed = "list_employees" if task.metadata["family"] == "shift_scheduling" else "list_stores"
            assert needed in reads, reads
            assert re.search(r"^\w+-\d+: .* × .* = [\d.]+\.$", final, re.MULTILINE), final
