"""Shared data for the trainer tests: real rows on the mock bundle, one SFT checkpoint per session."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from trainers.demo import demo_rows
from trainers.model import ModelSettings

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def tiny_model() -> ModelSettings:
    """The tiny model with a small tokenizer corpus, so tokenizer training takes a second or two."""
    return ModelSettings(max_corpus_chars=60_000)


@pytest.fixture(scope="session")
def rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return demo_rows()


@pytest.fixture(scope="session")
def sft_checkpoint(
    rows: tuple[list[dict[str, Any]], list[dict[str, Any]]],
    tiny_model: ModelSettings,
    tmp_path_factory: pytest.TempPathFactory,
) -> Any:
    from trainers.sft import SFTSettings, train_sft

    out = tmp_path_factory.mktemp("sft")
    settings = SFTSettings(model=tiny_model, max_steps=30, batch_size=2, learning_rate=5e-3, logging_steps=3)
    return train_sft(rows[0], Path(out), settings)
