"""A seed operation named a search that takes no free text (the shipped pet-care MCP seed's
`search_providers`, by service type and postcode) is kept and runs: it filters like a listing. It used
to compile as a text search over a `query` it does not take, fail every call with NameError, and be
dropped by verification (and, in llm mode, handed to the model to repair)."""

from __future__ import annotations

from pathlib import Path

from agentomnia.embeddings import default_embedder
from agentomnia.envs.build import write_bundle
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.seeds.inference import DomainMatcher
from agentomnia.seeds.ingest import corpus_dir, ingest
from agentomnia.stages import StageContext, build_candidate, candidates_stage
from agentomnia.storage import Storage
from agentomnia.taxonomy import load_taxonomy


def test_a_search_without_free_text_is_kept_and_filters(sandbox: Sandbox, tmp_path: Path) -> None:
    (seed,) = ingest([corpus_dir() / "mcp/pet-care-bookings.json"]).accepted
    taxonomy = load_taxonomy()
    ctx = StageContext(seed.round)
    (candidate,) = candidates_stage(ctx, [seed], DomainMatcher(taxonomy, default_embedder())).kept[:1]
    made = build_candidate(ctx, candidate, {seed.id: seed}, taxonomy, sandbox, Storage(tmp_path / "home"))
    (env,) = made.kept
    tools = {t.name: t for t in env.spec.tools}
    assert {t.name for t in seed.tools} <= set(tools)  # every operation of the seed is kept
    search = tools["search_providers"]
    assert search.op == "list" and "query" not in search.binding
    bundle = Bundle.load(write_bundle(env, tmp_path / "bundle"))
    session = sandbox.open(bundle, bundle.s0)
    try:
        result = session.call("search_providers", {"service_type": "daycare", "postcode": "SW1A 1AA"})
    finally:
        session.close()
    assert result.ok and isinstance(result.data, dict) and "items" in result.data, result
