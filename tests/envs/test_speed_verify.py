"""Verification in few round trips: the same checks, the same draws, scoped invariant checks that agree."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest

from agentomnia.envs.calls import valid_calls
from agentomnia.envs.codegen import generate_source
from agentomnia.envs.spec import EnvSpec
from agentomnia.envs.state import generate_state, state_violations
from agentomnia.envs.state_space import build_state_space
from agentomnia.envs.toolset import ToolsetConfig, synthesize_toolset
from agentomnia.envs.verify import bundle_for, check_tool, verify, with_tools
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.sandbox.session import Session


@pytest.fixture(scope="module")
def parcel(parcel_candidate, parcel_seed, logistics_domain, sandbox) -> tuple[EnvSpec, dict[str, Any], str]:  # type: ignore[no-untyped-def]
    """A small environment that verifies cleanly (tools that cannot pass are left out, as a build does)."""
    spec, space = build_state_space(parcel_candidate, [parcel_seed], logistics_domain)
    toolset = synthesize_toolset(spec, [parcel_seed], space.tool_entities, ToolsetConfig(max_tools=24))
    spec = with_tools(spec, toolset.tools)
    s0 = generate_state(spec)
    report, _ = verify(sandbox, bundle_for(spec, generate_source(spec), s0), spec, s0)
    failing = {t.name for t in report.failing_tools()}
    spec = with_tools(spec, [t for t in spec.tools if t.name not in failing])
    return spec, s0, generate_source(spec)


def test_scoped_invariant_checks_agree_with_full_ones_on_states_changed_from_a_valid_s0(
    parcel: tuple[EnvSpec, dict[str, Any], str],
) -> None:
    spec, s0, _ = parcel
    assert state_violations(spec, s0) == []
    rng = random.Random(3)
    broken = 0
    for _ in range(300):
        state = copy.deepcopy(s0)
        entity = rng.choice(spec.entities)
        table = state[entity.table]
        if not table:
            continue
        record = table[rng.choice(sorted(table))]
        attribute = rng.choice(entity.attributes)
        record[attribute.name] = rng.choice([None, -3, "NOPE-404", "not-a-date", 10**9, True, 2.5])
        if rng.random() < 0.2:
            del table[rng.choice(sorted(table))]
        # compared as JSON: True == 1 in Python, yet True in an int field is a change the check must see
        changed = {
            k for k in state if json.dumps(state[k], sort_keys=True) != json.dumps(s0.get(k), sort_keys=True)
        }
        full = state_violations(spec, state)
        assert state_violations(spec, state, tables=changed) == full
        broken += bool(full)
    assert broken > 50


def test_tool_checks_draw_exactly_what_trying_one_call_at_a_time_draws(
    parcel: tuple[EnvSpec, dict[str, Any], str], sandbox: Sandbox
) -> None:
    spec, s0, source = parcel
    bundle = bundle_for(spec, source, s0)
    batched, single = sandbox.open(bundle, s0), sandbox.open(bundle, s0)
    try:
        base, base_hash = batched.state_with_hash()
        ours, reference = random.Random(5), random.Random(5)
        for tool in spec.tools:
            check = check_tool(batched, spec, tool, s0, base, base_hash, ours)
            tries = 0
            for args in valid_calls(spec, s0, tool, reference):  # the loop the batch stands in for
                tries += 1
                if single.call(tool.name, args).ok:
                    single.reset(s0)
                    break
            assert ours.getstate() == reference.getstate(), tool.name
            assert check.checks >= tries
        assert batched.state_hash() == base_hash
    finally:
        batched.close()
        single.close()


def test_verification_takes_about_one_round_trip_per_tool(
    parcel: tuple[EnvSpec, dict[str, Any], str], sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, s0, source = parcel
    requests: list[str] = []
    pool = sandbox._pool
    real = pool.request

    def counting(slot: int, message: Any, **kwargs: Any) -> dict[str, Any]:
        requests.append(message if isinstance(message, str) else str(message.get("op")))
        return real(slot, message, **kwargs)

    monkeypatch.setattr(pool, "request", counting)
    report, _ = verify(sandbox, bundle_for(spec, source, s0), spec, s0)
    assert report.passed, report.tool.failures + report.env.failures
    # open, state, one batch per tool, close; then two sessions doing six rollouts
    # + 12 for the environment contract (check_env): two opens, describe, two replay batches, five for the
    # snapshot check, two closes
    assert len(requests) <= len(spec.tools) + 6 + 2 * 6 + 6 + 12, (len(requests), len(spec.tools))


def test_a_read_tool_that_writes_is_caught_wherever_it_sits(
    parcel: tuple[EnvSpec, dict[str, Any], str], sandbox: Sandbox
) -> None:
    spec, s0, source = parcel
    reads = [t for t in spec.tools if t.kind == "read" and t.op == "get"]
    assert reads
    for tool in (reads[0], reads[-1]):
        marker = f"    def {tool.name}("
        head, tail = source.split(marker, 1)
        tail = tail.replace(
            "        return self._ok(copy.deepcopy(record))",
            "        self.now = 'touched by a read'\n        return self._ok(copy.deepcopy(record))",
            1,
        )
        report, _ = verify(sandbox, bundle_for(spec, head + marker + tail, s0), spec, s0)
        failing = {t.name: t.failures for t in report.failing_tools()}
        assert failing == {tool.name: ["read tool changed the state"]}, failing


def test_batched_verification_reports_what_one_request_per_step_reports(
    parcel: tuple[EnvSpec, dict[str, Any], str], sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, s0, source = parcel
    marker = "    def update_shipment("
    head, tail = source.split(marker, 1)
    tail = tail.replace(
        "updated['declared_value'] = copy.deepcopy(declared_value)", "updated['declared_value'] = 0.0", 1
    )
    for code in (source, head + marker + tail):
        bundle = bundle_for(spec, code, s0)
        batched, _ = verify(sandbox, bundle, spec, s0, seed=3)
        with monkeypatch.context() as patch:
            patch.setattr(Session, "run", lambda self, batch: self._run_one_by_one(batch.steps))
            stepwise, _ = verify(sandbox, bundle, spec, s0, seed=3)
        assert batched.model_dump(exclude={"seconds"}) == stepwise.model_dump(exclude={"seconds"})
    assert [t.name for t in batched.failing_tools()] == ["update_shipment"]
