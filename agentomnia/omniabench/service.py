"""OmniaBench as one service: where the benchmark lives, how a round is split, how an evaluation runs.

The Dagster assets and the `agentomnia omniabench` commands both call these functions, so an
evaluation started from the UI and one started from a terminal write the same artifacts, the same
lineage and the same failure-table rows (which is what the self-evolution sensor watches).

Layout under the platform home:
- `benchmark/split.json` and `benchmark/tasks.parquet`: the held-out benchmark, built once from the
  base round's tasks and fixed afterwards (rebuilding it is an explicit choice);
- `artifacts/omniabench_split/<round>/training.parquet`: the round's tasks that training may use
  (benchmark items and tasks too close to one are not among them);
- `artifacts/omniabench_eval/<round>/<policy>.parquet` and `<policy>.report.json`: every scored
  trial and its report.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from agentomnia.catalog import EVALUATIONS, IMPORTED_TASKS, SPLIT, Catalog
from agentomnia.config import LLMSettings
from agentomnia.embeddings import Embedder
from agentomnia.lineage import Edge, LineageStore, lineage_row
from agentomnia.llm import LLM
from agentomnia.omniabench.decoders import DecoderPool
from agentomnia.omniabench.failures import failures_of
from agentomnia.omniabench.metrics import EvalReport, report
from agentomnia.omniabench.models import BenchmarkSplit, DroppedCandidate, EvalResult
from agentomnia.omniabench.policies import make_policy
from agentomnia.omniabench.runner import evaluate
from agentomnia.omniabench.split import benchmark_item, exclude_near, hold_out
from agentomnia.omniabench.store import FailureStore
from agentomnia.records import content_hash
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.storage import Storage, load_records, save_records, write_parquet
from agentomnia.tasks.models import Task


class NoBenchmark(RuntimeError):
    """There is no benchmark yet: the base round's split has not been materialized."""

    def __str__(self) -> str:
        return (
            f"no OmniaBench split under {self.args[0]}; materialize `omniabench_split` for the base round "
            "first (`agentomnia run` does it)"
        )


def load_benchmark(store: Storage) -> tuple[BenchmarkSplit, list[Task]] | None:
    return Catalog(store).benchmark()


def require_benchmark(store: Storage) -> tuple[BenchmarkSplit, list[Task]]:
    found = load_benchmark(store)
    if found is None:
        raise NoBenchmark(store.root / "benchmark")
    return found


class NoImportedTasks(NoBenchmark):
    def __str__(self) -> str:
        return f"no imported tasks at {self.args[0]}; run `agentomnia import omniabench FILE...` for this round first"


def imported_split(store: Storage, round_key: str) -> tuple[BenchmarkSplit, list[Task]]:
    """Tasks `agentomnia import omniabench` filed under a round, posed as a benchmark of their own."""
    artifacts = store.round(round_key)
    if not artifacts.exists(IMPORTED_TASKS):
        raise NoImportedTasks(artifacts.location(IMPORTED_TASKS))
    tasks = artifacts.records(IMPORTED_TASKS, Task)
    split = BenchmarkSplit(items=tuple(benchmark_item(t) for t in tasks), thresholds={}).in_round(round_key)
    return split, tasks


def _save_benchmark(store: Storage, split: BenchmarkSplit, tasks: Sequence[Task]) -> Path:
    folder = Catalog(store).benchmark_dir
    folder.mkdir(parents=True, exist_ok=True)
    save_records(folder / "tasks.parquet", list(tasks), flat=["env_id", "kind", "query"])
    tmp = folder / "split.json.tmp"
    tmp.write_text(split.model_dump_json(indent=2))
    tmp.replace(folder / "split.json")  # the split file appears last: a reader never sees half a benchmark
    return folder


class SplitSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    fraction: float = 0.25
    max_items: int | None = None
    ngram_threshold: float = 0.6
    embedding_threshold: float = 0.92
    seed: int = 0
    max_per_cluster: int = 2  # items kept of a held-out near-duplicate cluster (the rest leave both sides)
    rebuild: bool = False  # replace an existing benchmark (results against the old one stop comparing)


class RoundSplit(BaseModel):
    """What splitting one round did."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    split: BenchmarkSplit
    created: bool  # this round built the benchmark (the base round, or a rebuild)
    training: list[Task]
    excluded: list[DroppedCandidate]
    benchmark_tasks: list[Task]


def split_round(
    store: Storage, round_key: str, tasks: Sequence[Task], embedder: Embedder, settings: SplitSettings
) -> RoundSplit:
    """Hold out the benchmark (when none exists, or on `rebuild`), else keep the round's training tasks
    away from it; record which tasks training may use."""
    existing = None if settings.rebuild else load_benchmark(store)
    if existing is None:
        split, training = hold_out(
            tasks, embedder, fraction=settings.fraction, max_items=settings.max_items,
            ngram_threshold=settings.ngram_threshold, embedding_threshold=settings.embedding_threshold,
            seed=settings.seed, max_per_cluster=settings.max_per_cluster,
        )  # fmt: skip
        split = split.in_round(round_key)
        held = set(split.task_ids)
        bench_tasks = [t for t in tasks if t.id in held]
        order = {tid: i for i, tid in enumerate(split.task_ids)}
        bench_tasks = sorted({t.id: t for t in bench_tasks}.values(), key=lambda t: order[t.id])
        _save_benchmark(store, split, bench_tasks)
        excluded: list[DroppedCandidate] = []
        created = True
    else:
        split, bench_tasks = existing
        training, excluded = exclude_near(tasks, bench_tasks, embedder, split.thresholds)
        created = False
    write_parquet(
        store.round(round_key).path(SPLIT, "training"),
        [{"task_id": t.id, "kind": t.kind, "env_id": t.env_id} for t in training],
        columns=["task_id", "kind", "env_id"],
    )
    write_parquet(
        store.round(round_key).path(SPLIT, "excluded"),
        [e.model_dump() for e in excluded],
        columns=["task_id", "reason", "nearest", "similarity"],
    )
    return RoundSplit(
        split=split, created=created, training=training, excluded=excluded, benchmark_tasks=bench_tasks
    )


def policy_slug(policy: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", policy).strip("_")[:80] or "policy"


_WHOLE_FILE_BYTES = 64 << 20  # files up to this size are hashed whole; larger ones by their size and ends


def _file_digest(path: Path) -> str:
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with path.open("rb") as f:
        if size <= _WHOLE_FILE_BYTES:
            digest.update(f.read())
        else:
            digest.update(f.read(1 << 20))
            f.seek(size - (1 << 20))
            digest.update(f.read())
    return digest.hexdigest()


# What a checkpoint answers with: its weights, config and tokenizer (not its training reports, which
# hold paths and timings).
_POLICY_FILES = ("*.safetensors", "pytorch_model*.bin", "config.json", "generation_config.json",
                 "tokenizer.json", "tokenizer_config.json", "chat_template.jinja")  # fmt: skip


def _fingerprint(spec: str) -> str:
    """What identifies the policy beyond its name: a checkpoint's weights, config and tokenizer, by
    content (the same weights trained in another home or at another time are the same policy;
    retrained ones are not)."""
    if spec.startswith("hf:"):
        folder = Path(spec[3:])
        files = sorted({p for pattern in _POLICY_FILES for p in folder.glob(pattern) if p.is_file()})
        return content_hash([(p.name, _file_digest(p)) for p in files])
    return ""


class EvaluationOutcome(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    eval_id: str
    policy: str
    round: str
    tasks: int
    trials: int
    results: list[EvalResult]
    report: EvalReport
    failures: int
    new_failures: int
    infra_errors: int
    seconds: float
    path: Path


def _served(policy: str, store: Storage, llm: LLM | None) -> dict[str, Any]:
    """How an `openai:` policy reaches its model: through the platform's response cache (a rerun
    replays its turns), and counted on the stage's ledger with the rest of what the stage asked; the
    stage's own handle where it serves that model."""
    if not policy.startswith("openai:"):
        return {}
    from agentomnia.llm import make_llm
    from agentomnia.llm.ledger import ledger_of

    model = policy.split(":", 1)[1]

    def client(settings: LLMSettings) -> LLM:
        if llm is not None and llm.model == model:
            return llm
        made = make_llm("llm", settings, store.llm_cache_path, ledger=ledger_of(llm))
        if made is None:  # llm mode always makes a handle
            raise ValueError(f"{policy}: no model handle could be made from {settings}")
        return made

    return {"llm_factory": client, "cache_path": store.llm_cache_path}


def trial_threads(policy: str, sandbox: Sandbox, decoders: DecoderPool | None = None) -> int:
    """Trials run side by side: one per sandbox worker; for a local checkpoint, one per decoder
    process, or one at a time when it decodes in this process (two trials on two threads of one
    process contend for the interpreter: 34 benchmark trials took 31.4 s on two threads and 22.7 s on
    one, 2 cores)."""
    if policy.startswith("hf:"):
        return decoders.size if decoders is not None else 1
    return max(1, sandbox.config.workers)


def run_evaluation(
    store: Storage,
    sandbox: Sandbox,
    lineage: LineageStore | None,
    *,
    policy: str,
    round_key: str,
    trials: int = 3,
    max_steps: int = 30,
    llm: LLM | None = None,
    embedder: Embedder | None = None,
    run_id: str | None = None,
    limit: int = 0,
    policy_options: Mapping[str, Any] | None = None,
    on_result: Callable[[EvalResult], None] | None = None,
    source: str = "benchmark",
    name: str | None = None,
    decoders: DecoderPool | None = None,
) -> EvaluationOutcome:
    """Evaluate `policy` (a spec, see `policies.make_policy`) on the benchmark with `trials` runs per
    task; store the results, the report, the failures (failure table + lineage). A local checkpoint
    decodes in `decoders`' processes, its trials side by side, when given."""
    split, tasks = imported_split(store, round_key) if source == "imported" else require_benchmark(store)
    if limit:
        tasks = tasks[:limit]
    bundles = Catalog(store).bundles(t.env_id for t in tasks)
    made, factory = make_policy(
        policy,
        embedder=embedder,
        sandbox=sandbox,
        decoders=decoders,
        **{**_served(policy, store, llm), **dict(policy_options or {})},
    )
    name = name or made  # a caller may name the policy apart from where it lives (`checkpoint:rl`)
    eval_id = "ev-" + content_hash(
        {"round": round_key, "policy": name, "benchmark": split.id, "trials": trials, "tasks": [t.id for t in tasks],
         "fingerprint": _fingerprint(policy), "max_steps": max_steps,
         # tokens per turn change what a policy can do: another setting is another evaluation
         **({"options": dict(policy_options)} if policy_options else {})}
    )  # fmt: skip
    failures_store = FailureStore(store.lineage_path)
    failures_store.start(eval_id, round_key, name, split.id, len(tasks), trials)
    items = {i.task_id: i for i in split.items}
    started = time.perf_counter()
    results = evaluate(
        tasks, items, bundles, sandbox, factory, policy_name=name, eval_id=eval_id, trials=trials,
        max_steps=max_steps, llm=llm, workers=trial_threads(policy, sandbox, decoders), on_result=on_result,
        round_key=round_key,
    )  # fmt: skip
    results = [r.in_round(round_key) for r in results]
    by_id = {t.id: t for t in tasks}
    failures = [f.in_round(round_key) for f in failures_of(results, by_id, bundles)]
    new = failures_store.add_failures(failures)
    rep = report(results, k=trials)
    overall = rep.overall
    failures_store.finish(eval_id, overall.pass_at_1)
    slug = policy_slug(name)
    path = save_records(
        store.round(round_key).file(EVALUATIONS, f"{slug}.parquet"),
        results,
        flat=["task_id", "route", "policy", "trial", "score", "passed", "infra_error"],
    )
    store.round(round_key).file(EVALUATIONS, f"{slug}.report.json").write_text(
        json.dumps(
            {"eval_id": eval_id, "policy": name, "round": round_key, **rep.model_dump(mode="json")}, indent=1
        )
    )
    if lineage is not None:
        rows = [
            lineage_row(r, status="ok" if r.passed else ("error" if r.infra_error else "failed"),
                        reason=r.infra_error, run_id=run_id, location=str(path),
                        meta={"policy": name, "trial": r.trial, "score": r.score, "eval_id": eval_id})
            for r in results
        ]  # fmt: skip
        rows += [
            lineage_row(f, status="ok", run_id=run_id, meta={"tags": list(f.tags), "eval_id": eval_id})
            for f in failures
        ]
        edges = [Edge(child=r.id, parent=r.task_id, relation="evaluates") for r in results]
        edges += [Edge(child=f.id, parent=f.result_id, relation="failure_of") for f in failures]
        lineage.record(rows, edges)
    return EvaluationOutcome(
        eval_id=eval_id, policy=name, round=round_key, tasks=len(tasks), trials=trials, results=results,
        report=rep, failures=len(failures), new_failures=new,
        infra_errors=sum(1 for r in results if r.infra_error), seconds=time.perf_counter() - started, path=path,
    )  # fmt: skip


def load_results(store: Storage, round_key: str, policy: str | None = None) -> dict[str, list[EvalResult]]:
    """Stored results of a round, by policy name (all policies, or the one named)."""
    folder = store.artifacts_root / EVALUATIONS.name / round_key
    out: dict[str, list[EvalResult]] = {}
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.parquet")):
        results = load_records(path, EvalResult)
        if results and (policy is None or results[0].policy == policy or path.stem == policy_slug(policy)):
            out[results[0].policy] = results
    return out
