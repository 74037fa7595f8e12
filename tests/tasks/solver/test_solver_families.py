"""Every solver family: the MILP, the environment around an instance, and the rubric's verdicts.

For each family a hand-perturbed plan that breaks one constraint and a feasible plan with a worse
objective are rejected by the task's verifier (run in the sandbox), while a different plan with the
same objective passes.
"""

from __future__ import annotations

import copy
import random
import re
from pathlib import Path

import pytest

from agentomnia.envs.state import state_violations
from agentomnia.rejection import Rejection
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.grading import Outcome, grade
from agentomnia.tasks.models import Task
from agentomnia.tasks.solver import (
    FAMILIES,
    Family,
    alternative_optimum,
    build_task,
    evaluate,
    screen_instance,
    solve,
    worse_plan,
)
from agentomnia.tasks.solver.families import TITLES, _companies, _namer, _people
from agentomnia.tasks.solver.synthesize import Prepared


def _tied_instance(family: Family) -> tuple[Prepared, object, object]:
    """An instance with a second optimal plan (ties make one likely within a few draws)."""
    for draw in range(60):
        state = family.generate(random.Random(draw), ties=True)
        prepared = screen_instance(family, state, ties=True)
        if isinstance(prepared, Rejection):
            continue
        model = family.model(prepared.state)
        best = solve(model)
        alt = alternative_optimum(model, best)
        if alt.status == "optimal":
            return prepared, model, alt
    raise AssertionError(f"{family.name}: no tied instance in 60 draws")


def _infeasible_flip(family: Family, model, best) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    for j in range(len(model.binaries)):
        values = list(best.values)
        values[j] = 1 - values[j]
        feasible, _ = evaluate(model, values)
        if not feasible:
            return family.plan_from_refs(r for r, v in zip(model.binaries, values, strict=True) if v == 1)
    raise AssertionError(f"{family.name}: every single flip stays feasible")


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_rubric_accepts_equal_rejects_worse_and_infeasible(
    name: str, sandbox: Sandbox, tmp_path: Path
) -> None:
    family = FAMILIES[name]
    prepared, model, alt = _tied_instance(family)
    built = build_task(sandbox, family, prepared, tmp_path, random.Random(1))
    assert not isinstance(built, Rejection), built
    task, folder = built
    assert task.kind == "solver_anchored"
    assert {p.name for p in folder.iterdir()} >= {
        "spec.json",
        "env.py",
        "tools.json",
        "s0.json",
        "verification.json",
    }
    s0 = task.init_config

    def verdict(plan: dict[str, list[str]]) -> bool | None:
        return sandbox.run_check(task.verifier_code or "", s0, family.apply(s0, plan)).passed

    best = solve(model)  # type: ignore[arg-type]
    assert verdict(prepared.optimum) is True
    alt_plan = family.plan_from_refs(alt.chosen)  # type: ignore[attr-defined]
    assert alt_plan != prepared.optimum and alt.objective == pytest.approx(best.objective)  # type: ignore[attr-defined]
    assert verdict(alt_plan) is True, "an equally good but different plan must pass"
    worse = worse_plan(model, best)  # type: ignore[arg-type]
    assert worse.status == "optimal"
    assert verdict(family.plan_from_refs(worse.chosen)) is False, (
        "a feasible plan with a worse objective must fail"
    )
    assert verdict(_infeasible_flip(family, model, best)) is False, "a plan breaking one constraint must fail"
    # moving the goalposts: editing the data instead of the plan fails too
    tampered = family.apply(s0, prepared.optimum)
    table, key, field = next(
        (t, k, f)
        for t in sorted(tampered)
        if isinstance(tampered[t], dict)
        for k in sorted(tampered[t])
        for f, v in tampered[t][k].items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    )
    tampered[table][key][field] += 1
    assert sandbox.run_check(task.verifier_code or "", s0, tampered).passed is False


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_instance_state_is_valid_and_solver_beats_or_matches_greedy(name: str) -> None:
    family = FAMILIES[name]
    spec = family.spec()
    for seed in range(20):  # some draws are infeasible by design (they are discarded in synthesis)
        state = family.generate(random.Random(seed))
        assert state_violations(spec, state) == []
        best = solve(family.model(state))
        if best.status == "optimal":
            break
    assert best.status == "optimal" and best.objective is not None
    ours = family.evaluator(state, family.apply(state, family.plan_from_refs(best.chosen)))
    assert ours["feasible"] and ours["objective"] == pytest.approx(best.objective)
    greedy = family.evaluator(state, family.apply(state, family.baseline(state)))
    if greedy["feasible"]:
        assert (
            greedy["objective"] <= best.objective + 1e-6
            if family.sense == "max"
            else greedy["objective"] >= best.objective - 1e-6
        )


def test_blueprint_traces_every_constraint_to_contract_fields() -> None:
    for family in FAMILIES.values():
        tables = {e.table for e in family.entities}
        assert family.blueprint.objective.role == "objective"
        assert any(c.role == "implicit" for c in family.blueprint.constraints), family.name
        for trace in (family.blueprint.objective, *family.blueprint.constraints):
            assert trace.fields and all(f.split(".")[0] in tables for f in trace.fields), (
                family.name,
                trace.id,
            )
        assert all(f.field.split(".")[0] in tables for f in family.contract.fields)


def test_degenerate_and_infeasible_instances_are_discarded_with_reasons() -> None:
    knapsack = FAMILIES["knapsack"]
    state = knapsack.generate(random.Random(3))
    state["programs"]["PRG-001"]["budget"] = 10_000_000.0
    state["programs"]["PRG-001"]["max_per_theme"] = 99
    rejected = screen_instance(knapsack, state)
    assert isinstance(rejected, Rejection) and rejected.stage == "degenerate"
    procurement = FAMILIES["procurement_mix"]
    state = procurement.generate(random.Random(3))
    first = sorted(state["requirements"])[0]
    state["requirements"][first]["minimum"] = 10_000
    rejected = screen_instance(procurement, state)
    assert isinstance(rejected, Rejection) and rejected.stage == "solver" and "infeasible" in rejected.reason


def test_reference_calls_reach_the_optimum_and_grade_passes(sandbox: Sandbox, tmp_path: Path) -> None:
    family = FAMILIES["assignment"]
    prepared = screen_instance(family, family.generate(random.Random(11)))
    assert isinstance(prepared, Prepared)
    built = build_task(sandbox, family, prepared, tmp_path, random.Random(2))
    assert not isinstance(built, Rejection), built
    task: Task = built[0]
    from agentomnia.sandbox.bundle import Bundle

    session = sandbox.open(Bundle.load(built[1]), task.init_config)
    results = session.call_many([(c.tool, c.args) for c in task.reference_calls])
    final = session.state()
    session.close()
    assert all(r.ok for r in results)
    runner = lambda code, i, f: sandbox.run_check(code, i, f).passed  # noqa: E731
    answer = {family.objective_field: prepared.artifact.objective}
    assert grade(task, Outcome(final_state=final, answer=answer), verifier=runner).passed
    assert not grade(
        task, Outcome(final_state=copy.deepcopy(task.init_config), answer=answer), verifier=runner
    ).passed
    assert all(c.sources for c in task.reference_calls)


PLACEHOLDER = re.compile(r"\b(?:Supply|Store|Shift|Bundle|study|Drop-off) \d+\b|^Store ")


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_instances_name_people_companies_and_things_as_a_person_would(name: str) -> None:
    """Names are drawn, not numbered: distinct people by first name, companies that read as one name,
    titles about their theme; the same draw gives the same names, and naming leaves the numbers alone."""
    family = FAMILIES[name]
    for draw in range(8):
        state = family.generate(random.Random(draw))
        assert family.generate(random.Random(draw)) == state
        texts = [
            v for rows in state.values() for row in rows.values() for v in row.values() if isinstance(v, str)
        ]
        assert not [t for t in texts if PLACEHOLDER.search(t)], texts
        for table in ("drivers", "employees"):
            if table in state:
                firsts = [row["name"].split()[0] for row in state[table].values()]
                assert len(set(firsts)) == len(firsts) and all(
                    " " in row["name"] for row in state[table].values()
                )
        for row in state.get("suppliers", {}).values():
            assert "," not in row["name"] and " and " not in row["name"]
        for row in state.get("proposals", {}).values():
            assert row["title"] in TITLES[row["theme"]] or row["title"].endswith("(phase 2)")


def test_naming_draws_nothing_from_the_instance_generator() -> None:
    rng = random.Random(11)
    before = rng.getstate()
    names = _people(_namer(rng), 5) + _companies(_namer(rng), 3)
    assert rng.getstate() == before and len(set(names)) == 8
