"""What the training assets read from the reward audit: the tasks it rejected for a permissive rubric,
which GRPO leaves out of the round's RL rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentomnia.catalog import REWARD_AUDIT, MissingArtifact
from agentomnia.storage import Storage, write_parquet
from agentomnia_assets.training import _row_task_id, audit_rejected_tasks


def test_rl_rows_of_tasks_the_audit_rejected_are_known_by_task_id(tmp_path: Path) -> None:
    artifacts = Storage(tmp_path).round("r0")
    assert audit_rejected_tasks(artifacts) == set()  # no audit yet: nothing is left out
    write_parquet(artifacts.path(REWARD_AUDIT, "permissive"),
                  [{"task_id": "t-permissive", "reason": "T1 (`called` assign_task) is satisfied by any call"}],
                  columns=["task_id", "reason"])  # fmt: skip
    rejected = audit_rejected_tasks(artifacts)
    rows = [{"task": json.dumps({"id": "t-permissive"})}, {"task": json.dumps({"id": "t-fine"})}]
    assert [_row_task_id(r) for r in rows if _row_task_id(r) not in rejected] == ["t-fine"]


def test_the_rollout_analysis_reads_the_policys_attempts_when_they_hold_both_outcomes(tmp_path: Path) -> None:
    from agentomnia.catalog import RL
    from agentomnia.rewards import AnalysisSettings, ScoredRollout
    from agentomnia.trajectories.rl import ROLLOUTS_FILE
    from agentomnia_assets.training import _analysed_rollouts
    from tests.fixtures.mock import mock_bundle, mock_tasks

    store = Storage(tmp_path)
    task = mock_tasks(mock_bundle())[1]

    def attempt(passed: bool) -> ScoredRollout:
        messages = (
            {"role": "user", "content": task.query},
            {"role": "assistant", "content": f"done {passed}"},
        )
        return ScoredRollout(task=task, messages=messages, tools=(), reward=float(passed), succeeded=passed)

    folder = store.round("r0").dataset_dir(RL)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ROLLOUTS_FILE).write_text("".join(attempt(p).model_dump_json() + "\n" for p in (True, False)))
    rollouts, source = _analysed_rollouts(store, "r0", AnalysisSettings())
    assert len(rollouts) == 2 and source.startswith("pass@K attempts")
    (folder / ROLLOUTS_FILE).write_text(attempt(True).model_dump_json() + "\n")  # no failure to compare with
    with pytest.raises(MissingArtifact, match="materialize `trajectories`"):  # so the trajectories are read
        _analysed_rollouts(store, "r0", AnalysisSettings())
