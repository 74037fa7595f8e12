"""Sessions: one live environment in a worker, driven through the environment protocol.

`Session` implements the core `Environment` protocol (see `environment`) over a worker, together
with both optional capabilities: batching (`call_many`, and `run`, which sends a `Batch` of calls,
states and resets in one round trip for callers that know their next steps in advance, such as
verification) and snapshots (`snapshot`/`restore`). `LocalSession` (in `local`) implements the
same in-process for reference measurements.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agentomnia.records import ToolResult
from agentomnia.sandbox import errors
from agentomnia.sandbox.bundle import Bundle, config_key, config_seed
from agentomnia.sandbox.environment import (
    SKIPPED,
    Call,
    Environment,
    SupportsBatch,
    SupportsSnapshot,
    run_steps,
)
from agentomnia.sandbox.errors import (
    LoadError,
    SandboxBusy,
    SandboxError,
    SessionClosed,
    SessionLost,
    WorkerFailure,
)
from agentomnia.sandbox.results import Snapshot

if TYPE_CHECKING:
    from agentomnia.sandbox.pool import SessionRecord
    from agentomnia.sandbox.sandbox import Sandbox

# Errors about the session or the pool itself stay exceptions; any other trouble serving a call
# becomes a failed ToolResult, because a tool call never raises to its caller.
_PASS_THROUGH = (SessionClosed, SessionLost, SandboxBusy)

# Re-exported: callers import the protocol and its capabilities from here too.
__all__ = ["SKIPPED", "Batch", "Call", "Environment", "Session", "SupportsBatch", "SupportsSnapshot"]


def parse_result(raw: Any) -> ToolResult:
    """A ToolResult from a worker's reply; anything malformed becomes a failure, never an exception."""
    try:
        return ToolResult.model_validate(raw)
    except ValidationError as exc:
        return ToolResult.failure(
            errors.WORKER_CRASHED, f"the worker returned a malformed result: {exc.errors()[0]['msg']}"
        )


def encode_args(args: Mapping[str, Any] | None) -> str | None:
    """Arguments as JSON text (what travels and what history records); None if they are not JSON."""
    try:
        return json.dumps(dict(args or {}), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return None


class Batch:
    """Steps for one session that travel in one request and run in order in its worker.

    Each step answers what its single request would: `calls` a list of ToolResults (with
    `first_ok=True` it stops after the first call that succeeds, so the list holds the attempts),
    `state` a `(state, hash)` pair, `hash` the state hash, `reset` True. A step added with
    `if_ok=True` runs only when the last call of the latest `calls` step succeeded; otherwise its
    answer is `SKIPPED` (None). Verification uses batches to check a tool in one round trip instead
    of five. A batch whose worker fails is rerun step by step, so each step then fails (or not) on
    its own exactly as separate requests would.
    """

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []

    def calls(self, calls: Sequence[Call], *, first_ok: bool = False, if_ok: bool = False) -> int:
        encoded = [(str(tool), encode_args(args)) for tool, args in calls]
        self.steps.append(
            {"op": "calls", "calls": encoded, "raw": list(calls), "first_ok": first_ok, "if_ok": if_ok}
        )
        return len(self.steps) - 1

    def state(self, *, if_ok: bool = False) -> int:
        self.steps.append({"op": "state", "if_ok": if_ok})
        return len(self.steps) - 1

    def hash(self, *, fresh: bool = False, if_ok: bool = False) -> int:
        self.steps.append({"op": "hash", "fresh": fresh, "if_ok": if_ok})
        return len(self.steps) - 1

    def reset(self, init_config: Mapping[str, Any] | None = None, *, if_ok: bool = False) -> int:
        """Like `Session.reset`: to `init_config`, or to the config the session was last reset to."""
        config = None if init_config is None else dict(init_config)
        key = None if config is None else config_key(config)
        self.steps.append({"op": "reset", "config": config, "key": key, "if_ok": if_ok})
        return len(self.steps) - 1

    @property
    def call_count(self) -> int:
        """Calls plus other steps: what the request's time and CPU budgets are sized by."""
        return sum(len(s["calls"]) if s["op"] == "calls" else 1 for s in self.steps)

    def wire(self) -> str:
        """The steps as the worker reads them (JSON; arguments are embedded as already encoded)."""
        parts = []
        for step in self.steps:
            flag = "true" if step["if_ok"] else "false"
            if step["op"] == "calls":
                body = ",".join(f"[{json.dumps(tool)},{text}]" for tool, text in step["calls"])
                first = "true" if step["first_ok"] else "false"
                parts.append(f'{{"op":"calls","first_ok":{first},"if_ok":{flag},"calls":[{body}]}}')
            elif step["op"] == "reset":
                key = step["key"]
                seed = "null" if key is None else str(config_seed(key))
                parts.append(f'{{"op":"reset","config_key":{json.dumps(key)},"seed":{seed},"if_ok":{flag}}}')
            elif step["op"] == "hash":
                fresh = "true" if step["fresh"] else "false"
                parts.append(f'{{"op":"hash","fresh":{fresh},"if_ok":{flag}}}')
            else:
                parts.append(f'{{"op":"state","if_ok":{flag}}}')
        return "[" + ",".join(parts) + "]"


class Session:
    """One environment instance in a sandbox worker. Not thread-safe per session; use one per rollout."""

    def __init__(self, sandbox: Sandbox, record: SessionRecord) -> None:
        self._sandbox = sandbox
        self._record = record

    # identity
    @property
    def id(self) -> str:
        return self._record.sid

    @property
    def bundle(self) -> Bundle:
        return self._record.bundle

    @property
    def init_config(self) -> Mapping[str, Any]:
        return self._record.current_config

    @property
    def closed(self) -> bool:
        return self._record.closed is not None

    def tools(self) -> list[dict[str, Any]]:
        return [dict(tool) for tool in self._record.bundle.tools]

    def _usable(self) -> SessionRecord:
        record = self._record
        if record.closed is not None:
            raise SessionClosed(f"session {record.sid} is closed ({record.closed}); open a new session")
        if record.lost is not None:
            raise SessionLost(
                f"session {record.sid} was lost after a worker failure: {record.lost}; open a new session"
            )
        return record

    # calls
    def call(self, tool: str, args: Mapping[str, Any] | None = None) -> ToolResult:
        record = self._usable()
        args_text = encode_args(args)
        if args_text is None:
            return ToolResult.failure(
                errors.INVALID_ARGUMENTS, f"tool `{tool}`: arguments are not JSON-serializable"
            )
        message = (
            f'{{"op":"call","sid":{json.dumps(record.sid)},"tool":{json.dumps(tool)},"args":{args_text}}}'
        )

        def remember(reply: dict[str, Any]) -> None:
            result = reply.get("result")
            if reply.get("ok") and isinstance(result, dict) and result.get("ok") is True:
                self._sandbox._remember(record, ["call", tool, args_text])

        try:
            reply = self._sandbox._request(
                record, message, timeout=self._sandbox._call_budget(1), on_reply=remember
            )
        except _PASS_THROUGH:
            raise
        except SandboxError as failure:
            return ToolResult.failure(failure.code, self._failure_text(failure))
        return parse_result(reply.get("result"))

    def call_many(self, calls: Sequence[Call]) -> list[ToolResult]:
        """Run calls in order in one round trip; each is independent (a failure does not stop the rest)."""
        record = self._usable()
        if not calls:
            return []
        encoded: list[tuple[str, str | None]] = [(str(tool), encode_args(args)) for tool, args in calls]
        sendable = [(tool, text) for tool, text in encoded if text is not None]
        body = ",".join(f"[{json.dumps(tool)},{text}]" for tool, text in sendable)
        message = f'{{"op":"call_many","sid":{json.dumps(record.sid)},"calls":[{body}]}}'

        def remember(reply: dict[str, Any]) -> None:
            results = reply.get("results")
            if not reply.get("ok") or not isinstance(results, list):
                return
            for (tool, text), result in zip(sendable, results, strict=False):
                if isinstance(result, dict) and result.get("ok") is True:
                    self._sandbox._remember(record, ["call", tool, text])

        failure: SandboxError | None = None
        worker_results: list[Any] = []
        if sendable:
            try:
                reply = self._sandbox._request(
                    record, message, timeout=self._sandbox._call_budget(len(sendable)), on_reply=remember
                )
                worker_results = list(reply.get("results") or [])
            except _PASS_THROUGH:
                raise
            except SandboxError as exc:
                failure = exc
        out: list[ToolResult] = []
        position = 0
        for tool, text in encoded:
            if text is None:
                out.append(
                    ToolResult.failure(
                        errors.INVALID_ARGUMENTS, f"tool `{tool}`: arguments are not JSON-serializable"
                    )
                )
            elif failure is not None:
                out.append(ToolResult.failure(failure.code, self._failure_text(failure)))
            else:
                out.append(parse_result(worker_results[position] if position < len(worker_results) else None))
                position += 1
        return out

    def run(self, batch: Batch) -> list[Any]:
        """Run a batch's steps in order in one round trip; returns each step's answer (see Batch)."""
        record = self._usable()
        steps = batch.steps
        if not steps:
            return []
        configs = {s["key"]: s["config"] for s in steps if s["op"] == "reset" and s["key"] is not None}
        unsendable = any(text is None for s in steps if s["op"] == "calls" for _, text in s["calls"])
        if unsendable or len(configs) > 1:
            return self._run_one_by_one(steps)
        config_part = ""
        payloads: dict[str, Any] = {}
        if configs:
            ((key, config),) = configs.items()
            config_part = f',"config_key":{json.dumps(key)}'
            payloads["config"] = config
        count = batch.call_count
        extra = self._sandbox.config.call_timeout_s * count
        message = (
            f'{{"op":"batch","sid":{json.dumps(record.sid)},"cpu_extra":{extra}{config_part},'
            f'"steps":{batch.wire()}}}'
        )

        def remember(reply: dict[str, Any]) -> None:
            if reply.get("ok"):
                self._remember_batch(steps, reply.get("results") or [])

        try:
            reply = self._sandbox._request(
                record,
                message,
                timeout=self._sandbox._call_budget(count),
                payloads=payloads,
                on_reply=remember,
            )
        except _PASS_THROUGH:
            raise
        except WorkerFailure:
            # The worker died somewhere in the batch; the session was restored to where the batch
            # began (or is lost, which the next request reports). Step by step, each step now meets
            # that failure exactly as it would have as a request of its own.
            return self._run_one_by_one(steps)
        answers = [
            self._answer(step, raw) for step, raw in zip(steps, reply.get("results") or [], strict=False)
        ]
        error = reply.get("error")
        if error:
            code, text = str(error.get("code", "internal")), str(error.get("message", ""))
            if code == "load_failed":
                raise LoadError(text)
            raise SandboxError(f"session {record.sid}: {text}", code=code)
        return answers

    def _remember_batch(self, steps: Sequence[dict[str, Any]], results: Sequence[Any]) -> None:
        record = self._record
        for step, raw in zip(steps, results, strict=False):
            if raw is None:
                continue
            if step["op"] == "calls":
                for (tool, text), result in zip(step["calls"], raw, strict=False):
                    if isinstance(result, dict) and result.get("ok") is True:
                        self._sandbox._remember(record, ["call", tool, text])
            elif step["op"] == "reset":
                if step["key"] is None:
                    config, key = record.current_config, record.current_key
                else:
                    config, key = step["config"], step["key"]
                self._sandbox._remember_reset(record, dict(config), key, config_seed(key))

    @staticmethod
    def _answer(step: dict[str, Any], raw: Any) -> Any:
        if raw is None:
            return SKIPPED
        op = step["op"]
        if op == "calls":
            return [parse_result(r) for r in raw]
        if op == "state":
            state = raw.get("state") if isinstance(raw, dict) else None
            if not isinstance(state, dict):
                raise SandboxError("a batch: the worker returned no state")
            return state, str(raw.get("hash"))
        if op == "hash":
            return str(raw)
        return True

    def _run_one_by_one(self, steps: Sequence[dict[str, Any]]) -> list[Any]:
        """The batch as separate requests (same answers; used when it cannot travel as one)."""
        return run_steps(self, steps)

    def _failure_text(self, failure: SandboxError) -> str:
        if not isinstance(failure, WorkerFailure):
            return failure.message
        if self._record.lost:
            return f"{failure.message}; this session could not be restored: {self._record.lost}"
        return f"{failure.message}; this session was restored to its state before the request"

    # state
    def state(self) -> dict[str, Any]:
        return self.state_with_hash()[0]

    def state_with_hash(self) -> tuple[dict[str, Any], str]:
        """The state and its SHA-256 (of the canonical state, computed afresh) in one request."""
        record = self._usable()
        reply = self._sandbox._request(
            record, {"op": "state", "sid": record.sid}, timeout=self._sandbox._call_budget(1)
        )
        state = reply.get("state")
        if not isinstance(state, dict):
            raise SandboxError(f"session {record.sid}: the worker returned no state")
        return state, str(reply.get("hash"))

    def state_hash(self, *, fresh: bool = False) -> str:
        """SHA-256 of the canonical state. Cached in the worker until a write succeeds; `fresh`
        recomputes it (to catch a tool declared read-only that writes anyway)."""
        record = self._usable()
        message = {"op": "hash", "sid": record.sid, "fresh": fresh}
        reply = self._sandbox._request(record, message, timeout=self._sandbox._call_budget(1))
        return str(reply["hash"])

    def describe(self) -> dict[str, Any]:
        """The class's public methods and signatures, and any invalid tool schemas (for check_env)."""
        record = self._usable()
        return self._sandbox._request(
            record, {"op": "describe", "sid": record.sid}, timeout=self._sandbox._call_budget(1)
        )

    def reset(self, init_config: Mapping[str, Any] | None = None) -> None:
        """Rebuild the environment from `init_config` (default: the config it was last reset to)."""
        record = self._usable()
        config = dict(record.current_config if init_config is None else init_config)
        key = record.current_key if init_config is None else config_key(config)
        seed = config_seed(key)
        message = {"op": "reset", "sid": record.sid, "config_key": key, "seed": seed}

        def remember(reply: dict[str, Any]) -> None:
            if reply.get("ok"):
                self._sandbox._remember_reset(record, config, key, seed)

        self._sandbox._request(
            record,
            message,
            timeout=self._sandbox._call_budget(1),
            payloads={"config": config},
            on_reply=remember,
        )

    def snapshot(self) -> Snapshot:
        record = self._usable()

        def remember(reply: dict[str, Any]) -> None:
            if reply.get("ok"):
                record.snapshots += 1
                self._sandbox._remember(record, ["snapshot"])

        reply = self._sandbox._request(
            record,
            {"op": "snapshot", "sid": record.sid},
            timeout=self._sandbox._call_budget(1),
            on_reply=remember,
        )
        return Snapshot(session_id=record.sid, index=int(reply["index"]))

    def restore(self, snapshot: Snapshot) -> None:
        record = self._usable()
        if snapshot.session_id != record.sid:
            raise SandboxError(
                f"snapshot belongs to session {snapshot.session_id}, not {record.sid}; restore it in its own session"
            )

        def remember(reply: dict[str, Any]) -> None:
            if reply.get("ok"):
                self._sandbox._remember(record, ["restore", snapshot.index])

        self._sandbox._request(
            record,
            {"op": "restore", "sid": record.sid, "index": snapshot.index},
            timeout=self._sandbox._call_budget(1),
            on_reply=remember,
        )

    def close(self) -> None:
        """Release the environment; safe to call more than once."""
        self._sandbox._close_session(self._record, reason="closed by its owner")

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        status = "closed" if self.closed else "open"
        return f"Session({self.id}, {self._record.bundle.class_name}, {status})"
