"""One small round through every stage in process — seeds -> ... -> RL checkpoint -> OmniaBench, with
lineage — then the failure sensor's tick and the PRD-guided round it asks for."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import AssetKey, materialize

from agentomnia.lineage import LineageStore
from tests.fixtures.rounds import materialize_round


@pytest.mark.slow
def test_a_small_round_runs_end_to_end_with_lineage(home: Path) -> None:
    small = {
        "state_specs": {"max_environments": 4},
        "dag_tasks": {"standard_per_env": 2, "challenge_per_env": 1},
        "program_tasks": {"per_env": 1},
        "solver_tasks": {"per_family": 1, "guided_per_family": 1},
        "sft_checkpoint": {"max_steps": 8},
        "rl_checkpoint": {"max_steps": 1},
        "omniabench_eval": {"policies": ["baseline:heuristic"], "trials": 2, "max_steps": 12},
        "agent_learning": {"limit": 4},
    }
    # a round: every asset but the static taxonomy and the separate scale corpus
    result = materialize_round(small, skip=["taxonomy"])
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
    if rl.metadata["trained"].value:
        # the GRPO step logs each reward component, the safeguard's activations and the adopted weights
        assert {"reward/task_reward", "reward/format_reward", "safeguard_activations"} <= set(rl.metadata)
        assert "auxiliary_weights" in rl.metadata
    events = {
        e.materialization.asset_key.to_user_string(): e.materialization
        for e in result.get_asset_materialization_events()
    }
    analysis, audit = events["rollout_analysis"], events["reward_audit"]
    assert analysis.metadata["successful"].value + analysis.metadata["failed"].value > 0
    assert "| indicator |" in analysis.metadata["table"].value.lower()
    assert audit.metadata["audited"].value >= 0 and "table" in audit.metadata
    # the round's agent is measured against the untrained model it started from, on held-out reference steps
    sft, learning = events["sft_checkpoint"], events["agent_learning"]
    assert str(sft.metadata["started_from"].value).startswith("tiny offline")
    assert learning.metadata["probes"].value > 0
    base, trained = (
        learning.metadata["base/action_likelihood"].value,
        learning.metadata["sft/action_likelihood"].value,
    )
    assert trained > base  # 8 steps of SFT already make the reference replies likelier
    calibration = events["reward_model_report"]
    assert {"C_RM", "reliability", "rank", "direction", "magnitude", "consistency"} <= set(
        calibration.metadata
    )
    _evolve(home, small)


def _evolve(home: Path, small: dict) -> None:  # type: ignore[type-arg]
    """r0's heuristic failures -> a sensor tick -> round r1 from PRDs, closer to the failures."""
    import json

    from dagster import DagsterInstance, SensorResult, build_sensor_context

    from agentomnia.omniabench.store import FailureStore
    from agentomnia.seeds.models import Seed
    from agentomnia.storage import Storage, load_records
    from agentomnia_assets.definitions import defs
    from sensors import omniabench_failure_sensor

    store = Storage(home)
    failures = FailureStore(store.lineage_path).failures(round="r0")
    assert failures and all(f.tags for f in failures)
    with DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("rounds", ["r0"])
        tick = omniabench_failure_sensor(
            build_sensor_context(instance=instance, resources={"storage": defs.resources["storage"]})
        )
        assert isinstance(tick, SensorResult) and tick.run_requests
        request = tick.run_requests[0]
        assert request.partition_key == "r1" and request.tags["agentomnia/parent_round"] == "r0"
        instance.add_dynamic_partitions("rounds", ["r1"])
        names = {"failure_diagnosis", "prds", "raw_seeds", "environment_candidates", "selected_environment_seeds",
                 "state_specs", "toolsets", "environments", "dag_tasks", "program_tasks", "solver_tasks",
                 "omniabench_split", "prd_alignment"}  # fmt: skip
        result = materialize(
            [*defs.assets, *defs.asset_checks],  # type: ignore[list-item]
            selection=[AssetKey(n) for n in names],
            partition_key="r1",
            instance=instance,
            resources=defs.resources,
            tags=dict(request.tags),
            run_config={"ops": {n: {"config": c} for n, c in small.items() if n in names}},
        )
    assert result.success
    prds = next(e.materialization for e in result.get_asset_materialization_events()
                if e.materialization.asset_key == AssetKey("prds"))  # fmt: skip
    assert prds.metadata["prds"].value >= 1
    seeds = load_records(store.artifact("raw_seeds", "r1"), Seed)
    assert seeds and all(s.metadata.get("prd_ids") for s in seeds)  # every r1 seed serves a PRD
    alignment = json.loads(store.artifact("prd_alignment", "r1", "alignment.json").read_text())
    assert alignment["kl_round"] < alignment["kl_previous"]
    # the benchmark stays held out of the new round's training tasks
    from agentomnia.catalog import Catalog

    benchmark = Catalog(store).benchmark()
    training = store.round("r1").training_task_ids()
    assert benchmark is not None and training is not None
    assert not set(benchmark[0].task_ids) & training
