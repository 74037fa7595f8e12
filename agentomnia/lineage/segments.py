"""Lineage written by many processes on many hosts: immutable Parquet segments in a shared folder.

The DuckDB store admits one writing process per file, and its advisory lock means nothing to a
process on another host. Here a writer never touches anything another writer wrote: every
`record` call writes one new Parquet segment (records and edges together) to a temporary name in
the shared folder and renames it into place, so a segment is either all there or absent. Readers
list the folder, read the segments (and the DuckDB store, if there is one) as one DuckDB view and
collapse duplicates by id, which also makes rewriting a record harmless: ids are content hashes.

`compact` merges many segments into one: it writes and publishes the merged segment first and
only then deletes the segments it merged. A kill at any point leaves either a stray temporary
file (ignored by readers, swept by the next compaction) or records present twice on disk
(collapsed by readers, merged by the next compaction); nothing is ever present zero times.
`absorb` does the same into the DuckDB store, so single-host tools see a distributed run's lineage.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import re
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from agentomnia.lineage.duckfile import DuckFile, StoreBusy
from agentomnia.lineage.store import (
    _RECORD_COLUMNS,
    SCHEMA,
    Edge,
    LineageRow,
    LineageStore,
    Trace,
    WriteResult,
    _fetch_rows,
    _records_table,
)

SEGMENT_SUFFIX = ".parquet"
TMP_SUFFIX = ".tmp"
COMPACTED_WRITER = "compacted"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
# how many times a read restarts when a compaction removed a segment between listing and reading
_READ_ATTEMPTS = 30

_RECORD_SQL_TYPES = {"taxonomy_id": "INTEGER", "created_at": "TIMESTAMP"}
_EDGE_COLUMNS = ("child", "parent", "relation")


class CompactionResult(BaseModel):
    """What one `compact` or `absorb` call did."""

    merged_segments: int
    records: int
    edges: int
    output: str | None = None
    swept_tmp_files: int = 0


def _safe_part(text: str) -> str:
    """A name part that survives every filesystem and never contains the `__` separator."""
    return _UNSAFE.sub("-", text).replace("__", "-").strip("-.")[:80] or "x"


def default_writer() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def segment_name(writer: str, step: str) -> str:
    return f"{_safe_part(writer)}__{_safe_part(step)}__{uuid.uuid4().hex[:16]}{SEGMENT_SUFFIX}"


def list_segments(folder: Path) -> list[Path]:
    """Published segments, oldest name first; temporary files (leading dot) are not segments."""
    if not folder.is_dir():
        return []
    return sorted(
        p for p in folder.iterdir() if p.name.endswith(SEGMENT_SUFFIX) and not p.name.startswith(".")
    )


def _publish(folder: Path, name: str, write: Callable[[Path], None]) -> Path:
    """Write to a hidden temporary file, flush it to disk, then rename it to `name` in one step."""
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{name}.{uuid.uuid4().hex[:8]}{TMP_SUFFIX}"
    final = folder / name
    try:
        write(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)  # the rename must never publish a file whose bytes are still in flight
        finally:
            os.close(fd)
        os.replace(tmp, final)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    with contextlib.suppress(OSError):
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return final


def _segment_table(rows: Sequence[LineageRow], edges: Sequence[Edge], now: datetime) -> pa.Table:
    """Records and edges in one table (one file, one rename); `entry` says which a row is."""
    records = _records_table(rows, now)
    n_rows, n_edges = len(rows), len(edges)
    columns: dict[str, pa.Array] = {"entry": pa.array(["record"] * n_rows + ["edge"] * n_edges, pa.string())}
    for name in _RECORD_COLUMNS:
        column = records.column(name).combine_chunks()
        if name == "created_at":
            tail = pa.array([now] * n_edges, pa.timestamp("us"))
        else:
            tail = pa.nulls(n_edges, column.type)
        columns[name] = pa.concat_arrays([column, tail])
    for name in _EDGE_COLUMNS:
        values = [getattr(e, name) for e in edges]
        columns[name] = pa.array([None] * n_rows + values, pa.string())
    return pa.table(columns)


def _sql_path(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _empty_segment_select() -> str:
    cols = ", ".join(
        f"NULL::{_RECORD_SQL_TYPES.get(c, 'VARCHAR')} AS {c}"
        for c in ("entry", *_RECORD_COLUMNS, *_EDGE_COLUMNS)
    )
    return f"SELECT {cols}, NULL::VARCHAR AS filename WHERE false"


def _segments_select(files: Sequence[Path]) -> str:
    if not files:
        return _empty_segment_select()
    listed = ", ".join(_sql_path(p) for p in files)
    return f"SELECT * FROM read_parquet([{listed}], union_by_name = true, filename = true)"


def _create_views(
    con: duckdb.DuckDBPyConnection, files: Sequence[Path], with_store: bool, edges_table: bool = False
) -> None:
    """`records` and `edges` views over the segments (and `store.*`), one row per id / edge.

    `edges_table` materializes the edges once instead: a trace queries them once per level, and
    a view would read every segment again at each level.
    """
    con.execute(f"CREATE OR REPLACE TEMP VIEW segment_rows AS {_segments_select(files)}")
    cols = ", ".join(_RECORD_COLUMNS)
    store_records = f" UNION ALL SELECT {cols}, '' AS src FROM store.records" if with_store else ""
    store_edges = (
        " UNION ALL SELECT child, parent, relation, created_at FROM store.edges" if with_store else ""
    )
    # The earliest write of an id wins, as INSERT OR IGNORE does in the DuckDB store.
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW records AS SELECT {cols} FROM ("
        f"SELECT {cols}, filename AS src FROM segment_rows WHERE entry = 'record'{store_records}"
        ") QUALIFY row_number() OVER (PARTITION BY id ORDER BY created_at, src) = 1"
    )
    kind = "TABLE" if edges_table else "VIEW"
    con.execute(
        f"CREATE OR REPLACE TEMP {kind} edges AS SELECT child, parent, relation, min(created_at) AS created_at "
        "FROM (SELECT child, parent, relation, created_at FROM segment_rows WHERE entry = 'edge'"
        f"{store_edges}) GROUP BY child, parent, relation"
    )


def _vanished(exc: BaseException) -> bool:
    """A segment listed a moment ago is gone: a compaction merged it, so listing again finds it."""
    text = str(exc).lower()
    return isinstance(exc, FileNotFoundError) or (
        isinstance(exc, duckdb.IOException)
        and any(s in text for s in ("no files found", "no such file", "cannot open file", "could not open"))
    )


class SegmentSource:
    """The read side a `LineageStore` queries: a DuckDB connection whose `records` and `edges`
    are views over the current segments plus the DuckDB store file, if one exists."""

    def __init__(self, folder: Path, store: Path | None, timeout_s: float, edges_table: bool = False) -> None:
        self.folder = folder
        self.edges_table = edges_table
        self.store_path = store
        self.store = DuckFile(store, schema=SCHEMA, timeout_s=timeout_s) if store is not None else None
        self.timeout_s = timeout_s

    @contextlib.contextmanager
    def read(self, timeout_s: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """One consistent reading: the segments listed once, the store attached read-only under its
        shared lock. Raises the IO error of a segment that vanished; `attempt` retries those."""
        wait = self.timeout_s if timeout_s is None else timeout_s
        con = duckdb.connect()
        try:
            with contextlib.ExitStack() as stack:
                with_store = self.store is not None and self.store.path.exists()
                if with_store:
                    assert self.store is not None
                    stack.enter_context(self.store._flock(False, wait))
                    con.execute(f"ATTACH {_sql_path(self.store.path)} AS store (READ_ONLY)")
                _create_views(con, list_segments(self.folder), with_store, self.edges_table)
                yield con
        finally:
            con.close()

    def attempt(self, fn: Callable[[], Any]) -> Any:
        """Run a whole reading again when a compaction removed a segment under it."""
        delay = 0.005
        for attempt in range(_READ_ATTEMPTS):
            try:
                return fn()
            except (duckdb.IOException, FileNotFoundError) as exc:
                if not _vanished(exc) or attempt == _READ_ATTEMPTS - 1:
                    raise
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 0.2)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def query(
        self, sql: str, params: list[object] | None = None, timeout_s: float | None = None
    ) -> list[tuple]:
        def run() -> list[tuple]:
            with self.read(timeout_s) as con:
                return con.execute(sql, params or []).fetchall()

        result: list[tuple] = self.attempt(run)
        return result


class SegmentStore(LineageStore):
    """A `LineageStore` for several writers on several hosts, sharing one folder.

    Writes append a segment; reads (`get`, `find`, `counts`, `rejection_reasons`, `trace`) are the
    store's own queries, run against the segments and the DuckDB store at `store` (if it exists)
    as one view. `writer` names this process in segment file names (default: host and pid).
    """

    def __init__(
        self,
        folder: Path | str,
        *,
        store: Path | str | None = None,
        writer: str | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        self.folder = Path(folder)
        self.writer = writer or default_writer()
        self.source = SegmentSource(self.folder, Path(store) if store is not None else None, timeout_s)
        # LineageStore's queries go through `self.file`; here it is the segment view.
        self.file = self.source  # type: ignore[assignment]
        self.path = self.folder

    def record(
        self,
        rows: Iterable[LineageRow],
        edges: Iterable[Edge] = (),
        *,
        chunk_size: int = 5000,
        on_chunk: Callable[[int], None] | None = None,
        step: str | None = None,
    ) -> WriteResult:
        """Append one segment with these rows and edges; `step` names it (default: the rows' kinds).

        The counts are what the segment holds: an id already known elsewhere is written again and
        collapsed by readers. `chunk_size` is accepted for signature compatibility (a segment is
        written whole); `on_chunk` is called once, with the row count, after the segment is published.
        """
        now = datetime.now(UTC).replace(tzinfo=None)
        unique_rows = list({r.id: r for r in rows}.values())
        unique_edges = list({(e.child, e.parent, e.relation): e for e in edges}.values())
        if not unique_rows and not unique_edges:
            return WriteResult(records_written=0, edges_written=0)
        if step is None:
            kinds = sorted({r.kind for r in unique_rows}) or ["edges"]
            step = "+".join(kinds[:3])
        table = _segment_table(unique_rows, unique_edges, now)
        _publish(self.folder, segment_name(self.writer, step), lambda p: pq.write_table(table, p))
        if on_chunk is not None:
            on_chunk(len(unique_rows))
        return WriteResult(records_written=len(unique_rows), edges_written=len(unique_edges))

    def segments(self) -> list[Path]:
        return list_segments(self.folder)

    def _rows(self, sql: str, params: Sequence[object]) -> list[LineageRow]:
        def run() -> list[LineageRow]:
            with self.source.read() as con:
                return _fetch_rows(con, sql, list(params))

        rows: list[LineageRow] = self.source.attempt(run)
        return rows

    def trace(
        self, record_id: str, direction: Literal["up", "down"] = "up", max_depth: int | None = None
    ) -> Trace:
        # The store's breadth-first walk over one listing, with the edges read once rather than
        # once per level; if a segment vanishes meanwhile, the walk starts over.
        walker = _Walker(
            SegmentSource(self.folder, self.source.store_path, self.source.timeout_s, edges_table=True)
        )
        trace: Trace = self.source.attempt(lambda: walker.trace(record_id, direction, max_depth))
        return trace


class _Walker(LineageStore):
    """The DuckDB store's own trace, reading from a segment source."""

    def __init__(self, source: SegmentSource) -> None:
        self.file = source  # type: ignore[assignment]
        self.path = source.folder


@contextlib.contextmanager
def _folder_lock(folder: Path, timeout_s: float) -> Iterator[None]:
    """One compaction per folder at a time (on hosts that share a working `flock`)."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / ".compact.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise StoreBusy(
                        f"another compaction of {folder} held its lock for {timeout_s:.0f}s; "
                        "let it finish and run this one again"
                    ) from None
                time.sleep(0.05 * (1 + random.random()))
        yield
    finally:
        os.close(fd)


def _sweep_tmp(folder: Path, stale_after_s: float) -> int:
    """Remove temporary files old enough that no live writer can still be producing them."""
    swept = 0
    cutoff = time.time() - stale_after_s
    for p in folder.iterdir():
        if p.name.startswith(".") and p.name.endswith(TMP_SUFFIX):
            with contextlib.suppress(FileNotFoundError):
                if p.stat().st_mtime < cutoff:
                    p.unlink()
                    swept += 1
    return swept


def _remove(paths: Iterable[Path], on_stage: Callable[[str], None] | None) -> None:
    for i, p in enumerate(paths):
        with contextlib.suppress(FileNotFoundError):  # a compactor elsewhere got there first
            p.unlink()
        if on_stage is not None and i == 0:
            on_stage("removing")


def _canonical_select(entry: Literal["record", "edge"], source: str) -> str:
    """Rows of `source` in the segment column order, NULL where the entry has no such column."""
    own = set(_RECORD_COLUMNS) if entry == "record" else {*_EDGE_COLUMNS, "created_at"}
    cols = [f"'{entry}' AS entry"]
    for c in (*_RECORD_COLUMNS, *_EDGE_COLUMNS):
        cols.append(c if c in own else f"NULL::{_RECORD_SQL_TYPES.get(c, 'VARCHAR')} AS {c}")
    return f"SELECT {', '.join(cols)} FROM {source}"


def compact(
    folder: Path | str,
    *,
    min_segments: int = 2,
    stale_after_s: float = 600.0,
    timeout_s: float = 600.0,
    on_stage: Callable[[str], None] | None = None,
) -> CompactionResult:
    """Merge every published segment of `folder` into one, then delete the merged ones.

    The merged segment holds each id once (the earliest write) and each edge once, sorted by id
    so readers skip row groups when they look one up; DuckDB streams it, so memory stays bounded.
    If a source vanishes mid-merge (a compactor on another host), the merge fails before it
    publishes anything. `on_stage` is called with "written", "published" and "removing" as the
    compaction passes those points (tests kill it there).
    """
    folder = Path(folder)
    with _folder_lock(folder, timeout_s):
        swept = _sweep_tmp(folder, stale_after_s)
        sources = list_segments(folder)
        if len(sources) < min_segments:
            return CompactionResult(merged_segments=0, records=0, edges=0, swept_tmp_files=swept)
        con = duckdb.connect()
        try:
            _create_views(con, sources, with_store=False)
            merged = (
                f"{_canonical_select('record', 'records')} UNION ALL {_canonical_select('edge', 'edges')} "
                "ORDER BY entry DESC, id, child, parent, relation"
            )

            def write(path: Path) -> None:
                con.execute(f"COPY ({merged}) TO {_sql_path(path)} (FORMAT parquet)")
                if on_stage is not None:
                    on_stage("written")

            name = segment_name(COMPACTED_WRITER, f"{len(sources)}-segments")
            out = _publish(folder, name, write)
            counts = dict(
                con.execute(
                    f"SELECT entry, count(*) FROM read_parquet({_sql_path(out)}) GROUP BY entry"
                ).fetchall()
            )
        finally:
            con.close()
        if on_stage is not None:
            on_stage("published")
        _remove(sources, on_stage)
        return CompactionResult(
            merged_segments=len(sources),
            records=int(counts.get("record", 0)),
            edges=int(counts.get("edge", 0)),
            output=str(out),
            swept_tmp_files=swept,
        )


def absorb(
    folder: Path | str,
    store: LineageStore,
    *,
    timeout_s: float = 600.0,
    on_stage: Callable[[str], None] | None = None,
) -> CompactionResult:
    """Move every segment of `folder` into the DuckDB store in one transaction, then delete them.

    Already-known ids and edges keep their stored rows (INSERT OR IGNORE). A kill before the
    commit leaves the store as it was; a kill after it leaves segments that duplicate stored rows,
    which readers collapse and the next `absorb` skips.
    """
    folder = Path(folder)
    with _folder_lock(folder, timeout_s):
        sources = list_segments(folder)
        if not sources:
            return CompactionResult(merged_segments=0, records=0, edges=0)
        cols = ", ".join(_RECORD_COLUMNS)
        with store.file.write() as con:
            con.execute(f"CREATE TEMP VIEW absorbed AS {_segments_select(sources)}")
            before = [
                int(con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]) for t in ("records", "edges")
            ]
            con.execute(
                f"INSERT OR IGNORE INTO records SELECT {cols} FROM absorbed WHERE entry = 'record' "
                "QUALIFY row_number() OVER (PARTITION BY id ORDER BY created_at, filename) = 1"
            )
            con.execute(
                "INSERT OR IGNORE INTO edges SELECT child, parent, relation, min(created_at) FROM absorbed "
                "WHERE entry = 'edge' GROUP BY ALL"
            )
            after = [
                int(con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]) for t in ("records", "edges")
            ]
            con.execute("DROP VIEW absorbed")
        if on_stage is not None:
            on_stage("committed")
        _remove(sources, on_stage)
        return CompactionResult(
            merged_segments=len(sources),
            records=after[0] - before[0],
            edges=after[1] - before[1],
            output=str(store.path),
        )
