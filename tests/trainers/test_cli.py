"""`python -m trainers`: real short runs through the entry point, datasets in every accepted form,
settings flags generated from the settings models, errors that name the flag, and launch lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from trainers.cli import (
    GRPO_FLAGS,
    LAUNCH_CONFIGS,
    REPO,
    SFT_FLAGS,
    build_parser,
    build_settings,
    dataset_source,
    launch_command,
    load_dataset,
    main,
)
from trainers.demo import save_sft_dataset
from trainers.grpo import GRPOSettings
from trainers.sft import SFTSettings

TINY = ["--model-max-corpus-chars", "20000"]  # a small tokenizer corpus keeps the tiny model quick


def _leaf_paths(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    paths: set[tuple[str, ...]] = set()
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            paths |= _leaf_paths(annotation, (*prefix, name))
        else:
            paths.add((*prefix, name))
    return paths


def _write_jsonl(rows: list[dict[str, Any]], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    return capsys.readouterr().err


# ------------------------------------------------------------------------------------------ real runs


@pytest.mark.slow
def test_python_m_trainers_sft_trains_and_writes_a_checkpoint(rows: Any, tmp_path: Path) -> None:
    data = save_sft_dataset(rows[0], tmp_path / "datasets" / "sft" / "r0" / "hf")  # the pipeline's layout
    out = tmp_path / "ckpt"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "trainers", "sft", "--dataset", str(data.parent), "--out", str(out),
         "--max-steps", "3", "--batch-size", "2", "--logging-steps", "1", "--json", *TINY],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout[done.stdout.index("{\n") :])
    assert report["kind"] == "sft" and report["steps"] == 3 and len(report["loss_history"]) == 3
    for name in ("config.json", "model.safetensors", "tokenizer.json", "train_report.json", "sft_curves.png"):
        assert (out / name).is_file(), name
    saved = json.loads((out / "sft_settings.json").read_text())
    assert (
        saved["max_steps"] == 3 and saved["batch_size"] == 2 and saved["model"]["max_corpus_chars"] == 20000
    )


@pytest.mark.slow
def test_grpo_from_the_cli_runs_on_rl_rows_from_jsonl(rows: Any, sft_checkpoint: Any, tmp_path: Path) -> None:
    data = _write_jsonl(rows[1][:4], tmp_path / "rl" / "rl.jsonl").parent
    out = tmp_path / "rl-ckpt"
    code = main(["grpo", "--dataset", str(data), "--out", str(out), "--init-checkpoint", str(sft_checkpoint.checkpoint),
                 "--max-steps", "1", "--max-completion-length", "32", "--sandbox-workers", "1",
                 "--curriculum-max-retries", "0", "--epsilon-high", "0.3"])  # fmt: skip
    assert code == 0
    report = json.loads((out / "train_report.json").read_text())
    assert report["kind"] == "grpo" and report["steps"] == 1
    assert json.loads((out / "grpo_settings.json").read_text())["epsilon_high"] == 0.3
    assert (out / "model.safetensors").is_file()


# ------------------------------------------------------------------------------------------ datasets


def test_every_dataset_form_loads_the_same_rows(rows: Any, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sft = rows[0][:5]
    hf = save_sft_dataset(sft, tmp_path / "pipeline" / "hf")
    jsonl = _write_jsonl(sft, tmp_path / "jsonl" / "openai.jsonl")
    parquet = tmp_path / "parquet" / "part-0.parquet"
    parquet.parent.mkdir()
    pq.write_table(pa.Table.from_pylist([{"messages": json.dumps(r["messages"])} for r in sft]), parquet)
    assert dataset_source(hf.parent) == hf and dataset_source(hf) == hf
    assert dataset_source(jsonl.parent) == sft == dataset_source(jsonl)
    assert len(dataset_source(parquet.parent)) == 5  # type: ignore[arg-type]
    for path in (hf.parent, jsonl.parent, jsonl):
        dataset = load_dataset(path, frozenset({"messages"}))
        assert len(dataset) == 5 and [m["role"] for m in dataset[0]["messages"]] == [
            m["role"] for m in sft[0]["messages"]
        ]


# ------------------------------------------------------------------------------------------ settings


@pytest.mark.parametrize(("model", "flags"), [(SFTSettings, SFT_FLAGS), (GRPOSettings, GRPO_FLAGS)])
def test_every_settings_field_is_a_flag(model: type[BaseModel], flags: Any) -> None:
    assert {f.path for f in flags} == _leaf_paths(model)
    assert len({f.option for f in flags}) == len(flags)


def test_flags_and_a_settings_file_reach_the_settings(tmp_path: Path) -> None:
    base = tmp_path / "grpo_settings.json"
    base.write_text(json.dumps({"max_steps": 7, "curriculum": {"alpha": 0.9}, "learning_rate": 5e-5}))
    argv = ["grpo", "--dataset", "d", "--out", "o", "--settings", str(base), "--curriculum-alpha", "0.7",
            "--model", "/m", "--no-bf16", "--scale-rewards", "batch", "--vllm-server-base-url", "http://g:8000",
            "--use-vllm"]  # fmt: skip
    args = build_parser().parse_args(argv)
    settings = build_settings(GRPOSettings, args, GRPO_FLAGS, json.loads(base.read_text()))
    assert settings.max_steps == 7 and settings.learning_rate == 5e-5  # from the file
    assert settings.curriculum.alpha == 0.7 and settings.model.path == Path("/m")  # flags win
    assert settings.bf16 is False and settings.use_vllm is True and settings.scale_rewards == "batch"
    assert settings.vllm_server_base_url == "http://g:8000"
    assert settings.curriculum == settings.curriculum.model_copy(update={"alpha": 0.7})


# ------------------------------------------------------------------------------------------ errors


def test_out_of_range_values_name_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    err = _error(capsys, ["sft", "--dataset", "d", "--out", "o", "--max-steps", "0"])
    assert "argument --max-steps" in err and "greater than or equal to 1" in err
    err = _error(capsys, ["grpo", "--dataset", "d", "--out", "o", "--num-generations", "1"])
    assert "argument --num-generations" in err
    err = _error(capsys, ["sft", "--dataset", "d", "--out", "o", "--max-steps", "many"])
    assert "argument --max-steps: invalid int value: 'many'" in err
    err = _error(capsys, ["grpo", "--dataset", "d", "--out", "o", "--scale-rewards", "sometimes"])
    assert "argument --scale-rewards: invalid choice" in err
    err = _error(capsys, ["sft", "--dataset", "d", "--out", "o", "--max-stpes", "3"])
    assert "unrecognized arguments: --max-stpes" in err
    assert "--out" in _error(capsys, ["sft", "--dataset", "d"])


def test_bad_inputs_are_reported_before_training(
    capsys: pytest.CaptureFixture[str], rows: Any, tmp_path: Path
) -> None:
    missing = tmp_path / "nope"
    assert f"argument --dataset: {missing} does not exist" in _error(
        capsys, ["sft", "--dataset", str(missing), "--out", "o"]
    )
    no_messages = _write_jsonl([{"text": "hi"}], tmp_path / "plain" / "rows.jsonl").parent
    assert "lacks columns ['messages']" in _error(
        capsys, ["sft", "--dataset", str(no_messages), "--out", "o"]
    )
    (tmp_path / "empty").mkdir()
    assert "holds no dataset" in _error(capsys, ["sft", "--dataset", str(tmp_path / "empty"), "--out", "o"])
    broken = tmp_path / "broken" / "rows.jsonl"
    broken.parent.mkdir()
    broken.write_text('{"messages": []}\nnot json\n')
    assert f"{broken}:2 is not JSON" in _error(capsys, ["sft", "--dataset", str(broken.parent), "--out", "o"])
    good = _write_jsonl(rows[0][:2], tmp_path / "good" / "rows.jsonl").parent
    model = tmp_path / "model"
    model.mkdir()
    err = _error(capsys, ["sft", "--dataset", str(good), "--out", "o", "--model", str(model)])
    assert f"argument --model: {model} has no config.json" in err
    away = [{**rows[1][0], "bundle_dir": str(tmp_path / "gone")}]
    rl = _write_jsonl(away, tmp_path / "rl" / "rl.jsonl").parent
    err = _error(capsys, ["grpo", "--dataset", str(rl), "--out", "o", "--init-checkpoint", str(model)])
    assert "argument --init-checkpoint" in err
    err = _error(capsys, ["grpo", "--dataset", str(rl), "--out", str(tmp_path / "o")])
    assert "row 0 names environment bundle" in err
    settings = tmp_path / "s.json"
    settings.write_text(json.dumps({"max_stepz": 3}))
    err = _error(capsys, ["sft", "--dataset", str(good), "--out", "o", "--settings", str(settings)])
    assert "--settings: unknown setting 'max_stepz'" in err


# ------------------------------------------------------------------------------------------ launch


@pytest.mark.parametrize("config", sorted(LAUNCH_CONFIGS))
def test_print_launch_prints_the_same_command_under_accelerate(
    config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from accelerate.commands.launch import launch_command_parser

    argv = ["sft", "--dataset", "/data/sft", "--out", "/ckpt", "--max-steps", "5", "--print-launch", config]
    assert main(argv) == 0  # the dataset need not exist here: the line is for another machine
    printed = capsys.readouterr().out.split()
    assert printed == launch_command(argv, config)
    assert printed[:4] == ["accelerate", "launch", "--config_file", str(LAUNCH_CONFIGS[config])]
    launched = launch_command_parser().parse_args(printed[2:])
    assert launched.module and launched.training_script == "trainers"
    assert (REPO / launched.config_file).is_file()
    trainer_argv = list(launched.training_script_args)
    assert "--print-launch" not in trainer_argv and config not in trainer_argv
    relaunched = build_parser().parse_args(trainer_argv)
    settings = build_settings(SFTSettings, relaunched, SFT_FLAGS)
    assert settings.max_steps == 5 and settings.bf16 is True  # the configs train in bf16
    assert launch_command([*argv, "--no-bf16"], config)[-1] == "--no-bf16"


# ----------------------------------------------------------------------------------- accelerate configs


def _launch_args(config: Path) -> Any:
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser

    args = launch_command_parser().parse_args(["--config_file", str(config), "-m", "trainers", "sft"])
    validated, defaults, _ = _validate_launch_command(args)
    return validated, defaults


@pytest.mark.parametrize("config", sorted(LAUNCH_CONFIGS))
def test_accelerate_configs_load_and_every_key_is_one_accelerate_knows(config: str) -> None:
    pytest.importorskip("accelerate")
    from accelerate.commands.config.config_args import ClusterConfig, load_config_from_file
    from accelerate.commands.launch import launch_command_parser

    path = REPO / LAUNCH_CONFIGS[config]
    loaded = load_config_from_file(str(path))  # rejects unknown top-level keys
    assert isinstance(loaded, ClusterConfig) and loaded.mixed_precision == "bf16"
    known = {action.dest for action in launch_command_parser()._actions}
    nested = [
        *loaded.deepspeed_config,
        *(k if k.startswith("fsdp_") else f"fsdp_{k}" for k in loaded.fsdp_config),
    ]
    assert nested and set(nested) <= known, set(nested) - known  # accelerate copies unknown ones silently
    args, _ = _launch_args(path)
    assert args.num_processes == loaded.num_processes >= 2 and args.mixed_precision == "bf16"


def test_zero3_config_shards_everything_and_saves_a_whole_checkpoint() -> None:
    args, defaults = _launch_args(REPO / LAUNCH_CONFIGS["deepspeed-zero3"])
    assert args.use_deepspeed and not args.use_fsdp
    assert int(args.zero_stage) == 3 and args.zero3_save_16bit_model in (True, "true")
    assert defaults.distributed_type.value == "DEEPSPEED"


def test_fsdp_config_builds_an_fsdp2_plugin_with_full_state_dict(monkeypatch: pytest.MonkeyPatch) -> None:
    from accelerate.utils import FullyShardedDataParallelPlugin
    from accelerate.utils.launch import prepare_multi_gpu_env

    args, _ = _launch_args(REPO / LAUNCH_CONFIGS["fsdp"])
    assert args.use_fsdp and not args.use_deepspeed
    for key, value in prepare_multi_gpu_env(args).items():  # what `accelerate launch` exports
        monkeypatch.setenv(key, value)
    plugin = FullyShardedDataParallelPlugin()
    assert plugin.fsdp_version == 2
    assert plugin.state_dict_type.name == "FULL_STATE_DICT"
    assert plugin.cpu_ram_efficient_loading is True
