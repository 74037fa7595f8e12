"""One small round through every stage in process: seeds -> ... -> RL checkpoint, with lineage."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import AssetKey, instance_for_test, materialize

from agentomnia.lineage import LineageStore


@pytest.mark.slow
def test_a_small_round_runs_end_to_end_with_lineage(home: Path) -> None:
    from agentomnia_assets.definitions import defs

    small = {
        "state_specs": {"max_environments": 4},
        "dag_tasks": {"standard_per_env": 2, "challenge_per_env": 1},
        "program_tasks": {"per_env": 1},
        "solver_tasks": {"per_family": 1, "guided_per_family": 1},
        "sft_checkpoint": {"max_steps": 8},
        "rl_checkpoint": {"max_steps": 1},
    }
    selection = [k for k in defs.resolve_asset_graph().get_all_asset_keys() if k != AssetKey("taxonomy")]
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("rounds", ["r0"])
        result = materialize(
            [*defs.assets, *defs.asset_checks],  # type: ignore[list-item]
            selection=selection,
            partition_key="r0",
            instance=instance,
            resources=defs.resources,
            run_config={"ops": {name: {"config": cfg} for name, cfg in small.items()}},
        )
    assert result.success
    failed_checks = [c.check_name for c in result.get_asset_check_evaluations() if not c.passed]
    assert failed_checks == []
    store = LineageStore(home / "lineage.duckdb")
    kinds = {(r["kind"], r["status"]) for r in store.counts()}
    for kind in (
        "seed",
        "env_candidate",
        "environment",
        "tool",
        "task",
        "trajectory",
        "checkpoint",
        "dataset",
    ):
        assert (kind, "ok") in kinds, kind
    # a DAG task traces back through its environment to the seed it came from
    task = next(
        r for r in store.find(kind="task", status="ok") if str(r.meta.get("task_kind", "")).startswith("dag")
    )
    ancestor_kinds = {row.kind for row in store.trace(task.id).rows.values() if row is not None}
    assert {"environment", "toolset", "env_spec", "env_candidate", "seed"} <= ancestor_kinds
    assert (home / "checkpoints" / "sft" / "r0").exists()
    rl = next(
        e.materialization
        for e in result.get_asset_materialization_events()
        if e.materialization.asset_key == AssetKey("rl_checkpoint")
    )
    rl_rows = rl.metadata["rows"].value
    # the RL set keeps only tasks the pass@K policy does not find easy; when none is left, nothing is trained
    assert (home / "checkpoints" / "rl" / "r0").exists() == (rl_rows > 0) == rl.metadata["trained"].value
