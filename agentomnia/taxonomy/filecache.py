"""A cache of data parsed from shipped files, under `$AGENTOMNIA_HOME/cache/<name>/`.

Parsing and validating the knowledge base's YAML takes seconds, and every command that builds an
environment needs it. `cached(name, sources, build)` keys the parsed result by the bytes of every
source file and of the code that defines its shape, so any edit to either makes a new entry; an entry
that cannot be read is rebuilt, and a home that cannot be written to only costs the speed-up.
The cache holds only what this process built and pickled itself, in the platform's own home.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

import pydantic

from agentomnia.config import home

T = TypeVar("T")
CACHE_ENV = "AGENTOMNIA_PARSE_CACHE"  # "0" turns the cache off


def cache_key(sources: Iterable[Path]) -> str:
    digest = hashlib.sha256(f"pydantic {pydantic.VERSION}\n".encode())
    for path in sorted(sources, key=str):
        data = path.read_bytes()
        digest.update(f"{path.name} {len(data)}\n".encode())
        digest.update(data)
    return digest.hexdigest()[:24]


def cached(name: str, sources: Iterable[Path], build: Callable[[], T]) -> T:
    """`build()`, or what an earlier call with byte-identical `sources` built and stored."""
    if os.environ.get(CACHE_ENV, "1").strip() == "0":
        return build()
    folder = home() / "cache" / name
    entry = folder / f"{cache_key(sources)}.pickle"
    try:
        value: T = pickle.loads(entry.read_bytes())
        return value
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        pass  # not there yet, or written by another version of the code: build it again
    value = build()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, suffix=".tmp", delete=False) as handle:
            handle.write(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(handle.name, entry)
        for old in folder.glob("*.pickle"):
            if old != entry:
                old.unlink(missing_ok=True)  # one entry per name: an edit replaces it
    except OSError:
        pass  # a read-only home only costs the speed-up
    return value
