"""An environment run in the calling process: same policy and runtime, no process isolation.

This is the reference the benchmark measures isolation against, and a convenience for trusted,
hand-written environments in tests. Generated code still passes the static policy and runs with the
restricted builtins and guards, but nothing limits its CPU, memory or time and a crash takes the
caller down: never use it for code from a model or a seed. State hashes match a worker's unless
the environment's state depends on the iteration order of a set of strings (workers pin
`PYTHONHASHSEED=0`; the calling process may not).
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Mapping, Sequence
from typing import Any

from agentomnia.records import ToolResult
from agentomnia.sandbox import errors, policy
from agentomnia.sandbox.bundle import Bundle, config_key, config_seed
from agentomnia.sandbox.deadlines import Deadlines, Limits
from agentomnia.sandbox.environment import Call, run_steps
from agentomnia.sandbox.envsession import CompiledEnv, EnvSession
from agentomnia.sandbox.errors import SandboxError, SessionClosed
from agentomnia.sandbox.results import Snapshot
from agentomnia.sandbox.session import Batch, encode_args


class LocalSession:
    """The environment protocol, with batching and snapshots, over an in-process `EnvSession`."""

    def __init__(
        self, bundle: Bundle, init_config: Mapping[str, Any] | None = None, *, limits: Limits | None = None
    ) -> None:
        prepared = policy.prepare(bundle.source, "env", label=f"environment `{bundle.class_name}`")
        self.bundle = bundle
        self._env = CompiledEnv.from_payload(bundle.worker_payload(prepared.payload))
        config = dict(bundle.s0 if init_config is None else init_config)
        key = config_key(config)
        self._config_blob = pickle.dumps(config, protocol=pickle.HIGHEST_PROTOCOL)
        self._seed = config_seed(key)
        self._session = EnvSession(
            self._env, self._config_blob, self._seed, limits or Limits(call_timeout_s=None), Deadlines()
        )
        self._closed = False

    def _live(self) -> EnvSession:
        if self._closed:
            raise SessionClosed("this local session is closed; create a new one")
        return self._session

    def tools(self) -> list[dict[str, Any]]:
        return [dict(tool) for tool in self.bundle.tools]

    def call(self, tool: str, args: Mapping[str, Any] | None = None) -> ToolResult:
        session = self._live()
        text = encode_args(args)
        if text is None:
            return ToolResult.failure(
                errors.INVALID_ARGUMENTS, f"tool `{tool}`: arguments are not JSON-serializable"
            )
        result, _ = session.call(tool, json.loads(text))
        return ToolResult.model_validate_json(result)

    def call_many(self, calls: Sequence[Call]) -> list[ToolResult]:
        return [self.call(tool, args) for tool, args in calls]

    def run(self, batch: Batch) -> list[Any]:
        """A batch's answers (in-process there is no round trip to save)."""
        return run_steps(self, batch.steps)

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = json.loads(self._live().state_json())
        return state

    def state_hash(self, *, fresh: bool = False) -> str:
        return self._live().state_hash(fresh=fresh)

    def reset(self, init_config: Mapping[str, Any] | None = None) -> None:
        session = self._live()
        if init_config is None:
            session.reset()
            return
        config = dict(init_config)
        session.reset(pickle.dumps(config, protocol=pickle.HIGHEST_PROTOCOL), config_seed(config_key(config)))

    def snapshot(self) -> Snapshot:
        return Snapshot(session_id="local", index=self._live().snapshot())

    def restore(self, snapshot: Snapshot) -> None:
        try:
            self._live().restore(snapshot.index)
        except IndexError as exc:
            raise SandboxError(str(exc), code="no_snapshot") from None

    def close(self) -> None:
        self._closed = True

    def __enter__(self) -> LocalSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_local(bundle: Bundle, init_config: Mapping[str, Any] | None = None) -> LocalSession:
    """Open `bundle` in this process (no isolation; see the module docstring)."""
    return LocalSession(bundle, init_config)
