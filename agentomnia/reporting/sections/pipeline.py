"""Sections on what the round's pipeline made: the stage overview, taxonomy coverage, environments
and tasks."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentomnia.catalog import (
    DAG_TASKS,
    ENV_CANDIDATES,
    ENVIRONMENT_STATS,
    ENVIRONMENTS,
    PRDS,
    PROGRAM_TASKS,
    RAW_SEEDS,
    SELECTED_CANDIDATES,
    SOLVER_TASKS,
    SPLIT,
    STATE_SPECS,
    TASK_ARTIFACTS,
    TOOLSETS,
    TRAJECTORIES,
    VERIFIED_TRAJECTORIES,
    Artifact,
)
from agentomnia.reporting.model import Section
from agentomnia.reporting.reader import RoundReader
from agentomnia.reporting.widgets import details, label, note, pairs, table
from agentomnia.tasks.models import Task
from agentomnia.taxonomy import SPLITS, coverage, l1_key, taxonomy_index

# Stages in pipeline order for the overview: (label, artifact). Those that refuse inputs also record
# the refusals (their `rejected` file).
STAGES: tuple[tuple[str, Artifact], ...] = (
    ("seeds", RAW_SEEDS),
    ("environment candidates", ENV_CANDIDATES),
    ("selected candidates", SELECTED_CANDIDATES),
    ("state spaces", STATE_SPECS),
    ("toolsets", TOOLSETS),
    ("environments", ENVIRONMENTS),
    ("DAG tasks", DAG_TASKS),
    ("program tasks", PROGRAM_TASKS),
    ("solver tasks", SOLVER_TASKS),
    ("trajectories", TRAJECTORIES),
    ("verified trajectories", VERIFIED_TRAJECTORIES),
    ("PRDs", PRDS),
)
TOP_REASONS = 15  # rejection reasons listed one by one; the rest are counted
_ABSENT = "not materialized"


def overview(r: RoundReader, s: Section) -> None:
    rows = []
    for stage, artifact in STAGES:
        records = r.artifacts.row_count(artifact)
        rejected = r.artifacts.row_count(artifact, "rejected") if "rejected" in artifact.files else None
        rows.append(
            {
                "stage": stage,
                "asset": artifact.name,
                "records": _ABSENT if records is None else records,
                "rejected": rejected,
            }
        )
    if all(row["records"] == _ABSENT for row in rows):
        known = r.rounds_with_artifacts()
        s.lack(
            "round",
            f"nothing is materialized for round {r.key} under {r.store.root}; "
            + (f"rounds with artifacts: {', '.join(known)}" if known else "the home holds no artifacts yet"),
        )
        return
    s.add(table(rows, caption="records each stage kept (and refused, where it records refusals)"))


def taxonomy(r: RoundReader, s: Section) -> None:
    tax = taxonomy_index()
    has_envs = r.need(s, ENVIRONMENTS.name, ENVIRONMENTS)
    envs = r.artifacts.environments() if has_envs else []
    if not r.task_stages():
        s.lack("tasks", f"not materialized for this round (no {r.task_stage_names()} artifacts)")
    tasks = r.tasks()
    if not has_envs and not tasks:
        return
    env_l1 = [(str(e["split"]), l1_key(e["split"], e["l1"]), int(e["taxonomy_id"])) for e in envs]
    task_l1 = [(t.coordinate.split, t.coordinate.l1_key, t.coordinate.taxonomy_id) for t in tasks]

    def covered(items: Sequence[tuple[str, str, int]], split: str | None) -> tuple[int, int, int]:
        chosen = [i for i in items if split is None or i[0] == split]
        return len(chosen), len({i[1] for i in chosen}), len({i[2] for i in chosen})

    rows = []
    for split in (*SPLITS, None):
        ne, el1, el2 = covered(env_l1, split)
        nt, tl1, tl2 = covered(task_l1, split)
        rows.append(
            {
                "split": split or "all",
                "L1 in taxonomy": len(tax.l1s(split)),
                "L2 in taxonomy": len(tax.l2s(split)),
                "environments": ne if has_envs else None,
                "env L1": el1 if has_envs else None,
                "env L2": el2 if has_envs else None,
                "tasks": nt,
                "task L1": tl1,
                "task L2": tl2,
            }
        )
    s.add(table(rows, caption="L1 and L2 domains the round's environments and tasks cover, by split"))
    l2_per_l1 = Counter(d.l1_key for d in tax.domains)
    env_by, task_by = defaultdict(set), defaultdict(set)
    env_n, task_n = Counter(i[1] for i in env_l1), Counter(i[1] for i in task_l1)
    for _, key, l2 in env_l1:
        env_by[key].add(l2)
    for _, key, l2 in task_l1:
        task_by[key].add(l2)
    per_l1 = [
        {
            "L1": key,
            "L2 in taxonomy": l2_per_l1.get(key),
            "environments": env_n[key],
            "env L2": len(env_by[key]),
            "tasks": task_n[key],
            "task L2": len(task_by[key]),
        }
        for key in sorted(set(env_n) | set(task_n))
    ]
    s.add(details(f"per L1 domain ({len(per_l1)} of {len(l2_per_l1)} covered)", table(per_l1)))
    if tasks:
        cov = coverage(tasks)
        s.add(
            '<div class="row">'
            + table(
                [{"capability": k, "tasks": v} for k, v in cov.capability.items()],
                caption="tasks by capability",
            )
            + table(
                [{"atom": k, "tasks": v} for k, v in cov.atom.items()], caption="tasks by difficulty atom"
            )
            + "</div>"
        )


def environments(r: RoundReader, s: Section) -> None:
    a = r.artifacts
    if r.need(s, "environment statistics", ENVIRONMENT_STATS):
        rows = a.rows(ENVIRONMENT_STATS, json_columns=["splits"])
        if rows:
            s.add(
                pairs({label(k): v for k, v in rows[0].items()}, caption="environment statistics (Table 5)")
            )
        histogram = a.location(ENVIRONMENT_STATS, "histogram")
        if histogram.exists():
            s.add(r.image(histogram, "tools, entities and attributes per environment"))
    if a.exists(ENVIRONMENTS):
        by_split: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for e in a.environments():
            by_split[str(e["split"])].append(e)
        s.add(
            table(
                [
                    {
                        "split": k,
                        "environments": len(v),
                        "tools": sum(int(e["tools"]) for e in v),
                        "tools mean": sum(int(e["tools"]) for e in v) / len(v),
                        "dropped tools": sum(int(e.get("dropped_tools") or 0) for e in v),
                    }
                    for k, v in sorted(by_split.items())
                ],
                caption="verified environments by split",
            )
        )
    if a.exists(ENVIRONMENTS, "verification"):
        checks = a.verification()
        verified = sum(1 for c in checks if c.get("verified"))
        s.add(pairs({"environments verified (all three levels)": f"{verified} of {len(checks)}"}))
    if a.exists(SELECTED_CANDIDATES, "rejected"):
        rules = Counter(str(row.get("rule")) for row in a.rows(SELECTED_CANDIDATES, "rejected"))
        if rules:
            s.add(
                table(
                    [{"rule": k, "candidates": v} for k, v in rules.most_common()],
                    caption="candidates left out by seed selection",
                )
            )


def tasks(r: RoundReader, s: Section) -> None:
    a = r.artifacts
    stages = r.task_stages()
    for artifact in TASK_ARTIFACTS:
        r.need(s, artifact.name, artifact)
    if not stages:
        return
    all_tasks = r.tasks()
    training = a.training_task_ids()
    by_kind: dict[str, list[Task]] = defaultdict(list)
    for t in all_tasks:
        by_kind[t.kind].append(t)
    rows = [
        {
            "kind": kind,
            "tasks": len(group),
            "multi-turn": sum(1 for t in group if t.interaction == "multi"),
            "reference calls (mean)": sum(len(t.reference_calls) for t in group) / len(group),
            "left to training": None if training is None else sum(1 for t in group if t.id in training),
        }
        for kind, group in sorted(by_kind.items())
    ]
    rows.append(
        {
            "kind": "all",
            "tasks": len(all_tasks),
            "multi-turn": sum(1 for t in all_tasks if t.interaction == "multi"),
            "left to training": None if training is None else sum(1 for t in all_tasks if t.id in training),
        }
    )
    s.add(table(rows, caption="tasks by kind"))
    if training is None:
        s.note("the OmniaBench split has not run for this round, so no task is counted as left to training")
    else:
        s.add(
            pairs(
                {
                    "tasks left to training": len(training),
                    "excluded as too close to a benchmark item": a.row_count(SPLIT, "excluded") or 0,
                }
            )
        )
    rejections = [
        row for artifact in stages if a.exists(artifact, "rejected") for row in a.rows(artifact, "rejected")
    ]
    if not rejections:
        s.note("no task candidate was rejected")
        return
    by_stage = Counter((str(x.get("kind")), str(x.get("stage"))) for x in rejections)
    s.add(
        table(
            [{"kind": k, "stage": st, "rejected": n} for (k, st), n in sorted(by_stage.items())],
            caption=f"{len(rejections)} rejected task candidates by kind and stage",
        )
    )
    reasons = Counter((str(x.get("stage")), str(x.get("reason"))[:200]) for x in rejections)
    top = [{"stage": st, "reason": why, "times": n} for (st, why), n in reasons.most_common(TOP_REASONS)]
    rest = len(reasons) - len(top)
    s.add(
        details(
            f"most frequent rejection reasons ({len(reasons)} distinct)",
            table(top) + (note(f"{rest} rarer reasons not listed") if rest > 0 else ""),
            open_=True,
        )
    )


def _earlier_environments(r: RoundReader) -> list[Path]:
    """The bundle folders of the run's rounds before this one (`r<N>` with a lower N)."""
    import re

    index = re.fullmatch(r"r(\d+)", r.key)
    if index is None:
        return []
    earlier = [
        k for k in r.catalog.rounds() if (m := re.fullmatch(r"r(\d+)", k)) and int(m[1]) < int(index[1])
    ]
    return [Path(e["path"]) for key in earlier for e in r.catalog.round(key).environments() if e.get("path")]


def realism(r: RoundReader, s: Section) -> None:
    """How real the round's worlds, tools and requests read (`agentomnia.realism`), beside the targets."""
    from html import escape

    from agentomnia.realism import TARGETS, read_bundles, realism_figures

    if not r.need(s, "environments", ENVIRONMENTS):
        return
    worlds = read_bundles(Path(e["path"]) for e in r.artifacts.environments() if e.get("path"))
    queries = [t.query for t in r.tasks()]
    if not queries:
        s.lack("task requests", f"no task stage materialized for this round ({r.task_stage_names()})")
    figures = realism_figures(worlds, queries, read_bundles(_earlier_environments(r)))
    rows = [
        {
            "figure": label(name),
            "value": figures.get(name),
            "target": f"{op} {bound:.3g}",
            "met": "yes" if figures["meets"].get(name) else "no",
        }
        for name, (op, bound) in TARGETS.items()
    ]
    s.add(table(rows, caption="realism of the round's data"))
    others = {
        label(k): v
        for k, v in figures.items()
        if k not in TARGETS and isinstance(v, (int, float)) and k != "meets"
    }
    s.add(pairs(others, caption="counts behind the figures"))
    if figures.get("placeholder_examples"):
        s.add(
            details(
                "placeholder values still present",
                "<br>".join(escape(x) for x in figures["placeholder_examples"]),
            )
        )
