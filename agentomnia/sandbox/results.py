"""Result records of sandboxed checks and programs, and the snapshot handle.

Errors are data here: a check that raised, a program that timed out or code the policy refused
comes back as a result whose `error` says what happened, so a verifier or task synthesizer records
it and moves on ("a bad rollout is data, not a crash").
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentomnia.records import ToolError, ToolResult


class Snapshot(BaseModel):
    """A restorable point in one session's history (held by the worker, replayed on recovery)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: str
    index: int


class CheckResult(BaseModel):
    """Outcome of an OmniaBench-style `check_func`: `passed` is None whenever `error` is set."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    passed: bool | None
    error: ToolError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class ProgramCall(BaseModel):
    """One tool call a program made, with what it got back."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: str
    arguments: dict[str, Any]
    result: ToolResult


class ProgramResult(BaseModel):
    """Outcome of a task program: its answer, every call it made, what it printed, and any error."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    answer: Any = None
    calls: list[ProgramCall] = Field(default_factory=list)
    stdout: str = ""
    error: ToolError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None
