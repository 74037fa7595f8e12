"""Composed domain slices: distinct scopes, honored by inference, state space and selection."""

from __future__ import annotations

import numpy as np

from agentomnia.envs.build import state_stage
from agentomnia.rejection import Rejection
from agentomnia.scale.seeds import variant_scope, variant_seed, variant_seeds
from agentomnia.seeds.inference import EnvCandidate, propose_offline
from agentomnia.seeds.selection import SelectionConfig, select
from agentomnia.taxonomy import load_taxonomy


def _domain():  # type: ignore[no-untyped-def]
    return load_taxonomy().domains[0]


def test_the_first_variants_of_a_domain_have_different_scopes() -> None:
    domain = _domain()
    n = len(domain.knowledge.entities)
    combos = n * (n - 1) // 2  # all but two entities
    scopes = [frozenset(variant_scope(domain, i)) for i in range(min(combos, 20))]
    assert len(set(scopes)) == len(scopes)
    assert all(len(s) == n - 2 for s in scopes)
    assert variant_scope(domain, 3) == variant_scope(domain, 3)  # deterministic


def test_a_scoped_seed_builds_a_state_of_exactly_its_scope_with_external_ids_for_the_rest() -> None:
    domain = _domain()
    seed = variant_seed(domain, 0)
    assert seed is not None and seed.metadata["origin"] == "composed"
    scope = seed.metadata["scope"]
    candidate = propose_offline(seed, domain, 0.6, 0.2, [0.6, 0.5, 0.4])
    assert set(candidate.overview.state_components) == set(scope)
    assert all(o.entity in scope for o in candidate.overview.operations)
    result = state_stage(candidate, [seed], domain)
    assert not isinstance(result, Rejection)
    spec = result[0]
    assert {e.name for e in spec.entities} == set(scope)
    left_out = {e.name for e in domain.knowledge.entities} - set(scope)
    kb_refs = {(e.name, a.name) for e in domain.knowledge.entities for a in e.attributes if a.ref in left_out}
    for entity, attr in kb_refs:
        if entity in scope:
            assert spec.entity(entity).attribute(attr).type == "str"  # an id of another system


def test_selection_with_state_overlap_keeps_distinct_slices_and_drops_a_repeat() -> None:
    domain = _domain()
    seeds = variant_seeds(domain, range(4))
    candidates = [propose_offline(s, domain, 0.6, 0.2, [0.6, 0.5, 0.4]) for s in seeds]
    first = candidates[0]
    # the same slice again under another summary: the same state, so the same environment
    twin = EnvCandidate.model_validate(
        {**first.model_dump(exclude={"id"}), "summary": first.summary + " (copy)"}
    )
    pool = [*candidates, twin]
    same = np.ones((len(pool), 8)) / np.sqrt(8)  # everything one embedding cluster
    by_text = select(pool, same)
    by_state = select(pool, same, SelectionConfig(state_overlap=0.85))
    assert len(by_text.selected) == 1
    assert len(by_state.selected) == 4
    assert [r.detail["rule"] for r in by_state.rejected] == ["near_duplicate"]
