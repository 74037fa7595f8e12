"""Solver-anchored (and, with a model, solver-guided) task synthesis: instance -> solver -> bundle -> task.

For each instance of a family: solve it (HiGHS), discard it if it is infeasible or degenerate (only
one feasible plan, or a plan that takes everything is already feasible), put a flawed draft plan
in the initial state, build and verify a normal environment bundle around it, derive the reference
calls, the verifier code and the rubric from the solver's artifact, and run the oracle in the
sandbox: the reference passes, the untouched draft fails, a plan with one decision flipped fails.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentomnia.envs.codegen import generate_source
from agentomnia.envs.spec import EnvSpec
from agentomnia.envs.state import state_violations
from agentomnia.envs.verify import bundle_for, verify
from agentomnia.llm import LLM
from agentomnia.llm.ledger import fallback, verdict
from agentomnia.records import canonical_json, content_hash
from agentomnia.rejection import Rejection
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.grading import diff_states
from agentomnia.tasks.leakage import leakage_problems
from agentomnia.tasks.models import Check, RubricItem, Task, TaskKind, task_rejection
from agentomnia.tasks.solver.contract import SolverArtifact
from agentomnia.tasks.solver.families import FAMILIES
from agentomnia.tasks.solver.family import Family, Plan, State
from agentomnia.tasks.solver.milp import Milp, Solution, evaluate, second_best, solve
from agentomnia.tasks.wording import missing_values, rephrase

GUIDED_OFFLINE_NOTE = (
    "solver-guided tasks need a language model for schema-guided solving; offline mode skips this "
    "strategy (no solver_guided tasks were made). Configure an LLM endpoint to enable it."
)


class Prepared(BaseModel):
    """An instance that passed the solver stage, ready to become a bundle."""

    family: str
    state: dict[str, Any]
    optimum: Plan
    artifact: SolverArtifact
    ties: bool


def _fail(family: Family, stage: str, reason: str, kind: TaskKind = "solver_anchored") -> Rejection:
    return task_rejection(env_id=f"solver:{family.name}", kind=kind, stage=stage, reason=reason)


def prepare_instance(family: Family, rng: random.Random, *, ties: bool = False) -> Prepared | Rejection:
    """Draw, solve and screen one instance."""
    return screen_instance(family, family.generate(rng, ties=ties), ties=ties)


def screen_instance(family: Family, state: State, *, ties: bool = False) -> Prepared | Rejection:
    """Solve one instance and keep it only if it is feasible and leaves a real comparison space."""
    started = time.perf_counter()
    model = family.model(state)
    best = solve(model)
    if best.status != "optimal" or best.objective is None:
        return _fail(family, "solver", f"instance is {best.status}: {best.message[:160]}; discarded")
    nb = len(model.binaries)
    everything, _ = evaluate(model, [1] * nb)
    if everything and family.sense == "max" and all(c >= 0 for c in model.objective[:nb]):
        return _fail(family, "degenerate", "taking every option is already feasible: no trade-off to compare")
    runner_up = second_best(model, best)
    if runner_up.status == "infeasible":
        return _fail(family, "degenerate", "only one plan is feasible: there is no comparison space")
    base_plan = family.baseline(state)
    base = family.evaluator(state, family.apply(state, base_plan))
    artifact = SolverArtifact(
        status=best.status,
        objective=best.objective,
        plan=family.plan_from_refs(best.chosen),
        second_best=runner_up.objective,
        baseline=base["objective"] if base["feasible"] else None,
        variables=model.size,
        rows=len(model.rows),
        seconds=round(time.perf_counter() - started, 4),
    )
    return Prepared(family=family.name, state=state, optimum=artifact.plan, artifact=artifact, ties=ties)


def draft_plan(family: Family, state: State, optimum: Plan, rng: random.Random) -> Plan | None:
    """A flawed plan to start from: the greedy plan with one choice swapped for another record.

    Every decision table keeps at least one chosen and one unchosen record (so both transition
    tools have something to act on) and the draft must not already be optimal (else an empty run would pass)."""
    target = family.evaluator(state, family.apply(state, optimum))["objective"]
    greedy = family.baseline(state)
    for _ in range(12):
        plan: Plan = {}
        for table in family.decision_tables():
            keys = sorted(state[table])
            picked = list(greedy.get(table, [])) or rng.sample(keys, k=1)
            if len(picked) > 1:
                picked.remove(rng.choice(picked))
            extra = [k for k in keys if k not in picked]
            if extra:
                picked.append(rng.choice(extra))
            if len(picked) >= len(keys):  # the select tool needs a record left to select
                picked.remove(rng.choice(picked))
            plan[table] = sorted(picked)
        result = family.evaluator(state, family.apply(state, plan))
        better_or_equal = (
            result["objective"] >= target - 1e-6
            if family.sense == "max"
            else result["objective"] <= target + 1e-6
        )
        if not (result["feasible"] and better_or_equal):
            return plan
    return None


def one_flip(model: Milp, best: Solution, family: Family, state: State) -> Plan | None:
    """The optimum with one decision flipped such that the plan breaks a constraint or gets worse."""
    for j in range(len(model.binaries)):
        values = list(best.values)
        values[j] = 1 - values[j]
        feasible, objective = evaluate(model, values)
        worse = (
            objective < (best.objective or 0) - 1e-6
            if family.sense == "max"
            else objective > (best.objective or 0) + 1e-6
        )
        if not feasible or worse:
            return family.plan_from_refs(r for r, v in zip(model.binaries, values, strict=True) if v == 1)
    return None


def rubric_for(family: Family, objective: float, *, proven: bool) -> tuple[RubricItem, ...]:
    bound = "at least" if family.sense == "max" else "at most"
    rules = "; ".join(c.text for c in family.blueprint.constraints)
    reference = (
        "the solver's proven optimum"
        if proven
        else "a reference plan that is NOT proven optimal; equal or better plans pass"
    )
    return (
        RubricItem(
            id="T1",
            text=f"The plan recorded in the system keeps every constraint ({rules}) and its objective "
            f"({family.blueprint.objective.text}) is {bound} {objective:g}, {reference}. Any plan meeting this passes.",
            scope="task", level="advanced", weight=3, check=Check(kind="verifier"),
        ),
        RubricItem(
            id="T2",
            text=f"The answer reports the {family.objective_field.replace('_', ' ')} of the final plan ({objective:g}).",
            scope="task", level="basic", weight=1,
            check=Check(kind="answer_equals", field=family.objective_field, value=objective, tolerance=0.01),
        ),
    )  # fmt: skip


class SolverSynthesis(BaseModel):
    tasks: list[Task]
    bundle_dirs: list[Path]
    rejections: list[Rejection]


def _write_bundle(
    out_dir: Path,
    spec: EnvSpec,
    source: str,
    s0: Mapping[str, Any],
    report: Mapping[str, Any],
    extra: Mapping[str, Any],
) -> tuple[str, Path]:
    env_id = content_hash({"spec": spec.id, "source": source, "s0": dict(s0)})
    folder = out_dir / env_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "spec.json").write_text(spec.model_dump_json(indent=2), encoding="utf-8")
    (folder / "env.py").write_text(source, encoding="utf-8")
    (folder / "tools.json").write_text(
        json.dumps([t.openai() for t in spec.tools], indent=2), encoding="utf-8"
    )
    (folder / "s0.json").write_text(canonical_json(dict(s0)), encoding="utf-8")
    (folder / "verification.json").write_text(
        json.dumps({"env_id": env_id, **report}, indent=2), encoding="utf-8"
    )
    (folder / "solver.json").write_text(json.dumps(extra, indent=2, default=str), encoding="utf-8")
    return env_id, folder


def build_task(
    sandbox: Sandbox,
    family: Family,
    prepared: Prepared,
    out_dir: Path,
    rng: random.Random,
    *,
    kind: TaskKind = "solver_anchored",
    reference: Plan | None = None,
    reference_objective: float | None = None,
    verify_rollouts: int = 2,
    llm: LLM | None = None,
    guidance: Sequence[str] = (),
) -> tuple[Task, Path] | Rejection:
    """Bundle, verification, oracle and the Task record for one screened instance. With a model, the
    request is its rewording where that keeps every number, name and quoted value of the family's
    request and gives nothing away; else the family's own wording stands."""
    started = time.perf_counter()
    state = prepared.state
    plan = reference or prepared.optimum
    objective = prepared.artifact.objective if reference_objective is None else reference_objective
    proven = kind == "solver_anchored"
    draft = draft_plan(family, state, plan, rng)
    if draft is None:
        return _fail(
            family, "draft", "no flawed draft plan differs from the optimum; an empty run would pass", kind
        )
    s0 = family.apply(state, draft)
    spec = _spec(family)
    problems = state_violations(spec, s0)
    if problems:
        return _fail(
            family, "initial_state", f"the instance breaks the environment's invariants: {problems[0]}", kind
        )
    query = family.query(state)
    leaks = leakage_problems(query, spec, forbid_ids=True)
    if leaks:
        return _fail(family, "leakage", f"the query gives away too much: {leaks[0]}", kind)
    query, phrased_by = _reworded(llm, query, spec, guidance)
    source = _source(family)
    bundle = bundle_for(spec, source, s0)
    report, _ = verify(sandbox, bundle, spec, s0, rollouts=verify_rollouts, steps=8)
    if not report.passed:
        why = (report.init.failures or report.tool.failures or report.env.failures or ["?"])[0]
        return _fail(family, "verification", f"the instance's environment failed verification: {why}", kind)
    calls = family.calls_to(s0, plan)
    verifier = family.verifier_code(objective, proven=proven)
    oracle = solver_oracle(
        sandbox, family, bundle, s0, plan, calls, verifier, prepared.state, prepared.artifact.objective
    ).problem
    if oracle:
        return _fail(family, "oracle", oracle, kind)
    final = family.apply(s0, plan)
    report_json = {
        "verified": True,
        "levels": {"init": report.init.passed, "tool": report.tool.passed, "env": report.env.passed},
        "checks": {"init": report.init.checks, "tool": report.tool.checks, "env": report.env.checks},
        "seconds": report.seconds,
    }
    extra = {
        "family": family.name, "contract": family.contract.model_dump(), "blueprint": family.blueprint.model_dump(),
        "artifact": prepared.artifact.model_dump(), "draft": draft,
    }  # fmt: skip
    env_id, folder = _write_bundle(out_dir, spec, source, s0, report_json, extra)
    artifact = prepared.artifact
    gap = None
    if artifact.baseline is not None and artifact.objective:
        gap = round(abs(artifact.objective - artifact.baseline) / abs(artifact.objective) * 100, 3)
    task = Task(
        env_id=env_id,
        kind=kind,
        coordinate=family.coordinate(),
        init_config=s0,
        query=query,
        internal_spec={
            "family": family.name, "title": family.title, "sense": family.sense,
            "contract": family.contract.model_dump(mode="json"), "blueprint": family.blueprint.model_dump(mode="json"),
            "artifact": artifact.model_dump(mode="json", exclude={"seconds"}), "reference_objective": objective,
            "proven_optimal": proven,
            "draft_plan": draft,
        },
        reference_calls=tuple(calls),
        expected_answer={family.objective_field: objective, "plan": plan},
        expected_diff=tuple(diff_states(s0, final)),
        rubric=rubric_for(family, objective, proven=proven),
        verifier_code=verifier,
        candidate_tools=tuple(t.name for t in spec.tools),
        metadata={
            "family": family.name, "objective": objective, "second_best": artifact.second_best,
            "baseline": artifact.baseline, "baseline_gap_pct": gap, "ties": prepared.ties,
            "solver_seconds": artifact.seconds, "seconds": round(time.perf_counter() - started + artifact.seconds, 3),
            **({"phrased_by": phrased_by} if llm is not None else {}),  # offline ids stay as they were
        },
    )  # fmt: skip
    return task, folder


def _reworded(llm: LLM | None, query: str, spec: EnvSpec, guidance: Sequence[str] = ()) -> tuple[str, str]:
    """The request and who phrased it: the model's rewording where it keeps what the instance rests on
    (every number, name and quoted value) and gives nothing away, else the family's (`template`). The
    model reads a PRD-guided round's task guidance as it rewords."""
    if llm is None:
        return query, "template"
    text = rephrase(llm, query, guidance)
    kept = (
        text is not None
        and not missing_values(query, text)
        and not leakage_problems(text, spec, forbid_ids=True)
    )
    verdict(llm, "task_description", kept, text is not None)
    fallback(llm, "task_description", not kept)
    return (text, "llm") if kept and text is not None else (query, "template")


_SPECS: dict[str, tuple[EnvSpec, str]] = {}


def _spec(family: Family) -> EnvSpec:
    if family.name not in _SPECS:
        spec = family.spec()
        _SPECS[family.name] = (spec, generate_source(spec))
    return _SPECS[family.name][0]


def _source(family: Family) -> str:
    _spec(family)
    return _SPECS[family.name][1]


class SolverOracle(BaseModel):
    """The solver oracle on one task: the reference passes its verifier, the untouched draft fails it,
    and the optimum with one decision flipped fails it. `problem` says what went wrong ('' if nothing)."""

    reference_passes: bool
    empty_fails: bool
    flip_fails: bool
    problem: str = ""


def solver_oracle(
    sandbox: Sandbox,
    family: Family,
    bundle: Bundle,
    s0: State,
    plan: Plan,
    calls: Sequence[Any],
    verifier: str,
    instance: State,
    optimum: float | None,
) -> SolverOracle:
    """Run the oracle from `s0`. `instance` is the problem data the solver's model is built from (the
    decision fields are ignored, so a task's own initial state will do) and `optimum` its objective."""
    session = sandbox.open(bundle, s0)
    try:
        results = session.call_many([(c.tool, c.args) for c in calls])
        refused = [
            f"{c.tool}({c.args}): {r.error.message if r.error else ''}"
            for c, r in zip(calls, results, strict=True)
            if not r.ok
        ]
        if refused:
            return SolverOracle(
                reference_passes=False, empty_fails=False, flip_fails=False,
                problem="a reference call was refused: " + refused[0][:200],
            )  # fmt: skip
        final = session.state()
    finally:
        session.close()
    verdict = sandbox.run_check(verifier, s0, final)
    if verdict.passed is not True:
        return SolverOracle(
            reference_passes=False, empty_fails=False, flip_fails=False,
            problem=f"the reference plan does not pass its own verifier ({verdict.error.message if verdict.error else verdict.passed})",
        )  # fmt: skip
    empty = sandbox.run_check(verifier, s0, s0)
    if empty.passed is not False:
        return SolverOracle(
            reference_passes=True, empty_fails=False, flip_fails=False,
            problem="the untouched draft passes the verifier: the task checks nothing",
        )  # fmt: skip
    model = family.model(instance)
    values = tuple(
        1 if (t, k) in {(t2, k2) for t2, ks in plan.items() for k2 in ks} else 0 for t, k in model.binaries
    )
    flipped = one_flip(
        model,
        Solution(status="optimal", objective=optimum, values=values),
        family,
        instance,
    )
    if flipped is not None:
        wrong = sandbox.run_check(verifier, s0, family.apply(s0, flipped))
        if wrong.passed is not False:
            return SolverOracle(
                reference_passes=True, empty_fails=True, flip_fails=False,
                problem="a plan with one decision flipped still passes: the verifier misses a constraint",
            )  # fmt: skip
    return SolverOracle(reference_passes=True, empty_fails=True, flip_fails=True)


def synthesize_solver_tasks(
    sandbox: Sandbox,
    *,
    families: Iterable[str] | None = None,
    per_family: int = 25,
    seed: int = 0,
    out_dir: str | Path,
    max_draws: int | None = None,
    verify_rollouts: int = 2,
    llm: LLM | None = None,
    guidance: Sequence[str] = (),
) -> tuple[list[Task], list[Path], list[Rejection]]:
    """Up to `per_family` verified solver-anchored tasks per family; bundles are written under `out_dir`.

    Draws at most `max_draws` instances per family (default 3 x per_family); every discarded draw
    comes back as a rejection with its stage and reason."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    names = list(families) if families is not None else list(FAMILIES)
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown solver families {unknown}; choose from {sorted(FAMILIES)}")
    tasks: list[Task] = []
    dirs: list[Path] = []
    rejections: list[Rejection] = []
    for name in names:
        family = FAMILIES[name]
        made = 0
        for draw in range(max_draws or 3 * per_family):
            if made >= per_family:
                break
            rng = random.Random(int(content_hash({"family": name, "seed": seed, "draw": draw}), 16))
            prepared = prepare_instance(family, rng, ties=draw % 4 == 3)
            if isinstance(prepared, Rejection):
                rejections.append(prepared)
                continue
            built = build_task(
                sandbox,
                family,
                prepared,
                out,
                rng,
                verify_rollouts=verify_rollouts,
                llm=llm,
                guidance=guidance,
            )
            if isinstance(built, Rejection):
                rejections.append(built)
                continue
            tasks.append(built[0])
            dirs.append(built[1])
            made += 1
    return tasks, dirs, rejections


_GUIDED_SCHEMA = {
    "type": "object",
    "properties": {
        "plan": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
        "reasoning": {"type": "string"},
    },
    "required": ["plan"],
}


def synthesize_guided_tasks(
    sandbox: Sandbox,
    llm: LLM | None,
    *,
    families: Iterable[str] | None = None,
    per_family: int = 5,
    seed: int = 0,
    out_dir: str | Path,
    guidance: Sequence[str] = (),
) -> tuple[list[Task], list[Path], list[Rejection], list[str]]:
    """Solver-guided tasks: the model solves the instance from the solver-aware schema and blueprint.

    The model's plan is checked by the family's evaluator; a feasible plan becomes the reference,
    and the rubric accepts any plan with an equal or better objective (the reference is not proven
    optimal). Without a model this strategy is skipped and the note says so."""
    if llm is None:
        return [], [], [], [GUIDED_OFFLINE_NOTE]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tasks: list[Task] = []
    dirs: list[Path] = []
    rejections: list[Rejection] = []
    for name in list(families) if families is not None else list(FAMILIES):
        family = FAMILIES[name]
        for draw in range(per_family):
            rng = random.Random(
                int(content_hash({"family": name, "seed": seed, "draw": draw, "guided": True}), 16)
            )
            prepared = prepare_instance(family, rng)
            if isinstance(prepared, Rejection):
                rejections.append(prepared.model_copy(update={"kind": "solver_guided"}))
                continue
            prompt = (
                f"Solve this {family.title} instance. Contract: {family.contract.model_dump_json()}\n"
                f"Blueprint: {family.blueprint.model_dump_json()}\nData: {canonical_json(prepared.state)}\n"
                "Return the plan as {table: [keys set to the decision value]} for the decision tables "
                f"{family.blueprint.decisions}."
            )
            try:
                response = llm.complete(
                    [{"role": "user", "content": prompt}], schema=_GUIDED_SCHEMA, schema_name="plan"
                )
                raw = (response.data or {}).get("plan") or {}
            except Exception as exc:  # a model failure rejects this instance, never the run
                rejections.append(
                    _fail(family, "llm", f"the model did not return a plan: {exc}", "solver_guided")
                )
                continue
            plan = {
                t: sorted(str(k) for k in raw.get(t, []) if k in prepared.state.get(t, {}))
                for t in family.decision_tables()
            }
            result = family.evaluator(prepared.state, family.apply(prepared.state, plan))
            if not result["feasible"]:
                verdict(llm, "plan", False)
                rejections.append(
                    _fail(
                        family,
                        "guided_plan",
                        f"the model's plan is infeasible: {result['problems'][:2]}",
                        "solver_guided",
                    )
                )
                continue
            built = build_task(sandbox, family, prepared, out, rng, kind="solver_guided", reference=plan,
                               reference_objective=result["objective"], llm=llm, guidance=guidance)  # fmt: skip
            verdict(llm, "plan", not isinstance(built, Rejection))
            if isinstance(built, Rejection):
                rejections.append(built)
                continue
            tasks.append(built[0])
            dirs.append(built[1])
    return tasks, dirs, rejections, []
