"""Fixtures for environment synthesis: the parcel-claims seed, the stages' inputs before a build, and
a sandbox per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.seeds.inference import EnvCandidate
from agentomnia.seeds.models import Seed
from agentomnia.taxonomy import Domain
from tests.fixtures.domains import PARCEL
from tests.fixtures.plugin import fresh_sandbox


@pytest.fixture(scope="session")
def parcel_seed() -> Seed:
    return PARCEL.seed()


@pytest.fixture(scope="session")
def logistics_domain() -> Domain:
    return PARCEL.domain()


@pytest.fixture(scope="session")
def parcel_candidate() -> EnvCandidate:
    return PARCEL.candidate()


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """A fresh pool per module: the speed tests count the requests one verification makes."""
    yield from fresh_sandbox()
