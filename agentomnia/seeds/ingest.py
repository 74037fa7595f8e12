"""Ingest seed files: find them, tell their kind, parse each in isolation, keep every rejection.

`ingest(paths)` accepts files and folders (walked recursively). A Hugging Face dataset saved
with `save_to_disk`, or a Parquet file, is read through `datasets` as queries with a column
mapping. Ingesting the same files twice yields the same seed ids (content hashes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from agentomnia.seeds.models import IngestResult, SeedKind, seed_rejection
from agentomnia.seeds.parsers import (
    MAX_BYTES,
    QueryColumns,
    SeedInputError,
    load_structured,
    parse_mcp,
    parse_openapi,
    parse_skill,
    query_rows_from_text,
    query_seed,
    read_text,
)

_SKIPPED = ("manifest", "readme", ".")


def corpus_dir() -> Path:
    """The shipped seed corpus inside the package."""
    return Path(str(resources.files("agentomnia.seeds") / "corpus"))


def _is_hf_dataset(path: Path) -> bool:
    return path.is_dir() and ((path / "dataset_info.json").exists() or (path / "dataset_dict.json").exists())


def _files(paths: Iterable[Path]) -> Iterable[Path]:
    for p in paths:
        if _is_hf_dataset(p):
            yield p
        elif p.is_dir():
            for child in sorted(p.rglob("*")):
                if child.is_file() and not child.name.lower().startswith(_SKIPPED) or _is_hf_dataset(child):
                    yield child
        else:
            yield p


def _kind_of(path: Path) -> SeedKind | None:
    suffix = path.suffix.lower()
    if path.name.upper() == "SKILL.MD" or suffix == ".md":
        return "skill"
    if suffix in (".jsonl", ".csv", ".parquet") or _is_hf_dataset(path):
        return "query"
    return None  # .json/.yaml: decided by content


def _source(path: Path, base: Path | None) -> str:
    if base is not None and path.resolve().is_relative_to(base.resolve()):
        return str(path.resolve().relative_to(base.resolve()))
    return str(path)


def ingest(
    paths: Iterable[Path | str],
    *,
    query_columns: Mapping[str, str] | None = None,
    max_bytes: int = MAX_BYTES,
    relative_to: Path | None = None,
) -> IngestResult:
    """Parse every seed under `paths`; bad inputs become rejections, never exceptions."""
    result = IngestResult()
    columns = QueryColumns(query_columns or QueryColumns.default())
    for path in _files(Path(p) for p in paths):
        source = _source(path, relative_to)
        try:
            result.extend(_ingest_one(path, source, columns, max_bytes))
        except SeedInputError as exc:
            result.rejected.append(
                seed_rejection(
                    source, exc.reason, kind=_kind_of(path) or "unknown", place=exc.place, fix=exc.fix
                )
            )
        except OSError as exc:
            result.rejected.append(
                seed_rejection(
                    source, f"cannot read: {exc.strerror or exc}", fix="check the path and permissions"
                )
            )
    return result


def _ingest_one(path: Path, source: str, columns: QueryColumns, max_bytes: int) -> IngestResult:
    kind = _kind_of(path)
    name = path.parent.name if path.name.upper() == "SKILL.MD" else path.stem
    if kind == "query":
        return _ingest_queries(path, source, columns, max_bytes)
    text = read_text(path, max_bytes)
    if kind == "skill":
        return IngestResult(accepted=[parse_skill(text, source=source, name=name)])
    if path.suffix.lower() not in (".json", ".yaml", ".yml"):
        raise SeedInputError(
            f"cannot tell what kind of seed a '{path.suffix or 'suffix-less'}' file is",
            fix="use .jsonl/.csv/.parquet for queries, SKILL.md for skills, .json/.yaml for MCP tool lists and OpenAPI specs",
        )
    doc = load_structured(text, path)
    if isinstance(doc, Mapping) and ("openapi" in doc or "swagger" in doc):
        return IngestResult(accepted=[parse_openapi(doc, text=text, source=source, name=name)])
    if isinstance(doc, list) or (isinstance(doc, Mapping) and "tools" in doc):
        return IngestResult(accepted=[parse_mcp(doc, source=source, name=name)])
    raise SeedInputError(
        "neither an OpenAPI document (no `openapi`/`swagger` key) nor an MCP tool list (no `tools`)",
        fix="check the file is a seed; move other files out of the seed folder",
    )


def _ingest_queries(path: Path, source: str, columns: QueryColumns, max_bytes: int) -> IngestResult:
    out = IngestResult()
    rows: Iterable[tuple[str, Any]]
    if path.suffix.lower() == ".parquet" or _is_hf_dataset(path):
        rows = _dataset_rows(path)
    else:
        rows = query_rows_from_text(read_text(path, max_bytes), path)
    for i, (place, row) in enumerate(rows, start=1):
        try:
            if isinstance(row, SeedInputError):
                raise row
            out.accepted.append(
                query_seed(row, columns=columns, source=source, place=place, default_name=f"{path.stem}-{i}")
            )
        except SeedInputError as exc:
            out.rejected.append(
                seed_rejection(source, exc.reason, kind="query", place=exc.place or place, fix=exc.fix)
            )
    if not out.accepted and not out.rejected:
        raise SeedInputError("no query rows", fix="add one query per row")
    return out


def _dataset_rows(path: Path) -> Iterable[tuple[str, dict[str, Any]]]:
    import datasets

    try:
        if path.is_dir():
            loaded = datasets.load_from_disk(str(path))
            ds = loaded[next(iter(loaded))] if isinstance(loaded, datasets.DatasetDict) else loaded
        else:
            ds = datasets.Dataset.from_parquet(str(path))
    except Exception as exc:  # datasets raises many unrelated types for an unreadable file
        raise SeedInputError(
            f"cannot load as a dataset: {exc}", fix="give a save_to_disk folder or a Parquet file"
        ) from None
    for i, row in enumerate(ds):  # type: ignore[arg-type]
        yield f"row {i}", dict(row)


def shipped_corpus() -> IngestResult:
    """The corpus that ships with the package: the default input of the offline pipeline."""
    base = corpus_dir()
    return ingest([base], relative_to=base)
