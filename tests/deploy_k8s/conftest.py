"""Shared helpers of the deployment-configuration tests: the environment variables the engine reads,
and the fenced shell commands of the deployment READMEs."""

from __future__ import annotations

import ast
import re
import shlex
import types
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from agentomnia import config

REPO = Path(__file__).resolve().parents[2]
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")


class RecordingEnviron(Mapping[str, str]):
    """An `os.environ` stand-in that remembers every name looked up."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = dict(values)
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.read.add(key)
        return self._values[key]

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return self._values.get(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


@pytest.fixture
def config_env_names(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> set[str]:
    """Every variable agentomnia.config reads, plus the one its default `api_key_env` names.

    Read by running the module's readers against a recording environment (what they really look
    up) and checked against a scan of the module's source (so a variable read only on some branch is
    not missed)."""
    environ = RecordingEnviron({"AGENTOMNIA_HOME": str(tmp_path / "home"), "AGENTOMNIA_MODE": "llm"})
    monkeypatch.setattr(config, "os", types.SimpleNamespace(environ=environ))
    settings = config.LLMSettings.from_env()
    config.mode()
    config.home()
    read = {*environ.read, settings.api_key_env, config.LLMSettings().api_key_env}
    source = Path(config.__file__).read_text(encoding="utf-8")
    literals = {
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and ENV_NAME.match(node.value)
    }
    assert literals <= read, f"agentomnia.config names variables its readers never read: {literals - read}"
    return read


def shell_commands(markdown: str) -> list[list[str]]:
    """The commands in the ```bash blocks of `markdown`: continuation lines joined, comments dropped,
    split as the shell would (one list of words per command)."""
    commands: list[list[str]] = []
    for block in re.findall(r"```bash\n(.*?)```", markdown, flags=re.S):
        text = re.sub(r"\\\n\s*", " ", block)
        for line in text.splitlines():
            words = shlex.split(line, comments=True)
            if words:
                commands.append(words)
    return commands


def strip_env_prefix(words: list[str]) -> list[str]:
    """`A=1 B=2 cmd args` -> `cmd args`."""
    rest = list(words)
    while rest and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", rest[0]):
        rest.pop(0)
    return rest
