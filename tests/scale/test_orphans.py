"""Worker processes: they exit on their own once their parent is killed, and keep stdout clean."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

# the middle process starts a grandchild that watches it, prints the grandchild's pid, then waits forever
_MIDDLE = """
import subprocess, sys, time
grandchild = subprocess.Popen([sys.executable, "-c", {child!r}])
print(grandchild.pid, flush=True)
time.sleep(600)
"""
_CHILD = """
import time
from agentomnia.processes import exit_with_parent
exit_with_parent(every_s=0.1)
open({ready!r}, "w").close()
time.sleep(600)
"""


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_worker_exits_when_its_parent_is_killed(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    middle = subprocess.Popen(
        [sys.executable, "-c", _MIDDLE.format(child=_CHILD.format(ready=str(ready)))],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert middle.stdout is not None
    grandchild = int(middle.stdout.readline())
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert time.monotonic() < deadline, "the watched process never started"
            time.sleep(0.05)
        time.sleep(0.3)
        assert not _gone(grandchild), "the watcher exited while its parent was alive"
        os.kill(middle.pid, signal.SIGKILL)
        middle.wait()
        deadline = time.monotonic() + 10
        while not _gone(grandchild):
            assert time.monotonic() < deadline, (
                "the orphaned worker is still running 10 s after its parent died"
            )
            time.sleep(0.05)
    finally:
        if not _gone(grandchild):
            os.kill(grandchild, signal.SIGKILL)


def test_a_worker_writes_nothing_to_stdout_even_from_native_code() -> None:
    code = (
        "import os, sys\n"
        "from agentomnia.processes import stdout_to_stderr\n"
        "print('before', flush=True)\n"
        "stdout_to_stderr()\n"
        "os.write(1, b'native noise\\n')\n"
        "print('python noise', flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout == "before\n"
    assert "native noise" in done.stderr and "python noise" in done.stderr
