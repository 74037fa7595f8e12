"""The coordinate system every artifact is indexed by: domain x capability profile x atomic difficulty.

Synthesis targets coverage along it, OmniaBench reports along it, and self-evolution maps failures
onto it. Data (taxonomy.csv, the per-domain knowledge base, the capability and atom axes) ships in
`data/`; this package loads and checks it and offers the coordinate record and its helpers.
"""

from agentomnia.taxonomy.axes import (
    ATOM_IDS,
    CAPABILITY_IDS,
    Atom,
    Capability,
    Lever,
    atom,
    atoms,
    capabilities,
    capability,
    guess_capabilities,
    lever,
    primary_atom,
    profile_atoms,
    profile_mask,
)
from agentomnia.taxonomy.coordinate import Coordinate, Coverage, coverage, distribution, kl_divergence
from agentomnia.taxonomy.domains import (
    SPLITS,
    Domain,
    Split,
    SplitCounts,
    Taxonomy,
    TaxonomyError,
    TaxonomySummary,
    alignment_problems,
    l1_key,
    load_and_validate,
    load_taxonomy,
    summarize,
    taxonomy_index,
)
from agentomnia.taxonomy.knowledge import DomainKnowledge, load_knowledge
from agentomnia.taxonomy.plots import counts_table, embedding_map_png, show_rows
from agentomnia.taxonomy.search import domain_text, find_domains, find_rows

__all__ = [
    "ATOM_IDS",
    "CAPABILITY_IDS",
    "SPLITS",
    "Atom",
    "Capability",
    "Coordinate",
    "Coverage",
    "Domain",
    "DomainKnowledge",
    "Lever",
    "Split",
    "SplitCounts",
    "Taxonomy",
    "TaxonomyError",
    "TaxonomySummary",
    "alignment_problems",
    "atom",
    "atoms",
    "capabilities",
    "capability",
    "counts_table",
    "coverage",
    "distribution",
    "domain_text",
    "embedding_map_png",
    "find_domains",
    "find_rows",
    "guess_capabilities",
    "kl_divergence",
    "l1_key",
    "lever",
    "load_and_validate",
    "load_knowledge",
    "load_taxonomy",
    "primary_atom",
    "profile_atoms",
    "profile_mask",
    "show_rows",
    "summarize",
    "taxonomy_index",
]
