"""Tasks on synthesized environments: DAG-, program- and solver-based, with rubrics and verifiers."""

from agentomnia.tasks.grading import Outcome, Score, diff_states, empty_outcome, grade, values_match
from agentomnia.tasks.models import (
    TASK_KINDS,
    Check,
    Persona,
    ReferenceCall,
    RubricItem,
    Task,
    TaskKind,
    TaskRejection,
)

__all__ = [
    "TASK_KINDS",
    "Check",
    "Outcome",
    "Persona",
    "ReferenceCall",
    "RubricItem",
    "Score",
    "Task",
    "TaskKind",
    "TaskRejection",
    "diff_states",
    "empty_outcome",
    "grade",
    "values_match",
]
