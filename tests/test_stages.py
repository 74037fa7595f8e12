"""The stage functions: one composition, one lineage, whichever caller runs them.

The Dagster assets run the environment stages one asset each (`state_space_stage` -> `toolsets_stage`
-> `environments_stage`); the scale shards and `agentomnia env build` run `build_candidate`. Both
must give the same records, the same lineage rows and the same edges.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

import pytest

from agentomnia.catalog import ENVIRONMENTS, RAW_SEEDS, SELECTED_CANDIDATES, STATE_SPECS, TOOLSETS, Catalog
from agentomnia.envs.build import BuildConfig
from agentomnia.envs.toolset import ToolsetConfig
from agentomnia.lineage import Edge, LineageRow, LineageStore
from agentomnia.lineage.store import RELATIONS, Relation
from agentomnia.rejection import Rejection, rejection_lineage, save_rejections
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.stages import (
    StageContext,
    build_candidate,
    environments_stage,
    publish,
    seeds_stage,
    state_space_stage,
    toolsets_stage,
    write_environments,
    write_staged,
)
from agentomnia.storage import Storage, read_parquet
from agentomnia.taxonomy import load_taxonomy
from tests.fixtures.domains import PARCEL

# The parcel fixture's environment id, pinned: the stage functions build what the one-call build does.
# It moves when the build itself changes (here: a generated read over a span of dates says what it lists in words).
PARCEL_ENV_ID = "abd5035b1f39d13c"


def _lineage(
    rows: list[LineageRow], edges: list[Edge]
) -> tuple[set[tuple[str, str, str]], set[tuple[str, str, str]]]:
    return {(r.id, r.kind, r.status) for r in rows}, {(e.child, e.parent, e.relation) for e in edges}


def test_stages_one_by_one_equal_build_candidate(tmp_path: Path, sandbox: Sandbox) -> None:
    ctx = StageContext("r0", "run-1")
    seed, candidate = PARCEL.seed(), PARCEL.candidate()
    seeds = {seed.id: seed}
    taxonomy = load_taxonomy()
    storage = Storage(tmp_path)
    cfg = BuildConfig(toolset=ToolsetConfig())

    state = state_space_stage(ctx, [candidate], seeds, taxonomy)
    tooled = toolsets_stage(ctx, state.kept, seeds, cfg.toolset)
    built = environments_stage(ctx, tooled.kept, sandbox, storage, config=cfg)
    together = build_candidate(ctx, candidate, seeds, taxonomy, sandbox, storage, config=cfg)

    assert [b.env_id for b in built.kept] == [b.env_id for b in together.kept] == [PARCEL_ENV_ID]
    rows = state.lineage(ctx)[0] + tooled.lineage(ctx)[0] + built.lineage(ctx)[0]
    edges = state.lineage(ctx)[1] + tooled.lineage(ctx)[1] + built.lineage(ctx)[1]
    assert _lineage(rows, edges) == _lineage(*together.lineage(ctx))
    # the chain every environment hangs from, whoever built it
    relations = {(e.relation, e.child == PARCEL_ENV_ID) for e in together.edges}
    assert {
        ("state_space_of", False),
        ("tools_for", False),
        ("built_from", True),
        ("seeded_by", True),
    } <= relations
    built_from = next(e for e in together.edges if e.relation == "built_from")
    assert built_from.parent == tooled.kept[0].spec.id  # the toolset spec, never the candidate


def test_a_refusal_is_one_rejection_with_its_lineage(tmp_path: Path, sandbox: Sandbox) -> None:
    ctx = StageContext("r0")
    seed, candidate = PARCEL.seed(), PARCEL.candidate()
    cfg = BuildConfig(toolset=ToolsetConfig(min_tools=500, max_tools=600))
    out = build_candidate(
        ctx, candidate, {seed.id: seed}, load_taxonomy(), sandbox, Storage(tmp_path), config=cfg
    )
    assert out.kept == [] and len(out.rejected) == 1
    refused = out.rejected[0]
    assert (refused.subject, refused.subject_kind, refused.stage) == (candidate.id, "environment", "toolset")
    assert "minimum 500" in refused.reason and refused.parent == candidate.id
    rows, edges = out.lineage(ctx)
    rejected = [r for r in rows if r.status == "rejected"]
    assert [(r.kind, r.reason) for r in rejected] == [("environment", f"toolset: {refused.reason}")]
    assert Edge(child=rejected[0].id, parent=candidate.id, relation="rejection_of") in edges


def test_equal_refusals_are_one_row_that_counts_them(tmp_path: Path) -> None:
    same = [Rejection(subject="env-1", subject_kind="task", stage="oracle", reason="no path", parent="env-1",
                      detail={"kind": "program"}) for _ in range(3)]  # fmt: skip
    other = Rejection(
        subject="env-1", subject_kind="task", stage="leak", reason="names a tool", parent="env-1"
    )
    rows, edges = rejection_lineage([*same, other], round_key="r2", run_id="run")
    assert len(rows) == 2 and len(edges) == 2
    counted = next(r for r in rows if r.meta["stage"] == "oracle")
    assert counted.meta["times"] == 3 and counted.meta["kind"] == "program" and counted.round == "r2"
    table = read_parquet(save_rejections(tmp_path / "rejected.parquet", [*same, other]))
    assert [r["kind"] for r in table] == ["program", "program", "program", None]
    assert {r["stage"] for r in table} == {"oracle", "leak"}


def test_publish_writes_the_artifact_and_lineage_once(tmp_path: Path, sandbox: Sandbox) -> None:
    storage = Storage(tmp_path)
    artifacts = storage.round("r0")
    lineage = LineageStore(storage.lineage_path)
    ctx = StageContext("r0", "run-1")
    seed = PARCEL.seed()
    bad = Rejection(subject="seeds/broken.json", subject_kind="seed", stage="ingest", reason="not JSON")
    out = seeds_stage(ctx, [seed, seed], [bad])
    path = publish(out, ctx, artifacts, RAW_SEEDS, lineage, flat=["kind", "name", "source", "title"])
    assert [s.id for s in artifacts.seeds()] == [seed.id]  # one seed, however often it was found
    assert artifacts.rows(RAW_SEEDS, "rejected")[0]["reason"] == "not JSON"
    row = lineage.get(seed.id)
    assert row is not None and row.location == str(path) and row.run_id == "run-1"

    state = state_space_stage(ctx, [PARCEL.candidate()], {seed.id: seed}, load_taxonomy())
    publish(state, ctx, artifacts, STATE_SPECS, lineage, write=write_staged)
    tooled = toolsets_stage(ctx, state.kept, {seed.id: seed}, ToolsetConfig())
    publish(tooled, ctx, artifacts, TOOLSETS, lineage, write=write_staged)
    built = environments_stage(ctx, tooled.kept, sandbox, storage)
    publish(
        built,
        ctx,
        artifacts,
        ENVIRONMENTS,
        lineage,
        write=lambda _p, kept: write_environments(artifacts, storage, kept),
    )
    index = artifacts.environments()
    assert [r["env_id"] for r in index] == [PARCEL_ENV_ID]
    assert Catalog(storage).bundle(PARCEL_ENV_ID).tools  # the bundle is where the catalog looks
    assert [v["env_id"] for v in artifacts.verification()] == [PARCEL_ENV_ID]
    trace = lineage.trace(PARCEL_ENV_ID)
    assert {"toolset", "env_spec"} <= {r.kind for r in trace.rows.values() if r is not None}
    with pytest.raises(FileNotFoundError, match=f"materialize `{SELECTED_CANDIDATES.name}`"):
        artifacts.selected()


def test_relations_are_one_vocabulary() -> None:
    assert set(get_args(Relation)) == set(RELATIONS)
    with pytest.raises(ValueError):
        Edge(child="a", parent="b", relation="made_somehow")  # type: ignore[arg-type]


def test_a_prd_rounds_environment_variations_are_built_into_s0_and_verified(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    """A seed a PRD wrote with environment variations gets an environment whose own s0 holds them
    (so every task family meets them), verified like any s0; both build paths agree."""
    from agentomnia.directives import ENV_VARIATIONS
    from agentomnia.envs.state import state_violations
    from agentomnia.stages import environment_variations

    ctx = StageContext("r1", "run-1")
    seed, candidate = PARCEL.seed(), PARCEL.candidate()
    asked = seed.model_copy(
        update={"metadata": {**seed.metadata, "env_variations": [*ENV_VARIATIONS, "bogus"]}}
    )
    assert environment_variations([asked]) == tuple(ENV_VARIATIONS)  # unknown names are not operators
    seeds = {seed.id: asked}  # the candidate names the seed by id; its metadata is what the PRD asked
    taxonomy = load_taxonomy()
    cfg = BuildConfig(toolset=ToolsetConfig())

    state = state_space_stage(ctx, [candidate], seeds, taxonomy)
    tooled = toolsets_stage(ctx, state.kept, seeds, cfg.toolset)
    built = environments_stage(ctx, tooled.kept, sandbox, Storage(tmp_path / "a"), config=cfg, seeds=seeds)
    together = build_candidate(ctx, candidate, seeds, taxonomy, sandbox, Storage(tmp_path / "b"), config=cfg)
    plain = build_candidate(
        ctx, candidate, {seed.id: seed}, taxonomy, sandbox, Storage(tmp_path / "c"), config=cfg
    )

    [env] = built.kept
    assert env.report.passed and state_violations(env.spec, env.s0) == []
    assert [b.env_id for b in together.kept] == [env.env_id] != [PARCEL_ENV_ID]
    assert [b.env_id for b in plain.kept] == [PARCEL_ENV_ID] and plain.kept[0].variations == []
    made = {v.split(":")[0] for v in env.variations}
    assert {"distractor_injection", "unavailable_entities", "conflicting_states"} <= made, env.variations
    base = plain.kept[0].s0
    grown = {t: len(env.s0[t]) - len(base[t]) for t in base if isinstance(base[t], dict)}
    assert sum(grown.values()) >= 4, grown  # distractors and twins are new records
    changed = sum(
        1 for t in base if isinstance(base[t], dict) for k in base[t] if env.s0[t].get(k) != base[t][k]
    )
    assert changed >= 1  # records taken out of service change in place
    row = next(r for r in built.rows if r.id == env.env_id)
    assert set(row.meta["variations"]) == made


def test_builder_processes_build_what_this_process_builds(tmp_path: Path, sandbox: Sandbox) -> None:
    """Offline, the environments stage builds on worker processes, each with its own one-worker
    sandbox: the same environments (a PRD's variations included) and the same lineage as a build in
    this process, the processes asked of the caller's map."""
    from agentomnia.progress import tracked_map
    from agentomnia.sandbox import policy
    from tests.fixtures.domains import FREIGHT

    ctx = StageContext("r1", "run-1")
    parcel, freight = PARCEL.seed(), FREIGHT.seed()
    asked = parcel.model_copy(
        update={"metadata": {**parcel.metadata, "env_variations": ["distractor_injection"]}}
    )
    seeds = {parcel.id: asked, freight.id: freight}
    cfg = BuildConfig(toolset=ToolsetConfig())
    state = state_space_stage(ctx, [PARCEL.candidate(), FREIGHT.candidate()], seeds, load_taxonomy())
    tooled = toolsets_stage(ctx, state.kept, seeds, cfg.toolset)
    here = environments_stage(ctx, tooled.kept, sandbox, Storage(tmp_path / "a"), config=cfg, seeds=seeds)
    asked_for: list[int] = []

    def parallel(fn: Any, items: Any, **options: Any) -> list[Any]:
        asked_for.append(options.get("processes", 0))
        return tracked_map("environments", "environments", fn, items, **options)

    policy._CACHE.clear()  # what this process prepared for the build above
    apart = environments_stage(ctx, tooled.kept, sandbox, Storage(tmp_path / "b"), config=cfg, seeds=seeds,
                               parallel=parallel, processes=2)  # fmt: skip
    assert asked_for == [2]
    with pytest.MonkeyPatch.context() as patch:  # the workers' prepared code came back with the builds
        patch.setattr(policy, "_parse_and_check", lambda *_: pytest.fail("checked and compiled again"))
        for built in apart.kept:
            policy.prepare(built.source, "env")
    assert len(here.kept) == 2 and [b.env_id for b in apart.kept] == [b.env_id for b in here.kept]
    assert [b.variations for b in apart.kept] == [b.variations for b in here.kept]
    assert any(b.variations for b in apart.kept)
    assert _lineage(*apart.lineage(ctx)) == _lineage(*here.lineage(ctx))
