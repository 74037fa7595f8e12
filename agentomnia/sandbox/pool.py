"""The worker pool: processes, admission control, kill-and-replace and session recovery.

Each slot runs one worker process and serves one request at a time (a worker is single-threaded),
so sessions are pinned to a slot and many sessions share a worker. Callers on many threads are
admitted up to `max_pending` requests at once across the pool (in flight plus queued); past that,
or after waiting `queue_timeout_s` for a slot, a request fails fast with `SandboxBusy` instead of
queueing without bound.

When a worker breaks a limit (hard timeout, CPU limit, memory, crash) the slot kills it, starts a
replacement and rebuilds every session it hosted by replaying that session's recorded history (its
initial config plus each successful call, reset, snapshot and restore, in order). Environments are
deterministic by construction (seeded ambient, `PYTHONHASHSEED=0`), so the replay reproduces the
state exactly; a session whose replay diverges is marked lost and says so. The request that broke
the worker gets a precise failure; everyone else just waited a little.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import psutil

import agentomnia
from agentomnia.sandbox import errors
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.errors import SandboxBusy, SandboxError, WorkerFailure

_NOBODY = 65534
_MAX_REPLY_BYTES = 256 * 1024 * 1024

_PAYLOAD_FIELDS = {"env": "env_payload", "config": "config", "code": "code"}


@dataclass(frozen=True)
class WorkerSettings:
    """Limits and containment options passed to every worker."""

    call_timeout_s: float
    cpu_seconds: int
    memory_mb: int
    max_result_bytes: int
    max_program_calls: int
    drop_privileges: bool
    syscall_filter: bool
    network_namespace: bool
    grace_s: float
    startup_timeout_s: float = 60.0
    reply_spin_s: float = 0.0  # see WorkerProcess.request; the worker itself never spins


@dataclass
class SessionRecord:
    """The parent's copy of what it takes to rebuild a session anywhere: base config and history."""

    sid: str
    bundle: Bundle
    env_payload: dict[str, Any]
    base_config: Mapping[str, Any]
    base_key: str
    seed: int
    slot: int
    current_config: Mapping[str, Any] = field(default_factory=dict)
    current_key: str = ""
    history: list[list[Any]] = field(default_factory=list)
    configs: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    snapshots: int = 0
    last_used: float = field(default_factory=time.monotonic)
    busy: int = 0
    closed: str | None = None
    lost: str | None = None
    history_overflow: bool = False


class _Dead(Exception):
    def __init__(self, returncode: int | None, timed_out: bool, detail: str = "") -> None:
        super().__init__(detail)
        self.returncode = returncode
        self.timed_out = timed_out
        self.detail = detail


class WorkerProcess:
    """One worker process and its connection."""

    def __init__(self, slot: int, generation: int, settings: WorkerSettings, scratch: Path) -> None:
        self.slot = slot
        self.generation = generation
        self.settings = settings
        self.scratch = scratch / f"w{slot}"
        self.scratch.mkdir(parents=True, exist_ok=True)
        self.log_path = scratch / f"w{slot}-{generation}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.conn: Connection | None = None
        self.poller: select.poll | None = None  # waits for the worker's reply on `conn`
        self.containment: dict[str, Any] = {}
        self.pid = 0

    def launch(self) -> None:
        if os.geteuid() == 0 and self.settings.drop_privileges:
            os.chown(self.scratch, _NOBODY, _NOBODY)
        parent_sock, child_sock = socket.socketpair()
        worker_settings = {
            "scratch": str(self.scratch),
            "memory_mb": self.settings.memory_mb,
            "cpu_seconds": self.settings.cpu_seconds,
            "drop_privileges": self.settings.drop_privileges,
            "syscall_filter": self.settings.syscall_filter,
            "network_namespace": self.settings.network_namespace,
            "call_timeout_s": self.settings.call_timeout_s,
            "max_result_bytes": self.settings.max_result_bytes,
            "max_program_calls": self.settings.max_program_calls,
        }
        package_root = str(Path(agentomnia.__file__).resolve().parent.parent)
        env = {
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": package_root,
            "PYTHONIOENCODING": "utf-8",
            "PATH": os.defpath,
            "LANG": "C.UTF-8",
        }
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-s",
                    "-m",
                    "agentomnia.sandbox.worker",
                    str(child_sock.fileno()),
                    json.dumps(worker_settings),
                ],
                pass_fds=[child_sock.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                cwd=str(self.scratch),
                env=env,
                start_new_session=True,
            )
        child_sock.close()
        self.conn = Connection(parent_sock.detach())
        self.poller = select.poll()
        self.poller.register(self.conn.fileno(), select.POLLIN)

    def wait_ready(self) -> None:
        assert self.conn is not None and self.proc is not None
        if not self.conn.poll(self.settings.startup_timeout_s):
            self.kill()
            raise SandboxError(
                f"sandbox worker {self.slot} did not start within {self.settings.startup_timeout_s} s; {self.log_tail()}"
            )
        try:
            hello = json.loads(self.conn.recv_bytes(1 << 20))
        except (EOFError, OSError, ValueError):
            self.kill()
            raise SandboxError(f"sandbox worker {self.slot} died while starting; {self.log_tail()}") from None
        if not hello.get("ready"):
            self.kill()
            raise SandboxError(f"sandbox worker {self.slot} refused to start: {hello.get('error')}")
        self.pid = int(hello["pid"])
        self.containment = hello.get("containment", {})

    def request(self, payload: bytes, timeout: float, *, spin_s: float = 0.0) -> bytes:
        """Send one request and wait for its reply. With `spin_s`, first watch for the reply without
        sleeping for that long: most calls answer within tens of microseconds, and waking a sleeping
        process costs more than that on a virtual machine."""
        conn, proc, poller = self.conn, self.proc, self.poller
        if conn is None or proc is None or poller is None:
            raise _Dead(None, False, "worker is not running")
        try:
            conn.send_bytes(payload)
            # One poll object per connection: Connection.poll would build a selector every time.
            if spin_s > 0.0 and _spun(poller, spin_s):
                return conn.recv_bytes(_MAX_REPLY_BYTES)
            if not poller.poll(_milliseconds(timeout)):
                self.kill()
                raise _Dead(proc.returncode, True)
            return conn.recv_bytes(_MAX_REPLY_BYTES)
        except (EOFError, OSError, BrokenPipeError) as exc:
            try:
                proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                self.kill()
            raise _Dead(proc.returncode, False, str(exc)) from None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
            # SIGKILL cannot be ignored; the wait only covers a slow teardown of a large address space.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=30.0)
        if self.conn is not None:
            self.conn.close()
            self.conn = None
            self.poller = None

    def rss_bytes(self) -> int:
        try:
            return int(psutil.Process(self.pid).memory_info().rss)
        except (psutil.Error, ValueError):
            return 0

    def log_tail(self, chars: int = 600) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "no worker log"
        text = text.strip()
        return f"worker log ends: {text[-chars:]}" if text else "the worker log is empty"


@dataclass
class _Slot:
    index: int
    worker: WorkerProcess
    lock: threading.Lock = field(default_factory=threading.Lock)
    sessions: dict[str, SessionRecord] = field(default_factory=dict)
    pending: int = 0
    replacements: int = 0


Reply = dict[str, Any]
Message = dict[str, Any] | str


class Pool:
    """Worker slots with admission control and recovery; the Sandbox is its only client."""

    def __init__(
        self,
        workers: int,
        settings: WorkerSettings,
        scratch: Path,
        *,
        max_pending: int,
        queue_timeout_s: float,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers={workers}: the sandbox needs at least one worker")
        self.settings = settings
        self.scratch = scratch
        self.max_pending = max_pending
        self.queue_timeout_s = queue_timeout_s
        self._admit = threading.Lock()
        self._pending = 0
        self._closed = False
        launched = [WorkerProcess(i, 0, settings, scratch) for i in range(workers)]
        try:
            for worker in launched:
                worker.launch()
            for worker in launched:
                worker.wait_ready()
        except BaseException:
            for worker in launched:
                worker.kill()
            raise
        self.slots = [_Slot(i, worker) for i, worker in enumerate(launched)]

    # admission
    def _enter(self) -> None:
        with self._admit:
            if self._closed:
                raise SandboxError("the sandbox is closed; open a new one")
            if self._pending >= self.max_pending:
                raise SandboxBusy(
                    f"the sandbox is busy: {self._pending} requests are in flight or queued (max_pending="
                    f"{self.max_pending}); retry later, batch calls with call_many, or raise max_pending"
                )
            self._pending += 1

    def _leave(self) -> None:
        with self._admit:
            self._pending -= 1

    @property
    def pending(self) -> int:
        """Requests admitted and not yet answered (in flight plus queued)."""
        return self._pending

    def pick_slot(self) -> int:
        return min(self.slots, key=lambda s: (len(s.sessions), s.pending, s.index)).index

    def quietest_slot(self) -> int:
        return min(self.slots, key=lambda s: (s.pending, len(s.sessions), s.index)).index

    # requests
    def request(
        self,
        slot_index: int,
        message: Message,
        *,
        timeout: float,
        payloads: Mapping[str, Any] | None = None,
        on_reply: Callable[[Reply], None] | None = None,
    ) -> Reply:
        """Send one request; resend with payloads the worker asks for; recover the slot on a failure.

        `on_reply` runs under the slot lock, so bookkeeping (history) and recovery never interleave.
        """
        self._enter()
        slot = self.slots[slot_index]
        try:
            slot.pending += 1
            if not slot.lock.acquire(timeout=self.queue_timeout_s):
                raise SandboxBusy(
                    f"worker {slot_index} stayed busy for {self.queue_timeout_s} s; retry later or use more workers"
                )
            try:
                reply = self._exchange(slot, message, timeout, payloads or {})
                if on_reply is not None:
                    on_reply(reply)
                return reply
            finally:
                slot.lock.release()
        finally:
            slot.pending -= 1
            self._leave()

    def _exchange(
        self,
        slot: _Slot,
        message: Message,
        timeout: float,
        payloads: Mapping[str, Any],
    ) -> Reply:
        proc = slot.worker.proc
        if proc is not None and proc.poll() is not None:
            # The worker died between requests (killed from outside): rebuild before serving.
            self._recover(slot)
        for _ in range(len(_PAYLOAD_FIELDS) + 1):
            raw = (
                message.encode("utf-8")
                if isinstance(message, str)
                else json.dumps(message, ensure_ascii=False).encode("utf-8")
            )
            try:
                # the only request in flight spins for its reply; with others in flight the CPU is theirs
                spin = self.settings.reply_spin_s if self._pending == 1 and _core_to_spare() else 0.0
                answer = slot.worker.request(raw, timeout, spin_s=spin)
                reply: Reply = json.loads(answer)
            except _Dead as dead:
                failure = self._describe_death(slot, dead, timeout)
                self._recover(slot)
                raise failure from None
            except (ValueError, RecursionError):
                slot.worker.kill()
                failure = WorkerFailure(
                    f"worker {slot.index} sent a malformed reply and was replaced", code=errors.WORKER_CRASHED
                )
                self._recover(slot)
                raise failure from None
            need = reply.get("need") if isinstance(reply, dict) else None
            if need is None:
                return reply
            if need not in _PAYLOAD_FIELDS or need not in payloads:
                raise SandboxError(f"worker {slot.index} needs the {need} but the request carries none")
            message = dict(json.loads(message)) if isinstance(message, str) else dict(message)
            message[_PAYLOAD_FIELDS[need]] = payloads[need]
        raise SandboxError(f"worker {slot.index} kept asking for payloads; giving up")

    def _describe_death(self, slot: _Slot, dead: _Dead, timeout: float) -> WorkerFailure:
        tail = slot.worker.log_tail()
        code = dead.returncode
        if dead.timed_out:
            return WorkerFailure(
                f"the request ran past {timeout:.1f} s (likely a loop inside C code that cannot be interrupted); "
                f"worker {slot.index} was killed and replaced and its other sessions restored",
                code=errors.TIMEOUT,
            )
        if code == -signal.SIGXCPU:
            return WorkerFailure(
                f"the request used more than {self.settings.cpu_seconds} s of CPU; worker {slot.index} was stopped "
                "and replaced and its other sessions restored",
                code=errors.CPU_LIMIT,
            )
        if code == -signal.SIGKILL:
            return WorkerFailure(
                f"worker {slot.index} was killed by the system (most likely out of memory) and replaced",
                code=errors.MEMORY_LIMIT,
            )
        return WorkerFailure(
            f"worker {slot.index} died (exit status {code}) and was replaced and its other sessions restored; {tail}",
            code=errors.WORKER_CRASHED,
        )

    # recovery
    def _replace(self, slot: _Slot) -> None:
        slot.worker.kill()
        replacement = WorkerProcess(slot.index, slot.worker.generation + 1, self.settings, self.scratch)
        replacement.launch()
        replacement.wait_ready()
        slot.worker = replacement
        slot.replacements += 1

    def _recover(self, slot: _Slot) -> None:
        """Replace the worker and rebuild its sessions by replay (caller holds the slot lock)."""
        self._replace(slot)
        for record in list(slot.sessions.values()):
            if record.closed or record.lost:
                continue
            if record.history_overflow:
                record.lost = (
                    "its history exceeded max_history, so it could not be replayed after a worker failure"
                )
                continue
            message = replay_message(record)
            budget = self.settings.call_timeout_s * (len(record.history) + 2) + self.settings.grace_s
            try:
                reply = json.loads(
                    slot.worker.request(json.dumps(message, ensure_ascii=False).encode("utf-8"), budget)
                )
            except (_Dead, ValueError):
                record.lost = "the replacement worker failed while replaying its history"
                self._replace(slot)
                continue
            if not reply.get("ok"):
                record.lost = f"replaying its history failed: {reply.get('error', {}).get('message', reply)}"
            elif reply.get("diverged") is not None:
                at = reply["diverged"]["at"]
                record.lost = (
                    f"replaying its history diverged at event {at}: the environment is not deterministic "
                    "(check_env names the likely cause)"
                )

    def close(self) -> None:
        with self._admit:
            self._closed = True
        for slot in self.slots:
            slot.worker.kill()


def replay_message(record: SessionRecord) -> dict[str, Any]:
    return {
        "op": "replay",
        "sid": record.sid,
        "env": record.env_payload["key"],
        "env_payload": record.env_payload,
        "config_key": record.base_key,
        "config": dict(record.base_config),
        "seed": record.seed,
        "events": record.history,
        "configs": {key: dict(value) for key, value in record.configs.items()},
        "cpu_extra": len(record.history) * 0.05,
    }


_CORES = os.cpu_count() or 1
_spare = {"checked": -1.0, "spare": False}


def _core_to_spare(every_s: float = 0.05) -> bool:
    """Whether no more threads are ready to run than the machine has cores (read from the kernel's
    run queue at most every `every_s`): watching for a reply on a busy machine takes a core from
    work that would use it."""
    now = time.monotonic()
    if now - _spare["checked"] >= every_s:
        _spare["checked"] = now
        try:
            with open("/proc/loadavg", "rb") as f:
                running = int(f.read().split()[3].split(b"/")[0])
        except (OSError, ValueError, IndexError):
            running = _CORES + 1
        _spare["spare"] = running <= _CORES
    return bool(_spare["spare"])


def _spun(poller: select.poll, seconds: float) -> bool:
    """Whether a reply arrived while polling without sleeping for up to `seconds`."""
    poll, clock = poller.poll, time.perf_counter
    end = clock() + seconds
    while not poll(0):
        if clock() >= end:
            return False
    return True


def _milliseconds(timeout: float) -> int:
    """A timeout in seconds as `poll` takes it: whole milliseconds, rounded up, within an int."""
    return math.ceil(min(max(timeout, 0.0), 2_000_000.0) * 1000)
