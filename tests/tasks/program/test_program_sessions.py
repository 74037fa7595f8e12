"""Program runs in one reused session (reset to each run's initial state) behave exactly like runs in
fresh sessions, and a session the sandbox dropped is replaced instead of failing the run."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from agentomnia.envs.build import BuiltEnv
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.program.difficulty import harden
from agentomnia.tasks.program.execute import SessionSlot, run_once
from agentomnia.tasks.program.templates import propose_plans, render


def test_a_reused_session_runs_programs_like_fresh_ones(
    parcel_env: BuiltEnv, parcel_bundle: Path, sandbox: Sandbox
) -> None:
    spec, s0 = parcel_env.spec, parcel_env.s0
    bundle = Bundle.load(parcel_bundle)
    runs = []
    for plan in propose_plans(spec, s0, random.Random(0)):
        hardened = harden(spec, s0, plan, random.Random(1))
        source = render(hardened.plan)
        # runs that write, so a session left dirty by one would show in the next
        if run_once(sandbox, bundle, hardened.state, source)[1] != _fresh_state(
            sandbox, bundle, hardened.state
        ):
            runs.append((hardened.state, source))
        if len(runs) == 3:
            break
    assert runs
    changed = 0
    with SessionSlot(sandbox, bundle) as slot:
        # twice through: every run starts from its own state, not from what the last one left
        for state, source in [*runs, *runs]:
            fresh, fresh_final = run_once(sandbox, bundle, state, source)
            reused, reused_final = run_once(sandbox, bundle, state, source, slot=slot)
            assert reused.answer == fresh.answer and reused_final == fresh_final
            assert [(c.tool, c.arguments) for c in reused.calls] == [
                (c.tool, c.arguments) for c in fresh.calls
            ]
            changed += reused_final != _fresh_state(sandbox, bundle, state)
    assert changed  # the runs wrote, so a session left dirty by one would show in the next


def test_a_dropped_session_is_replaced(parcel_env: BuiltEnv, parcel_bundle: Path, sandbox: Sandbox) -> None:
    bundle = Bundle.load(parcel_bundle)
    slot = SessionSlot(sandbox, bundle)
    first = slot.at(parcel_env.s0)
    assert slot.at(parcel_env.s0) is first  # reused while it lives
    first.close()
    second = slot.at(parcel_env.s0)
    assert second is not first and not second.closed
    assert second.state() == _fresh_state(sandbox, bundle, parcel_env.s0)
    slot.close()
    assert second.closed


def _fresh_state(sandbox: Sandbox, bundle: Bundle, config: dict[str, Any]) -> dict[str, Any]:
    session = sandbox.open(bundle, config)
    try:
        return session.state()
    finally:
        session.close()
