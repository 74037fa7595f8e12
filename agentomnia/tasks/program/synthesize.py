"""Program-based task synthesis on one environment bundle (task-program co-synthesis).

For each candidate plan (offline templates; with a model, generated programs first): harden the
initial state for it, debug the program in the sandbox, require at least one loop, one branch and
one real change, check trace-state alignment, re-execute from the initial state for the canonical
trajectory and answer, render the public query and check it for leakage, generate the verifier and
rubric, and run the oracle. Every candidate that falls out becomes a rejection with its stage.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentomnia.envs.spec import EnvSpec
from agentomnia.llm import LLM
from agentomnia.llm.ledger import fallback, verdict
from agentomnia.records import canonical_json, content_hash
from agentomnia.rejection import Rejection
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.grading import diff_states
from agentomnia.tasks.models import Task, task_rejection
from agentomnia.tasks.program.difficulty import harden
from agentomnia.tasks.program.execute import (
    Execution,
    SessionSlot,
    alignment_problems,
    canonical_run,
    control_flow,
    debug_program,
    provenance,
)
from agentomnia.tasks.program.plan import ProgramPlan
from agentomnia.tasks.program.query import query_problems, render_query
from agentomnia.tasks.program.templates import propose_plans
from agentomnia.tasks.program.verifier import check_program_task, rubric_for, verifier_code
from agentomnia.taxonomy import Coordinate

CAPABILITIES = ("code_programmatic", "data_analysis", "information_gathering", "state_management", "tool_use")
_LEVERS = {
    "filter_write": ["iterate_over_items", "conditional_branch", "filter_chain"],
    "join_write": ["iterate_over_items", "conditional_branch", "multi_entity_join", "cross_reference_chain"],
    "aggregate_pick": ["iterate_over_items", "conditional_branch", "aggregation_required", "boundary_tie"],
    "llm": ["iterate_over_items", "conditional_branch"],
}
_OPERATOR_ATOMS = {
    "boundary_tie": ("structured_information", "boundary_tie"),
    "distractor_injection": ("long_context_evidence", "distractor_injection"),
    "cross_entity_evidence": ("structured_information", "multi_entity_join"),
}


def _coordinate(spec: EnvSpec, template: str, applied: list[str]) -> Coordinate:
    atoms = {"dynamic_planning"}
    if template in ("aggregate_pick", "join_write"):
        atoms.add("structured_information")
    atoms.update(_OPERATOR_ATOMS[a][0] for a in applied if a in _OPERATOR_ATOMS)
    return Coordinate.for_domain(spec.coordinate.taxonomy_id, CAPABILITIES, sorted(atoms), "dynamic_planning")


_LLM_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "intent": {"type": "string"}, "program": {"type": "string"}},
    "required": ["query", "intent", "program"],
}


def propose_with_model(
    llm: LLM, spec: EnvSpec, state: dict[str, Any], rng: random.Random, guidance: Sequence[str] = ()
) -> dict[str, str] | str:
    """A generated (query, intent, program) triple, or why the model gave nothing usable. `guidance` is
    a PRD-guided round's task guidance (the PRDs' Part II prose): what the new tasks should exercise."""
    tools = [t.openai() for t in spec.tools]
    sample = {t: dict(sorted(recs.items())[:3]) for t, recs in state.items() if isinstance(recs, dict)}
    prompt = (
        "Write a task for an agent that uses these tools, together with a Python solution program.\n"
        "The program defines solve(call); call(tool_name, **arguments) returns {'ok','data','error'}. It must loop over "
        "a query result, branch on state, make at least one write, and return a dict answer with the key fields.\n"
        "The query is a natural request: no tool names, parameter keys, ids or step lists.\n"
        f"Tools: {canonical_json(tools)[:12000]}\nState sample: {canonical_json(sample)[:6000]}\nVariation: {rng.randint(0, 9999)}"
    )
    if guidance:  # where the evaluated agent fails, in the round's product requirements
        prompt += "\nWhat the task should exercise, from the round's product requirements:\n" + "\n".join(
            f"- {g}" for g in guidance
        )
    try:
        data = llm.complete(
            [{"role": "user", "content": prompt}], schema=_LLM_SCHEMA, schema_name="program_task"
        ).data
    except Exception as exc:  # a model failure costs one candidate, never the run
        return f"the model returned no usable program: {type(exc).__name__}: {exc}"
    if not isinstance(data, dict) or not all(
        isinstance(data.get(k), str) for k in ("query", "intent", "program")
    ):
        return "the model returned no usable program: query, intent and program must all be text"
    return {k: data[k] for k in ("query", "intent", "program")}


def synthesize_program_tasks(
    bundle_dir: str | Path,
    sandbox: Sandbox,
    *,
    n: int = 2,
    seed: int = 0,
    llm: LLM | None = None,
    max_candidates: int = 10,
    repair_budget: int = 3,
    guidance: Sequence[str] = (),
) -> tuple[list[Task], list[Rejection]]:
    """Up to `n` verified program tasks on one bundle, and the candidates rejected on the way (with a
    model, `guidance` conditions its proposals: a PRD-guided round's task guidance)."""
    folder = Path(bundle_dir)
    bundle = Bundle.load(folder)
    if bundle.spec is None:
        raise ValueError(f"bundle {folder} has no spec.json; program synthesis composes plans from the spec")
    spec = EnvSpec.model_validate(bundle.spec)
    env_id = str((bundle.verification or {}).get("env_id") or folder.name)
    s0: dict[str, Any] = dict(bundle.s0)
    rng = random.Random(int(content_hash({"env": env_id, "seed": seed}), 16))
    tasks: list[Task] = []
    rejections: list[Rejection] = []

    def reject(stage: str, reason: str) -> None:
        rejections.append(task_rejection(env_id=env_id, kind="program", stage=stage, reason=reason[:400]))

    candidates: list[tuple[ProgramPlan | None, dict[str, str] | None]] = []
    if llm is not None:
        for _ in range(max(1, n)):
            offer = propose_with_model(llm, spec, s0, rng, guidance)
            if isinstance(offer, str):
                reject("propose", offer)
            else:
                candidates.append((None, offer))
    candidates += [(p, None) for p in propose_plans(spec, s0, rng)]
    if not candidates:
        reject(
            "propose",
            "no entity can be listed and written by key with a splitting rule; no program template fits",
        )
    signatures: set[str] = set()
    # one session for every run on this bundle, reset to each run's initial state
    with SessionSlot(sandbox, bundle) as slot:
        for plan, proposal in candidates[: max_candidates + (n if llm else 0)]:
            if len(tasks) >= n:
                break
            started = time.perf_counter()
            applied: list[str] = []
            init = s0
            notes: list[str] = []
            if plan is not None:
                hardened = harden(spec, s0, plan, rng)
                plan, init, applied, notes = hardened.plan, hardened.state, hardened.applied, hardened.notes
                outcome = debug_program(
                    sandbox, bundle, spec, init, plan=plan, budget=repair_budget, slot=slot
                )
            else:
                assert proposal is not None
                problems = query_problems(proposal["query"], spec)
                if problems:
                    reject("leakage", f"generated query leaks: {problems[0]}")
                    verdict(llm, "program_task", False)
                    continue
                outcome = debug_program(
                    sandbox, bundle, spec, init, source=proposal["program"], llm=llm, budget=repair_budget,
                    slot=slot,
                )  # fmt: skip
            from_model = proposal is not None
            if isinstance(outcome, str):
                reject("debug", outcome)
                verdict(llm, "program_task", False, from_model)
                continue
            task = _task(spec, env_id, sandbox, bundle, init, outcome, proposal, applied, notes, reject, slot)
            if task is None:
                verdict(llm, "program_task", False, from_model)
                continue
            signature = content_hash({"program": task.reference_program, "init": task.init_config})
            if signature in signatures:
                reject("dedup", "same program and initial state as an earlier task")
                verdict(llm, "program_task", False, from_model)
                continue
            report = check_program_task(task, sandbox, bundle, slot=slot)
            if not report.passed:
                reject("oracle", "; ".join(report.details) or "oracle failed")
                verdict(llm, "program_task", False, from_model)
                continue
            verdict(llm, "program_task", True, from_model)
            fallback(llm, "program_task", not from_model)  # the offline proposer's task, in llm mode
            signatures.add(signature)
            metadata = {**task.metadata, "seconds": round(time.perf_counter() - started, 3)}
            tasks.append(Task.model_validate(task.model_dump() | {"metadata": metadata, "id": ""}))
    return tasks, rejections


def _task(
    spec: EnvSpec,
    env_id: str,
    sandbox: Sandbox,
    bundle: Bundle,
    init: dict[str, Any],
    execution: Execution,
    proposal: dict[str, str] | None,
    applied: list[str],
    notes: list[str],
    reject: Any,
    slot: SessionSlot | None = None,
) -> Task | None:
    flow = control_flow(execution.source)
    if not flow.ok:
        reject(
            "control_flow",
            f"the program has {flow.loops} loops and {flow.branches} branches; it needs at least one of each",
        )
        return None
    diff = [d for d in diff_states(init, execution.final_state) if d["table"] != "now"]
    if not diff:
        reject("degenerate", "the program changes nothing in this state: the task would be a pure read")
        return None
    misaligned = alignment_problems(spec, execution.calls, init, execution.final_state)
    if misaligned:
        reject("alignment", f"trace and state disagree: {misaligned[0]}")
        return None
    canonical = canonical_run(sandbox, bundle, init, execution, slot=slot)
    if isinstance(canonical, str):
        reject("replay", canonical)
        return None
    answer = canonical.answer if isinstance(canonical.answer, dict) else {"result": canonical.answer}
    plan = canonical.plan
    query = proposal["query"] if proposal else render_query(spec, plan)  # type: ignore[arg-type]
    leaks = query_problems(query, spec)
    if leaks:
        reject("leakage", f"query leaks: {leaks[0]}")
        return None
    template = plan.template if plan else "llm"
    internal: dict[str, Any] = (
        plan.model_dump(mode="json")
        if plan
        else {"template": "llm", "intent": proposal["intent"] if proposal else ""}
    )
    internal["answer_spec"] = {
        "selected": "changed", "count": "count", "computed": [f for f in ("total", "average", "considered") if f in answer],
        "outcomes": "refused (with reasons) and already (no change needed)", "fallback": "fallback_used, fallback_reason",
    }  # fmt: skip
    internal["hardening"] = {"applied": applied, "notes": notes}
    internal["repairs"] = [a.model_dump() for a in canonical.attempts]
    used = {c.tool for c in canonical.calls}
    touched = {spec.tool(name).entity for name in used if name in {t.name for t in spec.tools}}
    return Task(
        env_id=env_id,
        kind="program",
        coordinate=_coordinate(spec, template, applied),
        init_config=init,
        query=query,
        internal_spec=internal,
        reference_calls=tuple(provenance(canonical.calls, init)),
        reference_program=canonical.source,
        expected_answer=answer,
        expected_diff=tuple(diff),
        rubric=rubric_for(plan, answer),
        verifier_code=verifier_code(init, canonical.final_state),
        # the tools it used plus their same-entity siblings, so choosing among them stays part of the task
        candidate_tools=tuple(sorted(used | {t.name for t in spec.tools if t.entity in touched})),
        metadata={
            "template": template, "loops": flow.loops, "branches": flow.branches, "calls": len(canonical.calls),
            "changes": len(diff), "repairs": sum(1 for a in canonical.attempts if a.repair),
            "levers": _LEVERS[template] + [_OPERATOR_ATOMS[a][1] for a in applied if a in _OPERATOR_ATOMS],
            "hardening": applied, "fallback_used": bool(answer.get("fallback_used")),
        },
    )  # fmt: skip
