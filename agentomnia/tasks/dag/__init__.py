"""DAG-based task synthesis (paper §4.4.1): dependency graph, group sampling, augmented DAG,
execution-grounded generation and refinement into DAG-Standard and DAG-Challenge tasks."""

from agentomnia.tasks.dag.augment import VIRTUAL_TYPES, AugmentedDAG, VirtualNode
from agentomnia.tasks.dag.graph import EDGE_KINDS, EdgeCandidate, GraphReport, build_tool_graph
from agentomnia.tasks.dag.profiles import CHALLENGE, STANDARD, RefinementProfile, profile_for
from agentomnia.tasks.dag.sampling import ToolGroup, chain_pool, jaccard, sample_groups
from agentomnia.tasks.dag.synth import (
    TaskCheckResult,
    check_task,
    load_env,
    summarize_tasks,
    synthesize_dag_tasks,
    synthesize_dag_variants,
)

__all__ = [
    "CHALLENGE",
    "EDGE_KINDS",
    "STANDARD",
    "VIRTUAL_TYPES",
    "AugmentedDAG",
    "EdgeCandidate",
    "GraphReport",
    "RefinementProfile",
    "TaskCheckResult",
    "ToolGroup",
    "VirtualNode",
    "build_tool_graph",
    "chain_pool",
    "check_task",
    "jaccard",
    "load_env",
    "profile_for",
    "sample_groups",
    "summarize_tasks",
    "synthesize_dag_tasks",
    "synthesize_dag_variants",
]
