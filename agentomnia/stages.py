"""The synthesis stages as engine functions, and the one way their outputs are published.

Each stage takes records in and returns one `StageOutput`: the records it kept, the `Rejection`s it
made, and their lineage (rows and edges, with relations from `lineage.RELATIONS`). The Dagster
assets, the scale shards and `agentomnia env build` call these same functions, so a record built by
any of them has the same id, the same lineage and the same files; `publish` writes an output to its
round artifact and the lineage store.

seeds -> candidates (inferred_from) -> selection (selection_of) -> state spec (state_space_of)
      -> toolset (tools_for) -> environment (built_from, seeded_by; tools: tool_of) -> tasks (task_on)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
from pydantic import BaseModel

from agentomnia.catalog import (
    ENVIRONMENTS,
    Artifact,
    RoundArtifacts,
)
from agentomnia.envs.build import (
    BuildConfig,
    BuiltEnv,
    VaryState,
    build_environment,
    state_stage,
    toolset_stage,
    verification_record,
    verify_stage,
    write_bundle,
)
from agentomnia.envs.spec import EnvSpec
from agentomnia.envs.state_space import StateSpaceReport
from agentomnia.envs.toolset import Normalization, ToolsetConfig
from agentomnia.lineage import Edge, LineageRow, lineage_row
from agentomnia.lineage.store import Relation
from agentomnia.llm import LLM
from agentomnia.processes import own_sandbox, start_sandbox
from agentomnia.rejection import Rejection, rejection_lineage, save_rejections
from agentomnia.sandbox import policy
from agentomnia.sandbox.policy import PreparedCode
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.seeds.inference import DomainMatcher, EnvCandidate, infer_candidates
from agentomnia.seeds.models import Seed
from agentomnia.seeds.selection import SelectionConfig, select
from agentomnia.storage import Storage, save_records, write_parquet
from agentomnia.tasks.dag.variations import ENV_OPERATORS, vary_environment
from agentomnia.tasks.models import Task
from agentomnia.taxonomy import Taxonomy

T = TypeVar("T")

# The environment index: one row per verified bundle, the same columns wherever it is written.
ENV_INDEX_COLUMNS = ["env_id", "name", "path", "taxonomy_id", "split", "l1", "l2", "tools", "entities",
                     "attributes", "dropped_tools", "verify_seconds"]  # fmt: skip


class LineageSink(Protocol):
    """Where lineage goes: the DuckDB store, or a scale shard's segment."""

    def record(self, rows: Sequence[LineageRow], edges: Sequence[Edge] = ...) -> Any: ...


@dataclass(frozen=True)
class StageContext:
    round_key: str
    run_id: str | None = None


@dataclass
class StageOutput(Generic[T]):
    """What one stage made: kept records, rejections, and the lineage of both."""

    stage: str
    kept: list[T]
    rejected: list[Rejection] = field(default_factory=list)
    rows: list[LineageRow] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)

    def lineage(self, ctx: StageContext) -> tuple[list[LineageRow], list[Edge]]:
        rrows, redges = rejection_lineage(self.rejected, round_key=ctx.round_key, run_id=ctx.run_id)
        return [*self.rows, *rrows], [*self.edges, *redges]

    def extend(self, other: StageOutput[T]) -> None:
        self.kept += other.kept
        self.rejected += other.rejected
        self.rows += other.rows
        self.edges += other.edges


class StagedSpec(BaseModel):
    """A spec between environment stages: the state space's report and the toolset's decisions ride along."""

    spec: EnvSpec
    space: StateSpaceReport
    normalization: list[Normalization] = []


# -- seeds, candidates, selection ------------------------------------------------------------------
def seeds_stage(
    ctx: StageContext,
    seeds: Iterable[Seed],
    rejected: Sequence[Rejection] = (),
    *,
    prd_records: Mapping[str, str] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> StageOutput[Seed]:
    """The round's seeds (one per id); `prd_records` maps PRD ids to their record ids for `steered_by`."""
    kept = list({s.id: s for s in (s.in_round(ctx.round_key) for s in seeds)}.values())
    rows = [lineage_row(s, run_id=ctx.run_id, meta=dict(meta or {})) for s in kept]
    edges = [
        Edge(child=s.id, parent=(prd_records or {})[pid], relation="steered_by")
        for s in kept
        for pid in s.metadata.get("prd_ids") or ()
        if pid in (prd_records or {})
    ]
    return StageOutput("seeds", kept, [r.in_round(ctx.round_key) for r in rejected], rows, edges)


def candidates_stage(
    ctx: StageContext,
    seeds: Sequence[Seed],
    matcher: DomainMatcher,
    llm: LLM | None = None,
    *,
    vectors: np.ndarray | None = None,
) -> StageOutput[EnvCandidate]:
    """Environment inference per seed; a seed that cannot be inferred becomes a rejection."""
    candidates, failed = infer_candidates(seeds, matcher, llm, vectors=vectors)
    kept = [c.in_round(ctx.round_key) for c in candidates]
    rejected = [
        Rejection(subject=s.source, subject_kind="seed", stage="inference", reason=why, parent=s.id,
                  fix="check the seed's text and tools, or set its domain in metadata", round=ctx.round_key)
        for s, why in failed
    ]  # fmt: skip
    rows = [lineage_row(c, run_id=ctx.run_id) for c in kept]
    edges = [Edge(child=c.id, parent=sid, relation="inferred_from") for c in kept for sid in c.seed_ids]
    return StageOutput("inference", kept, rejected, rows, edges)


def selection_id(round_key: str, candidate_id: str) -> str:
    return f"sel-{round_key}-{candidate_id}"


def selection_stage(
    ctx: StageContext, candidates: Sequence[EnvCandidate], vectors: np.ndarray, cfg: SelectionConfig
) -> StageOutput[EnvCandidate]:
    """Quality-aware selection; each refused candidate keeps its rule and reason."""
    selection = select(candidates, vectors, cfg)
    rejected = [r.in_round(ctx.round_key) for r in selection.rejected]
    rows, edges = [], []
    for c in selection.selected:
        sid = selection_id(ctx.round_key, c.id)  # a decision is a record of its own
        row = lineage_row(c, kind="selected_candidate", run_id=ctx.run_id)
        rows.append(row.model_copy(update={"id": sid}))
        edges.append(Edge(child=sid, parent=c.id, relation="selection_of"))
    return StageOutput("selection", list(selection.selected), rejected, rows, edges)


# -- environments ------------------------------------------------------------------------------------
def state_space_stage(
    ctx: StageContext,
    candidates: Sequence[EnvCandidate],
    seeds: Mapping[str, Seed],
    taxonomy: Taxonomy,
    *,
    llm: LLM | None = None,
) -> StageOutput[StagedSpec]:
    return _each("state_space", candidates, lambda c: _state_one(ctx, c, seeds, taxonomy, llm))


def _each(stage: str, items: Iterable[Any], one: Callable[[Any], StageOutput[T]]) -> StageOutput[T]:
    """A stage that decides item by item: the outputs of `one`, joined."""
    out: StageOutput[T] = StageOutput(stage, [])
    for item in items:
        out.extend(one(item))
    return out


def _state_one(
    ctx: StageContext, c: EnvCandidate, seeds: Mapping[str, Seed], taxonomy: Taxonomy, llm: LLM | None = None
) -> StageOutput[StagedSpec]:
    own = [seeds[i] for i in c.seed_ids if i in seeds]
    return _state_output(ctx, state_stage(c, own, taxonomy.by_id(c.coordinate.taxonomy_id), llm=llm))


def _state_output(
    ctx: StageContext, result: tuple[EnvSpec, StateSpaceReport] | Rejection
) -> StageOutput[StagedSpec]:
    if isinstance(result, Rejection):
        return StageOutput("state_space", [], [result.in_round(ctx.round_key)])
    staged = StagedSpec(spec=result[0], space=result[1])
    return _spec_output(ctx, "state_space", staged, None, staged.spec.candidate_id, "state_space_of")


def _spec_output(
    ctx: StageContext, stage: str, staged: StagedSpec, kind: str | None, parent: str, relation: Relation
) -> StageOutput[StagedSpec]:
    """A spec that passed an environment stage, in round, with its row and its edge to `parent`."""
    staged = staged.model_copy(update={"spec": staged.spec.in_round(ctx.round_key)})
    row = lineage_row(staged.spec, kind=kind, run_id=ctx.run_id)
    edge = Edge(child=staged.spec.id, parent=parent, relation=relation)
    return StageOutput(stage, [staged], [], [row], [edge])


def toolsets_stage(
    ctx: StageContext,
    staged: Sequence[StagedSpec],
    seeds: Mapping[str, Seed],
    cfg: ToolsetConfig,
    *,
    llm: LLM | None = None,
) -> StageOutput[StagedSpec]:
    return _each("toolset", staged, lambda s: _toolset_one(ctx, s, seeds, cfg, llm))


def _toolset_one(
    ctx: StageContext, s: StagedSpec, seeds: Mapping[str, Seed], cfg: ToolsetConfig, llm: LLM | None = None
) -> StageOutput[StagedSpec]:
    own = [seeds[i] for i in s.spec.seed_ids if i in seeds]
    return _toolset_output(ctx, s, toolset_stage(s.spec, own, s.space, cfg, llm=llm))


def _toolset_output(
    ctx: StageContext, s: StagedSpec, result: tuple[EnvSpec, list[Normalization]] | Rejection
) -> StageOutput[StagedSpec]:
    if isinstance(result, Rejection):
        return StageOutput("toolset", [], [result.in_round(ctx.round_key)])
    tooled = StagedSpec(spec=result[0], space=s.space, normalization=result[1])
    return _spec_output(ctx, "toolset", tooled, "toolset", s.spec.id, "tools_for")


def environment_variations(seeds: Iterable[Seed]) -> tuple[str, ...]:
    """The environment variations the seeds of a PRD round ask for (their `env_variations`), in order."""
    asked = (v for seed in seeds for v in seed.metadata.get("env_variations") or ())
    return tuple(dict.fromkeys(v for v in asked if v in ENV_OPERATORS))


def seed_variations(seeds: Iterable[Seed]) -> VaryState | None:
    """How an environment built from `seeds` rewrites its s0: the PRD's environment variations
    (`vary_environment`), or None outside a PRD round."""
    return varied(environment_variations(seeds))


def varied(variations: tuple[str, ...]) -> VaryState | None:
    """The s0 rewrite of these environment variations (`vary_environment`), None for none."""
    if not variations:
        return None

    def vary(spec: EnvSpec, s0: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        state, results = vary_environment(spec, s0, variations, seed=spec.candidate_id)
        return state, [f"{r.operator}: {note}" for r in results if r.applied for note in r.notes]

    return vary


def environments_stage(
    ctx: StageContext,
    staged: Sequence[StagedSpec],
    sandbox: Sandbox,
    storage: Storage,
    *,
    llm: LLM | None = None,
    config: BuildConfig | None = None,
    parallel: Callable[..., list[Any]] | None = None,
    meta: Mapping[str, Any] | None = None,
    seeds: Mapping[str, Seed] | None = None,
    processes: int = 0,
) -> StageOutput[BuiltEnv]:
    """Code, s0 and three-level verification per toolset; `parallel` maps the build over the specs.
    With the round's `seeds`, an environment whose seeds carry a PRD's environment variations has
    them built into its s0 (`seed_variations`).

    With `processes` > 1, no model and more than one spec, the builds run on that many worker
    processes, each with a one-worker sandbox configured as `sandbox` is (`parallel` is then called
    with `processes=`, `initializer=` and `initargs=`, as `progress.tracked_map` takes them): building
    is bound by the interpreter, which threads of one process share. An environment is built the same
    wherever it is built."""
    cfg = config or BuildConfig()
    known = seeds or {}

    def variations(s: StagedSpec) -> tuple[str, ...]:
        return environment_variations(known[i] for i in s.spec.seed_ids if i in known)

    def build(s: StagedSpec) -> BuiltEnv | Rejection:
        vary = varied(variations(s))
        return verify_stage(s.spec, s.space, s.normalization, sandbox, llm=llm, config=cfg, vary=vary)

    if processes > 1 and llm is None and len(staged) > 1 and parallel is not None:
        jobs = [(s, cfg, variations(s)) for s in staged]
        options = {"processes": processes, "initializer": start_sandbox, "initargs": (sandbox.config,)}
        results = []
        for result, prepared in parallel(_build_in_worker, jobs, **options):
            if prepared is not None:
                policy.remember(prepared)  # this process opens it next (tasks, trajectories, evaluation)
            results.append(result)
    else:
        results = parallel(build, staged) if parallel else [build(s) for s in staged]
    out: StageOutput[BuiltEnv] = StageOutput("verification", [])
    for s, result in zip(staged, results, strict=True):
        out.extend(_environment_lineage(ctx, result, s.spec.id, storage, meta))
    return out


def _build_in_worker(
    job: tuple[StagedSpec, BuildConfig, tuple[str, ...]],
) -> tuple[BuiltEnv | Rejection, PreparedCode | None]:
    """A build on a builder process, with the environment's code as verification prepared it (the
    caller keeps it: `policy.remember`)."""
    s, cfg, variations = job
    result = verify_stage(
        s.spec, s.space, s.normalization, own_sandbox(), config=cfg, vary=varied(variations)
    )
    prepared = policy.prepare(result.source, "env") if isinstance(result, BuiltEnv) else None
    return result, prepared


def _environment_lineage(
    ctx: StageContext, result: BuiltEnv | Rejection, parent: str, storage: Storage,
    meta: Mapping[str, Any] | None = None,
) -> StageOutput[BuiltEnv]:  # fmt: skip
    if isinstance(result, Rejection):
        return StageOutput("verification", [], [result.in_round(ctx.round_key)])
    b, env_id = result, result.env_id  # hashes the whole source and s0: once, not once per tool
    folder, co = storage.env_dir(env_id), b.spec.coordinate
    row = lineage_row(b.spec.in_round(ctx.round_key), kind="environment", run_id=ctx.run_id, location=str(folder),
                      meta={"tools": len(b.spec.tools), "dropped_tools": len(b.dropped_tools), "spec_id": b.spec.id,
                            **({"variations": sorted({v.split(":")[0] for v in b.variations})} if b.variations else {}),
                            **(meta or {})})  # fmt: skip
    rows = [row.model_copy(update={"id": env_id})]
    edges = [Edge(child=env_id, parent=parent, relation="built_from")]
    edges += [Edge(child=env_id, parent=sid, relation="seeded_by") for sid in b.spec.seed_ids]
    for t in b.spec.tools:
        tid = f"{env_id}:{t.name}"
        rows.append(LineageRow(id=tid, kind="tool", round=ctx.round_key, split=co.split, taxonomy_id=co.taxonomy_id,
                               l1=co.l1, l2=co.l2, run_id=ctx.run_id, location=str(folder / "tools.json"),
                               meta={"op": t.op, "kind": t.kind, "origin": t.origin}))  # fmt: skip
        edges.append(Edge(child=tid, parent=env_id, relation="tool_of"))
    return StageOutput("verification", [b], [], rows, edges)


def build_candidate(
    ctx: StageContext,
    candidate: EnvCandidate,
    seeds: Mapping[str, Seed],
    taxonomy: Taxonomy,
    sandbox: Sandbox,
    storage: Storage,
    *,
    llm: LLM | None = None,
    config: BuildConfig | None = None,
    meta: Mapping[str, Any] | None = None,
) -> StageOutput[BuiltEnv]:
    """Every environment stage for one candidate (`build_environment`), with the records and lineage
    the stages give when run one asset each (the scale shards and `agentomnia env build`)."""
    own = [seeds[i] for i in candidate.seed_ids if i in seeds]
    domain = taxonomy.by_id(candidate.coordinate.taxonomy_id)
    outcome = build_environment(
        candidate, own, domain, sandbox, llm=llm, config=config, vary=seed_variations(own)
    )
    out: StageOutput[BuiltEnv] = StageOutput("environment", [])
    refused = outcome.result if isinstance(outcome.result, Rejection) else None
    state = _state_output(ctx, outcome.state or _refused(refused))
    out.rejected, out.rows, out.edges = state.rejected, state.rows, state.edges
    if not state.kept:
        return out
    tooled = _toolset_output(ctx, state.kept[0], outcome.toolset or _refused(refused))
    out.rejected += tooled.rejected
    out.rows += tooled.rows
    out.edges += tooled.edges
    if not tooled.kept:
        return out
    out.extend(_environment_lineage(ctx, outcome.result, tooled.kept[0].spec.id, storage, meta))
    return out


def _refused(rejection: Rejection | None) -> Rejection:
    """The rejection that stopped a build before the stage asking for its output."""
    if rejection is None:
        raise AssertionError("a build without a stage's output must end in a rejection")
    return rejection


def environment_index_row(b: BuiltEnv, folder: Path, **extra: Any) -> dict[str, Any]:
    c = b.spec.coordinate
    return {"env_id": b.env_id, "name": b.spec.name, "path": str(folder), "taxonomy_id": c.taxonomy_id,
            "split": c.split, "l1": c.l1, "l2": c.l2, "tools": len(b.spec.tools), "entities": len(b.spec.entities),
            "attributes": b.spec.attribute_count, "dropped_tools": len(b.dropped_tools),
            "verify_seconds": b.report.seconds, **extra}  # fmt: skip


# -- publishing --------------------------------------------------------------------------------------
def publish(
    out: StageOutput[Any],
    ctx: StageContext,
    artifacts: RoundArtifacts,
    artifact: Artifact,
    lineage: LineageSink,
    *,
    write: Callable[[Path, list[Any]], Path] | None = None,
    flat: Sequence[str] = (),
) -> Path:
    """Write a stage's kept records to `artifact` (records with `flat` columns, or `write`), its
    rejections to the artifact's `rejected` file when it declares one, and its lineage."""
    path = artifacts.path(artifact)
    if write is not None:
        write(path, out.kept)
    else:
        save_records(path, out.kept, flat=flat)
    if "rejected" in artifact.files:
        save_rejections(artifacts.path(artifact, "rejected"), out.rejected)
    rows, edges = out.lineage(ctx)
    kept_ids = {r.id for r in out.rows}
    rows = [r.model_copy(update={"location": str(path)}) if r.id in kept_ids and r.location is None else r
            for r in rows]  # fmt: skip
    lineage.record(rows, edges)
    return path


def write_staged(path: Path, staged: list[StagedSpec]) -> Path:
    return write_parquet(path, [{"id": s.spec.id, "record": s.model_dump_json()} for s in staged],
                         columns=["id", "record"])  # fmt: skip


def write_environments(artifacts: RoundArtifacts, storage: Storage, built: Sequence[BuiltEnv]) -> Path:
    """The bundles, the environment index, the specs and the verification table of a round."""

    index = [environment_index_row(b, write_bundle(b, storage.env_dir(b.env_id))) for b in built]
    save_records(artifacts.path(ENVIRONMENTS, "specs"), [b.spec.in_round(artifacts.key) for b in built],
                 flat=["name", "class_name"])  # fmt: skip
    write_parquet(artifacts.path(ENVIRONMENTS, "verification"), [verification_record(b) for b in built])
    return write_parquet(artifacts.path(ENVIRONMENTS), index, columns=ENV_INDEX_COLUMNS)


# -- tasks -------------------------------------------------------------------------------------------
def tasks_stage(
    ctx: StageContext, tasks: Iterable[Task], rejected: Iterable[Rejection], *, stage: str = "tasks"
) -> StageOutput[Task]:
    """Kept tasks (in round) with their `task_on` edges, and every refusal as a rejection."""
    kept = [t.in_round(ctx.round_key) for t in tasks]
    rows = [lineage_row(t, run_id=ctx.run_id, meta={"task_kind": t.kind, "calls": len(t.reference_calls)})
            for t in kept]  # fmt: skip
    edges = [Edge(child=t.id, parent=t.env_id, relation="task_on") for t in kept]
    refused = [r.in_round(ctx.round_key) for r in rejected]
    return StageOutput(stage, kept, refused, rows, edges)


def solver_environments(ctx: StageContext, dirs: Iterable[Path], **meta: Any) -> list[LineageRow]:
    """Lineage of the small environments solver tasks are built around (one per instance)."""
    return [LineageRow(id=d.name, kind="environment", round=ctx.round_key, run_id=ctx.run_id, location=str(d),
                       meta={"origin": "solver", **meta}) for d in dirs]  # fmt: skip
