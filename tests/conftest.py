"""Test-wide settings: nothing is downloaded, the platform home is a temporary folder, and the shared
fixtures of tests/fixtures (built environments, the mock domain, a sandbox) are registered."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest_plugins = ["tests.fixtures.plugin"]

# Started as a background job of a script (`make test &` in a subshell), this process inherits SIGINT
# ignored. Dagster's in-process execution then maps SIGTERM onto SIGINT's handler, so SIGTERM becomes
# ignored too, and every `agentomnia run` a test starts afterwards inherits that and ignores the
# SIGTERM the crash test sends. The tests run as from a terminal: SIGINT raises KeyboardInterrupt.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

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
