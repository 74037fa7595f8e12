"""The environment bundle: the on-disk (and in-memory) unit the sandbox runs.

A bundle folder holds `env.py` (one environment class), `tools.json` (OpenAI function-format tool
schemas), `s0.json` (the default init_config) and optionally `spec.json`, `verification.json` and
`runtime.json` (how to construct the class and read its returns; only non-default settings are
written). The shape is OmniaBench's (`env_class_code` + `tools` + `init_config`), so bundles export
to it directly and OmniaBench items import as bundles with `init_mode="attributes"` and
`returns="any"`.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentomnia.records import canonical_json, content_hash
from agentomnia.sandbox.policy import parse_python

InitMode = Literal["constructor", "attributes"]
ReturnMode = Literal["tool_result", "any"]

_READ_WORDS = frozenset({"read", "read_only", "readonly", "query", "lookup"})


class Bundle(BaseModel):
    """An environment ready to run: its class source, tool schemas and default initial state."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str
    class_name: str
    tools: list[dict[str, Any]]
    s0: dict[str, Any] = Field(default_factory=dict)
    spec: dict[str, Any] | None = None
    verification: dict[str, Any] | None = None
    read_tools: frozenset[str] = frozenset()
    init_mode: InitMode = "constructor"
    returns: ReturnMode = "tool_result"
    clock_start: str | None = None

    @field_validator("tools", mode="before")
    @classmethod
    def _normalise_tools(cls, value: Any) -> list[dict[str, Any]]:
        if not isinstance(value, list):
            raise ValueError("tools must be a list of OpenAI function-format tool schemas")
        tools: list[dict[str, Any]] = []
        seen: set[str] = set()
        for index, entry in enumerate(value):
            if not isinstance(entry, Mapping):
                raise ValueError(f"tools[{index}] is a {type(entry).__name__}, not an object")
            function = entry.get("function", entry)
            name = function.get("name") if isinstance(function, Mapping) else None
            if not isinstance(name, str) or not name:
                raise ValueError(
                    f"tools[{index}] has no function name; expected {{'type': 'function', 'function': {{'name': ...}}}}"
                )
            if name in seen:
                raise ValueError(f"tool `{name}` is declared twice in tools.json")
            seen.add(name)
            parameters = function.get("parameters") or {"type": "object", "properties": {}}
            tools.append(
                {
                    "type": "function",
                    "function": {
                        "name": name,
                        "description": str(function.get("description", "")),
                        "parameters": dict(parameters),
                    },
                }
            )
        return tools

    @property
    def key(self) -> str:
        """Identity of everything a worker compiles: code, class, schemas and runtime settings.

        Computed on each access (a cached value would survive `model_copy(update=...)`)."""
        return content_hash(
            {
                "source": self.source,
                "class_name": self.class_name,
                "tools": self.tools,
                "read_tools": sorted(self.read_tools),
                "init_mode": self.init_mode,
                "returns": self.returns,
                "clock_start": self.clock_start,
            },
            length=24,
        )

    @property
    def tool_names(self) -> list[str]:
        return [tool["function"]["name"] for tool in self.tools]

    def tool(self, name: str) -> dict[str, Any]:
        for tool in self.tools:
            if tool["function"]["name"] == name:
                return tool
        raise KeyError(f"bundle declares no tool `{name}` (tools: {', '.join(self.tool_names)})")

    @classmethod
    def from_source(
        cls,
        source: str,
        tools: list[dict[str, Any]],
        s0: dict[str, Any] | None = None,
        *,
        class_name: str | None = None,
        read_tools: Iterable[str] = (),
        init_mode: InitMode = "constructor",
        returns: ReturnMode = "tool_result",
        spec: dict[str, Any] | None = None,
    ) -> Bundle:
        names = [t.get("function", t).get("name", "") for t in tools if isinstance(t, Mapping)]
        return cls(
            source=source,
            class_name=class_name or detect_class_name(source, names),
            tools=tools,
            s0=dict(s0 or {}),
            spec=spec,
            read_tools=frozenset(read_tools) | _read_tools_from_spec(spec),
            init_mode=init_mode,
            returns=returns,
        )

    @classmethod
    def load(cls, path: str | Path) -> Bundle:
        folder = Path(path)
        if not folder.is_dir():
            raise FileNotFoundError(f"bundle folder {folder} does not exist")
        source_path = folder / "env.py"
        if not source_path.is_file():
            raise FileNotFoundError(f"bundle {folder} has no env.py (the environment class source)")
        tools = _read_json(folder / "tools.json", required=True)
        spec = _read_json(folder / "spec.json")
        runtime = _read_json(folder / "runtime.json") or {}
        source = source_path.read_text(encoding="utf-8")
        class_name = (
            runtime.get("class_name") or (spec or {}).get("class_name") or (spec or {}).get("env_class_name")
        )
        names = [t.get("function", t).get("name", "") for t in tools]
        return cls(
            source=source,
            class_name=class_name or detect_class_name(source, names),
            tools=tools,
            s0=_read_json(folder / "s0.json") or {},
            spec=spec,
            verification=_read_json(folder / "verification.json"),
            read_tools=frozenset(runtime.get("read_tools", ())) | _read_tools_from_spec(spec),
            init_mode=runtime.get("init_mode", "constructor"),
            returns=runtime.get("returns", "tool_result"),
            clock_start=runtime.get("clock_start"),
        )

    def save(self, path: str | Path) -> Path:
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "env.py").write_text(self.source, encoding="utf-8")
        _write_json(folder / "tools.json", self.tools)
        _write_json(folder / "s0.json", self.s0)
        if self.spec is not None:
            _write_json(folder / "spec.json", self.spec)
        if self.verification is not None:
            _write_json(folder / "verification.json", self.verification)
        runtime: dict[str, Any] = {"class_name": self.class_name}
        undeclared = sorted(self.read_tools - _read_tools_from_spec(self.spec))
        if undeclared:
            runtime["read_tools"] = undeclared
        if self.init_mode != "constructor":
            runtime["init_mode"] = self.init_mode
        if self.returns != "tool_result":
            runtime["returns"] = self.returns
        if self.clock_start is not None:
            runtime["clock_start"] = self.clock_start
        _write_json(folder / "runtime.json", runtime)
        return folder

    def worker_payload(self, code_payload: str) -> dict[str, Any]:
        """What a worker needs to keep this bundle warm (the code already passed the policy)."""
        return {
            "key": self.key,
            "code": code_payload,
            "class_name": self.class_name,
            "tools": self.tools,
            "read_tools": sorted(self.read_tools),
            "init_mode": self.init_mode,
            "returns": self.returns,
            "clock_start": self.clock_start,
        }


def config_key(init_config: Mapping[str, Any]) -> str:
    """Identity of an init_config (also the seed of the session's generator)."""
    return content_hash(dict(init_config), length=24)


def config_seed(key: str) -> int:
    return int(key[:15], 16)


def detect_class_name(source: str, tool_names: Iterable[str] = ()) -> str:
    """The environment class: the only top-level class, else the one defining most tools, else the last."""
    try:
        tree = parse_python(source)
    except SyntaxError as exc:
        raise ValueError(f"env.py does not parse (line {exc.lineno}: {exc.msg}); fix the source") from None
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    if not classes:
        raise ValueError("env.py defines no top-level class; the environment must be one class")
    if len(classes) == 1:
        return classes[0].name
    wanted = set(tool_names)

    def score(node: ast.ClassDef) -> int:
        return sum(1 for item in node.body if isinstance(item, ast.FunctionDef) and item.name in wanted)

    best = max(score(node) for node in classes)
    return [node for node in classes if score(node) == best][-1].name


def _read_tools_from_spec(spec: Mapping[str, Any] | None) -> frozenset[str]:
    """Tools the spec marks read-only (`kind`/`effect`/`access`/`mode` = "read"), or `read_tools`."""
    if not spec:
        return frozenset()
    found = {str(name) for name in spec.get("read_tools", ()) or ()}
    for entry in spec.get("tools", ()) or ():
        if not isinstance(entry, Mapping):
            continue
        for field in ("kind", "effect", "access", "mode"):
            value = entry.get(field)
            if isinstance(value, str) and value.lower() in _READ_WORDS and isinstance(entry.get("name"), str):
                found.add(entry["name"])
    return frozenset(found)


def _read_json(path: Path, *, required: bool = False) -> Any:
    if not path.is_file():
        if required:
            raise FileNotFoundError(f"bundle is missing {path.name}")
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON (line {exc.lineno}: {exc.msg})") from None


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False) + "\n", encoding="utf-8")


def canonical_config(init_config: Mapping[str, Any]) -> str:
    return canonical_json(dict(init_config))
