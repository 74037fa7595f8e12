"""Tasks on synthesized environments: DAG-, program- and solver-based, with rubrics and verifiers."""

from agentomnia.tasks.families import TASK_FAMILIES, TaskFamily, TaskReport, family_of
from agentomnia.tasks.grading import Outcome, Score, diff_states, empty_outcome, grade, values_match
from agentomnia.tasks.models import (
    TASK_KINDS,
    Check,
    Persona,
    ReferenceCall,
    RubricItem,
    Task,
    TaskKind,
    task_rejection,
)

__all__ = [
    "TASK_FAMILIES",
    "TASK_KINDS",
    "Check",
    "Outcome",
    "Persona",
    "ReferenceCall",
    "RubricItem",
    "Score",
    "Task",
    "TaskFamily",
    "TaskKind",
    "task_rejection",
    "TaskReport",
    "diff_states",
    "empty_outcome",
    "family_of",
    "grade",
    "values_match",
]
