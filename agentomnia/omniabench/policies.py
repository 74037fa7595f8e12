"""The policies an OmniaBench evaluation can run, named by one spec string.

    name, factory = make_policy("baseline:heuristic")
    results = evaluate(tasks, items, bundles, sandbox, factory, policy_name=name, eval_id="e1")

Specs:
- `openai:<model>`: a chat model behind the project's OpenAI-compatible endpoint (base URL and key
  from the LLM settings, `AGENTOMNIA_LLM_*` in the environment), the model taken from the spec.
- `hf:<path>`: a local Hugging Face checkpoint folder (a trained model with its tokenizer), greedy.
- `baseline:heuristic`: no model and no ground truth; splits the request into clauses, retrieves a
  tool per clause (embedding + verb/field overlap) and fills arguments from the request and earlier
  observations; solves requests that name their records and values, and fails descriptions,
  computed answers and withheld details for visible reasons.
- `baseline:noop`: never calls a tool and answers an empty object. It must never pass a task: a
  task it passes checks nothing the request asks for (the vacuous-pass guard).
- `reference`: privileged; replays the task's reference solution through the tools and reports the
  task's expected answer. It shows every benchmark task can be solved (it should pass each one).

Every factory returns a fresh agent per trial, so an agent may keep per-run state. What a factory
loads (a checkpoint, tool embeddings, reference plans) is loaded once and shared by its trials.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentomnia.config import LLMSettings
from agentomnia.embeddings import Embedder, HashingEmbedder
from agentomnia.llm import LLM, make_llm
from agentomnia.omniabench.decoders import DecoderPool
from agentomnia.omniabench.heuristic import HeuristicAgent, ToolIndex, tool_views
from agentomnia.omniabench.hf import HFAgent, check_checkpoint
from agentomnia.omniabench.runner import PolicyFactory
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.models import ReferenceCall, Task
from agentomnia.trajectories.agents import Agent, LLMAgent
from agentomnia.trajectories.messages import answer_block, assistant_message, tool_call
from agentomnia.trajectories.rollout import reference_plan

SPEC_FORMS = (
    "openai:<model>",
    "hf:<checkpoint folder>",
    "baseline:heuristic",
    "baseline:noop",
    "reference",
)
LLMFactory = Callable[[LLMSettings], LLM]


def parse_spec(spec: str) -> tuple[str, str]:
    """(kind, argument) of a policy spec; ValueError naming the accepted forms otherwise."""
    text = spec.strip()
    kind, _, argument = text.partition(":")
    kind, argument = kind.strip().lower(), argument.strip()
    valid = (
        (kind in ("openai", "hf") and bool(argument))
        or (kind == "baseline" and argument in ("heuristic", "noop"))
        or (kind == "reference" and not argument)
    )
    if not valid:
        raise ValueError(f"unknown policy spec {spec!r}; use one of: {', '.join(SPEC_FORMS)}")
    return kind, argument


# ------------------------------------------------------------------ baselines


class NoopAgent:
    """Does nothing and claims nothing."""

    name = "baseline:noop"

    def act(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        return assistant_message("I will not take any action. " + answer_block({}))


class ReferenceAgent:
    """Makes the reference calls one per turn, then reports the expected answer."""

    name = "reference"

    def __init__(self, plan: Sequence[ReferenceCall], answer: Mapping[str, Any]) -> None:
        self.plan = list(plan)
        self.answer = dict(answer)
        self._next = 0

    def act(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        if self._next < len(self.plan):
            call = self.plan[self._next]
            self._next += 1
            step = f"Step {self._next} of {len(self.plan)} of the reference solution: `{call.tool}`."
            return assistant_message(step, [tool_call(f"call_{self._next}", call.tool, call.args)])
        return assistant_message("The reference solution is complete. " + answer_block(self.answer))


# ------------------------------------------------------------------ factories


def _noop_factory() -> PolicyFactory:
    def make(task: Task, bundle: Bundle, trial: int) -> Agent:
        return NoopAgent()

    return make


def _heuristic_factory(embedder: Embedder, max_calls: int) -> PolicyFactory:
    indexes: dict[str, ToolIndex] = {}
    lock = threading.Lock()

    def make(task: Task, bundle: Bundle, trial: int) -> Agent:
        # Tools are embedded once per bundle; the task itself is never consulted.
        with lock:
            if bundle.key not in indexes:
                indexes[bundle.key] = ToolIndex(tool_views(bundle.tools, bundle.read_tools), embedder)
            index = indexes[bundle.key]
        return HeuristicAgent(index, max_calls=max_calls)

    return make


def _reference_factory(
    sandbox: Sandbox | None, plans: Mapping[str, Sequence[ReferenceCall]] | None
) -> PolicyFactory:
    known: dict[str, list[ReferenceCall]] = {k: list(v) for k, v in (plans or {}).items()}
    lock = threading.Lock()

    def make(task: Task, bundle: Bundle, trial: int) -> Agent:
        with lock:
            plan = known.get(task.id)
        if plan is None:
            if sandbox is None:
                raise ValueError(
                    f"reference policy: no plan for task {task.id} and no sandbox to derive one; "
                    "pass sandbox= (program tasks run their reference program there) or plans="
                )
            plan = reference_plan(task, bundle, sandbox)
            with lock:
                known[task.id] = plan
        return ReferenceAgent(plan, task.expected_answer)

    return make


def _openai_factory(
    model: str, settings: LLMSettings | None, llm_factory: LLMFactory | None, cache_path: Path | None
) -> PolicyFactory:
    chosen = (settings or LLMSettings.from_env()).model_copy(update={"model": model})
    if llm_factory is not None:
        llm = llm_factory(chosen)
    else:
        made = make_llm("llm", chosen, cache_path)
        if made is None:  # make_llm answers None only in offline mode, which is not asked for here
            raise ValueError(f"openai:{model}: no LLM backend could be made from {chosen}")
        llm = made
    shared: LLM = llm

    def make(task: Task, bundle: Bundle, trial: int) -> Agent:
        return LLMAgent(shared, purpose="policy_turn")

    return make


def _hf_factory(
    path: str, max_new_tokens: int, device: str | None, decoders: DecoderPool | None
) -> PolicyFactory:
    folder = check_checkpoint(Path(path))  # a wrong path fails here, before any trial runs

    def make(task: Task, bundle: Bundle, trial: int) -> Agent:
        if decoders is not None:
            return decoders.agent(folder, max_new_tokens=max_new_tokens, name=f"hf:{path}")
        return HFAgent(folder, max_new_tokens=max_new_tokens, device=device, name=f"hf:{path}")

    return make


def make_policy(
    spec: str,
    *,
    llm_settings: LLMSettings | None = None,
    llm_factory: LLMFactory | None = None,
    cache_path: Path | None = None,
    embedder: Embedder | None = None,
    max_new_tokens: int = 512,
    device: str | None = None,
    sandbox: Sandbox | None = None,
    plans: Mapping[str, Sequence[ReferenceCall]] | None = None,
    max_calls: int = 6,
    decoders: DecoderPool | None = None,
) -> tuple[str, PolicyFactory]:
    """(policy name, factory) for a spec (see the module docstring for the forms).

    openai: `llm_settings` (default from the environment) with the model replaced by the spec's;
    `llm_factory` builds the client instead of the OpenAI-compatible backend (tests, other
    clients); `cache_path` keeps responses for reproducible reruns. hf: `max_new_tokens` per turn,
    `device` (default cuda when available), `decoders` to decode in worker processes (see
    `decoders.DecoderPool`; in this process when None). baseline:heuristic: `embedder` for tool
    retrieval (default the model-free HashingEmbedder) and `max_calls`. reference: `sandbox` to derive plans
    (program tasks run their program there), or `plans` by task id precomputed.
    """
    kind, argument = parse_spec(spec)
    if kind == "openai":
        return f"openai:{argument}", _openai_factory(argument, llm_settings, llm_factory, cache_path)
    if kind == "hf":
        return f"hf:{argument}", _hf_factory(argument, max_new_tokens, device, decoders)
    if kind == "reference":
        if sandbox is None and plans is None:
            raise ValueError("the reference policy needs sandbox= (to derive reference plans) or plans=")
        return "reference", _reference_factory(sandbox, plans)
    if argument == "noop":
        return "baseline:noop", _noop_factory()
    return "baseline:heuristic", _heuristic_factory(embedder or HashingEmbedder(), max_calls)
