"""Local checkpoints decoded in worker processes, so the trials of a checkpoint policy use every core.

A tiny model's decoding is bound by the interpreter, not by arithmetic: one process keeps about one
core busy whatever torch's thread count (the benchmark's 34 trials of a checkpoint ran at 1.1 of two
cores), and two trials on two threads of one process contend for the interpreter instead of sharing
the work. A `DecoderPool` starts worker processes, each with its share of the cores as torch
threads. A worker loads each checkpoint it is asked for once and keeps an `HFAgent` per agent, so
a conversation's cached keys and values stay where its earlier turns were decoded. Each agent is
pinned to the worker with the fewest live agents, and the evaluation runs as many trials at once as
there are workers. The sandbox, the user simulator and grading stay in the calling process. Replies
are those of the same `HFAgent` in the calling process: the worker runs that class.

A worker that fails to answer (it crashed, or its checkpoint cannot load) raises `DecoderError` in
the trial, which the runner reports as an infrastructure failure of that trial.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from agentomnia.logfile import route_to, routed
from agentomnia.omniabench.hf import HFAgent, check_checkpoint, load_checkpoint
from agentomnia.processes import may_start_processes


class DecoderError(RuntimeError):
    """A decoder process could not answer: what it said, or that it is gone."""


def decoder_count(device: str | None = None, cores: int | None = None) -> int:
    """Worker processes worth starting: one per core, at most four, on a CPU. None on a GPU (one
    process drives it best), with a single core, or in a process that may not start any (a Celery
    worker's step): decoding then stays in the calling process."""
    cores = cores or os.cpu_count() or 1
    if (device or "cpu") != "cpu" or cores < 2 or not may_start_processes():
        return 0
    return min(cores, 4)


def _serve(conn: Connection, threads: int, log: str | None) -> None:
    """A worker's loop: one request at a time, each answered ('ok', value) or ('error', reason).
    Library output goes where the parent's goes (`log`, when the parent routed it to a file)."""
    import torch

    if log is not None:
        route_to(Path(log))
    torch.set_num_threads(threads)
    agents: dict[str, HFAgent] = {}
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        op, *args = request
        try:
            answer: Any = None
            if op == "load":
                load_checkpoint(Path(args[0]), args[1])
            elif op == "act":
                key, settings, messages, tools = args
                agent = agents.get(key)
                if agent is None:
                    agent = agents[key] = HFAgent(**settings)
                answer = agent.act(messages, tools)
            elif op == "close":
                agents.pop(args[0], None)
            else:
                raise ValueError(f"unknown request {op!r}")
            conn.send(("ok", answer))
        except Exception as exc:  # the caller's trial fails with the reason; the worker goes on
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


class _Worker:
    def __init__(self, context: Any, threads: int) -> None:
        self.conn, child = context.Pipe()
        log = routed()
        self.process = context.Process(target=_serve, args=(child, threads, log and str(log)), daemon=True)
        self.process.start()
        child.close()
        self.lock = threading.Lock()
        self.agents = 0

    def call(self, request: tuple[Any, ...]) -> Any:
        with self.lock:
            try:
                self.conn.send(request)
                status, value = self.conn.recv()
            except (EOFError, OSError, BrokenPipeError) as exc:
                code = self.process.exitcode
                raise DecoderError(
                    f"decoder process {self.process.pid} is gone (exit code {code}): {exc}"
                ) from exc
        if status != "ok":
            raise DecoderError(f"decoder process {self.process.pid}: {value}")
        return value


class DecoderPool:
    """`processes` decoder workers (see the module docstring); a context manager that stops them."""

    def __init__(self, processes: int, *, preload: Iterable[Path | str] = (), device: str = "cpu") -> None:
        if processes < 1:
            raise ValueError(f"a decoder pool needs at least one process, got {processes}")
        context = multiprocessing.get_context("spawn")  # never fork a process that holds torch's threads
        threads = max(1, (os.cpu_count() or 1) // processes)
        self.device = device
        self._workers = [_Worker(context, threads) for _ in range(processes)]
        self._lock = threading.Lock()
        self._keys = itertools.count()
        self._loading = [
            threading.Thread(target=self._load_quietly, args=(w, [check_checkpoint(Path(p)) for p in preload]),
                             daemon=True)
            for w in self._workers
        ]  # fmt: skip
        for thread in self._loading:
            thread.start()  # the workers import torch and load the checkpoints while the caller goes on

    @property
    def size(self) -> int:
        return len(self._workers)

    def _load_quietly(self, worker: _Worker, paths: Sequence[Path]) -> None:
        for path in paths:
            try:
                worker.call(("load", str(path), self.device))
            except DecoderError:
                return  # the first trial asks again and reports why

    def agent(
        self,
        path: Path | str,
        *,
        max_new_tokens: int,
        name: str | None = None,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> PooledAgent:
        """An agent for the checkpoint at `path`, decoded by the worker with the fewest live agents."""
        settings = {
            "path": str(check_checkpoint(Path(path))), "max_new_tokens": max_new_tokens, "device": self.device,
            "name": name, "temperature": temperature, "seed": seed,
        }  # fmt: skip
        with self._lock:
            worker = min(self._workers, key=lambda w: w.agents)
            worker.agents += 1
            key = f"agent-{next(self._keys)}"
        return PooledAgent(self, worker, key, settings)

    def _release(self, worker: _Worker) -> None:
        with self._lock:
            worker.agents -= 1

    def close(self) -> None:
        for worker in self._workers:
            with contextlib.suppress(OSError), worker.lock:
                worker.conn.send(None)
        for worker in self._workers:
            worker.process.join(timeout=10)
            if worker.process.is_alive():
                worker.process.kill()
            worker.conn.close()

    def __enter__(self) -> DecoderPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PooledAgent:
    """An `HFAgent` living in a decoder process; `close` frees its cache there (the runner calls it
    when the trial ends)."""

    def __init__(self, pool: DecoderPool, worker: _Worker, key: str, settings: Mapping[str, Any]) -> None:
        self.name = str(settings["name"] or f"hf:{settings['path']}")
        self._pool, self._worker, self._key, self._settings = pool, worker, key, dict(settings)
        self._open = True

    def act(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        reply = self._worker.call(("act", self._key, self._settings, list(messages), list(tools)))
        return dict(reply)

    def close(self) -> None:
        if not self._open:
            return
        self._open = False
        self._pool._release(self._worker)
        with contextlib.suppress(DecoderError):  # a worker that is gone holds no cache
            self._worker.call(("close", self._key))
