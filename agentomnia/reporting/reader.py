"""One round of the home as the report sees it: the catalog's readers, used without creating anything.

The catalog's `path` and the readers built on it create a round's folder (writers want that); the
report must leave the home as it found it, so it asks `exists`/`location` first and reads only what
is there. A part that is absent becomes a `lack` on the section that wanted it.
"""

from __future__ import annotations

from pathlib import Path

from agentomnia.catalog import TASK_ARTIFACTS, Artifact, Catalog, RoundArtifacts
from agentomnia.reporting.model import Section
from agentomnia.reporting.widgets import figure
from agentomnia.storage import Storage
from agentomnia.tasks.models import Task


class RoundReader:
    """A round's artifacts through the catalog, and the figures the page embeds (counted)."""

    def __init__(self, store: Storage, round_key: str) -> None:
        self.store, self.key = store, round_key
        self.catalog = Catalog(store)
        self.artifacts: RoundArtifacts = self.catalog.round(round_key)
        self.images = 0
        self._tasks: list[Task] | None = None

    def rel(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.store.root))
        except ValueError:
            return str(path)

    def need_path(self, section: Section, item: str, path: Path) -> Path | None:
        """`path` when it exists; otherwise None, and the section notes that `item` is missing."""
        if path.exists():
            return path
        section.lack(item, f"not materialized for this round ({self.rel(path)} is absent)")
        return None

    def need(self, section: Section, item: str, artifact: Artifact, role: str = "data") -> bool:
        """Whether `role` of `artifact` exists; when not, the section notes that `item` is missing."""
        return self.need_path(section, item, self.artifacts.location(artifact, role)) is not None

    def image(self, path: Path, caption: str) -> str:
        return self.png(path.read_bytes(), caption or path.name)

    def png(self, data: bytes, caption: str) -> str:
        self.images += 1
        return figure(data, caption)

    def images_in(self, section: Section, folder: Path, item: str) -> None:
        pngs = sorted(folder.glob("*.png")) if folder.is_dir() else []
        if not pngs:
            section.lack(item, f"no PNG under {self.rel(folder)}")
        for path in pngs:
            section.add(self.image(path, path.stem.replace("_", " ")))

    def tasks(self) -> list[Task]:
        """Every task the round kept, from whichever task artifacts were materialized (loaded once)."""
        if self._tasks is None:
            self._tasks = self.artifacts.tasks()
        return self._tasks

    def task_stages(self) -> list[Artifact]:
        return self.artifacts.task_stages()

    def task_stage_names(self) -> str:
        return ", ".join(a.name for a in TASK_ARTIFACTS)

    def rounds_with_artifacts(self) -> list[str]:
        return self.catalog.rounds()
