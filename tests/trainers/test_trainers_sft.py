"""SFT: assistant-only loss masks tool results; the loss drops by at least 30% on CPU."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trainers.demo import save_sft_dataset
from trainers.sft import SFTSettings, build_sft_trainer, load_sft_dataset, truncation


@pytest.mark.slow
def test_tool_results_and_prompts_are_masked_and_tool_calls_trained(
    rows: Any, tiny_model: Any, tmp_path: Path
) -> None:
    path = save_sft_dataset(rows[0], tmp_path / "sft")
    trainer = build_sft_trainer(load_sft_dataset(path), SFTSettings(model=tiny_model), tmp_path / "out")
    example = trainer.train_dataset[0]
    tokenizer = trainer.processing_class
    ids = example["input_ids"]
    mask = [label != -100 for label in example["labels"]]  # the trainer's labels: -100 where not trained
    trained = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m])
    masked = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if not m])
    tool_content = json.loads(rows[0][0]["messages"][3]["content"])
    assert '"name": "create_task"' in trained and "<|im_end|>" in trained
    assert "<tool_response>" in masked and "<tool_response>" not in trained
    assert json.dumps(tool_content["data"]["title"]) in masked and "# Tools" in masked
    assert "Create a task titled" not in trained  # the user turn is context, not a target
    assert trained.rstrip().endswith("<|im_end|>")


@pytest.mark.slow
def test_sft_loss_drops_and_checkpoint_is_complete(sft_checkpoint: Any) -> None:
    report = sft_checkpoint
    assert report.steps == 30 and len(report.loss_history) == 10
    assert report.loss_drop is not None and report.loss_drop >= 0.3, report.loss_history
    folder = report.checkpoint
    for name in (
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "sft_curves.png",
        "train_report.json",
    ):
        assert (folder / name).is_file(), name
    saved = json.loads((folder / "train_report.json").read_text())
    assert saved["kind"] == "sft"
    # by default rows are cut only at the model's context window, which the demo rows fit
    assert saved["extra"]["truncation"]["rows_truncated"] == 0
    assert saved["extra"]["truncation"]["max_length"] == 8192
    assert report.seconds < 120


@pytest.mark.slow
def test_rows_longer_than_max_length_are_cut_and_counted(rows: Any, tiny_model: Any, tmp_path: Path) -> None:
    data = load_sft_dataset(save_sft_dataset(rows[0], tmp_path / "sft"))
    full = build_sft_trainer(data, SFTSettings(model=tiny_model), tmp_path / "full")
    lengths = sorted(len(ids) for ids in full.train_dataset["input_ids"])
    assert truncation(full, len(data)) == {
        "max_length": tiny_model.max_position_embeddings,
        "rows": len(data),
        "rows_truncated": 0,
        "rows_dropped": 0,
        "longest_row_tokens": lengths[-1],
    }
    limit = max(64, lengths[len(lengths) // 2])  # half the rows are longer than this
    cut = build_sft_trainer(data, SFTSettings(model=tiny_model, max_length=limit), tmp_path / "cut")
    report = truncation(cut, len(data))
    longer = sum(1 for n in lengths if n > limit)
    assert report["max_length"] == limit and report["longest_row_tokens"] <= limit
    assert longer >= 1 and report["rows_truncated"] + report["rows_dropped"] >= longer


@pytest.mark.slow
def test_the_loss_from_full_logits_is_the_chunked_heads(
    rows: Any, tiny_model: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """For a small vocabulary the loss comes from the full logits, not TRL's chunked LM head: the same
    loss, entropy, token accuracy and token count at every logged step, from the same weights. The
    bench that times the two runs them side by side and prints its table."""
    from agentomnia.cli import main

    data = load_sft_dataset(save_sft_dataset(rows[0], tmp_path / "sft"))
    logged = {}
    for vocab in (0, 32_768):
        settings = SFTSettings(model=tiny_model, max_steps=4, logging_steps=2, full_logits_max_vocab=vocab)
        trainer = build_sft_trainer(data, settings, tmp_path / f"out{vocab}")
        trainer.train()
        logged[vocab] = [row for row in trainer.state.log_history if "loss" in row]
    assert len(logged[0]) == len(logged[32_768]) == 2
    for chunked, full in zip(logged[0], logged[32_768], strict=True):
        for key in ("loss", "entropy", "mean_token_accuracy"):
            assert full[key] == pytest.approx(chunked[key], rel=1e-5), key
        assert full["num_tokens"] == chunked["num_tokens"] > 0
    capsys.readouterr()
    assert main(["bench", "sft", str(tmp_path / "sft"), "--steps", "1", "--repeats", "1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["chunked_loss"] == pytest.approx(result["full_loss"], rel=1e-5)
    assert result["chunked_seconds"] > 0 and result["full_seconds"] > 0 and result["rows"] == len(data)
    assert main(["bench", "sft", str(tmp_path / "missing")]) == 1
