"""Test-wide settings: nothing is downloaded, the platform home is a temporary folder, and the shared
fixtures of tests/fixtures (built environments, the mock domain, a sandbox) are registered."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest_plugins = ["tests.fixtures.plugin"]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh $AGENTOMNIA_HOME for one test."""
    root = tmp_path / "home"
    monkeypatch.setenv("AGENTOMNIA_HOME", str(root))
    monkeypatch.setenv("DAGSTER_HOME", str(root / "dagster"))
    yield root
