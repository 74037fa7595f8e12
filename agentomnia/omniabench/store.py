"""The failure table: evaluations and their failed trials, in the lineage DuckDB file.

This is what the self-evolution sensor watches. An evaluation is registered when it starts and
marked finished with its pass@1 when done; its failures are appended as they are tagged. Every
failure row gets a `seq` from a DuckDB sequence, increasing in insertion order, so a sensor keeps
one integer cursor and asks `finished_since(cursor)` for finished evaluations with failures it has
not seen. Finishing an evaluation also draws a number from the same sequence (`finish_seq`): an
evaluation whose failures were written before another one finished still shows up when it
finishes, however the two interleaved.

The file is shared with the lineage store and every other process of the platform, so all access
goes through `DuckFile`: writes are short serialized transactions, and a caller that cannot get the
file in `timeout_s` gets `StoreBusy` (a sensor skips its tick) instead of hanging.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import duckdb
import pyarrow as pa
from pydantic import BaseModel, ConfigDict

from agentomnia.lineage.duckfile import DuckFile
from agentomnia.omniabench.models import Failure
from agentomnia.taxonomy import Coordinate

SCHEMA = """
CREATE SEQUENCE IF NOT EXISTS omniabench_seq START 1;
CREATE TABLE IF NOT EXISTS evaluations (
    eval_id VARCHAR PRIMARY KEY,
    round VARCHAR NOT NULL,
    policy VARCHAR NOT NULL,
    benchmark_id VARCHAR,
    tasks INTEGER,
    trials INTEGER,
    pass_at_1 DOUBLE,
    status VARCHAR NOT NULL,
    started_at TIMESTAMP NOT NULL,
    finished_at TIMESTAMP,
    finish_seq BIGINT
);
CREATE TABLE IF NOT EXISTS failures (
    seq BIGINT NOT NULL,
    id VARCHAR PRIMARY KEY,
    eval_id VARCHAR NOT NULL,
    round VARCHAR NOT NULL,
    policy VARCHAR NOT NULL,
    task_id VARCHAR NOT NULL,
    env_id VARCHAR NOT NULL,
    trial INTEGER NOT NULL,
    route VARCHAR NOT NULL,
    split VARCHAR NOT NULL,
    taxonomy_id INTEGER NOT NULL,
    l1 VARCHAR NOT NULL,
    l2 VARCHAR NOT NULL,
    capabilities VARCHAR[] NOT NULL,
    primary_atom VARCHAR NOT NULL,
    atoms VARCHAR[] NOT NULL,
    tags VARCHAR[] NOT NULL,
    evidence VARCHAR[] NOT NULL,
    score DOUBLE,
    created_at TIMESTAMP NOT NULL,
    result_id VARCHAR NOT NULL,
    task_kind VARCHAR NOT NULL,
    difficulty INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS failures_eval ON failures(eval_id);
"""

_COLUMNS = (
    "seq", "id", "eval_id", "round", "policy", "task_id", "env_id", "trial", "route", "split",
    "taxonomy_id", "l1", "l2", "capabilities", "primary_atom", "atoms", "tags", "evidence", "score",
    "created_at", "result_id", "task_kind", "difficulty",
)  # fmt: skip
_TEXT_LIST = pa.list_(pa.string())
_TYPES = {
    "seq": pa.int64(), "trial": pa.int32(), "taxonomy_id": pa.int32(), "difficulty": pa.int32(),
    "score": pa.float64(), "created_at": pa.timestamp("us"), "capabilities": _TEXT_LIST,
    "atoms": _TEXT_LIST, "tags": _TEXT_LIST, "evidence": _TEXT_LIST,
}  # fmt: skip

Status = Literal["running", "finished"]


class EvaluationRow(BaseModel):
    """One evaluation as the store knows it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    eval_id: str
    round: str
    policy: str
    benchmark_id: str | None = None
    tasks: int | None = None
    trials: int | None = None
    pass_at_1: float | None = None
    status: Status
    started_at: datetime
    finished_at: datetime | None = None
    finish_seq: int | None = None


class EvaluationSummary(BaseModel):
    """A finished evaluation with failures past a cursor: what a sensor acts on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    eval_id: str
    round: str
    policy: str
    new_failures: int
    max_seq: int  # advance the cursor to the largest of these


class FailureRow(BaseModel):
    """One failure row, with its position in the table (`seq`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seq: int
    failure: Failure


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _failure_table(failures: Sequence[Failure], seqs: Sequence[int], now: datetime) -> pa.Table:
    data: dict[str, list[Any]] = {c: [] for c in _COLUMNS}
    for f, seq in zip(failures, seqs, strict=True):
        c = f.coordinate
        row = {
            "seq": seq, "id": f.id, "eval_id": f.eval_id, "round": f.round, "policy": f.policy,
            "task_id": f.task_id, "env_id": f.env_id, "trial": f.trial, "route": f.route, "split": c.split,
            "taxonomy_id": c.taxonomy_id, "l1": c.l1, "l2": c.l2, "capabilities": list(c.capabilities),
            "primary_atom": c.primary_difficulty, "atoms": list(c.atoms), "tags": list(f.tags),
            "evidence": list(f.evidence), "score": f.score, "created_at": now, "result_id": f.result_id,
            "task_kind": f.task_kind, "difficulty": c.difficulty,
        }  # fmt: skip
        for name in _COLUMNS:
            data[name].append(row[name])
    return pa.table({name: pa.array(values, _TYPES.get(name, pa.string())) for name, values in data.items()})


def _failure_from(row: dict[str, Any]) -> Failure:
    coordinate = Coordinate(
        split=row["split"], taxonomy_id=row["taxonomy_id"], l1=row["l1"], l2=row["l2"],
        capabilities=tuple(row["capabilities"]), difficulty=row["difficulty"],
        primary_difficulty=row["primary_atom"],
    )  # fmt: skip
    return Failure(
        id=row["id"], round=row["round"], eval_id=row["eval_id"], result_id=row["result_id"],
        task_id=row["task_id"], env_id=row["env_id"], task_kind=row["task_kind"], route=row["route"],
        policy=row["policy"], trial=row["trial"], coordinate=coordinate, score=row["score"],
        tags=tuple(row["tags"]), evidence=tuple(row["evidence"]),
    )  # fmt: skip


class FailureStore:
    """Evaluations and failure rows in `path` (normally `$AGENTOMNIA_HOME/lineage.duckdb`)."""

    def __init__(self, path: Path | str, *, timeout_s: float = 60.0) -> None:
        self.file = DuckFile(path, schema=SCHEMA, timeout_s=timeout_s)
        self.path = self.file.path

    # -- writing ---------------------------------------------------------------------------

    def start(
        self, eval_id: str, round: str, policy: str, benchmark_id: str | None, tasks: int, trials: int
    ) -> None:
        """Register (or restart) an evaluation as running; its failures from before stay."""
        with self.file.write() as con:
            con.execute(
                "INSERT INTO evaluations "
                "(eval_id, round, policy, benchmark_id, tasks, trials, status, started_at) "
                "VALUES (?, ?, ?, ?, ?, ?, 'running', ?) ON CONFLICT (eval_id) DO UPDATE SET "
                "round = excluded.round, policy = excluded.policy, benchmark_id = excluded.benchmark_id, "
                "tasks = excluded.tasks, trials = excluded.trials, status = 'running', "
                "started_at = excluded.started_at, finished_at = NULL, finish_seq = NULL, pass_at_1 = NULL",
                [eval_id, round, policy, benchmark_id, tasks, trials, _now()],
            )

    def add_failures(self, failures: Iterable[Failure]) -> int:
        """Append failures in order; ids already stored are skipped. Returns how many were new."""
        unique = list({f.id: f for f in failures}.values())
        if not unique:
            return 0
        with self.file.write() as con:
            known = {
                r[0]
                for r in con.execute(
                    "SELECT id FROM failures WHERE id IN (SELECT unnest(?))", [[f.id for f in unique]]
                ).fetchall()
            }
            fresh = [f for f in unique if f.id not in known]
            if not fresh:
                return 0
            # Numbers are drawn inside the write lock, then handed out in list order.
            drawn = con.execute("SELECT nextval('omniabench_seq') FROM range(?)", [len(fresh)]).fetchall()
            seqs = sorted(int(r[0]) for r in drawn)
            con.register("failure_batch", _failure_table(fresh, seqs, _now()))
            con.execute(f"INSERT INTO failures ({', '.join(_COLUMNS)}) SELECT * FROM failure_batch")
            con.unregister("failure_batch")
        return len(fresh)

    def finish(self, eval_id: str, pass_at_1: float | None) -> None:
        """Mark an evaluation finished (it must have been started)."""
        with self.file.write() as con:
            found = con.execute("SELECT count(*) FROM evaluations WHERE eval_id = ?", [eval_id]).fetchall()
            if not found[0][0]:
                raise KeyError(f"evaluation {eval_id!r} was never started; call start() before finish()")
            con.execute(
                "UPDATE evaluations SET status = 'finished', pass_at_1 = ?, finished_at = ?, "
                "finish_seq = nextval('omniabench_seq') WHERE eval_id = ?",
                [pass_at_1, _now(), eval_id],
            )

    # -- reading ---------------------------------------------------------------------------

    def _query(self, sql: str, params: list[object]) -> list[tuple[Any, ...]]:
        """Rows of a read-only query; none while the file exists but no evaluation was ever written
        to it (the lineage store made it), since readers never create tables."""
        try:
            return self.file.query(sql, params)
        except duckdb.CatalogException:
            return []

    def finished_since(self, seq_cursor: int = 0) -> list[EvaluationSummary]:
        """Finished evaluations with failures a reader at `seq_cursor` has not seen: all of an
        evaluation's failures when it finished after the cursor, else those added after it."""
        rows = self._query(
            "SELECT e.eval_id, e.round, e.policy, "
            "count(f.id) FILTER (WHERE e.finish_seq > ? OR f.seq > ?) AS new_failures, "
            "greatest(e.finish_seq, coalesce(max(f.seq), 0)) AS max_seq "
            "FROM evaluations e LEFT JOIN failures f ON f.eval_id = e.eval_id "
            "WHERE e.status = 'finished' GROUP BY e.eval_id, e.round, e.policy, e.finish_seq "
            "HAVING new_failures > 0 ORDER BY max_seq, e.eval_id",
            [seq_cursor, seq_cursor],
        )
        return [
            EvaluationSummary(eval_id=e, round=r, policy=p, new_failures=int(n), max_seq=int(m))
            for e, r, p, n, m in rows
        ]

    def failure_rows(
        self, eval_id: str | None = None, round: str | None = None, *, after_seq: int | None = None
    ) -> list[FailureRow]:
        where: list[str] = []
        params: list[object] = []
        for clause, value in (("eval_id = ?", eval_id), ("round = ?", round), ("seq > ?", after_seq)):
            if value is not None:
                where.append(clause)
                params.append(value)
        sql = f"SELECT {', '.join(_COLUMNS)} FROM failures"
        sql += (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY seq"
        return [
            FailureRow(seq=int(values[0]), failure=_failure_from(dict(zip(_COLUMNS, values, strict=True))))
            for values in self._query(sql, params)
        ]

    def failures(self, eval_id: str | None = None, round: str | None = None) -> list[Failure]:
        """Failure records (rebuilt exactly: same content, same id) in insertion order."""
        return [r.failure for r in self.failure_rows(eval_id, round)]

    def evaluations(self, round: str | None = None) -> list[EvaluationRow]:
        names = list(EvaluationRow.model_fields)
        sql = f"SELECT {', '.join(names)} FROM evaluations"
        params: list[object] = []
        if round is not None:
            sql += " WHERE round = ?"
            params.append(round)
        rows = self._query(sql + " ORDER BY started_at, eval_id", params)
        return [EvaluationRow(**dict(zip(names, r, strict=True))) for r in rows]

    def tag_counts(self, eval_id: str | None = None, round: str | None = None) -> dict[str, int]:
        """Failures per tag (a failure counts under each of its tags), most frequent first."""
        where: list[str] = []
        params: list[object] = []
        for clause, value in (("eval_id = ?", eval_id), ("round = ?", round)):
            if value is not None:
                where.append(clause)
                params.append(value)
        rows = self._query(
            "SELECT tag, count(*) AS n FROM (SELECT unnest(tags) AS tag FROM failures"
            + (" WHERE " + " AND ".join(where) if where else "")
            + ") GROUP BY tag ORDER BY n DESC, tag",
            params,
        )
        return {str(t): int(n) for t, n in rows}
