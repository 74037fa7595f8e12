"""Seeds: ingestion of queries, skills, MCP tool lists and OpenAPI specs; environment inference; selection."""

from agentomnia.seeds.ingest import corpus_dir, ingest, shipped_corpus
from agentomnia.seeds.models import SEED_KINDS, IngestResult, Seed, SeedKind, SeedRejection, SeedTool

__all__ = [
    "SEED_KINDS",
    "IngestResult",
    "Seed",
    "SeedKind",
    "SeedRejection",
    "SeedTool",
    "corpus_dir",
    "ingest",
    "shipped_corpus",
]
