"""`agentomnia run`: materialize every asset of the definitions for one round, in process.

Runs land in the Dagster instance under `$AGENTOMNIA_HOME/dagster`, so the web UI shows them
with their metadata afterwards. Unpartitioned assets (the taxonomy) go first, then every
round-partitioned asset for the requested round.

Before it starts, runs whose process is gone are cleaned up (`agentomnia_assets.recovery`), and while a
step waits for a pool slot the holder is named. A run that was interrupted (killed, crashed, canceled)
is finished by the next `agentomnia run` of the same round and scale: every run of one invocation
carries `agentomnia/invocation`, and a rerun continues the interrupted invocation, keeping each asset
the earlier attempts materialized completely (its step succeeded, its checks were evaluated and no
blocking check failed, everything it depends on is kept too) and running the rest. Artifacts, bundles
and lineage batches are written atomically, so what an interrupted step left behind is either whole or
absent, and records are content-hashed, so running a step again writes the same ids.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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
from agentomnia.runs import clear_status, show_stderr
from agentomnia.storage import Storage
from agentomnia_assets.instance import ensure_dagster_home
from agentomnia_assets.partitions import rounds
from agentomnia_assets.recovery import (
    ENDED_TAG,
    SlotWaitReporter,
    process_tags,
    recover_dead_runs,
    say_stderr,
    short,
)


def headline(metadata: Mapping[str, Any], n: int = 3) -> str:
    """A stage's first `n` plain figures (`environments 138, discarded 2, kept_share 0.986`): numbers,
    not yes/no values, not the namespaced `realism/...` kind."""
    shown = [
        f"{k} {v}"
        for k, v in metadata.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and "/" not in k
    ]
    return ", ".join(shown[:n])


class StageProgress:
    """Say each stage as it finishes, and a stage that takes a while also as it starts, from the
    Dagster event log of this process's runs: `  09:12:04  environments  started` ...
    `  09:13:39  environments   95.2s  environments 138, tools 7272`. A stage done within
    `announce_after_s` gets its done line only, so the two rounds of `make run` fit on two screens;
    a person watching still sees what is running. `--quiet` turns it off.

    A stage's start and its counts (`37/139 environments, 2.1/s`) go to `show`, its done line to
    `say`: on a terminal the first stand on one status line that the next replaces, so a run leaves
    one line per stage; in a log every line is kept."""

    def __init__(
        self,
        instance: DagsterInstance,
        steps: set[str],
        say: Any = say_stderr,
        poll_s: float = 1.0,
        every_s: float = 10.0,
        announce_after_s: float = 3.0,
        show: Any = None,
    ):
        import threading

        self.instance, self.steps, self.say, self.poll_s = instance, steps, say, poll_s
        self.width = min(30, max((len(s) for s in steps), default=10))  # the stage names' column
        self.show = show if show is not None else (show_stderr if say is say_stderr else say)
        self.every_s = every_s  # at most one `37/139 environments, 2.1/s` line per stage this often
        self.announce_after_s = announce_after_s
        self._cursors: dict[str, str | None] = {}
        self._started: dict[str, float] = {}
        self._announced: set[str] = set()  # running stages whose start was said
        self._finished: set[str] = set()
        self._counted: dict[str, tuple[float, int]] = {}  # step -> (when its count was said, the count)
        # only the runs launched while this reporter is open: an earlier run of the same process (the
        # round before a self-evolution round) may still be closing when this one starts
        self._since = time.time() - 1.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="agentomnia-stage-progress", daemon=True)

    def __enter__(self) -> StageProgress:
        if os.environ.get("AGENTOMNIA_QUIET", "0") in ("", "0"):
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join(timeout=5.0)
            self.tick()  # the last events of the run
            if self.show is show_stderr:
                clear_status()

    def _loop(self) -> None:
        while not self._stop.wait(self.poll_s):
            try:
                self.tick()
            except Exception as exc:  # a progress line must never break the run it reports on
                if os.environ.get("AGENTOMNIA_DEBUG"):
                    self.say(f"(progress report failed: {type(exc).__name__}: {exc})")

    def tick(self) -> list[str]:
        from dagster import DagsterEventType, RunsFilter

        from agentomnia.runs import HOST_TAG, PID_TAG, host

        said: list[str] = []
        kinds = {DagsterEventType.STEP_START, DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE,
                 DagsterEventType.ASSET_MATERIALIZATION}  # fmt: skip
        runs = self.instance.get_run_records(RunsFilter(tags={PID_TAG: str(os.getpid()), HOST_TAG: host()}))
        for record in sorted(runs, key=lambda r: r.create_timestamp):
            run_id = record.dagster_run.run_id
            if record.create_timestamp.timestamp() < self._since:
                continue
            if record.dagster_run.is_finished and run_id not in self._cursors:
                self._cursors[run_id] = None  # finished before this reporter: say nothing of it
                continue
            conn = self.instance.get_records_for_run(run_id, cursor=self._cursors.get(run_id), of_type=kinds)
            self._cursors[run_id] = conn.cursor
            for ev in conn.records:
                said += self._line(ev)
        return said + self._announce() + self._counts()

    def _announce(self, only: str | None = None) -> list[str]:
        """The start of each stage that has been running for `announce_after_s` and is not done (of
        stage `only`, whatever its time: its first count line is about to be said)."""
        said: list[str] = []
        now = time.time()
        for step, began in sorted(self._started.items(), key=lambda kv: kv[1]):
            if step in self._announced or step in self._finished:
                continue
            if step != only and (only is not None or now - began < self.announce_after_s):
                continue
            self._announced.add(step)
            line = f"  {time.strftime('%H:%M:%S', time.localtime(began))}  {step:<{self.width}} started"
            self.show(line)
            said.append(line)
        return said

    def _counts(self) -> list[str]:
        """Items done of total for the stages that report them (`agentomnia.progress`)."""
        from agentomnia import progress

        said: list[str] = []
        now = time.monotonic()
        for step, p in sorted(progress.snapshot().items()):
            if step not in self.steps or step not in self._started or p.done == 0:
                continue
            when, count = self._counted.get(step, (0.0, -1))
            if p.done == count or (now - when < self.every_s and p.done < p.total):
                continue
            self._counted[step] = (now, p.done)
            said += self._announce(only=step)
            line = f"  {time.strftime('%H:%M:%S')}  {step:<{self.width}} {p.line()}"
            self.show(line)
            said.append(line)
        return said

    def _line(self, ev: Any) -> list[str]:
        from dagster import DagsterEventType

        event = ev.event_log_entry.dagster_event
        step = event.step_key if event is not None else None
        if event is None or step not in self.steps:
            return []
        clock = time.strftime("%H:%M:%S", time.localtime(ev.event_log_entry.timestamp))
        kind = event.event_type
        if kind == DagsterEventType.STEP_START:
            self._started[step] = ev.event_log_entry.timestamp
            self._announced.discard(step)
            self._finished.discard(step)
            return []  # said by `_announce` if it is still running a moment later
        if kind == DagsterEventType.ASSET_MATERIALIZATION:
            values = event.step_materialization_data.materialization.metadata
            shown = headline({k: getattr(v, "value", None) for k, v in values.items()})
            took = ev.event_log_entry.timestamp - self._started.get(step, ev.event_log_entry.timestamp)
            line = f"  {clock}  {step:<{self.width}} {took:5.1f}s" + (f"  {shown}" if shown else "")
        elif kind == DagsterEventType.STEP_FAILURE:
            line = f"  {clock}  {step:<{self.width}} FAILED"
        else:
            return []
        self._finished.add(step)
        self.say(line)
        return [line]


class StageReport(BaseModel):
    asset: str
    group: str
    seconds: float
    metadata: dict[str, Any] = Field(default_factory=dict)
    round: str = ""
    kept_from: str = ""  # the interrupted run whose materialization this rerun kept


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
        from agentomnia.omniabench.learning import FIGURE_LABELS

        lines = ["", "self-evolution loop"]
        if self.evolution is not None and not self.evolution.triggered:
            lines.append(f"  no round triggered: {self.evolution.reason}")
        for r in self.rounds:
            lines.append(
                f"  round {r['round']}"
                + (f" (from the failures of {r['parent']})" if r.get("parent") else "")
            )
            passes = r.get("pass_at_1_by_split", {})
            splits = list(next(iter(passes.values()), {}))
            if passes:
                lines += wrapped(
                    [f"OmniaBench pass@1 ({'/'.join(splits)}):"]
                    + [
                        f"{policy} " + "/".join(f"{by_split.get(k, 0.0):.3f}" for k in splits)
                        for policy, by_split in passes.items()
                    ],
                    indent="    ",
                    sep="  ",
                )
            learning = r.get("learning", {})
            if learning:
                width = max(len("learned"), *(len(role) + 2 for role in learning)) + 1
                lines.append(
                    "    "
                    + "learned".ljust(width)
                    + " ".join(f"{n:>11}" for n in _short_labels(FIGURE_LABELS))
                )
                for role, figures in learning.items():
                    cells = " ".join(
                        f"{figures[key]:>11.3f}" if isinstance(figures.get(key), float) else f"{'n/a':>11}"
                        for key in FIGURE_LABELS
                    )
                    lines.append(f"    {'  ' + role:<{width}}{cells}")
            tail = []
            if r.get("failures") is not None:
                tail.append(f"failed trials {r['failures']}")
            tail.append(f"PRDs {r.get('prds', 0)}")
            if r.get("kl_round") is not None:
                prev = r.get("kl_previous")
                tail.append(
                    f"KL(P_round || P_failures) {r['kl_round']:.3f}, previous "
                    + (f"{prev:.3f}" if isinstance(prev, (int, float)) else "n/a")
                )
            lines.append("    " + " · ".join(tail))
        return lines


def _short_labels(labels: dict[str, str]) -> list[str]:
    """Column heads of at most 11 characters: `action likelihood` -> `likelihood`."""
    short = {
        "action likelihood": "likelihood",
        "exact arguments": "exact args",
        "well-formed calls": "well-formed",
    }
    return [short.get(v, v)[:11] for v in labels.values()]


def wrapped(items: Sequence[str], *, indent: str = "  ", sep: str = " · ", width: int = 100) -> list[str]:
    """`items` joined by `sep` in lines of at most `width` columns (an item is never split), the later
    lines indented two more."""
    lines: list[str] = []
    line = ""
    for item in items:
        if line and len(line) + len(sep) + len(item) + len(sep.rstrip()) > width:
            lines.append(line + sep.rstrip())
            line = indent + "  " + item
        else:
            line = line + sep + item if line else indent + item
    return [*lines, line] if line else lines


def record_lines(records: Sequence[dict[str, Any]]) -> list[str]:
    """The records of each round on a few lines, kind by kind, `ok` unsaid:
    `  r0  seed 160 · task 138, 225 rejected · eval_result 170 failed`."""
    by_round: dict[str, dict[str, list[str]]] = {}
    for r in records:
        counts = by_round.setdefault(str(r["round"] or "-"), {}).setdefault(str(r["kind"]), [])
        counts.append(f"{r['count']}" if r["status"] == "ok" else f"{r['count']} {r['status']}")
    width = max((len(k) for k in by_round), default=2)
    out: list[str] = []
    for rnd in sorted(by_round):
        items = [f"{kind} {', '.join(counts)}" for kind, counts in by_round[rnd].items()]
        out += wrapped([f"{rnd:<{width}}  {items[0]}", *items[1:]])
    return out


def rejection_lines(rejections: Sequence[dict[str, Any]], shown: int) -> list[str]:
    """The commonest rejection reasons, by kind of record, on a few lines; the rest counted."""
    by_kind: dict[str, list[str]] = {}
    for r in rejections[:shown]:
        by_kind.setdefault(str(r["kind"]), []).append(f"{str(r['reason'])[:48]} {r['count']}")
    items: list[str] = []  # one per reason, so that a long list wraps between reasons
    for kind, reasons in by_kind.items():
        said = [f"{kind}: {reasons[0]}", *reasons[1:]]
        items += [f"{x}," for x in said[:-1]] + [f"{said[-1]};"]
    rest = rejections[shown:]
    if rest:
        items.append(
            f"{sum(r['count'] for r in rest)} more, for {len(rest)} other reason{'' if len(rest) == 1 else 's'} (--json)"
        )
    elif items:
        items[-1] = items[-1].rstrip(";")
    return wrapped(items, sep=" ")


REJECTION_LINES = 8  # the most common reasons the summary lists; --json has them all


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
    recovered: list[dict[str, Any]] = Field(default_factory=list)  # dead runs this run cleaned up first
    resumed: list[str] = Field(default_factory=list)  # interrupted runs of the invocation it finished

    def _stage_lines(self, *, live: bool) -> list[str]:
        """Each stage with its time and headline figures; after a run that said them as it went, the
        slowest stages only. Every figure of every stage is in `--json` and the Dagster UI."""
        if live:
            slowest = sorted((s for s in self.stages if not s.kept_from), key=lambda s: -s.seconds)[:4]
            said = [f"{s.asset} {s.round} {s.seconds:.0f}s".replace("  ", " ") for s in slowest] or [
                "none run"
            ]
            said[0] = f"{len(self.stages)} stages; the slowest: {said[0]}"
            said[-1] += " (every figure: --json, or the Dagster UI)"
            lines = wrapped(said, indent="", sep=", ")
            kept = [s for s in self.stages if s.kept_from]
            if kept:
                runs = ", ".join(sorted({short(s.kept_from) for s in kept}))
                lines.append(
                    f"{len(kept)} stage{'' if len(kept) == 1 else 's'} kept from {runs}, not run again: {', '.join(s.asset for s in kept)}"
                )
            return lines
        width = max((len(s.asset) for s in self.stages), default=10)
        lines = []
        for s in self.stages:
            took = f"kept from {short(s.kept_from)}" if s.kept_from else f"{s.seconds:7.1f}s"
            lines.append(f"  {s.round or '':<6} {s.asset:<{width}}  {took:>8}  {headline(s.metadata)}")
        return lines

    def render(self) -> str:
        ran = (
            [r["round"] for r in self.loop.rounds]
            if self.loop is not None and self.loop.rounds
            else [self.round]
        )
        what = f"round {ran[0]}" if len(ran) == 1 else f"rounds {', '.join(ran)} (each evolved from the last)"
        lines = [f"AgentOmnia pipeline: {what}, scale {self.scale}, {self.seconds:.1f}s", ""]
        for d in self.recovered:
            held = ", ".join(f"{x['pool']} slot of step {x['step']} since {x['since']}" for x in d["slots"])
            lines.append(
                f"cleaned up dead run {short(d['run_id'])} (pid {d['pid']} gone): marked {d['marked']}"
                + (f", freed the {held}" if held else "")
            )
        if self.resumed:
            lines.append(
                "finished the interrupted runs " + ", ".join(short(r) for r in self.resumed)
                + ": what they materialized completely was kept"
            )  # fmt: skip
        if self.recovered or self.resumed:
            lines.append("")
        lines += self._stage_lines(live=os.environ.get("AGENTOMNIA_QUIET", "0") in ("", "0"))
        lines += ["", "records in the lineage store, per round (ok unless said)"]
        lines += record_lines(self.records)
        if self.rejections:
            lines += ["", "rejected, commonest reasons first"]
            lines += rejection_lines(self.rejections, REJECTION_LINES)
        if self.loop is not None:
            lines += self.loop.render()
        lines += ["", "where to look"] + [f"  {k:<9} {v}" for k, v in self.where.items()]
        return "\n".join(lines)


def _scalars(metadata: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in metadata.items():
        raw = getattr(value, "value", value)
        if isinstance(raw, (int, float, str)) and not isinstance(raw, bool) and len(str(raw)) <= 40:
            out[name] = raw
    return out


def _scalar_metadata(result: ExecuteInProcessResult, key: AssetKey) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for event in result.get_asset_materialization_events():
        mat = event.materialization
        if mat.asset_key != key:
            continue
        out.update(_scalars(mat.metadata))
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
        DAG_TASKS.name: {"standard_per_env": 8, "challenge_per_env": 4, "processes": None},
        PROGRAM_TASKS.name: {"per_env": 2},
        SOLVER_TASKS.name: {"per_family": 25, "guided_per_family": 5},
    },
}


def run_config_for(scale: str, asset_names: set[str], quiet: bool) -> dict[str, Any]:
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; use one of {', '.join(SCALES)}")
    ops = {name: {"config": cfg} for name, cfg in SCALES[scale].items() if name in asset_names}
    return {**(QUIET if quiet else {}), **({"ops": ops} if ops else {})}


INVOCATION_TAG = "agentomnia/invocation"  # every run of one `agentomnia run`, and of the reruns finishing it
ATTEMPT_TAG = "agentomnia/attempt"
BASE_ROUND_TAG = "agentomnia/base_round"  # the round the invocation was asked for
PART_TAG = "agentomnia/part"  # `static`, or `round:<key>` (the base round or an evolution round)
SCALE_TAG = "agentomnia/scale"


@dataclass
class Invocation:
    """One `agentomnia run` for a round and scale; a rerun after an interruption continues it."""

    id: str
    base_round: str
    scale: str
    attempt: int = 1
    earlier: list[str] = field(default_factory=list)  # run ids of the interrupted attempts, oldest first

    def tags(self, part: str) -> dict[str, str]:
        return {
            INVOCATION_TAG: self.id,
            ATTEMPT_TAG: str(self.attempt),
            BASE_ROUND_TAG: self.base_round,
            PART_TAG: part,
            SCALE_TAG: self.scale,
            **process_tags(),
        }


def _interrupted(instance: DagsterInstance, record: Any) -> bool:
    """Canceled, or failed without a step failing: its process died (marked by `agentomnia run`, whose
    tag says so, or by the daemon's run monitoring) rather than a step raising."""
    from dagster import DagsterEventType, DagsterRunStatus

    run = record.dagster_run
    if run.status == DagsterRunStatus.CANCELED or run.tags.get(ENDED_TAG):
        return run.status in (DagsterRunStatus.CANCELED, DagsterRunStatus.FAILURE)
    return run.status == DagsterRunStatus.FAILURE and not instance.all_logs(
        run.run_id, of_type=DagsterEventType.STEP_FAILURE
    )


def start_invocation(instance: DagsterInstance, round_key: str, scale: str) -> Invocation:
    """A new invocation, or the latest one for this round and scale when it was interrupted.

    `AGENTOMNIA_RESUME=0` always starts afresh."""
    from dagster import RunsFilter

    fresh = Invocation(id=uuid.uuid4().hex[:12], base_round=round_key, scale=scale)
    if os.environ.get("AGENTOMNIA_RESUME", "1") == "0":
        return fresh
    latest = instance.get_run_records(RunsFilter(tags={BASE_ROUND_TAG: round_key, SCALE_TAG: scale}), limit=1)
    if not latest or not latest[0].dagster_run.tags.get(INVOCATION_TAG):
        return fresh
    previous = latest[0].dagster_run.tags[INVOCATION_TAG]
    records = list(instance.get_run_records(RunsFilter(tags={INVOCATION_TAG: previous})))
    if any(not r.dagster_run.is_finished for r in records) or not any(
        _interrupted(instance, r) for r in records
    ):
        return fresh  # still running somewhere, completed, or failed on its own: start over
    attempts = [int(r.dagster_run.tags.get(ATTEMPT_TAG, "1") or 1) for r in records]
    earlier = [r.dagster_run.run_id for r in sorted(records, key=lambda r: r.create_timestamp)]
    return Invocation(previous, round_key, scale, attempt=max(attempts) + 1, earlier=earlier)


@dataclass(frozen=True)
class Kept:
    run_id: str
    metadata: dict[str, Any]


def kept_assets(
    instance: DagsterInstance, run_ids: Sequence[str], assets: Sequence[AssetsDefinition], graph: Any
) -> dict[AssetKey, Kept]:
    """The assets of `assets` that the runs `run_ids` materialized completely.

    Complete: the step's materialization was recorded (Dagster records it after the asset function
    returned, so a step killed midway has none), every check of the asset was evaluated and no blocking
    one failed, every asset it depends on among `assets` is complete too, and so is every other key of
    the same (multi-)asset step. Partial outputs of an incomplete step are never read as complete."""
    from dagster import DagsterEventType

    materialized: dict[AssetKey, Kept] = {}
    evaluated: dict[Any, bool] = {}
    for run_id in run_ids:
        for entry in instance.all_logs(
            run_id, of_type={DagsterEventType.ASSET_MATERIALIZATION, DagsterEventType.ASSET_CHECK_EVALUATION}
        ):
            event = entry.dagster_event
            if event is None:
                continue
            if event.event_type == DagsterEventType.ASSET_MATERIALIZATION:
                mat = event.step_materialization_data.materialization
                materialized[mat.asset_key] = Kept(run_id, _scalars(mat.metadata))
            else:
                data = event.event_specific_data
                evaluated[data.asset_check_key] = bool(data.passed)  # type: ignore[union-attr]
    planned = {k for a in assets for k in a.keys}
    done: dict[AssetKey, Kept] = {}
    for key in graph.toposorted_asset_keys:
        if key not in planned or key not in materialized:
            continue
        checks = graph.get_check_keys_for_assets({key})
        checked = all(c in evaluated and (evaluated[c] or not graph.get(c).blocking) for c in checks)
        parents = set(graph.get(key).parent_keys) & planned
        if checked and parents <= set(done):
            done[key] = materialized[key]
    for a in assets:  # a step is kept whole or not at all
        if not set(a.keys) <= set(done):
            for k in a.keys:
                done.pop(k, None)
    return done


def _materialize_round(
    instance: DagsterInstance,
    round_key: str,
    scale: str,
    quiet: bool,
    tags: dict[str, str],
    partitioned_only: bool,
    invocation: Invocation | None = None,
) -> list[StageReport]:
    from dagster import RunsFilter

    from agentomnia_assets.definitions import defs

    invocation = invocation or start_invocation(instance, round_key, scale)
    if not instance.has_dynamic_partition(rounds.name, round_key):  # type: ignore[arg-type]
        instance.add_dynamic_partitions(rounds.name, [round_key])  # type: ignore[arg-type]
    assets: list[AssetsDefinition] = [a for a in defs.assets or [] if isinstance(a, AssetsDefinition)]
    checks = list(defs.asset_checks or [])
    resources = dict(defs.resources or {})
    graph = defs.resolve_asset_graph()
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
        part = f"round:{round_key}" if partitioned else "static"
        where = round_key if partitioned else "static"
        earlier = [
            r.dagster_run.run_id
            for r in sorted(
                instance.get_run_records(RunsFilter(tags={INVOCATION_TAG: invocation.id, PART_TAG: part})),
                key=lambda r: r.create_timestamp,
            )
        ]
        kept = kept_assets(instance, earlier, selected, graph) if earlier else {}
        for a in selected:
            for key in a.keys:
                if key in kept:
                    stages.append(
                        StageReport(
                            asset=key.to_user_string(),
                            group=a.group_names_by_key.get(key, ""),
                            seconds=0.0,
                            metadata=kept[key].metadata,
                            round=where,
                            kept_from=kept[key].run_id,
                        )
                    )
        todo = [a for a in selected if not set(a.keys) <= set(kept)]
        if not todo:
            continue
        keys = [k for a in todo for k in a.keys]
        with SlotWaitReporter(instance), StageProgress(instance, {a.node_def.name for a in todo}):
            result = materialize(
                [*assets, *checks],
                selection=keys,
                instance=instance,
                resources=resources,
                partition_key=round_key if partitioned else None,
                tags={**tags, **invocation.tags(part)},
                run_config=run_config_for(scale, {a.node_def.name for a in todo}, quiet),
            )
        seconds = _stage_seconds(result)
        by_step = {a.node_def.name: a for a in todo}
        for step in seconds:
            ran = by_step.get(step)
            if ran is None:
                continue  # an asset check's step
            for key in ran.keys:
                stages.append(
                    StageReport(
                        asset=key.to_user_string(),
                        group=ran.group_names_by_key.get(key, ""),
                        seconds=seconds[step],
                        metadata=_scalar_metadata(result, key),
                        round=where,
                    )
                )
    return stages


def evolve_once(
    instance: DagsterInstance,
    scale: str = "default",
    *,
    quiet: bool = True,
    invocation: Invocation | None = None,
) -> EvolutionReport:
    """One tick of the failure sensor, then the self-evolution runs it requests, in process.

    The same sensor the daemon runs decides; a round already started for an evaluation (a run tagged
    with its id exists) is reported, not run again, so repeating `agentomnia run` adds no rounds. The
    exception is a round that `invocation` started and an interruption cut short: it is finished.
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
        earlier = list(instance.get_run_records(RunsFilter(tags={"agentomnia/source_eval": source})))
        round_key = str(request.partition_key)
        if earlier:
            tags = earlier[0].dagster_run.tags
            existing = tags.get("agentomnia/round") or tags.get("dagster/partition") or "?"
            unfinished_attempt = (
                invocation is not None
                and all(r.dagster_run.tags.get(INVOCATION_TAG) == invocation.id for r in earlier)
                and all(_interrupted(instance, r) for r in earlier)
            )
            if not unfinished_attempt:
                rounds_run.append(existing)
                continue
            round_key = existing  # finish the round the interrupted attempt started
        stages += _materialize_round(
            instance,
            round_key,
            scale,
            quiet,
            dict(request.tags),
            partitioned_only=True,
            invocation=invocation,
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
    recovered = recover_dead_runs(instance)
    _save_asset_list(storage)
    started = time.perf_counter()
    invocation = start_invocation(instance, round_key, scale)
    if invocation.earlier:
        say_stderr(
            f"finishing the interrupted `agentomnia run` of round {round_key} (runs "
            + ", ".join(short(r) for r in invocation.earlier)
            + "): assets they materialized completely are kept, the rest runs now"
        )
    stages = _materialize_round(
        instance, round_key, scale, quiet, {}, partitioned_only=False, invocation=invocation
    )
    evolution = evolve_once(instance, scale, quiet=quiet, invocation=invocation) if evolve else None
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
        recovered=[d.as_dict() for d in recovered],
        resumed=invocation.earlier,
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
        learning = artifacts.learning() or {}
        entry["learning"] = {
            row["policy"]: row for row in learning.get("rows", []) if row.get("route") == "all"
        }
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
    recover_dead_runs(instance)
    if not instance.has_dynamic_partition(rounds.name, round_key):  # type: ignore[arg-type]
        instance.add_dynamic_partitions(rounds.name, [round_key])  # type: ignore[arg-type]
    config = ScaleConfig(workers=workers, **({"environments": environments} if environments else {}))
    with SlotWaitReporter(instance):
        result = materialize(
            [scale_corpus],
            instance=instance,
            resources=dict(defs.resources or {}),
            partition_key=round_key,
            tags={SCALE_TAG: "paper" if environments is None else str(environments), **process_tags()},
            run_config={**(QUIET if quiet else {}), "ops": {"scale_corpus": {"config": config.model_dump()}}},
        )
    return _scalar_metadata(result, scale_corpus.key)


# -- the child process `agentomnia run` supervises (`agentomnia_assets.recovery.supervise`) -----------

CHILD_ENTRY = "agentomnia_assets.pipeline:child_main"


def _round_target(**kwargs: Any) -> list[Any]:
    summary = run_pipeline(**kwargs)
    return [summary.model_dump(mode="json"), summary.render()]


def _paper_target(**kwargs: Any) -> list[Any]:
    import argparse

    from agentomnia.cli import _run_paper_scale

    data, text = _run_paper_scale(argparse.Namespace(**kwargs))
    return [data, text]


def child_main(spec_path: str) -> int:
    """Run what `agentomnia run` asked for (`round` or `paper`) and hand the result to the supervisor."""
    from agentomnia_assets.recovery import run_child

    if os.environ.get("AGENTOMNIA_VERBOSE", "0") in ("", "0"):  # AGENTOMNIA_VERBOSE=1 keeps it all here
        from agentomnia.logfile import to_log_file

        where = to_log_file(Storage().root)
        if os.environ.get("AGENTOMNIA_QUIET", "0") in ("", "0"):
            print(f"library warnings and trainer steps go to {where}", file=sys.stderr, flush=True)
    return run_child(spec_path, {"round": _round_target, "paper": _paper_target})
