"""The sandbox's error family and the failure codes a tool call can end with.

Two kinds of trouble leave the sandbox. Trouble with one *tool call* (bad arguments, a tool that
raised, a timeout) is data: it comes back as a `ToolResult` failure whose `error.code` is one of
`FAILURE_CODES`, so a rollout records it and goes on. Trouble with the *caller's request* (code that
fails the static policy, a closed session, a full pool) is an exception from this module, each
named by where it happened and carrying a message that says what to do instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentomnia.sandbox.policy import PolicyViolation

# Failure codes of ToolResult.error.code produced by the sandbox itself (tools add their own).
UNKNOWN_TOOL = "unknown_tool"
INVALID_ARGUMENTS = "invalid_arguments"
TOOL_RAISED = "tool_raised"
TIMEOUT = "timeout"
CPU_LIMIT = "cpu_limit"
MEMORY_LIMIT = "memory_limit"
RECURSION_LIMIT = "recursion_limit"
BAD_RETURN = "bad_return"
RESULT_TOO_LARGE = "result_too_large"
POLICY_VIOLATION = "policy_violation"
WORKER_CRASHED = "worker_crashed"

FAILURE_CODES: frozenset[str] = frozenset(
    {
        UNKNOWN_TOOL,
        INVALID_ARGUMENTS,
        TOOL_RAISED,
        TIMEOUT,
        CPU_LIMIT,
        MEMORY_LIMIT,
        RECURSION_LIMIT,
        BAD_RETURN,
        RESULT_TOO_LARGE,
        POLICY_VIOLATION,
        WORKER_CRASHED,
    }
)


class SandboxError(Exception):
    """Base of every exception the sandbox raises; `code` is a short machine-readable tag."""

    code: str = "sandbox_error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class PolicyError(SandboxError):
    """Source code was refused by the static policy before anything ran."""

    code = POLICY_VIOLATION

    def __init__(self, what: str, violations: Sequence[PolicyViolation]) -> None:
        self.violations = list(violations)
        shown = "; ".join(str(v) for v in self.violations[:5])
        more = f" (and {len(self.violations) - 5} more)" if len(self.violations) > 5 else ""
        super().__init__(
            f"{what} was refused by the sandbox policy: {shown}{more}. "
            "Generated code may import only the allow-listed modules and may not reach the "
            "interpreter's internals; rewrite the flagged lines."
        )


class LoadError(SandboxError):
    """An environment could not be built: class missing, constructor raised or timed out."""

    code = "load_failed"


class SandboxBusy(SandboxError):
    """Admission control refused a request: too many sessions or too many queued requests."""

    code = "busy"


class SessionClosed(SandboxError):
    """The session was closed (by its owner, the idle reaper or the sandbox shutting down)."""

    code = "session_closed"


class SessionLost(SandboxError):
    """A worker failure destroyed the session's state and replaying its history did not restore it."""

    code = "session_lost"


class WorkerFailure(SandboxError):
    """A worker process broke a limit or died while serving a request; it has been replaced."""

    code = WORKER_CRASHED
