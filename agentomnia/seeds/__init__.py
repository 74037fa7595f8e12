"""Seeds: ingestion of queries, skills, MCP tool lists and OpenAPI specs; environment inference; selection."""

from agentomnia.seeds.ingest import corpus_dir, ingest, shipped_corpus
from agentomnia.seeds.models import SEED_KINDS, IngestResult, Seed, SeedKind, SeedTool, seed_rejection

__all__ = [
    "SEED_KINDS",
    "IngestResult",
    "Seed",
    "SeedKind",
    "seed_rejection",
    "SeedTool",
    "corpus_dir",
    "ingest",
    "shipped_corpus",
]
