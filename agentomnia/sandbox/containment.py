"""Process-level containment applied by a worker to itself before it runs any generated code.

The static policy and the guards stop the known roads out of the interpreter; this module assumes
they will one day be bypassed and limits what the process can then do. Layers, in the order they
are applied (each is best effort and reported, so a deployment can see what actually holds):

1. `network_namespace`: a new, empty network namespace (`unshare(CLONE_NEWNET)`, as root; or
   together with a user namespace after dropping privileges): no interface but a down loopback.
2. `dropped_privileges`: when the worker starts as root (as in CI), it switches to `nobody`, so
   `RLIMIT_NPROC` binds (it does not bind root) and the file system's permissions apply.
3. Resource limits: address space (`memory_mb`), no new processes (`RLIMIT_NPROC=0`), bounded file
   size, no core dumps, few open files; CPU time is limited per request by `cpu_budget`.
4. `syscall_filter`: a seccomp filter (x86_64 and aarch64) that makes process creation, program
   execution, socket creation, ptrace, signalling other processes and opening any file for writing
   fail with EPERM. It works as root and needs no external package.
5. `imports_blocked`: the import system is emptied and os/subprocess/socket/ctypes/... are removed
   from `sys.modules`, so even code that reached a real `__import__` gets nothing new.
6. `environment_cleared`: environment variables (API keys!) are removed from the process.

What is not contained: reading world-readable files by code that escaped the guards (no file API is
reachable, and the process runs as `nobody` where possible), CPU and memory use up to the limits,
and timing side channels. Workers are separate processes with no shared memory, so one worker's
compromise does not reach the parent's memory or another worker's.
"""

from __future__ import annotations

import ctypes
import gc
import os
import platform
import resource
import signal
import socket
import struct
import sys
from dataclasses import dataclass
from typing import Any

NOBODY = 65534

_CLONE_NEWNET = 0x40000000
_CLONE_NEWUSER = 0x10000000

# Modules removed from sys.modules once the worker is ready (their functionality stays reachable
# only through references the trusted code captured before).
_SCRUBBED_MODULES = (
    "os",
    "posix",
    "subprocess",
    "_posixsubprocess",
    "socket",
    "_socket",
    "select",
    "selectors",
    "ctypes",
    "_ctypes",
    "multiprocessing",
    "shutil",
    "pty",
    "fcntl",
    "mmap",
    "resource",
)

# Syscalls that fail with EPERM once the filter is installed, by architecture.
_DENIED: dict[str, dict[str, int]] = {
    "x86_64": {
        "fork": 57,
        "vfork": 58,
        "clone": 56,
        "clone3": 435,
        "execve": 59,
        "execveat": 322,
        "socket": 41,
        "socketpair": 53,
        "connect": 42,
        "bind": 49,
        "listen": 50,
        "ptrace": 101,
        "kill": 62,
        "tkill": 200,
        "tgkill": 234,
        "creat": 85,
        "openat2": 437,
        "unlink": 87,
        "unlinkat": 263,
        "rename": 82,
        "renameat": 264,
        "renameat2": 316,
        "mkdir": 83,
        "mkdirat": 258,
        "rmdir": 84,
        "link": 86,
        "linkat": 265,
        "symlink": 88,
        "symlinkat": 266,
        "chmod": 90,
        "fchmodat": 268,
        "truncate": 76,
        "mount": 165,
        "unshare": 272,
        "setns": 308,
        "process_vm_readv": 310,
        "process_vm_writev": 311,
        "bpf": 321,
        "perf_event_open": 298,
        "userfaultfd": 323,
        "keyctl": 250,
    },
    "aarch64": {
        "clone": 220,
        "clone3": 435,
        "execve": 221,
        "execveat": 281,
        "socket": 198,
        "socketpair": 199,
        "connect": 203,
        "bind": 200,
        "listen": 201,
        "ptrace": 117,
        "kill": 129,
        "tkill": 130,
        "tgkill": 131,
        "openat2": 437,
        "unlinkat": 35,
        "renameat": 38,
        "renameat2": 276,
        "mkdirat": 34,
        "linkat": 37,
        "symlinkat": 36,
        "fchmodat": 53,
        "truncate": 45,
        "mount": 40,
        "unshare": 97,
        "setns": 268,
        "process_vm_readv": 270,
        "process_vm_writev": 271,
        "bpf": 280,
        "perf_event_open": 241,
        "userfaultfd": 282,
        "keyctl": 219,
    },
}
# (syscall number, index of the flags argument) for the open calls checked for write access.
_OPEN_CALLS: dict[str, list[tuple[int, int]]] = {"x86_64": [(2, 1), (257, 2)], "aarch64": [(56, 2)]}
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


@dataclass(frozen=True)
class Settings:
    """What the parent asks of a worker (sent as JSON on its command line)."""

    scratch: str
    memory_mb: int = 1024
    cpu_seconds: int = 10
    max_file_mb: int = 16
    max_open_files: int = 64
    drop_privileges: bool = True
    syscall_filter: bool = True
    network_namespace: bool = True


def apply(settings: Settings) -> dict[str, Any]:
    """Apply every layer; returns which ones hold (the parent exposes this as `Sandbox.containment`)."""
    report: dict[str, Any] = {}
    os.chdir(settings.scratch)
    libc = ctypes.CDLL(None, use_errno=True)
    netns = False
    if settings.network_namespace and os.geteuid() == 0:
        netns = libc.unshare(_CLONE_NEWNET) == 0
    report["dropped_privileges"] = False
    if settings.drop_privileges and os.geteuid() == 0:
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            report["dropped_privileges"] = True
        except OSError as exc:
            report["dropped_privileges_error"] = str(exc)
    if settings.network_namespace and not netns:
        netns = libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) == 0
    report["network_namespace"] = netns
    report["uid"] = os.getuid()
    report["limits"] = _set_limits(settings)
    report["syscall_filter"] = _install_filter(libc) if settings.syscall_filter else False
    os.environ.clear()
    report["environment_cleared"] = True
    # A write to the log past RLIMIT_FSIZE should fail, not kill the worker.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    return report


def block_imports() -> None:
    """Empty the import system and drop risky modules from sys.modules (the last step before serving)."""
    sys.meta_path[:] = []
    sys.path_hooks[:] = []
    sys.path_importer_cache.clear()
    sys.path[:] = []
    for name in list(sys.modules):
        if name.split(".")[0] in _SCRUBBED_MODULES:
            sys.modules.pop(name, None)
    gc.collect()


def _set_limits(settings: Settings) -> dict[str, Any]:
    applied: dict[str, Any] = {}

    def limit(name: str, which: int, value: int) -> None:
        try:
            resource.setrlimit(which, (value, value))
            applied[name] = value
        except (ValueError, OSError) as exc:
            applied[name] = f"not set: {exc}"

    limit("nproc", resource.RLIMIT_NPROC, 0)
    limit("core", resource.RLIMIT_CORE, 0)
    limit("fsize", resource.RLIMIT_FSIZE, settings.max_file_mb * 1024 * 1024)
    limit("nofile", resource.RLIMIT_NOFILE, settings.max_open_files)
    baseline = _vm_bytes()
    wanted = settings.memory_mb * 1024 * 1024
    if wanted < baseline + 64 * 1024 * 1024:
        raise ValueError(
            f"memory_mb={settings.memory_mb} leaves no room: the worker already maps "
            f"{baseline // (1024 * 1024)} MB; raise memory_mb to at least {baseline // (1024 * 1024) + 128}"
        )
    limit("address_space", resource.RLIMIT_AS, wanted)
    return applied


def _vm_bytes() -> int:
    with open("/proc/self/statm", "rb") as handle:
        pages = int(handle.read().split()[0])
    return pages * resource.getpagesize()


def rss_bytes() -> int:
    with open("/proc/self/statm", "rb") as handle:
        pages = int(handle.read().split()[1])
    return pages * resource.getpagesize()


def cpu_budget(seconds: float) -> None:
    """Allow `seconds` more CPU time from now (SIGXCPU ends the worker past it)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = int(usage.ru_utime + usage.ru_stime) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = used + max(1, int(seconds))
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


# ---------------------------------------------------------------- seccomp


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _install_filter(libc: ctypes.CDLL) -> bool:
    arch = platform.machine()
    if arch not in _DENIED:
        return False
    program = _filter_program(arch)
    buffer = ctypes.create_string_buffer(program)
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
        return False
    return bool(libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(fprog), 0, 0) == 0)


def _filter_program(arch: str) -> bytes:
    """A classic-BPF seccomp program: deny the listed syscalls and write-mode opens with EPERM."""
    ld_w_abs, jeq_k, jge_k, jset_k, ret_k = 0x20, 0x15, 0x35, 0x45, 0x06
    allow, deny = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
    opens = _OPEN_CALLS[arch]
    # (opcode, jump-if-true, jump-if-false, operand); jumps are 0 (next) or a label resolved below.
    program: list[tuple[int, int | str, int | str, int]] = [
        (ld_w_abs, 0, 0, 4),  # seccomp_data.arch
        (jeq_k, 0, "deny", _AUDIT_ARCH[arch]),
        (ld_w_abs, 0, 0, 0),  # seccomp_data.nr
    ]
    if arch == "x86_64":
        program.append((jge_k, "deny", 0, 0x40000000))  # the x32 ABI
    program.extend((jeq_k, "deny", 0, nr) for nr in sorted(_DENIED[arch].values()))
    program.extend((jeq_k, f"open{i}", 0, nr) for i, (nr, _) in enumerate(opens))
    program.append((ret_k, 0, 0, allow))
    labels: dict[str, int] = {}
    for i, (_, flags_arg) in enumerate(opens):
        labels[f"open{i}"] = len(program)
        program.append((ld_w_abs, 0, 0, 16 + 8 * flags_arg))  # low word of seccomp_data.args[i]
        program.append((jset_k, "deny", 0, _WRITE_FLAGS))
        program.append((ret_k, 0, 0, allow))
    labels["deny"] = len(program)
    program.append((ret_k, 0, 0, deny))

    def offset(target: int | str, index: int) -> int:
        return labels[target] - index - 1 if isinstance(target, str) else target

    return b"".join(
        struct.pack("HBBI", code, offset(jt, index), offset(jf, index), k)
        for index, (code, jt, jf, k) in enumerate(program)
    )


# ---------------------------------------------------------------- probes


def probe() -> dict[str, str]:
    """Try what escaped code would try, from trusted code, and report what the kernel allowed."""
    results: dict[str, str] = {}

    def attempt(name: str, action: Any) -> None:
        try:
            action()
        except OSError as exc:
            results[name] = f"blocked ({exc.strerror or exc})"
        else:
            results[name] = "allowed"

    def spawn() -> None:
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)

    def connect() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.settimeout(1.0)
            sock.connect(("192.0.2.1", 80))

    def write_file() -> None:
        fd = os.open("probe.txt", os.O_WRONLY | os.O_CREAT, 0o600)
        os.close(fd)
        os.unlink("probe.txt")

    def execute() -> None:
        os.execv("/bin/true", ["/bin/true"])

    attempt("spawn_process", spawn)
    attempt("open_socket", connect)
    attempt("write_file", write_file)
    attempt("exec_program", execute)
    results["environment_variables"] = str(len(os.environ))
    results["uid"] = str(os.getuid())
    return results
