"""Agentic post-training on TRL: SFT bootstrapping, GRPO with the rollback curriculum, a tiny offline
Qwen3 for CPU runs and tests.

    from trainers import SFTSettings, GRPOSettings, train_sft, train_grpo

    sft = train_sft("datasets/sft", "checkpoints/sft", SFTSettings())
    rl = train_grpo(rl_rows, None, sandbox, sft.checkpoint, "checkpoints/rl", GRPOSettings())

Exports load on first use, so importing the package does not import torch or TRL.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainers.curriculum import CurriculumSettings, RolloutCurriculum
    from trainers.grpo import GRPOSettings, train_grpo
    from trainers.model import ModelSettings, load_base
    from trainers.report import TrainReport
    from trainers.sft import SFTSettings, train_sft

_EXPORTS = {
    "CurriculumSettings": "curriculum",
    "GRPOSettings": "grpo",
    "ModelSettings": "model",
    "RolloutCurriculum": "curriculum",
    "SFTSettings": "sft",
    "TrainReport": "report",
    "load_base": "model",
    "train_grpo": "grpo",
    "train_sft": "sft",
}

__all__ = [
    "CurriculumSettings",
    "GRPOSettings",
    "ModelSettings",
    "RolloutCurriculum",
    "SFTSettings",
    "TrainReport",
    "load_base",
    "train_grpo",
    "train_sft",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'trainers' has no attribute {name!r}")
    value = getattr(import_module(f"trainers.{module}"), name)
    globals()[name] = value
    return value
