"""One DuckDB file shared by many processes.

DuckDB lets one process at a time open a file for writing, and a read-only opener fails while a
writer holds it. So every opener first takes an advisory lock on a side file — exclusive to
write, shared to read — keeps its connection for one short transaction, and closes it. Waiting
is bounded: past `timeout_s` the caller gets `StoreBusy` (a sensor turns that into a skip), never
a hang or a crash. The lock is released by the kernel when a process dies, so a killed writer
cannot wedge the file; DuckDB's write-ahead log drops its uncommitted transaction.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb


class StoreBusy(RuntimeError):
    """The file stayed locked by another process for longer than the caller would wait."""


class DuckFile:
    def __init__(self, path: Path | str, *, schema: str, timeout_s: float = 60.0) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.schema = schema
        self.timeout_s = timeout_s
        self._thread_lock = threading.RLock()
        self._initialised = False

    @contextlib.contextmanager
    def _flock(self, exclusive: bool, timeout_s: float) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
            deadline = time.monotonic() + timeout_s
            delay = 0.002
            while True:
                try:
                    fcntl.flock(fd, mode | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise StoreBusy(
                            f"{self.path} stayed locked by another process for {timeout_s:.1f}s; "
                            "retry when the running write finishes"
                        ) from None
                    time.sleep(delay * (1 + random.random()))
                    delay = min(delay * 2, 0.1)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    def _connect(self, read_only: bool, timeout_s: float) -> duckdb.DuckDBPyConnection:
        deadline = time.monotonic() + timeout_s
        delay = 0.01
        while True:
            try:
                return duckdb.connect(str(self.path), read_only=read_only)
            except duckdb.IOException as exc:
                # Someone outside our locking protocol (a DuckDB shell, say) holds the file.
                if "lock" not in str(exc).lower() or time.monotonic() >= deadline:
                    raise StoreBusy(f"{self.path} could not be opened: {exc}") from exc
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 0.2)

    def _ensure_schema(self) -> None:
        if self._initialised:
            return
        with self._flock(True, self.timeout_s):
            con = self._connect(False, self.timeout_s)
            try:
                con.execute(self.schema)
            finally:
                con.close()
        self._initialised = True

    @contextlib.contextmanager
    def write(self, timeout_s: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection inside one transaction: committed on exit, rolled back on error."""
        wait = self.timeout_s if timeout_s is None else timeout_s
        with self._thread_lock:
            self._ensure_schema()
            with self._flock(True, wait):
                con = self._connect(False, wait)
                try:
                    con.execute("BEGIN TRANSACTION")
                    try:
                        yield con
                    except BaseException:
                        con.execute("ROLLBACK")
                        raise
                    con.execute("COMMIT")
                finally:
                    con.close()

    @contextlib.contextmanager
    def read(self, timeout_s: float | None = None) -> Iterator[duckdb.DuckDBPyConnection | None]:
        """A read-only connection, or None when the file has never been written."""
        wait = self.timeout_s if timeout_s is None else timeout_s
        with self._thread_lock:
            if not self.path.exists():
                yield None
                return
            with self._flock(False, wait):
                con = self._connect(True, wait)
                try:
                    yield con
                finally:
                    con.close()

    def query(
        self, sql: str, params: list[object] | None = None, timeout_s: float | None = None
    ) -> list[tuple]:
        with self.read(timeout_s) as con:
            if con is None:
                return []
            return con.execute(sql, params or []).fetchall()
