"""Process-level containment, checked from inside a worker with trusted probes."""

from __future__ import annotations

import os
import platform

import pytest

from agentomnia.sandbox import Sandbox

KERNEL_LAYERS = platform.system() == "Linux" and platform.machine() in ("x86_64", "aarch64")


def test_workers_report_and_hold_their_layers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-never-reach-a-worker")
    with Sandbox(workers=1, idle_timeout_s=0) as box:
        report = box.containment()
        probe = box.probe()
    assert report["imports_blocked"] and report["environment_cleared"]
    assert report["limits"]["nproc"] == 0 and report["limits"]["address_space"] == 1024 * 1024 * 1024
    assert probe["environment_variables"] == "0"
    if KERNEL_LAYERS:
        assert report["syscall_filter"] is True
        for attempt in ("spawn_process", "open_socket", "write_file", "exec_program"):
            assert probe[attempt].startswith("blocked"), probe
    if os.geteuid() == 0:
        assert report["dropped_privileges"] is True and probe["uid"] == "65534"


def test_layers_can_be_switched_off_and_say_so() -> None:
    with Sandbox(
        workers=1, syscall_filter=False, drop_privileges=False, network_namespace=False, idle_timeout_s=0
    ) as box:
        report = box.containment()
    assert report["syscall_filter"] is False
    assert report["dropped_privileges"] is False
    assert report["network_namespace"] is False


def test_config_validation_names_the_problem() -> None:
    with pytest.raises(ValueError, match="raise cpu_seconds"):
        Sandbox(workers=1, call_timeout_s=30, cpu_seconds=5)
    with pytest.raises(ValueError, match="memory_mb"):
        Sandbox(workers=1, memory_mb=64)
