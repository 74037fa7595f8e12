"""The report's records: what a section shows, what it could not show, and what was written."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from agentomnia.reporting.widgets import escape, note


class MissingPart(BaseModel):
    """Something the page could not show: which section, which part of it, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    section: str
    item: str
    reason: str


class ReportSummary(BaseModel):
    """What `write_report` wrote: the file, which sections hold data, what is missing and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    round: str
    path: str
    sections: list[str]  # ids of the sections that show data from the round
    missing: list[MissingPart]
    images: int  # PNGs embedded
    bytes: int


class RenderedReport(BaseModel):
    """The page before it is written: its HTML and the same accounting as `ReportSummary`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    round: str
    html: str
    sections: list[str]
    missing: list[MissingPart]
    images: int


class Section:
    """One section of the page as it is built: HTML fragments, and what could not be shown."""

    def __init__(self, key: str, title: str) -> None:
        self.key, self.title = key, title
        self.parts: list[str] = []
        self.missing: list[MissingPart] = []
        self.shown = False  # something from the round's data is on the page

    def add(self, fragment: str) -> None:
        self.parts.append(fragment)
        self.shown = True

    def note(self, text: str) -> None:
        """A remark that is not a gap (e.g. the base round has no failures to align with)."""
        self.parts.append(note(text))

    def lack(self, item: str, reason: str) -> None:
        self.missing.append(MissingPart(section=self.key, item=item, reason=reason))
        self.parts.append(note(f"{item}: {reason}"))

    def html(self) -> str:
        badge = "" if self.shown else ' <span class="badge">not materialized</span>'
        return f'<section id="{self.key}"><h2>{escape(self.title)}{badge}</h2>{"".join(self.parts)}</section>'
