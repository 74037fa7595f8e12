"""The SFT dataset: verified trajectories turned into rows TRL's SFTTrainer consumes directly.

Three steps (paper §5.1):
- format validation: every tool call parses, names a tool that exists, and its arguments are valid
  under that tool's JSON schema; tool results answer calls that were made. Failing rows are dropped
  with their reason.
- convergence-aware budgeting: per-source budgets (a source is a task paradigm by default) from
  measured learning curves — the smallest sample count whose score is within `tolerance` of the
  curve's best — when a training run has produced them; otherwise source-balanced (no source keeps
  more than `balance_ratio` times the smallest one that has at least `min_source_rows` and a tenth
  of all rows; a source with fewer keeps all it has, so one starved paradigm cannot shrink every
  other to its size).
  The report says which was used.
- context alignment: at inference a reasoning model does not see its earlier turns' reasoning, so
  rows keep the reasoning of the final assistant turn only (questions to the user stay: they are
  what the user saw).

Rows have `messages` (tool-call arguments as dicts, as chat templates expect) and `tools` (OpenAI
function schemas); they are saved as a Hugging Face dataset built with `on_mixed_types="use_json"`
(so differing argument dicts are not merged into one struct) and as OpenAI fine-tuning JSONL.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import jsonschema
from pydantic import BaseModel, Field

from agentomnia.records import content_hash
from agentomnia.trajectories.messages import parse_arguments, tool_names, tool_schemas
from agentomnia.trajectories.models import Trajectory

_TOKEN = re.compile(r"\w+|[^\w\s]")


def approx_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """A tokenizer-free size estimate (word pieces and punctuation), stable across runs for metadata."""
    return sum(len(_TOKEN.findall(json.dumps(m, ensure_ascii=False, default=str))) for m in messages)


def validate_format(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]) -> list[str]:
    """Everything that would make a row untrainable or teach a malformed call; [] when clean."""
    schemas = tool_schemas(tools)
    problems: list[str] = []
    open_ids: set[str] = set()
    for i, m in enumerate(messages):
        role = m.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            problems.append(f"turn {i}: unknown role {role!r}")
            continue
        if role == "assistant":
            for call in m.get("tool_calls") or []:
                name, args, problem = parse_arguments(call)
                if problem is not None or args is None:
                    problems.append(f"turn {i}: {problem}")
                    continue
                if name not in schemas:
                    problems.append(f"turn {i}: calls `{name}`, which is not among the row's tools")
                    continue
                try:
                    jsonschema.validate(args, schemas[name])
                except jsonschema.ValidationError as exc:
                    problems.append(f"turn {i}: `{name}` arguments break the schema: {exc.message[:160]}")
                except jsonschema.SchemaError as exc:
                    problems.append(f"turn {i}: `{name}` has an invalid schema: {exc.message[:160]}")
                open_ids.add(str(call.get("id")))
        if role == "tool" and str(m.get("tool_call_id")) not in open_ids:
            problems.append(
                f"turn {i}: a tool result answers no earlier call (tool_call_id {m.get('tool_call_id')!r})"
            )
    if not any(m.get("role") == "assistant" for m in messages):
        problems.append("no assistant turn to learn from")
    return problems


def _hf_call(call: Mapping[str, Any]) -> dict[str, Any]:
    name, args, _ = parse_arguments(call)
    return {
        "id": str(call.get("id", "")),
        "type": "function",
        "function": {"name": name, "arguments": args or {}},
    }


# Chat-template options for generating a reply from a model trained on SFT rows: the rows render every
# assistant turn after an empty thinking block (non-thinking mode), so a generation prompt must end
# with that block too, or the model starts a thinking block it was never taught to close.
GENERATION_TEMPLATE: dict[str, bool] = {"enable_thinking": False}


def align_context(
    messages: Sequence[Mapping[str, Any]], *, arguments_as: Literal["dict", "json"] = "dict"
) -> list[dict[str, Any]]:
    """Messages as a training row: earlier assistant reasoning removed, the final turn's kept."""
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    out: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "assistant":
            calls = list(m.get("tool_calls") or [])
            message: dict[str, Any] = {
                "role": "assistant",
                "content": str(m.get("content") or "") if (i == last or not calls) else "",
            }
            if calls:
                message["tool_calls"] = [
                    _hf_call(c) if arguments_as == "dict" else {**c, "type": "function"} for c in calls
                ]
            out.append(message)
        elif role == "tool":
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": str(m.get("tool_call_id", "")),
                    "name": str(m.get("name", "")),
                    "content": str(m.get("content") or ""),
                }
            )
        else:
            out.append({"role": str(role), "content": str(m.get("content") or "")})
    return out


def convergence_budget(curve: Sequence[tuple[int, float]], tolerance: float = 0.01) -> int:
    """Smallest sample count whose score is within `tolerance` of the best on a learning curve."""
    if not curve:
        raise ValueError("a learning curve needs at least one (samples, score) point")
    best = max(score for _, score in curve)
    return min(n for n, score in curve if score >= best - tolerance)


class SourceBudget(BaseModel):
    source: str
    available: int
    budget: int
    kept: int


class SFTDatasetReport(BaseModel):
    rows: int
    budgeting: Literal["learning_curve", "balanced"]
    sources: list[SourceBudget]
    dropped: dict[str, int] = Field(default_factory=dict)  # reason -> count
    format_problems: list[str] = Field(default_factory=list)  # first few, for the asset's metadata
    tokens: int = 0  # approximate, messages only
    mean_tokens: float = 0.0
    tool_tokens: int = 0  # approximate, the `tools` column (schemas are rendered into every prompt)
    task_ids: list[str] = Field(default_factory=list)
    hf_path: str = ""
    jsonl_path: str = ""


def _budgets(
    available: Mapping[str, int],
    curves: Mapping[str, Sequence[tuple[int, float]]] | None,
    balance_ratio: float,
    tolerance: float,
    min_source_rows: int = 4,
) -> tuple[Literal["learning_curve", "balanced"], dict[str, int]]:
    if curves:
        budgets = {
            s: convergence_budget(curves[s], tolerance) if s in curves else n for s, n in available.items()
        }
        return "learning_curve", budgets
    sizes = [n for n in available.values() if n > 0]
    # a source sets the cap only with enough rows to stand for its paradigm: `min_source_rows`, and a
    # tenth of all (5 DAG-Challenge runs beside 28 DAG-Standard ones would cut the dataset to 35 of 56)
    enough = max(min_source_rows, math.ceil(0.1 * sum(sizes)))
    smallest = min((n for n in sizes if n >= enough), default=min(sizes, default=0))
    cap = max(1, math.ceil(smallest * balance_ratio))
    return "balanced", {s: min(n, cap) for s, n in available.items()}


def build_sft_dataset(
    trajectories: Iterable[Trajectory],
    out_dir: str | Path,
    *,
    tools_by_env: Mapping[str, Sequence[Mapping[str, Any]]],
    task_ids: Iterable[str] | None = None,
    learning_curves: Mapping[str, Sequence[tuple[int, float]]] | None = None,
    balance_ratio: float = 2.0,
    min_source_rows: int = 4,
    tolerance: float = 0.01,
    source_of: Callable[[Trajectory], str] = lambda t: t.task_kind,
    max_tools: int | None = None,
    seed: int = 0,
) -> SFTDatasetReport:
    """Write `out_dir/hf` (datasets.save_to_disk) and `out_dir/openai.jsonl` from the verified
    trajectories whose task is in `task_ids` (all when None); see the module docstring.
    `max_tools` trims each row's tool list to the tools it calls plus distractors up to that size
    (a short context for small models); by default every tool of the environment is kept."""
    from datasets import Dataset

    allowed = set(task_ids) if task_ids is not None else None
    dropped: Counter[str] = Counter()
    problems: list[str] = []
    by_source: dict[str, list[tuple[Trajectory, list[dict[str, Any]]]]] = defaultdict(list)
    for traj in trajectories:
        if allowed is not None and traj.task_id not in allowed:
            dropped["held out for RL"] += 1
            continue
        if not traj.verified:
            dropped["not verified"] += 1
            continue
        tools = tools_by_env.get(traj.env_id)
        if tools is None:
            dropped["no tools for the environment"] += 1
            continue
        found = validate_format(traj.messages, tools)
        if found:
            dropped["format"] += 1
            problems.extend(f"{traj.id}: {p}" for p in found[:3])
            continue
        by_source[source_of(traj)].append((traj, [dict(t) for t in tools]))
    mode, budgets = _budgets(
        {s: len(v) for s, v in by_source.items()}, learning_curves, balance_ratio, tolerance, min_source_rows
    )
    rows: list[dict[str, Any]] = []
    jsonl: list[str] = []
    sources: list[SourceBudget] = []
    kept_ids: list[str] = []
    for source in sorted(by_source):
        ranked = sorted(by_source[source], key=lambda pair: content_hash([seed, pair[0].id]))
        chosen = ranked[: budgets[source]]
        dropped["over budget"] += len(ranked) - len(chosen)
        sources.append(
            SourceBudget(source=source, available=len(ranked), budget=budgets[source], kept=len(chosen))
        )
        for traj, all_tools in chosen:
            tools = _trim_tools(all_tools, traj, max_tools, seed)
            rows.append({"messages": align_context(traj.messages), "tools": tools})
            jsonl.append(
                json.dumps({"messages": _openai_messages(traj.messages), "tools": tools}, ensure_ascii=False)
            )
            kept_ids.append(traj.task_id)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    hf_path, jsonl_path = out / "hf", out / "openai.jsonl"
    if rows:
        Dataset.from_list(rows, on_mixed_types="use_json").save_to_disk(str(hf_path))
    jsonl_path.write_text("\n".join(jsonl) + ("\n" if jsonl else ""), encoding="utf-8")
    tokens = sum(approx_tokens(r["messages"]) for r in rows)
    tool_tokens = sum(approx_tokens(r["tools"]) for r in rows)
    return SFTDatasetReport(
        rows=len(rows), budgeting=mode, sources=sources, dropped={k: v for k, v in dropped.items() if v},
        format_problems=problems[:20], tokens=tokens, mean_tokens=round(tokens / len(rows), 1) if rows else 0.0, tool_tokens=tool_tokens,
        task_ids=sorted(set(kept_ids)), hf_path=str(hf_path) if rows else "", jsonl_path=str(jsonl_path),
    )  # fmt: skip


def _trim_tools(
    tools: list[dict[str, Any]], traj: Trajectory, max_tools: int | None, seed: int
) -> list[dict[str, Any]]:
    if max_tools is None or len(tools) <= max_tools:
        return tools
    used = {name for name, _ in traj.calls()}
    names = tool_names(tools)
    keep = [t for t, n in zip(tools, names, strict=True) if n in used]
    others = sorted(
        (t for t, n in zip(tools, names, strict=True) if n not in used),
        key=lambda t: content_hash([seed, traj.id, t["function"]["name"]]),
    )
    return keep + others[: max(0, max_tools - len(keep))]


def _openai_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI fine-tuning format: arguments as JSON text, tool results keyed by tool_call_id only."""
    out = []
    for m in align_context(messages, arguments_as="json"):
        if m["role"] == "tool":
            out.append({"role": "tool", "tool_call_id": m["tool_call_id"], "content": m["content"]})
        else:
            out.append(m)
    return out


def validate_sft_dataset(path: str | Path) -> list[str]:
    """Format problems of every row of a saved SFT dataset (an asset check: must be empty)."""
    from datasets import load_from_disk

    problems: list[str] = []
    for index, row in enumerate(load_from_disk(str(path))):
        problems.extend(f"row {index}: {p}" for p in validate_format(row["messages"], row["tools"]))
    return problems


def sft_format_problems(path: str | Path) -> list[str] | None:
    """What the `sft_rows_valid` check reports: every row's format problems, or None where no dataset
    was saved (a round whose verified trajectories all fell out: no row is malformed, none to train)."""
    return validate_sft_dataset(path) if Path(path).is_dir() else None
