"""Difficulty-oriented initial states for program tasks: ambiguity near the rule and evidence spread out.

The environment's s0 is valid but easy: few records sit near a program's threshold and every fact
is on the record itself. For a plan this module applies the shared hardening operators where they
bite: a boundary tie on the deciding attribute (two records exactly on the threshold, so `>` and
`>=` give different answers), distractors cloned from a qualifying record with values a step or
two away (some just miss the rule), and, for joins, a record whose deciding fact moves to a fresh
parent. The result is conformance-tested with `state_violations`; any operator that cannot keep
the invariants is skipped and noted.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from agentomnia.envs.spec import EnvSpec
from agentomnia.envs.state import state_violations
from agentomnia.tasks.hardening import boundary_tie, cross_entity_evidence, distractor_injection
from agentomnia.tasks.program.plan import Predicate, ProgramPlan


class HardenedState(BaseModel):
    state: dict[str, Any]
    plan: ProgramPlan
    applied: list[str] = Field(default_factory=list)  # operator names that changed the state
    notes: list[str] = Field(default_factory=list)


def harden(spec: EnvSpec, state: Mapping[str, Any], plan: ProgramPlan, rng: random.Random) -> HardenedState:
    """A harder initial state for `plan` (and the plan with its threshold moved onto the tie)."""
    current: dict[str, Any] = dict(state)
    applied: list[str] = []
    notes: list[str] = []
    pred = plan.predicate
    table = current.get(plan.table) or {}
    if plan.template == "filter_write" and pred.kind == "number":
        movable = sorted(k for k, r in table.items() if r.get(plan.write.attr) != plan.write.value)
        if len(movable) >= 2:
            tie = boundary_tie(
                spec,
                current,
                rng,
                entity=plan.entity,
                attr=pred.attr,
                keys=rng.sample(movable, 2),
                rounded=True,
            )
            notes += tie.notes
            value = tie.facts.get("value")
            if tie.applied and isinstance(value, (int, float)):
                moved = Predicate(attr=pred.attr, op=pred.op, value=value, kind=pred.kind)
                scoped = [r for r in tie.state[plan.table].values() if _in_scope(plan, r)]
                hits = sum(_meets(moved, r.get(pred.attr)) for r in scoped)
                if 0 < hits < len(scoped):  # the threshold moves onto the tie only if it still splits
                    current, applied, pred = tie.state, [*applied, "boundary_tie"], moved
                else:
                    notes.append(
                        "boundary tie left out: on the tie value the rule would not split the records"
                    )
        near = sorted(
            (k for k, r in (current.get(plan.table) or {}).items() if _meets(pred, r.get(pred.attr))),
            key=lambda k: (abs(float(current[plan.table][k].get(pred.attr) or 0) - float(pred.value)), k),
        )
        if near:
            clones = distractor_injection(spec, current, rng, entity=plan.entity, key=near[0], count=3)
            notes += clones.notes
            if clones.applied:
                current, applied = clones.state, [*applied, "distractor_injection"]
    elif plan.template == "join_write" and plan.join is not None:
        keys = sorted(table)
        if keys:
            evidence = cross_entity_evidence(spec, current, rng, entity=plan.entity, key=rng.choice(keys))
            notes += evidence.notes
            if evidence.applied and evidence.facts.get("via") == plan.join.ref_attr:
                current, applied = evidence.state, [*applied, "cross_entity_evidence"]
    elif plan.template == "aggregate_pick":
        movable = sorted(k for k, r in table.items() if r.get(pred.attr) == pred.value)
        if len(movable) >= 2 and plan.total_attr:
            top = sorted(movable, key=lambda k: (-(table[k].get(plan.total_attr) or 0), k))[:2]
            tie = boundary_tie(spec, current, rng, entity=plan.entity, attr=plan.total_attr, keys=top)
            notes += tie.notes
            if tie.applied:
                current, applied = tie.state, [*applied, "boundary_tie"]
    problems = state_violations(spec, current)
    if problems:  # operators check this themselves; a second look costs little and guards the seam
        return HardenedState(
            state=dict(state), plan=plan, notes=[*notes, f"hardening dropped: {problems[0]}"]
        )
    return HardenedState(
        state=current, plan=plan.model_copy(update={"predicate": pred}), applied=applied, notes=notes
    )


def _in_scope(plan: ProgramPlan, record: Mapping[str, Any]) -> bool:
    """Whether the plan's listing returns this record (its enum filters)."""
    return all(record.get(k) == v for k, v in plan.list_args.items() if k != "limit")


def _meets(pred: Predicate, value: Any) -> bool:
    if value is None:
        return False
    ops = {
        ">": value > pred.value,
        ">=": value >= pred.value,
        "<": value < pred.value,
        "<=": value <= pred.value,
    }
    return bool(ops.get(pred.op, value == pred.value))
