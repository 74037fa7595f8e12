"""Rollout analysis (paper §5.2.3): which behaviours separate failed rollouts from successful ones,
and the auxiliary penalties the next RL run adds for the behaviours that do.

A round's rollouts are read as transcripts (OpenAI-format messages with `tool_calls` and `role: "tool"`
results carrying the ToolResult JSON, the tools offered, the task). Five behavioural indicators are
computed per rollout, each a boolean with the steps that show it and why:

- `tool_call_anomaly`: a call to a tool that was not offered, arguments that are not a JSON object,
  or arguments the tool's JSON schema rejects (a required one missing, a wrong type or value);
- `repeated_calls`: the same call (tool and arguments) made `repeat_limit` times, or repeated until
  the turn budget ran out;
- `no_clarification`: the task holds a detail back (a persona's withheld or misleading details, the
  gap of a multi-turn DAG task, `interaction.gaps_in`) and the agent wrote, or answered, before asking the user;
- `unchecked_write`: a write on a record or table that no earlier read looked at;
- `unsupported_answer`: a value of the final answer that no tool result contained (nor derived from
  one: a count, sum, minimum, maximum or mean of a listed field, or one step of arithmetic).

An indicator separates the groups when it is more frequent among failed (zero- or low-reward)
rollouts than among successful ones by `min_difference`, with `min_support` failed rollouts showing
it; each separating indicator becomes a negative auxiliary weight scaled by the difference and capped.
The weights travel as `AuxiliaryWeights` (JSON) with the decision and figures for every indicator.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentomnia.envs.naming import AGG_VERBS, LIST_VERBS, READ_VERBS, plural, snake
from agentomnia.records import canonical_json, content_hash
from agentomnia.rewards.rules import schema_errors
from agentomnia.tasks.dag.interaction import gaps_in
from agentomnia.tasks.grading import ItemResult
from agentomnia.tasks.models import Task
from agentomnia.trajectories.evidence import (
    DATE_PATTERN,
    ID_PATTERN,
    Evidence,
    numbers_in,
    ungrounded_numbers,
)
from agentomnia.trajectories.messages import parse_answer, parse_arguments, tool_schemas

ToolKind = Literal["read", "write"]
Group = Literal["successful", "failed", "excluded"]
# Verbs of tools that only look: a tool whose name starts with anything else is taken for a write
# when the bundle does not say which of its tools are read-only.
LOOK_VERBS = READ_VERBS | LIST_VERBS | AGG_VERBS | {"count", "overview", "range", "is", "has"}
# Answer strings that are yes/no words, not facts about records.
_FLAG_WORDS = frozenset({"yes", "no", "true", "false", "none", "n/a", "null", ""})
# Longer answer strings, and sentences, are prose the agent writes itself; only the facts inside them
# need a source.
MAX_CLAIM_CHARS = 80


# -- the input ---------------------------------------------------------------------------------


class Transcript(BaseModel):
    """What one run left behind, as the indicators read it (no reward needed: GRPO applies the
    adopted weights before the task reward is known)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task: Task
    messages: tuple[dict[str, Any], ...]
    tools: tuple[dict[str, Any], ...] = Field(description="the tools offered, in OpenAI function format")
    read_tools: tuple[str, ...] | None = Field(
        default=None, description="tools that only read (Bundle.read_tools); None: judged by the tool's verb"
    )
    stop_reason: str = Field(default="answer", description="Trajectory.stop_reason; 'budget' when truncated")
    step_hashes: tuple[str, ...] = Field(
        default=(), description="state hash after each call, when recorded (Trajectory.steps)"
    )
    initial_hash: str = ""


class ScoredRollout(Transcript):
    """A transcript with its grade: the task reward, whether it succeeded, and per-item results when known."""

    id: str = Field(default="", description="trajectory id; computed from the content when empty")
    reward: float | None
    succeeded: bool
    items: tuple[ItemResult, ...] = Field(
        default=(), description="rubric item results (tasks.grading.grade) when the grader kept them"
    )

    @model_validator(mode="after")
    def _fill_id(self) -> ScoredRollout:
        if not self.id:
            object.__setattr__(self, "id", content_hash([self.task.id, list(self.messages), self.reward]))
        return self

    @classmethod
    def from_trajectory(
        cls,
        trajectory: Any,
        task: Task,
        tools: Sequence[Mapping[str, Any]],
        *,
        read_tools: Iterable[str] | None = None,
    ) -> ScoredRollout:
        """A verified `trajectories.Trajectory`: reward is its rubric score, success its correctness."""
        rewards = dict(trajectory.rewards)
        verification = trajectory.verification
        passed = verification.correctness.passed if verification is not None else rewards.get("correctness")
        return cls(
            id=trajectory.id, task=task, messages=tuple(dict(m) for m in trajectory.messages),
            tools=tuple(dict(t) for t in tools),
            read_tools=tuple(sorted(read_tools)) if read_tools is not None else None,
            stop_reason=trajectory.stop_reason, step_hashes=tuple(s.state_hash for s in trajectory.steps),
            initial_hash=trajectory.initial_hash, reward=rewards.get("score"), succeeded=bool(passed),
        )  # fmt: skip


# -- the transcript, read once -----------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One tool call of a run with the result message that answered it."""

    index: int  # position among the run's calls (the step index)
    turn: int  # index of the assistant message that made it
    tool: str
    arguments: dict[str, Any] | None  # None: they did not parse to a JSON object
    problem: str | None  # why the arguments did not parse
    offered: bool
    kind: ToolKind
    result: dict[str, Any] | None  # the ToolResult JSON, None when no result (or not JSON)
    result_text: str

    @property
    def ok(self) -> bool:
        return bool(self.result and self.result.get("ok"))

    @property
    def error_code(self) -> str | None:
        error = (self.result or {}).get("error")
        return str(error.get("code")) if isinstance(error, Mapping) and error.get("code") else None

    @property
    def label(self) -> str:
        return f"step {self.index} `{self.tool}`"


def name_nouns(tool: str) -> frozenset[str]:
    """The things a tool's name talks about (`update_task_status` -> task, status)."""
    words = snake(tool).split("_")
    stop = {"by", "for", "all", "my", "of", "in", "on", "to", "from", "with", "and", "a", "the", "id"}
    return frozenset(w for w in words[1:] if w not in stop) or frozenset(words)


def tool_kind(tool: str, read_tools: Iterable[str] | None) -> ToolKind:
    """Read or write: as the bundle declares when it does, else by the verb the name starts with."""
    if read_tools is not None:
        return "read" if tool in set(read_tools) else "write"
    return "read" if snake(tool).split("_")[0] in LOOK_VERBS else "write"


def _same_thing(a: frozenset[str], b: frozenset[str]) -> bool:
    return any(x == y or plural(x) == y or x == plural(y) for x in a for y in b)


@dataclass(frozen=True)
class RunView:
    """A transcript parsed once: its calls, the final message and answer, the clarifying questions."""

    transcript: Transcript
    calls: tuple[Call, ...]
    final_turn: int | None  # the closing assistant message without calls, if the run ended on one
    final_text: str
    answer: dict[str, Any]
    questions: tuple[int, ...]  # assistant turns that asked the user something and got a reply
    keys: frozenset[str]  # record keys of the task's initial state

    @property
    def writes(self) -> list[Call]:
        return [c for c in self.calls if c.kind == "write" and c.arguments is not None and c.offered]

    def targets(self, call: Call) -> list[str]:
        """Record keys a call names: arguments that are keys of the initial state or look like ids."""
        out = []
        for param, value in sorted((call.arguments or {}).items()):
            if not isinstance(value, str) or not value:
                continue
            named_id = param == "id" or param.endswith(("_id", "Id", "_key"))
            if value in self.keys or ID_PATTERN.fullmatch(value) or named_id:
                out.append(value)
        return out

    def looked_at(self, read: Call, write: Call) -> bool:
        """Whether `read` looked at the record or the table `write` acts on."""
        targets = self.targets(write)
        text = canonical_json(read.arguments or {}) + read.result_text
        if any(re.search(rf"(?<![\w-]){re.escape(t)}(?![\w-])", text) for t in targets):
            return True
        return _same_thing(name_nouns(read.tool), name_nouns(write.tool))


def read_run(transcript: Transcript) -> RunView:
    messages = list(transcript.messages)
    schemas = tool_schemas(transcript.tools)
    results: dict[str, int] = {}
    by_order: list[int] = []
    for i, m in enumerate(messages):
        if m.get("role") == "tool":
            by_order.append(i)
            if m.get("tool_call_id"):
                results.setdefault(str(m["tool_call_id"]), i)
    view_keys = frozenset(
        str(k) for t in transcript.task.init_config.values() if isinstance(t, Mapping) for k in t
    )
    calls: list[Call] = []
    used: set[int] = set()
    questions: list[int] = []
    for turn, m in enumerate(messages):
        if m.get("role") != "assistant":
            continue
        tool_calls = m.get("tool_calls") or []
        if not tool_calls and "?" in str(m.get("content") or ""):
            follow = messages[turn + 1] if turn + 1 < len(messages) else None
            if follow is not None and follow.get("role") == "user":
                questions.append(turn)
        for call in tool_calls:
            name, args, problem = parse_arguments(call)
            # results pair by tool_call_id; a transcript without ids (TRL's) pairs them in order
            at = results.get(str(call.get("id"))) if isinstance(call, Mapping) else None
            if at is None or at in used:
                at = next((j for j in by_order if j > turn and j not in used), None)
            text = ""
            result: dict[str, Any] | None = None
            if at is not None:
                used.add(at)
                text = str(messages[at].get("content") or "")
                try:
                    parsed = json.loads(text)
                except json.JSONDecodeError:
                    parsed = None
                result = parsed if isinstance(parsed, dict) else None
            calls.append(Call(index=len(calls), turn=turn, tool=name, arguments=args, problem=problem,
                              offered=name in schemas, kind=tool_kind(name, transcript.read_tools),
                              result=result, result_text=text))  # fmt: skip
    last = len(messages) - 1
    while last >= 0 and messages[last].get("role") not in ("assistant", "tool"):
        last -= 1
    closing = messages[last] if last >= 0 else {}
    final_turn = last if closing.get("role") == "assistant" and not closing.get("tool_calls") else None
    final_text = str(closing.get("content") or "") if final_turn is not None else ""
    return RunView(
        transcript=transcript, calls=tuple(calls), final_turn=final_turn, final_text=final_text,
        answer=parse_answer(final_text), questions=tuple(questions), keys=view_keys,
    )  # fmt: skip


# -- indicators --------------------------------------------------------------------------------


class Finding(BaseModel):
    """One piece of evidence: where in the run (step = call index, turn = message index) and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    step: int | None = None
    turn: int | None = None
    why: str


class AnalysisSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    low_reward: float = Field(
        default=0.3, description="an unsuccessful rollout at or below this reward is failed"
    )
    min_difference: float = Field(
        default=0.2, gt=0, le=1, description="failed rate - success rate to separate"
    )
    min_support: int = Field(default=2, ge=1, description="failed rollouts that must show the indicator")
    min_group: int = Field(default=2, ge=1, description="rollouts each group needs for a comparison")
    penalty_scale: float = Field(default=0.5, gt=0, description="penalty per unit of rate difference")
    max_penalty: float = Field(default=0.3, gt=0, description="cap on one indicator's penalty")
    repeat_limit: int = Field(default=3, ge=2, description="identical calls that count as a loop")


def tool_call_anomaly(view: RunView, settings: AnalysisSettings) -> list[Finding]:
    schemas = tool_schemas(view.transcript.tools)
    out: list[Finding] = []
    for c in view.calls:
        if not c.offered:
            out.append(
                Finding(step=c.index, turn=c.turn, why=f"{c.label}: unknown tool, not among the offered")
            )
        elif c.arguments is None:
            out.append(Finding(step=c.index, turn=c.turn, why=f"{c.label}: bad serialization: {c.problem}"))
        else:
            errors = schema_errors(c.arguments, schemas[c.tool])
            if errors:
                out.append(Finding(step=c.index, turn=c.turn, why=f"{c.label}: arguments fail the schema: "
                                   + "; ".join(errors[:2])))  # fmt: skip
    return out


def repeated_calls(view: RunView, settings: AnalysisSettings) -> list[Finding]:
    def key(c: Call) -> str:
        return canonical_json([c.tool, c.arguments if c.arguments is not None else c.problem])

    seen: dict[str, list[int]] = {}
    for c in view.calls:
        seen.setdefault(key(c), []).append(c.index)
    out = []
    for steps in seen.values():
        first = view.calls[steps[0]]
        if len(steps) >= settings.repeat_limit:
            out.append(Finding(step=steps[-1], turn=view.calls[steps[-1]].turn,
                               why=f"`{first.tool}` called {len(steps)} times with the same arguments "
                                   f"(steps {steps[:8]}; limit {settings.repeat_limit})"))  # fmt: skip
    if not out and view.transcript.stop_reason == "budget" and view.calls:
        steps = seen[key(view.calls[-1])]
        if len(steps) >= 2:
            out.append(Finding(step=steps[-1], turn=view.calls[-1].turn,
                               why=f"`{view.calls[-1].tool}` repeated unchanged (steps {steps[:8]}) "
                                   "until the turn budget ran out"))  # fmt: skip
    return out


def missing_details(task: Task) -> list[str]:
    """What the task holds back from its opening request: details the user gives only when asked."""
    out: list[str] = []
    if task.persona is not None:
        out += [f"withheld {k}" for k in sorted(task.persona.withheld)]
        out += [f"misleading {k}" for k in sorted(task.persona.misleading)]
    meta = task.metadata.get("interaction")
    if isinstance(meta, Mapping):
        out += [f"withheld {k}" for k in meta.get("withheld") or () if f"withheld {k}" not in out]
    out += [f"the request says {p!r}" for p in gaps_in(task.query)]
    return out


def no_clarification(view: RunView, settings: AnalysisSettings) -> list[Finding]:
    missing = missing_details(view.transcript.task)
    if not missing:
        return []
    writes = view.writes
    acted = writes[0].turn if writes else view.final_turn
    if acted is None or any(q < acted for q in view.questions):
        return []
    what = f"{writes[0].label} writes" if writes else "the final answer is given"
    return [Finding(step=writes[0].index if writes else None, turn=acted,
                    why=f"{what} before any question to the user; the task holds back: {', '.join(missing)}")]  # fmt: skip


def unchecked_write(view: RunView, settings: AnalysisSettings) -> list[Finding]:
    out = []
    reads = [c for c in view.calls if c.kind == "read" and c.offered and c.arguments is not None]
    for w in view.writes:
        if any(r.index < w.index and view.looked_at(r, w) for r in reads):
            continue
        on = ", ".join(view.targets(w)) or "/".join(sorted(name_nouns(w.tool)))
        out.append(
            Finding(step=w.index, turn=w.turn, why=f"{w.label} writes {on} with no earlier read of it")
        )
    return out


def answer_leaves(value: Any, path: str = "") -> Iterable[tuple[str, Any]]:
    """(path, value) of every scalar in an answer: `titles[0]`, `total.amount`."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from answer_leaves(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from answer_leaves(v, f"{path}[{i}]")
    else:
        yield path, value


def observations(view: RunView, before: int | None = None) -> Evidence:
    """Everything the tools returned (before message `before`): the only evidence an answer value has."""
    evidence = Evidence()
    for c in view.calls:
        if c.result_text and (before is None or c.turn < before):
            evidence.add_observation(c.result_text, f"the result of {c.label}")
    return evidence


def _prose(text: str) -> bool:
    """A sentence the agent wrote (a reason, a note: clauses, or many words), not a value it states."""
    words = text.split()
    return ";" in text or len(words) >= 8 or (len(words) >= 4 and text.endswith("."))


def unobserved_values(view: RunView) -> list[tuple[str, Any]]:
    """(answer path, value) of every answer value no tool result contained or derives."""
    evidence = observations(view)
    leaves = list(answer_leaves(view.answer))
    numbers = [float(v) for _, v in leaves if isinstance(v, (int, float)) and not isinstance(v, bool)]
    # the closing message's worked arithmetic ("68.88 + 84.57 = 153.45, 153.45 + 145.55 = 299") grounds
    # a total step by step, however many terms it sums
    unfounded = set(ungrounded_numbers([*numbers_in(view.final_text), *numbers], evidence))
    out: list[tuple[str, Any]] = []
    for path, value in leaves:
        if value is None or isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            if float(value) in unfounded:
                out.append((path, value))
            continue
        text = str(value).strip()
        if text.casefold() in _FLAG_WORDS:
            continue
        if len(text) <= MAX_CLAIM_CHARS and not _prose(text):
            if not evidence.supports(text):
                out.append((path, value))
            continue
        facts: list[Any] = [*ID_PATTERN.findall(text), *DATE_PATTERN.findall(text), *numbers_in(text)]
        if any(not evidence.supports(f) for f in facts):
            out.append((path, value))
    return out


def unsupported_answer(view: RunView, settings: AnalysisSettings) -> list[Finding]:
    return [
        Finding(turn=view.final_turn, why=f"answer.{path} = {value!r} appears in no tool result")
        for path, value in unobserved_values(view)
    ]


IndicatorFn = Callable[[RunView, AnalysisSettings], list[Finding]]


@dataclass(frozen=True)
class Indicator:
    name: str
    description: str
    detect: IndicatorFn


INDICATORS: dict[str, Indicator] = {
    i.name: i
    for i in (
        Indicator("tool_call_anomaly", "unknown tool, bad JSON or schema-invalid arguments", tool_call_anomaly),
        Indicator("repeated_calls", "identical calls repeated (a loop, or until the budget ran out)", repeated_calls),
        Indicator("no_clarification", "a detail was held back and the agent acted without asking", no_clarification),
        Indicator("unchecked_write", "a write on a record or table never read before", unchecked_write),
        Indicator("unsupported_answer", "an answer value that appears in no tool result", unsupported_answer),
    )
}  # fmt: skip


def indicators_of(
    transcript: Transcript, settings: AnalysisSettings | None = None, *, names: Iterable[str] | None = None
) -> dict[str, list[Finding]]:
    """Every indicator (or those in `names`) on one transcript: name -> its findings (empty: not shown)."""
    chosen = settings or AnalysisSettings()
    view = read_run(transcript)
    wanted = list(INDICATORS) if names is None else [n for n in INDICATORS if n in set(names)]
    return {n: INDICATORS[n].detect(view, chosen) for n in wanted}


# -- comparison and weights --------------------------------------------------------------------


class IndicatorDecision(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    indicator: str
    adopted: bool
    weight: float
    reason: str


class AuxiliaryWeights(BaseModel):
    """Penalties for the next RL run: indicator -> weight (negative) for the adopted ones, and the
    decision with its figures for every indicator."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    round: str = ""
    weights: dict[str, float] = Field(default_factory=dict)
    decisions: tuple[IndicatorDecision, ...] = ()
    repeat_limit: int = 3


class IndicatorStat(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    indicator: str
    description: str
    failed_hits: int
    failed_total: int
    success_hits: int
    success_total: int
    failed_rate: float | None
    success_rate: float | None
    difference: float | None
    separates: bool
    weight: float
    reason: str


class RolloutIndicators(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    rollout_id: str
    task_id: str
    group: Group
    reward: float | None
    hits: dict[str, tuple[Finding, ...]]


class AnalysisReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    round: str = ""
    settings: AnalysisSettings
    successful: int
    failed: int
    excluded: int
    indicators: tuple[IndicatorStat, ...]
    rollouts: tuple[RolloutIndicators, ...]
    weights: AuxiliaryWeights


def group_of(rollout: ScoredRollout, settings: AnalysisSettings) -> Group:
    if rollout.succeeded:
        return "successful"
    if rollout.reward is not None and rollout.reward <= settings.low_reward:
        return "failed"
    return "excluded"  # unscored, or partly right: neither side of the comparison


def _rate(hits: int, total: int) -> float | None:
    return hits / total if total else None


def _decide(fh: int, ft: int, sh: int, st: int, s: AnalysisSettings) -> tuple[bool, float, str]:
    figures = f"{fh}/{ft} failed vs {sh}/{st} successful"
    if ft < s.min_group or st < s.min_group:
        return False, 0.0, f"not adopted: too few rollouts to compare ({figures}; need {s.min_group} in each)"
    diff = fh / ft - sh / st
    figures = (
        f"{fh}/{ft} failed ({fh / ft:.0%}) vs {sh}/{st} successful ({sh / st:.0%}), difference {diff:+.2f}"
    )
    if diff < s.min_difference:
        return False, 0.0, f"not adopted: {figures} < {s.min_difference:.2f}"
    if fh < s.min_support:
        return (
            False,
            0.0,
            f"not adopted: {figures}, but only {fh} failed rollouts show it (< {s.min_support})",
        )
    weight = -round(min(s.max_penalty, s.penalty_scale * diff), 4)
    return (
        True,
        weight,
        (
            f"adopted: {figures} >= {s.min_difference:.2f} with {fh} failed rollouts >= {s.min_support}; "
            f"weight {weight:.3f} = -min({s.max_penalty:g}, {s.penalty_scale:g} x {diff:.2f})"
        ),
    )


def analyze_rollouts(
    rollouts: Iterable[ScoredRollout], settings: AnalysisSettings | None = None, *, round_key: str = ""
) -> AnalysisReport:
    """Indicators on every rollout of a round, their rates among failed and successful rollouts, and
    the auxiliary weights for the indicators that separate them."""
    s = settings or AnalysisSettings()
    per: list[RolloutIndicators] = []
    for r in rollouts:
        hits = indicators_of(r, s)
        per.append(RolloutIndicators(rollout_id=r.id, task_id=r.task.id, group=group_of(r, s), reward=r.reward,
                                     hits={n: tuple(f) for n, f in hits.items() if f}))  # fmt: skip
    counts = Counter(p.group for p in per)
    stats: list[IndicatorStat] = []
    for name, ind in INDICATORS.items():
        fh = sum(1 for p in per if p.group == "failed" and name in p.hits)
        sh = sum(1 for p in per if p.group == "successful" and name in p.hits)
        ft, st = counts["failed"], counts["successful"]
        adopted, weight, reason = _decide(fh, ft, sh, st, s)
        fr, sr = _rate(fh, ft), _rate(sh, st)
        stats.append(IndicatorStat(
            indicator=name, description=ind.description, failed_hits=fh, failed_total=ft, success_hits=sh,
            success_total=st, failed_rate=fr, success_rate=sr,
            difference=None if fr is None or sr is None else round(fr - sr, 4),
            separates=adopted, weight=weight, reason=reason,
        ))  # fmt: skip
    weights = AuxiliaryWeights(
        round=round_key,
        weights={x.indicator: x.weight for x in stats if x.separates},
        decisions=tuple(IndicatorDecision(indicator=x.indicator, adopted=x.separates, weight=x.weight,
                                          reason=x.reason) for x in stats),
        repeat_limit=s.repeat_limit,
    )  # fmt: skip
    return AnalysisReport(
        round=round_key, settings=s, successful=counts["successful"], failed=counts["failed"],
        excluded=counts["excluded"], indicators=tuple(stats), rollouts=tuple(per), weights=weights,
    )  # fmt: skip


def auxiliary_terms(transcript: Transcript, weights: AuxiliaryWeights) -> dict[str, float]:
    """The adopted penalties one transcript earns: indicator -> weight, for each adopted indicator it shows."""
    if not weights.weights:
        return {}
    unknown = sorted(set(weights.weights) - set(INDICATORS))
    if unknown:
        raise ValueError(
            f"auxiliary weights name unknown indicators {unknown}; known: {sorted(INDICATORS)}. "
            "Regenerate the weights with this version of agentomnia.rewards.analysis"
        )
    settings = AnalysisSettings(repeat_limit=weights.repeat_limit)
    hits = indicators_of(transcript, settings, names=weights.weights)
    return {name: weights.weights[name] for name, found in hits.items() if found}


def auxiliary_reward(transcript: Transcript, weights: AuxiliaryWeights) -> float:
    """The auxiliary reward of one transcript under the adopted weights: the sum of its penalties (<= 0)."""
    return round(sum(auxiliary_terms(transcript, weights).values()), 6)


def _pct(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.0%}"


def analysis_markdown(report: AnalysisReport) -> str:
    """The comparison as a Markdown table (for the Dagster UI), one row per indicator."""
    head = (
        f"**Rollout analysis{' ' + report.round if report.round else ''}**: {report.failed} failed "
        f"(reward <= {report.settings.low_reward:g}), {report.successful} successful, "
        f"{report.excluded} excluded\n\n"
    )
    rows = [
        "| indicator | failed | successful | difference | adopted | weight | reason |",
        "|---|---|---|---|---|---|---|",
    ]
    for x in report.indicators:
        diff = "–" if x.difference is None else f"{x.difference:+.2f}"
        reason = x.reason.replace("|", "/")
        rows.append(
            f"| `{x.indicator}` | {x.failed_hits}/{x.failed_total} ({_pct(x.failed_rate)}) "
            f"| {x.success_hits}/{x.success_total} ({_pct(x.success_rate)}) | {diff} "
            f"| {'yes' if x.separates else 'no'} | {x.weight:g} | {reason} |"
        )
    return head + "\n".join(rows) + "\n"
