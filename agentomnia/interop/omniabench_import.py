"""Import from OmniaBench: route files a user has become our Task records and environment bundles.

The OmniaBench task data is research-only and never ships here; a user who has it (or files this
platform exported) imports them so the project's rollout, grading and benchmark runner can use them.
What an item says is mapped onto our records and nothing else is lost:

- the environment (embedded `env_item`, the item's own `env_class_code` + `tools`/`candidate_tools`,
  or an environment item from another file, matched by `env_id`) becomes a bundle that constructs
  the class the OmniaBench way (`init_mode="attributes"`) and accepts any return value
  (`returns="any"`); its id is a hash of its code and tools, because OmniaBench's own `env_id`s
  repeat across routes with different code;
- `task` -> `query`, `init_config` as is; rubric items (`rubrics`, `rubric_items` or `rubrics_text`)
  -> RubricItems (G# general, T# task-specific, 1-3 points) that a judge decides, unless the item
  carries one of our checks (files this platform exported), which is restored;
- `checklist_with_func` entries -> one `verifier_code` (`check_func(final_state)` with
  `initial_state` in scope) that passes when every entry passes, graded by a rubric item of its own;
- `ground_truth_answer` -> `expected_answer`; their `verifier_code` (`verify(candidate, truth)`)
  cannot be run by our grader, so it is kept in metadata and, for files not exported by us, each
  ground-truth field becomes an exact-match answer item (an approximation the metadata records);
- the route (from `route`, the global id's range, the file name, or the item's shape) picks the
  task kind; the domain comes from the item, a `task_domain_map.csv`, or a default taxonomy id;
- every field we do not map is kept under `metadata["omniabench"]["extra"]` (environment-level
  extras go to `omniabench.json` in the bundle folder).

A malformed item is rejected with its file, index and what is wrong; the others still import. Code
is only parsed and checked against the sandbox's static policy here; `verify_in_sandbox` then
builds every environment at every task's init_config inside the sandbox (never in this process).
"""

from __future__ import annotations

import ast
import csv
import functools
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentomnia.catalog import IMPORTED_TASKS
from agentomnia.interop.checkcode import combine_check_sources
from agentomnia.interop.omniabench import ROUTES, RouteId
from agentomnia.records import canonical_json, content_hash
from agentomnia.rejection import Rejection, save_rejections
from agentomnia.sandbox.bundle import Bundle, detect_class_name
from agentomnia.sandbox.errors import SandboxError
from agentomnia.sandbox.policy import PolicyViolation, parse_python, validate_source
from agentomnia.sandbox.sandbox import Sandbox, SandboxConfig
from agentomnia.storage import Storage, save_records
from agentomnia.tasks.families import family_for_route
from agentomnia.tasks.models import TASK_KINDS, Check, Persona, ReferenceCall, RubricItem, Task, TaskKind
from agentomnia.taxonomy import Coordinate

# What each route is in our vocabulary when an item does not say: (kind, interaction, capabilities, atom).
# The kind is the default kind of the family that owns the route (`agentomnia.tasks.families`).
_ROUTE_TRAITS: tuple[tuple[RouteId, str, tuple[str, ...], str], ...] = (
    ("route1", "multi", ("interactive_collaboration", "tool_use"), "progressive_disclosure"),
    ("route2", "single", ("planning_decision", "tool_use"), "dynamic_planning"),
    ("route3", "single", ("code_programmatic", "tool_use"), "dynamic_planning"),
    ("route4", "single", ("state_management", "tool_use"), "tool_parameter_grounding"),
)
_ROUTE_DEFAULTS: dict[RouteId, tuple[TaskKind, str, tuple[str, ...], str]] = {
    rid: (family_for_route(ROUTES[rid].name).default_kind, interaction, capabilities, atom)
    for rid, interaction, capabilities, atom in _ROUTE_TRAITS
}
_TASK_FIELDS = frozenset(
    {
        "global_id", "task_id", "env_id", "env_class_name", "route", "task", "init_config",
        "rubrics", "rubric_items", "rubrics_text", "checklist_with_func", "verifier_code",
        "answer_verifier_code", "ground_truth_answer", "candidate_tools", "persona", "persona_card_md",
        "reference_solution", "agentomnia", "env_item", "env_class_code", "tools",
        "environment_introduction", "constraints_rules", "taxonomy_id",
    }
)  # fmt: skip
_ENV_FIELDS = frozenset(
    {"env_id", "env_class_name", "environment_introduction", "constraints_rules", "env_class_code", "tools"}
)
_RUBRIC_LINE = re.compile(r"^([GT]\d+)\s*\|\s*([123])\s*(?:分|points?|pts?)?\s*\|\s*(.+)$")


class ImportResult(BaseModel):
    """Parsed items: tasks, the bundles they run on (by our env id), environment extras, rejections."""

    tasks: list[Task] = Field(default_factory=list)
    bundles: dict[str, Bundle] = Field(default_factory=dict)
    env_extras: dict[str, dict[str, Any]] = Field(default_factory=dict)
    rejections: list[Rejection] = Field(default_factory=list)
    unknown_fields: dict[str, int] = Field(default_factory=dict)


class ImportSummary(BaseModel):
    """What `agentomnia import omniabench` did: counts, where things went, and every rejection."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    files: list[str]
    tasks: int
    environments: int
    by_route: dict[str, int]
    by_kind: dict[str, int]
    verified_in_sandbox: bool
    unknown_fields: dict[str, int] = Field(description="unmapped item fields kept in metadata, with counts")
    tasks_path: str | None = None
    rejected_path: str | None = None
    env_dirs: list[str] = Field(default_factory=list)
    rejected: list[Rejection] = Field(default_factory=list)


def _rejection(
    path: Path, index: int | None, stage: str, reason: str, task_id: str | None = None
) -> Rejection:
    """An item that did not import: the file, its position (None: the whole file) and what is wrong."""
    return Rejection(subject=str(path), subject_kind="benchmark_item", stage=stage, reason=reason,
                     place=f"item {index}" if index is not None else "", detail={"index": index, "task_id": task_id})  # fmt: skip


class _Reject(Exception):
    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(reason)
        self.stage = stage
        self.reason = reason


# ------------------------------------------------------------------ reading files


def _read_items(path: Path) -> tuple[list[Any], list[Rejection]]:
    """The items of one file (a JSON list, one item, an env map, or JSON lines)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [], [_rejection(path, None, "read", f"cannot read the file: {exc}")]
    if path.suffix == ".jsonl":
        items: list[Any] = []
        problems = []
        for n, line in enumerate(text.splitlines()):
            if line.strip():
                try:
                    items.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    items.append(None)
                    problems.append(_rejection(path, n, "read", f"line {n + 1} is not JSON: {exc.msg}"))
        return items, problems
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        reason = f"not valid JSON (line {exc.lineno}: {exc.msg}); give a route file (a JSON list of items)"
        return [], [_rejection(path, None, "read", reason)]
    if isinstance(data, list):
        return data, []
    if isinstance(data, dict):
        if "task" in data or "env_class_code" in data:
            return [data], []
        if data and all(isinstance(v, dict) and "env_class_code" in v for v in data.values()):
            return [{"env_id": k, **v} for k, v in data.items()], []  # OmniaBench's env_items_path format
    return [], [
        _rejection(path, None, "read", "neither a list of items nor a map of environment items by env_id")
    ]


def read_domain_map(path: str | Path) -> dict[str, int]:
    """OmniaBench's `task_domain_map.csv` (route, global_id, taxonomy_id, ...) as {global_id: taxonomy_id}."""
    out: dict[str, int] = {}
    with Path(path).open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if row.get("global_id") and row.get("taxonomy_id"):
                out[str(row["global_id"]).strip()] = int(row["taxonomy_id"])
    return out


# ------------------------------------------------------------------ environments


def _parse_code(source: Any, what: str, stage: str) -> ast.Module:
    if not isinstance(source, str) or not source.strip():
        raise _Reject(stage, f"`{what}` is missing or empty")
    try:
        return parse_python(source)
    except SyntaxError as exc:
        raise _Reject(stage, f"`{what}` does not parse (line {exc.lineno}: {exc.msg})") from None


@functools.lru_cache(maxsize=256)
def _violations(source: str) -> tuple[PolicyViolation, ...]:
    # Route files repeat the same environment and check code for many tasks; check each text once.
    return tuple(validate_source(source))


def _policy(source: str, what: str, stage: str) -> None:
    problems = _violations(source)
    if problems:
        listed = "; ".join(f"line {p.line}: {p.message}" for p in problems[:3])
        more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
        raise _Reject(stage, f"{what} fails the sandbox policy, so it cannot run here: {listed}{more}")


def _env_of(item: Mapping[str, Any], env_map: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    embedded = item.get("env_item")
    if isinstance(embedded, Mapping) and embedded.get("env_class_code"):
        return dict(embedded)
    tools = item.get("tools") if "tools" in item else item.get("candidate_tools")
    if item.get("env_class_code") and isinstance(tools, list):
        return {k: item[k] for k in _ENV_FIELDS if k in item} | {"tools": tools}
    env_id = item.get("env_id")
    if isinstance(env_id, str) and env_id in env_map:
        return dict(env_map[env_id])
    raise _Reject(
        "environment",
        f"no environment for env_id {env_id!r}: embed `env_item`, put `env_class_code` and `tools` on the item, "
        "or import the environment items file alongside",
    )


def _bundle(
    env: Mapping[str, Any], class_hint: Any, s0: Mapping[str, Any]
) -> tuple[str, Bundle, dict[str, Any]]:
    source = env.get("env_class_code")
    tree = _parse_code(source, "env_class_code", "environment")
    assert isinstance(source, str)
    classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    tools = env.get("tools")
    if not isinstance(tools, list) or not tools:
        raise _Reject("environment", "`tools` must be a non-empty list of OpenAI function-format tools")
    names = [str((t.get("function") or t).get("name")) for t in tools if isinstance(t, Mapping)]
    class_name = class_hint or env.get("env_class_name")
    if not class_name:
        class_name = detect_class_name(source, names) if classes else None
    if class_name not in classes:
        raise _Reject(
            "environment", f"`env_class_code` defines no class {class_name!r} (classes: {classes or 'none'})"
        )
    _policy(source, f"environment class {class_name}", "environment")
    try:
        bundle = Bundle.from_source(
            source, tools, dict(s0), class_name=str(class_name), init_mode="attributes", returns="any"
        )
    except (ValidationError, ValueError) as exc:
        raise _Reject("environment", f"`tools` are not usable: {exc}") from None
    env_id = "ob-" + content_hash({"code": source, "class": class_name, "tools": bundle.tools}, length=12)
    extras = {
        "env_id": env.get("env_id"),
        "environment_introduction": env.get("environment_introduction", ""),
        "constraints_rules": env.get("constraints_rules", []),
        "extra": {k: v for k, v in env.items() if k not in _ENV_FIELDS},
    }
    return env_id, bundle, extras


# ------------------------------------------------------------------ rubrics and checks


def _rubric_entries(item: Mapping[str, Any]) -> list[dict[str, Any]]:
    for key in ("rubrics", "rubric_items"):
        value = item.get(key)
        if isinstance(value, list) and value:
            return [e if isinstance(e, dict) else {"_raw": e} for e in value]
    text = item.get("rubrics_text")
    entries: list[dict[str, Any]] = []
    if isinstance(text, str):
        category = ""
        for line in text.splitlines():
            line = line.strip()
            if line in ("【General】", "[General]"):
                category = "general"
            elif line in ("【Task-Specific】", "[Task-Specific]"):
                category = "task_specific"
            elif (m := _RUBRIC_LINE.match(line)) and category:
                entries.append({"tag": m[1], "category": category, "points": int(m[2]), "text": m[3].strip()})
    return entries


def _rubric_item(n: int, entry: Mapping[str, Any]) -> tuple[RubricItem, bool]:
    """(the item, whether it carries one of our deterministic checks)."""
    if "_raw" in entry:
        raise _Reject("rubric", f"rubrics[{n}] is a {type(entry['_raw']).__name__}, not an object")
    tag = str(entry.get("tag") or entry.get("id") or "").strip()
    category = str(entry.get("category") or entry.get("section") or "").strip().lower().replace("-", "_")
    points = entry.get("points")
    if not tag:
        raise _Reject("rubric", f"rubrics[{n}] has no `tag` (G1, T1, ...)")
    if category not in ("general", "task_specific", "task"):
        raise _Reject(
            "rubric", f"rubrics[{n}] ({tag}): category {category!r} is neither general nor task_specific"
        )
    if isinstance(points, bool) or not isinstance(points, int) or not 1 <= points <= 3:
        raise _Reject("rubric", f"rubrics[{n}] ({tag}): points {points!r} is not an integer from 1 to 3")
    text = str(entry.get("text") or entry.get("criteria") or "").strip()
    if not text:
        raise _Reject("rubric", f"rubrics[{n}] ({tag}) has no text")
    check = None
    if isinstance(entry.get("check"), Mapping):
        try:
            check = Check.model_validate(entry["check"])
        except ValidationError:
            check = None  # not one of ours: the judge decides it, as OmniaBench's own runtime does
    scope = "general" if category == "general" else "task"
    return RubricItem(id=tag, text=text, scope=scope, weight=points, check=check), check is not None


def _checklist(item: Mapping[str, Any]) -> list[tuple[str | None, str]]:
    raw = item.get("checklist_with_func") or []
    if not isinstance(raw, list):
        raise _Reject("checks", "`checklist_with_func` must be a list of {check_func: source} entries")
    out = []
    for n, entry in enumerate(raw):
        code = entry.get("check_func") if isinstance(entry, Mapping) else None
        tree = _parse_code(code, f"checklist_with_func[{n}].check_func", "checks")
        if not any(isinstance(d, ast.FunctionDef) and d.name == "check_func" for d in tree.body):
            raise _Reject("checks", f"checklist_with_func[{n}] defines no `check_func(final_state)`")
        assert isinstance(code, str)
        _policy(code, f"checklist_with_func[{n}]", "checks")
        tag = entry.get("tag") if isinstance(entry, Mapping) else None
        out.append((str(tag) if tag else None, code))
    return out


def _free_tag(prefix: str, used: set[str]) -> str:
    n = 1
    while f"{prefix}{n}" in used:
        n += 1
    used.add(f"{prefix}{n}")
    return f"{prefix}{n}"


# ------------------------------------------------------------------ one task item


def _route(item: Mapping[str, Any], path: Path, forced: RouteId | None) -> RouteId:
    if forced is not None:
        return forced
    if item.get("route") in ROUTES:
        return item["route"]  # type: ignore[no-any-return]
    gid = item.get("global_id")
    if isinstance(gid, int) and not isinstance(gid, bool) and gid > 0:
        for route in ("route4", "route3", "route2", "route1"):
            if gid >= ROUTES[route].id_base:  # type: ignore[index]
                return route  # type: ignore[return-value]
    stem = re.search(r"route([1-4])", path.stem)
    if stem:
        return f"route{stem[1]}"  # type: ignore[return-value]
    if item.get("verifier_code") and "ground_truth_answer" in item:
        return "route3"
    if item.get("persona") or item.get("persona_card_md"):
        return "route1"
    return "route4"


def _coordinate(
    item: Mapping[str, Any], route: RouteId, domain_map: Mapping[str, int], default_id: int | None
) -> tuple[Coordinate, str]:
    ours = (
        (item.get("agentomnia") or {}).get("coordinate")
        if isinstance(item.get("agentomnia"), Mapping)
        else None
    )
    if isinstance(ours, Mapping):
        try:
            return Coordinate.model_validate(ours), "item"
        except ValidationError:
            pass  # a stale or foreign coordinate: place the item by the domain map or default below
    taxonomy_id = item.get("taxonomy_id")
    source = "item"
    if taxonomy_id is None and str(item.get("global_id")) in domain_map:
        taxonomy_id, source = domain_map[str(item.get("global_id"))], "domain map"
    if taxonomy_id is None:
        taxonomy_id, source = default_id, "default"
    if taxonomy_id is None:
        raise _Reject(
            "domain",
            "no taxonomy id: pass OmniaBench's evaluation/data/task_domain_map.csv as the domain map, "
            "give the item a `taxonomy_id`, or set a default taxonomy id",
        )
    _, _, capabilities, atom = _ROUTE_DEFAULTS[route]
    try:
        return Coordinate.for_domain(int(taxonomy_id), capabilities, [atom], primary=atom), source
    except (KeyError, ValueError) as exc:
        raise _Reject("domain", f"taxonomy id {taxonomy_id!r} ({source}): {exc}") from None


def _persona(item: Mapping[str, Any], ours: Mapping[str, Any]) -> Persona:
    if isinstance(ours.get("persona"), Mapping):
        try:
            return Persona.model_validate(ours["persona"])
        except ValidationError:
            pass  # not our persona shape: build one from the item's own user fields below
    card = item.get("persona_card_md") or item.get("persona") or ""
    first = next((line.strip("# ").strip() for line in str(card).splitlines() if line.strip()), "")
    name = first.split(":", 1)[1].strip() if first.lower().startswith("user persona:") else first
    return Persona(name=(name or "OmniaBench user")[:120])


def _tool_names(value: Any) -> tuple[str, ...]:
    names = []
    for entry in value if isinstance(value, list) else []:
        if isinstance(entry, str):
            names.append(entry)
        elif isinstance(entry, Mapping):
            names.append(str((entry.get("function") or entry).get("name")))
    return tuple(names)


def _reference(item: Mapping[str, Any]) -> tuple[tuple[ReferenceCall, ...], str | None]:
    solution = item.get("reference_solution")
    if not isinstance(solution, Mapping):
        return (), None
    calls = tuple(
        ReferenceCall(tool=str(c["name"]), args=dict(c.get("arguments") or {}))
        for c in solution.get("calls") or []
        if isinstance(c, Mapping) and c.get("name")
    )
    program = solution.get("program")
    return calls, program if isinstance(program, str) and program.strip() else None


class _Grading(NamedTuple):
    rubric: list[RubricItem]
    verifier_code: str | None
    expected_answer: dict[str, Any]
    answers_approximated: bool


def _grading(item: Mapping[str, Any]) -> _Grading:
    """The rubric, verifier code and expected answer of a task item (see the module docstring)."""
    rubric: list[RubricItem] = []
    restored: dict[str, Check] = {}
    for n, entry in enumerate(_rubric_entries(item)):
        rubric_item, has_check = _rubric_item(n, entry)
        rubric.append(rubric_item)
        if has_check and rubric_item.check is not None:
            restored[rubric_item.id] = rubric_item.check
    tags = [r.id for r in rubric]
    if len(set(tags)) != len(tags):
        raise _Reject("rubric", f"rubric tags repeat: {sorted(t for t, c in Counter(tags).items() if c > 1)}")
    used = set(tags)
    # Checklist entries that a restored check of ours already decides are not graded twice; the task's
    # own verifier entry and every other entry make up the task's verifier code.
    verifier_tags = {t for t, c in restored.items() if c.kind == "verifier"}
    sources = [
        code for tag, code in _checklist(item) if tag is None or tag in verifier_tags or tag not in restored
    ]
    verifier_code = sources[0] if len(sources) == 1 else (combine_check_sources(sources) if sources else None)
    if verifier_tags and verifier_code is None:
        raise _Reject("checks", f"rubric items {sorted(verifier_tags)} need checklist code, which is missing")
    if sources and not verifier_tags:
        text = f"Every state check of the task's checklist passes ({len(sources)} checks)."
        rubric.append(
            RubricItem(
                id=_free_tag("C", used), scope="general", weight=1, text=text, check=Check(kind="verifier")
            )
        )
    truth = item.get("ground_truth_answer")
    expected = truth if isinstance(truth, dict) else ({} if truth is None else {"answer": truth})
    answers_restored = any(c.kind in ("answer_equals", "answer_contains") for c in restored.values())
    approximated = bool(expected and item.get("verifier_code") and not answers_restored)
    if approximated:
        for field, value in expected.items():
            rubric.append(
                RubricItem(
                    id=_free_tag("A", used),
                    scope="task",
                    weight=1,
                    text=f"The answer's `{field}` matches the ground truth {value!r}.",
                    check=Check(kind="answer_equals", field=field, value=value, tolerance=0.01),
                )
            )
    if not rubric:
        raise _Reject("rubric", "nothing to grade: no rubrics, checklist_with_func or ground_truth_answer")
    return _Grading(rubric, verifier_code, expected, approximated)


def _task(
    item: Mapping[str, Any],
    *,
    path: Path,
    index: int,
    round_key: str,
    env_id: str,
    env_extras: Mapping[str, Any],
    route: RouteId,
    coordinate: Coordinate,
    coordinate_source: str,
) -> Task:
    query = item.get("task")
    if not isinstance(query, str) or not query.strip():
        raise _Reject("item", "`task` (the query) is missing or empty")
    init_config = item.get("init_config")
    if not isinstance(init_config, dict):
        raise _Reject(
            "item",
            "`init_config` is missing or not an object; the runtime constructs the environment from it",
        )
    ours = item.get("agentomnia") if isinstance(item.get("agentomnia"), Mapping) else {}
    assert isinstance(ours, Mapping)
    grading = _grading(item)
    default_kind, default_interaction, _, _ = _ROUTE_DEFAULTS[route]
    kind = ours.get("kind") if ours.get("kind") in TASK_KINDS else default_kind
    interaction = (
        ours.get("interaction") if ours.get("interaction") in ("single", "multi") else default_interaction
    )
    reference_calls, program = _reference(item)
    metadata = dict(ours.get("metadata") or {}) if isinstance(ours.get("metadata"), Mapping) else {}
    metadata["omniabench"] = {
        "file": str(path),
        "index": index,
        "global_id": item.get("global_id"),
        "task_id": item.get("task_id"),
        "env_id": item.get("env_id"),
        "route": route,
        "coordinate_source": coordinate_source,
        "environment_introduction": env_extras.get("environment_introduction", ""),
        "constraints_rules": env_extras.get("constraints_rules", []),
        "verifier_code": item.get("verifier_code"),
        "answer_verifier_code": item.get("answer_verifier_code"),
        "ground_truth_answer": None
        if isinstance(item.get("ground_truth_answer"), dict)
        else item.get("ground_truth_answer"),
        "checklist": [
            {k: v for k, v in entry.items() if k != "check_func"}
            for entry in item.get("checklist_with_func") or []
            if isinstance(entry, Mapping)
        ],
        "answer_items_approximated": grading.answers_approximated,
        "persona_card_md": item.get("persona_card_md") or item.get("persona"),
        "extra": {k: v for k, v in item.items() if k not in _TASK_FIELDS},
    }
    return Task(
        round=round_key,
        env_id=env_id,
        kind=kind,
        coordinate=coordinate,
        init_config=init_config,
        query=query,
        reference_calls=reference_calls,
        reference_program=program,
        expected_answer=grading.expected_answer,
        rubric=tuple(grading.rubric),
        verifier_code=grading.verifier_code,
        interaction=interaction,
        persona=_persona(item, ours) if interaction == "multi" else None,
        candidate_tools=_tool_names(item.get("candidate_tools")),
        metadata=metadata,
    )


# ------------------------------------------------------------------ the public steps


def read_omniabench(
    files: Sequence[str | Path],
    *,
    round_key: str = "r0",
    domain_map: str | Path | Mapping[str, int] | None = None,
    taxonomy_id: int | None = None,
    route: RouteId | None = None,
) -> ImportResult:
    """Parse route files (and environment item files) into tasks and bundles; nothing is run.

    `domain_map` is OmniaBench's task_domain_map.csv (or {global_id: taxonomy_id}); `taxonomy_id` is
    the domain of items neither names; `route` forces the route of every task item."""
    mapping = read_domain_map(domain_map) if isinstance(domain_map, (str, Path)) else dict(domain_map or {})
    result = ImportResult()
    loaded: list[tuple[Path, int, dict[str, Any]]] = []
    env_map: dict[str, dict[str, Any]] = {}
    for name in files:
        path = Path(name)
        items, problems = _read_items(path)
        result.rejections += problems
        bad = {p.detail.get("index") for p in problems}
        for index, raw in enumerate(items):
            if index in bad:
                continue
            if isinstance(raw, dict) and "task" in raw:
                loaded.append((path, index, raw))
            elif isinstance(raw, dict) and "env_class_code" in raw and isinstance(raw.get("env_id"), str):
                env_map[raw["env_id"]] = raw
            else:
                what = (
                    f"an object with keys {sorted(raw)[:8]}"
                    if isinstance(raw, dict)
                    else f"a {type(raw).__name__}"
                )
                reason = (
                    f"{what}: expected a task item (with `task`) or an environment item "
                    "(with `env_class_code` and `env_id`)"
                )
                result.rejections.append(_rejection(path, index, "item", reason))
    unknown: Counter[str] = Counter()
    for path, index, raw in loaded:
        task_id = str(raw.get("task_id") or raw.get("global_id") or "") or None
        try:
            env = _env_of(raw, env_map)
            config = raw.get("init_config")
            s0: dict[str, Any] = config if isinstance(config, dict) else {}
            env_id, bundle, extras = _bundle(env, raw.get("env_class_name"), s0)
            chosen = _route(raw, path, route)
            coordinate, source = _coordinate(raw, chosen, mapping, taxonomy_id)
            task = _task(
                raw,
                path=path,
                index=index,
                round_key=round_key,
                env_id=env_id,
                env_extras=extras,
                route=chosen,
                coordinate=coordinate,
                coordinate_source=source,
            )
        except _Reject as exc:
            result.rejections.append(_rejection(path, index, exc.stage, exc.reason, task_id))
            continue
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "task"
            result.rejections.append(_rejection(path, index, "item", f"{where}: {first['msg']}", task_id))
            continue
        unknown.update(k for k in raw if k not in _TASK_FIELDS)
        result.bundles.setdefault(env_id, bundle)
        result.env_extras.setdefault(env_id, extras)
        result.tasks.append(task)
    result.unknown_fields = dict(unknown)
    return result


def verify_in_sandbox(result: ImportResult, sandbox: Sandbox) -> ImportResult:
    """Build every task's environment at its init_config in the sandbox; failures become rejections.

    Where the constructor adds attributes the init_config lacks, the task's init_config becomes the
    observed initial state (so graders see the same `initial_state` OmniaBench's runtime would),
    provided that rebuilding from it gives the same state; otherwise the original is kept."""
    kept: list[Task] = []
    for task in result.tasks:
        origin = task.metadata.get("omniabench", {})
        try:
            with sandbox.open(result.bundles[task.env_id], task.init_config) as session:
                observed, digest = session.state(), session.state_hash()
            if canonical_json(observed) != canonical_json(task.init_config):
                with sandbox.open(result.bundles[task.env_id], observed) as again:
                    if again.state_hash() == digest:
                        data = task.model_dump(mode="json", exclude={"id"})
                        data["metadata"]["omniabench"]["init_config_observed"] = True
                        task = Task.model_validate(data | {"init_config": observed})
        except SandboxError as exc:
            reason = f"the environment does not build at this init_config: {exc}"
            where = Path(str(origin.get("file", "")))
            result.rejections.append(
                _rejection(where, origin.get("index"), "sandbox", reason, origin.get("task_id"))
            )
            continue
        kept.append(task)
    used = {t.env_id for t in kept}
    result.tasks = kept
    result.bundles = {k: v for k, v in result.bundles.items() if k in used}
    return result


def import_omniabench(
    files: Sequence[str | Path],
    *,
    home: str | Path | None = None,
    round_key: str = "r0",
    domain_map: str | Path | None = None,
    taxonomy_id: int | None = None,
    route: RouteId | None = None,
    verify: bool = True,
    sandbox_config: SandboxConfig | None = None,
) -> ImportSummary:
    """`agentomnia import omniabench FILE...`: parse, check in the sandbox, and write under the home.

    Bundles go to `$AGENTOMNIA_HOME/envs/<env_id>/` (with `omniabench.json` for the environment's
    extra fields), tasks to `artifacts/omniabench_import/<round>/data.parquet` and rejections to
    `rejected.parquet` next to it."""
    result = read_omniabench(
        files, round_key=round_key, domain_map=domain_map, taxonomy_id=taxonomy_id, route=route
    )
    if verify and result.tasks:
        sandbox = Sandbox.from_config(sandbox_config or SandboxConfig(workers=1, idle_timeout_s=0))
        try:
            verify_in_sandbox(result, sandbox)
        finally:
            sandbox.close()
    storage = Storage(home)
    env_dirs = []
    for env_id, bundle in sorted(result.bundles.items()):
        folder = bundle.save(storage.env_dir(env_id))
        (folder / "omniabench.json").write_text(
            json.dumps(result.env_extras.get(env_id, {}), ensure_ascii=False, indent=1) + "\n",
            encoding="utf-8",
        )
        env_dirs.append(str(folder))
    artifacts = storage.round(round_key)
    tasks_path = save_records(artifacts.path(IMPORTED_TASKS), result.tasks, flat=["env_id", "kind", "query"])
    rejected_path = save_rejections(artifacts.path(IMPORTED_TASKS, "rejected"), result.rejections)
    return ImportSummary(
        files=[str(f) for f in files],
        tasks=len(result.tasks),
        environments=len(result.bundles),
        by_route=dict(Counter(str(t.metadata["omniabench"]["route"]) for t in result.tasks)),
        by_kind=dict(Counter(t.kind for t in result.tasks)),
        verified_in_sandbox=verify,
        unknown_fields=result.unknown_fields,
        tasks_path=str(tasks_path),
        rejected_path=str(rejected_path),
        env_dirs=env_dirs,
        rejected=result.rejections,
    )
