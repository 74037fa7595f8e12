"""Only the main process writes the run's side files; every process takes part in saving the weights."""

from pathlib import Path

from pydantic import BaseModel

from trainers.report import save_outputs


class _Settings(BaseModel):
    learning_rate: float = 1e-4


class _Tokenizer:
    def __init__(self) -> None:
        self.saved: list[Path] = []

    def save_pretrained(self, folder: Path) -> None:
        self.saved.append(Path(folder))


class _Trainer:
    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.saved_models: list[str] = []

    def save_model(self, folder: str) -> None:
        self.saved_models.append(folder)

    def is_world_process_zero(self) -> bool:
        return self.rank == 0


CURVES = {"loss": [(1, 2.0), (2, 1.5)], "empty": []}


def test_main_process_writes_tokenizer_settings_and_plot(tmp_path: Path) -> None:
    trainer, tokenizer = _Trainer(rank=0), _Tokenizer()
    main, plot = save_outputs(trainer, tmp_path, tokenizer, _Settings(), CURVES, "sft", "SFT")
    assert main is True
    assert trainer.saved_models == [str(tmp_path)]
    assert tokenizer.saved == [tmp_path]
    assert plot == tmp_path / "sft_curves.png" and plot.stat().st_size > 0
    assert (tmp_path / "sft_settings.json").read_text(encoding="utf-8").count("learning_rate") == 1


def test_other_ranks_join_the_weight_save_and_write_nothing_else(tmp_path: Path) -> None:
    trainer, tokenizer = _Trainer(rank=1), _Tokenizer()
    main, plot = save_outputs(trainer, tmp_path, tokenizer, _Settings(), CURVES, "grpo", "GRPO")
    assert (main, plot) == (False, None)
    # save_model is collective under ZeRO-3/FSDP: a rank that skipped it would hang the others
    assert trainer.saved_models == [str(tmp_path)]
    assert tokenizer.saved == []
    assert list(tmp_path.iterdir()) == []
