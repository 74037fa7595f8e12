"""One sandbox per module for solver-task tests (workers=1 suits the 2-core CI machine)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentomnia.sandbox.sandbox import Sandbox


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox(workers=1, idle_timeout_s=0)
    yield box
    box.close()
