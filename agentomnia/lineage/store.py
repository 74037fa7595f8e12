"""Row-level lineage of every record the platform makes, in one DuckDB file.

A record row says what a thing is (kind, round, taxonomy coordinate), whether it was kept
(status, reason), which Dagster run made it and where its payload lives. Edges say which
records it was made from. Ids are content hashes, so writing the same record twice changes
nothing; a batch is one transaction, so a killed writer leaves either all of it or none.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from agentomnia.lineage.duckfile import DuckFile

SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    id VARCHAR PRIMARY KEY,
    kind VARCHAR NOT NULL,
    round VARCHAR NOT NULL,
    split VARCHAR,
    taxonomy_id INTEGER,
    l1 VARCHAR,
    l2 VARCHAR,
    status VARCHAR NOT NULL,
    reason VARCHAR,
    run_id VARCHAR,
    location VARCHAR,
    created_at TIMESTAMP NOT NULL,
    meta VARCHAR
);
CREATE TABLE IF NOT EXISTS edges (
    child VARCHAR NOT NULL,
    parent VARCHAR NOT NULL,
    relation VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (child, parent, relation)
);
CREATE INDEX IF NOT EXISTS edges_parent ON edges(parent);
CREATE INDEX IF NOT EXISTS edges_child ON edges(child);
CREATE INDEX IF NOT EXISTS records_kind_round ON records(kind, round);
CREATE TABLE IF NOT EXISTS record_counts (
    kind VARCHAR NOT NULL,
    round VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    n BIGINT NOT NULL
);
"""

_RECORD_COLUMNS = (
    "id", "kind", "round", "split", "taxonomy_id", "l1", "l2",
    "status", "reason", "run_id", "location", "created_at", "meta",
)  # fmt: skip
_RECORD_TYPES = {"taxonomy_id": pa.int32(), "created_at": pa.timestamp("us")}


class LineageRow(BaseModel):
    """One record as the lineage store knows it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    kind: str
    round: str = "r0"
    split: str | None = None
    taxonomy_id: int | None = None
    l1: str | None = None
    l2: str | None = None
    status: str = "ok"
    reason: str | None = None
    run_id: str | None = None
    location: str | None = None
    created_at: datetime | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


# The one vocabulary of lineage relations: `child <relation> parent`.
RELATIONS: dict[str, str] = {
    "inferred_from": "an environment candidate inferred from a seed",
    "steered_by": "a seed composed for a PRD",
    "selection_of": "a selection decision about a candidate",
    "state_space_of": "a state spec built for a candidate",
    "tools_for": "a toolset spec built on a state spec",
    "built_from": "a verified environment built from its toolset spec",
    "seeded_by": "an environment and a seed it came from",
    "tool_of": "a tool of an environment",
    "task_on": "a task posed on an environment",
    "rejection_of": "a refusal of the record it names",
    "holds_out": "the benchmark split and a task it holds out",
    "trajectory_of": "a trajectory run on a task",
    "trained_on": "a checkpoint and the dataset it was trained on",
    "evaluates": "an evaluation result of a task",
    "failure_of": "a failure record of an evaluation result",
    "diagnoses": "a diagnosis report and a failure it explains",
    "derived_from": "a record derived from another (a PRD from a diagnosis)",
}
Relation = Literal[
    "inferred_from", "steered_by", "selection_of", "state_space_of", "tools_for", "built_from", "seeded_by",
    "tool_of", "task_on", "rejection_of", "holds_out", "trajectory_of", "trained_on", "evaluates", "failure_of",
    "diagnoses", "derived_from",
]  # fmt: skip


class Edge(BaseModel):
    """`child` was made from `parent`; `relation` (one of `RELATIONS`) says how."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    child: str
    parent: str
    relation: Relation


class WriteResult(BaseModel):
    records_written: int
    edges_written: int


class TraceNode(BaseModel):
    id: str
    row: LineageRow | None
    relation: str | None = None
    children: list[TraceNode] = Field(default_factory=list)


class Trace(BaseModel):
    """The records reachable from `root` going up (ancestors) or down (descendants)."""

    root: LineageRow
    direction: Literal["up", "down"]
    rows: dict[str, LineageRow | None]
    edges: list[Edge]

    def ids(self) -> set[str]:
        return set(self.rows) - {self.root.id}

    def tree(self) -> TraceNode:
        by_from: dict[str, list[Edge]] = {}
        for e in self.edges:
            key = e.child if self.direction == "up" else e.parent
            by_from.setdefault(key, []).append(e)

        def build(node_id: str, relation: str | None, seen: frozenset[str]) -> TraceNode:
            node = TraceNode(id=node_id, row=self.rows.get(node_id), relation=relation)
            for e in sorted(by_from.get(node_id, []), key=lambda e: (e.relation, e.parent, e.child)):
                nxt = e.parent if self.direction == "up" else e.child
                if nxt not in seen:
                    node.children.append(build(nxt, e.relation, seen | {nxt}))
            return node

        return build(self.root.id, None, frozenset({self.root.id}))

    def render(self) -> str:
        lines: list[str] = []

        def label(n: TraceNode) -> str:
            if n.row is None:
                return f"{n.id}  (not recorded)"
            r = n.row
            where = f"  [{r.split}/{r.l1} > {r.l2}]" if r.l2 else ""
            why = f" ({r.reason})" if r.reason else ""
            return f"{r.kind} {r.id}  round={r.round} status={r.status}{why}{where}"

        def walk(n: TraceNode, prefix: str, last: bool, top: bool) -> None:
            arrow = "" if top else ("└─" if last else "├─") + f"{n.relation}─ "
            lines.append(prefix + arrow + label(n))
            child_prefix = prefix if top else prefix + ("   " if last else "│  ")
            for i, c in enumerate(n.children):
                walk(c, child_prefix, i == len(n.children) - 1, False)

        walk(self.tree(), "", True, True)
        return "\n".join(lines)


class UnknownRecord(KeyError):
    def __str__(self) -> str:
        return (
            f"no record with id {self.args[0]!r} in the lineage store; check the id with `agentomnia status`"
        )


class LineageStore:
    """Record many rows and edges at once; trace and look up by kind, round or coordinate."""

    def __init__(self, path: Path | str, *, timeout_s: float = 60.0) -> None:
        self.file = DuckFile(path, schema=SCHEMA, timeout_s=timeout_s)
        self.path = self.file.path

    # -- writing ---------------------------------------------------------------------------

    def record(
        self,
        rows: Iterable[LineageRow],
        edges: Iterable[Edge] = (),
        *,
        chunk_size: int = 5000,
        on_chunk: Callable[[int], None] | None = None,
    ) -> WriteResult:
        """Write rows and edges in one transaction; already-known ids and edges are kept as they are.

        `on_chunk(n)` is called after each chunk of rows inside the transaction (progress
        reporting; tests use it to kill a writer mid-batch).
        """
        now = datetime.now(UTC).replace(tzinfo=None)
        unique_rows = list({r.id: r for r in rows}.values())
        unique_edges = list({(e.child, e.parent, e.relation): e for e in edges}.values())
        with self.file.write() as con:
            # a batch of a million rows takes seconds; a progress bar would only litter run logs
            con.execute("SET enable_progress_bar = false")
            before_r = _count(con, "records")
            before_e = _count(con, "edges")
            added: Counter[tuple[str, str, str]] = Counter()
            for start in range(0, len(unique_rows), chunk_size):
                con.register("record_batch", _records_table(unique_rows[start : start + chunk_size], now))
                # RETURNING yields only the rows actually inserted, not those an existing id ignored
                added.update(
                    con.execute(
                        "INSERT OR IGNORE INTO records SELECT * FROM record_batch RETURNING kind, round, status"
                    ).fetchall()
                )
                con.unregister("record_batch")
                if on_chunk is not None:
                    on_chunk(min(start + chunk_size, len(unique_rows)))
            if unique_edges:
                edge_table = pa.table(
                    {
                        "child": [e.child for e in unique_edges],
                        "parent": [e.parent for e in unique_edges],
                        "relation": [e.relation for e in unique_edges],
                        "created_at": pa.array([now] * len(unique_edges), pa.timestamp("us")),
                    }
                )
                con.register("edge_batch", edge_table)
                con.execute("INSERT OR IGNORE INTO edges SELECT * FROM edge_batch")
                con.unregister("edge_batch")
            after_r = _count(con, "records")
            after_e = _count(con, "edges")
            _update_counts(con, before_r, added)
        return WriteResult(records_written=after_r - before_r, edges_written=after_e - before_e)

    # -- reading ---------------------------------------------------------------------------

    def get(self, record_id: str) -> LineageRow | None:
        found = self._rows("SELECT * FROM records WHERE id = ?", [record_id])
        return found[0] if found else None

    def find(
        self,
        *,
        kind: str | None = None,
        round: str | None = None,
        split: str | None = None,
        l1: str | None = None,
        taxonomy_id: int | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[LineageRow]:
        where, params = [], []
        for col, value in (
            ("kind", kind), ("round", round), ("split", split), ("l1", l1),
            ("taxonomy_id", taxonomy_id), ("status", status),
        ):  # fmt: skip
            if value is not None:
                where.append(f"{col} = ?")
                params.append(value)
        sql = (
            "SELECT * FROM records"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY created_at, id"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return self._rows(sql, params)

    def counts(self) -> list[dict[str, Any]]:
        """Records by kind, round and status.

        From the DuckDB file, read off the summary `record` keeps (a few dozen rows) instead of
        aggregating every record, whenever the summary agrees with the record count; a file written
        before the summary existed, or rows that `absorb` inserted, are aggregated instead.
        """
        if not isinstance(self.file, DuckFile):
            # a segment view keeps no summary; its `query` restarts when a compaction moves segments
            rows = self.file.query(f"{_COUNTS_SQL} ORDER BY kind, round, status")
        else:
            with self.file.read() as con:
                if con is None:
                    return []
                summary = _summary(con)
                rows = (
                    con.execute(f"{_COUNTS_SQL} ORDER BY kind, round, status").fetchall()
                    if summary is None
                    else summary
                )
        return [{"kind": k, "round": r, "status": s, "count": n} for k, r, s, n in rows]

    def rejection_reasons(self, round: str | None = None) -> list[dict[str, Any]]:
        """Rejected records by kind and reason (the reason's first clause), most frequent first."""
        where = "status = 'rejected'" + (" AND round = ?" if round is not None else "")
        rows = self.file.query(
            f"SELECT kind, split_part(coalesce(reason, ''), ':', 1) AS why, count(*) AS n FROM records WHERE {where} "
            "GROUP BY ALL ORDER BY n DESC, kind, why",
            [round] if round is not None else [],
        )
        return [{"kind": k, "reason": r, "count": n} for k, r, n in rows]

    def trace(
        self, record_id: str, direction: Literal["up", "down"] = "up", max_depth: int | None = None
    ) -> Trace:
        """Ancestors (`up`) or descendants (`down`) of a record, breadth first.

        One query per level, each an index lookup of the frontier (edges are indexed on both ends),
        all in one connection: a task's ancestry is a handful of levels, so this answers in
        milliseconds however large the store. A recursive CTE would hash-join the whole edge table
        at every level instead, since DuckDB does not drive joins from an index (measured at a
        million records: 115-150 ms for a task's ancestry, against about 20 ms of lookups here).
        """
        with self.file.read() as con:
            if con is None:
                raise UnknownRecord(record_id)
            near = "child" if direction == "up" else "parent"
            seen = {record_id}
            frontier = [record_id]
            edges: list[Edge] = []
            depth = 0
            while frontier and (max_depth is None or depth < max_depth):
                depth += 1
                where, params = _one_of(near, frontier)
                found = con.execute(
                    f"SELECT child, parent, relation FROM edges WHERE {where}", params
                ).fetchall()
                edges.extend(Edge(child=c, parent=p, relation=r) for c, p, r in found)
                nxt = {p if direction == "up" else c for c, p, _ in found} - seen
                seen |= nxt
                frontier = sorted(nxt)
            # the root's row comes with the others: one lookup fewer, which is a tenth of a trace
            where, params = _one_of("id", sorted(seen))
            rows = {r.id: r for r in _fetch_rows(con, f"SELECT * FROM records WHERE {where}", params)}
        if record_id not in rows:
            raise UnknownRecord(record_id)
        return Trace(
            root=rows[record_id],
            direction=direction,
            rows={i: rows.get(i) for i in sorted(seen)},
            edges=edges,
        )

    def _rows(self, sql: str, params: Sequence[object]) -> list[LineageRow]:
        with self.file.read() as con:
            return [] if con is None else _fetch_rows(con, sql, list(params))


# Up to this many ids a lookup is one `IN (?, ?, ...)` list, which DuckDB answers from the ART
# index; past it, a hash join against one scan of the table, which costs the same for any number.
# Measured on whole traces at a million records: wide downward traces (hundreds of nodes) took
# 99 ms with lists up to 1024 ids against 140 ms with the join at every level, and a task's
# ancestry 43 ms against 49 ms (DuckDB pushes a join's small key set into the index only up to
# 50 keys, and with more work than a plain list).
_IN_LIST_MAX = 1024


def _one_of(column: str, ids: Sequence[str]) -> tuple[str, list[object]]:
    """A WHERE condition "`column` is one of `ids`" and its parameters, in the form that looks up fastest."""
    if len(ids) <= _IN_LIST_MAX:
        return f"{column} IN ({', '.join('?' * len(ids))})", list(ids)
    return f"{column} IN (SELECT unnest(?))", [list(ids)]


_COUNTS_SQL = "SELECT kind, round, status, count(*) FROM records GROUP BY ALL"


def _summary(con: Any) -> list[tuple] | None:
    """The stored counts by kind, round and status, or None when they are absent or stale."""
    kept = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'record_counts' "
        "AND database_name = current_database() AND schema_name = current_schema()"
    ).fetchall()[0][0]
    if not kept:
        return None
    rows = con.execute(
        "SELECT kind, round, status, n FROM record_counts ORDER BY kind, round, status"
    ).fetchall()
    # nothing deletes or updates records, so equal totals mean nobody inserted around the summary
    return rows if sum(r[3] for r in rows) == _count(con, "records") else None


def _update_counts(con: Any, before: int, added: Counter[tuple[str, str, str]]) -> None:
    """Add this write's new rows to the summary; recount when it had fallen behind `before` rows."""
    stored = con.execute("SELECT kind, round, status, n FROM record_counts").fetchall()
    if sum(n for *_, n in stored) == before:
        totals = Counter({(k, r, s): n for k, r, s, n in stored}) + added
    else:
        # rows arrived without the summary (an older store, `absorb`): count them all, this write included
        totals = Counter({(k, r, s): n for k, r, s, n in con.execute(_COUNTS_SQL).fetchall()})
    con.execute("DELETE FROM record_counts")
    if totals:
        con.executemany("INSERT INTO record_counts VALUES (?, ?, ?, ?)", [(*k, n) for k, n in totals.items()])


def _count(con: Any, table: str) -> int:
    return int(con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0])


def _records_table(rows: Sequence[LineageRow], now: datetime) -> pa.Table:
    # one pass per column: a million rows go through here on a paper-scale run
    data: dict[str, list[Any]] = {
        c: [getattr(r, c) for r in rows] for c in _RECORD_COLUMNS if c not in ("created_at", "meta")
    }
    data["created_at"] = [r.created_at.replace(tzinfo=None) if r.created_at else now for r in rows]
    data["meta"] = [json.dumps(r.meta, sort_keys=True, default=str) if r.meta else None for r in rows]
    return pa.table({c: pa.array(data[c], _RECORD_TYPES.get(c, pa.string())) for c in _RECORD_COLUMNS})


def _fetch_rows(con: Any, sql: str, params: list[object]) -> list[LineageRow]:
    cur = con.execute(sql, params)
    names = [d[0] for d in cur.description]
    out = []
    for values in cur.fetchall():
        rec = dict(zip(names, values, strict=True))
        rec["meta"] = json.loads(rec["meta"]) if rec.get("meta") else {}
        out.append(LineageRow(**rec))
    return out


def lineage_row(
    record: Any,
    *,
    status: str = "ok",
    reason: str | None = None,
    run_id: str | None = None,
    location: str | None = None,
    kind: str | None = None,
    meta: dict[str, Any] | None = None,
) -> LineageRow:
    """The lineage row of a content-hashed record; its coordinate columns come from `.coordinate`."""
    coord = getattr(record, "coordinate", None)
    return LineageRow(
        id=record.id,
        kind=kind or record.record_kind,
        round=record.round,
        split=getattr(coord, "split", None),
        taxonomy_id=getattr(coord, "taxonomy_id", None),
        l1=getattr(coord, "l1", None),
        l2=getattr(coord, "l2", None),
        status=status,
        reason=reason,
        run_id=run_id,
        location=location,
        meta=meta or {},
    )
