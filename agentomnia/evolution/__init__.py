"""Self-evolution: benchmark failures -> diagnosis -> PRDs -> the next synthesis round, and its alignment.

`diagnose` turns `Failure` records into a two-level `DiagnosisReport`; `generate_prds` writes one
PRD per capability gap; `read_inbox` adds PRDs that people wrote; `directives_for` and `seeds_for`
turn the active PRDs into the next round's targets and seeds; `alignment` measures whether the
round moved the data toward the failures (paper Figure 18).
"""

from agentomnia.directives import ENV_VARIATIONS, TASK_VARIATIONS, SynthesisDirectives
from agentomnia.evolution.alignment import AXES, NO_PRD, Alignment, alignment, axis_counts, data_by_prd
from agentomnia.evolution.diagnosis import (
    TAG_RULES,
    CapabilityDiagnosis,
    CapabilityGap,
    DiagnosisReport,
    ExecutionSummary,
    TaskDiagnosis,
    diagnose,
)
from agentomnia.evolution.inbox import example_prd_path, inbox_dir, read_inbox, read_prd_file
from agentomnia.evolution.planning import compose_request, directives_for, seeds_for
from agentomnia.evolution.prd import (
    PRD,
    PRDFormatError,
    PRDProblem,
    generate_prds,
    parse_prd,
    priority_for,
    render_markdown,
)

__all__ = [
    "AXES",
    "ENV_VARIATIONS",
    "PRD",
    "TAG_RULES",
    "TASK_VARIATIONS",
    "Alignment",
    "CapabilityDiagnosis",
    "CapabilityGap",
    "DiagnosisReport",
    "ExecutionSummary",
    "PRDFormatError",
    "PRDProblem",
    "SynthesisDirectives",
    "TaskDiagnosis",
    "alignment",
    "data_by_prd",
    "NO_PRD",
    "axis_counts",
    "compose_request",
    "diagnose",
    "directives_for",
    "example_prd_path",
    "generate_prds",
    "inbox_dir",
    "parse_prd",
    "priority_for",
    "read_inbox",
    "read_prd_file",
    "render_markdown",
    "seeds_for",
]
