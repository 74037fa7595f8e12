"""What a training run hands back: the loss (and reward) history, timings, and curve plots.

A checkpoint folder holds the model, the tokenizer, the config, `train_report.json` and the PNG curves,
so the Dagster assets can attach all of it as materialization metadata.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class TrainReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["sft", "grpo"]
    checkpoint: Path
    steps: int
    seconds: float
    loss_history: list[tuple[int, float]]
    first_loss: float | None
    last_loss: float | None
    plot: Path | None = None
    logs: list[dict[str, Any]] = Field(
        default_factory=list, description="every logged step, as the trainer logged it"
    )
    extra: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(
        cls, kind: Literal["sft", "grpo"], trainer: Any, folder: Path, seconds: float,
        losses: list[tuple[int, float]], plot: Path | None, logs: list[dict[str, Any]], **extra: Any,
    ) -> TrainReport:  # fmt: skip
        """The report of a finished trainer run: steps from its state, first and last loss from `losses`."""
        return cls(kind=kind, checkpoint=folder, steps=int(trainer.state.global_step), seconds=seconds,
                   loss_history=losses, first_loss=losses[0][1] if losses else None,
                   last_loss=losses[-1][1] if losses else None, plot=plot, logs=logs, extra=extra)  # fmt: skip

    @property
    def loss_drop(self) -> float | None:
        """Relative drop from the first to the last logged loss (0.3 = 30% lower)."""
        if self.first_loss is None or self.last_loss is None or self.first_loss == 0:
            return None
        return (self.first_loss - self.last_loss) / abs(self.first_loss)

    def save(self) -> Path:
        path = self.checkpoint / "train_report.json"
        path.write_text(self.model_dump_json(indent=2), encoding="utf-8")
        return path


def series(logs: Sequence[Mapping[str, Any]], key: str) -> list[tuple[int, float]]:
    """(step, value) of one logged metric, skipping steps that did not log it."""
    out: list[tuple[int, float]] = []
    for entry in logs:
        value = entry.get(key)
        if isinstance(value, (int, float)) and "step" in entry:
            out.append((int(entry["step"]), float(value)))
    return out


def plot_curves(curves: Mapping[str, Sequence[tuple[int, float]]], path: Path, title: str) -> Path:
    """One panel per non-empty curve, stacked; written as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    present = {name: points for name, points in curves.items() if points}
    fig, axes = plt.subplots(max(1, len(present)), 1, figsize=(6, 2.2 * max(1, len(present))), squeeze=False)
    for ax, (name, points) in zip(axes[:, 0], present.items(), strict=False):
        ax.plot([s for s, _ in points], [v for _, v in points], marker="o", markersize=2)
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("step")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def save_outputs(
    trainer: Any,
    folder: Path,
    tokenizer: Any,
    settings: BaseModel,
    curves: Mapping[str, Sequence[tuple[int, float]]],
    name: str,
    title: str,
) -> tuple[bool, Path | None]:
    """Save the weights, gathered across ranks (ZeRO-3, FSDP), then, on the main process only, the
    tokenizer, `<name>_settings.json` and `<name>_curves.png`. Returns (is main process, plot path)."""
    trainer.save_model(str(folder))
    if not trainer.is_world_process_zero():
        return False, None
    tokenizer.save_pretrained(folder)
    write_json(folder / f"{name}_settings.json", settings.model_dump(mode="json"))
    return True, plot_curves(curves, folder / f"{name}_curves.png", title)


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value, indent=2, default=str), encoding="utf-8")
    return path
