"""Solver-based task synthesis: problem families, a MILP solver as the trusted artifact, verified bundles."""

from agentomnia.tasks.solver.contract import Blueprint, ContractField, InputContract, SolverArtifact, Trace
from agentomnia.tasks.solver.families import FAMILIES
from agentomnia.tasks.solver.family import Family
from agentomnia.tasks.solver.milp import (
    Milp,
    Solution,
    alternative_optimum,
    evaluate,
    second_best,
    solve,
    worse_plan,
)
from agentomnia.tasks.solver.synthesize import (
    GUIDED_OFFLINE_NOTE,
    build_task,
    prepare_instance,
    screen_instance,
    synthesize_guided_tasks,
    synthesize_solver_tasks,
)

__all__ = [
    "FAMILIES",
    "GUIDED_OFFLINE_NOTE",
    "Blueprint",
    "ContractField",
    "Family",
    "InputContract",
    "Milp",
    "Solution",
    "SolverArtifact",
    "Trace",
    "alternative_optimum",
    "build_task",
    "evaluate",
    "prepare_instance",
    "screen_instance",
    "second_best",
    "solve",
    "synthesize_guided_tasks",
    "synthesize_solver_tasks",
    "worse_plan",
]
