"""Where artifacts live under `$AGENTOMNIA_HOME`, and atomic Parquet writes.

Bulk data is Parquet that DuckDB can query in place; the lineage store only points at it.
A write goes to a temporary file in the same folder, is flushed to disk and renamed into place,
so a reader never sees half a file, a killed writer or a full disk leaves the previous file as it
was (and at most a stray `.tmp`), and a machine that goes down right after the rename does not
come back with a file whose bytes never reached the disk.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from agentomnia.config import home as default_home

if TYPE_CHECKING:
    from agentomnia.catalog import RoundArtifacts

_SAFE = re.compile(r"^[A-Za-z0-9_.-]+$")


def _safe(part: str, what: str) -> str:
    if not _SAFE.match(part) or part in (".", ".."):
        raise ValueError(f"{what} {part!r} may only contain letters, digits, '_', '.' and '-'")
    return part


class Storage:
    """Path layout of one platform home."""

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root).resolve() if root is not None else default_home()
        self.root.mkdir(parents=True, exist_ok=True)

    @property
    def lineage_path(self) -> Path:
        return self.root / "lineage.duckdb"

    @property
    def llm_cache_path(self) -> Path:
        return self.root / "llm_cache.duckdb"

    @property
    def dagster_home(self) -> Path:
        return self.root / "dagster"

    @property
    def artifacts_root(self) -> Path:
        return self.root / "artifacts"

    def artifact_dir(self, asset: str, round_key: str) -> Path:
        path = self.root / "artifacts" / _safe(asset, "asset name") / _safe(round_key, "round")
        path.mkdir(parents=True, exist_ok=True)
        return path

    def artifact(self, asset: str, round_key: str, name: str = "data.parquet") -> Path:
        return self.artifact_dir(asset, round_key) / _safe(name, "artifact name")

    def llm_usage_path(self, stage: str, round_key: str) -> Path:
        """Where a stage's model ledger for a round lives: beside its artifacts, as `llm.json`."""
        return self.artifact(stage, round_key, "llm.json")

    def env_dir(self, env_id: str) -> Path:
        return self.root / "envs" / _safe(env_id, "environment id")

    def dataset_dir(self, name: str, round_key: str) -> Path:
        return self.root / "datasets" / _safe(name, "dataset name") / _safe(round_key, "round")

    def checkpoint_dir(self, name: str, round_key: str) -> Path:
        return self.root / "checkpoints" / _safe(name, "checkpoint name") / _safe(round_key, "round")

    def round(self, key: str) -> RoundArtifacts:
        """Typed readers of one round's artifacts (see `agentomnia.catalog`)."""
        from agentomnia.catalog import RoundArtifacts

        return RoundArtifacts(self, key)


def _jsonable(value: Any) -> Any:
    """Nested values go to Parquet as JSON text: their shapes differ from row to row."""
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return value


def write_parquet(
    path: Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None
) -> Path:
    """Write rows atomically; nested values become JSON strings. An empty list keeps `columns`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    names = list(columns) if columns is not None else sorted({k for row in rows for k in row})
    data = {name: [_jsonable(row.get(name)) for row in rows] for name in names}
    table = pa.table(data) if rows else pa.table({name: pa.array([], pa.string()) for name in names})
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)  # a full disk can surface only here, before anything is replaced
        finally:
            os.close(fd)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    _fsync_dir(path.parent)
    return path


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable; some filesystems refuse to fsync a folder, which is harmless."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def read_parquet(path: Path, json_columns: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Rows of a Parquet file; `json_columns` are decoded back from JSON text."""
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; materialize the asset that writes it first")
    rows = pq.read_table(path).to_pylist()
    decode = list(json_columns)
    for row in rows:
        for col in decode:
            if isinstance(row.get(col), str):
                row[col] = json.loads(row[col])
    return rows


def save_records(path: Path, records: Sequence[Any], flat: Sequence[str] = ()) -> Path:
    """Records to Parquet: a lossless `record` JSON column plus `flat` fields for DuckDB queries."""
    rows = []
    for r in records:
        row = {"id": r.id, "round": r.round, "record": r.model_dump_json()}
        for name in flat:
            row[name] = getattr(r, name)
        rows.append(row)
    return write_parquet(path, rows, columns=["id", "round", "record", *flat])


def load_records(path: Path, cls: type[Any]) -> list[Any]:
    """The records `save_records` wrote, validated back into `cls`."""
    return [cls.model_validate_json(row["record"]) for row in read_parquet(path)]
