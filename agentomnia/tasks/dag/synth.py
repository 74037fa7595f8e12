"""DAG task synthesis end to end, and the re-check of a stored task (paper §4.4.1).

    tasks, rejected = synthesize_dag_tasks("envs/<env_id>", sandbox, variant="dag-challenge", n=8)
    tasks, rejected = synthesize_dag_variants("envs/<env_id>", sandbox, [("dag-standard", 9), ("dag-challenge", 1)])
    result = check_task(tasks[0], sandbox, Bundle.load("envs/<env_id>"))

Per candidate: sample a tool group from the dependency graph, harden a copy of s0 around the records
the group will touch, run the group in the sandbox from that state (arguments grounded, provenance
kept), describe it (templates offline; a model may rephrase in LLM mode, and its text must pass the
same checks), build an outcome rubric, and keep the task only if the end state is valid, the answers
do not depend on call order, the description leaks nothing its variant forbids, the trajectory is
consistent with the description, and the oracle check holds (reference 1.0, empty run below it).
Every candidate that fails becomes a `Rejection` with its stage and reason.

Cost: the per-environment work (bundle, spec, tool graph, one sandbox session) is shared by every
variant of one call; chains that no state lets run are left out of sampling, and the record a
chain opens on is picked among those the next step can go on from, so fewer candidates die
halfway; states derived from a valid s0 are re-checked only where they changed.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import networkx as nx
from pydantic import BaseModel, Field

from agentomnia.envs.spec import EnvSpec
from agentomnia.envs.state import state_violations
from agentomnia.llm import LLM
from agentomnia.llm.ledger import fallback, verdict
from agentomnia.processes import own_sandbox
from agentomnia.records import content_hash
from agentomnia.rejection import Rejection
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.sandbox.session import Session
from agentomnia.tasks.dag.generate import (
    Generated,
    Generator,
    Reject,
    run_group,
    runnable,
    ungroundable_tools,
)
from agentomnia.tasks.dag.graph import build_tool_graph, model_edges
from agentomnia.tasks.dag.interaction import make_multi_turn
from agentomnia.tasks.dag.phrasing import answer_format
from agentomnia.tasks.dag.profiles import RefinementProfile, profile_for
from agentomnia.tasks.dag.sampling import ToolGroup, chain_pool, sample_groups
from agentomnia.tasks.dag.variations import profile_for_directives, variation_metadata
from agentomnia.tasks.families import DAG, is_challenging_kind
from agentomnia.tasks.grading import Outcome, diff_states, empty_outcome, grade
from agentomnia.tasks.hardening import (
    LEVERS,
    HardeningResult,
    apply_all,
    conflicting_target,
    has_availability,
    violations_since,
)
from agentomnia.tasks.leakage import leakage_problems
from agentomnia.tasks.models import ReferenceCall, Task, task_rejection
from agentomnia.tasks.quality import consistency_problems
from agentomnia.tasks.rubric import build_rubric
from agentomnia.tasks.wording import description_request, missing_values, opening, rephrase
from agentomnia.taxonomy import Coordinate
from agentomnia.taxonomy.axes import lever

if TYPE_CHECKING:
    from agentomnia.directives import SynthesisDirectives

EnvInput = str | Path | Bundle


class TaskCheckResult(BaseModel):
    task_id: str
    kind: str
    replay_ok: bool
    oracle_pass: bool
    empty_fail: bool
    consistency: list[str] = Field(default_factory=list)
    leakage: list[str] = Field(default_factory=list)
    state: list[str] = Field(default_factory=list)
    detail: str = ""

    @property
    def passed(self) -> bool:
        return (
            self.replay_ok
            and self.oracle_pass
            and self.empty_fail
            and not self.consistency
            and not self.leakage
            and not self.state
        )


def load_env(env: EnvInput) -> tuple[Bundle, EnvSpec, str]:
    """(bundle, spec, env id) from a bundle folder or a loaded bundle that carries its spec."""
    bundle = env if isinstance(env, Bundle) else Bundle.load(env)
    if bundle.spec is None:
        raise ValueError("the bundle has no spec.json; DAG synthesis needs the environment's spec")
    spec = EnvSpec.model_validate(bundle.spec)
    return bundle, spec, content_hash({"spec": spec.id, "source": bundle.source, "s0": bundle.s0})


@dataclass(frozen=True)
class EnvContext:
    """What every variant on one environment shares: the loaded bundle, its spec and id, the tool
    graph, and whether s0 keeps every invariant (then a state derived from it is re-checked only
    where it changed)."""

    bundle: Bundle
    spec: EnvSpec
    env_id: str
    graph: nx.MultiDiGraph
    s0_valid: bool
    ungroundable: Mapping[str, str]  # tools no state lets `Generator.ground` fill, and why

    @classmethod
    def load(cls, env: EnvInput, llm: LLM | None = None) -> EnvContext:
        """`llm`: a model that proposes dependency edges beside the schema's (checked, then filtered
        with the others)."""
        bundle, spec, env_id = load_env(env)
        graph, _report = build_tool_graph(spec, model_edges(llm, spec) if llm is not None else ())
        valid = not state_violations(spec, bundle.s0)
        return cls(bundle, spec, env_id, graph, valid, ungroundable_tools(spec))


def _harden(
    spec: EnvSpec,
    s0: Mapping[str, Any],
    group: ToolGroup,
    profile: RefinementProfile,
    rng: random.Random,
    *,
    s0_valid: bool = False,
) -> tuple[dict[str, Any], list[HardeningResult], dict[str, list[str]]]:
    """Harden s0 around the group's first tool's entity; returns (state, results, preferred keys)."""
    anchor = spec.tool(group.chains[0][0]).entity if group.chains else None
    touched = {spec.tool(t).entity for t in group.tools}
    steps: list[tuple[str, dict[str, Any]]] = []
    for name in profile.hardening:
        if name in ("multi_candidate", "distractor_injection"):
            steps.append((name, {"entity": anchor} if anchor else {}))
        elif name == "aggregatable_history":
            children = [
                e.name
                for e in spec.entities
                if e.name in touched and any(a.type == "ref" for a in e.attributes)
            ]
            steps.append((name, {"entity": rng.choice(sorted(children))} if children else {}))
        elif name in ("boundary_tie", "mutable_objects"):
            options = sorted(touched)
            steps.append((name, {"entity": rng.choice(options)} if options else {}))
        elif name == "unavailable_entities":
            # out-of-service records only matter where the task's tools look
            options = sorted(t for t in touched if has_availability(spec.entity(t)))
            steps.append((name, {"entity": rng.choice(options)} if options else {}))
        elif name == "conflicting_states":
            options = [anchor] if anchor and conflicting_target(spec, spec.entity(anchor)) else []
            options = options or sorted(t for t in touched if conflicting_target(spec, spec.entity(t)))
            steps.append((name, {"entity": options[0]} if options else {}))
        else:
            steps.append((name, {}))
    steps = [(n, p) for n, p in steps if _applicable(spec, n, p)]
    state, results = apply_all(spec, s0, rng, steps, valid=s0_valid)
    preferred: dict[str, list[str]] = {}
    for r in results:
        if not r.applied:
            continue
        facts = r.facts
        if "parent" in facts and "parent_key" in facts:
            preferred.setdefault(str(facts["parent"]), []).append(str(facts["parent_key"]))
        if "entity" in facts and "key" in facts:
            preferred.setdefault(str(facts["entity"]), []).insert(0, str(facts["key"]))
        elif "entity" in facts and "keys" in facts:
            preferred.setdefault(str(facts["entity"]), []).extend(str(k) for k in facts["keys"])
        if "available" in facts:
            # steer the task to records still in service: acting on a cancelled one would reward
            # exactly the carelessness the out-of-service records are there to catch
            available = [str(k) for k in facts["available"]]
            rng.shuffle(available)
            preferred.setdefault(str(facts["entity"]), []).extend(available)
    return state, results, preferred


def _applicable(spec: EnvSpec, name: str, params: Mapping[str, Any]) -> bool:
    entity = params.get("entity")
    if entity is None:
        return True
    if name == "mutable_objects":
        return any(r.kind == "transition" and r.entity == entity for r in spec.rules)
    if name == "multi_candidate":
        return spec.entity(str(entity)).label_attribute is not None
    if name == "unavailable_entities":
        return has_availability(spec.entity(str(entity)))
    if name == "conflicting_states":
        return conflicting_target(spec, spec.entity(str(entity)))
    return True


def _writes_to_unavailable(out: Generated, hardening: Sequence[HardeningResult]) -> str | None:
    """Why the reference must not stand, if one of its writes involves a record taken out of service:
    such a task would reward acting without checking availability, the opposite of its purpose."""
    dead = {str(k) for r in hardening if r.applied for k in r.facts.get("unavailable", ())}
    for c in out.calls:
        hit = sorted(dead & {v for v in c.args.values() if isinstance(v, str)})
        if c.tool.kind == "write" and hit:
            return f"{c.tool.name} acts on {hit[0]}, which the state marks out of service"
    return None


def _compose(spec: EnvSpec, out: Generated, profile: RefinementProfile, rng: random.Random) -> str:
    """The request: an opening in the user's voice, the steps and questions in the order they arise
    (`Generated.clauses`), and the answer format in one plain sentence."""
    voice = opening(rng, spec.coordinate.split, spec.coordinate.l2, indirect=profile.indirect)
    clauses = list(out.clauses)
    if clauses and clauses[0].startswith("Also "):  # nothing came before it to add to
        clauses[0] = clauses[0][5].upper() + clauses[0][6:]
    parts = [voice, *clauses]
    if out.reports:
        parts.append(answer_format(rng, [r.field for r in out.reports]))
    text = " ".join(p.strip() for p in parts if p.strip())
    # a sentence that ends on a quoted sentence ends there: "... set on hold.'", never "... hold.'."
    return _STOP_AFTER_QUOTE.sub(r"\1'", text)


_STOP_AFTER_QUOTE = re.compile(r"([.!?])'\.(?=\s|$)")


def _coordinate(
    spec: EnvSpec, out: Generated, profile: RefinementProfile, used: list[HardeningResult]
) -> Coordinate:
    writes = [c for c in out.calls if c.tool.kind == "write"]
    caps = {"tool_use", "information_gathering"} if len(writes) < len(out.calls) else {"tool_use"}
    if writes:
        caps.add("state_management")
    if out.dag.virtual:
        caps.add("data_analysis")
    if len(out.dag.chains) > 1 or out.dag.depth >= 4:
        caps.add("planning_decision")
    if profile.indirect:
        caps.add("task_understanding")
    atoms: list[str] = ["tool_parameter_grounding"]
    primary = "tool_parameter_grounding"
    if any(len(c) >= 2 for c in out.dag.chains):
        atoms.append("dynamic_planning")
        primary = "dynamic_planning"
    if out.dag.virtual or any(c.tool.op == "aggregate" for c in out.calls):
        atoms.append("structured_information")
    if profile.indirect:
        atoms.append("ambiguous_goal")
    for r in used:
        atom, _lever = lever(LEVERS[r.operator])
        atoms.append(atom.id)
    if used:
        primary = lever(LEVERS[used[0].operator])[0].id
    elif profile.indirect:
        primary = "ambiguous_goal"
    return Coordinate.for_domain(spec.coordinate.taxonomy_id, sorted(caps), sorted(set(atoms)), primary)


def _created_fields(
    spec: EnvSpec, out: Generated, final: Mapping[str, Any]
) -> dict[str, list[dict[str, Any]]]:
    created: dict[str, list[dict[str, Any]]] = {}
    for c in out.calls:
        if c.tool.op != "create" or not isinstance(c.data, dict):
            continue
        e = spec.entity(c.tool.entity)
        record = (final.get(e.table) or {}).get(c.data.get(e.key))
        if not isinstance(record, dict):
            continue  # created and later removed: the absence is all that remains
        attrs = [c.tool.binding.get("fields", {}).get(p, p) for p in c.args]
        # what later steps did to the new record (a dispute's status and note) is asked for too;
        # dates the clock stamps are left out, as they follow the order of the calls
        born = c.data  # the record as the create returned it
        attrs += [
            a.name
            for a in e.attributes
            if a.type not in ("date", "datetime")
            and a.name in born
            and record.get(a.name) != born.get(a.name)
        ]
        created.setdefault(e.table, []).append(
            {a: record.get(a) for a in dict.fromkeys(attrs) if a in record}
        )
    return created


def build_task(
    spec: EnvSpec,
    env_id: str,
    bundle: Bundle,
    sandbox_session: Session,
    graph: nx.MultiDiGraph,
    group: ToolGroup,
    profile: RefinementProfile,
    rng: random.Random,
    *,
    llm: LLM | None = None,
    seed: int = 0,
    spares_from: Sequence[tuple[str, ...]] = (),
    directives: SynthesisDirectives | None = None,
    s0_valid: bool = False,
) -> Task:
    """One task from one group, or Reject with the stage that failed.

    `directives` only labels the task (round, PRD ids, variations in effect); the profile passed in
    must already carry them (`profile_for_directives`). `s0_valid` says the bundle's s0 keeps every
    invariant (`EnvContext.s0_valid`), so states derived from it are re-checked only where they change.
    """
    state, hardening, preferred = _harden(spec, bundle.s0, group, profile, rng, s0_valid=s0_valid)
    sandbox_session.reset(state)
    wording = random.Random(f"wording:{rng.random()}")  # one draw: phrasing never steers generation
    gen = Generator(
        spec, sandbox_session, graph, rng, allow_ids=profile.allow_ids, preferred=preferred, wording=wording
    )
    spares = [c for c in spares_from if not set(c) & group.tools][:4]
    out = run_group(
        gen,
        group,
        virtual=profile.virtual,
        stack=profile.stack_virtual,
        spares=spares,
        min_chains=profile.chains[0],
    )
    final = sandbox_session.state()
    broken = violations_since(spec, state, final, start_valid=s0_valid)
    if broken:
        raise Reject("state", f"the end state breaks an invariant: {broken[0]}")
    dead = _writes_to_unavailable(out, hardening)
    if dead:
        raise Reject("hardening", dead)
    gen.recheck_answers()
    forbid = {"forbid_ids": not profile.allow_ids}
    query = _compose(spec, out, profile, wording)
    phrased_by = "template"
    if llm is not None:
        guidance = directives.task_guidance if directives is not None else ()
        text = rephrase(llm, query, guidance, indirect=profile.indirect)
        # a rewrite that gives away an id or a reference, or drops a value the task rests on, is refused
        leaky = text is not None and bool(
            leakage_problems(text, spec, **forbid) or missing_values(query, text)
        )
        if text is not None and not leaky:
            query, phrased_by = text, "llm"
        asked = description_request(profile.indirect)
        verdict(llm, asked, not leaky, text is not None)
        fallback(llm, asked, phrased_by == "template")  # the composed wording stands
    leaks = leakage_problems(query, spec, **forbid)
    if leaks:
        raise Reject("leakage", leaks[0])
    answer = {r.field: r.value for r in out.reports}
    # a value said in the request (a name quoted to find its record) is no answer to work out
    given = [
        f
        for f, v in answer.items()
        if isinstance(v, str)
        and len(v) >= 3
        and re.search(rf"(?<!\w){re.escape(v)}(?!\w)", query, re.IGNORECASE)
    ]
    if given:
        raise Reject("leakage", f"the request states the answer to {given[0]!r} ({answer[given[0]]!r})")
    texts = {r.field: r.text for r in out.reports}
    rubric = build_rubric(spec, state, final, answer, texts, created_fields=_created_fields(spec, out, final))
    touched = {key for c in out.calls if c.focus for key in [c.focus[1]]}
    used = [r for r in hardening if r.applied and touched & set(r.targets)]
    diff = [d for d in diff_states(state, final) if isinstance(state.get(d["table"]), Mapping)]
    labels: dict[str, Any] = {}
    if directives is not None:
        labels = variation_metadata(directives, hardening)
    task = Task(
        env_id=env_id,
        kind=profile.variant,
        coordinate=_coordinate(spec, out, profile, used),
        init_config=state,
        query=query,
        internal_spec={
            "objectives": out.objectives,
            "dag": out.dag.summary(),
            "group": group.model_dump(),
            "chains_run": out.chains_run,
            "hardening": [r.model_dump(exclude={"state"}) for r in hardening],
            "answers": texts,
        },
        reference_calls=tuple(
            ReferenceCall(tool=c.tool.name, args=c.args, sources=c.sources) for c in out.calls
        ),
        expected_answer=answer,
        expected_diff=tuple(diff),
        rubric=rubric,
        candidate_tools=tuple(t.name for t in spec.tools),
        metadata={
            "variant": profile.variant,
            "calls": len(out.calls),
            "chain_lengths": [len(c) for c in out.dag.chains],
            "depth": out.dag.depth,
            "virtual": [v.type for v in out.dag.virtual],
            "scattered": len(group.scattered),
            "hardening_used": [r.operator for r in used],
            "phrased_by": phrased_by,
            "seed": seed,
            **labels,
        },
    )
    problems = consistency_problems(task, spec)
    if problems:
        raise Reject("consistency", problems[0])
    calls = [(c.tool.name, dict(c.args)) for c in out.calls]
    if not grade(task, Outcome(final_state=final, answer=answer, calls=calls)).passed:
        raise Reject("oracle", "the reference run does not score 1.0 on its own rubric")
    if grade(task, empty_outcome(task)).passed:
        raise Reject("oracle", "an empty run passes the rubric: it checks nothing the task asks for")
    return task


def synthesize_dag_tasks(
    env: EnvInput,
    sandbox: Sandbox,
    *,
    variant: str,
    n: int,
    seed: int = 0,
    llm: LLM | None = None,
    attempts_per_task: int | None = None,
    directives: SynthesisDirectives | None = None,
    multi_turn: float = 0.0,
) -> tuple[list[Task], list[Rejection]]:
    """Up to `n` verified DAG tasks on one environment, and every rejected candidate with its reason.

    About a `multi_turn` share of them is posed multi-turn: a detail of the request is withheld
    for the simulated user to give when asked (`interaction.make_multi_turn`).

    With `directives` (a PRD-guided round), the variant's profile is adjusted by the round's
    variations and every task records the round, its PRD ids and the variations in effect in its
    metadata. Deterministic for a fixed seed (and a fixed model cache in LLM mode). To make several
    variants on one environment, `synthesize_dag_variants` shares the per-environment work.
    """
    return synthesize_dag_variants(
        env, sandbox, [(variant, n)], seed=seed, llm=llm, attempts_per_task=attempts_per_task,
        directives=directives, multi_turn=multi_turn,
    )  # fmt: skip


def synthesize_dag_variants(
    env: EnvInput,
    sandbox: Sandbox,
    plan: Sequence[tuple[str, int]] | Mapping[str, int],
    *,
    seed: int = 0,
    llm: LLM | None = None,
    attempts_per_task: int | None = None,
    directives: SynthesisDirectives | None = None,
    multi_turn: float = 0.0,
) -> tuple[list[Task], list[Rejection]]:
    """`synthesize_dag_tasks` for every (variant, n) of `plan` on one environment, in plan order.

        tasks, rejected = synthesize_dag_variants(folder, box, [("dag-standard", 9), ("dag-challenge", 1)])

    The bundle is loaded, the tool graph built and a sandbox session opened once for all variants
    (each candidate resets the session to its own initial state). Each variant draws from its own
    generator, seeded as `synthesize_dag_tasks` seeds it, so the tasks and rejections are the same as
    calling it once per variant, only cheaper.
    """
    ctx = EnvContext.load(env, llm)
    entries = list(plan.items()) if isinstance(plan, Mapping) else list(plan)
    session: Session | None = None

    def opened() -> Session:
        nonlocal session
        if session is None:
            session = sandbox.open(ctx.bundle, ctx.bundle.s0)
        return session

    tasks: list[Task] = []
    rejected: list[Rejection] = []
    try:
        for variant, n in entries:
            kept, rej = _synthesize_variant(
                ctx, opened, variant=variant, n=n, seed=seed, llm=llm, attempts_per_task=attempts_per_task,
                directives=directives, multi_turn=multi_turn,
            )  # fmt: skip
            tasks += kept
            rejected += rej
    finally:
        if session is not None:
            session.close()
    return tasks, rejected


def _synthesize_variant(
    ctx: EnvContext,
    session: Callable[[], Session],
    *,
    variant: str,
    n: int,
    seed: int,
    llm: LLM | None,
    attempts_per_task: int | None,
    directives: SynthesisDirectives | None,
    multi_turn: float,
) -> tuple[list[Task], list[Rejection]]:
    spec, env_id, graph = ctx.spec, ctx.env_id, ctx.graph
    base = profile = profile_for(variant)
    if directives is not None:
        profile = profile_for_directives(profile, directives)
    rng = random.Random(f"{env_id}:{profile.variant}:{seed}")
    # longer groups fail more often (every call must succeed), so a Challenge task gets more tries;
    # compound tools refuse what their requirements across records rule out, which costs tries too
    tries = attempts_per_task or (14 if is_challenging_kind(profile.variant) else 6)
    if attempts_per_task is None and profile.chain_len[1] > base.chain_len[1]:
        tries += tries // 2  # a round that deepens the chains pays for it in failed runs
    pool = chain_pool(graph, rng, min_len=profile.chain_len[0], max_len=profile.chain_len[1])
    # a chain that cannot run in any state would only come back as a rejection: leave it out
    can_run = runnable(graph, ctx.ungroundable)
    pool = [c for c in pool if can_run(c)]
    draw = partial(
        sample_groups, graph, pool, chains=profile.chains, chain_len=profile.chain_len,
        scattered=profile.scattered, max_overlap=profile.max_overlap,
    )  # fmt: skip
    groups = draw(rng, n=max(n * tries, n + 4))
    # on an environment built around a seed's operations with the domain's tools beside them, groups
    # that call the seed's operations are tried first, from a draw of their own: the usual draw stays
    # as it was behind them, so a seed's operations that rarely run cost tries, never tasks
    seeded = {t.name for t in spec.tools if t.origin == "seed"}
    first: list[ToolGroup] = []
    if 0 < len(seeded) < len(spec.tools):
        own = random.Random(f"{env_id}:{profile.variant}:{seed}:seed-first")
        first = draw(own, n=n * max(2, tries // 3), prefer=seeded)
    candidates = [(f"s{i}", g) for i, g in enumerate(first)] + [(str(i), g) for i, g in enumerate(groups)]
    tasks: list[Task] = []
    rejected: list[Rejection] = []
    if not groups:
        rejected.append(
            task_rejection(
                env_id=env_id,
                kind=profile.variant,
                stage="sampling",
                reason="the dependency graph yields no chains of the profile's length",
            )
        )
        return tasks, rejected
    for index, group in candidates:
        if len(tasks) >= n:
            break
        group_rng = random.Random(f"{env_id}:{profile.variant}:{seed}:{index}")
        try:
            task = build_task(
                spec, env_id, ctx.bundle, session(), graph, group, profile, group_rng,
                llm=llm, seed=seed, directives=directives, s0_valid=ctx.s0_valid,
            )  # fmt: skip
        except Reject as exc:
            rejected.append(
                task_rejection(env_id=env_id, kind=profile.variant, stage=exc.stage, reason=exc.reason)
            )
            continue
        if multi_turn and group_rng.random() < multi_turn:
            task = make_multi_turn(task, group_rng) or task
        if all(t.id != task.id for t in tasks):
            tasks.append(task)
    return tasks, rejected


def check_task(task: Task, sandbox: Sandbox, bundle: Bundle, spec: EnvSpec | None = None) -> TaskCheckResult:
    """Replay the reference from the task's own initial state in a fresh session and re-run every check."""
    spec = spec or EnvSpec.model_validate(bundle.spec or {})
    session = sandbox.open(bundle, task.init_config)
    try:
        results = session.call_many([(c.tool, c.args) for c in task.reference_calls])
        final = session.state()
    finally:
        session.close()
    failed = [
        f"{c.tool}: {r.error.message if r.error else '?'}"
        for c, r in zip(task.reference_calls, results, strict=True)
        if not r.ok
    ]
    calls = [(c.tool, dict(c.args)) for c in task.reference_calls]
    reference = grade(task, Outcome(final_state=final, answer=dict(task.expected_answer), calls=calls))
    empty = grade(task, empty_outcome(task))
    forbid_ids = is_challenging_kind(task.kind)  # a Challenge task names records only by description
    detail = "; ".join(f"{i.id}: {i.detail}" for i in reference.items if i.passed is not True)[:500]
    return TaskCheckResult(
        task_id=task.id,
        kind=task.kind,
        replay_ok=not failed,
        oracle_pass=reference.passed,
        empty_fail=not empty.passed,
        consistency=consistency_problems(task, spec),
        leakage=leakage_problems(task.query, spec, forbid_ids=forbid_ids),
        state=state_violations(spec, final)[:5],
        detail=("replay failed at " + failed[0] if failed else detail),
    )


def summarize_tasks(tasks: list[Task], rejected: list[Rejection]) -> dict[str, Any]:
    """The numbers an asset shows: counts per variant, call/chain/depth distributions, atoms, rejections."""

    def histogram(values: list[int]) -> dict[str, int]:
        out: dict[str, int] = {}
        for v in sorted(values):
            out[str(v)] = out.get(str(v), 0) + 1
        return out

    atoms: dict[str, int] = {}
    primary: dict[str, int] = {}
    for t in tasks:
        for a in t.coordinate.atoms:
            atoms[a] = atoms.get(a, 0) + 1
        primary[t.coordinate.primary_difficulty] = primary.get(t.coordinate.primary_difficulty, 0) + 1
    stages: dict[str, int] = {}
    for r in rejected:
        stages[r.stage] = stages.get(r.stage, 0) + 1
    return {
        "kept": len(tasks),
        "rejected": len(rejected),
        "by_variant": {k: sum(1 for t in tasks if t.kind == k) for k in DAG.kinds},
        "calls": histogram([int(t.metadata.get("calls", 0)) for t in tasks]),
        "chain_length": histogram([int(n) for t in tasks for n in t.metadata.get("chain_lengths", [])]),
        "depth": histogram([int(t.metadata.get("depth", 0)) for t in tasks]),
        "atoms": atoms,
        "primary_atom": primary,
        "rejected_by_stage": stages,
    }


def synthesize_dag_in_worker(
    job: tuple[Path, Sequence[tuple[str, int]], SynthesisDirectives | None, float],
) -> tuple[list[Task], list[Rejection]]:
    """`synthesize_dag_variants` of (bundle folder, plan, directives, multi-turn share), offline, in a
    pool worker started with `processes.start_sandbox`: the same tasks as in the calling process."""
    folder, plan, directives, multi_turn = job
    return synthesize_dag_variants(folder, own_sandbox(), plan, directives=directives, multi_turn=multi_turn)
