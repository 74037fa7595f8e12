"""The sandbox: every piece of generated code the project runs goes through here.

Environment classes, check functions, verifier code and task programs are machine-written Python.
OmniaBench's own runtime `exec`s them in-process with full builtins; this package runs them with a
static policy, run-time guards and contained worker processes, with deterministic resets and a
pool that serves many sessions at once.

    from agentomnia.sandbox import Sandbox, Bundle, check_env

    with Sandbox(workers=2) as sandbox:
        session = sandbox.open(Bundle.load("path/to/bundle"))
        session.call("get_order", {"order_id": "O-0001"})      # -> ToolResult
        session.call_many([(tool, args), ...])                 # one round trip
        session.state(); session.state_hash(); session.reset()
        marker = session.snapshot(); ...; session.restore(marker)
        sandbox.run_check(check_code, initial_state, final_state)   # -> CheckResult
        sandbox.run_program(program_code, session)                  # -> ProgramResult
        check_env(sandbox, bundle).passed

Threat model
------------
The code is not malicious by intent but is written by a model from untrusted seeds (MCP specs,
OpenAPI documents, user text), so it must be treated as hostile: it may try to read files, write
outside its scratch space, spawn processes, open sockets, exhaust CPU or memory, recurse without
end, print without end, tamper with signals, or climb the object graph to the interpreter's
internals. None of that may reach the host, the parent process, or another session.

What is contained, layer by layer:

1. Static policy (`policy.validate_source`, run before anything executes): imports only from a
   small allow-list (json, math, re, datetime, copy, itertools, functools, collections, statistics,
   decimal, random, string, typing, dataclasses, enum, uuid); no exec/eval/compile/open/input/
   globals/locals/breakpoint; no double-underscore names or attributes except a short list of
   protocol methods (`__init__`, `__eq__`, ...), so no `__subclasses__`, `__globals__`,
   `__builtins__`, `__import__`, `__code__`, `__mro__`; no frame, generator or traceback internals
   (`gi_frame`, `f_back`, `tb_frame`, ...); no metaclasses, no `__del__`/`__reduce__`/
   `__getattribute__` definitions, no `type(name, bases, namespace)` class factories, no async
   code. Violations name the line and the construct.
2. Run-time guards (`guards`): attribute stores and deletes, private-attribute and `__dict__` reads,
   `getattr`/`setattr`/`vars`/`dir` and `str.format` go through checks that allow them only on
   objects of classes the code itself defined. Modules are read-only views without private members
   (so no `random._os`), without members that evaluate strings (`typing.get_type_hints`) or share
   state between sessions (`decimal.setcontext`). Builtins are a restricted table; `print` goes to
   a bounded buffer.
3. Determinism: each session has its own seeded generator (behind `random`, `uuid.uuid4`) and a
   logical clock (behind `datetime.now()`, `date.today()`) that advances one second per call;
   workers run with `PYTHONHASHSEED=0`. The same calls from the same init_config give the same
   state hash in any worker, in any run.
4. Per-call limits: a wall-clock budget (SIGALRM, the call fails with `timeout`), memory
   exhaustion (`memory_limit`), recursion (`recursion_limit`), result size (`result_too_large`),
   return protocol (`bad_return`); a failed call is rolled back, state and generator included.
   Tools declared read-only (spec.json `kind: read`) skip the pre-call copy and do not invalidate
   the cached state hash; `check_env` verifies the declaration.
5. Process containment (`containment`), in separate worker processes started from a clean
   environment: new network namespace; privileges dropped to `nobody` when started as root (so
   `RLIMIT_NPROC=0` binds; it does not bind root); address-space, CPU-time, file-size, core and
   open-file limits; a seccomp filter (x86_64, aarch64) that makes fork/clone/exec, socket
   creation, ptrace, kill and opening any file for writing fail; the import system emptied and
   os/subprocess/socket/ctypes dropped from `sys.modules`; environment variables cleared.
   `Sandbox.containment()` reports which layers hold on the current host and `Sandbox.probe()`
   tries forking, connecting, writing and exec'ing from inside a worker.
6. Pool: a worker that breaks a hard limit (C-level loop past the deadline, CPU limit, crash) is
   killed and replaced, and the sessions it hosted are rebuilt by replaying their recorded history,
   so other sessions are unaffected. Requests past `max_pending` and sessions past `max_sessions`
   are refused with `SandboxBusy` instead of queueing without bound; idle sessions are reaped.

What is not contained (residual risk): reading world-readable files if code escapes every
Python-level layer (the seccomp filter blocks writes, not reads; `nobody` limits what is readable);
CPU and memory use up to the configured limits; timing side channels; a Python-level escape that
nobody has found yet, which would still meet the kernel-level layers. Where seccomp, namespaces or
privilege dropping are unavailable (non-Linux, other architectures, no root), the report says so and
only the Python-level layers and resource limits remain.

`LocalSession` (`open_local`) runs the same runtime in the calling process with none of the process
layers; it exists as the benchmark's reference and for trusted fixtures only.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentomnia.sandbox.bench import format_table, run_bench
    from agentomnia.sandbox.bundle import Bundle
    from agentomnia.sandbox.conformance import ConformanceCheck, ConformanceReport, check_env
    from agentomnia.sandbox.environment import Environment, SupportsBatch, SupportsSnapshot
    from agentomnia.sandbox.errors import (
        FAILURE_CODES,
        LoadError,
        PolicyError,
        SandboxBusy,
        SandboxError,
        SessionClosed,
        SessionLost,
        WorkerFailure,
    )
    from agentomnia.sandbox.fixtures import fixture_bundle
    from agentomnia.sandbox.local import LocalSession, open_local
    from agentomnia.sandbox.policy import PolicyViolation, validate_source
    from agentomnia.sandbox.results import CheckResult, ProgramCall, ProgramResult, Snapshot
    from agentomnia.sandbox.rules import ALLOWED_MODULES
    from agentomnia.sandbox.sandbox import Sandbox, SandboxConfig
    from agentomnia.sandbox.session import Session
    from agentomnia.sandbox.workload import ArgumentSampler

# Exports load on first use: a worker process imports this package too and must stay light.
_EXPORTS = {
    "ALLOWED_MODULES": "rules",
    "ArgumentSampler": "workload",
    "Bundle": "bundle",
    "CheckResult": "results",
    "ConformanceCheck": "conformance",
    "ConformanceReport": "conformance",
    "Environment": "environment",
    "FAILURE_CODES": "errors",
    "LoadError": "errors",
    "LocalSession": "local",
    "PolicyError": "errors",
    "PolicyViolation": "policy",
    "ProgramCall": "results",
    "ProgramResult": "results",
    "Sandbox": "sandbox",
    "SandboxBusy": "errors",
    "SandboxConfig": "sandbox",
    "SandboxError": "errors",
    "Session": "session",
    "SessionClosed": "errors",
    "SessionLost": "errors",
    "Snapshot": "results",
    "SupportsBatch": "environment",
    "SupportsSnapshot": "environment",
    "WorkerFailure": "errors",
    "check_env": "conformance",
    "fixture_bundle": "fixtures",
    "format_table": "bench",
    "open_local": "local",
    "run_bench": "bench",
    "validate_source": "policy",
}

__all__ = [
    "ALLOWED_MODULES",
    "FAILURE_CODES",
    "ArgumentSampler",
    "Bundle",
    "CheckResult",
    "ConformanceCheck",
    "ConformanceReport",
    "Environment",
    "LoadError",
    "LocalSession",
    "PolicyError",
    "PolicyViolation",
    "ProgramCall",
    "ProgramResult",
    "Sandbox",
    "SandboxBusy",
    "SandboxConfig",
    "SandboxError",
    "Session",
    "SessionClosed",
    "SessionLost",
    "Snapshot",
    "SupportsBatch",
    "SupportsSnapshot",
    "WorkerFailure",
    "check_env",
    "fixture_bundle",
    "format_table",
    "open_local",
    "run_bench",
    "validate_source",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agentomnia.sandbox' has no attribute {name!r}")
    value = getattr(import_module(f"agentomnia.sandbox.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
