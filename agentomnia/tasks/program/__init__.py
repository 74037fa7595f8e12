"""Program-based task synthesis: solution programs with loops and branches, run only in the sandbox."""

from agentomnia.tasks.program.execute import (
    Attempt,
    ControlFlow,
    Execution,
    alignment_problems,
    canonical_run,
    control_flow,
    debug_program,
    provenance,
)
from agentomnia.tasks.program.plan import ProgramPlan
from agentomnia.tasks.program.query import query_problems, render_query
from agentomnia.tasks.program.synthesize import synthesize_program_tasks
from agentomnia.tasks.program.templates import propose_plans, render
from agentomnia.tasks.program.verifier import OracleReport, check_program_task, rubric_for, verifier_code

__all__ = [
    "Attempt",
    "ControlFlow",
    "Execution",
    "OracleReport",
    "ProgramPlan",
    "alignment_problems",
    "canonical_run",
    "check_program_task",
    "control_flow",
    "debug_program",
    "propose_plans",
    "provenance",
    "query_problems",
    "render",
    "render_query",
    "rubric_for",
    "synthesize_program_tasks",
    "verifier_code",
]
