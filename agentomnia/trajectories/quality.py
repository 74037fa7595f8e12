"""Quality verification of trajectories (paper §4.5): correctness first, then how the run got there.

1. Correctness: the task's rubric and verifier decide (`tasks.grading.grade`, with the sandbox running
   verifier code); the calls can be replayed in a fresh session to confirm the state hashes.
2. Reasoning continuity: every call is preceded by reasoning, an error is addressed before moving
   on, a failed call is not repeated unchanged, and the run ends with a final answer.
3. Logical consistency: what the assistant states about a record's field, a call's outcome or the
   number of calls agrees with what the tools returned.
4. Evidence grounding: every id, number, date and recorded fact in the assistant's text and
   arguments occurs in the task text, the tool schemas or an earlier observation (literal
   provenance; see `evidence`).
5. Guidance leak: no piece of the teacher's guidance, and no talk about it, appears anywhere.

All five are code. With an LLM (LLM mode only) a judge adds a second opinion on continuity and
consistency where patterns cannot reach, and decides rubric items without a check; verdicts it
touched are marked `judged`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from agentomnia.envs.values import written_number
from agentomnia.llm.protocol import LLM, LLMError
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.grading import Judge, Outcome, VerifierRunner, grade, values_match
from agentomnia.tasks.models import RubricItem, Task
from agentomnia.trajectories.evidence import (
    DATE_PATTERN,
    ID_PATTERN,
    Evidence,
    needs_support,
    numbers_in,
    record_index,
    records_in,
    state_facts,
    ungrounded_numbers,
)
from agentomnia.trajectories.guidance import LEAK_PHRASES, Guidance, leak_fragments
from agentomnia.trajectories.messages import ALL_WENT_THROUGH, parse_arguments
from agentomnia.trajectories.models import CheckVerdict, QualityReport, Trajectory

_ID = ID_PATTERN.pattern
_VALUE = r"[\"']?([\w.:@-]+)[\"']?"
_FIELD_CLAIMS = (
    re.compile(rf"({_ID})(?:'s)?\s+(\w+)\s+is\s+{_VALUE}"),
    re.compile(rf"({_ID})\s+has\s+(\w+)\s+{_VALUE}"),
    re.compile(rf"the\s+(\w+)\s+of\s+({_ID})\s+is\s+{_VALUE}", re.IGNORECASE),
)
_OUTCOME_CLAIM = re.compile(r"`(\w+)`\s+(succeeded|failed)")
_CALL_COUNT = re.compile(r"\b(\d+)\s+tool\s+calls?\b")
_REFUSED_CLAIM = re.compile(r"\b(\d+) of the (\d+) steps? (?:was|were) refused")
_ACKNOWLEDGE = re.compile(r"fail|error|could not|couldn't|unable|not found|refused|invalid", re.IGNORECASE)


def sandbox_verifier(sandbox: Sandbox) -> VerifierRunner:
    """The grading seam for verifier code: run it in the sandbox, never in this process."""

    def run(code: str, initial_state: Mapping[str, Any], final_state: Mapping[str, Any]) -> bool | None:
        return sandbox.run_check(code, initial_state, final_state).passed

    return run


def _verdict(name: str, problems: list[str], judged: bool = False) -> CheckVerdict:
    return CheckVerdict(name=name, passed=not problems, problems=problems[:20], judged=judged)


def _tool_names_by_id(messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in messages:
        for call in m.get("tool_calls") or []:
            out[str(call.get("id"))] = parse_arguments(call)[0]
    return out


def check_grounding(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    initial_state: Mapping[str, Any],
) -> CheckVerdict:
    keys, facts = state_facts(initial_state)
    evidence = Evidence.from_tools(tools)
    names = _tool_names_by_id(messages)
    problems: list[str] = []
    for i, m in enumerate(messages):
        role = m.get("role")
        content = str(m.get("content") or "")
        if role in ("system", "user"):
            evidence.add_text(content)
            continue
        if role == "tool":
            evidence.add_observation(content, f"the result of `{names.get(str(m.get('tool_call_id')), '?')}`")
            continue
        lowered = content.casefold()
        claims = set(ID_PATTERN.findall(content)) | set(DATE_PATTERN.findall(content))
        claims |= {
            k
            for k in keys
            if k.casefold() in lowered and re.search(rf"(?<![\w-]){re.escape(k)}(?![\w])", content)
        }
        # a fact stated as itself, not inside a longer word ('subscription.plan' in 'Subscription.PlanCode')
        claims |= {
            f
            for f in facts
            if f.casefold() in lowered and re.search(rf"(?<![\w]){re.escape(f.casefold())}(?![\w])", lowered)
        }
        for claim in sorted(claims):
            if not evidence.has_string(claim):
                problems.append(
                    f"turn {i}: {claim!r} in the text appears in no earlier message, schema or result"
                )
        # how many steps the run took, and how many the system refused, the run knows of itself
        steps = [r for r in messages[:i] if r.get("role") == "tool"]
        refused = sum('"ok":false' in str(r.get("content") or "").replace(" ", "") for r in steps)
        for number in ungrounded_numbers(numbers_in(content), evidence, known=(len(steps), refused)):
            problems.append(
                f"turn {i}: the number {written_number(number)} in the text is not in, nor derived from, any earlier result"
            )
        for call in m.get("tool_calls") or []:
            name, args, _ = parse_arguments(call)
            for param, value in sorted((args or {}).items()):
                if needs_support(value, keys, facts) and not evidence.supports(value):
                    problems.append(
                        f"turn {i}: `{name}` argument {param}={value!r} is not grounded in any earlier message"
                    )
    return _verdict("grounding", problems)


def check_leak(
    messages: Sequence[Mapping[str, Any]], guidance: Guidance | None, public_text: str = ""
) -> CheckVerdict:
    public = public_text.casefold()
    fragments = [f for f in leak_fragments(guidance) if f.casefold() not in public]
    problems: list[str] = []
    for i, m in enumerate(messages):
        text = str(m.get("content") or "").casefold()
        calls = json.dumps(m.get("tool_calls") or [], ensure_ascii=False).casefold()
        for fragment in fragments:
            if fragment.casefold() in text or fragment.casefold() in calls:
                problems.append(f"turn {i} ({m.get('role')}): contains guidance text {fragment[:60]!r}")
        if m.get("role") == "assistant":
            for phrase in LEAK_PHRASES:
                if phrase in text and phrase not in public:
                    problems.append(
                        f"turn {i}: mentions {phrase!r}, which only the guidance could tell it about"
                    )
    return _verdict("leak", problems)


def check_consistency(
    messages: Sequence[Mapping[str, Any]], initial_state: Mapping[str, Any], *, judge: LLM | None = None
) -> CheckVerdict:
    index = record_index(initial_state)
    names = _tool_names_by_id(messages)
    seen: dict[str, dict[str, Any]] = {}
    last_ok: dict[str, bool] = {}
    calls = refused = 0
    problems: list[str] = []
    for i, m in enumerate(messages):
        if m.get("role") == "tool":
            calls += 1
            try:
                result = json.loads(str(m.get("content") or "{}"))
            except json.JSONDecodeError:
                continue
            last_ok[names.get(str(m.get("tool_call_id")), "?")] = bool(result.get("ok"))
            refused += not result.get("ok")
            for key, record in records_in(result.get("data"), index):
                seen[key] = {**seen.get(key, {}), **record}
            continue
        if m.get("role") != "assistant":
            continue
        content = str(m.get("content") or "")
        for n, pattern in enumerate(_FIELD_CLAIMS):
            for match in pattern.finditer(content):
                key, field, value = (
                    (match.group(2), match.group(1), match.group(3)) if n == 2 else match.groups()
                )
                value = value.rstrip(".,;:")  # sentence punctuation is not part of the value
                known = seen.get(key)
                if known is not None and field in known and not values_match(known[field], value):
                    problems.append(
                        f"turn {i}: says {key} {field} is {value!r}, but the tools showed {known[field]!r}"
                    )
        for match in _OUTCOME_CLAIM.finditer(content):
            tool, claim = match.groups()
            if tool in last_ok and last_ok[tool] != (claim == "succeeded"):
                problems.append(
                    f"turn {i}: says `{tool}` {claim}, but its last call {'succeeded' if last_ok[tool] else 'failed'}"
                )
        for match in _CALL_COUNT.finditer(content):
            if int(match.group(1)) != calls:
                problems.append(f"turn {i}: speaks of {match.group(1)} tool calls, but {calls} were made")
        for match in _REFUSED_CLAIM.finditer(content):
            if (int(match.group(1)), int(match.group(2))) != (refused, calls):
                problems.append(
                    f"turn {i}: says {match.group(1)} of {match.group(2)} steps were refused, but {refused} "
                    f"of {calls} were"
                )
        if refused and any(p in content for p in ALL_WENT_THROUGH):
            problems.append(f"turn {i}: says everything went through, but {refused} calls were refused")
    judged = False
    if judge is not None and not problems:
        opinion = _judge_process(judge, messages, "consistency")
        if opinion is not None:
            judged = True
            problems += opinion
    return _verdict("consistency", problems, judged)


def check_continuity(
    messages: Sequence[Mapping[str, Any]],
    stop_reason: str,
    *,
    require_reasoning: bool = True,
    judge: LLM | None = None,
) -> CheckVerdict:
    problems: list[str] = []
    failed: list[tuple[str, str]] = []  # (tool, arguments) of calls that failed in the previous batch
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "tool":
            try:
                ok = bool(json.loads(str(m.get("content") or "{}")).get("ok"))
            except json.JSONDecodeError:
                ok = False
            if not ok:
                failed.append((str(m.get("name", "?")), ""))
            continue
        if role != "assistant":
            if role == "user":
                failed = []  # the user spoke: the next turn answers that, not the error
            continue
        content = str(m.get("content") or "")
        calls = [parse_arguments(c) for c in m.get("tool_calls") or []]
        if failed and not _ACKNOWLEDGE.search(content):
            problems.append(
                f"turn {i}: goes on after the failed `{failed[0][0]}` without addressing the error"
            )
        if require_reasoning and calls and not content.strip():
            problems.append(f"turn {i}: calls `{calls[0][0]}` with no reasoning before it")
        failed = []
    last = next((m for m in reversed(messages) if m.get("role") == "assistant"), None)
    if stop_reason != "answer":
        problems.append(f"the run ended by {stop_reason!r} before a final answer")
    elif last is None or last.get("tool_calls") or not str(last.get("content") or "").strip():
        problems.append("the run has no final assistant message")
    judged = False
    if judge is not None and not problems:
        opinion = _judge_process(judge, messages, "continuity")
        if opinion is not None:
            judged = True
            problems += opinion
    return _verdict("continuity", problems, judged)


_JUDGE_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "problems": {"type": "array", "items": {"type": "string"}}},
    "required": ["ok", "problems"],
    "additionalProperties": False,
}
_JUDGE_ASK = {
    "continuity": "Does every step follow from the request and earlier results, without unexplained jumps?",
    "consistency": "Does the assistant ever contradict a tool result, the request, or itself?",
}


def _judge_process(llm: LLM, messages: Sequence[Mapping[str, Any]], aspect: str) -> list[str] | None:
    """A model's second opinion on one process aspect; None when it cannot be had."""
    transcript = json.dumps(list(messages), ensure_ascii=False, default=str)[-24000:]
    prompt = [
        {"role": "system", "content": "You audit tool-use transcripts. Answer in the given JSON schema."},
        {"role": "user", "content": f"{_JUDGE_ASK[aspect]}\n\nTranscript:\n{transcript}"},
    ]
    try:
        data = llm.complete(prompt, schema=_JUDGE_SCHEMA, schema_name=f"{aspect}_verdict").data
    except LLMError:
        return None
    if not isinstance(data, Mapping):
        return None
    return [] if data.get("ok") else [f"judge: {p}" for p in data.get("problems") or ["judged inconsistent"]]


def rubric_judge(llm: LLM) -> Judge:
    """Decides rubric items that have no deterministic check (LLM mode only)."""

    schema = {
        "type": "object",
        "properties": {"passed": {"type": "boolean"}},
        "required": ["passed"],
        "additionalProperties": False,
    }

    def judge(item: RubricItem, task: Task, outcome: Outcome) -> bool | None:
        # the run first and the item last: every item of one rollout shares the prefix, so a routed
        # judge sends them to the endpoint that already holds it in its cache (llm.router)
        ok = getattr(outcome, "ok", None)  # a transcript that kept which calls the environment refused
        calls = [
            [name, args, "ok" if ok[i] else "refused"]
            if ok and len(ok) == len(outcome.calls)
            else [name, args]
            for i, (name, args) in enumerate(outcome.calls)
        ]
        prompt = [
            {"role": "system", "content": "You grade one rubric item of an agent task. Answer in the JSON schema."},
            {"role": "user", "content": json.dumps({
                "task": task.query, "answer": outcome.answer, "calls": calls[-40:],
            }, default=str)[:24000]},
            {"role": "user", "content": f"Rubric item: {item.text}\nDoes the run meet it?"},
        ]  # fmt: skip
        try:
            data = llm.complete(prompt, schema=schema, schema_name="rubric_item").data
        except LLMError:
            return None
        return bool(data.get("passed")) if isinstance(data, Mapping) else None

    return judge


def verify_trajectory(
    traj: Trajectory,
    task: Task,
    *,
    final_state: Mapping[str, Any] | None = None,
    sandbox: Sandbox | None = None,
    bundle: Bundle | None = None,
    guidance: Guidance | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    llm: LLM | None = None,
    replay_calls: bool = False,
    require_reasoning: bool = True,
) -> QualityReport:
    """Every quality verdict of one trajectory. Without `final_state`, the calls are replayed in a
    fresh session (needs `sandbox` and `bundle`); `replay_calls` replays even when it is given, to
    confirm the recorded state hashes."""
    from agentomnia.trajectories.rollout import replay

    replay_matches: bool | None = None
    state = dict(final_state) if final_state is not None else None
    if sandbox is not None and bundle is not None and (state is None or replay_calls):
        hashes, replayed = replay(task, bundle, sandbox, traj.calls())
        replay_matches = hashes == [s.state_hash for s in traj.steps if s.valid]
        state = replayed if state is None else state
    if state is None:
        correctness = CheckVerdict(
            name="correctness",
            passed=None,
            problems=["no final state: give final_state or a sandbox and bundle"],
        )
        score_value = None
    else:
        score = grade(
            task,
            Outcome(final_state=state, answer=dict(traj.answer), calls=traj.calls()),
            verifier=sandbox_verifier(sandbox) if sandbox is not None else None,
            judge=rubric_judge(llm) if llm is not None else None,
        )
        problems = [f"{i.id}: {i.detail}" for i in score.items if i.passed is not True]
        correctness = CheckVerdict(
            name="correctness",
            passed=score.passed,
            problems=problems,
            judged=any(i.judged for i in score.items),
        )
        score_value = score.value
    tool_list = list(tools) if tools is not None else (list(bundle.tools) if bundle is not None else [])
    messages = list(traj.messages)
    return QualityReport(
        correctness=correctness,
        continuity=check_continuity(
            messages, traj.stop_reason, require_reasoning=require_reasoning, judge=llm
        ),
        consistency=check_consistency(messages, task.init_config, judge=llm),
        grounding=check_grounding(messages, tool_list, task.init_config),
        leak=check_leak(messages, guidance, public_text=task.query),
        score=score_value,
        replay_matches=replay_matches,
    )
