"""Fixtures for interoperability: tasks of every kind on small environments, and a sandbox.

Two sets. `mock_tasks` are hand-written on the shipped mock task tracker and cover every route and
every way a rubric item is decided, in well under a second. `kinds` are the real thing: the parcel
fixture's hand-written tasks plus tasks the project's own synthesizers make on small inputs (one
DAG-Standard, one DAG-Challenge and one program task on the parcel environment, one solver-anchored
knapsack task and one solver-guided facility-selection task with a stub model), so every task kind
the platform produces goes through the export.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentomnia.envs.build import BuiltEnv, build_environment, write_bundle
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.fixtures import fixture_bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.seeds.inference import propose_offline
from agentomnia.seeds.parsers import parse_mcp
from agentomnia.tasks.dag import synthesize_dag_tasks
from agentomnia.tasks.models import Check, Persona, ReferenceCall, RubricItem, Task
from agentomnia.tasks.program import synthesize_program_tasks
from agentomnia.tasks.solver import synthesize_guided_tasks, synthesize_solver_tasks
from agentomnia.taxonomy import Coordinate, load_taxonomy
from tests.envs.conftest import PARCEL_TOOLS
from tests.tasks.solver.test_solver_synthesis import GreedyModel
from tests.trajectories.conftest import (
    Parcel,
    approve_task,
    assign_task,
    count_task,
    program_task,
    reject_task,
)

MOCK_ENV = "mock-tracker"


@pytest.fixture(scope="session")
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox(workers=1, idle_timeout_s=0)
    yield box
    box.close()


def mock_coordinate(capabilities: list[str], atom: str) -> Coordinate:
    return Coordinate.for_domain(10041, capabilities, [atom], primary=atom)  # Productivity > Task Management


@pytest.fixture(scope="session")
def mock_bundle() -> Bundle:
    return fixture_bundle("mock")


@pytest.fixture(scope="session")
def mock_tasks(mock_bundle: Bundle) -> list[Task]:
    s0 = dict(mock_bundle.s0)
    create = Task(
        env_id=MOCK_ENV, kind="dag_standard", coordinate=mock_coordinate(["tool_use"], "tool_parameter_grounding"),
        init_config=s0, query="Open a task 'Plan the sprint' for Grace Hopper.",
        reference_calls=(ReferenceCall(tool="create_task", args={"user_id": "user_2", "title": "Plan the sprint"}),),
        expected_diff=({"table": "tasks", "key": "task_4", "field": None, "before": None, "after": "created"},),
        rubric=(
            RubricItem(id="T1", text="Grace has a task 'Plan the sprint'.", scope="task", weight=2,
                       check=Check(kind="record_exists", table="tasks", match={"user_id": "user_2", "title": "plan the  sprint"})),
            RubricItem(id="T2", text="Task 1 is still open.", scope="task",
                       check=Check(kind="field_unchanged", table="tasks", key="task_1", field="status")),
            RubricItem(id="G1", text="Only a new task was added.", scope="general",
                       check=Check(kind="diff_within", value=[{"table": "tasks", "key": None}])),
        ),
    )  # fmt: skip
    question = Task(
        env_id=MOCK_ENV, kind="dag_challenge", coordinate=mock_coordinate(["information_gathering"], "structured_information"),
        init_config=s0, query="How many of Ada's tasks are not done yet, and what are they called?",
        reference_calls=(ReferenceCall(tool="list_tasks", args={"user_id": "user_1"}),),
        expected_answer={"open_count": 2, "titles": ["Book the team offsite", "File the quarterly report"]},
        rubric=(
            RubricItem(id="T1", text="Says Ada has 2 unfinished tasks.", scope="task", weight=2,
                       check=Check(kind="answer_equals", field="open_count", value=2)),
            RubricItem(id="T2", text="Names the report task.", scope="task",
                       check=Check(kind="answer_contains", field="titles", value=["file the quarterly report"])),
            RubricItem(id="G1", text="Changes no task status while answering.", scope="general",
                       check=Check(kind="not_called", tool="update_task_status")),
        ),
    )  # fmt: skip
    program = Task(
        env_id=MOCK_ENV, kind="program", coordinate=mock_coordinate(["code_programmatic"], "dynamic_planning"),
        init_config=s0, query="Finish every task of Ada's that is in progress and report which ones you finished.",
        reference_program=(
            "def solve(call):\n"
            "    listing = call('list_tasks', user_id='user_1', status='in_progress')\n"
            "    done = []\n"
            "    for task in listing['data']:\n"
            "        if call('update_task_status', task_id=task['task_id'], status='done')['ok']:\n"
            "            done.append(task['task_id'])\n"
            "    return {'finished': done, 'count': len(done)}\n"
        ),
        expected_answer={"finished": ["task_2"], "count": 1},
        rubric=(
            RubricItem(id="T1", text="Task 2 is done and nothing else changed.", scope="task", weight=3,
                       check=Check(kind="verifier")),
            RubricItem(id="T2", text="Reports task_2 as finished.", scope="task", weight=2,
                       check=Check(kind="answer_equals", field="finished", value=["task_2"])),
            RubricItem(id="T3", text="Reports one task.", scope="task", check=Check(kind="answer_equals", field="count", value=1)),
        ),
        verifier_code=(
            "def check_func(final_state):\n"
            "    after = final_state['tasks']\n"
            "    before = initial_state['tasks']\n"
            "    return after['task_2']['status'] == 'done' and all(after[k] == before[k] for k in before if k != 'task_2')\n"
        ),
        candidate_tools=("list_tasks", "update_task_status"),
    )  # fmt: skip
    handover = Task(
        env_id=MOCK_ENV, kind="solver_anchored", coordinate=mock_coordinate(["interactive_collaboration"], "progressive_disclosure"),
        init_config=s0, query="Hand my offsite task over to Grace.",
        reference_calls=(ReferenceCall(tool="assign_task", args={"task_id": "task_2", "user_id": "user_2"}),),
        expected_diff=({"table": "tasks", "key": "task_2", "field": "user_id", "before": "user_1", "after": "user_2"},),
        rubric=(
            RubricItem(id="T1", text="The offsite task is handed over.", scope="task", weight=2,
                       check=Check(kind="called", tool="assign_task", args={"task_id": "task_2"})),
            RubricItem(id="G1", text="The assistant confirms which task it moved.", scope="general"),
        ),
        interaction="multi",
        persona=Persona(name="Ada", granularity="terse", withheld={"task_id": "task_2"}),
    )  # fmt: skip
    return [create, question, program, handover]


@pytest.fixture(scope="session")
def parcel(sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Parcel:
    seed = parse_mcp(PARCEL_TOOLS, source="test://parcel-claims.json", name="parcel-claims")
    domain = load_taxonomy().by_id(20096)
    candidate = propose_offline(seed, domain, 0.55, 0.3, [0.55, 0.5, 0.4])
    built = build_environment(candidate, [seed], domain, sandbox)
    assert isinstance(built, BuiltEnv), built
    return Parcel(built, write_bundle(built, tmp_path_factory.mktemp("bundles") / built.env_id), sandbox)


class Kinds:
    """Tasks of every kind and the bundles they run on."""

    def __init__(self, tasks: list[Task], bundles: dict[str, Bundle]) -> None:
        self.tasks = tasks
        self.bundles = bundles


@pytest.fixture(scope="session")
def kinds(parcel: Parcel, sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Kinds:
    tasks = [
        approve_task(parcel),
        count_task(parcel),
        program_task(parcel),
        assign_task(parcel),
        reject_task(parcel),
    ]
    for variant in ("dag-standard", "dag-challenge"):
        made, _ = synthesize_dag_tasks(parcel.folder, sandbox, variant=variant, n=1, seed=0)
        tasks += made
    made, _ = synthesize_program_tasks(parcel.folder, sandbox, n=1, seed=0)
    tasks += made
    out: Path = tmp_path_factory.mktemp("solver_envs")
    anchored, dirs, _ = synthesize_solver_tasks(
        sandbox, families=["knapsack"], per_family=1, out_dir=out, seed=5
    )
    guided, gdirs, _, _ = synthesize_guided_tasks(
        sandbox, GreedyModel(), families=["facility_selection"], per_family=1, out_dir=out
    )
    tasks += anchored + guided
    bundles = {parcel.env_id: parcel.bundle} | {d.name: Bundle.load(d) for d in dirs + gdirs}
    return Kinds(tasks, bundles)
