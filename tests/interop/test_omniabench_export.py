"""Export to OmniaBench items, judged by a loader that follows OmniaBench's contract, not our code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentomnia.interop import ExportSummary, export_omniabench, export_tasks, task_item
from agentomnia.interop.checkcode import answer_verifier_source, state_check_source
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.storage import Storage, save_records
from agentomnia.tasks.grading import Outcome, run_check
from agentomnia.tasks.models import TASK_KINDS, Check, RubricItem, Task
from tests.fixtures.mock import MOCK_ENV, mock_coordinate
from tests.interop.conftest import Kinds
from tests.interop.contract_loader import load_and_score


def _routes(summary: ExportSummary) -> list[Path]:
    return [Path(f) for f in summary.files if Path(f).name.startswith("route")]


def _by_task(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["task_id"]: r for r in results}


def test_mock_tasks_cover_every_route_and_decision_and_pass_the_contract_loader(
    mock_tasks: list[Task], mock_bundle: Bundle, tmp_path: Path
) -> None:
    summary = export_tasks(mock_tasks, {MOCK_ENV: mock_bundle}, tmp_path / "out")
    assert summary.by_route == {"route1": 1, "route3": 1, "route4": 2} and not summary.skipped
    # The question gets "nothing changed"; the hand-over gets its expected field and "nothing else changed".
    assert summary.judge_only_items == 1 and summary.derived_checks == 3
    results = _by_task(load_and_score(_routes(summary)))
    create, question, program, handover = (results[t.id] for t in mock_tasks)
    for done in (create, question, program):
        assert done["passed"] is True, done
        assert done["score"] == 1.0 and all(done["checklist"])
    assert program["route_score"] == 1.0  # route 3 is scored by verifier_code over the answer
    # The judge-only item is left unscored (no judge here), so the task cannot pass, but all else does.
    assert handover["passed"] is False and handover["unscored"] == 1
    assert handover["checklist"] == [True, True] and handover["score"] == 1.0
    empty = _by_task(load_and_score(_routes(summary), empty=True))
    assert not any(r["passed"] for r in empty.values())
    assert empty[mock_tasks[0].id]["checklist"] == [False, True, True]  # no task created; nothing else broken


def test_items_have_the_shape_the_runtime_reads(
    mock_tasks: list[Task], mock_bundle: Bundle, tmp_path: Path
) -> None:
    summary = export_tasks(mock_tasks, {MOCK_ENV: mock_bundle}, tmp_path)
    envs = json.loads((tmp_path / "environments.json").read_text())
    assert list(envs) == [MOCK_ENV]
    env = envs[MOCK_ENV]
    assert env["env_class_name"] == "MockTaskTracker" and env["env_class_code"] == mock_bundle.source
    assert all(t["type"] == "function" and "parameters" in t["function"] for t in env["tools"])
    assert env["environment_introduction"]
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["routes"]["route3"]["scorer"] == "verifier" and manifest["summary"]["tasks"] == 4
    for path in _routes(summary):
        base = {"route1": 1, "route3": 2_000_000, "route4": 3_000_000}[path.stem]
        items = json.loads(path.read_text())
        assert [i["global_id"] for i in items] == list(range(base, base + len(items)))
        for item in items:
            for field in (
                "task_id",
                "env_id",
                "task",
                "init_config",
                "rubrics",
                "checklist_with_func",
                "env_item",
            ):
                assert field in item, (path.name, field)
            assert item["checklist_with_func"], "every task decides something from the final state"
            for rubric in item["rubrics"]:
                assert rubric["tag"][0] in "GT" and rubric["category"] in ("general", "task_specific")
                assert 1 <= rubric["points"] <= 3
    route3 = json.loads((tmp_path / "route3.json").read_text())[0]
    assert (
        route3["verifier_code"] == route3["answer_verifier_code"]
        and route3["ground_truth_answer"]["count"] == 1
    )
    assert [t["function"]["name"] for t in route3["candidate_tools"]] == ["list_tasks", "update_task_status"]
    route4 = json.loads((tmp_path / "route4.json").read_text())
    assert all("verifier_code" not in i for i in route4)  # it would override the rubric score there
    route1 = json.loads((tmp_path / "route1.json").read_text())[0]
    assert "withheld" not in route1["persona_card_md"] and "task_id: task_2" in route1["persona_card_md"]


def test_split_files_load_without_embedded_environments(
    mock_tasks: list[Task], mock_bundle: Bundle, tmp_path: Path
) -> None:
    summary = export_tasks(mock_tasks[:3], {MOCK_ENV: mock_bundle}, tmp_path / "out")
    stripped = []
    for path in _routes(summary):
        items = [{k: v for k, v in i.items() if k != "env_item"} for i in json.loads(path.read_text())]
        target = tmp_path / path.name
        target.write_text(json.dumps(items))
        stripped.append(target)
    results = load_and_score(stripped, tmp_path / "out" / "environments.json")
    assert len(results) == 3 and all(r["passed"] for r in results), results


RESHAPING_ENV = """
class Inventory:
    def __init__(self, init_config):
        self.items = {item["sku"]: dict(item) for item in init_config.get("items", [])}

    def get_item(self, sku):
        item = self.items.get(sku)
        if item is None:
            return {"ok": False, "data": None, "error": {"code": "not_found", "message": sku}}
        return {"ok": True, "data": item, "error": None}
"""


def test_environments_omniabench_would_build_differently_are_skipped(
    mock_tasks: list[Task], mock_bundle: Bundle, sandbox: Sandbox, tmp_path: Path
) -> None:
    tools = [{"type": "function", "function": {"name": "get_item", "description": "One item by SKU.",
              "parameters": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]}}}]  # fmt: skip
    reshaping = Bundle.from_source(RESHAPING_ENV, tools, {"items": [{"sku": "A", "qty": 1}]})
    lookup = Task(
        env_id="inventory", kind="dag_standard", coordinate=mock_coordinate(["tool_use"], "tool_parameter_grounding"),
        init_config=dict(reshaping.s0), query="How many of item A are there?", expected_answer={"qty": 1},
        rubric=(RubricItem(id="T1", text="Says 1.", scope="task", check=Check(kind="answer_equals", field="qty", value=1)),),
    )  # fmt: skip
    summary = export_tasks(
        [lookup, mock_tasks[0]], {"inventory": reshaping, MOCK_ENV: mock_bundle}, tmp_path, sandbox=sandbox
    )
    assert summary.tasks == 1 and [s.task_id for s in summary.skipped] == [lookup.id]
    assert "['items']" in summary.skipped[0].reason and "constructor" in summary.skipped[0].reason


def test_tasks_that_cannot_export_are_skipped_with_reasons(
    mock_tasks: list[Task], mock_bundle: Bundle, tmp_path: Path
) -> None:
    broken = mock_tasks[2].model_copy(update={"verifier_code": None, "id": "broken"})
    orphan = mock_tasks[0].model_copy(update={"env_id": "gone", "id": "orphan"})
    summary = export_tasks([broken, orphan, mock_tasks[1]], {MOCK_ENV: mock_bundle}, tmp_path)
    reasons = {s.task_id: s.reason for s in summary.skipped}
    assert summary.tasks == 1
    assert "verifier_code" in reasons["broken"] and "no bundle for gone" in reasons["orphan"]


# States that exercise each state check: a record changed, created, deleted, and collateral damage.
_BEFORE: dict[str, Any] = {
    "tasks": {"t1": {"id": "t1", "status": "open", "owner": "u1", "hours": 2.0}, "t2": {"id": "t2", "status": "open", "owner": "u2", "hours": 1}},
    "now": "2026-01-01T00:00:00",
}  # fmt: skip
_AFTERS = [
    _BEFORE,
    {
        **_BEFORE,
        "tasks": {**_BEFORE["tasks"], "t1": {**_BEFORE["tasks"]["t1"], "status": "Done ", "hours": 2.004}},
    },
    {
        **_BEFORE,
        "tasks": {**_BEFORE["tasks"], "t3": {"id": "t3", "status": "open", "owner": "u1", "hours": 3}},
    },
    {**_BEFORE, "tasks": {"t2": _BEFORE["tasks"]["t2"]}, "now": "2026-01-02T00:00:00"},
    {**_BEFORE, "tasks": {**_BEFORE["tasks"], "t2": {**_BEFORE["tasks"]["t2"], "owner": "u1"}}},
]
_CHECKS = [
    Check(kind="field_equals", table="tasks", key="t1", field="status", value="done"),
    Check(kind="field_equals", table="tasks", key="t1", field="hours", value=2.0, tolerance=0.01),
    Check(kind="field_changed", table="tasks", key="t1", field="status"),
    Check(kind="field_unchanged", table="tasks", key="t2", field="owner"),
    Check(kind="record_exists", table="tasks", match={"owner": "u1", "hours": 3}),
    Check(kind="record_absent", table="tasks", match={"id": "t1"}),
    Check(kind="count_equals", table="tasks", match={"owner": "u1"}, value=2),
    Check(kind="diff_within", value=[{"table": "tasks", "key": "t1"}]),
    Check(kind="diff_within", value=[{"table": "tasks", "key": None}]),
    Check(kind="field_equals", table="tasks", key="missing", field="status", value="open"),
]


def _task_with(check: Check) -> Task:
    return Task(
        env_id="e", kind="dag_standard", coordinate=mock_coordinate(["tool_use"], "tool_parameter_grounding"),
        init_config=_BEFORE, query="q", rubric=(RubricItem(id="T1", text="t", scope="task", check=check),),
    )  # fmt: skip


def test_exported_state_checks_judge_exactly_like_the_grader(sandbox: Sandbox) -> None:
    disagreements = []
    for check in _CHECKS:
        source = state_check_source(check, f"{check.kind} under test")
        task = _task_with(check)
        for after in _AFTERS:
            ours, _ = run_check(check, task, Outcome(final_state=after))
            exported = sandbox.run_check(source, _BEFORE, after)
            assert exported.error is None, exported.error
            if exported.passed is not ours:
                disagreements.append((check.kind, check.key, after is _BEFORE, ours, exported.passed))
    assert not disagreements
    verdicts = {sandbox.run_check(state_check_source(c, "x"), _BEFORE, _AFTERS[1]).passed for c in _CHECKS}
    assert verdicts == {True, False}  # the battery really separates passing from failing states


def test_exported_answer_verifier_scores_like_the_grader(sandbox: Sandbox) -> None:
    checks = [
        (Check(kind="answer_equals", field="total", value=12.5, tolerance=0.01), 2),
        (Check(kind="answer_equals", field="ids", value=["a", "b"]), 1),
        (Check(kind="answer_contains", field="note", value=["refund"]), 1),
    ]
    source = answer_verifier_source(checks, "answers under test")
    probe = (
        source
        + "\n\ndef check_func(final_state):\n    return verify(final_state['answer'], final_state['truth']) == final_state['want']\n"
    )
    truth = {"total": 12.5, "ids": ["a", "b"], "note": ["refund"]}
    cases = [
        ({"total": "12.504", "ids": ["b", "a"], "note": "Full REFUND issued"}, truth, 1.0),
        ({"total": 12.6, "ids": ["a", "b"], "note": "refund"}, truth, 0.5),
        ({"total": 12.5}, {"total": 12.5}, 1.0),  # only the fields the ground truth names count
        ({"ids": ["a"]}, truth, 0.0),
        (["not", "a", "dict"], truth, 0.0),
    ]
    for answer, expected, want in cases:
        result = sandbox.run_check(probe, {}, {"answer": answer, "truth": expected, "want": want})
        assert result.passed is True, (answer, want, result)


def test_export_round_reads_the_home(
    mock_tasks: list[Task], mock_bundle: Bundle, home: Path, tmp_path: Path
) -> None:
    storage = Storage(home)
    save_records(
        storage.artifact("dag_tasks", "r1"), [t.in_round("r1") for t in mock_tasks[:2]], flat=["env_id"]
    )
    save_records(storage.artifact("program_tasks", "r1"), [mock_tasks[2].in_round("r1")], flat=["env_id"])
    mock_bundle.save(storage.env_dir(MOCK_ENV))
    summary = export_omniabench("r1", tmp_path / "export", home=home)
    assert summary.tasks == 3 and summary.by_kind == {"dag_standard": 1, "dag_challenge": 1, "program": 1}
    assert json.loads((tmp_path / "export" / "manifest.json").read_text())["source"]["round"] == "r1"
    with pytest.raises(FileNotFoundError, match="materialize the task assets"):
        export_omniabench("r9", tmp_path / "none", home=home)


def test_task_item_is_deterministic(mock_tasks: list[Task], mock_bundle: Bundle) -> None:
    first = task_item(mock_tasks[0], mock_bundle, 3_000_000)
    assert first == task_item(mock_tasks[0], mock_bundle, 3_000_000)
    assert first["reference_solution"]["calls"] == [
        {"name": "create_task", "arguments": {"user_id": "user_2", "title": "Plan the sprint"}}
    ]
    assert "reference_solution" not in task_item(mock_tasks[0], mock_bundle, 1, include_reference=False)


@pytest.mark.slow
def test_every_task_kind_exports_and_its_reference_passes_the_contract_loader(
    kinds: Kinds, sandbox: Sandbox, tmp_path: Path
) -> None:
    summary = export_tasks(kinds.tasks, kinds.bundles, tmp_path, sandbox=sandbox)
    assert not summary.skipped and set(summary.by_kind) == set(TASK_KINDS), summary.by_kind
    assert set(summary.by_route) == {"route1", "route2", "route3", "route4"}
    results = load_and_score(_routes(summary))
    assert len(results) == len(kinds.tasks)
    failing = [r for r in results if not r["passed"]]
    assert not failing, failing
    assert {r["kind"] for r in results} == set(TASK_KINDS)
    empty = load_and_score(_routes(summary), empty=True)
    assert not [r for r in empty if r["passed"]], "an empty run must not pass any exported task"
