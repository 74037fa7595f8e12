"""Seeds for a corpus larger than any shipped seed set: composed slices of every domain's knowledge.

The paper's 5,018 environments came from a seed pool far larger than the one this project ships.
Offline, the scale run composes its own: for variant `i` of a level-2 domain, a user request (the
same composer the PRD rounds use) and a *scope* — a focal entity, then the rest of the domain's
entities rotated by `i`, with one to three of them left out. Inference and the state-space stage
honor the scope (the environment holds the scoped entities and whatever they refer to), so two
variants of one domain hold different state and different tools; the selection stage still
removes near-duplicates, which is why a shard composes more variants than it needs.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

from agentomnia.evolution.planning import compose_request
from agentomnia.records import content_hash
from agentomnia.seeds.models import Seed
from agentomnia.seeds.parsers import QueryColumns, query_seed
from agentomnia.taxonomy import Domain
from agentomnia.taxonomy.axes import CAPABILITY_IDS

ORIGIN = "composed"


def variant_scope(domain: Domain, index: int) -> list[str]:
    """The entities variant `index` of `domain` holds: all but two of the domain's entities.

    The subsets are enumerated in an order fixed by the domain, so variants 0..C(n, n-2)-1 are all
    different (two of them share at most n-3 entities); the focal entity (the one the request is
    about) comes first."""
    kb = domain.knowledge
    if kb is None or not kb.entities:
        return []
    names = [e.name for e in kb.entities]
    size = max(2, len(names) - 2)
    subsets = list(itertools.combinations(names, size))
    random.Random(content_hash([domain.id, "scopes"], 16)).shuffle(subsets)
    chosen = list(subsets[index % len(subsets)])
    focal = chosen[index % len(chosen)]
    return [focal, *(n for n in chosen if n != focal)]


def variant_seed(domain: Domain, index: int, *, round_key: str = "r0") -> Seed | None:
    """Variant `index` of `domain` as a query seed, or None when the domain has no knowledge entry."""
    kb = domain.knowledge
    if kb is None or not kb.entities:
        return None
    rotation = index % len(CAPABILITY_IDS)
    caps = [*CAPABILITY_IDS[rotation:], *CAPABILITY_IDS[:rotation]][:3]
    text = compose_request(domain, kb, index, capabilities=caps)
    name = f"scale-{domain.id}-{index + 1}"
    row = {
        "id": name,
        "query": text,
        "origin": ORIGIN,
        "taxonomy_id": domain.id,
        "split": domain.split,
        "l1": domain.l1_key,
        "capabilities": caps,
        "scope": variant_scope(domain, index),
        "variant": index,
    }
    seed = query_seed(
        row,
        columns=QueryColumns.default(),
        source=f"scale:{domain.id}",
        place=f"variant-{index + 1}",
        default_name=name,
    )
    return seed.in_round(round_key)


def variant_seeds(domain: Domain, indices: Sequence[int], *, round_key: str = "r0") -> list[Seed]:
    return [s for i in indices if (s := variant_seed(domain, i, round_key=round_key)) is not None]
