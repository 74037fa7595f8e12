"""The same inputs make the same records in any process: nothing depends on Python's per-process
string hash seed (the order of a set of names), so a rerun after a crash, a Celery worker or a second
machine reproduces a clean run's ids exactly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentomnia.tasks.folder import task_files

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
# A video-streaming world: its episodes are unique per (title, season, episode), a rule with three
# members, which is where an unordered set once decided which member was redrawn first.
QUERY = {
    "id": "q-streaming",
    "query": "Keep track of what each viewer profile is watching: episodes, progress, ratings and the watchlist.",
}


def _cli(home: Path, hash_seed: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AGENTOMNIA_HOME": str(home), "PYTHONHASHSEED": hash_seed}
    return subprocess.run(
        [sys.executable, "-m", "agentomnia.cli", *args], env=env, cwd=REPO, capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip


def _task_ids(folder: Path) -> list[str]:
    return sorted(json.loads(p.read_text())["id"] for p in task_files(folder))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(platform home, environment bundle) of the streaming world, built once for the module."""
    root = tmp_path_factory.mktemp("determinism")
    seed = root / "queries.jsonl"
    seed.write_text(json.dumps(QUERY) + "\n")
    home, env = root / "home", root / "env"
    done = _cli(home, "1", "env", "build", "--seed", str(seed), "--domain", "10061", "--out", str(env))
    assert done.returncode == 0, done.stderr
    return home, env


def test_tasks_are_the_same_under_two_hash_seeds(built: tuple[Path, Path], tmp_path: Path) -> None:
    home, env = built
    made: dict[str, dict[str, list[str]]] = {}
    for hash_seed in ("1", "2"):
        for kind in ("dag-challenge", "program"):
            out = tmp_path / f"tasks-{hash_seed}-{kind}"
            done = _cli(home, hash_seed, "tasks", "synth", "--env", str(env), "--kind", kind,
                        "--n", "4", "--out", str(out), "--json")  # fmt: skip
            assert done.returncode == 0, done.stderr
            made.setdefault(hash_seed, {})[kind] = _task_ids(out)
    assert made["1"]["dag-challenge"] or made["1"]["program"], "no task was made; nothing was compared"
    assert made["1"] == made["2"]


HARDEN = """
import json, random, sys
from agentomnia.envs.spec import EnvSpec
from agentomnia.records import content_hash
from agentomnia.tasks.hardening import OPERATORS
folder = sys.argv[1]
spec = EnvSpec.model_validate_json(open(folder + "/spec.json").read())
s0 = json.load(open(folder + "/s0.json"))
out = {}
for name, op in sorted(OPERATORS.items()):
    for e in spec.entities:
        try:
            done = op(spec, s0, random.Random(7), entity=e.name)
        except TypeError:
            done = op(spec, s0, random.Random(7))
        out[name + ":" + e.name] = content_hash(done.state)
print(json.dumps(out))
"""


def test_every_hardening_operator_gives_the_same_state_under_any_hash_seed(built: tuple[Path, Path]) -> None:
    _, bundle = built
    runs = []
    for hash_seed in ("1", "2", "3", "4"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-c", HARDEN, str(bundle)], env=env, cwd=REPO,
                              capture_output=True, text=True, timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        runs.append(json.loads(done.stdout))
    assert len(runs[0]) > 10
    for other in runs[1:]:
        assert {k for k in runs[0] if runs[0][k] != other.get(k)} == set()
