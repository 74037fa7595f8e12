"""How a PRD round's variations change DAG task synthesis: directives in, a refinement profile out.

A PRD names weaknesses in words the synthesis stages share (`ENV_VARIATIONS`, `TASK_VARIATIONS` in
`agentomnia.directives`). The DAG synthesizer already has the dials that produce each one
(a `RefinementProfile`: chain lengths, virtual nodes, hardening operators, how records are named),
so a PRD-guided round is the base round with those dials turned, and nothing else changes.

Task variations (how the request is made harder):
- dependency_depth: chains may run one call longer (`chain_len` upper bound +1) and none is shorter
  than three calls (lower bound raised by one, up to `MIN_DEEP_CHAIN`); a Challenge task may also
  run one more chain (`chains` upper bound +1). Each extra call consumes the previous one's output,
  so the dependency path the agent must follow grows. The lower bound stops at three because every
  call of a chain must succeed: on the parcel fixture a four-call minimum kept about one Challenge
  candidate in twenty, so a round would spend its attempts on rejections.
- implicit_references: records are described, never named by id (`allow_ids=False`), and the
  phrasing is indirect (`indirect=True`), so the agent has to find each record from its description.
- data_transformations: one more virtual node (`virtual` +1), stacked so a derived value can feed
  the next one (`stack_virtual=True`), and the `aggregatable_history` operator gives the aggregates
  a history to sum over: answers need arithmetic or aggregation over what the calls returned.

Environment variations (how the initial state is made harder), each adding hardening operators
(`agentomnia.tasks.hardening`) after the profile's own, so lifecycle fixes such as
`mutable_objects` cannot undo them:
- distractor_injection: `distractor_injection` (near-identical records) and `multi_candidate`
  (records sharing the target's name), so careless reading picks the wrong record.
- unavailable_entities: `unavailable_entities` (records taken out of service in the entity's own
  words: cancelled, inactive, withdrawn...), so acting without checking availability fails.
- conflicting_states: `conflicting_states` (a twin entry that disagrees on one decisive field), so
  the agent has to notice the conflict and check which entry the request is about.

Target atoms (a PRD's `atoms`, merged into `target_atoms`) turn dials too: each adds the hardening
operators whose lever belongs to the atom (`ATOM_OPERATORS`, read off `hardening.LEVERS`: e.g.
dynamic_planning adds records taken out of service and lifecycles to follow, multi_source_inconsistency
adds disagreeing twins), and an atom whose lever is the request itself sets its dial (`ATOM_DIALS`:
ambiguous_goal phrases indirectly, tool_parameter_grounding never names ids). Atoms with neither
(progressive_disclosure, risk_clarification) are served by the round's multi-turn share and rules.

A PRD round's environments carry the environment variations too (`vary_environment`): the build
applies the same operators to the environment's own s0 before verification, so program and solver
tasks made on it meet them as well, not only the DAG tasks whose states are hardened one by one.

No directives, or directives without variations or atoms, leave the profile untouched (the same object).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentomnia.directives import ENV_VARIATIONS, TASK_VARIATIONS, SynthesisDirectives
from agentomnia.envs.spec import EnvSpec
from agentomnia.tasks.dag.profiles import RefinementProfile
from agentomnia.tasks.families import is_challenging_kind
from agentomnia.tasks.hardening import LEVERS, OPERATORS, HardeningResult, apply_all
from agentomnia.taxonomy.axes import ATOM_IDS, lever

# The hardening operators each environment variation adds, in the order they run.
ENV_OPERATORS: dict[str, tuple[str, ...]] = {
    "distractor_injection": ("distractor_injection", "multi_candidate"),
    "unavailable_entities": ("unavailable_entities",),
    "conflicting_states": ("conflicting_states",),
}
# How often each environment variation's operators run on a PRD round's s0: each pass draws its own
# entity and record, so the pattern shows up in more than one corner of the world.
ENV_PASSES = 2
# The shortest chain a dependency_depth round asks for (see the module docstring for why not more).
MIN_DEEP_CHAIN = 3
# Hardening operators a task variation brings along (its state-side support).
TASK_OPERATORS: dict[str, tuple[str, ...]] = {
    "dependency_depth": (),
    "implicit_references": (),
    "data_transformations": ("aggregatable_history",),
}


def _atom_operators() -> dict[str, tuple[str, ...]]:
    """Atom id -> the hardening operators whose lever belongs to it (from `LEVERS`)."""
    out: dict[str, list[str]] = {}
    for op, lever_id in LEVERS.items():
        out.setdefault(lever(lever_id)[0].id, []).append(op)
    return {atom: tuple(ops) for atom, ops in out.items()}


# The hardening operators a PRD's target atom adds, so a round aimed at an atom makes states that
# exercise it (dynamic_planning -> records taken out of service and lifecycles to follow, ...).
ATOM_OPERATORS: dict[str, tuple[str, ...]] = _atom_operators()
# Atoms whose lever is the request, not the state: the profile dial that activates each.
ATOM_DIALS: dict[str, dict[str, bool]] = {
    "ambiguous_goal": {"indirect": True},
    "tool_parameter_grounding": {"allow_ids": False},
}


def requested_variations(directives: SynthesisDirectives | None) -> tuple[str, ...]:
    """The directive set's variations, environment ones first, each checked against the known names."""
    if directives is None:
        return ()
    unknown = [v for v in directives.env_variations if v not in ENV_VARIATIONS] + [
        v for v in directives.task_variations if v not in TASK_VARIATIONS
    ]
    if unknown:
        raise ValueError(
            f"directives for round {directives.round!r} name unknown variations {unknown}; environment "
            f"variations are {sorted(ENV_VARIATIONS)} and task variations {sorted(TASK_VARIATIONS)}"
        )
    return tuple(dict.fromkeys([*directives.env_variations, *directives.task_variations]))


def profile_for_directives(
    profile: RefinementProfile, directives: SynthesisDirectives | None
) -> RefinementProfile:
    """`profile` with every variation the directives ask for applied (see the module docstring)."""
    wanted = requested_variations(directives)
    if not wanted and not (directives is not None and directives.target_atoms):
        return profile
    changes: dict[str, object] = {}
    if "dependency_depth" in wanted:
        low, high = profile.chain_len
        changes["chain_len"] = (max(low, min(low + 1, MIN_DEEP_CHAIN)), high + 1)
        if is_challenging_kind(profile.variant):
            changes["chains"] = (profile.chains[0], profile.chains[1] + 1)
    if "implicit_references" in wanted:
        changes["allow_ids"] = False
        changes["indirect"] = True
    if "data_transformations" in wanted:
        changes["virtual"] = profile.virtual + 1
        changes["stack_virtual"] = True
    added = [op for v in wanted for op in (*ENV_OPERATORS.get(v, ()), *TASK_OPERATORS.get(v, ()))]
    atoms = directives.target_atoms if directives is not None else ()
    added += [op for atom in atoms for op in ATOM_OPERATORS.get(atom, ())]
    for atom in atoms:
        changes.update({k: v for k, v in ATOM_DIALS.get(atom, {}).items() if getattr(profile, k) != v})
    hardening = tuple(dict.fromkeys([*profile.hardening, *added]))
    if hardening != profile.hardening:
        changes["hardening"] = hardening
    return profile.model_copy(update=changes) if changes else profile


def variations_in_effect(
    directives: SynthesisDirectives | None, hardening: Iterable[HardeningResult]
) -> list[str]:
    """The requested variations that shaped one task: a task variation always does (it is part of the
    profile); an environment variation only where one of its operators changed the task's state."""
    applied = {r.operator for r in hardening if r.applied}
    out: list[str] = []
    for name in requested_variations(directives):
        if name in ENV_OPERATORS and not applied & set(ENV_OPERATORS[name]):
            continue
        out.append(name)
    return out


def variation_metadata(
    directives: SynthesisDirectives | None, hardening: Sequence[HardeningResult]
) -> dict[str, object]:
    """What a task records about the round that made it (empty outside a PRD-guided round), so lineage
    and the alignment metric can tell a PRD task from a base one and see which variations held."""
    if directives is None:
        return {}
    return {
        "round": directives.round,
        "prd_ids": list(directives.prd_ids),
        "variations": variations_in_effect(directives, hardening),
        "variations_requested": list(requested_variations(directives)),
    }


def vary_environment(
    spec: EnvSpec, s0: Mapping[str, Any], variations: Sequence[str], *, seed: str
) -> tuple[dict[str, Any], list[HardeningResult]]:
    """A PRD round's environment: `s0` with every requested environment variation built into it.

    Each variation's operators run `ENV_PASSES` times on the whole world (each pass draws its own
    entity and record), so every task made on the environment, whatever its family, meets the
    lookalikes, the records out of service or the disagreeing twins the PRD asked for. `s0` must keep
    every invariant (a generated state does); each operator keeps them too or leaves the state as it
    was and says why. Deterministic in `seed`. Task variations and unknown names are ignored here.
    """
    steps: list[tuple[str, dict[str, Any]]] = [
        (op, {}) for _ in range(ENV_PASSES) for v in variations for op in ENV_OPERATORS.get(v, ())
    ]
    if not steps:
        return dict(s0), []
    return apply_all(spec, s0, random.Random(f"environment-variations:{seed}"), steps, valid=True)


def _check_tables() -> None:
    # every named variation must have a mapping and every mapped operator must exist; a renamed
    # operator or a new variation without a mapping fails at import, not silently in a round
    missing = (set(ENV_VARIATIONS) - set(ENV_OPERATORS)) | (set(TASK_VARIATIONS) - set(TASK_OPERATORS))
    unknown = {op for ops in (*ENV_OPERATORS.values(), *TASK_OPERATORS.values()) for op in ops} - set(
        OPERATORS
    )
    unknown |= {a for a in ATOM_DIALS if a not in ATOM_IDS}
    unknown |= {k for dials in ATOM_DIALS.values() for k in dials if k not in RefinementProfile.model_fields}
    if missing or unknown:
        raise RuntimeError(
            f"variation tables are out of date: unmapped variations {sorted(missing)}, unknown hardening "
            f"operators, atoms or dials {sorted(unknown)}; update agentomnia/tasks/dag/variations.py"
        )


_check_tables()
