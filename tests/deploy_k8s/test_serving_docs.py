"""The deployment READMEs stay true: the serving variables are exactly the ones the engine reads and
agree with the server commands, and every documented command line parses with the parser it names."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

from agentomnia import config
from agentomnia.cli import build_parser as agentomnia_parser
from deploy.k8s.round import build_parser as round_parser
from tests.deploy_k8s.conftest import REPO, shell_commands, strip_env_prefix
from trainers.cli import build_parser as trainers_parser
from trainers.cli import launch_command

SERVING = REPO / "deploy" / "serving" / "README.md"
DOCS = [SERVING, REPO / "deploy" / "accelerate" / "README.md", REPO / "deploy" / "k8s" / "README.md"]
MARKER = "<!-- The variables agentomnia.config reads"


def _env_block() -> dict[str, str]:
    """NAME -> value of the `export` lines in the block under the marker."""
    text = SERVING.read_text(encoding="utf-8")
    assert MARKER in text, "the serving README lost the marked block of variables"
    block = re.search(r"```bash\n(.*?)```", text[text.index(MARKER) :], flags=re.S)
    assert block is not None
    values: dict[str, str] = {}
    for line in block.group(1).splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        assert words[0] == "export" and len(words) == 2, f"not one `export NAME=value`: {line!r}"
        name, _, value = words[1].partition("=")
        assert name not in values, f"{name} is documented twice"
        values[name] = value
    return values


def _option(words: list[str], name: str) -> str:
    return words[words.index(name) + 1]


def _server_commands() -> tuple[list[str], list[str]]:
    commands = shell_commands(SERVING.read_text(encoding="utf-8"))
    vllm = next(c for c in commands if c[:2] == ["vllm", "serve"])
    sglang = next(c for c in commands if c[:3] == ["python", "-m", "sglang.launch_server"])
    return vllm, sglang


def test_the_documented_variables_are_exactly_the_ones_the_engine_reads(config_env_names: set[str]) -> None:
    documented = set(_env_block())
    assert documented == config_env_names, (
        f"undocumented: {sorted(config_env_names - documented)}; "
        f"documented but never read: {sorted(documented - config_env_names)}"
    )


def test_the_documented_values_select_the_served_model(monkeypatch: pytest.MonkeyPatch) -> None:
    values = _env_block()
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    settings = config.LLMSettings.from_env()
    assert config.mode() == "llm"
    vllm, sglang = _server_commands()
    assert settings.model == _option(vllm, "--served-model-name") == _option(sglang, "--served-model-name")
    assert urlparse(settings.base_url).port == int(_option(vllm, "--port"))
    assert urlparse(settings.base_url).path == "/v1"  # the OpenAI-compatible routes of both servers
    assert settings.concurrency == int(values["AGENTOMNIA_LLM_CONCURRENCY"])
    assert settings.api_key_env in values, "the key variable the settings name is not documented"


def test_the_server_commands_parse_qwen3_tool_calls_and_reasoning() -> None:
    vllm, sglang = _server_commands()
    assert "--enable-auto-tool-choice" in vllm
    assert _option(vllm, "--tool-call-parser") == "hermes"
    assert _option(vllm, "--reasoning-parser") == "qwen3"
    assert _option(sglang, "--tool-call-parser") == "qwen"
    assert _option(sglang, "--reasoning-parser") == "qwen3"
    for words in (vllm, sglang):
        assert _option(words, "--host") == "0.0.0.0"


def test_the_k8s_values_set_only_variables_the_engine_reads(config_env_names: set[str]) -> None:
    values = yaml.safe_load((REPO / "deploy" / "k8s" / "values.yaml").read_text(encoding="utf-8"))
    env = values["dagster-user-deployments"]["deployments"][0]["env"]
    names = {e["name"] for e in env}
    assert names and names <= config_env_names, names - config_env_names


def _parse(parser_words: list[str], kind: str) -> None:
    """Parse with the project parser `kind` names; a SystemExit (bad flag or value) fails the test."""
    parsers = {"agentomnia": agentomnia_parser, "trainers": trainers_parser, "round": round_parser}
    try:
        parsers[kind]().parse_args(parser_words)
    except SystemExit as exc:  # argparse's way of rejecting a command line
        raise AssertionError(f"documented command does not parse: {kind} {shlex.join(parser_words)}") from exc


def _project_command(words: list[str]) -> tuple[str, list[str]] | None:
    """(parser, its arguments) for a command line of this project, else None."""
    words = strip_env_prefix(words)
    if words[:1] == ["agentomnia"]:
        return "agentomnia", words[1:]
    if words[:3] == ["python", "-m", "trainers"]:
        return "trainers", words[3:]
    if words[:3] == ["python", "-m", "deploy.k8s.round"]:
        return "round", words[3:]
    if words[:2] == ["accelerate", "launch"]:
        from accelerate.commands.launch import launch_command_parser

        args = launch_command_parser().parse_args(words[2:])
        assert args.module and args.training_script == "trainers", words
        assert (REPO / args.config_file).is_file(), f"no accelerate config {args.config_file}"
        return "trainers", list(args.training_script_args)
    return None


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(Path(p).relative_to(REPO)))
def test_every_documented_project_command_parses(doc: Path) -> None:
    checked = 0
    for words in shell_commands(doc.read_text(encoding="utf-8")):
        found = _project_command(words)
        if found is not None:
            _parse(found[1], found[0])
            checked += 1
    assert checked >= 1, f"{doc} documents no project command"


def test_the_printed_launch_line_in_the_training_readme_is_what_the_cli_prints() -> None:
    commands = shell_commands((REPO / "deploy" / "accelerate" / "README.md").read_text(encoding="utf-8"))
    asked = next(c for c in commands if c[:3] == ["python", "-m", "trainers"] and "--print-launch" in c)
    shown = next(c for c in commands if c[:2] == ["accelerate", "launch"])
    assert launch_command(asked[3:], _option(asked, "--print-launch")) == shown
