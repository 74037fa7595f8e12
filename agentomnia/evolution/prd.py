"""Product Requirement Documents: what the next synthesis round must produce, and why (paper Table 8).

A PRD has a mandatory Part I (id, priority, status, scenario, requirements, case study) and an
optional Part II (failure analysis, failure vs correct trajectory, environment and task synthesis
guidance, extra information), written for people, plus machine fields (target domains,
capabilities, atoms, variations, provenance) that `planning` turns into synthesis directives.

`generate_prds` writes one PRD per capability-gap group of a diagnosis report, heaviest first.
Priority is failure frequency x severity: score = (group failures / all failures) x severity (1-3),
bucketed as P0 >= 0.6, P1 >= 0.3, P2 >= 0.1, P3 below. Using the share rather than the raw count
keeps the buckets meaningful for a 20-failure smoke run and a 20,000-failure benchmark alike; a
gap behind a fifth of all failures at the top severity, or 30% at severity 2, is P0.

PRDs travel as Markdown (YAML front matter for the machine fields, one heading per section) or as
plain YAML; `render_markdown` and `parse_prd` are inverses. `parse_prd` is also the validator for
files people write: it raises `PRDFormatError` listing every problem with its fix.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentomnia.directives import ENV_VARIATIONS, TASK_VARIATIONS
from agentomnia.evolution.diagnosis import TAG_RULES, CapabilityDiagnosis, DiagnosisReport, TaskDiagnosis
from agentomnia.evolution.revise import DEFAULT_ATTEMPTS, ask_validated, attempts_summary
from agentomnia.llm import LLM
from agentomnia.records import Record
from agentomnia.taxonomy import (
    ATOM_IDS,
    CAPABILITY_IDS,
    atom,
    atoms,
    capabilities,
    capability,
    l1_key,
    taxonomy_index,
)

Priority = Literal["P0", "P1", "P2", "P3"]
Status = Literal["proposed", "active", "done", "rejected"]
PRIORITIES: tuple[str, ...] = ("P0", "P1", "P2", "P3")
STATUSES: tuple[str, ...] = ("proposed", "active", "done", "rejected")
# Lower bounds of share-of-failures x severity for P0, P1, P2; anything below is P3.
PRIORITY_THRESHOLDS: tuple[tuple[str, float], ...] = (("P0", 0.6), ("P1", 0.3), ("P2", 0.1))
DEFAULT_MAX_PRDS = 8
_PRD_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

PART_I: tuple[str, ...] = ("prd_id", "priority", "status", "scenario", "requirements", "case_study")
PART_II: tuple[str, ...] = (
    "failure_analysis",
    "trajectory_comparison",
    "environment_guidance",
    "task_guidance",
    "extra_information",
)
# Markdown section headings, in rendering order, and the field each one holds.
SECTIONS: dict[str, str] = {
    "Scenario": "scenario",
    "Requirements": "requirements",
    "Case Study": "case_study",
    "Failure Analysis": "failure_analysis",
    "Failure vs Correct Trajectory": "trajectory_comparison",
    "Environment Synthesis Guidance": "environment_guidance",
    "Task Synthesis Guidance": "task_guidance",
    "Extra Information": "extra_information",
}
# Part I scalars usually sit in the front matter, but a heading of the same name is accepted too.
_SCALAR_SECTIONS = {"PRD ID": "prd_id", "Priority": "priority", "Status": "status", "Title": "title"}
MACHINE_FIELDS: tuple[str, ...] = (
    "target_l1",
    "target_l2",
    "capabilities",
    "atoms",
    "env_variations",
    "task_variations",
    "source_failure_ids",
    "failure_counts",
    "priority_score",
    "diagnosis_id",
)


def _known_l1() -> dict[str, str]:
    """Lower-cased L1 key -> canonical L1 key."""
    return {l1_key(s, n).casefold(): l1_key(s, n) for s, n in taxonomy_index().l1s()}


def _unknown(kind: str, values: Sequence[str], known: Sequence[str]) -> str:
    hints = []
    for v in values:
        close = difflib.get_close_matches(str(v), list(known), n=1, cutoff=0.6)
        hints.append(f"{v!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return f"unknown {kind} {', '.join(hints)}; use one of {', '.join(known)}"


class PRD(Record):
    """One PRD: Part I (mandatory), Part II (optional) and the fields synthesis reads."""

    record_kind: ClassVar[str] = "prd"
    # Where a PRD came from is provenance: the same document read from two files is one PRD.
    unhashed: ClassVar[frozenset[str]] = frozenset({"source"})

    # Part I
    prd_id: str
    priority: Priority
    status: Status
    scenario: str = Field(min_length=1)
    requirements: tuple[str, ...] = Field(min_length=1)
    case_study: str = Field(min_length=1)
    title: str = ""
    # Part II
    failure_analysis: str | None = None
    trajectory_comparison: str | None = None  # the failed trajectory against a correct one
    environment_guidance: str | None = None
    task_guidance: str | None = None
    extra_information: str | None = None
    # Machine fields
    target_l1: tuple[str, ...] = ()  # L1 keys, e.g. "toc/Finance"
    target_l2: tuple[int, ...] = ()  # taxonomy ids
    capabilities: tuple[str, ...] = ()
    atoms: tuple[str, ...] = ()
    env_variations: tuple[str, ...] = ()  # keys of ENV_VARIATIONS
    task_variations: tuple[str, ...] = ()  # keys of TASK_VARIATIONS
    source: str = "diagnosis"  # "diagnosis" or "external:<file>"
    source_failure_ids: tuple[str, ...] = ()
    # L1 key -> failed benchmark items behind this PRD, each weighted by how far it is from passing
    # (`agentomnia.evolution.diagnosis.failure_weights`); people may give plain counts.
    failure_counts: dict[str, float] = Field(default_factory=dict)
    priority_score: float | None = None  # share of failures x severity, for generated PRDs
    diagnosis_id: str | None = None

    @field_validator("prd_id")
    @classmethod
    def _prd_id(cls, value: str) -> str:
        if not _PRD_ID.match(value):
            raise ValueError(
                f"prd_id {value!r} must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
            )
        return value

    @field_validator("scenario", "case_study", "title", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value

    @field_validator(*PART_II, mode="before")
    @classmethod
    def _optional_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip()
            return value or None
        return value

    @field_validator("requirements")
    @classmethod
    def _requirements(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        items = tuple(r.strip() for r in value)
        if not all(items):
            raise ValueError("requirements must not contain empty items")
        return items

    @field_validator("target_l1")
    @classmethod
    def _target_l1(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        known = _known_l1()
        bad = [v for v in value if v not in known.values()]
        if bad:
            raise ValueError(
                f"unknown L1 domains {bad}; write 'split/Name' as in `agentomnia taxonomy show`, e.g. 'toc/Finance'"
            )
        return tuple(dict.fromkeys(value))

    @field_validator("target_l2")
    @classmethod
    def _target_l2(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        tax = taxonomy_index()
        bad = [v for v in value if v not in tax]
        if bad:
            raise ValueError(f"unknown L2 taxonomy ids {bad}; see `agentomnia taxonomy show` for the ids")
        return tuple(dict.fromkeys(value))

    @field_validator("capabilities")
    @classmethod
    def _capabilities(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [v for v in value if v not in CAPABILITY_IDS]
        if bad:
            raise ValueError(_unknown("capabilities", bad, CAPABILITY_IDS))
        return tuple(dict.fromkeys(value))

    @field_validator("atoms")
    @classmethod
    def _atoms(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [v for v in value if v not in ATOM_IDS]
        if bad:
            raise ValueError(_unknown("atoms", bad, ATOM_IDS))
        return tuple(dict.fromkeys(value))

    @field_validator("env_variations")
    @classmethod
    def _env_variations(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [v for v in value if v not in ENV_VARIATIONS]
        if bad:
            raise ValueError(_unknown("environment variations", bad, tuple(ENV_VARIATIONS)))
        return tuple(dict.fromkeys(value))

    @field_validator("task_variations")
    @classmethod
    def _task_variations(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [v for v in value if v not in TASK_VARIATIONS]
        if bad:
            raise ValueError(_unknown("task variations", bad, tuple(TASK_VARIATIONS)))
        return tuple(dict.fromkeys(value))

    @field_validator("source")
    @classmethod
    def _source(cls, value: str) -> str:
        if value != "diagnosis" and not (value.startswith("external:") and len(value) > len("external:")):
            raise ValueError(f"source {value!r} must be 'diagnosis' or 'external:<file>'")
        return value

    @model_validator(mode="after")
    def _domains_agree(self) -> PRD:
        tax = taxonomy_index()
        outside = [i for i in self.target_l2 if tax.by_id(i).l1_key not in self.target_l1]
        if outside:
            raise ValueError(
                f"target_l2 {outside} lie under L1 domains missing from target_l1; "
                f"add {sorted({tax.by_id(i).l1_key for i in outside})} to target_l1"
            )
        unknown_counts = sorted(set(self.failure_counts) - set(self.target_l1))
        if unknown_counts:
            raise ValueError(f"failure_counts names L1 domains {unknown_counts} that are not in target_l1")
        return self


def priority_for(score: float) -> Priority:
    """The bucket of a share-of-failures x severity score (see the module docstring)."""
    for name, bound in PRIORITY_THRESHOLDS:
        if score >= bound:
            return name  # type: ignore[return-value]
    return "P3"


# -- generation from a diagnosis ---------------------------------------------------------------


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text else text


def _clause(sentence: str) -> str:
    return _lower_first(sentence.strip().rstrip("."))


def _domain_names(ids: Sequence[int], limit: int = 4) -> str:
    tax = taxonomy_index()
    names = [f"{tax.by_id(i).l2} ({tax.by_id(i).l1_key})" for i in ids[:limit]]
    more = len(ids) - limit
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def _variations(group: CapabilityDiagnosis) -> tuple[tuple[str, ...], tuple[str, ...]]:
    env: dict[str, None] = {}
    task: dict[str, None] = {}
    for tag in group.tag_counts or {group.dominant_tag: 1}:
        env.update(dict.fromkeys(TAG_RULES[tag].env_variations))
        task.update(dict.fromkeys(TAG_RULES[tag].task_variations))
    return tuple(env), tuple(task)


def _case_study(examples: Sequence[TaskDiagnosis]) -> str:
    paragraphs = []
    for t in examples:
        head = (
            f"Task {t.task_id} ({t.coordinate.l2}, {t.coordinate.l1_key}; route {t.route}, {t.task_kind}; "
            f"policy {t.policy}; failures {', '.join(t.failure_ids)}): tagged {', '.join(t.tags)}."
        )
        quotes = "; ".join(f'"{e}"' for e in t.evidence[:3])
        cause = t.root_cause.split(' Evidence: "')[0]  # the evidence is quoted in full just before
        paragraphs.append(f"{head} Evidence: {quotes}. Diagnosis: {cause}")
    return "\n\n".join(paragraphs)


def _trajectory_comparison(examples: Sequence[TaskDiagnosis]) -> str | None:
    for t in examples:
        ex = t.execution
        if ex.source == "trajectory" and (ex.steps_taken or ex.steps_needed):
            lines = [f"Task {t.task_id}, failed run (stopped: {ex.stop_reason}):"]
            lines += [f"  {s}" for s in ex.steps_taken] or ["  (no tool calls)"]
            lines.append("Correct run needs:")
            lines += [f"  {s}" for s in ex.steps_needed] or ["  (see the rubric)"]
            if ex.diverged_at is not None:
                lines.append(f"The failed run departs from the reference at step {ex.diverged_at}.")
            if ex.missing_steps:
                lines.append(f"Never called: {', '.join(ex.missing_steps)}.")
            if ex.state_diff:
                lines.append("End-state differences: " + "; ".join(ex.state_diff[:5]) + ".")
            return "\n".join(lines)
    for t in examples:
        if t.execution.steps_needed:
            return f"Task {t.task_id}: the correct run calls " + ", ".join(t.execution.steps_needed) + "."
    return None


def _levers(atom_ids: Sequence[str], acts_on: set[str], limit: int) -> list[str]:
    out = []
    for atom_id in atom_ids:
        out += [f"{lv.text} [{atom_id}/{lv.id}]" for lv in atom(atom_id).levers if lv.acts_on in acts_on]
    return out[:limit]


def weighted_failures(group: CapabilityDiagnosis, report: DiagnosisReport) -> dict[str, float]:
    """L1 key -> the weighted failed benchmark items of `group`, heaviest first.

    Each task diagnosis contributes its `failure_weight` in proportion to how many of its failures
    the group holds, so an item counts once across all PRDs (not once per failed trial) and a near
    miss counts less than a task the agent never got anywhere on.
    """
    held = set(group.failure_ids)
    totals: dict[str, float] = {}
    for task in report.task_diagnoses:
        share = len(held.intersection(task.failure_ids)) / len(task.failure_ids)
        if share:
            key = task.coordinate.l1_key
            totals[key] = totals.get(key, 0.0) + task.failure_weight * share
    return {k: round(v, 4) for k, v in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))}


def compose_prd(
    group: CapabilityDiagnosis,
    report: DiagnosisReport,
    *,
    prd_id: str,
    status: Status = "active",
    round_key: str | None = None,
) -> PRD:
    """The offline PRD for one capability-gap group; every sentence is drawn from the diagnosis."""
    rule = TAG_RULES[group.dominant_tag]
    cap = capability(group.gap.capability)
    primary = atom(group.gap.atoms[0])
    members = [t for t in report.task_diagnoses if set(t.failure_ids) & set(group.failure_ids)]
    examples = [t for f in group.example_failure_ids if (t := report.task_diagnosis(f)) is not None]
    share = group.frequency / max(1, report.failure_count)
    score = round(share * group.severity, 4)
    env_vars, task_vars = _variations(group)
    counts = weighted_failures(group, report)
    domains = _domain_names(group.l2_domains)
    routes = Counter(m.route for m in members)
    route_text = ", ".join(f"{r} x{n}" for r, n in routes.most_common())

    scenario = (
        f"Agents fail {group.frequency} benchmark run(s) on {len(group.task_ids)} task(s) (routes: {route_text}) "
        f"in {domains}: the agent {rule.cause}. These tasks test {_lower_first(cap.evaluates)}"
    )
    requirements = [
        f"Synthesize environments and tasks in {domains} where {_clause(cap.signals[0])}.",
        *(f"Vary the initial state by {k.replace('_', ' ')}: {ENV_VARIATIONS[k]}." for k in env_vars),
        *(f"Vary the requests by {k.replace('_', ' ')}: {TASK_VARIATIONS[k]}." for k in task_vars),
        f"Make the tasks exhibit {primary.name}: {primary.levers[0].text}",
        f"Keep this failure observable: {rule.check}.",
        "Every new task passes the usual verification (the reference solution scores 1.0 and an empty run "
        "scores 0) and stays out of the benchmark split.",
    ]
    tag_text = ", ".join(f"{t} x{n}" for t, n in group.tag_counts.items())
    causes = list(dict.fromkeys(m.root_cause.split(". ")[0].rstrip(".") + "." for m in members))
    failure_analysis = (
        f"{group.shared_cause} Tags: {tag_text}. Severity {group.severity} of 3, the mean over the group's "
        "failures of the worst tag's severity (3 leaves harm behind, 2 leaves the task undone, 1 ran out of "
        "budget), one less for near misses and for challenging tasks. "
        f"Distinct root causes: {' '.join(causes[:4])}"
    )
    environment_guidance = "\n".join(
        [
            f"Build on the knowledge base of {domains}.",
            *(f"- {k}: {ENV_VARIATIONS[k]}." for k in env_vars),
            *(f"- {lever}" for lever in _levers(group.gap.atoms, {"state", "tools"}, 3)),
        ]
    )
    task_guidance = "\n".join(
        [
            f"Capability profile includes {cap.id}; primary atom {primary.id}.",
            *(f"- {k}: {TASK_VARIATIONS[k]}." for k in task_vars),
            *(f"- {lever}" for lever in _levers(group.gap.atoms, {"query", "user"}, 3)),
        ]
    )
    extra = (
        f"Generated from diagnosis report {report.id} (evaluations {', '.join(report.eval_ids)}; "
        f"diagnosed by {group.analyst}), group {group.group_id}. Priority score {score:.4f} = failure share "
        f"{share:.4f} x severity {group.severity}; P0 >= 0.6, P1 >= 0.3, P2 >= 0.1, otherwise P3."
    )
    return PRD(
        round=round_key or report.round,
        prd_id=prd_id,
        title=f"{cap.name}: {rule.meaning} under {primary.name}",
        priority=priority_for(score),
        status=status,
        scenario=scenario,
        requirements=tuple(requirements),
        case_study=_case_study(examples),
        failure_analysis=failure_analysis,
        trajectory_comparison=_trajectory_comparison(examples),
        environment_guidance=environment_guidance,
        task_guidance=task_guidance,
        extra_information=extra,
        target_l1=tuple(dict.fromkeys([*group.l1_domains, *counts])),
        target_l2=group.l2_domains,
        capabilities=(group.gap.capability,),
        atoms=group.gap.atoms,
        env_variations=env_vars,
        task_variations=task_vars,
        source="diagnosis",
        source_failure_ids=group.failure_ids,
        failure_counts=counts,
        priority_score=score,
        diagnosis_id=report.id,
    )


class PRDText(BaseModel):
    """The prose of a PRD, as a model is asked to polish it; machine fields are never model-written."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: str = Field(min_length=3)
    scenario: str = Field(min_length=20)
    requirements: tuple[str, ...] = Field(min_length=1, max_length=12)
    case_study: str = Field(min_length=20)
    failure_analysis: str | None
    trajectory_comparison: str | None
    environment_guidance: str | None
    task_guidance: str | None
    extra_information: str | None


def _text_check(prd: PRD) -> Any:
    def check(value: PRDText) -> list[str]:
        problems = []
        cited = [f for f in prd.source_failure_ids if f in value.case_study]
        tasks = re.findall(r"Task (\S+) \(", prd.case_study)
        if not cited and not any(t in value.case_study for t in tasks):
            problems.append(
                "case_study must name at least one of the failing tasks or failure ids it is drawn from"
            )
        fields = {"title": value.title, "scenario": value.scenario, "case_study": value.case_study}
        fields |= {f: getattr(value, f) or "" for f in PART_II}
        for name, text in fields.items():
            if any(line.lstrip().startswith("#") for line in text.splitlines()):
                problems.append(f"{name} must not contain Markdown headings (lines starting with '#')")
        return problems

    return check


def polish(prd: PRD, llm: LLM, *, max_attempts: int = DEFAULT_ATTEMPTS) -> tuple[PRD, str | None]:
    """The PRD with model-polished prose, or unchanged with the reason when no valid text came."""
    draft = PRDText.model_validate({k: getattr(prd, k) for k in PRDText.model_fields})
    prompt = (
        "You edit Product Requirement Documents that steer synthesis of training data for tool-using agents.\n"
        "Rewrite the prose below so a data engineer can act on it: concrete, specific, no filler. Keep every "
        "fact, number, task id and failure id; keep requirements as separate imperative items; quote evidence "
        "verbatim in the case study. Do not use Markdown headings.\n\n"
        f"Draft:\n{draft.model_dump_json(indent=1)}"
    )
    value, attempts = ask_validated(
        llm,
        [{"role": "user", "content": prompt}],
        PRDText,
        schema_name="prd_text",
        check=_text_check(prd),
        max_attempts=max_attempts,
    )
    if value is None:
        return prd, attempts_summary(f"prose of {prd.prd_id}", attempts)
    return PRD(**(prd.model_dump(exclude={"id"}) | value.model_dump())), None


def generate_prds(
    report: DiagnosisReport,
    *,
    max_prds: int = DEFAULT_MAX_PRDS,
    status: Status = "active",
    round_key: str | None = None,
    llm: LLM | None = None,
    max_attempts: int = DEFAULT_ATTEMPTS,
) -> list[PRD]:
    """One PRD per capability-gap group, highest priority score first, at most `max_prds`.

    Ids are `PRD-<round>-<nn>` in that order. New PRDs are `active` by default, so the round that
    follows the diagnosis uses them without a person accepting them first; pass `status="proposed"`
    to require that step. With `llm`, the prose is polished and validated; a PRD whose polish never
    validates keeps its rules-written text (the reason goes into its extra information).
    """
    if max_prds < 1:
        raise ValueError(f"max_prds must be at least 1, got {max_prds}")
    round_key = round_key or report.round
    groups = sorted(
        report.capability_diagnoses,
        key=lambda g: (-(g.frequency * g.severity), g.group_id),
    )[:max_prds]
    prds = []
    for index, group in enumerate(groups, start=1):
        prd = compose_prd(
            group, report, prd_id=f"PRD-{round_key}-{index:02d}", status=status, round_key=round_key
        )
        if llm is not None:
            polished, reason = polish(prd, llm, max_attempts=max_attempts)
            if reason is not None:
                extra = f"{prd.extra_information} Note: {reason}."
                polished = PRD(**(prd.model_dump(exclude={"id"}) | {"extra_information": extra}))
            prd = polished
        prds.append(prd)
    return prds


# -- Markdown and YAML ------------------------------------------------------------------------------


def render_markdown(prd: PRD) -> str:
    """The PRD as Markdown: machine fields in YAML front matter, then Part I and Part II sections."""
    front: dict[str, Any] = {"prd_id": prd.prd_id}
    if prd.title:
        front["title"] = prd.title
    front |= {"priority": prd.priority, "status": prd.status, "round": prd.round, "source": prd.source}
    for name in MACHINE_FIELDS:
        value = getattr(prd, name)
        if value in (None, (), {}):
            continue
        front[name] = list(value) if isinstance(value, tuple) else value
    lines = [
        "---",
        yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=1000).rstrip(),
        "---",
        "",
    ]
    lines += [f"# {prd.title or prd.prd_id}", "", "## Part I: Mandatory", ""]
    for heading, field in SECTIONS.items():
        if field == "failure_analysis":
            lines += ["## Part II: Optional", ""]
        value = getattr(prd, field)
        if value is None:
            continue
        body = "\n".join(f"- {r}" for r in value) if field == "requirements" else value
        lines += [f"### {heading}", "", body, ""]
    return "\n".join(lines)


class PRDProblem(BaseModel):
    """One thing wrong with a PRD document: the field, what is wrong, and how to fix it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    field: str
    problem: str
    fix: str = ""

    def __str__(self) -> str:
        return f"{self.field}: {self.problem}" + (f"; {self.fix}" if self.fix else "")


class PRDFormatError(ValueError):
    """A PRD document that cannot become a PRD; `problems` lists everything found, not only the first."""

    def __init__(self, source: str, problems: Sequence[PRDProblem]) -> None:
        self.source = source
        self.problems = tuple(problems)
        super().__init__(f"{source}: " + " | ".join(str(p) for p in self.problems))


_FIX: dict[str, str] = {
    "prd_id": "add `prd_id: <id>` to the front matter (YAML) or a '### PRD ID' section",
    "priority": "set `priority:` to one of P0, P1, P2, P3 (P0 is the most urgent)",
    "status": "set `status:` to one of proposed, active, done, rejected (only active PRDs steer a round)",
    "scenario": "add a '### Scenario' section (Markdown) or a `scenario:` key (YAML) saying where agents fail",
    "requirements": "add a '### Requirements' section with one '- ' bullet per requirement (or a YAML list)",
    "case_study": "add a '### Case Study' section with at least one concrete failing case",
    "target_l1": "write L1 domains as 'split/Name' (e.g. 'toc/Finance'); `agentomnia taxonomy show` lists them",
    "target_l2": "give L2 taxonomy ids (e.g. 10005) or exact L2 names; `agentomnia taxonomy show` lists them",
    "capabilities": "capability ids and their meaning: agentomnia/taxonomy/data/capabilities.yaml",
    "atoms": "atom ids and their meaning: agentomnia/taxonomy/data/atoms.yaml",
    "env_variations": "environment variations are defined in agentomnia/directives.py (ENV_VARIATIONS)",
    "task_variations": "task variations are defined in agentomnia/directives.py (TASK_VARIATIONS)",
}
_ALL_FIELDS = ("title", *PART_I, *PART_II, *MACHINE_FIELDS, "source", "round")


def _heading_key(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^a-z0-9 ]+", " ", text.lower())).strip()


_SECTION_KEYS = {_heading_key(h): f for h, f in (SECTIONS | _SCALAR_SECTIONS).items()}
_PART_HEADING = re.compile(r"^part (i|ii|1|2)\b")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")


def _split_front_matter(text: str) -> tuple[str | None, str]:
    """(front matter or None, body); a ValueError for an opening fence that is never closed."""
    if not re.match(r"^---[ \t]*\r?\n", text):
        return None, text
    match = re.match(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?", text, flags=re.S | re.M)
    if match is None:
        raise ValueError("the front matter opened with '---' is never closed")
    return match.group(1), text[match.end() :]


def _list_items(body: str) -> list[str]:
    items: list[str] = []
    for line in body.splitlines():
        match = _LIST_ITEM.match(line)
        if match:
            items.append(match.group(1).strip())
        elif line.strip() and items:
            items[-1] = f"{items[-1]} {line.strip()}"  # a wrapped continuation of the previous item
        elif line.strip():
            items.append(line.strip())
    return items


def _markdown_fields(body: str, problems: list[PRDProblem]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    current: str | None = None
    chunks: dict[str, list[str]] = {}
    h1: str | None = None
    for line in body.splitlines():
        heading = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if heading is None:
            if current is not None:
                chunks[current].append(line)
            continue
        level, title = len(heading.group(1)), heading.group(2)
        key = _heading_key(title)
        if level == 1 and h1 is None:
            h1, current = title.strip(), None
            continue
        if _PART_HEADING.match(key):
            current = None
            continue
        field = _SECTION_KEYS.get(key)
        if field is None:
            known = ", ".join(f"'{h}'" for h in SECTIONS)
            problems.append(
                PRDProblem(
                    field=title.strip(),
                    problem=f"unknown section heading {title.strip()!r}",
                    fix=f"use one of {known}, or move the text under 'Extra Information'",
                )
            )
            current = None
            continue
        if field in chunks:
            problems.append(
                PRDProblem(field=field, problem=f"section {title.strip()!r} appears twice", fix="merge them")
            )
        current = field
        chunks[current] = []
    for field, lines in chunks.items():
        text = "\n".join(lines).strip()
        if field == "requirements":
            data[field] = _list_items(text)
        elif text:
            data[field] = text
    if h1 is not None:
        data["_h1"] = h1
    return data


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [value]


def _normalise_ids(value: Any, known: Sequence[str], names: Mapping[str, str]) -> tuple[list[str], list[Any]]:
    """Ids written loosely ('Tool Use', 'tool-use') -> canonical ids; the unreadable ones apart."""
    good, bad = [], []
    for item in _as_list(value):
        text = str(item).strip()
        snake = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
        if snake in known:
            good.append(snake)
        elif text.casefold() in names:
            good.append(names[text.casefold()])
        else:
            bad.append(item)
    return good, bad


def _normalise(data: dict[str, Any], problems: list[PRDProblem]) -> dict[str, Any]:
    """Human spellings -> canonical values, with a problem (and the value dropped) where that fails."""
    tax = taxonomy_index()
    out = dict(data)
    for key in ("prd_id", "title"):
        if isinstance(out.get(key), (int, float)):
            out[key] = str(out[key])
    if isinstance(out.get("priority"), str):
        out["priority"] = out["priority"].strip().upper()
    if isinstance(out.get("status"), str):
        out["status"] = out["status"].strip().lower()
    if isinstance(out.get("requirements"), str):
        out["requirements"] = _list_items(out["requirements"])

    known_l1 = _known_l1()
    by_name: dict[str, list[str]] = {}
    for key in known_l1.values():
        by_name.setdefault(key.split("/", 1)[1].casefold(), []).append(key)
    l1s: list[str] = []
    for item in _as_list(out.get("target_l1")):
        text = str(item).strip()
        if text.casefold() in known_l1:
            l1s.append(known_l1[text.casefold()])
        elif len(by_name.get(text.casefold(), [])) == 1:
            l1s.append(by_name[text.casefold()][0])
        elif text.casefold() in by_name:
            problems.append(
                PRDProblem(
                    field="target_l1",
                    problem=f"L1 name {text!r} is ambiguous across splits",
                    fix=f"write one of {', '.join(by_name[text.casefold()])}",
                )
            )
        else:
            close = difflib.get_close_matches(text, list(known_l1.values()), n=2, cutoff=0.5)
            problems.append(
                PRDProblem(
                    field="target_l1",
                    problem=f"unknown L1 domain {text!r}"
                    + (f" (did you mean {' or '.join(close)}?)" if close else ""),
                    fix=_FIX["target_l1"],
                )
            )
    l2_names: dict[str, list[int]] = {}
    for d in tax.domains:
        l2_names.setdefault(d.l2.casefold(), []).append(d.id)
    l2s: list[int] = []
    for item in _as_list(out.get("target_l2")):
        text = str(item).strip()
        if text.isdigit() and int(text) in tax:
            l2s.append(int(text))
        elif len(l2_names.get(text.casefold(), [])) == 1:
            l2s.append(l2_names[text.casefold()][0])
        elif text.casefold() in l2_names:
            options = ", ".join(f"{i} ({tax.by_id(i).l1_key})" for i in l2_names[text.casefold()])
            problems.append(
                PRDProblem(
                    field="target_l2",
                    problem=f"L2 name {text!r} is ambiguous",
                    fix=f"give the taxonomy id instead: {options}",
                )
            )
        else:
            problems.append(
                PRDProblem(field="target_l2", problem=f"unknown L2 domain {text!r}", fix=_FIX["target_l2"])
            )
    # An L2 implies its L1: a person naming only L2 domains should not have to repeat their parents.
    l1s += [tax.by_id(i).l1_key for i in l2s]
    if "target_l1" in out or l1s:
        out["target_l1"] = list(dict.fromkeys(l1s))
    if "target_l2" in out:
        out["target_l2"] = l2s

    vocabularies: dict[str, tuple[str, Sequence[str], dict[str, str]]] = {
        "capabilities": ("capabilities", CAPABILITY_IDS, {c.name.casefold(): c.id for c in capabilities()}),
        "atoms": ("atoms", ATOM_IDS, {a.name.casefold(): a.id for a in atoms()}),
        "env_variations": ("environment variations", tuple(ENV_VARIATIONS), {}),
        "task_variations": ("task variations", tuple(TASK_VARIATIONS), {}),
    }
    for key, (kind, known, names) in vocabularies.items():
        if key not in out:
            continue
        good, bad = _normalise_ids(out[key], known, names)
        if bad:
            problems.append(
                PRDProblem(
                    field=key,
                    problem=_unknown(kind, [str(b) for b in bad], known),
                    fix=_FIX[key],
                )
            )
        out[key] = good
    return out


def _pydantic_problems(exc: ValidationError) -> list[PRDProblem]:
    out = []
    for err in exc.errors():
        field = str(err["loc"][0]) if err["loc"] else "<document>"
        if err["type"] == "missing":
            part = "Part I field" if field in PART_I else "field"
            out.append(
                PRDProblem(
                    field=field, problem=f"missing mandatory {part} `{field}`", fix=_FIX.get(field, "")
                )
            )
        elif err["type"] == "extra_forbidden":
            out.append(
                PRDProblem(
                    field=field,
                    problem=f"unknown field `{field}`",
                    fix=f"remove it, or use one of: {', '.join(_ALL_FIELDS)}",
                )
            )
        else:
            message = str(err["msg"]).removeprefix("Value error, ")
            out.append(PRDProblem(field=field, problem=message, fix=_FIX.get(field, "")))
    return out


def _load_mapping(text: str, where: str, problems: list[PRDProblem]) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        problems.append(
            PRDProblem(field=where, problem=f"invalid YAML{line}: {problem}", fix="fix the YAML syntax")
        )
        return {}
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        problems.append(
            PRDProblem(
                field=where,
                problem=f"expected a mapping of fields, got a {type(loaded).__name__}",
                fix="write one `field: value` per line (see agentomnia/evolution/examples/)",
            )
        )
        return {}
    return {str(k): v for k, v in loaded.items()}


def parse_prd(text: str, source: str, *, fmt: Literal["markdown", "yaml"] | None = None) -> PRD:
    """A PRD from Markdown (front matter + sections) or plain YAML; `source` becomes the PRD's source.

    The format follows `fmt`, else the suffix of `source` (.yaml/.yml is YAML, anything else
    Markdown). Every problem found is reported at once in the PRDFormatError, each with its fix.
    """
    if fmt is None:
        fmt = "yaml" if source.lower().endswith((".yaml", ".yml")) else "markdown"
    problems: list[PRDProblem] = []
    text = text.lstrip("\ufeff")
    data: dict[str, Any] = {}
    if fmt == "yaml":
        data = _load_mapping(text, "<yaml>", problems)
    else:
        try:
            front, body = _split_front_matter(text)
        except ValueError as exc:
            raise PRDFormatError(
                source, [PRDProblem(field="<front matter>", problem=str(exc), fix="end it with a line '---'")]
            ) from None
        if front is not None:
            data = _load_mapping(front, "<front matter>", problems)
        sections = _markdown_fields(body, problems)
        h1 = sections.pop("_h1", None)
        for key, value in sections.items():
            if key in data and data[key] != value:
                problems.append(
                    PRDProblem(
                        field=key, problem="given both in the front matter and as a section", fix="keep one"
                    )
                )
            data.setdefault(key, value)
        if h1 and "title" not in data and h1 != str(data.get("prd_id")):
            data["title"] = h1
    data.pop("id", None)
    data.pop("schema_version", None)
    data["source"] = source
    data = _normalise(data, problems)
    try:
        prd = PRD.model_validate(data)
    except ValidationError as exc:
        raise PRDFormatError(source, problems + _pydantic_problems(exc)) from None
    if problems:
        raise PRDFormatError(source, problems)
    return prd
