"""`python -m trainers`: the SFT and GRPO runs of the training assets, started from a shell.

    python -m trainers sft  --dataset DIR --out DIR [--model PATH] [--max-steps N] ...
    python -m trainers grpo --dataset DIR --out DIR [--init-checkpoint DIR] [--max-steps N] ...
    python -m trainers sft  ... --print-launch deepspeed-zero3    # the `accelerate launch` line

Each subcommand calls the function the Dagster asset calls (`train_sft`, `train_grpo`), so a run
on a GPU node under `accelerate launch` is the same code as the offline pipeline; only settings
differ. The settings flags are generated from `SFTSettings` / `GRPOSettings` (nested models become
prefixed flags: `--model-path`, `--curriculum-alpha`), so a field added there is a flag here without
an edit, and a value the model rejects is reported under the flag that carried it.

Datasets: the folder the pipeline writes (`$AGENTOMNIA_HOME/datasets/sft/<round>`, whose `hf/` is
read), a `save_to_disk` folder, a folder of `*.parquet` or `*.jsonl` files, or one such file.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import types
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from trainers.grpo import GRPOSettings
from trainers.sft import SFTSettings

REPO = Path(__file__).resolve().parent.parent
ACCELERATE_DIR = Path("deploy") / "accelerate"
# --print-launch choice -> accelerate config file, relative to the repository root (the image's workdir)
LAUNCH_CONFIGS: dict[str, Path] = {
    "deepspeed-zero3": ACCELERATE_DIR / "zero3.yaml",
    "fsdp": ACCELERATE_DIR / "fsdp.yaml",
}
SFT_COLUMNS = frozenset({"messages"})
RL_COLUMNS = frozenset({"prompt", "task", "bundle_dir", "golden"})
_HF_MARKERS = ("dataset_info.json", "state.json")
SettingsT = TypeVar("SettingsT", bound=BaseModel)


class CLIArgumentError(ValueError):
    """A command-line value is unusable; the message starts with the flag that carried it."""


@dataclass(frozen=True)
class SettingFlag:
    """One settings field as a command-line option."""

    path: tuple[str, ...]  # ("model", "path") for SFTSettings.model.path
    options: tuple[str, ...]  # ("--model-path", "--model")

    @property
    def dest(self) -> str:
        return "setting__" + "__".join(self.path)

    @property
    def option(self) -> str:
        return self.options[0]


def _strip_optional(annotation: Any) -> Any:
    """`X | None` -> X; anything else unchanged."""
    if get_origin(annotation) in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        if len(members) == 1:
            return members[0]
    return annotation


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def settings_flags(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> list[SettingFlag]:
    """Every scalar field of `model` (recursively) as a flag; `model.path` also answers to `--model`."""
    flags: list[SettingFlag] = []
    for name, field in model.model_fields.items():
        path = (*prefix, name)
        annotation = _strip_optional(field.annotation)
        if _is_model(annotation):
            flags.extend(settings_flags(annotation, path))
            continue
        option = "--" + "-".join(path).replace("_", "-")
        aliases = ("--model",) if path == ("model", "path") else ()
        flags.append(SettingFlag(path=path, options=(option, *aliases)))
    return flags


def _field_info(model: type[BaseModel], path: tuple[str, ...]) -> Any:
    field = model.model_fields[path[0]]
    if len(path) == 1:
        return field
    return _field_info(_strip_optional(field.annotation), path[1:])


def _json_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc.msg}") from exc


def _add_setting(group: Any, model: type[BaseModel], flag: SettingFlag) -> None:
    field = _field_info(model, flag.path)
    annotation = _strip_optional(field.annotation)
    default = field.get_default(call_default_factory=True)
    note = f"{field.description}; " if field.description else ""
    kwargs: dict[str, Any] = {"dest": flag.dest, "default": argparse.SUPPRESS}
    if annotation is bool:
        kwargs["action"] = argparse.BooleanOptionalAction
        kwargs["help"] = f"{note}default: {default}"
    elif get_origin(annotation) is Literal:
        choices = list(get_args(annotation))
        kwargs.update(choices=choices, type=type(choices[0]), help=f"{note}default: {default}")
    else:
        metavars: dict[Any, str] = {int: "N", float: "X", str: "TEXT", Path: "PATH"}
        kind = annotation if annotation in metavars else _json_value  # anything else is given as JSON
        kwargs.update(type=kind, metavar=metavars.get(kind, "JSON"), help=f"{note}default: {default}")
    group.add_argument(*flag.options, **kwargs)


def _nested_set(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        inner = data.get(key)
        data[key] = inner = dict(inner) if isinstance(inner, Mapping) else {}
        data = inner
    data[path[-1]] = value


def build_settings(
    model: type[SettingsT],
    args: argparse.Namespace,
    flags: Sequence[SettingFlag],
    base: Mapping[str, Any] | None = None,
    base_name: str = "--settings",
) -> SettingsT:
    """`model` from `base` (a settings file) overridden by the flags given; errors name the flag."""
    data: dict[str, Any] = json.loads(json.dumps(dict(base or {}), default=str))
    given = vars(args)
    for flag in flags:
        if flag.dest in given:
            value = given[flag.dest]
            _nested_set(data, flag.path, str(value) if isinstance(value, Path) else value)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise CLIArgumentError(_explain(exc, flags, given, base_name)) from None


def _explain(
    exc: ValidationError, flags: Sequence[SettingFlag], given: Mapping[str, Any], base_name: str
) -> str:
    lines = []
    for error in exc.errors():
        loc = tuple(str(p) for p in error["loc"])
        flag = next((f for f in flags if loc[: len(f.path)] == f.path), None)
        if flag is not None and flag.dest in given:
            lines.append(f"argument {flag.option}: {error['msg']} (got {given[flag.dest]!r})")
        elif error["type"] == "extra_forbidden":
            lines.append(f"{base_name}: unknown setting {'.'.join(loc)!r}")
        else:
            lines.append(f"{base_name}: setting {'.'.join(loc)!r}: {error['msg']}")
    return "; ".join(lines)


# ---------------------------------------------------------------------------------------- datasets


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CLIArgumentError(
                    f"argument --dataset: {path}:{number} is not JSON ({exc.msg})"
                ) from None
            if not isinstance(row, dict):
                raise CLIArgumentError(f"argument --dataset: {path}:{number} is not a JSON object")
            yield row


def _read_parquet(path: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
    return rows


def _is_hf_folder(path: Path) -> bool:
    return path.is_dir() and any((path / marker).is_file() for marker in _HF_MARKERS)


def dataset_source(path: Path) -> Path | list[dict[str, Any]]:
    """A `save_to_disk` folder to load, or the rows of the Parquet / JSONL files at `path`."""
    if not path.exists():
        raise CLIArgumentError(f"argument --dataset: {path} does not exist")
    if path.is_file():
        files = [path]
    elif _is_hf_folder(path / "hf"):
        return path / "hf"  # a dataset folder as the pipeline writes it
    elif _is_hf_folder(path):
        return path
    else:
        files = sorted(path.glob("*.parquet")) or sorted(path.glob("*.jsonl"))
        if not files:
            raise CLIArgumentError(
                f"argument --dataset: {path} holds no dataset: expected a `save_to_disk` folder (or one with "
                "an `hf/` folder, as the pipeline writes), *.parquet files or *.jsonl files"
            )
    rows: list[dict[str, Any]] = []
    for file in files:
        if file.suffix == ".parquet":
            rows.extend(_read_parquet(file))
        elif file.suffix == ".jsonl":
            rows.extend(_read_jsonl(file))
        else:
            raise CLIArgumentError(
                f"argument --dataset: {file} is neither .parquet nor .jsonl; pass a folder or such a file"
            )
    return rows


def load_dataset(path: Path, columns: frozenset[str]) -> Any:
    """A `datasets.Dataset` with at least `columns`, from any form `dataset_source` accepts."""
    from datasets import Dataset, load_from_disk

    source = dataset_source(path)
    if isinstance(source, Path):
        dataset = load_from_disk(str(source))
    else:
        dataset = Dataset.from_list(source, on_mixed_types="use_json")
    missing = sorted(columns - set(dataset.column_names))
    if missing:
        raise CLIArgumentError(
            f"argument --dataset: {path} lacks columns {missing} (has {sorted(dataset.column_names)})"
        )
    if len(dataset) == 0:
        raise CLIArgumentError(f"argument --dataset: {path} has no rows")
    return dataset


def _checkpoint_folder(path: Path | None, option: str) -> None:
    if path is not None and not (path / "config.json").is_file():
        raise CLIArgumentError(
            f"argument {option}: {path} has no config.json; pass a local Hugging Face checkpoint folder "
            "(nothing is downloaded)"
        )


def _output_folder(path: Path) -> None:
    if path.exists() and not path.is_dir():
        raise CLIArgumentError(f"argument --out: {path} exists and is not a folder")


# ------------------------------------------------------------------------------------------ launch


def launch_command(argv: Sequence[str], config: str) -> list[str]:
    """`accelerate launch` with `config`'s file running this same command line, minus --print-launch.

    The accelerate configs train in bf16, so `--bf16` is added unless the line already says either way.
    """
    rest: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--print-launch":
            skip = True
        elif not arg.startswith("--print-launch="):
            rest.append(arg)
    if not {"--bf16", "--no-bf16"} & set(rest):
        rest.append("--bf16")
    return ["accelerate", "launch", "--config_file", str(LAUNCH_CONFIGS[config]), "-m", "trainers", *rest]


# ------------------------------------------------------------------------------------------ parser


def _common(parser: argparse.ArgumentParser, dataset_help: str) -> None:
    parser.add_argument("--dataset", type=Path, required=True, metavar="PATH", help=dataset_help)
    parser.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="checkpoint folder to write (created)"
    )
    parser.add_argument(
        "--settings",
        type=Path,
        metavar="FILE",
        help="JSON settings to start from (e.g. the *_settings.json a checkpoint holds); flags override it",
    )
    parser.add_argument("--json", action="store_true", help="print the training report as JSON")
    parser.add_argument(
        "--print-launch",
        choices=sorted(LAUNCH_CONFIGS),
        help="print the `accelerate launch` command that runs this on many GPUs, and exit",
    )


SFT_FLAGS = settings_flags(SFTSettings)
GRPO_FLAGS = settings_flags(GRPOSettings)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m trainers",
        description="Post-train an agent: the SFT and GRPO runs of the training assets.",
        allow_abbrev=False,
    )
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="{sft,grpo}")

    sft = verbs.add_parser(
        "sft",
        help="supervised fine-tuning on verified trajectories (assistant-only loss)",
        description="Supervised fine-tuning on verified trajectories; the same run as the sft_checkpoint asset.",
        allow_abbrev=False,
    )
    sft.set_defaults(subparser=sft)
    _common(sft, "SFT dataset (rows with `messages`, optionally `tools`): folder or .parquet/.jsonl file")
    group = sft.add_argument_group("training settings (SFTSettings)")
    for flag in SFT_FLAGS:
        _add_setting(group, SFTSettings, flag)

    grpo = verbs.add_parser(
        "grpo",
        help="GRPO with the rollback curriculum over sandboxed environments",
        description="GRPO + rollback curriculum over sandboxed environments; the same run as the rl_checkpoint asset.",
        allow_abbrev=False,
    )
    grpo.set_defaults(subparser=grpo)
    _common(grpo, "RL dataset (rows with prompt, task, bundle_dir, golden): folder or .parquet/.jsonl file")
    grpo.add_argument(
        "--init-checkpoint",
        type=Path,
        metavar="DIR",
        help="SFT checkpoint to start from (default: the tiny base model, which cannot call tools yet)",
    )
    grpo.add_argument(
        "--sandbox-workers",
        type=int,
        default=2,
        metavar="N",
        help="worker processes hosting the environments",
    )
    group = grpo.add_argument_group("training settings (GRPOSettings)")
    for flag in GRPO_FLAGS:
        _add_setting(group, GRPOSettings, flag)
    return parser


def _base_settings(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CLIArgumentError(f"argument --settings: cannot read {path}: {exc}") from None
    if not isinstance(data, dict):
        raise CLIArgumentError(f"argument --settings: {path} is not a JSON object")
    return data


def _main_process() -> bool:
    """True outside `accelerate launch` and on its rank 0, so a launched run reports once."""
    return os.environ.get("RANK", "0") == "0"


def _summary(report: Any) -> str:
    losses = (
        f"loss {report.first_loss:.4f} -> {report.last_loss:.4f}"
        if report.first_loss is not None and report.last_loss is not None
        else "no loss logged"
    )
    return f"{report.kind}: {report.steps} steps in {report.seconds:.1f} s, {losses}; checkpoint {report.checkpoint}"


def _run_sft(args: argparse.Namespace, settings: SFTSettings) -> Any:
    from trainers.sft import train_sft

    _checkpoint_folder(settings.model.path, "--model")
    _output_folder(args.out)
    dataset = load_dataset(args.dataset, SFT_COLUMNS)
    return train_sft(dataset, args.out, settings)


def _run_grpo(args: argparse.Namespace, settings: GRPOSettings) -> Any:
    from agentomnia.sandbox import Sandbox
    from trainers.grpo import train_grpo

    if args.sandbox_workers < 1:
        raise CLIArgumentError(f"argument --sandbox-workers: must be at least 1 (got {args.sandbox_workers})")
    _checkpoint_folder(args.init_checkpoint, "--init-checkpoint")
    if args.init_checkpoint is None:
        _checkpoint_folder(settings.model.path, "--model")
    _output_folder(args.out)
    rows = list(load_dataset(args.dataset, RL_COLUMNS))
    for number, row in enumerate(rows):
        if not Path(str(row["bundle_dir"])).is_dir():
            raise CLIArgumentError(
                f"argument --dataset: row {number} names environment bundle {row['bundle_dir']}, which is not "
                "a folder here; run where the bundles are (the platform home's envs/) or fix the rows"
            )
    with Sandbox(args.sandbox_workers) as sandbox:
        return train_grpo(rows, None, sandbox, args.init_checkpoint, args.out, settings)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, validate, train (or print the launch line); 0 on success, 2 on a bad argument."""
    raw = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(raw)
    sub: argparse.ArgumentParser = args.subparser
    try:
        base = _base_settings(args.settings)
        settings: SFTSettings | GRPOSettings = (
            build_settings(SFTSettings, args, SFT_FLAGS, base)
            if args.verb == "sft"
            else build_settings(GRPOSettings, args, GRPO_FLAGS, base)
        )
        if args.print_launch:
            print(shlex.join(launch_command(raw, args.print_launch)))
            return 0
        if isinstance(settings, SFTSettings):
            report = _run_sft(args, settings)
        else:
            report = _run_grpo(args, settings)
    except CLIArgumentError as exc:
        sub.error(str(exc))  # exits with status 2 and the subcommand's usage
    if _main_process():
        print(report.model_dump_json(indent=2) if args.json else _summary(report))
    return 0
