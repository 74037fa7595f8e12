"""Sensors of the self-evolution loop.

`omniabench_failure_sensor` watches the DuckDB failure table: when a finished evaluation of the
agent the loop evolves on (by default the round's own trained agent) has left enough new failures,
it adds the next `rounds` partition and requests the self-evolution run for
it — diagnosis, PRDs, then seeds -> environments -> tasks -> trajectories -> training -> evaluation
of the new round. `prd_inbox_sensor` does the same for PRD files people drop into
`$AGENTOMNIA_HOME/prd_inbox/`. Both are idempotent (run keys name the evaluation or the inbox
content) and skip, never crash, while the DuckDB file is busy.
"""

from __future__ import annotations

import hashlib
import json
import os

from dagster import (
    DefaultSensorStatus,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from agentomnia.evolution.inbox import read_inbox
from agentomnia.lineage.duckfile import StoreBusy
from agentomnia.omniabench.store import FailureStore
from agentomnia_assets.partitions import next_round, rounds
from jobs import evolution_job
from resources import StorageResource

FAILURE_THRESHOLD_ENV = "AGENTOMNIA_FAILURE_THRESHOLD"
EVOLVE_ON_ENV = "AGENTOMNIA_EVOLVE_ON"
TRAINED = "trained"
DEFAULT_FAILURE_THRESHOLD = 5
# Short waits: a tick that cannot read the table now simply tries again next tick.
READ_TIMEOUT_S = 2.0


def failure_threshold() -> int:
    raw = os.environ.get(FAILURE_THRESHOLD_ENV, "")
    if not raw:
        return DEFAULT_FAILURE_THRESHOLD
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(
            f"{FAILURE_THRESHOLD_ENV}={raw!r} is not a whole number of failures; unset it or use e.g. 5"
        ) from None
    return max(1, value)


def evolution_policy() -> str:
    """Whose failures drive the loop: `trained` (the round's own agent, its RL checkpoint, else its
    SFT one, whenever the round evaluated one) or one policy name (e.g. `baseline:heuristic`)."""
    return os.environ.get(EVOLVE_ON_ENV, "").strip() or TRAINED


def _not_driving(
    round_key: str, policy: str, evolve_on: str, store: FailureStore, storage: StorageResource
) -> str:
    """Why an evaluation's failures do not start a round ('' when they do)."""
    if evolve_on != TRAINED:
        return (
            ""
            if policy == evolve_on
            else f"{policy} is not the policy the loop evolves on ({EVOLVE_ON_ENV}={evolve_on})"
        )
    evaluated = {e.policy for e in store.evaluations(round=round_key)}
    trained = [p for p in storage.get().round(round_key).trained_policies() if p in evaluated]
    if not trained or policy == trained[0]:
        return ""
    return f"{policy} is not the round's trained agent ({trained[0]}), whose failures the loop evolves on"


def _round_request(
    context: SensorEvaluationContext, run_key: str, tags: dict[str, str], claimed: set[str]
) -> tuple[str, RunRequest]:
    existing = list(context.instance.get_dynamic_partitions(rounds.name))  # type: ignore[arg-type]
    round_key = next_round([*existing, *claimed])
    return round_key, RunRequest(
        run_key=run_key, partition_key=round_key, tags={**tags, "agentomnia/round": round_key}
    )


@sensor(
    job=evolution_job,
    minimum_interval_seconds=30,
    default_status=DefaultSensorStatus.STOPPED,
    description=(
        "Reads the OmniaBench failure table with a cursor; when a finished evaluation has at least "
        f"${FAILURE_THRESHOLD_ENV} (default {DEFAULT_FAILURE_THRESHOLD}) new failures, adds the next round "
        "partition and requests the PRD-guided self-evolution run for it. Only the evaluation of the agent the "
        f"loop evolves on counts: the round's trained agent (${EVOLVE_ON_ENV}=trained, the default, when the "
        "round evaluated one) or the policy it names."
    ),
)
def omniabench_failure_sensor(
    context: SensorEvaluationContext, storage: StorageResource
) -> SensorResult | SkipReason:
    cursor = int(context.cursor or 0)
    threshold = failure_threshold()
    store = FailureStore(storage.get().lineage_path, timeout_s=READ_TIMEOUT_S)
    try:
        finished = store.finished_since(cursor)
    except StoreBusy as exc:
        return SkipReason(f"the failure table is busy ({exc}); trying again next tick")
    if not finished:
        return SkipReason(f"no finished evaluation with failures after cursor {cursor}")
    requests: list[RunRequest] = []
    claimed: set[str] = set()
    skipped = []
    evolve_on = evolution_policy()
    for ev in sorted(finished, key=lambda e: e.max_seq):
        try:
            why_not = _not_driving(ev.round, ev.policy, evolve_on, store, storage)
        except StoreBusy as exc:
            return SkipReason(f"the failure table is busy ({exc}); trying again next tick")
        if why_not:
            skipped.append(f"{ev.eval_id}: {why_not}")
            continue
        if ev.new_failures < threshold:
            skipped.append(f"{ev.eval_id}: {ev.new_failures} < {threshold}")
            continue
        round_key, request = _round_request(
            context,
            f"evolve-{ev.eval_id}",
            {
                "agentomnia/trigger": "omniabench_failure_sensor",
                "agentomnia/parent_round": ev.round,
                "agentomnia/source_eval": ev.eval_id,
            },
            claimed,
        )
        claimed.add(round_key)
        requests.append(request)
    new_cursor = str(max(ev.max_seq for ev in finished))
    if not requests:
        return SensorResult(
            skip_reason=SkipReason("below threshold: " + "; ".join(skipped)), cursor=new_cursor
        )
    return SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[rounds.build_add_request(sorted(claimed))],
        cursor=new_cursor,
    )


def _inbox_digest(files: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:16]


@sensor(
    job=evolution_job,
    minimum_interval_seconds=60,
    default_status=DefaultSensorStatus.STOPPED,
    description=(
        "Watches $AGENTOMNIA_HOME/prd_inbox/ for PRD files written by people (Markdown with YAML front matter, "
        "or YAML). New or changed valid PRDs add the next round partition and request its run; malformed files "
        "are reported with what to fix and never block the valid ones."
    ),
)
def prd_inbox_sensor(context: SensorEvaluationContext, storage: StorageResource) -> SensorResult | SkipReason:
    folder = storage.get().root / "prd_inbox"
    if not folder.is_dir():
        return SkipReason(f"no inbox at {folder}; create it and drop PRD files there")
    seen: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
    current = {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16]
        for p in sorted(folder.iterdir())
        if p.is_file() and p.suffix in (".md", ".yaml", ".yml")
    }
    changed = {name: digest for name, digest in current.items() if seen.get(name) != digest}
    if not changed:
        return SkipReason("no new or changed PRD files")
    prds, rejections = read_inbox(folder)
    for r in rejections:
        context.log.warning(f"PRD inbox: {r}")
    valid = [p for p in prds if any(name in p.source for name in changed)]
    if not valid:
        return SensorResult(
            skip_reason=SkipReason(f"{len(changed)} changed file(s), none a valid PRD; see the sensor log"),
            cursor=json.dumps(current, sort_keys=True),
        )
    round_key, request = _round_request(
        context,
        f"prd-inbox-{_inbox_digest(changed)}",
        {
            "agentomnia/trigger": "prd_inbox_sensor",
            "agentomnia/prds": ",".join(sorted(p.id for p in valid))[:200],
        },
        set(),
    )
    return SensorResult(
        run_requests=[request],
        dynamic_partitions_requests=[rounds.build_add_request([round_key])],
        cursor=json.dumps(current, sort_keys=True),
    )


ALL_SENSORS: list[SensorDefinition] = [omniabench_failure_sensor, prd_inbox_sensor]
