"""What the training assets read from the reward audit: the tasks it rejected for a permissive rubric,
which GRPO leaves out of the round's RL rows."""

from __future__ import annotations

import json
from pathlib import Path

from agentomnia.catalog import REWARD_AUDIT
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
