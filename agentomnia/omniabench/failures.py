"""Why a trial failed: deterministic failure tags with evidence, the input of self-evolution.

Each failed (task, trial) is read against what the task expected: its reference calls (or the tool
calls its reference program makes), its rubric results and the per-field end-state diff. Rules over
those produce tags from `FAILURE_TAGS`, each with one sentence naming the step, field or value that
shows it, so a diagnosis (or a person) can check the tag without rerunning anything. Tags are
ordered most decisive first: a cause in the process (no action, a wrong or misunderstood tool,
invalid or invented arguments, a wrong order, a spent budget) before the symptoms it leaves in the
outcome (broken constraints, collateral changes, missing changes, a wrong answer).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentomnia.omniabench.models import EvalResult, Failure, FieldDiff
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.errors import INVALID_ARGUMENTS, UNKNOWN_TOOL
from agentomnia.sandbox.policy import parse_python
from agentomnia.tasks.grading import values_match
from agentomnia.tasks.models import ReferenceCall, Task
from agentomnia.trajectories.evidence import Evidence, needs_support, state_facts
from agentomnia.trajectories.messages import parse_arguments, shown_name
from agentomnia.trajectories.models import Step

TAG_ORDER: tuple[str, ...] = (
    "no_action",
    "wrong_tool",
    "misunderstood_tool",
    "invalid_arguments",
    "hallucinated_value",
    "wrong_order",
    "budget_exhausted",
    "missed_constraint",
    "collateral_change",
    "incomplete",
    "wrong_answer",
)
# Rubric checks that guard a constraint (leave this alone, never do that) rather than the goal.
CONSTRAINT_KINDS = frozenset({"field_unchanged", "not_called", "diff_within"})
ANSWER_KINDS = frozenset({"answer_equals", "answer_contains"})
_OUT_SOURCE = re.compile(r"^out:(\d+)")


def _show(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def program_calls(code: str) -> list[ReferenceCall]:
    """The tool calls a reference program makes, read from its source: `call("tool", k=v)` inside
    `solve(call)` (literal keyword arguments kept, the rest left out). No code is run."""
    try:
        tree = parse_python(code)
    except SyntaxError:
        return []
    solve = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "solve"), None)
    if solve is None or not solve.args.args:
        return []
    caller = solve.args.args[0].arg
    found: list[tuple[int, int, ReferenceCall]] = []
    for node in ast.walk(solve):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == caller
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            args = {
                kw.arg: kw.value.value
                for kw in node.keywords
                if kw.arg is not None and isinstance(kw.value, ast.Constant)
            }
            found.append((node.lineno, node.col_offset, ReferenceCall(tool=node.args[0].value, args=args)))
    return [call for _, _, call in sorted(found, key=lambda f: (f[0], f[1]))]


def reference_of(task: Task) -> list[ReferenceCall]:
    """The calls a correct run needs: the task's reference calls, or those of its reference program."""
    if task.reference_calls:
        return list(task.reference_calls)
    return program_calls(task.reference_program) if task.reference_program else []


def _tool_errors(result: EvalResult) -> list[str]:
    """The error text of each step's result (rollout appends one tool message per step, in order)."""
    out: list[str] = []
    for m in result.messages:
        if m.get("role") != "tool":
            continue
        try:
            error = json.loads(str(m.get("content") or "{}")).get("error") or {}
        except (json.JSONDecodeError, AttributeError):
            error = {}
        out.append(str(error.get("message") or "") if isinstance(error, Mapping) else "")
    return out


def _changed(steps: Sequence[Step], index: int, initial_hash: str) -> bool:
    before = steps[index - 1].state_hash if index > 0 else initial_hash
    return steps[index].state_hash != before


def _hallucinations(
    result: EvalResult, task: Task, tools: Sequence[Mapping[str, Any]]
) -> tuple[list[str], Evidence]:
    """Argument values stating facts (ids, recorded values, dates, numbers) that nothing seen before
    the call contained; also returns the evidence of the whole run for checking the answer."""
    keys, facts = state_facts(task.init_config)
    evidence = Evidence.from_tools(tools)
    found: list[str] = []
    step = 0
    for m in result.messages:
        role = m.get("role")
        if role in ("system", "user"):
            evidence.add_text(str(m.get("content") or ""), "the request")
        elif role == "tool":
            evidence.add_observation(str(m.get("content") or ""))
        elif role == "assistant":
            for call in m.get("tool_calls") or []:
                name, args, _ = parse_arguments(call)
                for param, value in sorted((args or {}).items()):
                    if needs_support(value, keys, facts) and not evidence.supports(value):
                        found.append(
                            f"step {step}: `{name}` argument {param}={_show(value)} appears in neither the "
                            "request, the tool schemas nor any earlier tool result"
                        )
                step += 1
    return found, evidence


def _where(d: FieldDiff) -> str:
    return f"{d.table}[{d.key}]" + ("" if d.field == "*" else f".{d.field}")


def tag_failure(
    result: EvalResult,
    task: Task,
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    plan: Sequence[ReferenceCall] | None = None,
) -> Failure:
    """Tags and evidence for one failed trial. Pass the environment's `tools` (schemas): a value the
    agent could read off a schema (an enum, say) is not invented. `plan` overrides the reference
    calls (e.g. the calls a reference program made when run)."""
    if result.task_id != task.id:
        raise ValueError(f"result {result.id} is for task {result.task_id}, not {task.id}; pass its own task")
    found: dict[str, str] = {}

    def add(tag: str, sentence: str) -> None:
        found.setdefault(tag, sentence)

    steps = list(result.steps)
    reference = list(plan) if plan is not None else reference_of(task)
    needed = list(dict.fromkeys(c.tool for c in reference))
    errors = _tool_errors(result)
    initial_hash = result.initial_hash
    expected_keys = {
        (str(d.get("table")), str(d.get("key")), d.get("field") or "*") for d in task.expected_diff
    }
    unmet = [d for d in result.state_diff if (d.table, d.key, d.field) in expected_keys]
    stray = [d for d in result.state_diff if (d.table, d.key, d.field) not in expected_keys]
    rubric = {item.id: item for item in task.rubric}
    failed_items = [rubric[i] for i, ok in result.components.items() if ok is False and i in rubric]

    def item_sentence(item_id: str) -> str:
        item = rubric[item_id]
        detail = result.details.get(item_id) or "failed"
        return f"rubric {item.id} ({item.text}) failed: {detail}"

    # --- the process -------------------------------------------------------------------------
    answered = any(values_match(result.answer.get(f), v) for f, v in task.expected_answer.items())
    if not steps and not answered:
        why = f"the policy raised before acting ({result.error})" if result.error else "it stopped"
        add(
            "no_action",
            f"no tool was called and no usable answer was given; {why} (stop: {result.stop_reason})",
        )

    for s in steps:
        if not s.valid and s.error_code == UNKNOWN_TOOL:
            add(
                "wrong_tool",
                f"step {s.index} called `{shown_name(s.tool)}`, which is not one of the environment's tools",
            )
            break
    ok_tools = {s.tool for s in steps if s.ok}
    missing = [t for t in needed if t not in ok_tools]
    state_task = bool(task.expected_diff)
    # On a task that changes state, extra lookups are diligence, not a wrong tool: only extra calls
    # that changed something count. On a question, any tool the reference does not use counts.
    extra = [
        s
        for s in steps
        if s.valid and s.tool not in needed and (not state_task or _changed(steps, s.index, initial_hash))
    ]
    if missing and extra:
        s = extra[0]
        add(
            "wrong_tool",
            f"step {s.index} called `{shown_name(s.tool)}`, which the reference never needs, "
            f"and `{missing[0]}`, which it does, never succeeded",
        )

    for s in steps:
        refused = s.valid and not s.ok and s.error_code not in (INVALID_ARGUMENTS, UNKNOWN_TOOL, None)
        later_ok = any(t.ok and t.tool == s.tool for t in steps[s.index + 1 :])
        if refused and s.tool in needed and not later_ok:
            message = errors[s.index] if s.index < len(errors) else ""
            add("misunderstood_tool", f"step {s.index}: `{shown_name(s.tool)}` refused {_show(s.arguments)} "
                                      f"({s.error_code}: {message[:120]})")  # fmt: skip
            break

    for s in steps:
        if s.error_code == INVALID_ARGUMENTS:
            message = errors[s.index] if s.index < len(errors) else ""
            shown = _show(s.arguments)
            add(
                "invalid_arguments",
                f"step {s.index}: `{shown_name(s.tool)}` arguments {shown} were refused: {message[:140]}",
            )
            break

    invented, evidence = _hallucinations(result, task, tools or [])
    if invented:
        add("hallucinated_value", invented[0])
    else:
        keys, facts = state_facts(task.init_config)
        for field, expected in sorted(task.expected_answer.items()):
            value = result.answer.get(field)
            if (
                field in result.answer
                and not values_match(value, expected)
                and needs_support(value, keys, facts)
                and not evidence.supports(value)
            ):
                add("hallucinated_value", f"answer.{field}={_show(value)} appears in nothing the agent saw "
                                          f"(expected {_show(expected)})")  # fmt: skip
                break

    for i, call in enumerate(reference):
        for source in call.sources.values():
            match = _OUT_SOURCE.match(source)
            if match is None or int(match.group(1)) >= len(reference):
                continue
            before = reference[int(match.group(1))].tool
            if before == call.tool:
                continue
            uses = [s.index for s in steps if s.ok and s.tool == call.tool]
            feeds = [s.index for s in steps if s.ok and s.tool == before]
            if uses and feeds and max(uses) < min(feeds):
                add(
                    "wrong_order",
                    f"step {max(uses)} called `{call.tool}` before step {min(feeds)} called `{before}`, "
                    f"whose result it depends on (reference step {i})",
                )

    if result.stop_reason == "budget":
        add(
            "budget_exhausted",
            f"the run used its whole turn budget ({len(steps)} tool calls) without a final answer",
        )
    elif result.stop_reason == "invalid_calls":
        last = steps[-1] if steps else None
        where = (
            f"; the last was step {last.index} `{shown_name(last.tool)}` ({last.error_code})" if last else ""
        )
        add("budget_exhausted", f"the run was stopped after repeated invalid calls{where}")

    # --- the outcome -------------------------------------------------------------------------
    for item in failed_items:
        if item.check is not None and (item.check.kind in CONSTRAINT_KINDS or item.scope == "general"):
            add("missed_constraint", item_sentence(item.id))
            break
    if stray:
        d = stray[0]
        more = f" (and {len(stray) - 1} more fields)" if len(stray) > 1 else ""
        change = f"{_where(d)} changed from {_show(d.initial)} to {_show(d.actual)}"
        add("collateral_change", f"{change}, which the task did not ask for{more}")
    if unmet:
        d = unmet[0]
        more = f" (and {len(unmet) - 1} more)" if len(unmet) > 1 else ""
        add("incomplete", f"{_where(d)} is {_show(d.actual)}; the task needs {_show(d.expected)}{more}")
    elif missing and "wrong_tool" not in found and steps:
        add(
            "incomplete",
            f"`{missing[0]}`, which the reference needs, never succeeded (stop: {result.stop_reason})",
        )
    for item in failed_items:
        if item.check is not None and item.check.kind in ANSWER_KINDS:
            add("wrong_answer", item_sentence(item.id))
            break
    else:
        for field, expected in sorted(task.expected_answer.items()):
            if not values_match(result.answer.get(field), expected):
                shown = _show(result.answer[field]) if field in result.answer else "missing"
                add("wrong_answer", f"answer.{field} is {shown}; expected {_show(expected)}")
                break

    # --- nothing specific: name the first rubric item that kept the score below 1.0 -----------
    if not found:
        for item_id, ok in result.components.items():
            if ok is False and item_id in rubric:
                check = rubric[item_id].check
                kind = check.kind if check is not None else ""
                tag = "wrong_answer" if kind in ANSWER_KINDS else "incomplete"
                add(tag, item_sentence(item_id))
                break
            if ok is None:
                add(
                    "incomplete",
                    f"rubric {item_id} was left unscored: {result.details.get(item_id) or 'no check'}",
                )
                break
    if not found:
        add("incomplete", f"the run did not pass (score {result.score}, stop: {result.stop_reason})")

    tags = [t for t in TAG_ORDER if t in found]
    return Failure(
        eval_id=result.eval_id, result_id=result.id, task_id=result.task_id, env_id=result.env_id,
        task_kind=result.task_kind, route=result.route, policy=result.policy, trial=result.trial,
        coordinate=result.coordinate, score=result.score, tags=tuple(tags),
        evidence=tuple(found[t] for t in tags), round=result.round,
    )  # fmt: skip


def failures_of(
    results: Iterable[EvalResult],
    tasks: Mapping[str, Task],
    bundles: Mapping[str, Bundle] | None = None,
) -> list[Failure]:
    """A Failure for every failed trial that was the agent's doing (infrastructure errors and passes
    are left out), tagged with its environment's tool schemas when `bundles` has them."""
    out: list[Failure] = []
    for result in results:
        if result.passed or result.infra_error is not None:
            continue
        task = tasks.get(result.task_id)
        if task is None:
            raise KeyError(f"no task {result.task_id} for result {result.id}; pass every evaluated task")
        bundle = (bundles or {}).get(result.env_id)
        out.append(tag_failure(result, task, tools=bundle.tools if bundle is not None else None))
    return out
