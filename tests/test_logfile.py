"""Third-party warnings and trainer step lines go to the run's log file, not the terminal."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentomnia import logfile


@pytest.fixture
def restore() -> Iterator[None]:
    names = (*logfile.THIRD_PARTY, logfile.TRAINER_LOGGER)
    saved = {n: (list(logging.getLogger(n).handlers), logging.getLogger(n).propagate) for n in names}
    filters = list(warnings.filters)
    yield
    for n, (handlers, propagate) in saved.items():
        logging.getLogger(n).handlers, logging.getLogger(n).propagate = handlers, propagate
    logging.captureWarnings(False)
    warnings.filters[:] = filters
    logfile._routed = None
    import datasets

    datasets.enable_progress_bars()


def test_library_warnings_land_in_the_log_file_and_not_on_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], restore: None
) -> None:
    path = logfile.to_log_file(tmp_path)
    assert path.parent == tmp_path / "logs" and logfile.routed() == path
    logging.getLogger("trl.trainer.grpo_trainer").warning("All reward functions returned None for the kwargs")
    logging.getLogger("transformers.modeling_utils").warning("is_gradient_checkpointing is deprecated")
    warnings.warn("a library's FutureWarning", FutureWarning, stacklevel=1)
    logging.getLogger("agentomnia.own").warning("our own message stays visible")
    for h in logging.getLogger("trl").handlers:
        h.flush()
    text = path.read_text()
    assert "All reward functions returned None" in text
    assert "is_gradient_checkpointing" in text
    assert "FutureWarning" in text
    captured = capfd.readouterr()
    assert "All reward functions" not in captured.err + captured.out
    assert "FutureWarning" not in captured.err + captured.out


def test_a_trainer_logs_its_steps_to_the_file_only_when_routed(tmp_path: Path, restore: None) -> None:
    from transformers import PrinterCallback

    class Trainer:
        def __init__(self) -> None:
            self.callbacks: list[object] = [PrinterCallback()]

        def remove_callback(self, cls: type) -> None:
            self.callbacks = [c for c in self.callbacks if not isinstance(c, cls)]

        def add_callback(self, cb: object) -> None:
            self.callbacks.append(cb)

    left_alone = Trainer()
    logfile.quiet_trainer(left_alone)  # nothing routed: the terminal keeps its step lines
    assert any(isinstance(c, PrinterCallback) for c in left_alone.callbacks)
    path = logfile.to_log_file(tmp_path)
    routed = Trainer()
    logfile.quiet_trainer(routed)
    assert not any(isinstance(c, PrinterCallback) for c in routed.callbacks)
    (cb,) = routed.callbacks
    cb.on_log(None, type("S", (), {"global_step": 7})(), None, logs={"loss": 1.25})  # type: ignore[attr-defined]
    assert "step 7: {'loss': 1.25}" in path.read_text()


def test_dataset_progress_bars_stay_off_the_terminal(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], restore: None
) -> None:
    from datasets import Dataset

    logfile.to_log_file(tmp_path)
    # saving and mapping a dataset draw bars on stderr unless they are switched off
    data = Dataset.from_list([{"n": i} for i in range(50)]).map(lambda row: {"m": row["n"] + 1})
    data.save_to_disk(str(tmp_path / "data"))
    captured = capfd.readouterr()
    assert "examples/s" not in captured.err + captured.out
    assert "Saving the dataset" not in captured.err + captured.out


def test_a_decoder_process_of_a_routed_run_writes_to_the_run_log(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], restore: None
) -> None:
    """A checkpoint decoder is a process of its own: when the run's output goes to a log file, the
    decoder's library output (Transformers' "Loading weights" bar) goes there too, not to the terminal."""
    from agentomnia.omniabench.decoders import DecoderPool
    from trainers.model import ModelSettings, build_tiny_model, build_tokenizer, rows_as_text

    messages = [{"role": "user", "content": "Show claim 6."}]
    settings = ModelSettings(vocab_size=400, hidden_size=16, num_layers=1, num_heads=2, num_kv_heads=1,
                             intermediate_size=32)  # fmt: skip
    tokenizer = build_tokenizer(rows_as_text([{"messages": messages, "tools": []}], repeats=5), 400)
    build_tiny_model(tokenizer, settings).save_pretrained(tmp_path / "ckpt")
    tokenizer.save_pretrained(tmp_path / "ckpt")
    path = logfile.to_log_file(tmp_path)
    capfd.readouterr()
    with DecoderPool(1) as pool:
        reply = pool.agent(tmp_path / "ckpt", max_new_tokens=4).act(messages, [])
    assert reply["role"] == "assistant"
    assert "Loading weights" not in capfd.readouterr().err
    assert path.exists()
