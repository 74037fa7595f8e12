"""Online agentic RL: GRPO over sandboxed environments with the rollback curriculum (RCRL).

Built on TRL's GRPOTrainer with `environment_factory`: every RL task row names its environment bundle,
each bundle becomes a tool environment class (see `trainers.environment`), and rollouts call the real
environment in the sandbox. Settings follow the paper: no KL term (beta = 0, no reference model),
asymmetric clipping eps_low = 0.2 / eps_high = 0.28, DAPO token-level loss, configurable group size.

Rewards: the task reward is the router's binary verdict (`agentomnia.rewards.score_task`) on the
final sandbox state and answer; auxiliary terms reward well-formed tool calls and penalise repeated
identical calls. Dynamic filtering: a rollout broken by an environment fault, or one that cannot be
scored, returns None from every reward function, which TRL excludes from the group baseline and gives
zero advantage; a truncated rollout is dropped the same way when it is well formed and gets reward -1
when it is not.

RCRL: `RCRLTrainer` rewrites each prompt with the golden prefix the curriculum currently assigns,
retries all-zero groups with a longer prefix, applies Eq. 10 at the end of each round, and adds
lambda_CE * cross-entropy on the golden prefix's assistant tokens to lambda_RL * the GRPO loss.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from agentomnia.logfile import quiet_trainer
from agentomnia.rewards import (
    AuxiliaryWeights,
    ProcessSettings,
    RewardStream,
    RewardTiming,
    Transcript,
    auxiliary_terms,
    check_format,
    extract_answer,
    latency_summary,
    redundancy_penalty,
    score_task,
)
from agentomnia.rewards.judges import Transcript as CallRecord
from agentomnia.sandbox.bundle import Bundle
from agentomnia.tasks.grading import Judge, VerifierRunner
from agentomnia.trajectories.sft import GENERATION_TEMPLATE
from trainers.curriculum import CurriculumSettings, RolloutCurriculum
from trainers.environment import SandboxToolEnv, environment_class, golden_turns, prefix_messages
from trainers.model import ModelSettings, causal_when_right_padded, load_base
from trainers.report import TrainReport, save_outputs, series


class GRPOSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model: ModelSettings = Field(
        default_factory=ModelSettings, description="used only without init_checkpoint"
    )
    max_steps: int = Field(default=3, ge=1)
    num_generations: int = Field(default=2, ge=2, description="group size G")
    batch_size: int = Field(
        default=2, ge=1, description="rollouts per device per step (a multiple of G overall)"
    )
    gradient_accumulation_steps: int = Field(default=1, ge=1)
    max_completion_length: int = Field(default=64, ge=8)
    max_tool_calling_iterations: int = Field(default=4, ge=1)
    learning_rate: float = Field(
        default=1e-4, gt=0, description="1e-4 for the tiny model; ~1e-6 for real ones"
    )
    temperature: float = Field(default=1.0, gt=0)
    epsilon_low: float = 0.2
    epsilon_high: float = 0.28
    beta: float = Field(
        default=0.0, ge=0, description="KL coefficient; 0 drops the term and the reference model"
    )
    loss_type: str = "dapo"
    scale_rewards: Literal["group", "batch", "none"] = "group"
    format_weight: float = 0.1
    redundancy_weight: float = 0.1
    lambda_ce: float = Field(default=0.1, ge=0, description="weight of the golden-prefix cross-entropy")
    lambda_rl: float = Field(default=1.0, ge=0, description="weight of the GRPO loss")
    curriculum: CurriculumSettings = Field(default_factory=CurriculumSettings)
    process: ProcessSettings = Field(
        default_factory=ProcessSettings, description="step-level checks that end a doomed rollout early"
    )
    reward_workers: int = Field(
        default=4, ge=0, description="threads scoring rollouts as they end; 0: score the batch at the end"
    )
    # Generation backend: the same code path on a GPU with a vLLM server; correction of the
    # train/infer mismatch (TRL's importance sampling over rollout logprobs) applies there.
    use_vllm: bool = False
    vllm_mode: Literal["server", "colocate"] = "server"
    vllm_server_base_url: str | None = None
    vllm_importance_sampling_correction: bool = True
    vllm_importance_sampling_mode: Literal[
        "token_truncate", "token_mask", "sequence_truncate", "sequence_mask"
    ] = "token_truncate"
    vllm_importance_sampling_clip_max: float = 2.0
    bf16: bool = False
    activation_checkpointing: bool = Field(default=False, description="recompute activations to save memory")
    seed: int = 0


class RolloutVerdict(BaseModel):
    """Everything the reward functions need about one finished rollout, computed once."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dropped: str | None = None
    task: float | None = None
    format_valid: bool = False
    redundancy: float = 0.0
    truncated: bool = False
    source: str | None = None  # what decided: rule, rubric, both, judge_fallback (the safeguard), process
    stopped: str | None = None  # why process validation ended the rollout early
    auxiliary: dict[str, float] = Field(default_factory=dict)  # adopted indicator -> penalty earned


def judge_rollout(
    env: SandboxToolEnv,
    completion: Sequence[Mapping[str, Any]],
    completion_ids: Sequence[int],
    eos_token_id: int | None,
    *,
    verifier: VerifierRunner | None = None,
    judge: Judge | None = None,
    weights: AuxiliaryWeights | None = None,
) -> RolloutVerdict:
    """Grade one rollout: environment faults and unscorable outcomes drop it; a truncated one is dropped
    when well formed and scored -1 otherwise; everything else gets the router's binary reward (a rule
    that cannot execute is re-scored by `judge`: the safeguard). `weights`: the auxiliary penalties the
    round's rollout analysis adopted, read off the policy's own turns (not the replayed prefix)."""
    fmt = check_format(completion, env.bundle.tools)
    redundancy = redundancy_penalty(env.policy_calls)
    truncated = not completion_ids or completion_ids[-1] != eos_token_id
    auxiliary: dict[str, float] = {}
    if weights is not None and weights.weights and env.task is not None:
        transcript = Transcript(
            task=env.task,
            messages=({"role": "user", "content": env.task.query}, *(dict(m) for m in completion)),
            tools=tuple(env.bundle.tools),
            read_tools=tuple(sorted(env.bundle.read_tools)),
            stop_reason="budget" if truncated else "answer",
        )
        auxiliary = auxiliary_terms(transcript, weights)
    if env.fault:
        return RolloutVerdict(dropped=f"environment fault: {env.fault}", truncated=truncated)
    stop = env.stopped
    if stop is not None and stop.fatal and not (truncated and not fmt.valid):
        return RolloutVerdict(
            task=0.0,
            format_valid=fmt.valid,
            redundancy=redundancy,
            truncated=truncated,
            source="process",
            stopped=stop.reason,
            auxiliary=auxiliary,
        )
    if truncated:
        if fmt.valid:
            return RolloutVerdict(dropped="truncated but well formed", format_valid=True, truncated=True)
        return RolloutVerdict(task=-1.0, format_valid=False, redundancy=redundancy, truncated=True)
    if env.task is None:
        return RolloutVerdict(dropped="the environment was never reset with a task")
    final = env._final_state()
    if final is None:
        return RolloutVerdict(dropped=f"environment fault: {env.fault or 'no final state'}")
    last: Mapping[str, Any] = next((m for m in reversed(completion) if m.get("role") == "assistant"), {})
    # the calls with whether each succeeded, so a judge does not believe a write the tool refused
    outcome = CallRecord(
        final_state=final,
        answer=extract_answer(str(last.get("content") or ""), env.task.expected_answer),
        calls=[*env.replayed_calls, *env.policy_calls],
        ok=list(env.calls_ok),
    )
    reward = score_task(env.task, outcome, verifier=verifier, judge=judge)
    if reward.value is None:
        return RolloutVerdict(
            dropped=f"unscored: {reward.reason}", format_valid=fmt.valid, redundancy=redundancy
        )
    return RolloutVerdict(
        task=reward.value,
        format_valid=fmt.valid,
        redundancy=redundancy,
        source=reward.source,
        stopped=stop.reason if stop is not None else None,
        auxiliary=auxiliary,
    )


class RolloutBook:
    """Shared state of one GRPO run: the curriculum, rows by task, and the last batch's task rewards."""

    def __init__(
        self,
        rows: Sequence[Mapping[str, Any]],
        curriculum: RolloutCurriculum,
        eos_token_id: int | None,
        verifier: VerifierRunner | None = None,
        judge: Judge | None = None,
        weights: AuxiliaryWeights | None = None,
        reward_workers: int = 0,
    ) -> None:
        self.rows = {str(r["task_id"]): r for r in rows}
        # Rollouts are scored as each one ends (reward_workers > 0) or all at the batch's end (0).
        self.stream: RewardStream[RolloutVerdict] = RewardStream(reward_workers)
        self.timings: list[RewardTiming] = []  # each scored rollout's end, scoring start and reward
        self.stops: dict[str, int] = {}  # process stops by kind
        self.early = 0  # rollouts handed to the reward stream before their batch's tool loop ended
        self.curriculum = curriculum
        self.eos_token_id = eos_token_id
        self.verifier = verifier
        self.judge = judge
        self.weights = weights
        self.safeguard_activations = 0  # rule verification failed to execute and the judge scored instead
        self.scored = 0
        self.batch: list[tuple[str, float | None]] = []
        self.instances: list[SandboxToolEnv] = []
        self.dropped = 0
        self.batch_dropped = 0

    def stage(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """The row with its prompt extended by the curriculum's current golden prefix."""
        task_id = str(row["task_id"])
        turns = self.curriculum.prefix(task_id)
        base = self.rows[task_id]
        golden = json.loads(base["golden"])
        return {**row, "prompt": [*base["prompt"], *prefix_messages(golden, turns)], "prefix_turns": turns}

    def finish(self, env: SandboxToolEnv, completion: Any, ids: Sequence[int]) -> None:
        """`env`'s rollout has ended with `completion`: start scoring it (at once when streaming)."""
        messages, final_ids = list(completion), list(ids)
        self.stream.submit(
            id(env),
            lambda: judge_rollout(
                env,
                messages,
                final_ids,
                self.eos_token_id,
                verifier=self.verifier,
                judge=self.judge,
                weights=self.weights,
            ),
        )

    def verdict(self, env: SandboxToolEnv, completion: Any, ids: Sequence[int]) -> RolloutVerdict:
        if env.verdict is None:
            self.finish(env, completion, ids)  # a no-op when the rollout was handed over as it ended
            env.verdict = self.stream.result(id(env))
            self.scored += env.verdict.dropped is None
            self.safeguard_activations += env.verdict.source == "judge_fallback"
            if env.stopped is not None:
                self.stops[env.stopped.kind] = self.stops.get(env.stopped.kind, 0) + 1
        verdict: RolloutVerdict = env.verdict
        return verdict

    def end_batch(self) -> list[RewardTiming]:
        """Every verdict of the batch was read: keep the reward latencies (returned for the batch's log
        line), free the keys for the next one."""
        batch = list(self.stream.timings().values())
        self.timings.extend(batch)
        self.stream.clear()
        return batch

    def groups(self) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for task_id, value in self.batch:
            out.setdefault(task_id, [])
            if value is not None:
                out[task_id].append(value)
        return out


def reward_functions(book: RolloutBook) -> list[Any]:
    """task_reward, format_reward, redundancy_reward (and auxiliary_reward when the round's rollout
    analysis adopted weights): TRL reward functions over `book`'s verdicts."""

    def task_reward(
        completions: list[Any], completion_ids: list[list[int]], environments: list[Any], **kw: Any
    ) -> list[float | None]:
        verdicts = [
            book.verdict(e, c, i) for e, c, i in zip(environments, completions, completion_ids, strict=True)
        ]
        values = [None if v.dropped else v.task for v in verdicts]
        book.batch = list(zip([str(t) for t in kw["task_id"]], values, strict=True))
        book.batch_dropped = sum(v.dropped is not None for v in verdicts)
        book.dropped += book.batch_dropped
        return values

    def format_reward(
        completions: list[Any], completion_ids: list[list[int]], environments: list[Any], **kw: Any
    ) -> list[float | None]:
        verdicts = [
            book.verdict(e, c, i) for e, c, i in zip(environments, completions, completion_ids, strict=True)
        ]
        return [None if v.dropped else float(v.format_valid) for v in verdicts]

    def redundancy_reward(
        completions: list[Any], completion_ids: list[list[int]], environments: list[Any], **kw: Any
    ) -> list[float | None]:
        verdicts = [
            book.verdict(e, c, i) for e, c, i in zip(environments, completions, completion_ids, strict=True)
        ]
        return [None if v.dropped else -v.redundancy for v in verdicts]

    def auxiliary_reward(
        completions: list[Any], completion_ids: list[list[int]], environments: list[Any], **kw: Any
    ) -> list[float | None]:
        verdicts = [
            book.verdict(e, c, i) for e, c, i in zip(environments, completions, completion_ids, strict=True)
        ]
        return [None if v.dropped else round(sum(v.auxiliary.values()), 6) for v in verdicts]

    funcs = [task_reward, format_reward, redundancy_reward]
    return [*funcs, auxiliary_reward] if book.weights is not None and book.weights.weights else funcs


def _trainer_class() -> type:
    """RCRLTrainer, defined on first use so importing this module does not import TRL."""
    import torch
    from trl import GRPOTrainer
    from trl.chat_template_utils import get_training_chat_template

    class RCRLTrainer(GRPOTrainer):  # type: ignore[misc]
        """GRPOTrainer with golden-prefix prompts, all-zero-group retries and the hybrid loss."""

        def __init__(
            self,
            *args: Any,
            book: RolloutBook,
            lambda_ce: float,
            lambda_rl: float,
            tools_by_task: Mapping[str, list[dict[str, Any]]],
            **kwargs: Any,
        ) -> None:
            self.book = book
            self.lambda_ce = lambda_ce
            self.lambda_rl = lambda_rl
            self.tools_by_task = tools_by_task
            super().__init__(*args, **kwargs)
            self._tokenizer_any: Any = cast(Any, self.processing_class)
            self._ce_template = get_training_chat_template(cast(Any, self.processing_class))

        def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
            mode = "train" if getattr(self.model, "training", False) else "eval"
            curriculum = self.book.curriculum
            retries = 0
            timings: list[RewardTiming] = []
            early, safeguard = self.book.early, self.book.safeguard_activations
            # A retry regenerates the whole generation batch: TRL's batch tensors are padded together, so
            # one group cannot be swapped out alone. Groups with signal keep their prefix; each retry spends
            # one of a prompt's T_max, so the loop ends.
            while True:
                staged = [self.book.stage(x) for x in inputs]
                self.book.batch = []
                try:
                    output = super()._generate_and_score_completions(staged)
                finally:
                    timings += self.book.end_batch()
                if mode != "train":
                    return output
                decisions = [curriculum.observe(t, r) for t, r in self.book.groups().items() if r]
                if not any(d.retry for d in decisions):
                    break
                retries += 1
            prefixes = [float(x["prefix_turns"]) for x in staged]
            self._metrics[mode]["rcrl/prefix_turns"].append(sum(prefixes) / len(prefixes))
            self._metrics[mode]["rcrl/retries"].append(float(retries))
            self._metrics[mode]["rcrl/dropped_fraction"].append(self.book.batch_dropped / max(1, len(staged)))
            self._metrics[mode]["rcrl/epoch"].append(float(curriculum.epoch))
            # how this step's rewards were scored (§5.2.2), in TRL's own log line beside the reward means
            rollouts = max(1, len(timings))
            latencies = sorted(t.latency for t in timings)
            self._metrics[mode]["rewards/streaming"].append(float(self.book.stream.streaming))
            self._metrics[mode]["rewards/latency_p50_ms"].append(
                1000 * latencies[len(latencies) // 2] if latencies else 0.0
            )
            self._metrics[mode]["rewards/scored_before_loop_end"].append((self.book.early - early) / rollouts)
            self._metrics[mode]["rewards/safeguard_rescored"].append(
                float(self.book.safeguard_activations - safeguard)
            )
            if curriculum.round_complete:
                curriculum.end_round()
            output.update(self._ce_batch(staged))
            return output

        def _tool_call_loop(
            self,
            prompts: Any,
            prompt_ids: Any,
            completion_ids: list[list[int]],
            completions: list[list[dict[str, Any]]],
            *rest: Any,
        ) -> Any:
            """TRL's tool loop, with each rollout handed to the reward stream as soon as it ends: before
            the loop (no tool call at all), at every regeneration inside it (the rollouts that left the loop
            in the last round), and after it (the rest). TRL extends `completions` and `completion_ids` in
            place, so what a finished rollout's entries hold when it is handed over is final."""
            environments: list[SandboxToolEnv] = list(self.environments or [])

            def hand_over(*, all_left: bool) -> None:
                for i, env in enumerate(environments):
                    if env.verdict is not None or id(env) in self.book.stream:
                        continue
                    last = completions[i][-1] if completions[i] else {}
                    running = last.get("role") == "tool" or bool(last.get("tool_calls"))
                    if all_left or not running:
                        self.book.finish(env, completions[i], completion_ids[i])

            generate = self._generate_single_turn

            def generate_and_hand_over(*args: Any, **kwargs: Any) -> Any:
                hand_over(all_left=False)
                return generate(*args, **kwargs)

            hand_over(all_left=False)
            self._generate_single_turn = generate_and_hand_over  # type: ignore[method-assign]
            try:
                result = super()._tool_call_loop(prompts, prompt_ids, completion_ids, completions, *rest)
            finally:
                del self._generate_single_turn
            self.book.early += sum(id(env) in self.book.stream for env in environments)
            _mask, final_completions, final_ids, *_ = result
            for i, env in enumerate(environments):
                if env.verdict is None and id(env) not in self.book.stream:
                    self.book.finish(env, final_completions[i], final_ids[i])
            return result

        def _ce_batch(self, staged: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
            """Golden-prefix token ids with labels on its assistant tokens only (-100 elsewhere)."""
            device = self.accelerator.device
            tokenizer = self._tokenizer_any
            pad = tokenizer.pad_token_id
            rows: list[tuple[list[int], list[int]]] = []
            for x in staged:
                turns = int(x["prefix_turns"])
                if turns <= 0:
                    rows.append(([pad], [-100]))
                    continue
                base = self.book.rows[str(x["task_id"])]
                messages = [*base["prompt"], *prefix_messages(json.loads(base["golden"]), turns)]
                encoded = tokenizer.apply_chat_template(
                    messages,
                    tools=self.tools_by_task[str(x["task_id"])],
                    chat_template=self._ce_template,
                    tokenize=True,
                    return_dict=True,
                    return_assistant_tokens_mask=True,
                )
                ids = list(encoded["input_ids"])
                labels = [t if m else -100 for t, m in zip(ids, encoded["assistant_masks"], strict=True)]
                rows.append((ids, labels))
            width = max(len(ids) for ids, _ in rows)
            ids_t = torch.full((len(rows), width), pad, dtype=torch.long)
            labels_t = torch.full((len(rows), width), -100, dtype=torch.long)
            mask_t = torch.zeros((len(rows), width), dtype=torch.long)
            for n, (ids, labels) in enumerate(rows):
                ids_t[n, : len(ids)] = torch.tensor(ids)
                labels_t[n, : len(labels)] = torch.tensor(labels)
                mask_t[n, : len(ids)] = 1
            return {
                "rcrl_ce_ids": ids_t.to(device),
                "rcrl_ce_labels": labels_t.to(device),
                "rcrl_ce_mask": mask_t.to(device),
            }

        def compute_loss(
            self,
            model: Any,
            inputs: dict[str, Any],
            return_outputs: bool = False,
            num_items_in_batch: Any = None,
        ) -> Any:
            batch = dict(inputs)  # the buffered batch is reused across iterations: never mutate it
            ce_ids, ce_labels, ce_mask = (
                batch.pop("rcrl_ce_ids", None),
                batch.pop("rcrl_ce_labels", None),
                batch.pop("rcrl_ce_mask", None),
            )
            rl_loss = super().compute_loss(model, batch, return_outputs, num_items_in_batch)
            ce_loss = torch.zeros((), device=rl_loss.device)
            if ce_labels is not None and bool((ce_labels != -100).any()):
                ce_loss = model(input_ids=ce_ids, attention_mask=ce_mask, labels=ce_labels).loss
            loss = self.lambda_rl * rl_loss + self.lambda_ce * ce_loss
            mode = "train" if getattr(self.model, "training", False) else "eval"
            self._metrics[mode]["rcrl/loss_rl"].append(float(rl_loss.detach()))
            self._metrics[mode]["rcrl/loss_ce"].append(float(ce_loss.detach()))
            self._metrics[mode]["rcrl/loss_hybrid"].append(float(loss.detach()))
            return loss

    return RCRLTrainer


def grpo_config(settings: GRPOSettings, out_dir: Path, *, auxiliary: bool = False) -> Any:
    """TRL's config; `auxiliary`: a fourth reward function carries the adopted penalties, already weighted."""
    import torch
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=str(out_dir / "trainer"),
        max_steps=settings.max_steps,
        num_generations=settings.num_generations,
        per_device_train_batch_size=settings.batch_size,
        gradient_accumulation_steps=settings.gradient_accumulation_steps,
        max_completion_length=settings.max_completion_length,
        max_tool_calling_iterations=settings.max_tool_calling_iterations,
        learning_rate=settings.learning_rate,
        temperature=settings.temperature,
        epsilon=settings.epsilon_low,
        epsilon_high=settings.epsilon_high,
        beta=settings.beta,
        loss_type=settings.loss_type,
        scale_rewards=settings.scale_rewards,
        reward_weights=[
            1.0,
            settings.format_weight,
            settings.redundancy_weight,
            *([1.0] if auxiliary else []),
        ],
        use_vllm=settings.use_vllm,
        vllm_mode=settings.vllm_mode,
        vllm_server_base_url=settings.vllm_server_base_url,
        vllm_importance_sampling_correction=settings.vllm_importance_sampling_correction,
        vllm_importance_sampling_mode=settings.vllm_importance_sampling_mode,
        vllm_importance_sampling_clip_max=settings.vllm_importance_sampling_clip_max,
        bf16=settings.bf16,
        activation_checkpointing=settings.activation_checkpointing,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=not torch.cuda.is_available(),
        seed=settings.seed,
        disable_tqdm=True,
        dataloader_num_workers=0,
        chat_template_kwargs=dict(GENERATION_TEMPLATE),  # rollouts reply as the SFT rows taught
    )


def _rl_rows(
    tasks_rows: Sequence[Mapping[str, Any]], bundles: Mapping[str, Bundle]
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Dataset rows (golden as JSON text, an `environment` name per bundle) and bundle dir -> env name."""
    names: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    for n, raw in enumerate(tasks_rows):
        missing = {"prompt", "task", "bundle_dir", "golden"} - set(raw)
        if missing:
            raise ValueError(
                f"RL task row {n} lacks {sorted(missing)}; rows need prompt, task, bundle_dir and golden"
            )
        bundle_dir = str(raw["bundle_dir"])
        if bundle_dir not in bundles:
            raise ValueError(f"RL task row {n}: no bundle loaded for {bundle_dir}; pass it in `bundles`")
        name = names.setdefault(bundle_dir, f"b{len(names)}_{bundles[bundle_dir].key[:8]}")
        task = raw["task"] if isinstance(raw["task"], str) else json.dumps(raw["task"])
        golden = raw["golden"] if isinstance(raw["golden"], str) else json.dumps(raw["golden"])
        if not golden_turns(json.loads(golden)):
            raise ValueError(f"RL task row {n} has an empty golden trajectory; the curriculum needs one")
        task_id = json.loads(task).get("id") or f"row{n}"
        rows.append(
            {
                "prompt": raw["prompt"],
                "task": task,
                "task_id": f"{task_id}:{n}",
                "golden": golden,
                "environment": name,
                "bundle_dir": bundle_dir,
            }
        )
    return rows, names


def reward_component_means(
    logs: Sequence[Mapping[str, Any]], names: Sequence[str] = ()
) -> dict[str, float | None]:
    """Each reward function's mean over the logged steps (TRL logs `rewards/<name>/mean` per step);
    None for a function in `names` that never logged a number (every rollout of the run was dropped)."""
    found: dict[str, list[float]] = {name: [] for name in names}
    for entry in logs:
        for key, value in entry.items():
            scored = isinstance(value, (int, float)) and value == value  # NaN: no rollout was scored
            if key.startswith("rewards/") and key.endswith("/mean") and scored:
                found.setdefault(key.split("/")[1], []).append(float(value))
    return {name: round(sum(v) / len(v), 4) if v else None for name, v in sorted(found.items())}


def train_grpo(
    tasks_rows: Sequence[Mapping[str, Any]],
    bundles: Mapping[str, Bundle] | None,
    sandbox: Any,
    init_checkpoint: str | Path | None,
    out_dir: str | Path,
    config: GRPOSettings | None = None,
    *,
    judge: Judge | None = None,
    weights: AuxiliaryWeights | None = None,
) -> TrainReport:
    """GRPO + RCRL on RL task rows; saves a checkpoint folder at `out_dir`.

    `judge` is the safeguard: it re-scores a rollout whose rule verification could not execute.
    `weights` are the auxiliary rewards the round's rollout analysis adopted (None: none).

    `bundles` maps each row's `bundle_dir` to its Bundle (None: load them from disk); `sandbox` is an
    `agentomnia.sandbox.Sandbox` (its `open` hosts the environments, its `run_check` runs verifier code);
    `init_checkpoint` is the SFT checkpoint folder (None: the tiny base model, which cannot call tools).
    """
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer

    settings = config or GRPOSettings()
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    loaded = dict(bundles or {})
    for raw in tasks_rows:
        key = str(raw["bundle_dir"])
        if key not in loaded:
            loaded[key] = Bundle.load(key)
    rows, names = _rl_rows(tasks_rows, loaded)
    if init_checkpoint is not None:
        path = Path(init_checkpoint)
        if not (path / "config.json").is_file():
            raise FileNotFoundError(
                f"init checkpoint {path} has no config.json; pass the SFT checkpoint folder"
            )
        model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    else:
        model, tokenizer = load_base(settings.model, rows)
    tokenizer.padding_side = "left"
    causal_when_right_padded(model)

    curriculum = RolloutCurriculum(
        {r["task_id"]: len(golden_turns(json.loads(r["golden"]))) for r in rows}, settings.curriculum
    )

    def verifier(code: str, initial_state: Mapping[str, Any], final_state: Mapping[str, Any]) -> bool | None:
        passed: bool | None = sandbox.run_check(code, initial_state, final_state).passed
        return passed

    book = RolloutBook(
        rows,
        curriculum,
        tokenizer.eos_token_id,
        verifier=verifier,
        judge=judge,
        weights=weights,
        reward_workers=settings.reward_workers,
    )
    factories: dict[str, Any] = {}
    for bundle_dir, name in names.items():
        cls = environment_class(loaded[bundle_dir], name)

        def factory(cls: type[SandboxToolEnv] = cls) -> SandboxToolEnv:
            env = cls(sandbox.open, settings.process)
            book.instances.append(env)
            return env

        factories[name] = factory
    reward_funcs = reward_functions(book)
    trainer = _trainer_class()(
        model=model,
        reward_funcs=reward_funcs,
        args=grpo_config(settings, folder, auxiliary=weights is not None and bool(weights.weights)),
        train_dataset=Dataset.from_list(rows, on_mixed_types="use_json"),
        processing_class=tokenizer,
        environment_factory=factories,
        book=book,
        lambda_ce=settings.lambda_ce,
        lambda_rl=settings.lambda_rl,
        tools_by_task={r["task_id"]: loaded[r["bundle_dir"]].tools for r in rows},
    )
    quiet_trainer(trainer)
    started = time.perf_counter()
    try:
        trainer.train()
    finally:
        book.stream.close()
        for env in book.instances:
            env._close()
    seconds = time.perf_counter() - started
    logs = list(trainer.state.log_history)
    curves = {
        "reward": series(logs, "reward"),
        "prefix turns": series(logs, "rcrl/prefix_turns"),
        "loss (hybrid)": series(logs, "rcrl/loss_hybrid"),
        "loss (GRPO)": series(logs, "rcrl/loss_rl"),
        "loss (prefix CE)": series(logs, "rcrl/loss_ce"),
    }
    main, plot = save_outputs(trainer, folder, tokenizer, settings, curves, "grpo", "GRPO + RCRL")
    losses = curves["loss (hybrid)"]
    report = TrainReport.of(
        "grpo", trainer, folder, seconds, losses, plot, logs,
        rewards=curves["reward"], prefix_turns=curves["prefix turns"], loss_rl=curves["loss (GRPO)"],
        loss_ce=curves["loss (prefix CE)"], dropped_rollouts=book.dropped,
        curriculum_prefixes={k: s.prefix for k, s in curriculum.states.items()}, curriculum_epoch=curriculum.epoch,
        reward_components=reward_component_means(logs, [f.__name__ for f in reward_funcs]), safeguard_activations=book.safeguard_activations,
        scored_rollouts=book.scored, auxiliary_weights=dict(weights.weights) if weights is not None else {},
        process_stops=dict(book.stops), reward_streaming=book.stream.streaming, finished_before_loop_end=book.early,
        reward_latency=latency_summary(book.timings),
    )  # fmt: skip
    if main:
        report.save()
    return report
