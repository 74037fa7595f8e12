"""The environment contract on every built bundle: `check_env` passes on each fixture environment,
verification stores its verdict in `verification.json`, and a broken environment fails it with a
message naming the cause."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agentomnia.envs.build import BuiltEnv, verification_record
from agentomnia.envs.verify import bundle_for, bundle_verdict, record_verdict, verify
from agentomnia.sandbox import Bundle, Sandbox, check_env, fixture_bundle
from agentomnia.sandbox.conformance import CHECKS
from tests.fixtures.built import build_cached, built_record
from tests.fixtures.domains import FIXTURE_ENVS

BuildEnv = Callable[[str], Path]
SHIPPED = ("mock", "shop")  # the hand-written bundles the sandbox ships


@pytest.fixture(scope="module")
def built_env(sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> BuildEnv:
    """Fixture environments built through the real engine path with this module's sandbox."""
    folder = tmp_path_factory.mktemp("contract-envs")
    return lambda name: build_cached(name, folder, sandbox)


@pytest.mark.parametrize("name", sorted(FIXTURE_ENVS))
def test_every_built_fixture_environment_keeps_the_contract(
    name: str, built_env: BuildEnv, sandbox: Sandbox
) -> None:
    folder = built_env(name)
    report = check_env(sandbox, Bundle.load(folder), sequences=6, steps=8)
    assert report.passed, report.summary()
    assert [c.name for c in report.checks] == list(CHECKS)
    # the build ran the same checker and kept its verdict in the bundle
    contract = json.loads((folder / "verification.json").read_text())["contract"]
    assert contract["passed"] and list(contract["checks"]) == list(CHECKS) and contract["problems"] == []
    assert bundle_verdict(folder) == (True, [])


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_bundle_keeps_the_contract(name: str, sandbox: Sandbox) -> None:
    report = check_env(sandbox, fixture_bundle(name), sequences=6, steps=8)
    assert report.passed, report.summary()


def _sabotaged(built: BuiltEnv, line: str) -> str:
    """The built source with `line` added to the constructor, after its first attribute."""
    anchor = "    def __init__(self, init_config: dict):\n"
    assert anchor in built.source
    head, tail = built.source.split(anchor, 1)
    first, rest = tail.split("\n", 1)
    return f"{head}{anchor}{first}\n        {line}\n{rest}"


@pytest.fixture(scope="module")
def parcel_built(built_env: BuildEnv) -> BuiltEnv:
    return built_record(built_env("parcel-claims"))


def test_an_identity_dependent_state_fails_the_contract_naming_the_cause(
    parcel_built: BuiltEnv, sandbox: Sandbox
) -> None:
    source = _sabotaged(parcel_built, "self.nonce = hash(object()) % 1000003")
    report, _ = verify(
        sandbox, bundle_for(parcel_built.spec, source, parcel_built.s0), parcel_built.spec, parcel_built.s0
    )
    assert report.contract is not None and not report.contract.passed and not report.passed
    assert report.contract.checks["determinism"] is False
    (problem,) = [p for p in report.contract.problems if p.startswith("determinism:")]
    assert "differ before any call" in problem and "object identity" in problem


def test_a_state_with_no_json_form_fails_the_build_and_the_verdict(
    parcel_built: BuiltEnv, sandbox: Sandbox, tmp_path: Path
) -> None:
    # Invisible to the three levels (they compare the spec's tables), caught by the contract.
    source = _sabotaged(parcel_built, "self.hook = lambda: None")
    report, _ = verify(
        sandbox, bundle_for(parcel_built.spec, source, parcel_built.s0), parcel_built.spec, parcel_built.s0
    )
    assert report.levels_passed and report.contract is not None and not report.passed
    assert report.contract.checks["state"] is False
    assert any("no JSON form (function)" in p for p in report.contract.problems), report.contract.problems
    record = verification_record(parcel_built.model_copy(update={"source": source, "report": report}))
    assert record["verified"] is False and record["contract"]["passed"] is False
    passed, problems = record_verdict(record)
    assert not passed and any(p.startswith("contract state:") and "function" in p for p in problems)
    # the same verdict from the file, and from a Parquet row (nested values stored as JSON text)
    (tmp_path / "verification.json").write_text(json.dumps(record))
    assert bundle_verdict(tmp_path) == (passed, problems)
    row = {k: json.dumps(v) if isinstance(v, dict | list) else v for k, v in record.items()}
    assert record_verdict(row) == (passed, problems)


def test_a_record_without_a_contract_section_does_not_pass(parcel_built: BuiltEnv) -> None:
    record = verification_record(parcel_built)
    assert record_verdict(record) == (True, [])
    del record["contract"]
    passed, problems = record_verdict(record)
    assert not passed and "no contract result" in problems[0]
    assert bundle_verdict(Path("/nonexistent/bundle"))[0] is False


def test_an_html_value_is_a_value_and_a_type_name_alone_is_not() -> None:
    from agentomnia.sandbox.conformance import _check_state

    html = "<h1>Your ticket #*|TICKET_ID|* has been resolved</h1><p>Hi *|FIRST_NAME|*,</p>"
    assert _check_state({"templates": {"TPL-001": {"html": html, "subject": "<urgent> renewal"}}}).passed
    failed = _check_state({"templates": {"TPL-001": {"html": html, "hook": "<function>"}}})
    assert not failed.passed and "(function)" in failed.message
