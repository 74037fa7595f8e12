"""DuckDB lineage store: every record's id, kind, round, coordinate, status and parents."""

from agentomnia.lineage.duckfile import DuckFile, StoreBusy
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
    "DuckFile",
    "Edge",
    "LineageRow",
    "LineageStore",
    "StoreBusy",
    "Trace",
    "UnknownRecord",
    "WriteResult",
    "lineage_row",
]
