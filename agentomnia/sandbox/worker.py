"""The worker process: contain itself, then serve requests for sessions, checks and programs.

Started by the pool as `python -m agentomnia.sandbox.worker FD SETTINGS` with a clean environment
(`PYTHONHASHSEED=0` so string hashing, and therefore set order, is the same in every worker and
run). It imports and exercises everything it will need, applies `containment`, empties the import
system, says "ready", and then answers one JSON request at a time on its socket.

Messages are JSON both ways; the parent never unpickles anything a worker sends. Tool results and
states are embedded in replies as the JSON text the runtime already produced, so nothing is encoded
twice. Each request gets a CPU budget (`RLIMIT_CPU`, fatal past it) and each call a wall-clock
budget (`SIGALRM`, recoverable): a Python-level infinite loop costs one `timeout` failure, a C-level
one costs the worker, which the parent then replaces.
"""

from __future__ import annotations

import gc
import json
import os
import pickle
import signal
import sys
from collections import OrderedDict
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from agentomnia.sandbox import containment, views
from agentomnia.sandbox.deadlines import CallTimeout, Deadlines, Limits
from agentomnia.sandbox.envsession import (
    CompiledEnv,
    EnvironmentLoadError,
    EnvSession,
    describe_exception,
    load_code,
)
from agentomnia.sandbox.programs import run_check, run_program
from agentomnia.sandbox.statehash import canonical_state, state_digest

_LRU_ENVS = 64
_LRU_CONFIGS = 64
_LRU_CODE = 256
_COLLECT_EVERY = 16


def _alarm(_signum: int, _frame: object) -> None:
    raise CallTimeout()


def _arm(seconds: float | None) -> None:
    signal.setitimer(signal.ITIMER_REAL, seconds or 0.0)


class _Need(Exception):
    """The request refers to a bundle, config or code this worker does not hold; the parent resends."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


class _RequestError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _error_of(exc: BaseException) -> dict[str, str]:
    """The error a request ending in `exc` reports (the same codes `Host.handle` uses)."""
    if isinstance(exc, _RequestError):
        return {"code": exc.code, "message": str(exc)}
    if isinstance(exc, EnvironmentLoadError):
        return {"code": "load_failed", "message": str(exc)}
    if isinstance(exc, MemoryError):
        gc.collect()
        return {"code": "memory_limit", "message": "the worker ran out of memory serving the request"}
    if isinstance(exc, CallTimeout):
        return {"code": "timeout", "message": "the request ran past its time budget"}
    return {"code": "internal", "message": describe_exception(exc)}


class Host:
    """Everything a worker holds: warm environments, cached configs and code, live sessions."""

    def __init__(self, limits: Limits, cpu_seconds: float, deadlines: Deadlines) -> None:
        self.limits = limits
        self.cpu_seconds = cpu_seconds
        self.deadlines = deadlines
        self.envs: OrderedDict[str, CompiledEnv] = OrderedDict()
        self.configs: OrderedDict[str, bytes] = OrderedDict()
        self.code: OrderedDict[str, Any] = OrderedDict()
        self.sessions: dict[str, EnvSession] = {}
        self.closed = 0
        self.handlers: dict[str, Callable[[dict[str, Any]], str]] = {
            "ping": lambda m: '{"ok":true}',
            "open": self._open,
            "call": self._call,
            "call_many": self._call_many,
            "batch": self._batch,
            "state": self._state,
            "hash": self._hash,
            "reset": self._reset,
            "snapshot": self._snapshot,
            "restore": self._restore,
            "close": self._close,
            "describe": self._describe,
            "replay": self._replay,
            "check": self._check,
            "program": self._program,
            "stats": self._stats,
            "probe": lambda m: json.dumps({"ok": True, "probe": containment.probe()}),
        }

    # plumbing
    def handle(self, raw: bytes) -> bytes:
        self.deadlines.clear()
        try:
            message = json.loads(raw)
            handler = self.handlers.get(message.get("op"))
            if handler is None:
                raise _RequestError("bad_request", f"unknown op {message.get('op')!r}")
            containment.cpu_budget(self.cpu_seconds + float(message.get("cpu_extra", 0)))
            text = handler(message)
        except _Need as need:
            text = json.dumps({"ok": False, "need": need.what})
        except BaseException as exc:  # the worker must answer; anything else is reported, not fatal
            text = json.dumps({"ok": False, "error": _error_of(exc)})
        return text.encode("utf-8")

    def _session(self, message: dict[str, Any]) -> EnvSession:
        session = self.sessions.get(message.get("sid", ""))
        if session is None:
            raise _RequestError("no_session", f"this worker holds no session {message.get('sid')!r}")
        return session

    def _env(self, message: dict[str, Any]) -> CompiledEnv:
        key = message["env"]
        payload = message.get("env_payload")
        if payload is not None:
            self.envs[key] = CompiledEnv.from_payload(payload)
        env = self.envs.get(key)
        if env is None:
            raise _Need("env")
        self.envs.move_to_end(key)
        while len(self.envs) > _LRU_ENVS:
            self.envs.popitem(last=False)
        return env

    def _config(self, key: str, config: Any) -> bytes:
        if config is not None:
            self.configs[key] = pickle.dumps(config, protocol=pickle.HIGHEST_PROTOCOL)
        blob = self.configs.get(key)
        if blob is None:
            raise _Need("config")
        self.configs.move_to_end(key)
        while len(self.configs) > _LRU_CONFIGS:
            self.configs.popitem(last=False)
        return blob

    def _code(self, message: dict[str, Any]) -> Any:
        key = message["code_key"]
        payload = message.get("code")
        if payload is not None:
            self.code[key] = load_code(payload)
        code = self.code.get(key)
        if code is None:
            raise _Need("code")
        self.code.move_to_end(key)
        while len(self.code) > _LRU_CODE:
            self.code.popitem(last=False)
        return code

    # sessions
    def _new_session(self, message: dict[str, Any]) -> EnvSession:
        env = self._env(message)
        blob = self._config(message["config_key"], message.get("config"))
        return EnvSession(env, blob, int(message["seed"]), self.limits, self.deadlines)

    def _open(self, message: dict[str, Any]) -> str:
        self.sessions[message["sid"]] = self._new_session(message)
        return '{"ok":true}'

    def _call(self, message: dict[str, Any]) -> str:
        text, _ = self._session(message).call(message["tool"], message.get("args", {}))
        return '{"ok":true,"result":' + text + "}"

    def _call_many(self, message: dict[str, Any]) -> str:
        session = self._session(message)
        texts = [session.call(tool, args)[0] for tool, args in message["calls"]]
        return '{"ok":true,"results":[' + ",".join(texts) + "]}"

    def _batch(self, message: dict[str, Any]) -> str:
        """Several steps on one session in order (see `session.Batch`); answers are embedded as the
        JSON the single ops would send. A step that raises ends the batch: the steps before it stand
        and the reply names the error, as a sequence of single requests would have."""
        session = self._session(message)
        steps = message["steps"]
        blobs: dict[str, bytes] = {}
        for step in steps:  # ask for a missing config before anything runs, so nothing runs twice
            key = step.get("config_key") if step["op"] == "reset" else None
            if key is not None and key not in blobs:
                blobs[key] = self._config(
                    key, message.get("config") if key == message.get("config_key") else None
                )
        parts: list[str] = []
        ok = False
        error = "null"
        for step in steps:
            if step["if_ok"] and not ok:
                parts.append("null")
                continue
            op = step["op"]
            try:
                if op == "calls":
                    texts = []
                    ok = False
                    for tool, args in step["calls"]:
                        text, ok = session.call(tool, args)
                        texts.append(text)
                        if ok and step["first_ok"]:
                            break
                    parts.append("[" + ",".join(texts) + "]")
                elif op == "state":
                    with self.deadlines.budget(self.limits.call_timeout_s):
                        text = session.state_json()
                    parts.append('{"hash":"' + state_digest(text) + '","state":' + text + "}")
                elif op == "hash":
                    with self.deadlines.budget(self.limits.call_timeout_s):
                        parts.append('"' + session.state_hash(fresh=bool(step["fresh"])) + '"')
                elif op == "reset":
                    key = step.get("config_key")
                    if key is None:
                        session.reset()
                    else:
                        session.reset(blobs[key], int(step["seed"]))
                    parts.append("true")
                else:
                    raise _RequestError("bad_request", f"unknown batch step {op!r}")
            except BaseException as exc:
                error = json.dumps(_error_of(exc))
                break
        return '{"ok":true,"results":[' + ",".join(parts) + '],"error":' + error + "}"

    def _state(self, message: dict[str, Any]) -> str:
        session = self._session(message)
        with self.deadlines.budget(self.limits.call_timeout_s):
            text = session.state_json()
        return '{"ok":true,"hash":"' + state_digest(text) + '","state":' + text + "}"

    def _hash(self, message: dict[str, Any]) -> str:
        session = self._session(message)
        with self.deadlines.budget(self.limits.call_timeout_s):
            digest = session.state_hash(fresh=bool(message.get("fresh")))
        return '{"ok":true,"hash":"' + digest + '"}'

    def _reset(self, message: dict[str, Any]) -> str:
        session = self._session(message)
        blob = self._config(message["config_key"], message.get("config")) if "config_key" in message else None
        session.reset(blob, message.get("seed"))
        return '{"ok":true}'

    def _snapshot(self, message: dict[str, Any]) -> str:
        session = self._session(message)
        with self.deadlines.budget(self.limits.call_timeout_s):
            index = session.snapshot()
        return json.dumps({"ok": True, "index": index})

    def _restore(self, message: dict[str, Any]) -> str:
        session = self._session(message)
        try:
            with self.deadlines.budget(self.limits.call_timeout_s):
                session.restore(int(message["index"]))
        except IndexError as exc:
            raise _RequestError("no_snapshot", str(exc)) from None
        return '{"ok":true}'

    def _close(self, message: dict[str, Any]) -> str:
        session = self.sessions.pop(message.get("sid", ""), None)
        if session is not None:
            # Its state (the bulk of it) is freed here and now; what is left is a few cycles
            # (class, functions, namespace). A full collection walks every live object, and the
            # warm environment cache makes that tens of ms, so it runs every `_COLLECT_EVERY` closes.
            session.discard()
            self.closed += 1
            if self.closed % _COLLECT_EVERY == 0:
                gc.collect()
        return '{"ok":true}'

    def _describe(self, message: dict[str, Any]) -> str:
        return json.dumps({"ok": True, **self._session(message).describe()})

    def _replay(self, message: dict[str, Any]) -> str:
        """Rebuild a session in this (fresh) worker from its base config and recorded history."""
        session = self._new_session(message)
        self.sessions[message["sid"]] = session
        configs = message.get("configs", {})
        for position, event in enumerate(message.get("events", [])):
            kind = event[0]
            if kind == "call":
                text, ok = session.call(event[1], json.loads(event[2]))
                if not ok:
                    return json.dumps({"ok": True, "diverged": {"at": position, "result": json.loads(text)}})
            elif kind == "reset":
                key = event[1]
                session.reset(self._config(key, configs.get(key)), int(event[2]))
            elif kind == "snapshot":
                session.snapshot()
            elif kind == "restore":
                session.restore(int(event[1]))
        return '{"ok":true,"diverged":null}'

    def _check(self, message: dict[str, Any]) -> str:
        code = self._code(message)
        timeout = message.get("timeout_s", self.limits.call_timeout_s)
        results = [run_check(code, message["initial_json"], message["final_json"], self.deadlines, timeout)]
        return json.dumps({"ok": True, "results": results})

    def _program(self, message: dict[str, Any]) -> str:
        session = self._session(message)
        code = self._code(message)
        result = run_program(session, code, message.get("timeout_s", self.limits.call_timeout_s))
        answer = result.pop("answer_json")
        return '{"ok":true,"answer":' + answer + ',"program":' + json.dumps(result, ensure_ascii=False) + "}"

    def _stats(self, message: dict[str, Any]) -> str:
        return json.dumps(
            {
                "ok": True,
                "sessions": len(self.sessions),
                "envs": len(self.envs),
                "rss_bytes": containment.rss_bytes(),
            }
        )


_WARMUP_SOURCE = """
import json, math, re, datetime, copy, itertools, functools, collections, statistics, decimal
import random, string, typing, dataclasses, enum, uuid
from collections import defaultdict, Counter, OrderedDict, deque
from dataclasses import dataclass, field, asdict


class Color(enum.Enum):
    RED = "red"


@dataclass
class Item:
    name: str
    qty: int = 0


class WarmUp:
    def __init__(self, init_config):
        self.items = dict(init_config.get("items", {}))
        self._next = 1
        self.when = datetime.datetime.now().isoformat()

    def add(self, name: str, qty: int = 1):
        item = Item(name, qty)
        self.items[name] = asdict(item)
        self._next += 1
        self.tags = {random.choice("abc"), str(uuid.uuid4())}
        return {"ok": True, "data": f"{name}:{qty}:{Color.RED.value}:{decimal.Decimal('1.5') * 2}", "error": None}

    def boom(self):
        raise KeyError("warm")
"""

_WARMUP_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "",
            "parameters": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "qty": {"type": "integer", "minimum": 0}},
                "required": ["name"],
                "additionalProperties": False,
            },
        },
    },
    {"type": "function", "function": {"name": "boom", "description": "", "parameters": {"type": "object"}}},
]


def _warm_up(deadlines: Deadlines, limits: Limits) -> None:
    """Exercise every code path once, so nothing needs importing after imports are blocked."""
    import base64
    import marshal

    code = compile(_WARMUP_SOURCE, "<env:warmup>", "exec")
    payload = {
        "key": "warmup",
        "code": base64.b64encode(marshal.dumps(code)).decode("ascii"),
        "class_name": "WarmUp",
        "tools": _WARMUP_TOOLS,
    }
    env = CompiledEnv.from_payload(payload)
    session = EnvSession(env, pickle.dumps({"items": {}}), 1, limits, deadlines)
    session.call("add", {"name": "x", "qty": 2})
    session.call("add", {"name": 3})
    session.call("add", {"name": "x", "zz": 1})
    session.call("boom", {})
    session.call("missing", {})
    session.snapshot()
    session.restore(0)
    session.state_hash()
    mixed: dict[Any, Any] = {"a": {1, 2}, "b": views.datetime(2025, 1, 1), 3: "mixed"}
    canonical_state(mixed)
    check = compile(
        "def check_func(final_state):\n    return final_state == initial_state\n", "<check:warmup>", "exec"
    )
    run_check(check, "{}", "{}", deadlines, 1.0)
    program = compile("def solve(call):\n    return call('add', name='y')\n", "<program:warmup>", "exec")
    run_program(session, program, 1.0)
    json.dumps({"é": 1}, ensure_ascii=False).encode("utf-8")


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    fd = int(args[0])
    settings = json.loads(args[1])
    conn = Connection(fd)
    signal.signal(signal.SIGALRM, _alarm)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    deadlines = Deadlines(_arm)
    limits = Limits(
        call_timeout_s=settings.pop("call_timeout_s"),
        max_result_bytes=settings.pop("max_result_bytes"),
        max_program_calls=settings.pop("max_program_calls"),
    )
    _warm_up(deadlines, limits)
    try:
        report = containment.apply(containment.Settings(**settings))
    except Exception as exc:
        conn.send_bytes(json.dumps({"ready": False, "error": f"{type(exc).__name__}: {exc}"}).encode())
        return
    # What exists now (modules, the warmed-up machinery) lives as long as the worker: keep it out
    # of every later cycle collection.
    gc.collect()
    gc.freeze()
    host = Host(limits, float(settings.get("cpu_seconds", 10)), deadlines)
    send, recv = conn.send_bytes, conn.recv_bytes
    pid = os.getpid()
    containment.block_imports()
    report["imports_blocked"] = True
    send(json.dumps({"ready": True, "pid": pid, "containment": report}).encode())
    while True:
        try:
            raw = recv()
        except (EOFError, OSError):
            break
        send(host.handle(raw))


if __name__ == "__main__":
    main()
