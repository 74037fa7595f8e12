"""Import of OmniaBench route files: synthetic items written here (the real data never ships)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from agentomnia.interop import export_tasks, import_omniabench, read_omniabench, verify_in_sandbox
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.storage import Storage, load_records, read_parquet
from agentomnia.tasks.grading import Outcome, grade
from agentomnia.tasks.models import Task
from agentomnia.trajectories.messages import answer_block, assistant_message, tool_call
from agentomnia.trajectories.rollout import rollout
from tests.fixtures.mock import MOCK_ENV

# An environment written the way OmniaBench's are: plain returns (not our ToolResult), defaults set in
# the constructor, the rest arriving as attributes from init_config.
LIBRARY = '''
class LibraryDesk:
    """A small lending desk: books and the loans made on them."""

    def __init__(self, init_config=None):
        self.books = {}
        self.loans = {}
        self.loan_counter = 0

    def get_book(self, book_id):
        book = self.books.get(book_id)
        if book is None:
            return {"success": False, "error": "no such book"}
        return {"success": True, "book": dict(book)}

    def lend_book(self, book_id, member):
        book = self.books.get(book_id)
        if book is None or not book["available"]:
            return {"success": False, "error": "not available"}
        self.loan_counter += 1
        loan_id = "L" + str(self.loan_counter)
        self.loans[loan_id] = {"loan_id": loan_id, "book_id": book_id, "member": member}
        book["available"] = False
        return {"success": True, "loan_id": loan_id}
'''
TOOLS = [
    {"type": "function", "function": {"name": "get_book", "description": "Look up a book.",
     "parameters": {"type": "object", "properties": {"book_id": {"type": "string"}}, "required": ["book_id"]}}},
    {"type": "function", "function": {"name": "lend_book", "description": "Lend an available book to a member.",
     "parameters": {"type": "object", "properties": {"book_id": {"type": "string"}, "member": {"type": "string"}},
                    "required": ["book_id", "member"]}}},
]  # fmt: skip
BOOKS = {
    "books": {
        "B1": {"book_id": "B1", "title": "Dune", "available": True},
        "B2": {"book_id": "B2", "title": "Emma", "available": True},
        "B3": {"book_id": "B3", "title": "Ulysses", "available": False},
    }
}
LENT = "def check_func(final_state):\n    return final_state['books']['B1']['available'] is False\n"
ONE_LOAN = (
    "def check_func(final_state):\n"
    "    new = [l for k, l in final_state['loans'].items() if k not in initial_state['loans']]\n"
    "    return len(new) == 1 and new[0]['member'] == 'Ana'\n"
)
VERIFY = (
    "def verify(candidate_answer, ground_truth_answer):\n"
    "    return float(candidate_answer.get('available_count') == ground_truth_answer['available_count'])\n"
)
ENV_ITEM = {
    "env_id": "env_7",
    "env_class_name": "LibraryDesk",
    "environment_introduction": "A library lending desk.",
    "constraints_rules": ["A book on loan cannot be lent again."],
    "env_class_code": LIBRARY,
    "tools": TOOLS,
    "strategy_config": {"fs": {"enabled": False}},
}


def lend_item() -> dict[str, Any]:
    return {
        "global_id": 3000001, "task_id": "env_7_task_001", "env_id": "env_7", "task": "Please lend Dune to Ana.",
        "init_config": BOOKS,
        "rubrics": [
            {"tag": "G1", "category": "general", "points": 1, "text": "Does not lend any other book."},
            {"tag": "T1", "category": "task_specific", "points": 2, "text": "Dune is lent to Ana."},
        ],
        "checklist_with_func": [{"check_item": "Dune is out", "check_func": LENT}, {"check_func": ONE_LOAN}],
        "env_item": ENV_ITEM,
        "lang": "en", "difficulty_note": {"level": 3},
    }  # fmt: skip


def count_item() -> dict[str, Any]:
    return {
        "global_id": 2000001, "task_id": "env_7_task_002", "env_id": "env_7",
        "task": "How many books can be borrowed right now? Answer in JSON as {\"available_count\": n}.",
        "init_config": BOOKS, "env_class_code": LIBRARY, "env_class_name": "LibraryDesk", "candidate_tools": TOOLS,
        "verifier_code": VERIFY, "ground_truth_answer": {"available_count": 2},
    }  # fmt: skip


def chat_item() -> dict[str, Any]:
    return {
        "global_id": 17, "task_id": "env_7_task_003", "env_id": "env_7", "task": "You want Emma for your book club.",
        "init_config": BOOKS, "persona_card_md": "# User persona: Ana, a book-club organiser\n- Speaks briefly",
        "rubrics_text": "【General】\nG1 | 1分 | Stays polite.\n【Task-Specific】\nT1 | 2分 | Emma is lent to Ana.\nT2 | 1分 | Confirms the loan id.",
    }  # fmt: skip


def _write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    return {
        "route4": _write(tmp_path / "route4.json", [lend_item()]),
        "route3": _write(tmp_path / "route3.json", [count_item()]),
        "route1": _write(tmp_path / "route1.json", [chat_item()]),
        "envs": _write(
            tmp_path / "env_items.json", {"env_7": {k: v for k, v in ENV_ITEM.items() if k != "env_id"}}
        ),
    }


def test_items_become_tasks_and_bundles_with_nothing_lost(files: dict[str, Path], home: Path) -> None:
    summary = import_omniabench(list(files.values()), home=home, taxonomy_id=10041)
    assert summary.rejected == [] and summary.tasks == 3 and summary.environments == 1
    assert summary.by_route == {"route4": 1, "route3": 1, "route1": 1}
    assert summary.unknown_fields == {"lang": 1, "difficulty_note": 1}
    storage = Storage(home)
    tasks = {
        t.metadata["omniabench"]["task_id"]: t for t in load_records(Path(summary.tasks_path or ""), Task)
    }
    lend, count, chat = tasks["env_7_task_001"], tasks["env_7_task_002"], tasks["env_7_task_003"]
    assert (lend.kind, lend.interaction) == ("dag_standard", "single")
    assert (count.kind, chat.kind, chat.interaction) == ("program", "dag_standard", "multi")
    assert chat.persona is not None and chat.persona.name == "Ana, a book-club organiser"
    assert lend.metadata["omniabench"]["extra"] == {"lang": "en", "difficulty_note": {"level": 3}}
    assert lend.metadata["omniabench"]["checklist"] == [{"check_item": "Dune is out"}, {}]
    assert [(r.id, r.scope, r.weight, r.check is None) for r in lend.rubric] == [
        ("G1", "general", 1, True), ("T1", "task", 2, True), ("C1", "general", 1, False)
    ]  # fmt: skip
    assert [(r.id, r.weight) for r in chat.rubric] == [("G1", 1), ("T1", 2), ("T2", 1)]
    # Their verify() cannot run in our grader: it is kept, and the ground truth becomes an answer item.
    assert count.metadata["omniabench"]["verifier_code"] == VERIFY
    assert count.metadata["omniabench"]["answer_items_approximated"] is True
    assert count.expected_answer == {"available_count": 2} and count.candidate_tools == (
        "get_book",
        "lend_book",
    )
    # One environment (same code and tools in three shapes), its extra fields kept beside the bundle.
    folder = storage.env_dir(lend.env_id)
    assert {lend.env_id, count.env_id, chat.env_id} == {lend.env_id} and lend.env_id.startswith("ob-")
    extras = json.loads((folder / "omniabench.json").read_text())
    assert extras["env_id"] == "env_7" and extras["extra"] == {"strategy_config": {"fs": {"enabled": False}}}
    bundle = Bundle.load(folder)
    assert (bundle.init_mode, bundle.returns, bundle.class_name) == ("attributes", "any", "LibraryDesk")
    # The constructor adds loans and a counter: the observed initial state becomes the init_config.
    assert lend.init_config["loans"] == {} and lend.init_config["loan_counter"] == 0
    assert lend.metadata["omniabench"]["init_config_observed"] is True


def test_imported_task_runs_through_rollout_and_grading(files: dict[str, Path], sandbox: Sandbox) -> None:
    result = verify_in_sandbox(read_omniabench([files["route4"]], taxonomy_id=10041), sandbox)
    task = result.tasks[0]
    bundle = result.bundles[task.env_id]

    class Librarian:
        name = "scripted"

        def __init__(self, turns: Sequence[dict[str, Any]]) -> None:
            self.turns = list(turns)

        def act(
            self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
        ) -> dict[str, Any]:
            return self.turns.pop(0)

    agent = Librarian(
        [
            assistant_message("", [tool_call("c1", "lend_book", {"book_id": "B1", "member": "Ana"})]),
            assistant_message(answer_block({"loan_id": "L1"})),
        ]
    )
    run = rollout(task, bundle, sandbox, agent)
    assert run.stop_reason == "answer" and run.steps[0].ok
    assert json.loads(run.messages[3]["content"])["data"] == {"success": True, "loan_id": "L1"}

    def verifier(code: str, initial_state: Mapping[str, Any], final_state: Mapping[str, Any]) -> bool | None:
        return sandbox.run_check(code, initial_state, final_state).passed

    score = grade(task, Outcome(final_state=run.final_state, answer=run.answer), verifier=verifier)
    assert {i.id: i.passed for i in score.items} == {"G1": None, "T1": None, "C1": True}  # judge items wait
    idle = grade(task, Outcome(final_state=dict(task.init_config)), verifier=verifier)
    assert {i.id: i.passed for i in idle.items}["C1"] is False


def test_malformed_items_are_rejected_with_reasons_and_the_rest_import(tmp_path: Path, home: Path) -> None:
    def variant(**changes: Any) -> dict[str, Any]:
        item = lend_item()
        for key, value in changes.items():
            if value is None:
                item.pop(key, None)
            else:
                item[key] = value
        return item

    bad_points = variant(rubrics=[{"tag": "T1", "category": "task_specific", "points": 5, "text": "x"}])
    with_os = variant(env_item={**ENV_ITEM, "env_class_code": "import os\n" + LIBRARY})
    no_func = variant(checklist_with_func=[{"check_func": "def check(final_state):\n    return True\n"}])
    items = [
        "just text",
        variant(task=None),
        variant(init_config=["B1", "B2", "B3"]),
        bad_points,
        with_os,
        no_func,
        variant(env_item=None, env_id="env_404"),
        variant(env_item={**ENV_ITEM, "env_class_name": "Missing"}),
        lend_item(),
    ]
    route = _write(tmp_path / "route4.json", items)
    broken = tmp_path / "broken.json"
    broken.write_text("[{", encoding="utf-8")
    summary = import_omniabench([route, broken], home=home, taxonomy_id=10041)
    assert summary.tasks == 1
    reasons = {
        (r.subject.rsplit("/", 1)[-1], r.detail["index"]): (r.stage, r.reason) for r in summary.rejected
    }
    assert reasons[("broken.json", None)][0] == "read"
    expected = {
        0: ("item", "task item"),
        1: ("item", "`task`"),
        2: ("item", "`init_config`"),
        3: ("rubric", "points 5"),
        4: ("environment", "sandbox policy"),
        5: ("checks", "check_func"),
        6: ("environment", "env_404"),
        7: ("environment", "Missing"),
    }
    for index, (stage, words) in expected.items():
        got = reasons[("route4.json", index)]
        assert got[0] == stage and words in got[1], (index, got)
    stored = read_parquet(Path(summary.rejected_path or ""))
    assert len(stored) == len(summary.rejected) == 9


def test_domain_comes_from_the_domain_map_or_the_item_is_rejected(
    files: dict[str, Path], tmp_path: Path
) -> None:
    nowhere = read_omniabench([files["route4"]])
    assert not nowhere.tasks and nowhere.rejections[0].stage == "domain"
    assert "task_domain_map.csv" in nowhere.rejections[0].reason
    csv = tmp_path / "task_domain_map.csv"
    csv.write_text("route,global_id,split,taxonomy_id\nroute4,3000001,tob,20096\n", encoding="utf-8")
    mapped = read_omniabench([files["route4"]], domain_map=csv)
    assert mapped.tasks[0].coordinate.taxonomy_id == 20096
    assert mapped.tasks[0].metadata["omniabench"]["coordinate_source"] == "domain map"


def test_our_export_imports_back_with_its_checks(
    mock_tasks: list[Task], mock_bundle: Bundle, sandbox: Sandbox, tmp_path: Path
) -> None:
    summary = export_tasks(mock_tasks, {MOCK_ENV: mock_bundle}, tmp_path / "export")
    routes = [Path(f) for f in summary.files if Path(f).name.startswith("route")]
    result = verify_in_sandbox(read_omniabench(routes), sandbox)
    assert not result.rejections
    back = {t.metadata["omniabench"]["task_id"]: t for t in result.tasks}
    for original in mock_tasks:
        again = back[original.id]
        assert (again.kind, again.interaction, again.coordinate) == (
            original.kind,
            original.interaction,
            original.coordinate,
        )
        assert [(r.id, r.check) for r in again.rubric][: len(original.rubric)] == [
            (r.id, r.check) for r in original.rubric
        ]
        assert again.reference_calls == original.reference_calls
        assert again.reference_program == original.reference_program

    def verifier(code: str, initial_state: Mapping[str, Any], final_state: Mapping[str, Any]) -> bool | None:
        return sandbox.run_check(code, initial_state, final_state).passed

    for task in result.tasks:
        with sandbox.open(result.bundles[task.env_id], task.init_config) as session:
            if task.reference_program:
                program = sandbox.run_program(task.reference_program, session)
                answer, calls = program.answer, [(c.tool, c.arguments) for c in program.calls]
            else:
                calls = [(c.tool, dict(c.args)) for c in task.reference_calls]
                assert all(r.ok for r in session.call_many(calls))
                answer = task.expected_answer
            final = session.state()
        score = grade(task, Outcome(final_state=final, answer=answer, calls=calls), verifier=verifier)
        scored = [i for i in score.items if i.passed is not None]
        assert all(i.passed for i in scored), (task.kind, score.items)
        assert score.unscored == (1 if task.interaction == "multi" else 0)  # the hand-over's judge item
