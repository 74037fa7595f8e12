"""The task-family registry: every kind has one family, and what `tasks synth` keeps `tasks check` passes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agentomnia.cli import main
from agentomnia.interop.omniabench import route_of as export_route
from agentomnia.tasks.families import (
    DAG,
    PROGRAM,
    ROUTES,
    SOLVER,
    TASK_FAMILIES,
    family_for_route,
    family_of,
    is_challenging,
    requested_kind,
    route_of,
)
from agentomnia.tasks.folder import MANIFEST_NAME, read_manifest, task_files
from agentomnia.tasks.models import TASK_KINDS, Task
from tests.fixtures.benchmark import make_task

# solver-anchored tasks `tasks synth --kind solver --n 6 --seed 0` make, pinned: the registry did not
# change them. They move when the generated code does (a task's id hashes its environment's source;
# here: a new record's unset dates and a manage tool's own verbs in the generated code).
SOLVER_IDS = {
    "053eef8f41160bbc",
    "45207942358f4e1c",
    "d3da0e6bb24b5dc8",
    "611c1ef2796e7c0a",
    "6a69d84feec8469b",
    "d7744ce3f554dbcc",
}


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if code == 0 else {"stderr": captured.err})


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "home"
    monkeypatch.setenv("AGENTOMNIA_HOME", str(root))
    return root


def test_every_kind_and_route_has_one_family() -> None:
    assert {k for f in TASK_FAMILIES.values() for k in f.kinds} == set(TASK_KINDS)
    assert sum(len(f.kinds) for f in TASK_FAMILIES.values()) == len(TASK_KINDS)
    assert {family_for_route(r).name for r in ROUTES} == set(TASK_FAMILIES)
    assert (
        family_of("dag-challenge") is DAG
        and family_of("solver") is SOLVER
        and family_of("program") is PROGRAM
    )
    assert requested_kind("solver") == (SOLVER, "solver_anchored")
    assert requested_kind("dag-challenge") == (DAG, "dag_challenge")
    with pytest.raises(KeyError, match="unknown task kind"):
        family_of("dag_hard")


def _task(kind: str, multi: bool = False) -> Task:
    return make_task("Approve the claim.", kind=kind, multi=multi)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "multi", "route", "route_id", "challenging"),
    [
        ("dag_standard", False, "dag_s", "route4", False),
        ("dag_standard", True, "dag", "route1", True),
        ("dag_challenge", False, "dag_s", "route4", True),
        ("program", False, "program", "route3", False),
        ("solver_anchored", False, "solver", "route2", False),
        ("solver_guided", False, "solver", "route2", True),
    ],
)
def test_routes_and_challenging_keep_their_values(
    kind: str, multi: bool, route: str, route_id: str, challenging: bool
) -> None:
    task = _task(kind, multi)
    assert route_of(task) == route  # the split's stratification
    assert export_route(task) == route_id  # the OmniaBench export's route files
    assert is_challenging(task) is challenging


@pytest.mark.parametrize(
    ("kind", "env", "n"),
    [("dag-standard", "freight_dir", 2), ("dag-challenge", "freight_dir", 2), ("program", "parcel_dir", 2),
     ("solver", None, 6)],
)  # fmt: skip
def test_synth_then_check_agree(
    kind: str,
    env: str | None,
    n: int,
    home: Path,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "made"
    args = ["tasks", "synth", "--kind", kind, "--n", str(n), "--out", str(out)]
    if env is not None:
        args += ["--env", str(request.getfixturevalue(env))]
    code, made = cli(capsys, *args)
    assert code == 0, made
    assert made["kept"] >= 1, made["rejected"]
    family, _ = requested_kind(kind)
    kinds = {Task.model_validate_json(p.read_text()).kind for p in task_files(out)}
    assert kinds <= set(family.kinds)
    code, checked = cli(capsys, "tasks", "check", str(out))
    assert code == 0, checked
    assert checked["tasks"] == checked["oracle_pass"] == checked["empty_fail"] == made["kept"]
    assert not (home / "envs").exists()  # found through the folder's manifest, not the platform home


def test_solver_ids_unchanged_and_a_moved_folder_still_checks(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "deep" / "custom-out"
    code, made = cli(capsys, "tasks", "synth", "--kind", "solver", "--n", "6", "--out", str(out))
    assert code == 0 and made["kept"] == 6, made
    assert {p.stem for p in task_files(out)} == SOLVER_IDS
    assert set(read_manifest(out)) == {
        Task.model_validate_json(p.read_text()).env_id for p in task_files(out)
    }
    moved = tmp_path / "elsewhere"
    shutil.copytree(out, moved)
    shutil.rmtree(out)
    code, checked = cli(capsys, "tasks", "check", str(moved))
    assert code == 0 and checked["oracle_pass"] == 6, checked

    # a task whose verifier accepts anything is caught by the solver family's own check
    victim = task_files(moved)[0]
    task = Task.model_validate_json(victim.read_text())
    broken = Task.model_validate(
        task.model_dump() | {"verifier_code": "def check_func(final_state):\n    return True\n", "id": ""}
    )
    victim.write_text(broken.model_dump_json(), encoding="utf-8")
    code, failed = cli(capsys, "tasks", "check", str(moved))
    assert code == 1 and "untouched draft passes" in failed["stderr"]


def test_check_without_manifest_says_where_it_looked(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "made"
    code, _ = cli(capsys, "tasks", "synth", "--kind", "solver", "--n", "1", "--out", str(out))
    assert code == 0
    (out / MANIFEST_NAME).unlink()
    shutil.move(str(out / "envs"), str(tmp_path / "bundles"))
    code, failed = cli(capsys, "tasks", "check", str(out))
    assert code == 1 and "not found" in failed["stderr"] and "pass --envs" in failed["stderr"]
    code, checked = cli(capsys, "tasks", "check", str(out), "--envs", str(tmp_path / "bundles"))
    assert code == 0 and checked["failures"] == [], checked
