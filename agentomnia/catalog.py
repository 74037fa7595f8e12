"""The round artifacts, declared once, and typed readers over them.

Every stage writes its outputs under `$AGENTOMNIA_HOME/artifacts/<artifact>/<round>/<file>`. Each
artifact is declared here exactly once (its name, the files it holds and what they contain), and
everything that reads a round — the Dagster assets, the CLI, the report, interop, the sensors and the
scale runner — goes through `Catalog(storage).round(key)`. No artifact name is spelled anywhere else,
so renaming a stage's output is one edit, and a reader that asks for something no stage writes fails
at import time instead of finding nothing at run time.

Readers return records in the order their writer stored them (no reader re-sorts): the benchmark
split, the SFT budgets and every id downstream depend on that order, so a caller that wants another
order sorts for itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentomnia.storage import Storage, load_records, read_parquet

if TYPE_CHECKING:
    from agentomnia.directives import SynthesisDirectives
    from agentomnia.envs.spec import EnvSpec
    from agentomnia.evolution.diagnosis import DiagnosisReport
    from agentomnia.evolution.prd import PRD
    from agentomnia.omniabench.models import BenchmarkSplit
    from agentomnia.sandbox.bundle import Bundle
    from agentomnia.seeds.inference import EnvCandidate
    from agentomnia.seeds.models import Seed
    from agentomnia.tasks.models import Task
    from agentomnia.trajectories.models import Trajectory

DATA = "data.parquet"


@dataclass(frozen=True)
class Artifact:
    """One stage output: a folder per round holding `files` (role -> file name)."""

    name: str
    description: str
    files: dict[str, str] = field(default_factory=lambda: {"data": DATA})

    def file(self, role: str) -> str:
        try:
            return self.files[role]
        except KeyError:
            known = ", ".join(sorted(self.files))
            raise KeyError(f"artifact {self.name!r} declares no file {role!r} (it has: {known})") from None


def _artifact(name: str, description: str, **files: str) -> Artifact:
    return Artifact(name, description, {"data": DATA, **files})


# -- the declarations ---------------------------------------------------------------------------
RAW_SEEDS = _artifact("raw_seeds", "parsed seeds (Seed) and unreadable inputs", rejected="rejected.parquet")
ENV_CANDIDATES = _artifact("environment_candidates", "one inferred EnvCandidate per seed")
SELECTED_CANDIDATES = _artifact(
    "selected_environment_seeds",
    "candidates kept by selection, and the rule that refused each other one",
    rejected="rejected.parquet",
)
STATE_SPECS = _artifact("state_specs", "state spaces (StagedSpec: EnvSpec without tools + report)")
TOOLSETS = _artifact(
    "toolsets",
    "specs with their toolsets (StagedSpec) and the normalization table",
    normalization="normalization.parquet",
)
ENVIRONMENTS = _artifact(
    "environments",
    "index of verified bundles (one row per environment), their specs and verification",
    specs="specs.parquet",
    verification="verification.parquet",
)
ENVIRONMENT_STATS = _artifact("environment_stats", "Table-5 statistics", histogram="histogram.png")
DAG_TASKS = _artifact("dag_tasks", "DAG-Standard and DAG-Challenge tasks", rejected="rejected.parquet")
PROGRAM_TASKS = _artifact("program_tasks", "program-based tasks", rejected="rejected.parquet")
SOLVER_TASKS = _artifact(
    "solver_tasks", "solver-anchored and solver-guided tasks", rejected="rejected.parquet"
)
SPLIT = Artifact(
    "omniabench_split",
    "the round's tasks that training may use, and those kept away from the benchmark",
    {"training": "training.parquet", "excluded": "excluded.parquet"},
)
EVALUATIONS = Artifact(
    "omniabench_eval", "per policy: scored trials (<policy>.parquet) and <policy>.report.json", {}
)
IMPORTED_TASKS = _artifact(
    "omniabench_import", "tasks imported from OmniaBench items", rejected="rejected.parquet"
)
TRAJECTORIES = _artifact("trajectories", "every rollout of the round", ablation="guidance_ablation.png")
VERIFIED_TRAJECTORIES = _artifact("verified_trajectories", "rollouts kept for training")
REWARD_MODEL_REPORT = _artifact(
    "reward_model_report", "judge calibration", report="report.json", plot="calibration.png"
)
ROLLOUT_ANALYSIS = _artifact(
    "rollout_analysis",
    "behavioural indicators of successful vs failed rollouts, and the auxiliary weights RL adopts",
    report="report.json", weights="weights.json", markdown="analysis.md",
)  # fmt: skip
LEARNING = _artifact(
    "agent_learning",
    "what the round's checkpoints learned: next-action figures on the benchmark's reference steps",
    report="report.json", markdown="learning.md",
)  # fmt: skip
REWARD_AUDIT = _artifact(
    "reward_audit",
    "high-reward rollouts whose evidence does not support the reward, classified",
    report="report.json", markdown="audit.md", permissive="permissive.parquet", rejected="rejected.parquet",
)  # fmt: skip
DIAGNOSIS = Artifact("failure_diagnosis", "the diagnosis report", {"report": "report.json"})
PRDS = _artifact(
    "prds", "PRD records, their Markdown, and the round's directives", directives="directives.json"
)
ALIGNMENT = Artifact(
    "prd_alignment", "KL of the round's data against the failures", {"alignment": "alignment.json"}
)
TAXONOMY = Artifact("taxonomy", "taxonomy plots (round 'static')", {"map": "embedding_map.png"})
SCALE = Artifact("scale", "the paper-scale corpus: shards, lineage segments, merged Parquet", {})

# The task artifacts in the order every reader concatenates them (the split depends on it).
TASK_ARTIFACTS: tuple[Artifact, ...] = (DAG_TASKS, PROGRAM_TASKS, SOLVER_TASKS)
ARTIFACTS: dict[str, Artifact] = {
    a.name: a
    for a in (
        RAW_SEEDS, ENV_CANDIDATES, SELECTED_CANDIDATES, STATE_SPECS, TOOLSETS, ENVIRONMENTS,
        ENVIRONMENT_STATS, DAG_TASKS, PROGRAM_TASKS, SOLVER_TASKS, SPLIT, EVALUATIONS, IMPORTED_TASKS,
        TRAJECTORIES, VERIFIED_TRAJECTORIES, REWARD_MODEL_REPORT, ROLLOUT_ANALYSIS, REWARD_AUDIT, LEARNING, DIAGNOSIS, PRDS, ALIGNMENT, TAXONOMY, SCALE,
    )
}  # fmt: skip
STATIC_ROUND = "static"

# Training outputs live beside the artifacts: `datasets/<kind>/<round>/` and `checkpoints/<kind>/<round>/`.
SFT, RL = "sft", "rl"
START = "start"  # checkpoints/start/<round>: the untrained model a first round's SFT began from
ORIGIN = "origin.json"  # in a checkpoint folder: where its training started and on what
# Evaluation policy specs that name a round's own trained agent (evaluated as hf:<folder>).
CHECKPOINT, CHECKPOINT_RL, CHECKPOINT_SFT = "checkpoint", "checkpoint:rl", "checkpoint:sft"
SFT_DATASET, RL_DATASET = "sft_dataset", "rl_dataset"  # their Dagster asset keys
RL_CHECKPOINT = "rl_checkpoint"


class MissingArtifact(FileNotFoundError):
    """A round artifact a reader needs has not been written: say which stage writes it."""

    def __init__(self, artifact: Artifact, round_key: str, path: Path) -> None:
        self.artifact, self.round_key, self.path = artifact, round_key, path
        super().__init__(
            f"{path} does not exist: materialize `{artifact.name}` for round {round_key} first "
            f"(`agentomnia run`, or the asset in the Dagster UI)"
        )


class Catalog:
    """The home's artifacts: per-round folders, the environment bundles and the held-out benchmark."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    def round(self, key: str) -> RoundArtifacts:
        return RoundArtifacts(self.storage, key)

    def rounds(self) -> list[str]:
        """Rounds that have a folder for any declared artifact (not the static one), sorted by name."""
        return sorted({key for a in ARTIFACTS.values() for key in self.rounds_with(a)} - {STATIC_ROUND})

    def rounds_with(self, artifact: Artifact) -> list[str]:
        """Rounds that have a folder for `artifact`, sorted by name."""
        folder = self.storage.artifacts_root / artifact.name
        return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []

    # -- environment bundles, found one way ------------------------------------------------------
    def bundle_dir(self, env_id: str) -> Path:
        return self.storage.env_dir(env_id)

    def bundle(self, env_id: str) -> Bundle:
        from agentomnia.sandbox.bundle import Bundle

        return Bundle.load(self.bundle_dir(env_id))

    def bundles(self, env_ids: Iterable[str]) -> dict[str, Bundle]:
        """Bundles by env id, in id order; a missing or broken bundle raises."""
        return {env_id: self.bundle(env_id) for env_id in sorted(set(env_ids))}

    def bundles_lenient(self, env_ids: Iterable[str]) -> tuple[dict[str, Bundle], dict[str, str]]:
        """(bundles by env id, reason by env id for each one that could not be loaded)."""
        bundles: dict[str, Bundle] = {}
        missing: dict[str, str] = {}
        for env_id in sorted(set(env_ids)):
            try:
                bundles[env_id] = self.bundle(env_id)
            except (FileNotFoundError, ValueError) as exc:
                missing[env_id] = f"environment bundle {env_id} cannot be loaded: {exc}"
        return bundles, missing

    # -- the held-out benchmark ----------------------------------------------------------------
    @property
    def benchmark_dir(self) -> Path:
        return self.storage.root / "benchmark"

    def benchmark(self) -> tuple[BenchmarkSplit, list[Task]] | None:
        """The benchmark split and its tasks in split order, or None before the base round's split."""
        from agentomnia.omniabench.models import BenchmarkSplit
        from agentomnia.tasks.models import Task

        split_path, tasks_path = self.benchmark_split_path, self.benchmark_dir / "tasks.parquet"
        if not split_path.exists() or not tasks_path.exists():
            return None
        split = BenchmarkSplit.model_validate_json(split_path.read_text())
        order = {tid: i for i, tid in enumerate(split.task_ids)}
        tasks = [t for t in load_records(tasks_path, Task) if t.id in order]
        return split, sorted(tasks, key=lambda t: order[t.id])

    @property
    def benchmark_split_path(self) -> Path:
        return self.benchmark_dir / "split.json"

    def benchmark_split(self) -> BenchmarkSplit | None:
        """The benchmark split alone (no tasks read), or None before the base round's split."""
        from agentomnia.omniabench.models import BenchmarkSplit

        path = self.benchmark_split_path
        return BenchmarkSplit.model_validate_json(path.read_text(encoding="utf-8")) if path.exists() else None


class RoundArtifacts:
    """Typed readers (and the paths writers use) for one round."""

    def __init__(self, storage: Storage, key: str) -> None:
        self.storage, self.key = storage, key

    # -- where things are ---------------------------------------------------------------------------
    # Writers use `dir`, `path` and `file`, which create the round's folder. Every reader below goes
    # through `folder`/`location`, which create nothing, so reading a home leaves it as it was.
    def folder(self, artifact: Artifact) -> Path:
        """The round's folder of `artifact`; creates nothing."""
        return self.storage.artifacts_root / artifact.name / self.key

    def location(self, artifact: Artifact, role: str = "data") -> Path:
        """Where `role` of `artifact` is, or would be; creates nothing."""
        return self.folder(artifact) / artifact.file(role)

    def dir(self, artifact: Artifact) -> Path:
        """The round's folder of `artifact`, created: for writers."""
        return self.storage.artifact_dir(artifact.name, self.key)

    def path(self, artifact: Artifact, role: str = "data") -> Path:
        """Where a writer puts `role` of `artifact` (its folder created)."""
        return self.storage.artifact(artifact.name, self.key, artifact.file(role))

    def file(self, artifact: Artifact, name: str) -> Path:
        """A file the artifact names per item (an evaluation's `<policy>.parquet`), folder created."""
        return self.storage.artifact(artifact.name, self.key, name)

    def exists(self, artifact: Artifact, role: str = "data") -> bool:
        return self.location(artifact, role).exists()

    def need(self, artifact: Artifact, role: str = "data") -> Path:
        path = self.location(artifact, role)
        if not path.exists():
            raise MissingArtifact(artifact, self.key, path)
        return path

    def files(self, artifact: Artifact, pattern: str) -> list[Path]:
        """Files in the round's folder of `artifact` matching `pattern`, sorted; none when it is absent."""
        folder = self.folder(artifact)
        return sorted(folder.glob(pattern)) if folder.is_dir() else []

    def rows(
        self, artifact: Artifact, role: str = "data", json_columns: Sequence[str] = ()
    ) -> list[dict[str, Any]]:
        return read_parquet(self.need(artifact, role), json_columns=json_columns)

    def row_count(self, artifact: Artifact, role: str = "data") -> int | None:
        """Rows of a Parquet file of `artifact`, from its footer alone; None when it is absent."""
        import pyarrow.parquet as pq

        path = self.location(artifact, role)
        return int(pq.read_metadata(path).num_rows) if path.exists() else None

    def records(self, artifact: Artifact, cls: type[Any], role: str = "data") -> list[Any]:
        return load_records(self.need(artifact, role), cls)

    def json(self, artifact: Artifact, role: str) -> Any | None:
        path = self.location(artifact, role)
        return json.loads(path.read_text()) if path.exists() else None

    # -- seeds and candidates --------------------------------------------------------------------
    def seeds(self) -> list[Seed]:
        from agentomnia.seeds.models import Seed

        return self.records(RAW_SEEDS, Seed)

    def candidates(self) -> list[EnvCandidate]:
        from agentomnia.seeds.inference import EnvCandidate

        return self.records(ENV_CANDIDATES, EnvCandidate)

    def selected(self) -> list[EnvCandidate]:
        from agentomnia.seeds.inference import EnvCandidate

        return self.records(SELECTED_CANDIDATES, EnvCandidate)

    # -- environments ------------------------------------------------------------------------------
    def environments(self) -> list[dict[str, Any]]:
        """The environment index: one row per verified bundle (env_id, name, path, coordinate, sizes)."""
        return self.rows(ENVIRONMENTS)

    def env_specs(self) -> list[EnvSpec]:
        from agentomnia.envs.spec import EnvSpec

        return self.records(ENVIRONMENTS, EnvSpec, "specs")

    def verification(self) -> list[dict[str, Any]]:
        return self.rows(ENVIRONMENTS, "verification", json_columns=["levels"])

    # -- tasks -------------------------------------------------------------------------------------
    def tasks(self, artifacts: Iterable[Artifact] = TASK_ARTIFACTS) -> list[Task]:
        """Every task the round's task stages wrote, stage by stage in writer order (absent stages skipped)."""
        from agentomnia.tasks.models import Task

        tasks: list[Task] = []
        for artifact in artifacts:
            if self.exists(artifact):
                tasks += load_records(self.location(artifact), Task)
        return tasks

    def task_stages(self) -> list[Artifact]:
        return [a for a in TASK_ARTIFACTS if self.exists(a)]

    def training_task_ids(self) -> set[str] | None:
        """The task ids training may use, or None when the round has not been split."""
        if not self.exists(SPLIT, "training"):
            return None
        return {str(r["task_id"]) for r in read_parquet(self.location(SPLIT, "training"))}

    def training_tasks(self) -> list[Task]:
        """The round's tasks that training may see: never a benchmark item, nor one too close to it."""
        allowed = self.training_task_ids()
        if allowed is None:
            raise MissingArtifact(SPLIT, self.key, self.location(SPLIT, "training"))
        return [t for t in self.tasks() if t.id in allowed]

    # -- trajectories ------------------------------------------------------------------------------
    def trajectories(self) -> list[Trajectory]:
        from agentomnia.trajectories.models import Trajectory

        return self.records(TRAJECTORIES, Trajectory)

    def verified_trajectories(self) -> list[Trajectory]:
        from agentomnia.trajectories.models import Trajectory

        return self.records(VERIFIED_TRAJECTORIES, Trajectory)

    # -- evolution ---------------------------------------------------------------------------------
    def directives(self) -> SynthesisDirectives | None:
        """The directives the `prds` stage wrote for this round (None when it has not run or set none)."""
        from agentomnia.directives import SynthesisDirectives

        path = self.location(PRDS, "directives")
        if not path.exists():
            return None
        directives = SynthesisDirectives.model_validate_json(path.read_text())
        return None if directives.empty else directives

    def prds(self) -> list[PRD]:
        from agentomnia.evolution.prd import PRD

        return load_records(self.location(PRDS), PRD) if self.exists(PRDS) else []

    def diagnosis(self) -> DiagnosisReport | None:
        from agentomnia.evolution.diagnosis import DiagnosisReport

        path = self.location(DIAGNOSIS, "report")
        return DiagnosisReport.model_validate_json(path.read_text()) if path.exists() else None

    def alignment(self) -> dict[str, Any] | None:
        return self.json(ALIGNMENT, "alignment")  # type: ignore[no-any-return]

    def learning(self) -> dict[str, Any] | None:
        """The round's learning report (`agentomnia.omniabench.learning.LearningReport` as JSON)."""
        return self.json(LEARNING, "report")  # type: ignore[no-any-return]

    def reward_model_report(self) -> dict[str, Any] | None:
        return self.json(REWARD_MODEL_REPORT, "report")  # type: ignore[no-any-return]

    # -- training ----------------------------------------------------------------------------------
    def dataset_dir(self, kind: str) -> Path:
        """`kind` is SFT or RL: the dataset folder (an `hf/` dataset, JSONL and a report inside)."""
        return self.storage.dataset_dir(kind, self.key)

    def checkpoint_dir(self, kind: str) -> Path:
        return self.storage.checkpoint_dir(kind, self.key)

    def latest_checkpoint(self) -> Path | None:
        """The round's most trained checkpoint (RL, else SFT), or None when it trained none."""
        for kind in (RL, SFT):
            folder = self.checkpoint_dir(kind)
            if (folder / "config.json").exists():
                return folder
        return None

    def trained_checkpoint(self, spec: str) -> Path | None:
        """The folder a `checkpoint`, `checkpoint:rl` or `checkpoint:sft` policy spec names in this
        round, or None when that checkpoint was not trained."""
        if spec == CHECKPOINT:
            return self.latest_checkpoint()
        kind = {CHECKPOINT_RL: RL, CHECKPOINT_SFT: SFT}.get(spec)
        if kind is None:
            raise ValueError(
                f"unknown checkpoint spec {spec!r}; use {CHECKPOINT}, {CHECKPOINT_RL} or {CHECKPOINT_SFT}"
            )
        folder = self.checkpoint_dir(kind)
        return folder if (folder / "config.json").exists() else None

    def trained_policies(self) -> list[str]:
        """The policy names this round's checkpoints are evaluated under, most trained first: the
        specs themselves, so a name is the same in every home (the folder is in the results' lineage)."""
        return [CHECKPOINT_RL, CHECKPOINT_SFT]

    def evaluation_files(self) -> list[Path]:
        """Each evaluated policy's `<policy>.report.json` in this round, sorted by name."""
        return self.files(EVALUATIONS, "*.report.json")
