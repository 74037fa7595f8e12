"""The Sandbox: the one entry point through which the project runs generated code.

    with Sandbox(workers=2) as sandbox:
        session = sandbox.open(Bundle.load("envs/e1"))
        result = session.call("get_order", {"order_id": "O-1"})
        check = sandbox.run_check(check_code, initial_state, session.state())
        program = sandbox.run_program(program_code, session)

Everything is admitted through the pool's bounded queue; sessions beyond `max_sessions` (after idle
ones are reaped) are refused with `SandboxBusy`; idle sessions are closed after `idle_timeout_s`.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentomnia.records import ToolError, ToolResult
from agentomnia.sandbox import errors, policy
from agentomnia.sandbox.bundle import Bundle, config_key, config_seed
from agentomnia.sandbox.errors import (
    LoadError,
    PolicyError,
    SandboxBusy,
    SandboxError,
    SessionLost,
    WorkerFailure,
)
from agentomnia.sandbox.pool import Message, Pool, SessionRecord, WorkerSettings
from agentomnia.sandbox.results import CheckResult, ProgramCall, ProgramResult
from agentomnia.sandbox.session import Session


class SandboxConfig(BaseModel):
    """Limits and pool settings; every field has a default that suits a 2-core machine."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    workers: int = Field(default=2, ge=1, le=256)
    call_timeout_s: float = Field(default=5.0, gt=0, description="wall-clock budget of one tool call")
    cpu_seconds: int = Field(
        default=10, ge=1, description="CPU budget of one request; the worker dies past it"
    )
    memory_mb: int = Field(default=1024, ge=256, description="address-space limit of each worker")
    max_sessions: int = Field(default=512, ge=1)
    max_pending: int | None = Field(
        default=None, description="requests admitted at once; default 64 per worker"
    )
    queue_timeout_s: float = Field(default=30.0, gt=0)
    idle_timeout_s: float = Field(default=900.0, ge=0, description="0 disables reaping")
    scratch_dir: Path | None = None
    max_result_bytes: int = Field(default=1_000_000, ge=1024)
    max_history: int = Field(default=100_000, ge=0, description="events kept per session for crash recovery")
    max_program_calls: int = Field(default=2_000, ge=1)
    drop_privileges: bool = True
    syscall_filter: bool = True
    network_namespace: bool = True
    grace_s: float = Field(default=1.0, ge=0.1, description="extra wait before a stuck worker is killed")
    reply_spin_us: float = Field(
        default=50.0,
        ge=0,
        le=10_000,
        description="how long the only request in flight watches for its reply before it sleeps; most "
        "calls answer sooner, and waking a sleeping process costs more on a virtual machine (0: never)",
    )

    @model_validator(mode="after")
    def _cpu_covers_timeout(self) -> SandboxConfig:
        if self.cpu_seconds < self.call_timeout_s:
            raise ValueError(
                f"cpu_seconds={self.cpu_seconds} is below call_timeout_s={self.call_timeout_s}; a call would be "
                "killed for CPU before its timeout could stop it cleanly: raise cpu_seconds"
            )
        return self

    @property
    def pending_limit(self) -> int:
        return self.max_pending if self.max_pending is not None else 64 * self.workers


class Sandbox:
    """A pool of contained workers that hosts environment sessions and runs checks and programs."""

    def __init__(
        self,
        workers: int = 2,
        *,
        call_timeout_s: float = 5.0,
        cpu_seconds: int = 10,
        memory_mb: int = 1024,
        max_sessions: int = 512,
        scratch_dir: str | Path | None = None,
        **options: Any,
    ) -> None:
        config = SandboxConfig(
            workers=workers,
            call_timeout_s=call_timeout_s,
            cpu_seconds=cpu_seconds,
            memory_mb=memory_mb,
            max_sessions=max_sessions,
            scratch_dir=Path(scratch_dir) if scratch_dir is not None else None,
            **options,
        )
        self.config = config
        self._own_scratch = config.scratch_dir is None
        self.scratch = (
            Path(tempfile.mkdtemp(prefix="agentomnia-sandbox-"))
            if config.scratch_dir is None
            else config.scratch_dir
        )
        self.scratch.mkdir(parents=True, exist_ok=True)
        settings = WorkerSettings(
            call_timeout_s=config.call_timeout_s,
            cpu_seconds=config.cpu_seconds,
            memory_mb=config.memory_mb,
            max_result_bytes=config.max_result_bytes,
            max_program_calls=config.max_program_calls,
            drop_privileges=config.drop_privileges,
            syscall_filter=config.syscall_filter,
            network_namespace=config.network_namespace,
            grace_s=config.grace_s,
            reply_spin_s=config.reply_spin_us / 1e6,
        )
        self._pool = Pool(
            config.workers,
            settings,
            self.scratch,
            max_pending=config.pending_limit,
            queue_timeout_s=config.queue_timeout_s,
        )
        self._lock = threading.Lock()
        self._records: dict[str, SessionRecord] = {}
        self._counter = 0
        self._s0_keys: dict[str, str] = {}
        self._closed = False
        self._stop = threading.Event()
        self._finalizer = weakref.finalize(
            self, _shutdown, self._pool, self.scratch if self._own_scratch else None
        )
        self._reaper: threading.Thread | None = None
        if config.idle_timeout_s > 0:
            interval = max(0.05, min(config.idle_timeout_s / 4, 30.0))
            self._reaper = threading.Thread(
                target=_reap_forever,
                args=(weakref.ref(self), self._stop, interval),
                name="sandbox-reaper",
                daemon=True,
            )
            self._reaper.start()

    @classmethod
    def from_config(cls, config: SandboxConfig) -> Sandbox:
        fields = config.model_dump(
            exclude={"workers", "call_timeout_s", "cpu_seconds", "memory_mb", "max_sessions", "scratch_dir"}
        )
        return cls(
            config.workers,
            call_timeout_s=config.call_timeout_s,
            cpu_seconds=config.cpu_seconds,
            memory_mb=config.memory_mb,
            max_sessions=config.max_sessions,
            scratch_dir=config.scratch_dir,
            **fields,
        )

    # ------------------------------------------------------------ sessions

    def open(self, bundle: Bundle, init_config: Mapping[str, Any] | None = None) -> Session:
        """Start a session of `bundle` at `init_config` (default: the bundle's s0).

        Raises PolicyError if the code fails the static policy, LoadError if the class cannot be
        built, SandboxBusy when `max_sessions` are open and none is idle.
        """
        self._check_open()
        prepared = policy.prepare(bundle.source, "env", label=f"environment `{bundle.class_name}`")
        env_payload = bundle.worker_payload(prepared.payload)
        env_key = str(env_payload["key"])
        config = dict(bundle.s0 if init_config is None else init_config)
        if init_config is None:
            key = self._s0_keys.get(env_key)
            if key is None:
                key = self._s0_keys[env_key] = config_key(config)
        else:
            key = config_key(config)
        if len(self.sessions()) >= self.config.max_sessions:
            self.reap_idle()
        with self._lock:
            live = sum(1 for r in self._records.values() if r.closed is None)
            if live >= self.config.max_sessions:
                raise SandboxBusy(
                    f"{live} sessions are open (max_sessions={self.config.max_sessions}); close finished "
                    "sessions or raise max_sessions"
                )
            self._counter += 1
            sid = f"s{self._counter}"
            slot = self._pool.pick_slot()
            record = SessionRecord(
                sid=sid,
                bundle=bundle,
                env_payload=env_payload,
                base_config=config,
                base_key=key,
                seed=config_seed(key),
                slot=slot,
                current_config=config,
                current_key=key,
            )
            self._records[sid] = record
            self._pool.slots[slot].sessions[sid] = record
        message = {"op": "open", "sid": sid, "env": env_key, "config_key": key, "seed": record.seed}
        try:
            self._request(
                record,
                message,
                timeout=self._call_budget(1),
                payloads={"env": record.env_payload, "config": config},
                check_open=False,
            )
        except SandboxError as exc:
            self._forget(record)
            if isinstance(exc, LoadError | PolicyError):
                raise
            raise LoadError(f"environment `{bundle.class_name}` could not be opened: {exc.message}") from None
        return Session(self, record)

    def sessions(self) -> list[str]:
        with self._lock:
            return [sid for sid, r in self._records.items() if r.closed is None]

    def reap_idle(self) -> int:
        """Close sessions idle for longer than `idle_timeout_s`; returns how many were closed."""
        with self._lock:
            reaped = self._reap_locked()
        for record in reaped:
            self._drop_in_worker(record)
        return len(reaped)

    # ------------------------------------------------------------ checks and programs

    def run_check(
        self,
        code: str,
        initial_state: Mapping[str, Any],
        final_state: Mapping[str, Any],
        *,
        timeout_s: float | None = None,
    ) -> CheckResult:
        """Run OmniaBench's check contract: `check_func(final_state) -> bool` with `initial_state` in scope."""
        self._check_open()
        try:
            prepared = policy.prepare(code, "check", label="check code")
        except PolicyError as exc:
            return CheckResult(
                passed=None, error=ToolError(code=errors.POLICY_VIOLATION, message=exc.message)
            )
        message = {
            "op": "check",
            "code_key": prepared.key,
            "initial_json": json.dumps(dict(initial_state), ensure_ascii=False, default=str),
            "final_json": json.dumps(dict(final_state), ensure_ascii=False, default=str),
            "timeout_s": timeout_s or self.config.call_timeout_s,
        }
        budget = (timeout_s or self.config.call_timeout_s) + self.config.grace_s
        try:
            reply = self._pool.request(
                self._pool.quietest_slot(), message, timeout=budget, payloads={"code": prepared.payload}
            )
        except WorkerFailure as failure:
            return CheckResult(passed=None, error=ToolError(code=failure.code, message=failure.message))
        if not reply.get("ok"):
            error = reply.get("error") or {}
            return CheckResult(
                passed=None,
                error=ToolError(
                    code=str(error.get("code", "internal")), message=str(error.get("message", ""))
                ),
            )
        result = reply["results"][0]
        error = result.get("error")
        return CheckResult(
            passed=result.get("passed"),
            error=ToolError(code=str(error["code"]), message=str(error["message"])) if error else None,
        )

    def run_program(self, code: str, session: Session, *, timeout_s: float | None = None) -> ProgramResult:
        """Run a task program against `session`.

        Contract: the code defines `solve(call)`; `call(tool_name, **arguments)` executes one tool call
        against the session (validated, all-or-nothing, recorded) and returns the ToolResult as a
        dict `{"ok", "data", "error"}`; `solve` returns the answer (JSON; usually a dict). Calls that
        succeed stay applied when the program later fails; a program that breaks a worker limit
        leaves the session as it was before the program started.
        """
        self._check_open()
        record = session._usable()
        try:
            prepared = policy.prepare(code, "program", label="task program")
        except PolicyError as exc:
            return ProgramResult(error=ToolError(code=errors.POLICY_VIOLATION, message=exc.message))
        budget_s = timeout_s or self.config.call_timeout_s * 4
        message = {
            "op": "program",
            "sid": record.sid,
            "code_key": prepared.key,
            "timeout_s": budget_s,
            "cpu_extra": budget_s,
        }

        def remember(reply: dict[str, Any]) -> None:
            program = reply.get("program") or {}
            for tool, args_text, _, ok in program.get("calls", []):
                if ok:
                    self._remember(record, ["call", tool, args_text])

        try:
            reply = self._request(
                record,
                message,
                timeout=budget_s + self.config.grace_s,
                payloads={"code": prepared.payload},
                on_reply=remember,
            )
        except WorkerFailure as failure:
            return ProgramResult(error=ToolError(code=failure.code, message=failure.message))
        program = reply.get("program") or {}
        calls = [
            ProgramCall(
                tool=tool,
                arguments=json.loads(args_text),
                result=ToolResult.model_validate(json.loads(result_text)),
            )
            for tool, args_text, result_text, _ in program.get("calls", [])
        ]
        error = program.get("error")
        return ProgramResult(
            answer=reply.get("answer"),
            calls=calls,
            stdout=str(program.get("stdout", "")),
            error=ToolError(code=str(error["code"]), message=str(error["message"])) if error else None,
        )

    # ------------------------------------------------------------ introspection

    def containment(self) -> dict[str, Any]:
        """Which containment layers hold in the workers (see `agentomnia.sandbox.containment`)."""
        return dict(self._pool.slots[0].worker.containment)

    def probe(self, slot: int = 0) -> dict[str, str]:
        """Ask a worker to try forking, connecting, writing a file and exec'ing from trusted code."""
        reply = self._pool.request(slot, {"op": "probe"}, timeout=10.0)
        return dict(reply.get("probe", {}))

    def stats(self) -> dict[str, Any]:
        workers = []
        for slot in self._pool.slots:
            workers.append(
                {
                    "slot": slot.index,
                    "pid": slot.worker.pid,
                    "sessions": len([r for r in slot.sessions.values() if r.closed is None]),
                    "rss_bytes": slot.worker.rss_bytes(),
                    "replacements": slot.replacements,
                }
            )
        return {"workers": workers, "sessions": len(self.sessions()), "pending": self._pool.pending}

    def worker_pids(self) -> list[int]:
        return [slot.worker.pid for slot in self._pool.slots]

    # ------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Close every session and stop the workers; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        with self._lock:
            for record in self._records.values():
                if record.closed is None:
                    record.closed = "the sandbox was closed"
        self._finalizer()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ internals used by Session

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxError("the sandbox is closed; create a new Sandbox")

    def _call_budget(self, calls: int) -> float:
        return self.config.call_timeout_s * max(1, calls) + self.config.grace_s

    def _request(
        self,
        record: SessionRecord,
        message: Message,
        *,
        timeout: float,
        payloads: Mapping[str, Any] | None = None,
        on_reply: Callable[[dict[str, Any]], None] | None = None,
        check_open: bool = True,
    ) -> dict[str, Any]:
        if check_open:
            self._check_open()
        record.busy += 1
        try:
            reply = self._pool.request(
                record.slot, message, timeout=timeout, payloads=payloads, on_reply=on_reply
            )
        finally:
            record.busy -= 1
            record.last_used = time.monotonic()
        if not reply.get("ok"):
            error = reply.get("error") or {}
            code = str(error.get("code", "internal"))
            text = str(error.get("message", "the worker refused the request"))
            if code == "load_failed":
                raise LoadError(text)
            if code == "no_session":
                record.lost = record.lost or "its worker no longer holds it"
                raise SessionLost(f"session {record.sid} was lost: {record.lost}; open a new session")
            raise SandboxError(f"session {record.sid}: {text}", code=code)
        return reply

    def _remember(self, record: SessionRecord, event: list[Any]) -> None:
        if record.history_overflow:
            return
        record.history.append(event)
        if len(record.history) > self.config.max_history:
            record.history_overflow = True
            record.history.clear()

    def _remember_reset(self, record: SessionRecord, config: dict[str, Any], key: str, seed: int) -> None:
        record.current_config, record.current_key = config, key
        if record.snapshots == 0:
            # Nothing before the reset can be restored to, so the reset becomes the new replay base.
            record.base_config, record.base_key, record.seed = config, key, seed
            record.history.clear()
            record.configs.clear()
            record.history_overflow = False
            return
        record.configs[key] = config
        self._remember(record, ["reset", key, seed])

    def _close_session(self, record: SessionRecord, *, reason: str) -> None:
        with self._lock:
            if record.closed is not None:
                return
            record.closed = reason
        if not self._closed:
            # The worker may be gone or busy; its copy then dies with it.
            with contextlib.suppress(SandboxError):
                self._pool.request(
                    record.slot, {"op": "close", "sid": record.sid}, timeout=self._call_budget(1)
                )
        self._forget(record)

    def _forget(self, record: SessionRecord) -> None:
        with self._lock:
            if record.closed is None:
                record.closed = "it failed to open"
            self._records.pop(record.sid, None)
            self._pool.slots[record.slot].sessions.pop(record.sid, None)

    def _reap_locked(self) -> list[SessionRecord]:
        limit = self.config.idle_timeout_s
        if limit <= 0:
            return []
        now = time.monotonic()
        idle = [
            r
            for r in self._records.values()
            if r.closed is None and r.busy == 0 and now - r.last_used > limit
        ]
        for record in idle:
            record.closed = f"reaped after {limit:.0f} s idle"
            self._records.pop(record.sid, None)
            self._pool.slots[record.slot].sessions.pop(record.sid, None)
        return idle

    def _drop_in_worker(self, record: SessionRecord) -> None:
        with contextlib.suppress(SandboxError):
            self._pool.request(record.slot, {"op": "close", "sid": record.sid}, timeout=self._call_budget(1))


def _reap_forever(ref: weakref.ref[Sandbox], stop: threading.Event, interval: float) -> None:
    # Holds the sandbox only weakly, so a sandbox nobody closed can still be collected.
    while not stop.wait(interval):
        sandbox = ref()
        if sandbox is None:
            return
        sandbox.reap_idle()
        del sandbox


def _shutdown(pool: Pool, scratch: Path | None) -> None:
    pool.close()
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)
