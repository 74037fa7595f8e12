"""Seed records: what one seed file (or one query row) says, parsed and normalised.

Four kinds arrive — user queries, skill definitions, MCP tool lists, OpenAPI specs — and all
become one `Seed` shape so later stages never branch on the file format: a title, a description,
free text (the query or the skill body) and a list of tools with JSON-schema parameters.
A seed that cannot be read becomes a `Rejection` (`seed_rejection`) naming the file, the place and the fix.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentomnia.records import Record
from agentomnia.rejection import Rejection

SeedKind = Literal["query", "skill", "mcp", "api"]
SEED_KINDS: tuple[SeedKind, ...] = ("query", "skill", "mcp", "api")


class SeedTool(BaseModel):
    """One operation a seed exposes: an MCP tool or an OpenAPI operation."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    output_schema: dict[str, Any] | None = None
    read_only: bool | None = None  # from MCP annotations or the HTTP method
    destructive: bool | None = None
    method: str | None = None  # OpenAPI only
    path: str | None = None
    # where the tool is written in its seed, as a JSON pointer: `#/paths/~1pets~1{petId}/get`, `#/tools/3`
    place: str = ""
    # OpenAPI only: property name -> where it goes on the wire (`path`, `query`, `formData`, `body`)
    locations: dict[str, str] = Field(default_factory=dict)


class Seed(Record):
    record_kind: ClassVar[str] = "seed"
    unhashed: ClassVar[frozenset[str]] = frozenset({"source"})

    kind: SeedKind
    source: str = Field(description="where it was read from (file, file#row, or mcp:command)")
    name: str
    title: str
    description: str = ""
    text: str = ""  # the query itself, or the skill's markdown body
    tools: tuple[SeedTool, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)


def seed_rejection(
    source: str, reason: str, *, kind: str = "unknown", place: str = "", fix: str = ""
) -> Rejection:
    """A seed input that could not be read, and why. Kept so nothing vanishes silently."""
    return Rejection(subject=source, subject_kind="seed", stage="ingest", reason=reason, place=place, fix=fix,
                     detail={"kind": kind})  # fmt: skip


class IngestResult(BaseModel):
    accepted: list[Seed] = Field(default_factory=list)
    rejected: list[Rejection] = Field(default_factory=list)

    def extend(self, other: IngestResult) -> None:
        self.accepted.extend(other.accepted)
        self.rejected.extend(other.rejected)
