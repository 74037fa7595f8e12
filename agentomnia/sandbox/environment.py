"""The environment contract: what every environment does, and what some can do besides.

`Environment` is the small protocol every part of the project programs against (rollouts,
verifiers, replay grading, the conformance checker): `reset(init_config)`, `call(tool, args) ->
ToolResult`, `state()`, `state_hash()`, `tools()` and `close()`. `check_env` (in `conformance`)
turns it into executable checks.

Anything more is an optional capability, checked with `isinstance` (the protocols are
runtime-checkable) and never assumed:

- `SupportsBatch`: `call_many(calls)` and `run(batch)` send many requests in one round trip;
- `SupportsSnapshot`: `snapshot()` and `restore(snapshot)` return to an earlier state.

`call_all` and `run_batch` use batching when an environment offers it and fall back to one request
at a time when it does not, with the same answers either way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from agentomnia.records import ToolResult
from agentomnia.sandbox.results import Snapshot

if TYPE_CHECKING:
    from agentomnia.sandbox.session import Batch

Call = tuple[str, Mapping[str, Any]]

SKIPPED = None  # the answer of a batch step that did not run (see `session.Batch`)


@runtime_checkable
class Environment(Protocol):
    """A stateful tool provider with deterministic resets: the contract every environment keeps."""

    def tools(self) -> list[dict[str, Any]]: ...

    def call(self, tool: str, args: Mapping[str, Any] | None = None) -> ToolResult: ...

    def state(self) -> dict[str, Any]: ...

    def state_hash(self, *, fresh: bool = False) -> str: ...

    def reset(self, init_config: Mapping[str, Any] | None = None) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class SupportsBatch(Protocol):
    """Many requests in one round trip: a list of calls, or a `Batch` of calls, states and resets."""

    def call_many(self, calls: Sequence[Call]) -> list[ToolResult]: ...

    def run(self, batch: Batch) -> list[Any]: ...


@runtime_checkable
class SupportsSnapshot(Protocol):
    """Return to an earlier state of the same session."""

    def snapshot(self) -> Snapshot: ...

    def restore(self, snapshot: Snapshot) -> None: ...


def call_all(env: Environment, calls: Sequence[Call]) -> list[ToolResult]:
    """Run calls in order, each independent of the others' success; one round trip when batched."""
    if isinstance(env, SupportsBatch):
        return env.call_many(calls)
    return [env.call(tool, args) for tool, args in calls]


def run_batch(env: Environment, batch: Batch) -> list[Any]:
    """A batch's answers (see `session.Batch`); one round trip when the environment batches."""
    if isinstance(env, SupportsBatch):
        return env.run(batch)
    return run_steps(env, batch.steps)


def run_steps(env: Environment, steps: Sequence[dict[str, Any]]) -> list[Any]:
    """A batch's steps as separate requests, with the answers a batch gives."""
    answers: list[Any] = []
    ok = False
    for step in steps:
        if step["if_ok"] and not ok:
            answers.append(SKIPPED)
            continue
        op = step["op"]
        if op == "calls":
            if step["first_ok"]:
                results: list[ToolResult] = []
                for tool, args in step["raw"]:
                    results.append(env.call(tool, args))
                    if results[-1].ok:
                        break
            else:
                results = call_all(env, step["raw"])
            ok = bool(results) and results[-1].ok
            answers.append(results)
        elif op == "state":
            answers.append((env.state(), env.state_hash(fresh=True)))
        elif op == "hash":
            answers.append(env.state_hash(fresh=step["fresh"]))
        else:
            env.reset(step["config"])
            answers.append(True)
    return answers
