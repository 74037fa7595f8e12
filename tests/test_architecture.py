"""The house rules DESIGN.md sets, checked on the source: dependencies point down, artifact names are
declared once, one rejection shape.

Each rule is read off the code itself (imports by `ast`, names by token), so a change that breaks one
fails here with the file and line to fix.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest

from agentomnia.catalog import ARTIFACTS

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "agentomnia"
ASSETS = ROOT / "agentomnia_assets"
# Packages above the engine: it never imports them (the `agentomnia` command is the one door up).
ABOVE_ENGINE = ("agentomnia_assets", "resources", "jobs", "sensors", "trainers", "deploy")
ENGINE_DOORS = {ENGINE / "cli.py"}
# Inside the engine: what a package must not reach up into.
ENGINE_LAYERS = {"tasks": ("agentomnia.evolution", "agentomnia.omniabench", "agentomnia.trajectories")}
# Asset modules may import these shared helpers of the Dagster layer, never each other's.
ASSET_SHARED = {"agentomnia_assets._common", "agentomnia_assets.instance", "agentomnia_assets.partitions",
                "agentomnia_assets.status"}  # fmt: skip
# Artifact names that are also ordinary words (labels, metadata keys, group names): not searched for.
GENERIC_NAMES = ("environments", "toolsets", "trajectories", "prds", "taxonomy", "scale")
PRODUCT_CODE = ("agentomnia", "agentomnia_assets", "resources", "jobs", "sensors", "trainers", "deploy")


def _python(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import in the file, function-level ones included."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out += [(node.lineno, node.module)]
    return out


def _where(path: Path, line: int) -> str:
    return f"{path.relative_to(ROOT)}:{line}"


def test_the_engine_imports_nothing_above_it() -> None:
    bad = [
        f"{_where(p, line)} imports {mod}"
        for p in _python(ENGINE)
        if p not in ENGINE_DOORS
        for line, mod in _imports(p)
        if mod.split(".")[0] in ABOVE_ENGINE
    ]
    assert bad == []


@pytest.mark.parametrize("package", sorted(ENGINE_LAYERS))
def test_engine_packages_do_not_reach_up(package: str) -> None:
    upper = ENGINE_LAYERS[package]
    bad = [
        f"{_where(p, line)} imports {mod}"
        for p in _python(ENGINE / package)
        for line, mod in _imports(p)
        if mod.startswith(upper)
    ]
    assert bad == []


def test_asset_modules_do_not_import_each_other() -> None:
    bad = []
    for p in _python(ASSETS):
        if p.name in ("definitions.py", "pipeline.py", "__init__.py"):  # the wiring and the runner
            continue
        bad += [
            f"{_where(p, line)} imports {mod}"
            for line, mod in _imports(p)
            if mod.startswith("agentomnia_assets.") and mod not in ASSET_SHARED
        ]
    assert bad == []


def test_artifact_names_are_spelled_only_in_the_catalog() -> None:
    names = {f'"{a.name}"' for a in ARTIFACTS.values() if a.name not in GENERIC_NAMES}
    # the generic names are still reachable only through the catalog: `Storage.artifact` is checked below
    bad = []
    for top in PRODUCT_CODE:
        for p in _python(ROOT / top):
            if p == ENGINE / "catalog.py":
                continue
            source = p.read_text(encoding="utf-8")
            for tok in tokenize.generate_tokens(io.StringIO(source).readline):
                if tok.type == tokenize.STRING and tok.string in names:
                    bad.append(f"{_where(p, tok.start[0])} spells {tok.string}")
            for line, text in enumerate(source.splitlines(), start=1):
                if (".artifact(" in text or "artifact_dir(" in text) and p != ENGINE / "storage.py":
                    bad.append(f"{_where(p, line)} reaches an artifact by name: {text.strip()}")
    assert bad == []


def test_one_rejection_shape() -> None:
    retired = ("SeedRejection", "BuildFailure", "TaskRejection", "PRDRejection", "ImportRejection")
    bad = [
        f"{_where(p, node.lineno)} defines {node.name}"
        for top in PRODUCT_CODE
        for p in _python(ROOT / top)
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
        and (node.name in retired or (node.name == "Rejection" and p != ENGINE / "rejection.py"))
    ]
    assert bad == []
