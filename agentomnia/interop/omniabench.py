"""Export to OmniaBench: environments and tasks as the items OmniaBench's runtime loads.

OmniaBench (the companion benchmark) runs route files of task items, each naming an environment
item: Python source of one class (`env_class_code`), constructed with the task's `init_config` (each
key then set as an attribute), state read as the instance's attributes, tools called as methods
with keyword arguments and listed in OpenAI function format. A bundle of ours has that shape already,
so an environment exports as it is. What a task needs is its grading in their code contracts:

- every rubric item with a deterministic state check (and the task's own `verifier_code`) becomes a
  `checklist_with_func` entry: `check_func(final_state) -> bool` with `initial_state` in scope;
  a task with no state item at all gets one derived from its expected end state (its expected
  diff, or "nothing changed" for a pure question), so every task decides something from the state;
- answer checks become one `verify(candidate_answer, ground_truth_answer) -> float` source with the
  `ground_truth_answer`. Their evaluator lets `verifier_code` override the rubric score, which is
  right for program tasks (route 3, where it is the route's scorer) and wrong elsewhere (the state
  items would stop counting), so the same source is `verifier_code` on route 3 and
  `answer_verifier_code` (an extra field their runtime ignores) on the other routes, where their
  judge scores the answer items from the rubric text, which states the expected values;
- rubric items keep OmniaBench's shape (`tag`, `category`, `points`, `text`) plus `decided_by`
  (`check_func` | `answer` | `trajectory` | `judge`) and our `check`, so a loader without a judge
  still knows how to decide each item, and an import restores our checks exactly. `trajectory`
  items (a tool was or was not called) cannot be decided from the state; their judge reads them
  against the trajectory summary, a loader against the calls it made.

Their runtime constructs the class with the config and then sets every key as an attribute; given a
sandbox, the export builds each environment both ways and skips tasks that would start from another
state there (a constructor that reshapes a key), with the reason.

Routes follow OmniaBench's registry: multi-turn tasks with a simulated user are route 1, solver tasks
route 2, program tasks route 3, single-turn DAG tasks route 4; global ids start at each route's base.
Files: `environments.json` (env items keyed by env_id, their `env_items_path` format),
`route1.json`..`route4.json` (task items, each also embedding its `env_item` so a route file runs on
its own) and `manifest.json`. Reference solutions travel in `reference_solution` (calls or a
`solve(call)` program, and the answer) unless `include_reference=False`.
"""

from __future__ import annotations

import ast
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentomnia.catalog import TASK_ARTIFACTS, Catalog
from agentomnia.interop.checkcode import (
    ANSWER_KINDS,
    STATE_KINDS,
    TRAJECTORY_KINDS,
    answer_verifier_source,
    check_payload,
    expected_answer_for,
    state_check_source,
)
from agentomnia.records import content_hash
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.errors import SandboxError
from agentomnia.sandbox.policy import parse_python
from agentomnia.sandbox.sandbox import Sandbox, SandboxConfig
from agentomnia.storage import Storage
from agentomnia.tasks.families import PROGRAM, Route, family_of
from agentomnia.tasks.families import ROUTES as BENCHMARK_ROUTES
from agentomnia.tasks.families import route_of as benchmark_route
from agentomnia.tasks.models import Check, Persona, Task

RouteId = Literal["route1", "route2", "route3", "route4"]
DecidedBy = Literal["check_func", "answer", "trajectory", "judge"]


class RouteInfo(BaseModel):
    """One of OmniaBench's four routes, as its registry describes it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: RouteId
    name: Route  # our name for the route (`agentomnia.tasks.families.ROUTES`)
    mode: Literal["multi_turn", "single_turn"]
    scorer: Literal["rubric", "verifier"]
    id_base: int


ROUTES: dict[RouteId, RouteInfo] = {
    "route1": RouteInfo(id="route1", name="dag", mode="multi_turn", scorer="rubric", id_base=1),
    "route2": RouteInfo(id="route2", name="solver", mode="single_turn", scorer="rubric", id_base=1_000_000),
    "route3": RouteInfo(
        id="route3", name="program", mode="single_turn", scorer="verifier", id_base=2_000_000
    ),
    "route4": RouteInfo(id="route4", name="dag_s", mode="single_turn", scorer="rubric", id_base=3_000_000),
}


class ExportSkip(BaseModel):
    """A task that was not exported, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    env_id: str
    reason: str


class ExportSummary(BaseModel):
    """What an export wrote: counts for the CLI and its --json output."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    out_dir: str
    files: list[str]
    environments: int
    tasks: int
    by_route: dict[str, int]
    by_kind: dict[str, int]
    checklist_functions: int = Field(description="check_func sources written (state checks)")
    derived_checks: int = Field(description="check_funcs derived for tasks without a state rubric item")
    answer_verifiers: int
    judge_only_items: int = Field(description="rubric items no code decides (they need a judge)")
    skipped: list[ExportSkip] = Field(default_factory=list)


# OmniaBench's route id for each of our benchmark routes (`agentomnia.tasks.families.ROUTES`).
ROUTE_IDS: dict[Route, RouteId] = {info.name: rid for rid, info in ROUTES.items()}
assert set(ROUTE_IDS) == set(BENCHMARK_ROUTES), "every benchmark route has one OmniaBench route"


def route_of(task: Task) -> RouteId:
    """Multi-turn tasks are route 1 (OmniaBench's simulated-user route) whatever their family;
    otherwise the route of the task's benchmark route (`agentomnia.tasks.families.route_of`)."""
    return ROUTE_IDS["dag" if task.interaction == "multi" else benchmark_route(task)]


def _introduction(bundle: Bundle) -> str:
    spec = bundle.spec or {}
    text = spec.get("description") or spec.get("name")
    if isinstance(text, str) and text.strip():
        return text.strip()
    for node in parse_python(bundle.source).body:
        if isinstance(node, ast.ClassDef) and node.name == bundle.class_name:
            return (ast.get_docstring(node) or bundle.class_name).strip()
    return bundle.class_name


def _rules(bundle: Bundle) -> list[str]:
    spec = bundle.spec or {}
    texts = [str(r["text"]) for r in spec.get("rules", []) if isinstance(r, Mapping) and r.get("text")]
    for tool in spec.get("tools", []):
        if isinstance(tool, Mapping):
            texts += [
                str(c["text"])
                for c in tool.get("constraints", [])
                if isinstance(c, Mapping) and c.get("text")
            ]
    return list(dict.fromkeys(texts))


def environment_item(env_id: str, bundle: Bundle) -> dict[str, Any]:
    """An OmniaBench environment item: the class source, its name, introduction, rules and tools."""
    return {
        "env_id": env_id,
        "env_class_name": bundle.class_name,
        "environment_introduction": _introduction(bundle),
        "constraints_rules": _rules(bundle),
        "env_class_code": bundle.source,
        "tools": [dict(t) for t in bundle.tools],
    }


def persona_card(persona: Persona) -> str:
    """The persona as the Markdown card OmniaBench's user simulator reads (`persona_card_md`)."""
    lines = [f"# User persona: {persona.name}", f"- Level of detail when speaking: {persona.granularity}"]
    if persona.withheld:
        lines.append("- Give these details only when the assistant asks for them:")
        lines += [f"  - {k}: {v}" for k, v in sorted(persona.withheld.items())]
    if persona.misleading:
        lines.append("- State these details wrongly at first, correct them when challenged:")
        lines += [f"  - {k}: {v}" for k, v in sorted(persona.misleading.items())]
    return "\n".join(lines) + "\n"


def _category(scope: str) -> str:
    return "general" if scope == "general" else "task_specific"


def _decided_by(check: Check | None) -> DecidedBy:
    if check is None:
        return "judge"
    if check.kind in STATE_KINDS or check.kind == "verifier":
        return "check_func"
    if check.kind in ANSWER_KINDS:
        return "answer"
    if check.kind in TRAJECTORY_KINDS:
        return "trajectory"
    return "judge"


def _derived_checks(task: Task) -> list[tuple[str, Check]]:
    """State checks for a task whose rubric has none: its expected diff, or nothing changed."""
    if not task.expected_diff:
        text = "Nothing in the environment was changed (the task only asks for information)."
        return [(text, Check(kind="diff_within", value=[]))]
    checks: list[tuple[str, Check]] = []
    allowed: list[dict[str, Any]] = []
    for d in task.expected_diff:
        table, key, field = d.get("table"), d.get("key"), d.get("field")
        if not table or key is None:
            continue
        allowed.append({"table": table, "key": key})
        if field is not None:
            after = d.get("after")
            check = Check(kind="field_equals", table=table, key=key, field=field, value=after, tolerance=0.01)
            checks.append((f"{table}[{key}].{field} is {after!r}.", check))
    checks.append(
        ("Nothing outside the requested records was changed.", Check(kind="diff_within", value=allowed))
    )
    return checks


def _reference(task: Task) -> dict[str, Any]:
    return {
        "calls": [{"name": c.tool, "arguments": dict(c.args)} for c in task.reference_calls],
        "program": task.reference_program,
        "answer": dict(task.expected_answer),
    }


def task_item(
    task: Task,
    bundle: Bundle,
    global_id: int,
    *,
    include_reference: bool = True,
    embed_env: bool = True,
) -> dict[str, Any]:
    """One OmniaBench task item for `task` on `bundle` (see the module docstring for the fields).

    Raises ValueError for a task whose rubric asks for its verifier code but carries none."""
    route = route_of(task)
    rubrics: list[dict[str, Any]] = []
    checklist: list[dict[str, Any]] = []
    answers: list[tuple[Check, int]] = []
    for item in task.rubric:
        entry: dict[str, Any] = {
            "tag": item.id,
            "category": _category(item.scope),
            "points": item.weight,
            "text": item.text,
            "decided_by": _decided_by(item.check),
        }
        check = item.check
        if check is not None:
            entry["check"] = check_payload(check)
        rubrics.append(entry)
        if check is None:
            continue
        base = {"tag": item.id, "category": entry["category"], "points": item.weight, "text": item.text}
        if check.kind == "verifier":
            if not task.verifier_code:
                raise ValueError(f"rubric item {item.id} needs the task's verifier_code, which is missing")
            checklist.append(base | {"check_func": task.verifier_code, "source": "verifier_code"})
        elif check.kind in STATE_KINDS:
            about = f"Rubric item {item.id} of task {task.id}: {item.text}"
            checklist.append(base | {"check_func": state_check_source(check, about), "source": "rubric"})
        elif check.kind in ANSWER_KINDS:
            answers.append((check, item.weight))
    if not checklist:
        for n, (text, check) in enumerate(_derived_checks(task), start=1):
            about = f"Derived state check S{n} of task {task.id}: {text}"
            source = state_check_source(check, about)
            entry = {"tag": f"S{n}", "category": "general", "points": 1, "text": text, "check_func": source}
            checklist.append(entry | {"source": "derived", "check": check_payload(check)})
    out: dict[str, Any] = {
        "global_id": global_id,
        "task_id": task.id,
        "env_id": task.env_id,
        "env_class_name": bundle.class_name,
        "route": route,
        "task": task.query,
        "init_config": task.init_config,
        "rubrics": rubrics,
        "checklist_with_func": checklist,
    }
    if answers:
        about = f"Answer checks of task {task.id}: " + ", ".join(f"{c.field} ({c.kind})" for c, _ in answers)
        source = answer_verifier_source(answers, about)
        out["ground_truth_answer"] = expected_answer_for([c for c, _ in answers], task.expected_answer)
        out["answer_verifier_code"] = source
        if ROUTES[route].scorer == "verifier":
            out["verifier_code"] = source
    if family_of(task) is PROGRAM:
        wanted = set(task.candidate_tools)
        out["candidate_tools"] = [
            dict(t) for t in bundle.tools if not wanted or t["function"]["name"] in wanted
        ]
    if task.persona is not None:
        out["persona_card_md"] = persona_card(task.persona)
    if include_reference:
        out["reference_solution"] = _reference(task)
    out["agentomnia"] = {
        "kind": task.kind,
        "interaction": task.interaction,
        "coordinate": task.coordinate.model_dump(mode="json"),
        "persona": task.persona.model_dump(mode="json") if task.persona is not None else None,
        "round": task.round,
        "metadata": task.metadata,
    }
    if embed_env:
        out["env_item"] = environment_item(task.env_id, bundle)
    return out


def construction_problem(bundle: Bundle, init_config: Mapping[str, Any], sandbox: Sandbox) -> str | None:
    """Why OmniaBench's way of building the class would start from another state than ours, or None.

    Their runtime constructs with the config and then sets every key as an attribute; a constructor
    that reshapes a key (a list into a dict by id, say) is overwritten by the raw value there. Both
    constructions run in the sandbox and their state hashes are compared."""
    if bundle.init_mode == "attributes":
        return None
    theirs = bundle.model_copy(update={"init_mode": "attributes"})
    try:
        with (
            sandbox.open(bundle, init_config) as ours_session,
            sandbox.open(theirs, init_config) as their_session,
        ):
            if ours_session.state_hash() == their_session.state_hash():
                return None
            ours_state, their_state = ours_session.state(), their_session.state()
    except SandboxError as exc:
        return f"the environment does not build in the sandbox at this init_config: {exc}"
    differ = sorted(k for k in set(ours_state) | set(their_state) if ours_state.get(k) != their_state.get(k))
    return (
        f"setting the init_config keys as attributes after construction changes {differ[:5]}, so OmniaBench's "
        "runtime would start from another state; make the constructor keep each init_config key as it is"
    )


def _write_json(path: Path, value: Any) -> str:
    path.write_text(json.dumps(value, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return str(path)


def export_tasks(
    tasks: Sequence[Task],
    bundles: Mapping[str, Bundle],
    out_dir: str | Path,
    *,
    include_reference: bool = True,
    skipped: Iterable[ExportSkip] = (),
    source: Mapping[str, Any] | None = None,
    sandbox: Sandbox | None = None,
) -> ExportSummary:
    """Write `tasks` (on `bundles`, keyed by env id) as OmniaBench route files under `out_dir`.

    Tasks whose bundle is missing or whose rubric cannot be rendered are skipped with a reason, and
    so are tasks whose environment OmniaBench would construct differently (checked when a
    `sandbox` is given); the rest are written. Global ids are assigned per route in (kind, id) order."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    skips = list(skipped)
    by_route: dict[RouteId, list[dict[str, Any]]] = {r: [] for r in ROUTES}
    used_envs: set[str] = set()
    exported: list[Task] = []
    problems: dict[tuple[str, str], str | None] = {}
    for task in sorted(tasks, key=lambda t: (route_of(t), t.kind, t.id)):
        bundle = bundles.get(task.env_id)
        if bundle is None:
            skips.append(
                ExportSkip(task_id=task.id, env_id=task.env_id, reason=f"no bundle for {task.env_id}")
            )
            continue
        if sandbox is not None:
            seen = (task.env_id, content_hash(task.init_config))
            if seen not in problems:
                problems[seen] = construction_problem(bundle, task.init_config, sandbox)
            if problems[seen] is not None:
                skips.append(ExportSkip(task_id=task.id, env_id=task.env_id, reason=str(problems[seen])))
                continue
        route = route_of(task)
        try:
            item = task_item(
                task,
                bundle,
                ROUTES[route].id_base + len(by_route[route]),
                include_reference=include_reference,
            )
        except ValueError as exc:
            skips.append(ExportSkip(task_id=task.id, env_id=task.env_id, reason=str(exc)))
            continue
        by_route[route].append(item)
        used_envs.add(task.env_id)
        exported.append(task)
    files = [
        _write_json(
            out / "environments.json", {e: environment_item(e, bundles[e]) for e in sorted(used_envs)}
        )
    ]
    for route, items in by_route.items():
        if items:
            files.append(_write_json(out / f"{route}.json", items))
    all_items = [i for items in by_route.values() for i in items]
    summary = ExportSummary(
        out_dir=str(out),
        files=files,
        environments=len(used_envs),
        tasks=len(all_items),
        by_route={r: len(items) for r, items in by_route.items() if items},
        by_kind=dict(Counter(t.kind for t in exported)),
        checklist_functions=sum(len(i["checklist_with_func"]) for i in all_items),
        derived_checks=sum(
            1 for i in all_items for c in i["checklist_with_func"] if c["source"] == "derived"
        ),
        answer_verifiers=sum(1 for i in all_items if "answer_verifier_code" in i),
        judge_only_items=sum(1 for i in all_items for r in i["rubrics"] if r["decided_by"] == "judge"),
        skipped=skips,
    )
    manifest = {
        "format": "omniabench",
        "producer": "agentomnia",
        "source": dict(source or {}),
        "routes": {
            r: ROUTES[r].model_dump() | {"file": f"{r}.json", "tasks": len(items)}
            for r, items in by_route.items()
            if items
        },
        "environments_file": "environments.json",
        "summary": summary.model_dump(exclude={"files", "out_dir"}),
    }
    files.append(_write_json(out / "manifest.json", manifest))
    return summary.model_copy(update={"files": files})


def export_omniabench(
    round_key: str,
    out_dir: str | Path,
    *,
    home: str | Path | None = None,
    include_reference: bool = True,
    verify: bool = True,
    sandbox_config: SandboxConfig | None = None,
) -> ExportSummary:
    """`agentomnia export omniabench --round R --out DIR`: every task of round R with its environment.

    With `verify` (the default) each environment is also built OmniaBench's way in the sandbox, and
    tasks it would start from another state are skipped with the reason."""
    storage = Storage(home)
    artifacts = storage.round(round_key)
    stages = artifacts.task_stages()
    if not stages:
        names = ", ".join(a.name for a in TASK_ARTIFACTS)
        raise FileNotFoundError(
            f"no tasks for round {round_key!r} under {storage.artifacts_root}; materialize the task assets "
            f"({names}) for that round first"
        )
    # stage by stage, each in id order: the export's file order does not depend on how a stage wrote
    tasks = [t for a in stages for t in sorted(artifacts.tasks([a]), key=lambda t: t.id)]
    bundles, missing = Catalog(storage).bundles_lenient(t.env_id for t in tasks)
    skipped = [
        ExportSkip(task_id=t.id, env_id=t.env_id, reason=missing[t.env_id])
        for t in tasks
        if t.env_id in missing
    ]
    kept = [t for t in tasks if t.env_id not in missing]
    sandbox = (
        Sandbox.from_config(sandbox_config or SandboxConfig(workers=1, idle_timeout_s=0)) if verify else None
    )
    try:
        return export_tasks(
            kept,
            bundles,
            out_dir,
            include_reference=include_reference,
            skipped=skipped,
            source={"round": round_key, "home": str(storage.root), "construction_checked": verify},
            sandbox=sandbox,
        )
    finally:
        if sandbox is not None:
            sandbox.close()
