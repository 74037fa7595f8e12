"""The RL dataset: tasks worth learning from by reward, at a spread of difficulty (paper §5.2.1).

Filters, in order: prompt-level dedup (word 3-gram Jaccard, then embedding cosine), a minimum
prompt length, rubric validation (items that are ambiguous, non-atomic or in conflict with another
item are dropped; a task left with no checkable item is dropped), and a golden trajectory (a verified
one) must exist. Difficulty is pass@K of a given policy: K rollouts, anomalous (crashed) and
truncated (budget, invalid-call) runs are discarded, and tasks the policy solves more than 80% of
the time are too easy to teach anything. Items are sampled uniformly across difficulty levels (each
level keeps at most an equal share of the candidates, or `per_level`), and the overlap with the SFT
set is held to at most 20% (the report says whether it reached 10%).

Rows carry exactly `prompt` (messages up to the first user turn), `task` (Task JSON), `bundle_dir`
and `golden` (the golden trajectory's messages after the prompt, arguments as dicts), the columns
the GRPO trainer reads. Per-item difficulty goes to `items.json` beside the dataset.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from agentomnia.embeddings import Embedder
from agentomnia.llm.protocol import LLM
from agentomnia.records import content_hash
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.grading import Outcome, grade
from agentomnia.tasks.models import Check, ReferenceCall, RubricItem, Task
from agentomnia.trajectories.agents import Agent, LLMAgent, PolicyFactory, noisy_policy
from agentomnia.trajectories.messages import first_user_index
from agentomnia.trajectories.models import Trajectory
from agentomnia.trajectories.quality import sandbox_verifier
from agentomnia.trajectories.rollout import reference_plan, rollout
from agentomnia.trajectories.sft import align_context
from agentomnia.trajectories.users import make_user

LEVELS = ("hard", "medium", "easy")  # pass@K = 0, (0, 0.4], (0.4, max]
_WORD = re.compile(r"\w+")
_VAGUE = re.compile(
    r"\b(appropriate(ly)?|properly|reasonabl[ey]|good|correctly handles|as needed|etc)\b", re.IGNORECASE
)


def llm_policy(llm: LLM, temperature: float = 0.7, max_tokens: int | None = None) -> PolicyFactory:
    """pass@K with a served model: sampled at `temperature`, no guidance. Attempt i of a task sends
    its own sampling seed, so the K attempts are K samples (and not one cached answer K times), and a
    rerun replays each from the cache."""

    def make(task: Task, plan: Sequence[ReferenceCall], bundle: Bundle, attempt: int) -> Agent:
        seed = int(content_hash([task.id, attempt], 8), 16) % 2**31
        return LLMAgent(llm, temperature=temperature, max_tokens=max_tokens, seed=seed, purpose="policy_turn")

    return make


# ------------------------------------------------------------------ dedup


def _shingles(text: str, n: int) -> set[tuple[str, ...]]:
    tokens = [t.casefold() for t in _WORD.findall(text)]
    return {tuple(tokens[i : i + n]) for i in range(max(1, len(tokens) - n + 1))}


def ngram_duplicates(texts: Sequence[str], *, n: int = 3, threshold: float = 0.8) -> dict[int, int]:
    """index -> the earlier index it duplicates (word n-gram Jaccard >= threshold)."""
    shingles = [_shingles(t, n) for t in texts]
    out: dict[int, int] = {}
    for i in range(len(texts)):
        for j in range(i):
            if j in out:
                continue
            union = shingles[i] | shingles[j]
            if union and len(shingles[i] & shingles[j]) / len(union) >= threshold:
                out[i] = j
                break
    return out


def embedding_duplicates(
    texts: Sequence[str], embedder: Embedder, *, threshold: float = 0.95
) -> dict[int, int]:
    """index -> the earlier index it duplicates by meaning (cosine >= threshold)."""
    if len(texts) < 2:
        return {}
    vectors = np.asarray(embedder.embed(list(texts)), dtype=np.float32)
    sims = vectors @ vectors.T
    out: dict[int, int] = {}
    for i in range(1, len(texts)):
        earlier = [j for j in range(i) if j not in out and sims[i, j] >= threshold]
        if earlier:
            out[i] = earlier[0]
    return out


# ------------------------------------------------------------------ rubric validation


def _target(check: Check) -> tuple[Any, ...]:
    if check.kind in ("field_equals", "field_changed", "field_unchanged"):
        return ("field", check.table, check.key, check.field)
    if check.kind in ("answer_equals", "answer_contains"):
        return ("answer", check.field)
    if check.kind in ("called", "not_called"):
        return ("call", check.tool, json.dumps(check.args, sort_keys=True, default=str))
    if check.kind in ("record_exists", "record_absent", "count_equals"):
        return ("records", check.table, json.dumps(check.match, sort_keys=True, default=str))
    return ("other", check.kind)


def _conflict(a: Check, b: Check) -> bool:
    if _target(a) != _target(b):
        return False
    kinds = {a.kind, b.kind}
    if kinds in (
        {"field_changed", "field_unchanged"},
        {"called", "not_called"},
        {"record_exists", "record_absent"},
    ):
        return True
    if kinds == {"field_equals", "field_unchanged"}:
        return False  # consistent only if the value is unchanged; the oracle check decides that
    same_kind = a.kind == b.kind and a.kind in ("field_equals", "answer_equals", "count_equals")
    return same_kind and json.dumps(a.value, sort_keys=True, default=str) != json.dumps(
        b.value, sort_keys=True, default=str
    )


def rubric_problems(rubric: Sequence[RubricItem]) -> dict[str, str]:
    """item id -> why it must go: ambiguous (no check and vague or too short), non-atomic (one item
    that asks for several things), or conflicting with another item."""
    out: dict[str, str] = {}
    for item in rubric:
        words = _WORD.findall(item.text)
        if item.check is None and (len(words) < 4 or _VAGUE.search(item.text)):
            out[item.id] = "ambiguous: no deterministic check and vague wording"
        elif item.check is None and (
            item.text.count(";") or re.search(r"\band also\b|\bas well as\b", item.text)
        ):
            out[item.id] = "non-atomic: asks for several things in one item"
    checked = [i for i in rubric if i.check is not None]
    for x, a in enumerate(checked):
        for b in checked[x + 1 :]:
            if a.check is not None and b.check is not None and _conflict(a.check, b.check):
                out.setdefault(a.id, f"conflicts with {b.id}")
                out.setdefault(b.id, f"conflicts with {a.id}")
    return out


def validated_task(task: Task) -> tuple[Task | None, dict[str, str]]:
    """The task with bad rubric items removed (a new id), or None when nothing checkable is left."""
    problems = rubric_problems(task.rubric)
    if not problems:
        return task, {}
    kept = [i for i in task.rubric if i.id not in problems]
    if not any(i.check is not None for i in kept):
        return None, problems
    data = task.model_dump(exclude={"id", "rubric"})
    return Task.model_validate({**data, "rubric": [i.model_dump() for i in kept]}), problems


# ------------------------------------------------------------------ difficulty


class Difficulty(BaseModel):
    task_id: str
    policy: str
    k: int
    passes: int
    valid: int
    discarded: int
    rate: float | None  # None when no valid run is left

    @property
    def level(self) -> str | None:
        if self.rate is None:
            return None
        if self.rate == 0:
            return "hard"
        return "medium" if self.rate <= 0.4 else "easy"


def pass_at_k(
    task: Task,
    bundle: Bundle,
    sandbox: Sandbox,
    policy: PolicyFactory,
    k: int,
    *,
    max_steps: int = 30,
    keep: list[Any] | None = None,
) -> Difficulty:
    """The policy's pass rate on `task` over `k` attempts; `keep` collects each graded attempt as a
    `rewards.ScoredRollout` (the policy's own successes and failures, which the rollout analysis reads)."""
    from agentomnia.rewards.analysis import ScoredRollout

    plan = reference_plan(task, bundle, sandbox)
    verifier = sandbox_verifier(sandbox)
    passes = valid = discarded = 0
    name = ""
    for attempt in range(k):
        agent = policy(task, plan, bundle, attempt)
        name = agent.name
        result = rollout(task, bundle, sandbox, agent, user=make_user(task), max_steps=max_steps)
        if result.anomalous or result.truncated:
            discarded += 1
            continue
        valid += 1
        calls = [(s.tool, dict(s.arguments)) for s in result.steps if s.valid]
        score = grade(
            task,
            Outcome(final_state=result.final_state, answer=result.answer, calls=calls),
            verifier=verifier,
        )
        passes += int(score.passed)
        if keep is not None:
            keep.append(ScoredRollout(
                task=task, messages=tuple(dict(m) for m in result.messages), tools=tuple(dict(t) for t in bundle.tools),
                read_tools=tuple(sorted(bundle.read_tools)), stop_reason=result.stop_reason,
                step_hashes=tuple(s.state_hash for s in result.steps), initial_hash=result.initial_hash,
                reward=float(score.passed), succeeded=score.passed,  # binary, as GRPO's task reward
                items=tuple(score.items),
            ))  # fmt: skip
    return Difficulty(
        task_id=task.id,
        policy=name,
        k=k,
        passes=passes,
        valid=valid,
        discarded=discarded,
        rate=passes / valid if valid else None,
    )


# ------------------------------------------------------------------ splitting and sampling


ROLLOUTS_FILE = "rollouts.jsonl"  # the pass@K attempts, graded (rewards.ScoredRollout per line)


def load_attempts(folder: str | Path) -> list[Any]:
    """The graded pass@K attempts `build_rl_dataset` kept in `folder` (empty when there are none)."""
    from agentomnia.rewards.analysis import ScoredRollout

    path = Path(folder) / ROLLOUTS_FILE
    if not path.is_file():
        return []
    return [
        ScoredRollout.model_validate_json(line)
        for line in path.read_text(encoding="utf-8").splitlines()
        if line
    ]


def partition_tasks(
    task_ids: Iterable[str], *, rl_share: float = 0.5, overlap: float = 0.15, seed: int = 0
) -> tuple[list[str], list[str]]:
    """(SFT ids, RL candidate ids): a deterministic split where `overlap` of the RL candidates also
    stay in SFT, so the RL set meets the 10-20% overlap the recipe asks for."""
    ranked = sorted(set(task_ids), key=lambda t: content_hash([seed, t]))
    n_rl = round(len(ranked) * rl_share)
    rl = ranked[:n_rl]
    shared = rl[: round(len(rl) * overlap)]
    sft = sorted(set(ranked[n_rl:]) | set(shared))
    return sft, sorted(rl)


def round_split(artifacts: Any) -> tuple[list[str], list[str]]:
    """(SFT ids, RL candidate ids) of a round: `partition_tasks` over the tasks its verified
    trajectories solve (`artifacts`: the round's stored artifacts)."""
    return partition_tasks([t.task_id for t in artifacts.verified_trajectories()])


class RLItem(BaseModel):
    task_id: str
    source_task_id: str
    golden_id: str
    level: str
    pass_rate: float
    in_sft: bool


class RLDatasetReport(BaseModel):
    rows: int
    candidates: int
    dropped: dict[str, int] = Field(default_factory=dict)
    rubric_items_dropped: int = 0
    levels: dict[str, int] = Field(default_factory=dict)
    overlap: float = 0.0
    overlap_in_range: bool = False
    policy: str = ""
    k: int = 0
    items: list[RLItem] = Field(default_factory=list)
    hf_path: str = ""
    jsonl_path: str = ""


def _golden(trajectories: Sequence[Trajectory]) -> Trajectory | None:
    verified = [t for t in trajectories if t.verified]
    return min(verified, key=lambda t: (len(t.steps), t.id)) if verified else None


def _enforce_overlap(items: list[RLItem], low: float, high: float, seed: int) -> list[RLItem]:
    shared = sorted((i for i in items if i.in_sft), key=lambda i: content_hash([seed, i.task_id]))
    fresh = [i for i in items if not i.in_sft]
    if not fresh:
        return items
    # keep the largest number of shared items that leaves the overlap at or below `high`
    keep = len(shared)
    while keep > 0 and keep / (keep + len(fresh)) > high:
        keep -= 1
    return fresh + shared[:keep]


def build_rl_dataset(
    tasks: Iterable[Task],
    trajectories: Iterable[Trajectory],
    out_dir: str | Path,
    *,
    sandbox: Sandbox,
    bundle_dirs: Mapping[str, str | Path],
    policy: PolicyFactory | None = None,
    k: int = 4,
    embedder: Embedder | None = None,
    sft_task_ids: Iterable[str] = (),
    min_query_words: int = 5,
    max_pass_rate: float = 0.8,
    overlap: tuple[float, float] = (0.1, 0.2),
    per_level: int | None = None,
    ngram_threshold: float = 0.8,
    embedding_threshold: float = 0.95,
    seed: int = 0,
    max_steps: int = 30,
) -> RLDatasetReport:
    """Write `out_dir/hf`, `out_dir/rl.jsonl` and `out_dir/items.json`. The default policy is the
    noisy offline teacher (no guidance, 25% slip rate per planned step); the rl_dataset asset can pass
    the round's SFT checkpoint, sampled (`agentomnia.omniabench.hf.sampling_policy`), as §5.2.1 has it.
    `max_steps` bounds each pass@K rollout."""
    from datasets import Dataset

    policy = policy or noisy_policy(0.25)
    task_list = list(tasks)
    by_task: dict[str, list[Trajectory]] = defaultdict(list)
    for t in trajectories:
        by_task[t.task_id].append(t)
    dropped: Counter[str] = Counter()
    queries = [t.query for t in task_list]
    dupes = ngram_duplicates(queries, threshold=ngram_threshold)
    if embedder is not None:
        rest = [i for i in range(len(task_list)) if i not in dupes]
        for i, _j in embedding_duplicates(
            [queries[i] for i in rest], embedder, threshold=embedding_threshold
        ).items():
            dupes[rest[i]] = -1
    sft_ids = set(sft_task_ids)
    bundles: dict[str, Bundle] = {}
    rubric_dropped = 0
    candidates: list[tuple[Task, Task, Trajectory, Difficulty]] = []
    attempts: list[Any] = []  # every graded pass@K attempt, for the rollout analysis
    for index, task in enumerate(task_list):
        if index in dupes:
            dropped["duplicate prompt"] += 1
            continue
        if len(_WORD.findall(task.query)) < min_query_words:
            dropped["prompt too short"] += 1
            continue
        checked, problems = validated_task(task)
        rubric_dropped += len(problems)
        if checked is None:
            dropped["no valid rubric item left"] += 1
            continue
        golden = _golden(by_task.get(task.id, []))
        if golden is None:
            dropped["no golden trajectory"] += 1
            continue
        folder = bundle_dirs.get(task.env_id)
        if folder is None:
            dropped["no bundle"] += 1
            continue
        if task.env_id not in bundles:
            bundles[task.env_id] = Bundle.load(Path(folder))
        difficulty = pass_at_k(
            checked, bundles[task.env_id], sandbox, policy, k, max_steps=max_steps, keep=attempts
        )
        if difficulty.rate is None:
            dropped["every pass@K run anomalous or truncated"] += 1
            continue
        if difficulty.rate > max_pass_rate:
            dropped["too easy (pass@K above the cap)"] += 1
            continue
        candidates.append((task, checked, golden, difficulty))
    levels: dict[str, list[tuple[Task, Task, Trajectory, Difficulty]]] = defaultdict(list)
    for c in candidates:
        levels[c[3].level or "hard"].append(c)
    # Each level gets at most an equal share of the candidates: small levels keep everything, large
    # ones are cut down to the share, so no difficulty dominates and little data is thrown away.
    quota = per_level if per_level is not None else -(-len(candidates) // max(1, len(levels)))
    chosen: list[tuple[Task, Task, Trajectory, Difficulty]] = []
    for level in LEVELS:
        ranked = sorted(levels.get(level, []), key=lambda c: content_hash([seed, c[0].id]))
        chosen += ranked[:quota]
        dropped["level sampling"] += max(0, len(ranked) - quota)
    items = [
        RLItem(task_id=checked.id, source_task_id=task.id, golden_id=golden.id, level=d.level or "hard",
               pass_rate=d.rate or 0.0, in_sft=task.id in sft_ids)
        for task, checked, golden, d in chosen
    ]  # fmt: skip
    kept = _enforce_overlap(items, overlap[0], overlap[1], seed)
    dropped["overlap with SFT"] += len(items) - len(kept)
    keep_ids = {i.task_id for i in kept}
    rows: list[dict[str, Any]] = []
    for task, checked, golden, _ in chosen:
        if checked.id not in keep_ids:
            continue
        messages = align_context(golden.messages)
        cut = first_user_index(messages) + 1
        rows.append({
            "prompt": messages[:cut],
            "task": checked.model_dump_json(),
            "bundle_dir": str(Path(bundle_dirs[task.env_id])),
            "golden": messages[cut:],
        })  # fmt: skip
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    hf_path, jsonl_path = out / "hf", out / "rl.jsonl"
    if rows:
        Dataset.from_list(rows, on_mixed_types="use_json").save_to_disk(str(hf_path))
    jsonl_path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    (out / "items.json").write_text(json.dumps([i.model_dump() for i in kept], indent=1), encoding="utf-8")
    (out / ROLLOUTS_FILE).write_text("".join(a.model_dump_json() + "\n" for a in attempts), encoding="utf-8")
    shared = sum(1 for i in kept if i.in_sft)
    ratio = shared / len(kept) if kept else 0.0
    return RLDatasetReport(
        rows=len(rows), candidates=len(candidates), dropped={k_: v for k_, v in dropped.items() if v},
        rubric_items_dropped=rubric_dropped, levels=dict(Counter(i.level for i in kept)), overlap=round(ratio, 4),
        overlap_in_range=overlap[0] <= ratio <= overlap[1], k=k, items=kept,
        policy=next((c[3].policy for c in candidates), ""),
        hf_path=str(hf_path) if rows else "", jsonl_path=str(jsonl_path),
    )  # fmt: skip
