"""The one shape of "a stage could not keep this": what, where, why and what to do.

Every stage (seed ingestion, inference, selection, environment building, task synthesis, the PRD
inbox, benchmark import) reports what it refused as `Rejection` records, and one function turns them
into lineage rows, so a refusal reads the same wherever it happened and nothing vanishes silently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from agentomnia.lineage import Edge, LineageRow
from agentomnia.records import Record
from agentomnia.storage import write_parquet

# What a rejection is of: the lineage `kind` its row carries, with status "rejected".
SubjectKind = Literal["seed", "selected_candidate", "environment", "task", "prd", "benchmark_item"]
COLUMNS = ["id", "round", "record", "subject", "subject_kind", "stage", "reason", "fix", "place", "parent"]


class Rejection(Record):
    """Something a stage refused. `subject` names it (a file, a candidate id, an environment id);
    `place` says where inside it (a line, a JSON pointer, a tool); `fix` says what to do."""

    record_kind: ClassVar[str] = "rejection"

    subject: str
    subject_kind: SubjectKind
    stage: str
    reason: str
    fix: str = ""
    place: str = ""
    parent: str | None = None  # the lineage record this refusal hangs off (seed, candidate, environment)
    detail: dict[str, Any] = Field(default_factory=dict)  # stage-specific facts: rule, name, task kind

    @property
    def message(self) -> str:
        where = f" at {self.place}" if self.place else ""
        fix = f"; {self.fix}" if self.fix else ""
        return f"{self.subject}{where}: {self.reason}{fix}"

    @property
    def kind(self) -> str | None:
        """For a task rejection: the task kind it would have been."""
        value = self.detail.get("kind")
        return str(value) if value is not None else None

    @property
    def summary(self) -> str:
        """`stage: reason`, as lineage and reports show it."""
        return f"{self.stage}: {self.reason}"


def rejection_lineage(
    rejections: Sequence[Rejection], *, round_key: str, run_id: str | None
) -> tuple[list[LineageRow], list[Edge]]:
    """One lineage row per rejection (status "rejected", kind = what was refused) and its
    `rejection_of` edge to the record it hangs off."""
    rows: list[LineageRow] = []
    edges: list[Edge] = []
    times = Counter(r.id for r in rejections)  # equal refusals (same subject, stage, reason) are one row
    for r in {r.id: r for r in rejections}.values():
        rid = f"rej-{r.subject_kind}-{r.id}"
        meta: dict[str, Any] = {k: v for k, v in r.detail.items() if isinstance(v, (str, int, float, bool))}
        if times[r.id] > 1:
            meta["times"] = times[r.id]
        rows.append(
            LineageRow(id=rid, kind=r.subject_kind, round=round_key, status="rejected",
                       reason=r.summary[:2000], run_id=run_id, meta={"stage": r.stage, **meta})
        )  # fmt: skip
        if r.parent:
            edges.append(Edge(child=rid, parent=r.parent, relation="rejection_of"))
    return rows, edges


def save_rejections(path: Path, rejections: Sequence[Rejection]) -> Path:
    """Rejections to Parquet: the record, its flat fields, and its scalar `detail` keys as columns."""
    keys = sorted(
        {
            k
            for r in rejections
            for k, v in r.detail.items()
            if k not in COLUMNS and not isinstance(v, (list, dict))
        }
    )
    rows = [
        {"id": r.id, "round": r.round, "record": r.model_dump_json(), "subject": r.subject,
         "subject_kind": r.subject_kind, "stage": r.stage, "reason": r.reason, "fix": r.fix, "place": r.place,
         "parent": r.parent, **{k: r.detail.get(k) for k in keys}}
        for r in rejections
    ]  # fmt: skip
    return write_parquet(path, rows, columns=[*COLUMNS, *keys])
