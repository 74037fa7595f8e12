"""One candidate in, one verified environment bundle (or a recorded failure) out.

state space -> toolset -> source -> s0 -> three-level verification, inside a bounded repair loop:
a component that keeps failing (a tool, after rule-based or model-driven repair) is dropped with
its reason, and an environment that cannot reach the bar — or keeps fewer tools than the
configured minimum — is discarded with its reason. Every decision ends up in `verification.json`.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentomnia.envs.codegen import generate_source
from agentomnia.envs.proposals import (
    ProposedOperation,
    augment_state_space,
    judge_operations,
    propose_operations,
    realistic_records,
    refine_operations,
)
from agentomnia.envs.repair import llm_patch, rule_based_patch
from agentomnia.envs.spec import EnvSpec, SpecInvalid
from agentomnia.envs.state import generate_state
from agentomnia.envs.state_space import StateSpaceReport, build_state_space
from agentomnia.envs.toolset import (
    Normalization,
    Toolset,
    ToolsetConfig,
    bounded,
    mirrors_seed,
    mirrors_service,
    seed_plain,
    synthesize_toolset,
    with_left_out,
)
from agentomnia.envs.verify import VerificationReport, bundle_for, verify, with_tools
from agentomnia.llm import LLM
from agentomnia.llm.ledger import verdict
from agentomnia.records import canonical_json, content_hash
from agentomnia.rejection import Rejection
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.seeds.inference import EnvCandidate
from agentomnia.seeds.models import Seed
from agentomnia.taxonomy import Domain


class BuildConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    toolset: ToolsetConfig = ToolsetConfig()
    rollouts: int = 6
    steps: int = 12
    repair_rounds: int = 2
    state_seeds: int = 3
    seed: int = 0


class DroppedTool(BaseModel):
    name: str
    reason: str


class BuiltEnv(BaseModel):
    spec: EnvSpec
    source: str
    s0: dict[str, Any]
    report: VerificationReport
    dropped_tools: list[DroppedTool] = Field(default_factory=list)
    normalization: list[Normalization] = Field(default_factory=list)
    state_space: StateSpaceReport
    repairs: list[str] = Field(default_factory=list)
    variations: list[str] = Field(default_factory=list)  # what a PRD round built into s0 ("operator: note")
    model_values: list[str] = Field(
        default_factory=list
    )  # llm mode: s0 values the model wrote, or had refused

    @property
    def env_id(self) -> str:
        """The bundle's identity: what runs (spec, code) and where it starts (s0)."""
        return content_hash({"spec": self.spec.id, "source": self.source, "s0": self.s0})


BuildStage = Literal["state_space", "toolset", "initial_state", "verification"]
# Rewrites a generated s0 before verification (a PRD round's environment variations): the new state and
# one line per change made. It must keep every invariant; verification checks the result like any s0.
VaryState = Callable[[EnvSpec, dict[str, Any]], tuple[dict[str, Any], list[str]]]


def build_failure(candidate_id: str, name: str, stage: BuildStage, reason: str) -> Rejection:
    """An environment that could not be built: the candidate it came from, the stage and why."""
    return Rejection(subject=candidate_id, subject_kind="environment", stage=stage, reason=reason,
                     parent=candidate_id, detail={"name": name})  # fmt: skip


def state_stage(
    candidate: EnvCandidate, seeds: Sequence[Seed], domain: Domain, *, llm: LLM | None = None
) -> tuple[EnvSpec, StateSpaceReport] | Rejection:
    """The state space from the seed and the domain's knowledge; in llm mode with the attributes the
    model adds (`augment_state_space`), each named in the report as added or refused."""
    try:
        spec, report = build_state_space(candidate, seeds, domain)
        if llm is not None:
            spec, added, refused = augment_state_space(llm, spec)
            report = report.model_copy(update={"model_attributes": added, "model_refused": refused})
        return spec, report
    except SpecInvalid as exc:
        return build_failure(
            candidate.id, candidate.name, "state_space", f"the state space cannot be made consistent: {exc}"
        )


def toolset_stage(
    spec: EnvSpec,
    seeds: Sequence[Seed],
    space: StateSpaceReport,
    cfg: ToolsetConfig,
    *,
    llm: LLM | None = None,
) -> tuple[EnvSpec, list[Normalization]] | Rejection:
    """The toolset; in llm mode with the operations the model proposes, judged by the same refinement,
    and once more with replacements for those it refused (its reasons sent back to the model)."""
    toolset = synthesize_toolset(spec, seeds, space.tool_entities, cfg, kb_used=space.kb_used)
    if llm is not None and not mirrors_service(
        seeds, cfg, kb_used=space.kb_used
    ):  # a mirrored service is not embellished
        toolset = _with_model_operations(llm, spec, seeds, space, cfg, toolset)
    if len(toolset.tools) < cfg.min_tools:
        return build_failure(
            spec.candidate_id, spec.name, "toolset",
            f"only {len(toolset.tools)} tools survive refinement (minimum {cfg.min_tools})",
        )  # fmt: skip
    return with_tools(spec, toolset.tools), toolset.table


def _with_model_operations(
    llm: LLM,
    spec: EnvSpec,
    seeds: Sequence[Seed],
    space: StateSpaceReport,
    cfg: ToolsetConfig,
    toolset: Toolset,
) -> Toolset:
    """`toolset` rebuilt with the model's operations: proposed, judged by the refinement, the refused
    ones sent back with their reasons for replacements, judged again. Every proposal ends up in the
    normalization table (kept, merged or removed, with why) and on the ledger as kept or refused."""

    def build(offered: Sequence[ProposedOperation]) -> tuple[Toolset, dict[str, str]]:
        made = synthesize_toolset(
            spec, seeds, space.tool_entities, cfg, kb_used=space.kb_used, proposed=offered
        )
        kept = {t.name for t in made.tools}
        why = {n.candidate: n.reason for n in made.table if n.origin == "model" and n.candidate not in kept}
        return made, {
            p.name: why.get(p.name, "left out by the refinement") for p in offered if p.name not in kept
        }

    proposed, refused, history = propose_operations(llm, spec, [t.name for t in toolset.tools])
    offered: list[ProposedOperation] = []
    if proposed:
        toolset, judged = build(proposed)
        offered = [p for p in proposed if p.name not in judged]
        refused.update(judged)
    # what replacements could mend: a replacement would meet the tool bound just the same
    mendable = {name: why for name, why in refused.items() if "-tool bound" not in why}
    if mendable:
        again, malformed = refine_operations(llm, spec, mendable, history)
        refused.update(malformed)
        if again := [p for p in again if p.name not in {o.name for o in offered}]:
            toolset, judged = build(offered + again)
            refused.update(judged)
            offered = [p for p in offered + again if p.name not in judged]
    notes = [Normalization(candidate=name, origin="model", fate="removed", reason=why)
             for name, why in refused.items() if not any(n.origin == "model" and n.candidate == name for n in toolset.table)]  # fmt: skip
    judge_operations(llm, offered, {t.name for t in toolset.tools}, refused)
    return toolset.model_copy(update={"table": [*toolset.table, *notes]})


def verify_stage(
    spec: EnvSpec,
    space: StateSpaceReport,
    normalization: list[Normalization],
    sandbox: Sandbox,
    *,
    llm: LLM | None = None,
    config: BuildConfig | None = None,
    vary: VaryState | None = None,
) -> BuiltEnv | Rejection:
    """Source, s0 (rewritten by `vary` where given) and the generation -> load -> verify -> repair
    loop, with a bounded budget."""
    cfg = config or BuildConfig()

    def fail(stage: BuildStage, reason: str) -> Rejection:
        return build_failure(spec.candidate_id, spec.name, stage, reason)

    s0: dict[str, Any] | None = None
    problems = ""
    for attempt in range(cfg.state_seeds):
        try:
            s0 = generate_state(spec, seed=cfg.seed + attempt)
            break
        except ValueError as exc:
            problems = str(exc)
    if s0 is None:
        return fail("initial_state", f"no valid s0 in {cfg.state_seeds} attempts: {problems}")
    model_values: list[str] = []
    if llm is not None:  # the model writes some records' descriptive values; invariants still hold
        s0, model_values = realistic_records(llm, spec, s0)
    varied: list[str] = []
    if vary is not None:
        s0, varied = vary(spec, s0)

    dropped: list[DroppedTool] = []
    repairs: list[str] = []
    source = generate_source(spec)
    report: VerificationReport | None = None
    rewritten: set[str] = set()
    for round_ in range(cfg.repair_rounds + 1):
        try:
            report, suspects = verify(
                sandbox,
                bundle_for(spec, source, s0),
                spec,
                s0,
                seed=cfg.seed + round_,
                rollouts=cfg.rollouts,
                steps=cfg.steps,
            )
        except Exception as exc:  # a sandbox fault is this environment's failure, not the round's
            return fail(
                "verification",
                f"verification crashed: {type(exc).__name__}: {exc}; {traceback.format_exc(limit=2)[-300:]}",
            )
        if rewritten:  # the model's rewrites of the last round, judged by this verification
            still = {t.name for t in report.failing_tools()}
            verdict(llm, "method_repair", True, len(rewritten - still))
            verdict(llm, "method_repair", False, len(rewritten & still))
            rewritten = set()
        if report.passed:
            break
        if report.levels_passed and report.contract is not None:
            return fail("verification", "contract: " + "; ".join(report.contract.problems[:3]))
        if round_ == cfg.repair_rounds + 1:
            break
        if not report.init.passed:
            patched = rule_based_patch(source, " ".join(report.init.failures))
            if patched is not None:
                repairs.append(f"round {round_}: rule-based patch for {report.init.failures[0][:120]}")
                source = patched
                continue
            return fail("verification", "initialization: " + "; ".join(report.init.failures[:3]))
        failing = report.failing_tools()
        names = [t.name for t in failing] or sorted(set(suspects))
        if not names:
            return fail("verification", "environment: " + "; ".join(report.env.failures[:3]))
        if llm is not None and round_ < cfg.repair_rounds:
            patched_any = False
            for t in failing:
                patched = llm_patch(llm, source, t.name, "\n".join(t.failures[:3]))
                if patched is not None:
                    source, patched_any = patched, True
                    rewritten.add(t.name)
                    repairs.append(f"round {round_}: model rewrote {t.name}")
            if patched_any:
                continue
        reasons = {t.name: t.failures[0] for t in failing}
        # a seed's tool is never dropped for the domain behaviour put behind it: it falls back to
        # the seed's plain behaviour and is verified again
        plain = {p.name: p for t in spec.tools if t.name in names and (p := seed_plain(t)) is not None}
        if plain:
            repairs += [
                f"round {round_}: {n} runs the seed's plain behaviour ({reasons.get(n, 'environment-level failure')[:160]})"
                for n in sorted(plain)
            ]
            spec = with_tools(spec, [plain.get(t.name, t) for t in spec.tools])
            names = [n for n in names if n not in plain]
        for name in names:
            dropped.append(
                DroppedTool(
                    name=name, reason=reasons.get(name, "implicated in an environment-level failure")[:300]
                )
            )
        spec = with_tools(spec, [t for t in spec.tools if t.name not in set(names)])
        # what failed may have been domain behaviour: plain tools give way so that it keeps its share
        tools, trimmed = bounded(
            spec,
            spec.tools,
            cfg.toolset,
            keep_share=not mirrors_seed(spec.tools, cfg.toolset, kb_used=space.kb_used),
        )
        normalization = with_left_out(normalization, spec.tools, trimmed)
        spec = with_tools(spec, tools)
        if len(spec.tools) < cfg.toolset.min_tools:
            return fail(
                "verification", f"only {len(spec.tools)} tools left after dropping failing ones: {names[:5]}"
            )
        source = generate_source(spec)
    if report is None or not report.passed:
        why = (report.tool.failures or report.env.failures) if report else ["not verified"]
        return fail(
            "verification", f"still failing after {cfg.repair_rounds} repair rounds: {'; '.join(why[:3])}"
        )
    return BuiltEnv(
        spec=spec, source=source, s0=s0, report=report, dropped_tools=dropped,
        normalization=normalization, state_space=space, repairs=repairs, variations=varied,
        model_values=model_values,
    )  # fmt: skip


class BuildOutcome(BaseModel):
    """Every stage's output for one candidate: the state spec, the toolset spec, and the end result."""

    state: tuple[EnvSpec, StateSpaceReport] | None = None
    toolset: tuple[EnvSpec, list[Normalization]] | None = None
    result: BuiltEnv | Rejection

    @property
    def built(self) -> BuiltEnv | None:
        return self.result if isinstance(self.result, BuiltEnv) else None


def build_environment(
    candidate: EnvCandidate,
    seeds: Sequence[Seed],
    domain: Domain,
    sandbox: Sandbox,
    *,
    llm: LLM | None = None,
    config: BuildConfig | None = None,
    vary: VaryState | None = None,
) -> BuildOutcome:
    """All stages for one candidate, one after another (the scale shards, `agentomnia env build`, the
    environment bench); the assets run the same stage functions one asset each."""
    cfg = config or BuildConfig()
    state = state_stage(candidate, seeds, domain, llm=llm)
    if isinstance(state, Rejection):
        return BuildOutcome(result=state)
    spec, space = state
    tooled = toolset_stage(spec, seeds, space, cfg.toolset, llm=llm)
    if isinstance(tooled, Rejection):
        return BuildOutcome(state=state, result=tooled)
    spec, table = tooled
    return BuildOutcome(state=state, toolset=tooled,
                        result=verify_stage(spec, space, table, sandbox, llm=llm, config=cfg, vary=vary))  # fmt: skip


def verification_record(built: BuiltEnv) -> dict[str, Any]:
    r = built.report
    return {
        "env_id": built.env_id,
        "verified": r.passed,
        "levels": {"init": r.init.passed, "tool": r.tool.passed, "env": r.env.passed},
        "checks": {"init": r.init.checks, "tool": r.tool.checks, "env": r.env.checks},
        "failures": {"init": r.init.failures, "tool": r.tool.failures, "env": r.env.failures},
        "contract": r.contract.model_dump() if r.contract is not None else None,
        "dropped_tools": [d.model_dump() for d in built.dropped_tools],
        "repairs": built.repairs,
        "variations": built.variations,
        "model_values": built.model_values,
        "normalization": [n.model_dump() for n in built.normalization],
        "state_space": built.state_space.model_dump(),
        "seconds": r.seconds,
    }


def write_bundle(built: BuiltEnv, folder: Path) -> Path:
    """spec.json, env.py, tools.json, s0.json, verification.json — written to a temp folder, then swapped in."""
    import os
    import shutil
    import tempfile

    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    (tmp / "spec.json").write_text(built.spec.model_dump_json(indent=2), encoding="utf-8")
    (tmp / "env.py").write_text(built.source, encoding="utf-8")
    (tmp / "tools.json").write_text(
        json.dumps([t.openai() for t in built.spec.tools], indent=2, ensure_ascii=False), encoding="utf-8"
    )
    (tmp / "s0.json").write_text(canonical_json(built.s0), encoding="utf-8")
    (tmp / "verification.json").write_text(
        json.dumps(verification_record(built), indent=2, ensure_ascii=False), encoding="utf-8"
    )
    if folder.exists():
        shutil.rmtree(folder)
    os.replace(tmp, folder)
    return folder
