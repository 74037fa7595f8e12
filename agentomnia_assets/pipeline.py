"""`agentomnia run`: materialize every asset of the definitions for one round, in process.

Runs land in the Dagster instance under `$AGENTOMNIA_HOME/dagster`, so the web UI shows them
with their metadata afterwards. Unpartitioned assets (the taxonomy) go first, then every
round-partitioned asset for the requested round.
"""

from __future__ import annotations

import time
from typing import Any

from dagster import (
    AssetKey,
    AssetsDefinition,
    DagsterEventType,
    DagsterInstance,
    ExecuteInProcessResult,
    materialize,
)
from pydantic import BaseModel, Field

from agentomnia.catalog import DAG_TASKS, PRDS, PROGRAM_TASKS, SOLVER_TASKS
from agentomnia.lineage import LineageStore
from agentomnia.storage import Storage
from agentomnia_assets.instance import ensure_dagster_home
from agentomnia_assets.partitions import rounds


class StageReport(BaseModel):
    asset: str
    group: str
    seconds: float
    metadata: dict[str, Any] = Field(default_factory=dict)
    round: str = ""


class EvolutionReport(BaseModel):
    """What one tick of the failure sensor started."""

    triggered: bool
    reason: str = ""
    rounds: list[str] = Field(default_factory=list)
    stages: list[StageReport] = Field(default_factory=list)
    home: str = ""


class LoopSummary(BaseModel):
    """The self-evolution loop at a glance: benchmark results per round, PRDs, KL alignment."""

    rounds: list[dict[str, Any]] = Field(default_factory=list)
    evolution: EvolutionReport | None = None

    def render(self) -> list[str]:
        lines = ["", "self-evolution loop"]
        if self.evolution is not None and not self.evolution.triggered:
            lines.append(f"  no round triggered: {self.evolution.reason}")
        for r in self.rounds:
            lines.append(
                f"  round {r['round']}"
                + (f" (from the failures of {r['parent']})" if r.get("parent") else "")
            )
            for policy, by_split in r.get("pass_at_1_by_split", {}).items():
                cells = ", ".join(f"{k} {v:.3f}" for k, v in by_split.items())
                lines.append(f"    OmniaBench pass@1 {policy}: {cells}")
            if r.get("failures") is not None:
                lines.append(f"    failed trials in the failure table: {r['failures']}")
            lines.append(f"    PRDs: {r.get('prds', 0)}")
            if r.get("kl_round") is not None:
                prev = r.get("kl_previous")
                lines.append(
                    f"    KL(P_round || P_failures) = {r['kl_round']:.3f}; KL(P_previous || P_failures) = "
                    + (f"{prev:.3f}" if isinstance(prev, (int, float)) else "n/a")
                )
        return lines


class PipelineSummary(BaseModel):
    home: str
    round: str
    scale: str
    seconds: float
    stages: list[StageReport]
    records: list[dict[str, Any]]
    rejections: list[dict[str, Any]] = Field(default_factory=list)
    where: dict[str, str]
    loop: LoopSummary | None = None

    def render(self) -> str:
        lines = [f"AgentOmnia pipeline: round {self.round}, scale {self.scale}, {self.seconds:.1f}s", ""]
        width = max((len(s.asset) for s in self.stages), default=10)
        for s in self.stages:
            counts = ", ".join(f"{k}={v}" for k, v in s.metadata.items())
            lines.append(f"  {s.round or '':<6} {s.asset:<{width}}  {s.seconds:7.1f}s  {counts}")
        lines += ["", "records in the lineage store (kind / round / status: count)"]
        lines += [f"  {r['kind']:<22} {r['round']:<6} {r['status']:<10} {r['count']}" for r in self.records]
        if self.rejections:
            lines += ["", "rejected, by reason"]
            lines += [f"  {r['kind']:<22} {r['count']:>5}  {r['reason'][:90]}" for r in self.rejections[:15]]
        if self.loop is not None:
            lines += self.loop.render()
        lines += ["", "where to look"] + [f"  {k:<9} {v}" for k, v in self.where.items()]
        return "\n".join(lines)


def _scalar_metadata(result: ExecuteInProcessResult, key: AssetKey) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for event in result.get_asset_materialization_events():
        mat = event.materialization
        if mat.asset_key != key:
            continue
        for name, value in mat.metadata.items():
            raw = getattr(value, "value", value)
            if isinstance(raw, (int, float, str)) and not isinstance(raw, bool) and len(str(raw)) <= 40:
                out[name] = raw
    return out


def _stage_seconds(result: ExecuteInProcessResult) -> dict[str, float]:
    """Step durations in the order the steps finished."""
    out: dict[str, float] = {}
    for event in result.all_events:
        if event.event_type == DagsterEventType.STEP_SUCCESS and event.step_key:
            out[event.step_key] = event.event_specific_data.duration_ms / 1000.0  # type: ignore[union-attr]
    return out


SCALE_GROUP = "scale"  # the scale corpus is its own run (`run_scale_corpus`), never part of a round
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}

# Run configuration per scale: `default` is what `make run` affords in minutes on two cores;
# `full` runs every stage at its target sizes on the whole shipped corpus.
SCALES: dict[str, dict[str, dict[str, Any]]] = {
    "default": {
        DAG_TASKS.name: {"standard_per_env": 2, "challenge_per_env": 1, "max_environments": 30},
        PROGRAM_TASKS.name: {"per_env": 1, "max_environments": 30},
        SOLVER_TASKS.name: {"per_family": 4, "guided_per_family": 2},
    },
    "full": {
        DAG_TASKS.name: {"standard_per_env": 8, "challenge_per_env": 4},
        PROGRAM_TASKS.name: {"per_env": 2},
        SOLVER_TASKS.name: {"per_family": 25, "guided_per_family": 5},
    },
}


def run_config_for(scale: str, asset_names: set[str], quiet: bool) -> dict[str, Any]:
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; use one of {', '.join(SCALES)}")
    ops = {name: {"config": cfg} for name, cfg in SCALES[scale].items() if name in asset_names}
    return {**(QUIET if quiet else {}), **({"ops": ops} if ops else {})}


def _materialize_round(
    instance: DagsterInstance,
    round_key: str,
    scale: str,
    quiet: bool,
    tags: dict[str, str],
    partitioned_only: bool,
) -> list[StageReport]:
    from agentomnia_assets.definitions import defs

    if not instance.has_dynamic_partition(rounds.name, round_key):  # type: ignore[arg-type]
        instance.add_dynamic_partitions(rounds.name, [round_key])  # type: ignore[arg-type]
    assets: list[AssetsDefinition] = [a for a in defs.assets or [] if isinstance(a, AssetsDefinition)]
    checks = list(defs.asset_checks or [])
    resources = dict(defs.resources or {})
    stages: list[StageReport] = []
    for partitioned in (False, True):
        if partitioned_only and not partitioned:
            continue
        selected = [
            a
            for a in assets
            if (a.partitions_def is not None) == partitioned
            and SCALE_GROUP not in a.group_names_by_key.values()
        ]
        if not selected:
            continue
        keys = [k for a in selected for k in a.keys]
        result = materialize(
            [*assets, *checks],
            selection=keys,
            instance=instance,
            resources=resources,
            partition_key=round_key if partitioned else None,
            tags={"agentomnia/scale": scale, **tags},
            run_config=run_config_for(scale, {a.node_def.name for a in selected}, quiet),
        )
        seconds = _stage_seconds(result)
        by_step = {a.node_def.name: a for a in selected}
        for step in seconds:
            a = by_step.get(step)
            if a is None:
                continue  # an asset check's step
            for key in a.keys:
                stages.append(
                    StageReport(
                        asset=key.to_user_string(),
                        group=a.group_names_by_key.get(key, ""),
                        seconds=seconds[step],
                        metadata=_scalar_metadata(result, key),
                        round=round_key if partitioned else "static",
                    )
                )
    return stages


def evolve_once(instance: DagsterInstance, scale: str = "default", *, quiet: bool = True) -> EvolutionReport:
    """One tick of the failure sensor, then the self-evolution runs it requests, in process.

    The same sensor the daemon runs decides; a round already started for an evaluation (a run tagged
    with its id exists) is reported, not run again, so repeating `agentomnia run` adds no rounds.
    """
    from dagster import RunsFilter, SensorResult, build_sensor_context

    from agentomnia_assets.definitions import defs
    from sensors import omniabench_failure_sensor

    storage = Storage()
    context = build_sensor_context(
        instance=instance, resources={"storage": (defs.resources or {})["storage"]}
    )
    outcome = omniabench_failure_sensor(context)
    if not isinstance(outcome, SensorResult) or not outcome.run_requests:
        reason = getattr(getattr(outcome, "skip_reason", None), "skip_message", None) or str(outcome)
        return EvolutionReport(triggered=False, reason=reason)
    stages: list[StageReport] = []
    rounds_run: list[str] = []
    for request in outcome.run_requests:
        source = request.tags.get("agentomnia/source_eval", "")
        done = instance.get_run_records(RunsFilter(tags={"agentomnia/source_eval": source}), limit=1)
        if done:
            existing = done[0].dagster_run.tags.get("agentomnia/round", "?")
            rounds_run.append(existing)
            continue
        round_key = str(request.partition_key)
        stages += _materialize_round(
            instance, round_key, scale, quiet, dict(request.tags), partitioned_only=True
        )
        rounds_run.append(round_key)
    return EvolutionReport(
        triggered=True, reason="", rounds=rounds_run, stages=stages, home=str(storage.root)
    )


def run_pipeline(
    round_key: str = "r0", scale: str = "default", *, quiet: bool = True, evolve: bool = True
) -> PipelineSummary:
    storage = Storage()
    ensure_dagster_home(storage.root)
    instance = DagsterInstance.get()
    _save_asset_list(storage)
    started = time.perf_counter()
    stages = _materialize_round(instance, round_key, scale, quiet, {}, partitioned_only=False)
    evolution = evolve_once(instance, scale, quiet=quiet) if evolve else None
    if evolution is not None:
        stages += evolution.stages
    store = LineageStore(storage.lineage_path)
    records = store.counts()
    shown = {round_key, "static", *(evolution.rounds if evolution else [])}
    return PipelineSummary(
        home=str(storage.root),
        round=round_key,
        scale=scale,
        seconds=time.perf_counter() - started,
        stages=stages,
        records=[r for r in records if r["round"] in shown],
        rejections=store.rejection_reasons(round_key),
        where={
            "lineage": str(storage.lineage_path),
            "artifacts": str(storage.artifacts_root),
            "benchmark": str(storage.root / "benchmark"),
            "ui": "make ui, then http://127.0.0.1:3000",
        },
        loop=loop_summary(storage, [round_key, *(evolution.rounds if evolution else [])], evolution),
    )


def loop_summary(storage: Storage, round_keys: list[str], evolution: EvolutionReport | None) -> LoopSummary:
    """Per round: pass@1 by split of every evaluated policy, failures, PRDs and both KL values."""

    from agentomnia.omniabench.metrics import report
    from agentomnia.omniabench.service import load_results
    from agentomnia.omniabench.store import FailureStore

    rows = []
    failures = FailureStore(storage.lineage_path)
    for key in dict.fromkeys(round_keys):
        entry: dict[str, Any] = {"round": key, "pass_at_1_by_split": {}}
        for policy, results in load_results(storage, key).items():
            rep = report(results, k=max(r.trial for r in results) + 1)
            entry["pass_at_1_by_split"][policy] = {
                row["split"]: row["pass@1"] for row in rep.rows("split") if "split" in row and "pass@1" in row
            }
        entry["failures"] = len(failures.failures(round=key))
        artifacts = storage.round(key)
        if artifacts.exists(PRDS):
            entry["prds"] = len(artifacts.prds())
        data = artifacts.alignment()
        if data is not None:
            entry.update(
                parent=data.get("parent_round"),
                kl_round=data.get("kl_round"),
                kl_previous=data.get("kl_previous"),
            )
        rows.append(entry)
    return LoopSummary(rounds=rows, evolution=evolution)


def _save_asset_list(storage: Storage) -> None:
    """The asset list `agentomnia status` reads without loading Dagster, saved by every run."""
    from agentomnia_assets.definitions import defs
    from agentomnia_assets.status import save_asset_list

    names = [k.to_user_string() for a in defs.assets or [] if isinstance(a, AssetsDefinition) for k in a.keys]
    save_asset_list(ensure_dagster_home(storage.root), names)


def latest_materializations(storage: Storage) -> list[dict[str, Any]]:
    """Each asset's most recent materialization (or that it has none yet), through the Dagster API.

    Saves the asset list for `agentomnia_assets.status.fast_asset_status`, which answers the same without
    loading Dagster when the instance uses the default SQLite storage."""
    from agentomnia_assets.definitions import defs
    from agentomnia_assets.status import save_asset_list

    dagster_home = ensure_dagster_home(storage.root)
    instance = DagsterInstance.get()
    out = []
    for a in defs.assets or []:
        if not isinstance(a, AssetsDefinition):
            continue
        for key in a.keys:
            record = instance.get_latest_materialization_event(key)
            mat = record.asset_materialization if record else None
            out.append(
                {
                    "asset": key.to_user_string(),
                    "status": "materialized" if mat else "never",
                    "partition": mat.partition if mat else None,
                    "when": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.timestamp))
                    if record
                    else None,
                }
            )
    save_asset_list(dagster_home, [str(a["asset"]) for a in out])
    return out


def run_scale_corpus(
    round_key: str = "paper", *, environments: int | None = None, workers: int = 2, quiet: bool = False
) -> dict[str, Any]:
    """Materialize `scale_corpus` for `round_key` (default: the paper's corpus); its metadata."""
    from agentomnia_assets.definitions import defs
    from agentomnia_assets.scale import ScaleConfig, scale_corpus

    ensure_dagster_home(Storage().root)
    _save_asset_list(Storage())
    instance = DagsterInstance.get()
    if not instance.has_dynamic_partition(rounds.name, round_key):  # type: ignore[arg-type]
        instance.add_dynamic_partitions(rounds.name, [round_key])  # type: ignore[arg-type]
    config = ScaleConfig(workers=workers, **({"environments": environments} if environments else {}))
    result = materialize(
        [scale_corpus],
        instance=instance,
        resources=dict(defs.resources or {}),
        partition_key=round_key,
        tags={"agentomnia/scale": "paper" if environments is None else str(environments)},
        run_config={**(QUIET if quiet else {}), "ops": {"scale_corpus": {"config": config.model_dump()}}},
    )
    return _scalar_metadata(result, scale_corpus.key)
