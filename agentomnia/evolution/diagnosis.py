"""Failure diagnosis (paper §7): why each benchmark failure happened, and which capability gaps they share.

Two levels, each a protocol model. A `TaskDiagnosis` reconstructs one failed task's execution
(the steps taken against the steps the reference needed), names the root cause and maps it onto a
capability gap. A `CapabilityDiagnosis` groups related task diagnoses by (capability gap, primary
atom, dominant failure tag) and states the shared cause, the affected domains, how often it
happened and how much it matters. PRDs are written from the second level.

Offline, both levels come from deterministic rules over failure tags and coordinates (`TAG_RULES`).
With a model, the rules' report is the draft the model revises; each answer is validated against
the protocol and against the input, revised on error, and replaced by the rules' version (recorded
in `DiagnosisReport.fallbacks`) when it never becomes valid.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentomnia.envs.naming import article
from agentomnia.evolution.revise import DEFAULT_ATTEMPTS, ask_validated, attempts_summary
from agentomnia.llm import LLM
from agentomnia.omniabench.models import FAILURE_TAGS, EvalResult, Failure, Route
from agentomnia.records import Record
from agentomnia.tasks.families import is_challenging_kind
from agentomnia.tasks.models import Task
from agentomnia.taxonomy import ATOM_IDS, CAPABILITY_IDS, Coordinate, atom, capability, l1_key, taxonomy_index
from agentomnia.trajectories.messages import shown_name

Analyst = Literal["rules", "llm"]
NEAR_MISS_SCORE = 0.8  # a failure that earned at least this share of the rubric is one fix away
MAX_EXAMPLES = 3
# The least a failed benchmark item counts, however close it came to passing: a 0.95 item still
# points at something the agent cannot do yet.
MIN_ITEM_WEIGHT = 0.1


class TagRule(BaseModel):
    """How one failure tag maps onto a capability gap, and how bad it is."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    capabilities: tuple[str, ...]  # candidate gaps, preferred first; the coordinate's own capabilities win
    atom: str  # the difficulty atom the failure exposes
    severity: int = Field(ge=1, le=3)
    meaning: str  # a short noun phrase for titles
    cause: str  # the root cause, as a clause completing "The agent ..."
    check: str  # what a task must observe so that this failure cannot pass unnoticed
    env_variations: tuple[str, ...] = ()  # keys of ENV_VARIATIONS that probe this weakness
    task_variations: tuple[str, ...] = ()  # keys of TASK_VARIATIONS that probe it


# Severity: 3 where the failure leaves harm behind (unrequested writes, broken rules, invented
# values), 2 where the task is simply not done, 1 where the run was cut short by its budget.
TAG_RULES: dict[str, TagRule] = {
    "no_action": TagRule(
        capabilities=("task_understanding", "tool_use"),
        atom="ambiguous_goal",
        severity=2,
        meaning="no action taken",
        cause="did not turn the request into any tool call or usable answer",
        check="the rubric requires the requested change or answer, so doing nothing scores 0",
        task_variations=("implicit_references",),
    ),
    "wrong_tool": TagRule(
        capabilities=("tool_use",),
        atom="tool_parameter_grounding",
        severity=2,
        meaning="wrong tool chosen",
        cause="chose tools the task never needs instead of the ones it depends on",
        check="the rubric checks which tool made each change, not only the end state",
        env_variations=("distractor_injection",),
        task_variations=("implicit_references",),
    ),
    "misunderstood_tool": TagRule(
        capabilities=("tool_use",),
        atom="tool_parameter_grounding",
        severity=2,
        meaning="tool semantics misread",
        cause="called the right tool in a way its semantics refuse",
        check="tool results carry semantic refusals that the agent must read and act on",
        env_variations=("distractor_injection",),
        task_variations=("implicit_references",),
    ),
    "invalid_arguments": TagRule(
        capabilities=("tool_use",),
        atom="tool_parameter_grounding",
        severity=2,
        meaning="invalid tool arguments",
        cause="filled tool parameters with values the schema refuses",
        check="write tools validate ids, enum literals and formats and refuse anything else",
        env_variations=("distractor_injection",),
        task_variations=("implicit_references",),
    ),
    "wrong_order": TagRule(
        capabilities=("planning_decision",),
        atom="dynamic_planning",
        severity=2,
        meaning="dependent steps out of order",
        cause="ran a step before the step it depends on",
        check="environment rules refuse a step whose prerequisite has not happened yet",
        task_variations=("dependency_depth",),
    ),
    "missed_constraint": TagRule(
        capabilities=("reliability_safety", "state_management", "task_understanding"),
        atom="risk_clarification",
        severity=3,
        meaning="constraint broken",
        cause="broke a rule or constraint the task states or the domain enforces",
        check="the rubric has one item per stated or domain constraint",
        env_variations=("conflicting_states", "unavailable_entities"),
    ),
    "hallucinated_value": TagRule(
        capabilities=("information_gathering",),
        atom="long_context_evidence",
        severity=3,
        meaning="invented values",
        cause="used values it never observed instead of looking them up",
        check="every value the agent needs appears only in a tool result, and the rubric checks it",
        env_variations=("distractor_injection",),
        task_variations=("implicit_references",),
    ),
    "incomplete": TagRule(
        capabilities=("planning_decision", "state_management"),
        atom="dynamic_planning",
        severity=2,
        meaning="work left unfinished",
        cause="stopped before making every required change",
        check="the rubric checks every required change as its own item",
        task_variations=("dependency_depth",),
    ),
    "wrong_answer": TagRule(
        capabilities=("data_analysis", "information_gathering"),
        atom="structured_information",
        severity=2,
        meaning="wrong reported answer",
        cause="reported an answer that does not follow from the records",
        check="the expected answer is checked exactly, or to a stated tolerance",
        env_variations=("conflicting_states",),
        task_variations=("data_transformations",),
    ),
    "collateral_change": TagRule(
        capabilities=("state_management", "reliability_safety"),
        atom="risk_clarification",
        severity=3,
        meaning="collateral state changes",
        cause="changed records the task did not ask to change",
        check="the rubric checks the state diff for changes nobody asked for",
        env_variations=("distractor_injection",),
    ),
    "budget_exhausted": TagRule(
        capabilities=("planning_decision", "tool_use"),
        atom="dynamic_planning",
        severity=1,
        meaning="turn budget exhausted",
        cause="ran out of turns or of invalid-call allowance before finishing",
        check="the turn budget fits the reference plan with a small margin",
        task_variations=("dependency_depth",),
    ),
}
# A failure recorded without any tag is still a failure: it is treated as unfinished work.
UNTAGGED = "incomplete"


def _known_l1_keys() -> set[str]:
    return {l1_key(s, n) for s, n in taxonomy_index().l1s()}


def _check_tags(value: tuple[str, ...]) -> tuple[str, ...]:
    unknown = [t for t in value if t not in FAILURE_TAGS]
    if unknown:
        raise ValueError(f"unknown failure tags {unknown}; use ones of {', '.join(FAILURE_TAGS)}")
    return value


class CapabilityGap(BaseModel):
    """The capability a group of failures lacks, with the difficulty atoms it shows under."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    capability: str
    atoms: tuple[str, ...] = Field(min_length=1)

    @field_validator("capability")
    @classmethod
    def _capability(cls, value: str) -> str:
        if value not in CAPABILITY_IDS:
            raise ValueError(f"unknown capability {value!r}; use one of {', '.join(CAPABILITY_IDS)}")
        return value

    @field_validator("atoms")
    @classmethod
    def _atoms(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [a for a in value if a not in ATOM_IDS]
        if unknown:
            raise ValueError(f"unknown atoms {unknown}; use ids from {', '.join(ATOM_IDS)}")
        return tuple(dict.fromkeys(value))


class ExecutionSummary(BaseModel):
    """The failed run retold: what happened against what the task needed.

    `source` is "trajectory" when the run's steps were available, "evidence" when only the
    failure's evidence sentences were (then the step lists are empty and `notes` carries them).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: Literal["trajectory", "evidence"]
    steps_taken: tuple[str, ...] = ()
    steps_needed: tuple[str, ...] = ()
    missing_steps: tuple[str, ...] = ()  # tools the reference calls that the run never called
    extra_steps: tuple[str, ...] = ()  # tools the run called that the reference never needs
    diverged_at: int | None = None  # 1-based index of the first taken step that departs from the reference
    state_diff: tuple[str, ...] = ()  # "table[key].field: expected X, got Y"
    stop_reason: str | None = None
    notes: tuple[str, ...] = ()


class TaskDiagnosis(BaseModel):
    """Task-level analysis: one failed task (all its trials that failed the same way)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    failure_ids: tuple[str, ...] = Field(min_length=1)
    eval_id: str
    task_id: str
    policy: str
    route: Route
    task_kind: str
    coordinate: Coordinate
    execution: ExecutionSummary
    root_cause: str = Field(min_length=10)
    tags: tuple[str, ...] = Field(min_length=1)  # most decisive first; tags[0] is the dominant tag
    tag_counts: dict[str, int]  # tag -> how many of the failures carry it
    evidence: tuple[str, ...] = Field(min_length=1)
    gap: CapabilityGap
    severity: int = Field(ge=1, le=3)
    # This diagnosis's share of its benchmark item's failure weight (see `failure_weights`).
    failure_weight: float = Field(1.0, gt=0.0)
    analyst: Analyst = "rules"

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _check_tags(value)

    @model_validator(mode="after")
    def _counts(self) -> TaskDiagnosis:
        if set(self.tag_counts) != set(self.tags):
            raise ValueError(
                f"tag_counts must count exactly the tags {list(self.tags)}, got {list(self.tag_counts)}"
            )
        bad = {t: n for t, n in self.tag_counts.items() if not 1 <= n <= len(self.failure_ids)}
        if bad:
            raise ValueError(f"tag_counts {bad} must lie between 1 and the {len(self.failure_ids)} failures")
        return self

    @property
    def dominant_tag(self) -> str:
        return self.tags[0]


class CapabilityDiagnosis(BaseModel):
    """Capability-level analysis: related failures, their shared cause and the gap they point to."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    group_id: str  # "<capability>/<primary atom>/<dominant tag>"
    gap: CapabilityGap
    dominant_tag: str
    shared_cause: str = Field(min_length=10)
    failure_ids: tuple[str, ...] = Field(min_length=1)
    task_ids: tuple[str, ...] = Field(min_length=1)
    l1_domains: dict[str, int] = Field(min_length=1)  # L1 key -> failures, most first
    l2_domains: tuple[int, ...] = Field(min_length=1)  # taxonomy ids, most failures first
    tag_counts: dict[str, int] = Field(default_factory=dict)
    frequency: int = Field(ge=1)  # failures in the group
    severity: int = Field(ge=1, le=3)
    example_failure_ids: tuple[str, ...] = Field(min_length=1, max_length=MAX_EXAMPLES)
    analyst: Analyst = "rules"

    @field_validator("dominant_tag")
    @classmethod
    def _dominant(cls, value: str) -> str:
        return _check_tags((value,))[0]

    @field_validator("tag_counts")
    @classmethod
    def _tag_counts(cls, value: dict[str, int]) -> dict[str, int]:
        _check_tags(tuple(value))
        return value

    @field_validator("l1_domains")
    @classmethod
    def _l1(cls, value: dict[str, int]) -> dict[str, int]:
        unknown = sorted(set(value) - _known_l1_keys())
        if unknown:
            raise ValueError(f"unknown L1 domains {unknown}; write them as 'split/Name', e.g. 'toc/Finance'")
        return value

    @field_validator("l2_domains")
    @classmethod
    def _l2(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        tax = taxonomy_index()
        unknown = [i for i in value if i not in tax]
        if unknown:
            raise ValueError(f"unknown taxonomy ids {unknown}; see `agentomnia taxonomy show`")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> CapabilityDiagnosis:
        if self.frequency != len(self.failure_ids):
            raise ValueError(
                f"frequency {self.frequency} differs from the {len(self.failure_ids)} failure ids listed; "
                "frequency counts the group's failures"
            )
        stray = [f for f in self.example_failure_ids if f not in self.failure_ids]
        if stray:
            raise ValueError(f"example failures {stray} are not among the group's failure_ids")
        return self

    @property
    def weight(self) -> int:
        """Failure frequency x severity: the raw priority of the gap."""
        return self.frequency * self.severity


class CapabilityDiagnoses(BaseModel):
    """The capability level as one answer (the shape a model is asked for)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    groups: tuple[CapabilityDiagnosis, ...] = Field(min_length=1)


class DiagnosisReport(Record):
    """Both levels of one diagnosis run over the failures of one or more evaluations."""

    record_kind: ClassVar[str] = "diagnosis_report"

    eval_ids: tuple[str, ...]
    failure_count: int
    task_diagnoses: tuple[TaskDiagnosis, ...]
    capability_diagnoses: tuple[CapabilityDiagnosis, ...]  # highest frequency x severity first
    analyst: Analyst = "rules"
    fallbacks: tuple[str, ...] = ()  # model answers replaced by the rules' ones, and why

    def task_diagnosis(self, failure_id: str) -> TaskDiagnosis | None:
        return next((t for t in self.task_diagnoses if failure_id in t.failure_ids), None)


# -- rules ------------------------------------------------------------------------------------------


def _tags_of(failure: Failure) -> tuple[str, ...]:
    known = tuple(dict.fromkeys(t for t in failure.tags if t in TAG_RULES))
    return known or (UNTAGGED,)


def gap_for(tag: str, coordinate: Coordinate) -> CapabilityGap:
    """The capability gap a tag points to on this coordinate.

    Among the tag's candidate capabilities, the first one the task itself exercises wins (a missed
    constraint on a state-management task is a state-management gap); when the task lists none of
    them, the tag's first candidate. Atoms: the task's primary atom, then the tag's own atom.
    """
    rule = TAG_RULES[tag]
    chosen = next((c for c in rule.capabilities if c in coordinate.capabilities), rule.capabilities[0])
    return CapabilityGap(capability=chosen, atoms=(coordinate.primary_difficulty, rule.atom))


def failure_severity(failure: Failure, *, challenging: bool = False) -> int:
    """1-3: the worst tag's severity, one less for a near miss and one less on a challenging task.

    A challenging task is expected to be failed sometimes, and a near miss (score >= 0.8) is one
    rubric item from passing, so both say less about a missing capability than a plain failure.
    """
    severity = max(TAG_RULES[t].severity for t in _tags_of(failure))
    if failure.score is not None and failure.score >= NEAR_MISS_SCORE:
        severity -= 1
    if challenging or is_challenging_kind(failure.task_kind):
        severity -= 1
    return max(1, min(3, severity))


def item_weight(scores: Iterable[float | None]) -> float:
    """How much one failed benchmark item counts: 1 - its best score over its failed trials.

    An item that scored 0 everywhere counts 1; one that came within a rubric item of passing counts
    little, but never less than `MIN_ITEM_WEIGHT`. A missing score counts as 0.
    """
    best = max((s or 0.0 for s in scores), default=0.0)
    return max(MIN_ITEM_WEIGHT, 1.0 - best)


def failure_weights(failures: Iterable[Failure]) -> dict[str, float]:
    """Failure id -> its share of its benchmark item's weight.

    An item (a task id) counts once however many trials, policies or evaluations failed it, with the
    `item_weight` of its failures; that weight is split evenly over its failures, so summing the
    weights of any grouping of failures (a gap group, an L1 domain) counts each item at most once.
    This, not the number of failed trials, is what PRD failure counts and the alignment metric's
    failure distribution are built from: a flaky item run three times is not three gaps.
    """
    by_item: dict[str, list[Failure]] = {}
    for f in failures:
        by_item.setdefault(f.task_id, []).append(f)
    out: dict[str, float] = {}
    for members in by_item.values():
        share = item_weight(f.score for f in members) / len(members)
        out |= {f.id: share for f in members}
    return out


def _round_half_up(value: float) -> int:
    return int(value + 0.5)


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def reconstruct(
    failures: Sequence[Failure], result: EvalResult | None, task: Task | None
) -> ExecutionSummary:
    """The execution of a failed run set against the reference, from whatever was kept."""
    evidence = tuple(dict.fromkeys(e for f in failures for e in f.evidence))
    reference_steps = tuple(f"{c.tool}({_short(c.args)})" for c in task.reference_calls) if task else ()
    if result is None:
        return ExecutionSummary(source="evidence", steps_needed=reference_steps, notes=evidence)
    taken = tuple(
        f"{s.index + 1}. {shown_name(s.tool)}({_short(s.arguments)}) -> "
        + ("ok" if s.ok else "invalid call" if not s.valid else f"error {s.error_code or 'unknown'}")
        for s in result.steps
    )
    called = [s.tool for s in result.steps]
    reference = [c.tool for c in task.reference_calls] if task is not None else []
    needed = reference_steps or tuple(
        f"set {d.table}[{d.key}].{d.field} to {_short(d.expected)}" for d in result.state_diff
    )
    failed_items = [k for k, v in result.components.items() if v is False]
    if failed_items:
        needed += tuple(f"satisfy rubric item {k}" for k in failed_items)
    missing = tuple(dict.fromkeys(t for t in reference if t not in called))
    extra = tuple(dict.fromkeys(shown_name(t) for t in called if reference and t not in reference))
    diverged = None
    if reference:
        diverged = next(
            (i + 1 for i, tool in enumerate(called) if i >= len(reference) or tool != reference[i]), None
        )
    diff = tuple(
        f"{d.table}[{d.key}].{d.field}: expected {_short(d.expected)}, got {_short(d.actual)}"
        for d in result.state_diff
    )
    return ExecutionSummary(
        source="trajectory",
        steps_taken=taken,
        steps_needed=needed,
        missing_steps=missing,
        extra_steps=extra,
        diverged_at=diverged,
        state_diff=diff,
        stop_reason=result.stop_reason,
        notes=evidence,
    )


def _root_cause(tag: str, execution: ExecutionSummary, evidence: Sequence[str]) -> str:
    parts = [f"The agent {TAG_RULES[tag].cause}."]
    if execution.missing_steps:
        parts.append(f"It never called {', '.join(execution.missing_steps)}.")
    if execution.extra_steps:
        parts.append(f"It called {', '.join(execution.extra_steps)}, which the reference does not need.")
    if execution.state_diff:
        parts.append(f"End state: {execution.state_diff[0]}.")
    if evidence:
        parts.append(f'Evidence: "{evidence[0]}"')
    return " ".join(parts)


def task_diagnoses_by_rules(
    failures: Iterable[Failure],
    *,
    results: Mapping[str, EvalResult] | None = None,
    tasks: Mapping[str, Task] | None = None,
    challenging: Collection[str] = (),
) -> list[TaskDiagnosis]:
    """One diagnosis per (evaluation, task, policy, dominant tag): trials failing the same way merge."""
    failures = list(failures)
    weights = failure_weights(failures)
    groups: dict[tuple[str, str, str, str], list[Failure]] = {}
    for f in failures:
        groups.setdefault((f.eval_id, f.task_id, f.policy, _tags_of(f)[0]), []).append(f)
    out = []
    for (_, task_id, _, dominant), members in groups.items():
        members.sort(key=lambda f: (f.trial, f.id))
        first = members[0]
        result = (results or {}).get(first.result_id)
        execution = reconstruct(members, result, (tasks or {}).get(task_id))
        tag_counts = Counter(t for f in members for t in _tags_of(f))
        tags = (
            dominant,
            *sorted((t for t in tag_counts if t != dominant), key=lambda t: (-tag_counts[t], t)),
        )
        evidence = tuple(dict.fromkeys(e for f in members for e in f.evidence)) or (
            f"failure {first.id} was recorded without evidence (score {first.score})",
        )
        severity = max(failure_severity(f, challenging=task_id in challenging) for f in members)
        out.append(
            TaskDiagnosis(
                failure_ids=tuple(f.id for f in members),
                eval_id=first.eval_id,
                task_id=task_id,
                policy=first.policy,
                route=first.route,
                task_kind=first.task_kind,
                coordinate=first.coordinate,
                execution=execution,
                root_cause=_root_cause(dominant, execution, evidence),
                tags=tags,
                tag_counts={t: tag_counts[t] for t in tags},
                evidence=evidence,
                gap=gap_for(dominant, first.coordinate),
                severity=severity,
                failure_weight=sum(weights[f.id] for f in members),
            )
        )
    return out


def _shared_cause(tag: str, gap: CapabilityGap, members: Sequence[TaskDiagnosis], frequency: int) -> str:
    l1s = Counter(m.coordinate.l1_key for m in members)
    where = ", ".join(k for k, _ in l1s.most_common(3))
    missing = Counter(s for m in members for s in m.execution.missing_steps)
    text = (
        f"In {frequency} failure(s) over {len(members)} task(s) ({where}), the agent {TAG_RULES[tag].cause}: "
        f"{article(capability(gap.capability).name)} gap under {atom(gap.atoms[0]).name}."
    )
    if missing:
        text += f" Most often never called: {', '.join(t for t, _ in missing.most_common(3))}."
    return text


def capability_diagnoses_by_rules(tasks: Sequence[TaskDiagnosis]) -> list[CapabilityDiagnosis]:
    """Group task diagnoses by (capability gap, primary atom, dominant tag); heaviest groups first."""
    groups: dict[tuple[str, str, str], list[TaskDiagnosis]] = {}
    for t in tasks:
        groups.setdefault((t.gap.capability, t.coordinate.primary_difficulty, t.dominant_tag), []).append(t)
    out = []
    for (cap, primary, tag), members in groups.items():
        failure_ids = tuple(f for m in members for f in m.failure_ids)
        per_failure = [(m, f) for m in members for f in m.failure_ids]
        l1 = Counter(m.coordinate.l1_key for m, _ in per_failure)
        l2 = Counter(m.coordinate.taxonomy_id for m, _ in per_failure)
        tag_counts: Counter[str] = Counter()
        for m in members:
            tag_counts.update(m.tag_counts)
        atoms = (primary, *(a for m in members for a in m.gap.atoms))
        gap = CapabilityGap(capability=cap, atoms=atoms)
        severity = _round_half_up(sum(m.severity for m, _ in per_failure) / len(per_failure))
        # Examples: the most severe task diagnoses first, one failure from each, so they differ.
        examples = sorted(members, key=lambda m: (-m.severity, m.task_id))[:MAX_EXAMPLES]
        out.append(
            CapabilityDiagnosis(
                group_id=f"{cap}/{primary}/{tag}",
                gap=gap,
                dominant_tag=tag,
                shared_cause=_shared_cause(tag, gap, members, len(failure_ids)),
                failure_ids=failure_ids,
                task_ids=tuple(dict.fromkeys(m.task_id for m in members)),
                l1_domains=dict(sorted(l1.items(), key=lambda kv: (-kv[1], kv[0]))),
                l2_domains=tuple(k for k, _ in sorted(l2.items(), key=lambda kv: (-kv[1], kv[0]))),
                tag_counts=dict(sorted(tag_counts.items(), key=lambda kv: (-kv[1], kv[0]))),
                frequency=len(failure_ids),
                severity=severity,
                example_failure_ids=tuple(m.failure_ids[0] for m in examples),
            )
        )
    out.sort(key=lambda g: (-g.weight, g.group_id))
    return out


# -- model-written diagnoses ------------------------------------------------------------------------

_TASK_PROMPT = """You diagnose why a tool-using agent failed a benchmark task.
Below are the failure records and a draft diagnosis written by rules. Reconstruct the execution
(steps taken against steps needed), state the root cause precisely, keep the failure tags from
{tags}, most decisive first, quote evidence, and name the capability gap (capability ids: {caps};
atom ids: {atoms}) and a severity from 1 (minor) to 3 (leaves harm behind).
Keep failure_ids, eval_id, task_id, policy, route, task_kind, coordinate and failure_weight exactly as in
the draft.

Failures:
{failures}

Draft diagnosis:
{draft}
"""

_CAPABILITY_PROMPT = """You group task-level failure diagnoses of a tool-using agent into capability gaps.
Group related failures that share a cause; for each group give the shared cause, the capability gap
(capability ids: {caps}; atom ids: {atoms}), the affected L1 domains ('split/Name' -> failures) and L2
taxonomy ids, the tag counts, frequency (= number of failure ids), severity 1-3 and up to {examples}
example failure ids. Every failure id below must appear in at least one group; use no other ids.

Task diagnoses:
{tasks}

Draft grouping by rules:
{draft}
"""


def _task_check(draft: TaskDiagnosis) -> Any:
    fixed = (
        "failure_ids",
        "eval_id",
        "task_id",
        "policy",
        "route",
        "task_kind",
        "coordinate",
        "failure_weight",
    )

    def check(value: TaskDiagnosis) -> list[str]:
        return [
            f"{name} must stay {getattr(draft, name)!r} as in the draft, got {getattr(value, name)!r}"
            for name in fixed
            if getattr(value, name) != getattr(draft, name)
        ]

    return check


def _capability_check(known: Sequence[TaskDiagnosis]) -> Any:
    known_ids = {f for t in known for f in t.failure_ids}

    def check(value: CapabilityDiagnoses) -> list[str]:
        used = {f for g in value.groups for f in g.failure_ids}
        problems = []
        unknown = sorted(used - known_ids)
        if unknown:
            problems.append(f"failure ids {unknown[:5]} are not in the input; use only the listed ids")
        uncovered = sorted(known_ids - used)
        if uncovered:
            problems.append(f"failure ids {uncovered[:5]} are in no group; put every failure in a group")
        ids = [g.group_id for g in value.groups]
        if len(set(ids)) != len(ids):
            problems.append("group_id values repeat; give each group its own id")
        return problems

    return check


def _llm_task_diagnoses(
    llm: LLM, drafts: Sequence[TaskDiagnosis], failures: Mapping[str, Failure], max_attempts: int
) -> tuple[list[TaskDiagnosis], list[str]]:
    out: list[TaskDiagnosis] = []
    fallbacks: list[str] = []
    for draft in drafts:
        records = [failures[f].model_dump(mode="json", exclude={"coordinate"}) for f in draft.failure_ids]
        prompt = _TASK_PROMPT.format(
            tags=", ".join(FAILURE_TAGS),
            caps=", ".join(CAPABILITY_IDS),
            atoms=", ".join(ATOM_IDS),
            failures=json.dumps(records, indent=1, ensure_ascii=False),
            draft=draft.model_dump_json(indent=1),
        )
        value, attempts = ask_validated(
            llm,
            [{"role": "user", "content": prompt}],
            TaskDiagnosis,
            schema_name="task_diagnosis",
            check=_task_check(draft),
            max_attempts=max_attempts,
        )
        if value is None:
            fallbacks.append(attempts_summary(f"task diagnosis of {draft.task_id}", attempts))
            out.append(draft)
        else:
            out.append(value.model_copy(update={"analyst": "llm"}))
    return out, fallbacks


def _llm_capability_diagnoses(
    llm: LLM, tasks: Sequence[TaskDiagnosis], draft: Sequence[CapabilityDiagnosis], max_attempts: int
) -> tuple[list[CapabilityDiagnosis] | None, list[str]]:
    summary = [
        {
            "failure_ids": t.failure_ids,
            "task_id": t.task_id,
            "l1": t.coordinate.l1_key,
            "taxonomy_id": t.coordinate.taxonomy_id,
            "tags": t.tags,
            "gap": t.gap.model_dump(),
            "severity": t.severity,
            "root_cause": t.root_cause,
        }
        for t in tasks
    ]
    prompt = _CAPABILITY_PROMPT.format(
        caps=", ".join(CAPABILITY_IDS),
        atoms=", ".join(ATOM_IDS),
        examples=MAX_EXAMPLES,
        tasks=json.dumps(summary, indent=1, ensure_ascii=False),
        draft=CapabilityDiagnoses(groups=tuple(draft)).model_dump_json(indent=1),
    )
    value, attempts = ask_validated(
        llm,
        [{"role": "user", "content": prompt}],
        CapabilityDiagnoses,
        schema_name="capability_diagnoses",
        check=_capability_check(tasks),
        max_attempts=max_attempts,
    )
    if value is None:
        return None, [attempts_summary("capability diagnosis", attempts)]
    groups = [g.model_copy(update={"analyst": "llm"}) for g in value.groups]
    groups.sort(key=lambda g: (-g.weight, g.group_id))
    return groups, []


def diagnose(
    failures: Iterable[Failure],
    *,
    round_key: str = "r0",
    results: Mapping[str, EvalResult] | None = None,
    tasks: Mapping[str, Task] | None = None,
    challenging: Collection[str] = (),
    llm: LLM | None = None,
    max_attempts: int = DEFAULT_ATTEMPTS,
) -> DiagnosisReport:
    """Diagnose failures at the task and capability levels.

    `results` (by result id) and `tasks` (by task id) are optional: with them the execution is
    reconstructed step by step against the reference, without them from the failures' evidence.
    `challenging` names the task ids of the benchmark's challenging subset (they weigh less).
    With `llm`, each level is model-written and validated, falling back to the rules per item.
    """
    failures = list(failures)
    drafts = task_diagnoses_by_rules(failures, results=results, tasks=tasks, challenging=challenging)
    groups = capability_diagnoses_by_rules(drafts)
    fallbacks: list[str] = []
    task_level: list[TaskDiagnosis] = drafts
    if llm is not None and drafts:
        by_id = {f.id: f for f in failures}
        task_level, task_fallbacks = _llm_task_diagnoses(llm, drafts, by_id, max_attempts)
        fallbacks += task_fallbacks
        written, cap_fallbacks = _llm_capability_diagnoses(
            llm, task_level, capability_diagnoses_by_rules(task_level), max_attempts
        )
        fallbacks += cap_fallbacks
        groups = written if written is not None else capability_diagnoses_by_rules(task_level)
    return DiagnosisReport(
        round=round_key,
        eval_ids=tuple(sorted({f.eval_id for f in failures})),
        failure_count=len(failures),
        task_diagnoses=tuple(task_level),
        capability_diagnoses=tuple(groups),
        analyst="llm" if llm is not None else "rules",
        fallbacks=tuple(fallbacks),
    )
