"""Where third-party chatter goes during a run: one log file under `$AGENTOMNIA_HOME/logs`.

Libraries the pipeline drives (Transformers, TRL, Datasets, Accelerate, PyTorch, Hugging Face Hub)
warn through `logging` and `warnings`, and the trainers print every logged step. In a terminal that is
pages of text between the lines a person wants (a stage started, a stage finished). `to_log_file`
sends all of it to `logs/run-<time>.log`; the terminal gets one line saying where. Our own messages,
printed to stderr, are untouched.
"""

from __future__ import annotations

import logging
import time
import warnings
from pathlib import Path

THIRD_PARTY = (
    "transformers", "trl", "datasets", "accelerate", "torch", "huggingface_hub", "peft", "sentence_transformers",
    "filelock", "urllib3", "py.warnings",
)  # fmt: skip
TRAINER_LOGGER = "agentomnia.trainer"  # the trainers' per-step lines (loss, reward, ...)


def to_log_file(home: Path, *, stem: str = "run") -> Path:
    """Route third-party loggers, Python warnings and trainer step lines to a new file; its path."""
    folder = Path(home) / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}.log"
    import datasets  # a dependency: its map/save/tokenize bars write straight to the terminal

    datasets.disable_progress_bars()
    route_to(path)
    return path


def route_to(path: Path) -> None:
    """Route this process's third-party loggers, warnings and Transformers' progress bars to `path`
    (appended): `to_log_file`'s work, and what a worker process of a routed run does with its
    parent's file (a checkpoint decoder's "Loading weights" bar would otherwise reach the terminal)."""
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    from transformers.utils import logging as hf_logging  # a dependency: its own stream handler goes

    hf_logging.disable_default_handler()
    hf_logging.disable_progress_bar()
    logging.captureWarnings(True)  # warnings.warn(...) -> the "py.warnings" logger
    warnings.simplefilter("default")  # each distinct warning once per place, not once per call
    for name in (*THIRD_PARTY, TRAINER_LOGGER):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.propagate = False
        if name == TRAINER_LOGGER:
            logger.setLevel(logging.INFO)
    global _routed
    _routed = path


_routed: Path | None = None


def routed() -> Path | None:
    """The log file third-party output goes to in this process, if `to_log_file` was called."""
    return _routed


def quiet_trainer(trainer: object) -> None:
    """When output is routed to a log file, a trainer's per-step lines go there instead of stdout."""
    if _routed is None:
        return
    from transformers import PrinterCallback, TrainerCallback

    class ToLog(TrainerCallback):  # type: ignore[misc]
        def on_log(
            self, args: object, state: object, control: object, logs: object = None, **kw: object
        ) -> None:
            logging.getLogger(TRAINER_LOGGER).info("step %s: %s", getattr(state, "global_step", "?"), logs)

    trainer.remove_callback(PrinterCallback)  # type: ignore[attr-defined]
    trainer.add_callback(ToLog())  # type: ignore[attr-defined]
