"""What a checkpoint has learned, measured where a tiny model can show it.

A model small enough to train on a CPU passes no benchmark item, so pass@k alone cannot tell a
trained checkpoint from an untrained one. These figures can. They are computed on the held-out
benchmark's reference trajectories, replayed through the sandbox: at every step where the
reference calls a tool, the conversation up to that step is the prompt (teacher forcing), and:

- **next tool**: of all the listed tools, the one the checkpoint finds most likely to be called
  next (the log-likelihood of the reply beginning `<tool_call>{"name": "<tool>", ...`) is the one the
  reference called;
- **next action**: its most likely reply (greedy) begins with a call of that tool with JSON object
  arguments, so the call could be executed;
- **exact arguments**: and those arguments equal the reference's;
- **call format**: of its free replies (the greedy one, plus `samples` at temperature 1), the share
  that make at least one tool call and whose every call parses as `{"name": ..., "arguments": {...}}`,
  whatever tool they name: the shape of a call, learned before which tools there are;
- **well-formed calls**: of those free replies, the share that are in that format and name only
  listed tools.

Each figure is reported per route (ToB/ToC/ToE) and overall, for the model a round started from
and for each checkpoint it trained, so learning shows as a rise from the start model to the SFT
checkpoint and, across rounds, as figures that do not fall. On a GPU with a real model the same
figures sit beside pass@k.

A model trained for a few dozen steps on a CPU learns the shape of a reply long before it learns
which tool to call, so one more figure moves first: **action likelihood**, the per-token
probability (geometric mean) the model gives the reference's next reply, teacher-forced. It is the
held-out loss of the benchmark's reference steps, as a probability.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentomnia.omniabench.hf import load_checkpoint, read_calls, reusable_cache
from agentomnia.omniabench.models import BenchmarkItem
from agentomnia.omniabench.split import benchmark_item
from agentomnia.records import content_hash
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.models import Task
from agentomnia.trajectories.messages import parse_arguments, tool_names
from agentomnia.trajectories.rollout import reference_plan, rollout
from agentomnia.trajectories.sft import GENERATION_TEMPLATE, align_context
from agentomnia.trajectories.users import make_user

FIGURES = (
    "action_likelihood",
    "next_tool",
    "next_action",
    "exact_arguments",
    "call_format",
    "well_formed_calls",
)
# how each figure is named in tables and status lines
FIGURE_LABELS = {
    "action_likelihood": "action likelihood",
    "next_tool": "next tool",
    "next_action": "next action",
    "exact_arguments": "exact arguments",
    "call_format": "call format",
    "well_formed_calls": "well-formed calls",
}
ALL_ROUTES = "all"


class LearningSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    max_new_tokens: int = Field(default=48, ge=8, description="tokens per reply; a short tool call needs ~30")
    samples: int = Field(default=0, ge=0, description="sampled replies per step, beside the greedy one")
    temperature: float = Field(default=1.0, gt=0)
    max_steps_per_task: int = Field(default=2, ge=1, description="reference steps probed per task")
    limit: int = Field(default=0, ge=0, description="N benchmark tasks spread over the list (0 = all)")
    seed: int = 0


@dataclass(frozen=True)
class Probe:
    """One reference step: the conversation before it, the tools offered, and what the reference did."""

    task_id: str
    route: str
    step: int
    messages: tuple[Mapping[str, Any], ...]
    tools: tuple[Mapping[str, Any], ...]
    tool: str
    arguments: Mapping[str, Any]


class FigureRow(BaseModel):
    """One policy's figures on one route (or `all`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    policy: str  # the role: start, sft, rl
    checkpoint: str
    route: str
    probes: int
    samples: int
    action_likelihood: float | None
    next_tool: float | None
    next_action: float | None
    exact_arguments: float | None
    call_format: float | None = None  # absent from reports written before it was measured
    well_formed_calls: float | None
    stamp: str = ""  # which weights were measured (`checkpoint_stamp`), so a later round can reuse the row


class LearningReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    round: str
    tasks: int
    probes: int
    rows: list[FigureRow]
    settings: LearningSettings
    probe_set: str = ""  # hash of the probes' (task, step) list: rows measured on the same set compare
    reused: list[str] = Field(default_factory=list)  # roles whose rows an earlier round measured

    def overall(self, policy: str) -> FigureRow | None:
        return next((r for r in self.rows if r.policy == policy and r.route == ALL_ROUTES), None)

    def markdown(self) -> str:
        head = "| policy | route | probes | " + " | ".join(FIGURE_LABELS[f] for f in FIGURES) + " |"
        lines = [head, "|---|---|---|" + "---|" * len(FIGURES)]
        for r in self.rows:
            cells = [_share(getattr(r, f)) for f in FIGURES]
            lines.append(f"| {r.policy} | {r.route} | {r.probes} | " + " | ".join(cells) + " |")
        return "\n".join(lines)


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _arguments(call: Mapping[str, Any]) -> dict[str, Any] | None:
    """A call's arguments as an object, or None when they are not one."""
    return parse_arguments(call)[1]


def _context(messages: Sequence[Mapping[str, Any]]) -> tuple[Mapping[str, Any], ...]:
    """The prompt before a step: earlier assistant turns keep their calls but not the reference's
    narration, which names its plan and is not what an agent would have written."""
    out: list[Mapping[str, Any]] = []
    for m in messages:
        if m.get("role") == "assistant" and m.get("tool_calls"):
            m = {**m, "content": ""}
        out.append(m)
    return tuple(out)


def spread(items: Sequence[Task], n: int) -> list[Task]:
    """`n` items evenly spaced over the sequence (all when `n` is 0 or covers them), so a sample of a
    benchmark ordered by route or split still holds every route."""
    if not n or n >= len(items):
        return list(items)
    return [items[(i * len(items)) // n] for i in range(n)]


def reference_probes(
    tasks: Sequence[Task],
    items: Mapping[str, BenchmarkItem],
    bundles: Mapping[str, Bundle],
    sandbox: Sandbox,
    settings: LearningSettings,
) -> tuple[list[Probe], list[str]]:
    """(probes, problems): every tool-calling step of each task's reference trajectory, replayed
    in the sandbox so the tool results in the prompt are the environment's own."""
    from agentomnia.omniabench.policies import ReferenceAgent

    probes: list[Probe] = []
    problems: list[str] = []
    for task in spread(tasks, settings.limit):
        bundle = bundles.get(task.env_id)
        if bundle is None:
            problems.append(f"{task.id}: no bundle for environment {task.env_id}")
            continue
        route = (items.get(task.id) or benchmark_item(task)).route
        try:
            plan = reference_plan(task, bundle, sandbox)
            agent = ReferenceAgent(plan, task.expected_answer)
            run = rollout(task, bundle, sandbox, agent, user=make_user(task, None), max_steps=len(plan) + 2)
        except Exception as exc:  # one task that cannot be replayed costs its probes, not the report
            problems.append(f"{task.id}: the reference could not be replayed: {type(exc).__name__}: {exc}")
            continue
        tools = tuple(dict(t) for t in bundle.tools)
        step = 0
        for i, message in enumerate(run.messages):
            calls = message.get("tool_calls") if message.get("role") == "assistant" else None
            if not calls or step >= settings.max_steps_per_task:
                continue
            target = calls[0]
            probes.append(
                Probe(
                    task_id=task.id,
                    route=str(route),
                    step=step,
                    messages=_context(run.messages[:i]),
                    tools=tools,
                    tool=str(target["function"]["name"]),
                    arguments=_arguments(target) or {},
                )
            )
            step += 1
    return probes, problems


@dataclass
class _Tally:
    probes: int = 0
    log_likelihood: float = 0.0
    tokens: int = 0
    next_tool: int = 0
    next_action: int = 0
    exact: int = 0
    samples: int = 0
    call_format: int = 0
    well_formed: int = 0

    def row(self, policy: str, checkpoint: str, route: str) -> FigureRow:
        def share(n: int, d: int) -> float | None:
            return round(n / d, 4) if d else None

        return FigureRow(
            policy=policy, checkpoint=checkpoint, route=route, probes=self.probes, samples=self.samples,
            action_likelihood=round(math.exp(self.log_likelihood / self.tokens), 4) if self.tokens else None,
            next_tool=share(self.next_tool, self.probes), next_action=share(self.next_action, self.probes),
            exact_arguments=share(self.exact, self.probes),
            call_format=share(self.call_format, self.samples),
            well_formed_calls=share(self.well_formed, self.samples),
        )  # fmt: skip


def well_formed(text: str, names: set[str] | None) -> bool:
    """A reply that makes at least one call, every call a JSON object with object arguments, naming
    only tools in `names` (any tool when `names` is None: the call format alone)."""
    calls = read_calls(text)
    return bool(calls) and all(
        ok and (names is None or call["function"]["name"] in names) and _arguments(call) is not None
        for call, ok in calls
    )


def _generate(
    model: Any, tokenizer: Any, prompt: str, settings: LearningSettings, sample: bool,
    prefix: tuple[Any, Sequence[int]] | None = None,
) -> list[str]:  # fmt: skip
    """Replies to `prompt`: the greedy one, or `settings.samples` sampled ones. `prefix` (a cache and
    the tokens it holds, e.g. the scoring pass's) saves running the prompt's shared start again."""
    import torch

    encoded = tokenizer(prompt, return_tensors="pt", add_special_tokens=False).to(model.device)
    if prefix is not None:
        cache = reusable_cache(model, prefix[0], prefix[1], encoded["input_ids"][0].tolist())
        if cache is not None:
            encoded["past_key_values"] = cache
    options: dict[str, Any] = {"do_sample": False}
    if sample:
        options = {"do_sample": True, "temperature": settings.temperature, "top_k": 0,
                   "num_return_sequences": settings.samples}  # fmt: skip
    with torch.inference_mode():
        output = model.generate(
            **encoded,
            max_new_tokens=settings.max_new_tokens,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
            **options,
        )
    start = encoded["input_ids"].shape[1]
    return [str(tokenizer.decode(row[start:], skip_special_tokens=False)) for row in output]


# Every assistant turn of an SFT row is rendered (TRL's Qwen3 training template) as an empty
# thinking block, then the reply; a trained model begins its replies the same way.
REPLY_START = "<think>\n\n</think>\n\n"


def call_head(tool: str) -> str:
    """How a reply that calls `tool` begins, as the SFT rows render it."""
    return f'{REPLY_START}<tool_call>\n{{"name": {json.dumps(tool, ensure_ascii=False)}, "arguments": '


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _ids(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def length_groups(lengths: Sequence[int], slack: float = 1.25) -> list[list[int]]:
    """Indices of `lengths` in groups of similar length (shortest first; a group's longest at most
    `slack` times its shortest), so a batch padded to its longest wastes little: the reference's
    reply (often 60-90 tokens) is not scored in one batch with fifty 20-token call openings."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    groups: list[list[int]] = []
    for i in order:
        if groups and lengths[i] <= slack * lengths[groups[-1][0]]:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def continuation_log_likelihoods(
    model: Any, tokenizer: Any, prompt_ids: Sequence[int], continuations: Sequence[str],
    keep: list[tuple[Any, list[int]]] | None = None,
) -> list[tuple[float, int]]:  # fmt: skip
    """(sum of log P(token), tokens) of each continuation after the prompt, teacher-forced.

    Each continuation begins with a special token (the reply's `<think>`), where tokenization splits,
    so the prompt is tokenized once and each continuation on its own. The prompt and the part all
    continuations share run once; the continuations' own tokens then run after its key/value cache
    (`_own_log_probs`)."""
    import torch
    from transformers import DynamicCache

    if not continuations:
        return []
    tails = [_ids(tokenizer, text) for text in continuations]
    common = min(_common_prefix(tails[0], t) for t in tails)
    common = min(common, *(len(t) - 1 for t in tails))  # every continuation keeps a token of its own
    prefix = [*prompt_ids, *tails[0][:common]]
    own = [t[common:] for t in tails]
    with torch.inference_mode():
        cache = DynamicCache()
        # logits of the prefix's last common+1 positions: the shared tokens' predictions, then the first own token's
        first = model(input_ids=torch.tensor([prefix], device=model.device), past_key_values=cache,
                      use_cache=True, logits_to_keep=common + 1)  # fmt: skip
        head = torch.log_softmax(first.logits[0].float(), dim=-1)
        if keep is not None:  # the prompt's keys and values, for a reply generated after it
            keep.append((copy.deepcopy(cache), prefix))
        totals = _own_log_probs(model, cache, len(prefix), own, tokenizer.pad_token_id)
    shared = sum(float(head[i, tails[0][i]]) for i in range(common))  # the same for every continuation
    # the first own token is predicted by the prefix's end
    return [
        (shared + float(head[common, tail[0]]) + totals[i], common + len(tail)) for i, tail in enumerate(own)
    ]


def _own_log_probs(model: Any, cache: Any, start: int, own: Sequence[Sequence[int]], pad: int) -> list[float]:
    """Sum of log P(token) over each sequence's tokens after its first, every sequence read after the
    `start` tokens in `cache` (which this uses up).

    The sequences run packed into one row: each token sees the cached tokens and the tokens of its own
    sequence before it, at the positions it would have right after them (a block mask). Fifty tool-call
    openings after a 4,000-token prompt score about three times faster than as a batch, which copies the cache for
    every row. A model with windowed attention keeps only the window in its cache, where one mask does
    not fit every layer: its sequences run as batches on copies of the cache instead, grouped by length
    (`length_groups`) so padding wastes little (right padding is harmless: causal attention never lets
    a real token see a later pad)."""
    import torch

    device = model.device
    if not getattr(model.config, "use_sliding_window", False):
        seg = torch.tensor([i for i, t in enumerate(own) for _ in t], device=device)
        at = torch.tensor([j for t in own for j in range(len(t))], device=device)
        mine = (seg[:, None] == seg[None, :]) & (at[None, :] <= at[:, None])
        mask = torch.cat([torch.ones(len(seg), start, dtype=torch.bool, device=device), mine], 1)
        logits = model(
            input_ids=torch.tensor([[x for t in own for x in t]], device=device), position_ids=(start + at)[None],
            attention_mask=mask[None, None], past_key_values=cache, use_cache=True,
        ).logits[0]  # fmt: skip
        logp = torch.log_softmax(logits.float(), -1)
        totals, k = [], 0
        for tail in own:
            totals.append(sum(float(logp[k + pos - 1, tail[pos]]) for pos in range(1, len(tail))))
            k += len(tail)
        return totals
    out = [0.0] * len(own)
    groups = length_groups([len(t) for t in own])
    for n, group in enumerate(groups):
        width = max(len(own[i]) for i in group)
        ids = torch.tensor([[*own[i], *[pad] * (width - len(own[i]))] for i in group], device=device)
        batch = cache if n == len(groups) - 1 else copy.deepcopy(cache)  # the last group may use it up
        batch.batch_repeat_interleave(len(group))
        logp = torch.log_softmax(
            model(input_ids=ids, past_key_values=batch, use_cache=True).logits.float(), -1
        )
        for row, i in enumerate(group):
            out[i] = sum(float(logp[row, pos - 1, own[i][pos]]) for pos in range(1, len(own[i])))
    return out


def tool_scores(model: Any, tokenizer: Any, prompt: str, tools: Sequence[str]) -> list[float]:
    """log P(the reply begins by calling tool t | prompt) for each t: the model's own ranking of the
    next action, read from its likelihoods rather than from one sampled reply."""
    scored = continuation_log_likelihoods(
        model, tokenizer, _ids(tokenizer, prompt), [call_head(t) for t in tools]
    )
    return [total for total, _ in scored]


def reference_reply(tool: str, arguments: Mapping[str, Any]) -> str:
    """The reference step as an SFT row renders an assistant turn that makes it."""
    call = json.dumps({"name": tool, "arguments": dict(arguments)}, ensure_ascii=False)
    return f"{REPLY_START}<tool_call>\n{call}\n</tool_call><|im_end|>"


def reply_log_likelihood(model: Any, tokenizer: Any, prompt: str, reply: str) -> tuple[float, int]:
    """(sum of log P(token), tokens) of `reply` after `prompt`, teacher-forced."""
    [scored] = continuation_log_likelihoods(model, tokenizer, _ids(tokenizer, prompt), [reply])
    return scored


def first_call(text: str) -> tuple[str, dict[str, Any]] | None:
    """(tool, arguments) of a reply's first call, or None when it makes none with JSON object arguments."""
    calls = read_calls(text)
    if not calls or not calls[0][1]:
        return None
    arguments = _arguments(calls[0][0])
    return (str(calls[0][0]["function"]["name"]), arguments) if arguments is not None else None


def measure(
    checkpoint: Path, probes: Sequence[Probe], settings: LearningSettings, *, policy: str, device: str = "cpu"
) -> list[FigureRow]:
    """The figures of one checkpoint on `probes`, per route and overall (route `all`)."""
    import torch

    model, tokenizer = load_checkpoint(checkpoint, device)
    window = int(getattr(model.config, "max_position_embeddings", 0) or 0)
    torch.manual_seed(settings.seed)
    tallies: dict[str, _Tally] = {}
    for probe in probes:
        prompt = str(
            tokenizer.apply_chat_template(
                align_context(probe.messages), tools=list(probe.tools) or None,
                add_generation_prompt=True, tokenize=False,
            )
        )  # fmt: skip
        # free replies start where the SFT rows' replies start: after the empty thinking block
        reply_prompt = str(
            tokenizer.apply_chat_template(
                align_context(probe.messages), tools=list(probe.tools) or None,
                add_generation_prompt=True, tokenize=False, **GENERATION_TEMPLATE,
            )
        )  # fmt: skip
        names = tool_names(probe.tools)
        prompt_ids = _ids(tokenizer, prompt)
        if window and len(prompt_ids) + settings.max_new_tokens > window:
            continue  # longer than the model can read: counted in no figure
        # the reference's reply and each tool's call opening, scored in one pass over the prompt
        kept: list[tuple[Any, list[int]]] = []
        scored = continuation_log_likelihoods(
            model,
            tokenizer,
            prompt_ids,
            [reference_reply(probe.tool, probe.arguments), *map(call_head, names)],
            keep=kept,
        )
        log_likelihood, tokens = scored[0]
        scores = [total for total, _ in scored[1:]]
        chosen = names[max(range(len(names)), key=lambda i: (scores[i], -i))] if names else None
        right = chosen == probe.tool
        # the most likely next action, literally: the greedy reply to the prompt, then sampled ones
        free = _generate(
            model, tokenizer, reply_prompt, settings, sample=False, prefix=kept[0] if kept else None
        )
        free += _generate(model, tokenizer, reply_prompt, settings, sample=True) if settings.samples else []
        action = first_call(free[0])
        acted = action is not None and action[0] == probe.tool
        formed = sum(well_formed(text, set(names)) for text in free)
        shaped = sum(well_formed(text, None) for text in free)
        for key in (probe.route, ALL_ROUTES):
            t = tallies.setdefault(key, _Tally())
            t.probes += 1
            t.log_likelihood += log_likelihood
            t.tokens += tokens
            t.next_tool += right
            t.next_action += acted
            t.exact += acted and action is not None and action[1] == dict(probe.arguments)
            t.samples += len(free)
            t.call_format += shaped
            t.well_formed += formed
    routes = sorted(k for k in tallies if k != ALL_ROUTES)
    return [tallies[k].row(policy, str(checkpoint), k) for k in [*routes, ALL_ROUTES] if k in tallies]


def checkpoint_stamp(path: Path) -> str:
    """Which weights a checkpoint folder holds, cheaply: the size and modification time of its files."""
    files = sorted(p for p in path.glob("*.safetensors") if p.is_file()) or [path / "config.json"]
    return content_hash(
        [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files if p.exists()], length=16
    )


def probe_set(probes: Sequence[Probe]) -> str:
    return content_hash([(p.task_id, p.step, p.tool) for p in probes], length=16)


def learning_report(
    round_key: str,
    checkpoints: Mapping[str, Path],
    probes: Sequence[Probe],
    tasks: int,
    settings: LearningSettings,
    device: str = "cpu",
    earlier: Sequence[LearningReport] = (),
) -> LearningReport:
    """Figures for each (role -> checkpoint folder), in the order given (start, sft, rl).

    A checkpoint an `earlier` report measured on the same probes with the same settings (the base
    model every round compares with, the checkpoint a round continued from) is not measured again:
    its rows are taken over under this round's role."""
    probes_hash = probe_set(probes)
    known = {
        (row.checkpoint, row.stamp): report
        for report in earlier
        if report.probe_set == probes_hash and report.settings == settings
        for row in report.rows
        if row.stamp
    }
    rows: list[FigureRow] = []
    reused: list[str] = []
    for role, path in checkpoints.items():
        stamp = checkpoint_stamp(path)
        source = known.get((str(path), stamp))
        if source is not None:
            rows += [
                r.model_copy(update={"policy": role})
                for r in source.rows
                if r.checkpoint == str(path) and r.stamp == stamp
            ]
            reused.append(role)
            continue
        rows += [
            r.model_copy(update={"stamp": stamp})
            for r in measure(path, probes, settings, policy=role, device=device)
        ]
    return LearningReport(
        round=round_key, tasks=tasks, probes=len(probes), rows=rows, settings=settings,
        probe_set=probes_hash, reused=reused,
    )  # fmt: skip
