"""`agentomnia bench sft`: SFT steps per second with TRL's chunked LM head against the loss from the
full logits, on the same rows from the same initial weights, the two alternating in one process.

Both start from the tiny model built for the rows without its language-model warm-up (the warm-up is
the same work either way), run the same number of optimizer steps, and report the seconds of
`trainer.train()`, the tokens it read per second and the loss they reached: the loss must agree, the
seconds need not.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainers.model import ModelSettings
from trainers.sft import SFTSettings, build_sft_trainer, load_sft_dataset

MODES = {"chunked": 0, "full": SFTSettings().full_logits_max_vocab}


def _one(data: Any, settings: SFTSettings) -> tuple[float, float, float | None]:
    """(seconds, tokens read, last logged loss) of one training run."""
    from transformers import PrinterCallback

    with tempfile.TemporaryDirectory(prefix="agentomnia-bench-sft-") as out:
        trainer = build_sft_trainer(data, settings, Path(out))
        trainer.remove_callback(PrinterCallback)  # the bench prints its own table, not each step
        started = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - started
    logs = [row for row in trainer.state.log_history if "loss" in row]
    last = logs[-1] if logs else {}
    return seconds, float(last.get("num_tokens") or 0), last.get("loss")


def bench_sft(dataset: str | Path, *, steps: int = 8, repeats: int = 3, rows: int = 0) -> dict[str, Any]:
    """Medians over `repeats` alternating runs of `steps` optimizer steps per loss path."""
    if steps < 1 or repeats < 1:
        raise ValueError("--steps and --repeats must be at least 1")
    data = load_sft_dataset(dataset)
    if rows:
        data = data.select(range(min(rows, len(data))))
    if len(data) == 0:
        raise ValueError(f"the SFT dataset at {dataset} has no rows")
    base = SFTSettings(max_steps=steps, logging_steps=steps, model=ModelSettings(pretrain_steps=0))
    runs: dict[str, list[tuple[float, float, float | None]]] = {mode: [] for mode in MODES}
    for _ in range(repeats):
        for mode, vocab in MODES.items():
            runs[mode].append(_one(data, base.model_copy(update={"full_logits_max_vocab": vocab})))
    out: dict[str, Any] = {"dataset": str(dataset), "rows": len(data), "steps": steps, "repeats": repeats}
    for mode, results in runs.items():
        seconds = statistics.median(r[0] for r in results)
        tokens = results[0][1]
        out[f"{mode}_seconds"] = round(seconds, 2)
        out[f"{mode}_tokens_per_s"] = round(tokens / seconds) if seconds else None
        out[f"{mode}_loss"] = results[0][2]
    out["speedup_full_over_chunked"] = round(out["chunked_seconds"] / out["full_seconds"], 2)
    return out


def format_sft_bench(r: Mapping[str, Any]) -> str:
    lines = [
        f"{r['rows']} rows, {r['steps']} optimizer steps, medians of {r['repeats']} alternating repeats",
        f"{'loss path':<10} {'seconds':>8} {'tokens/s':>9} {'loss':>10}",
    ]
    for mode in MODES:
        loss = r[f"{mode}_loss"]
        lines.append(
            f"{mode:<10} {r[f'{mode}_seconds']:>8} {r[f'{mode}_tokens_per_s']:>9} "
            f"{'' if loss is None else f'{loss:.6f}':>10}"
        )
    lines.append(f"full logits / chunked head: {r['speedup_full_over_chunked']}x faster")
    return "\n".join(lines)
