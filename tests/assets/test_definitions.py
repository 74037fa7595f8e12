"""The Dagster code location loads, and its graph is what the design says."""

from __future__ import annotations

from dagster import AssetKey

from agentomnia_assets.definitions import defs

EXPECTED_GROUPS = {
    "taxonomy": "seeds",
    "raw_seeds": "seeds",
    "environment_candidates": "seeds",
    "selected_environment_seeds": "seeds",
    "state_specs": "environments",
    "toolsets": "environments",
    "environments": "environments",
    "environment_stats": "environments",
    "dag_tasks": "tasks",
    "program_tasks": "tasks",
    "solver_tasks": "tasks",
    "trajectories": "trajectories",
    "verified_trajectories": "trajectories",
    "sft_dataset": "trajectories",
    "rl_dataset": "trajectories",
    "sft_checkpoint": "training",
    "rl_checkpoint": "training",
    "rollout_analysis": "training",
    "reward_audit": "training",
    "scale_corpus": "scale",
}


def test_definitions_load_with_the_expected_assets_and_groups() -> None:
    graph = defs.resolve_asset_graph()
    groups = {k.to_user_string(): graph.get(k).group_name for k in graph.get_all_asset_keys()}
    missing = {k: v for k, v in EXPECTED_GROUPS.items() if groups.get(k) != v}
    assert not missing, f"assets missing or in the wrong group: {missing}"
    assert set(groups.values()) <= {
        "seeds",
        "environments",
        "tasks",
        "trajectories",
        "training",
        "omniabench",
        "evolution",
        "scale",
    }


def test_the_scale_corpus_is_its_own_job_and_never_part_of_a_round() -> None:
    from agentomnia_assets.pipeline import SCALE_GROUP
    from jobs import evolution_job, scale_job, synthesis_job

    graph = defs.resolve_asset_graph()
    scale = AssetKey("scale_corpus")
    assert graph.get(scale).group_name == SCALE_GROUP
    assert scale_job.selection.resolve(graph) == {scale}
    for job in (synthesis_job, evolution_job):
        assert scale not in job.selection.resolve(graph)


def test_every_asset_has_a_description_and_round_partitions_where_it_should() -> None:
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.description and len(node.description) > 30, f"{key.to_user_string()} needs a description"
        partitioned = node.partitions_def is not None
        assert partitioned == (key != AssetKey("taxonomy")), key


def test_lineage_order_of_the_synthesis_stages() -> None:
    graph = defs.resolve_asset_graph()

    def parents(name: str) -> set[str]:
        return {k.to_user_string() for k in graph.get(AssetKey(name)).parent_keys}

    assert parents("environment_candidates") == {"raw_seeds"}
    assert parents("selected_environment_seeds") == {"environment_candidates"}
    assert parents("state_specs") == {"selected_environment_seeds"}
    assert parents("environments") == {"toolsets"}
    # training sees the round's tasks only through the benchmark split, which holds items out
    assert parents("omniabench_split") == {"dag_tasks", "program_tasks", "solver_tasks"}
    assert parents("trajectories") == {"omniabench_split"}
    # RL uses the auxiliary rewards the round's rollout analysis adopted
    assert parents("rl_checkpoint") == {"sft_checkpoint", "rl_dataset", "rollout_analysis", "reward_audit"}
    assert parents("rollout_analysis") == {"trajectories", "rl_dataset"}
    assert parents("reward_audit") == {"trajectories"}
    assert parents("reward_model_report") == {"trajectories", "verified_trajectories"}  # held out from SFT
    # not on sft_checkpoint, though "sft" difficulty reads it: that edge stops the UI's lineage expanding
    assert parents("rl_dataset") == {"verified_trajectories"}
    # self-evolution: PRDs steer the round's seeds; the evaluation follows training
    assert parents("raw_seeds") == {"taxonomy", "prds"}
    assert parents("prds") == {"failure_diagnosis"}
    assert parents("omniabench_eval") == {"omniabench_split", "rl_checkpoint"}
    # what the round's agent learned is measured once it is trained, on the held-out benchmark
    assert parents("agent_learning") == {"omniabench_split", "rl_checkpoint"}


def test_jobs_schedules_and_checks() -> None:
    assert defs.resolve_job_def("synthesis_job").partitions_def is not None
    assert {s.name for s in defs.schedules or []} == {"nightly_synthesis"}
    assert {s.name for s in defs.sensors or []} == {"omniabench_failure_sensor", "prd_inbox_sensor"}
    assert {j.name for j in defs.jobs or []} >= {
        "synthesis_job",
        "training_job",
        "omniabench_job",
        "evolution_job",
    }
    checks = {c.name for spec in defs.resolve_asset_graph().asset_check_keys for c in [spec]}
    assert {
        "selected_summaries_unique",
        "selected_coordinates_valid",
        "environments_fully_verified",
        "reference_solves_every_item",
        "noop_scores_zero",
        "training_data_avoids_benchmark",
    } <= checks


def test_duckdb_writers_share_one_pool() -> None:
    graph = defs.resolve_asset_graph()
    for name in (
        "raw_seeds",
        "environment_candidates",
        "selected_environment_seeds",
        "state_specs",
        "toolsets",
        "environments",
    ):
        assert graph.get(AssetKey(name)).pools == {"duckdb"}, name
