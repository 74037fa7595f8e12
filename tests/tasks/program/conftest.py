"""A small environment built inside the test session (parcel claims, domain 20096) and a sandbox."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentomnia.envs.build import BuiltEnv, build_environment, write_bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.seeds.inference import propose_offline
from agentomnia.seeds.parsers import parse_mcp
from agentomnia.taxonomy import load_taxonomy
from tests.envs.conftest import PARCEL_TOOLS


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox(workers=1, idle_timeout_s=0)
    yield box
    box.close()


@pytest.fixture(scope="module")
def parcel_env(sandbox: Sandbox) -> BuiltEnv:
    seed = parse_mcp(PARCEL_TOOLS, source="test://parcel-claims.json", name="parcel-claims")
    domain = load_taxonomy().by_id(20096)
    candidate = propose_offline(seed, domain, 0.55, 0.3, [0.55, 0.5, 0.4])
    built = build_environment(candidate, [seed], domain, sandbox)
    assert isinstance(built, BuiltEnv), built
    return built


@pytest.fixture(scope="module")
def parcel_bundle(parcel_env: BuiltEnv, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bundle(parcel_env, tmp_path_factory.mktemp("envs") / parcel_env.env_id)
