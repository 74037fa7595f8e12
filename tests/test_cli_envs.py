"""`agentomnia env ...` and `agentomnia tasks ...` on a bundle built from a small MCP seed file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agentomnia.tasks.folder import task_files
from tests.fixtures.cli import run_cli
from tests.fixtures.domains import PARCEL_TOOLS

BUILD_TIMEOUT_S = 600  # a full build and synthesis from a seed file, in a fresh interpreter


def _cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, home=home, timeout_s=BUILD_TIMEOUT_S)


@pytest.mark.slow
def test_env_and_task_verbs_round_trip(home: Path, tmp_path: Path) -> None:
    seed = tmp_path / "parcel.json"
    seed.write_text(json.dumps(PARCEL_TOOLS))
    bundle = home / "envs" / "parcel"
    built = _cli(
        "env", "build", "--seed", str(seed), "--domain", "20096", "--out", str(bundle), "--json", home=home
    )
    assert built.returncode == 0, built.stderr
    report = json.loads(built.stdout)
    assert report["verified"] and report["levels"] == {"init": True, "tool": True, "env": True}
    assert report["seed_tools_kept"] / report["seed_tools"] >= 0.8 and len(report["tools"]) >= 30

    s0 = json.loads((bundle / "s0.json").read_text())
    claim = sorted(s0["claims"])[0]
    called = _cli(
        "env",
        "call",
        str(bundle),
        "get_claim",
        "--args",
        json.dumps({"claim_id": claim}),
        "--json",
        home=home,
    )
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout)["result"]["ok"] and json.loads(called.stdout)["diff"] == []
    bad = _cli("env", "call", str(bundle), "get_claim", "--args", "{not json", home=home)
    assert bad.returncode == 1 and "--args is not JSON" in bad.stderr

    assert _cli("env", "check", str(bundle), home=home).returncode == 0
    (bundle / "env.py").write_text(
        (bundle / "env.py").read_text().replace("def get_claim(", "def get_claim_renamed(")
    )
    broken = _cli("env", "check", str(bundle), home=home)
    assert broken.returncode == 1 and "fails verification" in broken.stderr

    # tasks on a fresh copy of the bundle, placed where `tasks check` looks (envs/<env_id>)
    rebuilt = _cli(
        "env",
        "build",
        "--seed",
        str(seed),
        "--domain",
        "20096",
        "--out",
        str(home / "envs" / report["env_id"]),
        home=home,
    )
    assert rebuilt.returncode == 0, rebuilt.stderr
    tasks_dir = tmp_path / "tasks"
    synth = _cli(
        "tasks",
        "synth",
        "--env",
        str(home / "envs" / report["env_id"]),
        "--kind",
        "dag-standard",
        "--n",
        "3",
        "--out",
        str(tasks_dir),
        "--json",
        home=home,
    )
    assert synth.returncode == 0, synth.stderr
    made = json.loads(synth.stdout)
    assert made["requested"] == 3 and made["kept"] >= 1 and len(task_files(tasks_dir)) == made["kept"]
    checked = _cli("tasks", "check", str(tasks_dir), "--json", home=home)
    assert checked.returncode == 0, checked.stderr
    result = json.loads(checked.stdout)
    assert result["tasks"] == made["kept"] == result["oracle_pass"] == result["empty_fail"]
    missing = _cli("tasks", "synth", "--kind", "program", "--out", str(tmp_path / "x"), home=home)
    assert missing.returncode == 1 and "needs --env" in missing.stderr
