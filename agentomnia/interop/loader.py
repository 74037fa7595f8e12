"""Reading what a synthesis round produced from the platform home, for exporters.

Tasks live as Parquet per round under `$AGENTOMNIA_HOME/artifacts/<asset>/<round>/data.parquet`
(one asset per task family) and environments as bundle folders under `$AGENTOMNIA_HOME/envs/`.
Exporters need both, joined by `env_id`, and must say which tasks they could not export rather than
stop at the first missing bundle.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from agentomnia.sandbox.bundle import Bundle
from agentomnia.storage import Storage, load_records
from agentomnia.tasks.models import Task

TASK_ASSETS: tuple[str, ...] = ("dag_tasks", "program_tasks", "solver_tasks")


def round_tasks(storage: Storage, round_key: str, assets: Iterable[str] = TASK_ASSETS) -> list[Task]:
    """Every task the round's task assets wrote, in (asset, id) order.

    Raises FileNotFoundError when none of the assets has data for the round."""
    tasks: list[Task] = []
    found = []
    for asset in assets:
        path = storage.root / "artifacts" / asset / round_key / "data.parquet"
        if path.exists():
            found.append(asset)
            tasks += sorted(load_records(path, Task), key=lambda t: t.id)
    if not found:
        raise FileNotFoundError(
            f"no task artifacts for round {round_key!r} under {storage.root / 'artifacts'} "
            f"(looked for {', '.join(TASK_ASSETS)}); materialize the task assets for that round first"
        )
    return tasks


def env_bundles(storage: Storage, env_ids: Iterable[str]) -> tuple[dict[str, Bundle], dict[str, str]]:
    """(bundles by env id, reason by env id for those that could not be loaded)."""
    bundles: dict[str, Bundle] = {}
    missing: dict[str, str] = {}
    for env_id in sorted(set(env_ids)):
        try:
            folder: Path = storage.env_dir(env_id)
            bundles[env_id] = Bundle.load(folder)
        except (FileNotFoundError, ValueError) as exc:
            missing[env_id] = f"environment bundle {env_id} cannot be loaded: {exc}"
    return bundles, missing
