"""DuckDB lineage store: every record's id, kind, round, coordinate, status and parents."""

from agentomnia.lineage.duckfile import DuckFile, StoreBusy
from agentomnia.lineage.segments import CompactionResult, SegmentStore, absorb, compact
from agentomnia.lineage.store import (
    Edge,
    LineageRow,
    LineageStore,
    Trace,
    UnknownRecord,
    WriteResult,
    lineage_row,
)

__all__ = [
    "CompactionResult",
    "DuckFile",
    "Edge",
    "LineageRow",
    "LineageStore",
    "SegmentStore",
    "StoreBusy",
    "Trace",
    "UnknownRecord",
    "WriteResult",
    "absorb",
    "compact",
    "lineage_row",
]
