"""Capability bootstrapping: supervised fine-tuning on verified trajectories with TRL's SFTTrainer.

Only the assistant's own tokens are trained (`assistant_only_loss`): system prompts, user turns and
tool results are context the model reads, not text it should learn to produce. AdamW with a cosine
schedule and warmup. Rows are cut at `max_length` (default: the model's context window) and the
report counts what was cut. The same function runs the tiny offline model on a CPU and a real
checkpoint on a GPU; only the settings differ.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentomnia.logfile import quiet_trainer
from trainers.model import PRETRAINING, ModelSettings, load_base
from trainers.report import TrainReport, save_outputs, series


class SFTSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model: ModelSettings = Field(default_factory=ModelSettings)
    max_steps: int = Field(default=40, ge=1)
    learning_rate: float = Field(
        default=3e-3, gt=0, description="3e-3 suits the tiny model; ~1e-5 for real ones"
    )
    warmup_ratio: float = Field(default=0.1, ge=0, lt=1)
    weight_decay: float = Field(default=0.0, ge=0)
    # Four rows per step, one at a time: a row alone needs no padding, so attention runs the causal
    # kernel instead of a masked one over the longest row's length. Same loss to six places, and
    # 2.9x faster on this project's rows (8 steps: 10.9 s against 31.7 s with four rows per batch).
    batch_size: int = Field(default=1, ge=1)
    gradient_accumulation_steps: int = Field(default=4, ge=1)
    max_length: int | None = Field(
        default=None,
        ge=64,
        description="tokens per row, unset for the model's context window; longer rows are cut and counted",
    )
    logging_steps: int = Field(default=5, ge=1)
    bf16: bool = False
    activation_checkpointing: bool = Field(default=False, description="recompute activations to save memory")
    full_logits_max_vocab: int = Field(
        default=32_768,
        ge=0,
        description="up to this vocabulary size the loss comes from the full logits, above it from TRL's "
        "chunked LM head (which saves a large vocabulary's memory); 0: always the chunked head",
    )
    seed: int = 0


def load_sft_dataset(source: Any) -> Any:
    """A `datasets.Dataset` from a saved-to-disk folder, a Dataset, or a list of rows."""
    from datasets import Dataset, load_from_disk

    if isinstance(source, Dataset):
        return source
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(
                f"SFT dataset folder {path} does not exist; materialize the SFT dataset first"
            )
        return load_from_disk(str(path))
    if isinstance(source, list):
        return Dataset.from_list(source, on_mixed_types="use_json")
    raise TypeError(
        f"SFT data must be a Dataset, a dataset folder or a list of rows, not {type(source).__name__}"
    )


def _check_columns(dataset: Any) -> None:
    missing = {"messages"} - set(dataset.column_names)
    if missing:
        raise ValueError(
            f"SFT dataset lacks columns {sorted(missing)} (has {dataset.column_names}); it needs `messages` "
            "(OpenAI-format chat) and optionally `tools`"
        )
    if len(dataset) == 0:
        raise ValueError("SFT dataset is empty; nothing to train on")


def sft_config(settings: SFTSettings, out_dir: Path, context_window: int | None = None) -> Any:
    """TRL's SFTConfig; rows are cut at `settings.max_length`, else at `context_window`."""
    import torch
    from trl import SFTConfig

    return SFTConfig(
        output_dir=str(out_dir / "trainer"),
        assistant_only_loss=True,
        max_length=settings.max_length or context_window,
        learning_rate=settings.learning_rate,
        lr_scheduler_type="cosine",
        warmup_steps=settings.warmup_ratio,  # a float below 1 is a ratio of the total steps
        weight_decay=settings.weight_decay,
        optim="adamw_torch",
        per_device_train_batch_size=settings.batch_size,
        gradient_accumulation_steps=settings.gradient_accumulation_steps,
        max_steps=settings.max_steps,
        logging_steps=settings.logging_steps,
        save_strategy="no",
        report_to=[],
        bf16=settings.bf16,
        activation_checkpointing=settings.activation_checkpointing,
        use_cpu=not torch.cuda.is_available(),
        seed=settings.seed,
        dataloader_num_workers=0,
        disable_tqdm=True,
    )


def _trainer_class(full_logits_max_vocab: int) -> Any:
    import torch
    from trl import SFTTrainer

    class Trainer(SFTTrainer):  # type: ignore[misc]
        """TRL's SFTTrainer; for a small vocabulary the loss and TRL's logged figures (entropy, token
        accuracy, tokens seen) come from the full logits. TRL computes them through a chunked LM head
        that never builds the logits, which saves a large vocabulary's memory; a small one's logits are
        a few megabytes, and the loss from them is the same to seven places and about twice as fast on
        a CPU (`agentomnia bench sft`)."""

        def compute_loss(
            self,
            model: Any,
            inputs: dict[str, Any],
            return_outputs: bool = False,
            num_items_in_batch: Any = None,
        ) -> Any:
            head = model.get_output_embeddings()
            plain = (
                head is not None
                and head.weight.shape[0] <= full_logits_max_vocab
                and getattr(self.args, "loss_type", "nll") == "nll"
                and self.compute_loss_func is None
                and self.label_smoother is None
                and not self.aux_loss_enabled
                and "labels" in inputs
            )
            if not plain:
                return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            mode = "train" if model.training else "eval"
            labels = inputs["labels"]
            outputs = model(**{k: v for k, v in inputs.items() if k != "labels"}, use_cache=False)
            logp = torch.log_softmax(outputs.logits[:, :-1].float(), dim=-1)
            target = labels[:, 1:]
            mask = target != -100
            picked = logp.gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
            counted = mask.sum() if num_items_in_batch is None else num_items_in_batch
            loss = -(picked * mask).sum() / torch.as_tensor(counted).clamp(min=1)
            if self.args.average_tokens_across_devices and num_items_in_batch is not None:
                loss = loss * (self.accelerator.num_processes // self.get_tp_size())
            with torch.no_grad():
                valid = int(mask.sum())
                entropy = float(-(logp.exp() * logp).sum(-1)[mask].sum())
                correct = int((logp.argmax(-1) == target)[mask].sum())
                self._metrics[mode]["entropy"].append(entropy / valid if valid else 0.0)
                self._metrics[mode]["mean_token_accuracy"].append(correct / valid if valid else 0.0)
                if mode == "train" and "attention_mask" in inputs:
                    self._total_train_tokens += int(inputs["attention_mask"].sum())
                self._metrics[mode]["num_tokens"] = [self._total_train_tokens]
            return (loss, outputs) if return_outputs else loss

    return Trainer


def build_sft_trainer(dataset: Any, settings: SFTSettings, out_dir: Path) -> Any:
    """The configured SFTTrainer (exposed so tests can inspect its tokenized rows and masks)."""
    _check_columns(dataset)
    model, tokenizer = load_base(settings.model, dataset.select(range(min(len(dataset), 512))).to_list())
    window = getattr(model.config, "max_position_embeddings", None)
    return _trainer_class(settings.full_logits_max_vocab)(
        model=model,
        args=sft_config(settings, out_dir, window),
        train_dataset=dataset,
        processing_class=tokenizer,
    )


def truncation(trainer: Any, rows: int) -> dict[str, int | None]:
    """How much of the data the length limit cut: rows at the limit lost their tail (often the final
    answer), and rows whose trained tokens all lay beyond it were dropped by TRL."""
    limit = trainer.args.max_length
    lengths = [len(ids) for ids in trainer.train_dataset["input_ids"]]
    return {
        "max_length": limit,
        "rows": rows,
        "rows_truncated": sum(1 for n in lengths if limit is not None and n >= limit),
        "rows_dropped": rows - len(lengths),
        "longest_row_tokens": max(lengths, default=0),
    }


def train_sft(
    dataset: Any,
    out_dir: str | Path,
    config: SFTSettings | None = None,
    *,
    save_start: str | Path | None = None,
) -> TrainReport:
    """Fine-tune on `dataset` (folder, Dataset or rows) and save a checkpoint folder at `out_dir`.

    `save_start`: a folder to save the model as it was before training (with its tokenizer), so
    what training changed can be measured against it; the tiny offline model exists nowhere else."""
    settings = config or SFTSettings()
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    data = load_sft_dataset(dataset)
    trainer = build_sft_trainer(data, settings, folder)
    quiet_trainer(trainer)
    if save_start is not None and trainer.is_world_process_zero():
        trainer.model.save_pretrained(str(save_start))
        trainer.processing_class.save_pretrained(str(save_start))
    cut = truncation(trainer, len(data))
    started = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - started
    logs = list(trainer.state.log_history)
    losses = series(logs, "loss")
    curves = {"loss": losses, "learning rate": series(logs, "learning_rate")}
    main, plot = save_outputs(trainer, folder, trainer.processing_class, settings, curves, "sft", "SFT")
    pretraining = getattr(trainer.model.config, PRETRAINING, None) if settings.model.path is None else None
    report = TrainReport.of(
        "sft", trainer, folder, seconds, losses, plot, logs, truncation=cut,
        **({"pretraining": pretraining} if pretraining else {}),
    )  # fmt: skip
    if main:
        report.save()
    return report
