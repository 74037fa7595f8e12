"""A folder of task files, as `agentomnia tasks synth` writes it and `agentomnia tasks check` reads it.

One `<task id>.json` per task, and `envs.manifest.json` next to them: where the environment bundle
of each env id lives (a path relative to the folder when the bundle is inside it, else absolute). The
manifest is kept out of the task records, so a task's id never depends on where its bundle sits, and
several `tasks synth` runs into one folder add to the same manifest.

    write_tasks(out, tasks, env_dirs)
    for path in task_files(out): ...
    bundle_dir = locate_env(out, task.env_id, envs=None)  # None: not found in `env_search_paths(...)`
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from agentomnia.storage import Storage
from agentomnia.tasks.models import Task

MANIFEST_NAME = "envs.manifest.json"
MANIFEST_VERSION = 1


def task_files(folder: Path) -> list[Path]:
    """The task files of a folder (every `*.json` but the manifest), sorted by name."""
    return sorted(p for p in Path(folder).glob("*.json") if p.name != MANIFEST_NAME)


def read_manifest(folder: Path) -> dict[str, Path]:
    """env id -> bundle folder, as recorded by `write_tasks` ({} without a readable manifest)."""
    path = Path(folder) / MANIFEST_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    envs = data.get("environments") if isinstance(data, dict) else None
    if not isinstance(envs, dict):
        return {}
    return {str(k): (Path(folder) / v if not Path(v).is_absolute() else Path(v)) for k, v in envs.items()}


def write_tasks(folder: Path, tasks: Iterable[Task], env_dirs: Mapping[str, Path]) -> list[Path]:
    """Write each task as `<id>.json` and record its bundle folder in the manifest; the paths written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for t in tasks:
        path = folder / f"{t.id}.json"
        path.write_text(t.model_dump_json(indent=2), encoding="utf-8")
        written.append(path)
    if env_dirs:
        root = folder.resolve()
        known = {k: _relative(v.resolve(), root) for k, v in read_manifest(folder).items()}
        known.update({k: _relative(Path(v).resolve(), root) for k, v in env_dirs.items()})
        (folder / MANIFEST_NAME).write_text(
            json.dumps(
                {"schema_version": MANIFEST_VERSION, "environments": dict(sorted(known.items()))}, indent=2
            ),
            encoding="utf-8",
        )
    return written


def env_search_paths(folder: Path, envs: Path | None = None) -> list[Path]:
    """The folders whose `<env id>/` subfolders may hold a task's bundle, in the order they are tried
    after the manifest: `envs` when given, the task folder's own `envs/`, then $AGENTOMNIA_HOME/envs."""
    paths = [Path(envs)] if envs else []
    paths += [Path(folder) / "envs", Storage().root / "envs"]
    return list(dict.fromkeys(paths))


def locate_env(folder: Path, env_id: str, envs: Path | None = None) -> Path | None:
    """The bundle folder of `env_id` for the tasks in `folder`: `envs/<env_id>` when `envs` is given
    and holds it, else the manifest's entry, else the first of `env_search_paths` that holds it."""
    if envs and (Path(envs) / env_id).is_dir():
        return Path(envs) / env_id
    recorded = read_manifest(folder).get(env_id)
    if recorded is not None and recorded.is_dir():
        return recorded
    return next((p / env_id for p in env_search_paths(folder, envs) if (p / env_id).is_dir()), None)


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
