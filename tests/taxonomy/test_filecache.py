"""The parse cache: the knowledge base is read from `$AGENTOMNIA_HOME/cache` once parsed, and any edit
to a source makes a new entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentomnia.taxonomy.filecache import CACHE_ENV, cache_key, cached
from agentomnia.taxonomy.knowledge import _data_dir, _parse_knowledge


def test_a_second_load_reads_what_the_first_built(home: Path, tmp_path: Path) -> None:
    source = tmp_path / "data.yaml"
    source.write_text("- a: 1\n")
    built: list[int] = []

    def build() -> dict[str, int]:
        built.append(1)
        return {"a": len(built)}

    assert cached("demo", [source], build) == {"a": 1}
    assert cached("demo", [source], build) == {"a": 1} and len(built) == 1
    [entry] = (home / "cache" / "demo").glob("*.pickle")
    source.write_text("- a: 2\n")  # an edit: a new key, a fresh build, the old entry gone
    assert cached("demo", [source], build) == {"a": 2} and len(built) == 2
    assert not entry.exists() and len(list((home / "cache" / "demo").glob("*.pickle"))) == 1


def test_an_unreadable_entry_is_rebuilt_and_the_cache_can_be_turned_off(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "data.yaml"
    source.write_text("x")
    folder = home / "cache" / "demo"
    folder.mkdir(parents=True)
    (folder / f"{cache_key([source])}.pickle").write_bytes(b"not a pickle")
    assert cached("demo", [source], lambda: "fresh") == "fresh"
    monkeypatch.setenv(CACHE_ENV, "0")
    assert cached("demo", [source], lambda: "uncached") == "uncached"


def test_the_cached_knowledge_base_equals_the_parsed_one(home: Path) -> None:
    paths = sorted(_data_dir().glob("*.yaml"))[:2]
    parsed = _parse_knowledge(paths)
    assert cached("kb-test", paths, lambda: _parse_knowledge(paths)) == parsed
    assert cached("kb-test", paths, lambda: {}) == parsed  # read back, not rebuilt
