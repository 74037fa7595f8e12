"""Records: frozen pydantic models whose id is a hash of their content.

Equal content gives an equal id, so writing the same record twice is a no-op everywhere
(Parquet artifacts, the lineage store, bundles on disk). `id`, `round` and `created_at` are not
part of the hashed content: the same environment produced in two rounds is the same environment.
A subclass may name further fields in `unhashed` (where a seed file was found, say) when they
describe provenance rather than content.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

ID_LENGTH = 16
_NOT_HASHED = frozenset({"id", "round", "schema_version"})


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the one serialisation every hash is taken of."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def content_hash(value: Any, length: int = ID_LENGTH) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()[:length]


class Record(BaseModel):
    """Base of every record kind. Subclasses set `record_kind` and may bump `schema_version`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    record_kind: ClassVar[str] = "record"
    unhashed: ClassVar[frozenset[str]] = frozenset()
    schema_version: int = 1
    round: str = "r0"
    id: str = Field(default="", description="content hash; computed when empty")

    @model_validator(mode="after")
    def _fill_id(self) -> Record:
        expected = content_hash({"record_kind": self.record_kind, **self.content()})
        if not self.id:
            object.__setattr__(self, "id", expected)
        elif self.id != expected:
            raise ValueError(
                f"{self.record_kind} record id {self.id!r} does not match its content hash {expected!r}; "
                "drop the id to recompute it or restore the original content"
            )
        return self

    def content(self) -> dict[str, Any]:
        """The hashed part: everything but id, round and schema_version."""
        return self.model_dump(mode="json", exclude=set(_NOT_HASHED | self.unhashed))

    def in_round(self, round_key: str) -> Self:
        return self.model_copy(update={"round": round_key})


class ToolError(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str
    message: str


class ToolResult(BaseModel):
    """The one return protocol of every tool: it never raises and never half-applies a write."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ok: bool
    data: Any = None
    error: ToolError | None = None

    @classmethod
    def success(cls, data: Any = None) -> ToolResult:
        return cls(ok=True, data=data)

    @classmethod
    def failure(cls, code: str, message: str) -> ToolResult:
        return cls(ok=False, error=ToolError(code=code, message=message))

    @model_validator(mode="after")
    def _consistent(self) -> ToolResult:
        if self.ok and self.error is not None:
            raise ValueError("a successful ToolResult carries no error")
        if not self.ok and self.error is None:
            raise ValueError("a failed ToolResult must carry an error {code, message}")
        return self
