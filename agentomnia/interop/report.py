"""The run report: one self-contained HTML page showing what a round made, stage by stage.

A round's results are spread over Parquet files, JSON reports, Markdown PRDs and PNG plots under the
platform home, and the Dagster UI shows them one asset at a time, only while an instance is running.
This page gathers them into a single file that can be mailed, attached to a pull request or opened
years later without a network: no external CSS, scripts or fonts (its Content-Security-Policy forbids
fetching anything), every plot embedded as a base64 PNG, and every piece of text from the data
escaped, so a PRD title or a rejection reason can never inject markup.

    summary = write_report("r1", Path("report.html"))   # home: $AGENTOMNIA_HOME unless given
    summary.sections, summary.missing, summary.bytes

It only reads the home. A stage not materialized for the round becomes a short note saying so (and an
entry in `ReportSummary.missing`); an artifact that cannot be read becomes a note with the error. A
report on a half-run round is still a report.
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
import re
import tempfile
import textwrap
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import yaml
from pydantic import BaseModel, ConfigDict

from agentomnia.config import home as default_home
from agentomnia.evolution import PRD, Alignment, DiagnosisReport, SynthesisDirectives, render_markdown
from agentomnia.omniabench.metrics import report as eval_report
from agentomnia.omniabench.models import BenchmarkSplit
from agentomnia.omniabench.service import load_results
from agentomnia.storage import Storage, load_records, read_parquet
from agentomnia.tasks.models import Task
from agentomnia.taxonomy import SPLITS, coverage, l1_key, taxonomy_index
from agentomnia.trajectories.models import Trajectory
from agentomnia.trajectories.synthesis import pass_rates, summarize

_ROUND_KEY = re.compile(r"^[A-Za-z0-9_.-]+$")
TASK_ASSETS: tuple[str, ...] = ("dag_tasks", "program_tasks", "solver_tasks")
# Stages in pipeline order for the overview: (label, asset). Each writes `data.parquet`, and those that
# refuse inputs also `rejected.parquet`.
STAGES: tuple[tuple[str, str], ...] = (
    ("seeds", "raw_seeds"),
    ("environment candidates", "environment_candidates"),
    ("selected candidates", "selected_environment_seeds"),
    ("state spaces", "state_specs"),
    ("toolsets", "toolsets"),
    ("environments", "environments"),
    ("DAG tasks", "dag_tasks"),
    ("program tasks", "program_tasks"),
    ("solver tasks", "solver_tasks"),
    ("trajectories", "trajectories"),
    ("verified trajectories", "verified_trajectories"),
    ("PRDs", "prds"),
)
BENCHMARK_AXES: tuple[str, ...] = ("route", "split", "challenging", "l1", "capability", "atom")
TOP_REASONS = 15  # rejection reasons listed one by one; the rest are counted


class MissingPart(BaseModel):
    """Something the page could not show: which section, which part of it, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    section: str
    item: str
    reason: str


class ReportSummary(BaseModel):
    """What `write_report` wrote: the file, which sections hold data, what is missing and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    round: str
    path: str
    sections: list[str]  # ids of the sections that show data from the round
    missing: list[MissingPart]
    images: int  # PNGs embedded
    bytes: int


class RenderedReport(BaseModel):
    """The page before it is written: its HTML and the same accounting as `ReportSummary`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    round: str
    html: str
    sections: list[str]
    missing: list[MissingPart]
    images: int


# -- HTML pieces ------------------------------------------------------------------------------------


def _number(value: float) -> str:
    if value != value:  # NaN
        return "nan"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if abs(value) < 1e-3:
        return f"{value:.3g}"
    return f"{value:.4f}".rstrip("0").rstrip(".")


def _plain(value: Any) -> str:
    """A cell's text before escaping: numbers trimmed, collections joined, nothing as a dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(_plain(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_plain(v)}" for k, v in value.items())
    return str(value)


def _e(value: Any) -> str:
    return html.escape(_plain(value))


def _cell(value: Any) -> str:
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    return f'<td class="n">{_e(value)}</td>' if numeric else f"<td>{_e(value)}</td>"


def _table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None, caption: str = "") -> str:
    if not rows:
        return _note(f"{caption or 'table'}: no rows")
    cols = list(columns) if columns is not None else list(dict.fromkeys(k for r in rows for k in r))
    head = "".join(f"<th>{_e(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(_cell(r.get(c)) for c in cols) + "</tr>" for r in rows)
    cap = f"<caption>{_e(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _pairs(items: Mapping[str, Any], caption: str = "") -> str:
    """A two-column table of labelled values."""
    body = "".join(f"<tr><th>{_e(k)}</th>{_cell(v)}</tr>" for k, v in items.items())
    cap = f"<caption>{_e(caption)}</caption>" if caption else ""
    return f'<table class="pairs">{cap}<tbody>{body}</tbody></table>'


def _note(text: str) -> str:
    return f'<p class="note">{html.escape(text)}</p>'


def _details(summary: str, inner: str, *, open_: bool = False) -> str:
    return f"<details{' open' if open_ else ''}><summary>{_e(summary)}</summary>{inner}</details>"


def _h(level: int, text: str) -> str:
    return f"<h{level}>{_e(text)}</h{level}>"


def _label(key: str) -> str:
    return key.replace("_", " ")


# -- Markdown ---------------------------------------------------------------------------------------

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^(\s*)(?:([-*+])|\d+[.)])\s+(.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`[^`]+`)")
_STRONG = re.compile(r"\*\*(.+?)\*\*")


def _inline(text: str) -> str:
    """Escaped text with code spans and bold; links stay literal text (a report follows no URL)."""
    out = []
    for part in _CODE_SPAN.split(text):
        if len(part) > 2 and part.startswith("`") and part.endswith("`"):
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
        else:
            out.append(_STRONG.sub(r"<strong>\1</strong>", html.escape(part)))
    return "".join(out)


def _split_front_matter(text: str) -> tuple[str | None, str]:
    """(YAML front matter, body); an opening fence that is never closed is left in the body."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return None, text
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1 :])
    return None, text


def _front_matter_html(front: str) -> str:
    try:
        data = yaml.safe_load(front)
    except yaml.YAMLError:
        data = None
    if not isinstance(data, dict):
        return f"<pre>{html.escape(front)}</pre>"
    return _details(f"front matter ({len(data)} fields)", _pairs({str(k): v for k, v in data.items()}))


class _Blocks:
    """Line-by-line block builder: headings, paragraphs, bullet and numbered lists, indented and
    fenced blocks as preformatted text (PRDs show call transcripts that way)."""

    def __init__(self, heading_offset: int) -> None:
        self.offset = heading_offset
        self.out: list[str] = []
        self.kind: str | None = None  # p | ul | ol | pre | fence
        self.lines: list[str] = []

    def start(self, kind: str) -> None:
        if kind != self.kind:
            self.flush()
            self.kind = kind

    def flush(self) -> None:
        if self.kind == "p":
            self.out.append("<p>" + "<br>\n".join(_inline(line.strip()) for line in self.lines) + "</p>")
        elif self.kind in ("ul", "ol"):
            items = "".join(f"<li>{_inline(item)}</li>" for item in self.lines)
            self.out.append(f"<{self.kind}>{items}</{self.kind}>")
        elif self.kind in ("pre", "fence"):
            self.out.append("<pre>" + html.escape(textwrap.dedent("\n".join(self.lines))) + "</pre>")
        self.kind, self.lines = None, []

    def feed(self, line: str) -> None:
        if self.kind == "fence":
            if _FENCE.match(line):
                self.flush()
            else:
                self.lines.append(line)
            return
        if _FENCE.match(line):
            self.start("fence")
            return
        if not line.strip():
            self.flush()
            return
        heading = _HEADING.match(line)
        if heading:
            self.flush()
            level = min(6, len(heading.group(1)) + self.offset)
            self.out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
            return
        indented = line[:1] in (" ", "\t")
        item = _ITEM.match(line)
        if item and (not indented or self.kind in ("ul", "ol")):
            # an indented item inside an open list stays in it (nesting is flattened)
            self.start("ul" if item.group(2) else "ol")
            self.lines.append(item.group(3))
        elif indented and self.kind in ("ul", "ol"):
            self.lines[-1] += " " + line.strip()  # the continuation of a list item
        elif indented:
            self.start("pre")
            self.lines.append(line)
        else:
            self.start("p")
            self.lines.append(line)


def markdown_html(text: str, *, heading_offset: int = 2) -> str:
    """Markdown (the subset PRDs use) as escaped HTML; YAML front matter becomes a collapsed table.
    `heading_offset` pushes headings down so a document's `#` sits under the page's own headings."""
    front, body = _split_front_matter(text)
    blocks = _Blocks(heading_offset)
    for line in body.splitlines():
        blocks.feed(line)
    blocks.flush()
    return (_front_matter_html(front) if front is not None else "") + "\n".join(blocks.out)


# -- the round's artifacts --------------------------------------------------------------------------


class _Section:
    """One section of the page: HTML fragments, and what could not be shown."""

    def __init__(self, key: str, title: str) -> None:
        self.key, self.title = key, title
        self.parts: list[str] = []
        self.missing: list[MissingPart] = []
        self.shown = False  # something from the round's data is on the page

    def add(self, fragment: str) -> None:
        self.parts.append(fragment)
        self.shown = True

    def note(self, text: str) -> None:
        """A remark that is not a gap (e.g. the base round has no failures to align with)."""
        self.parts.append(_note(text))

    def lack(self, item: str, reason: str) -> None:
        self.missing.append(MissingPart(section=self.key, item=item, reason=reason))
        self.parts.append(_note(f"{item}: {reason}"))

    def html(self) -> str:
        badge = "" if self.shown else ' <span class="badge">not materialized</span>'
        return f'<section id="{self.key}"><h2>{_e(self.title)}{badge}</h2>{"".join(self.parts)}</section>'


class _Round:
    """Paths of one round under the home, read without creating anything, and embedded images."""

    def __init__(self, store: Storage, round_key: str) -> None:
        self.store, self.key = store, round_key
        self.images = 0
        self._tasks: list[Task] | None = None

    def artifact(self, asset: str, name: str = "data.parquet") -> Path:
        # not Storage.artifact: that creates the folder, and a report must leave the home untouched
        return self.store.root / "artifacts" / asset / self.key / name

    def rel(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.store.root))
        except ValueError:
            return str(path)

    def need(self, section: _Section, item: str, path: Path) -> Path | None:
        """`path` when it exists; otherwise None, and the section notes that `item` is missing."""
        if path.exists():
            return path
        section.lack(item, f"not materialized for this round ({self.rel(path)} is absent)")
        return None

    def rows(self, path: Path) -> int:
        return int(pq.read_metadata(path).num_rows)

    def image(self, path: Path, caption: str) -> str:
        return self.png(path.read_bytes(), caption or path.name)

    def png(self, data: bytes, caption: str) -> str:
        self.images += 1
        encoded = base64.b64encode(data).decode("ascii")
        return (
            f'<figure><img alt="{html.escape(caption, quote=True)}" src="data:image/png;base64,{encoded}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        )

    def images_in(self, section: _Section, folder: Path, item: str) -> None:
        pngs = sorted(folder.glob("*.png")) if folder.is_dir() else []
        if not pngs:
            section.lack(item, f"no PNG under {self.rel(folder)}")
        for path in pngs:
            section.add(self.image(path, path.stem.replace("_", " ")))

    def tasks(self) -> list[Task]:
        """Every task the round kept, from whichever task assets were materialized (loaded once)."""
        if self._tasks is None:
            self._tasks = [
                t
                for asset in TASK_ASSETS
                if self.artifact(asset).exists()
                for t in load_records(self.artifact(asset), Task)
            ]
        return self._tasks

    def task_assets(self) -> list[str]:
        return [a for a in TASK_ASSETS if self.artifact(a).exists()]

    def rounds_with_artifacts(self) -> list[str]:
        folder = self.store.root / "artifacts"
        found = {p.name for p in folder.glob("*/*") if p.is_dir()} if folder.is_dir() else set()
        return sorted(found - {"static"})


# -- sections ---------------------------------------------------------------------------------------


def _overview(r: _Round, s: _Section) -> None:
    rows = []
    for label, asset in STAGES:
        path, rejected = r.artifact(asset), r.artifact(asset, "rejected.parquet")
        rows.append(
            {
                "stage": label,
                "asset": asset,
                "records": r.rows(path) if path.exists() else "not materialized",
                "rejected": r.rows(rejected) if rejected.exists() else None,
            }
        )
    if all(row["records"] == "not materialized" for row in rows):
        known = r.rounds_with_artifacts()
        s.lack(
            "round",
            f"nothing is materialized for round {r.key} under {r.store.root}; "
            + (f"rounds with artifacts: {', '.join(known)}" if known else "the home holds no artifacts yet"),
        )
        return
    s.add(_table(rows, caption="records each stage kept (and refused, where it records refusals)"))


def _taxonomy(r: _Round, s: _Section) -> None:
    tax = taxonomy_index()
    env_path = r.need(s, "environments", r.artifact("environments"))
    envs = read_parquet(env_path) if env_path else []
    if not r.task_assets():
        s.lack("tasks", f"not materialized for this round (no {', '.join(TASK_ASSETS)} artifacts)")
    tasks = r.tasks()
    if env_path is None and not tasks:
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
                "environments": ne if env_path else None,
                "env L1": el1 if env_path else None,
                "env L2": el2 if env_path else None,
                "tasks": nt,
                "task L1": tl1,
                "task L2": tl2,
            }
        )
    s.add(_table(rows, caption="L1 and L2 domains the round's environments and tasks cover, by split"))
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
    s.add(_details(f"per L1 domain ({len(per_l1)} of {len(l2_per_l1)} covered)", _table(per_l1)))
    if tasks:
        cov = coverage(tasks)
        s.add(
            '<div class="row">'
            + _table(
                [{"capability": k, "tasks": v} for k, v in cov.capability.items()],
                caption="tasks by capability",
            )
            + _table(
                [{"atom": k, "tasks": v} for k, v in cov.atom.items()], caption="tasks by difficulty atom"
            )
            + "</div>"
        )


def _environments(r: _Round, s: _Section) -> None:
    stats = r.need(s, "environment statistics", r.artifact("environment_stats"))
    if stats:
        rows = read_parquet(stats, json_columns=["splits"])
        if rows:
            s.add(
                _pairs({_label(k): v for k, v in rows[0].items()}, caption="environment statistics (Table 5)")
            )
        histogram = r.artifact("environment_stats", "histogram.png")
        if histogram.exists():
            s.add(r.image(histogram, "tools, entities and attributes per environment"))
    index = r.artifact("environments")
    if index.exists():
        envs = read_parquet(index)
        by_split: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for e in envs:
            by_split[str(e["split"])].append(e)
        s.add(
            _table(
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
    verification = r.artifact("environments", "verification.parquet")
    if verification.exists():
        checks = read_parquet(verification)
        verified = sum(1 for c in checks if c.get("verified"))
        s.add(_pairs({"environments verified (all three levels)": f"{verified} of {len(checks)}"}))
    refused = r.artifact("selected_environment_seeds", "rejected.parquet")
    if refused.exists():
        rules = Counter(str(row.get("rule")) for row in read_parquet(refused))
        if rules:
            s.add(
                _table(
                    [{"rule": k, "candidates": v} for k, v in rules.most_common()],
                    caption="candidates left out by seed selection",
                )
            )


def _tasks(r: _Round, s: _Section) -> None:
    assets = r.task_assets()
    for asset in TASK_ASSETS:
        r.need(s, asset, r.artifact(asset))
    if not assets:
        return
    tasks = r.tasks()
    split_path = r.artifact("omniabench_split", "training.parquet")
    training = {str(x["task_id"]) for x in read_parquet(split_path)} if split_path.exists() else None
    by_kind: dict[str, list[Task]] = defaultdict(list)
    for t in tasks:
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
            "tasks": len(tasks),
            "multi-turn": sum(1 for t in tasks if t.interaction == "multi"),
            "left to training": None if training is None else sum(1 for t in tasks if t.id in training),
        }
    )
    s.add(_table(rows, caption="tasks by kind"))
    if training is None:
        s.note("the OmniaBench split has not run for this round, so no task is counted as left to training")
    else:
        excluded = r.artifact("omniabench_split", "excluded.parquet")
        s.add(
            _pairs(
                {
                    "tasks left to training": len(training),
                    "excluded as too close to a benchmark item": r.rows(excluded) if excluded.exists() else 0,
                }
            )
        )
    rejections = [
        row
        for asset in assets
        if r.artifact(asset, "rejected.parquet").exists()
        for row in read_parquet(r.artifact(asset, "rejected.parquet"))
    ]
    if not rejections:
        s.note("no task candidate was rejected")
        return
    stages = Counter((str(x.get("kind")), str(x.get("stage"))) for x in rejections)
    s.add(
        _table(
            [{"kind": k, "stage": st, "rejected": n} for (k, st), n in sorted(stages.items())],
            caption=f"{len(rejections)} rejected task candidates by kind and stage",
        )
    )
    reasons = Counter((str(x.get("stage")), str(x.get("reason"))[:200]) for x in rejections)
    top = [{"stage": st, "reason": why, "times": n} for (st, why), n in reasons.most_common(TOP_REASONS)]
    rest = len(reasons) - len(top)
    s.add(
        _details(
            f"most frequent rejection reasons ({len(reasons)} distinct)",
            _table(top) + (_note(f"{rest} rarer reasons not listed") if rest > 0 else ""),
            open_=True,
        )
    )


def _trajectories(r: _Round, s: _Section) -> None:
    path = r.need(s, "trajectories", r.artifact("trajectories"))
    if path is None:
        return
    runs = load_records(path, Trajectory)
    # Grouped by the guidance each run was given, not by which teacher run made it: paradigms that take
    # no guidance run alike in both, and the records do not say which run they came from.
    groups: dict[str, list[Trajectory]] = defaultdict(list)
    for t in runs:
        groups[t.guidance].append(t)
    rows = []
    for label, group in [*sorted(groups.items()), ("all", runs)]:
        numbers = summarize(group)
        rows.append(
            {
                "guidance": label,
                "trajectories": numbers["trajectories"],
                "verified": numbers["verified"],
                "yield": numbers["yield"],
                "correctness": numbers["correctness_pass_rate"],
                "grounding": numbers["grounding_pass_rate"],
                "consistency": numbers["consistency_pass_rate"],
                "continuity": numbers["continuity_pass_rate"],
                "no leak": numbers["leak_pass_rate"],
                "mean steps": numbers["mean_steps"],
                "stopped by error": numbers["stopped_by_error"],
            }
        )
    s.add(_table(rows, caption="trajectory yield and check pass rates"))
    paradigms = [
        {"paradigm": p.paradigm, "guidance": p.guidance, "trajectories": p.total, **p.rates}
        for p in pass_rates(runs)
    ]
    s.add(_details("pass rates by paradigm and guidance", _table(paradigms), open_=True))
    kept = r.need(s, "verified trajectories", r.artifact("verified_trajectories"))
    if kept:
        s.add(_pairs({"trajectories kept for training": r.rows(kept)}))
    plot = r.artifact("trajectories", "guidance_ablation.png")
    if plot.exists():
        s.add(r.image(plot, "verified rate per paradigm, with and without guidance"))


def _datasets(r: _Round, s: _Section) -> None:
    numbers: dict[str, Any] = {}
    sft = r.need(s, "SFT dataset", r.store.dataset_dir("sft", r.key) / "openai.jsonl")
    if sft:
        with sft.open(encoding="utf-8") as handle:
            numbers["SFT rows"] = sum(1 for line in handle if line.strip())
    rl = r.need(s, "RL dataset", r.store.dataset_dir("rl", r.key) / "items.json")
    if rl:
        items = json.loads(rl.read_text(encoding="utf-8"))
        numbers["RL items"] = len(items)
        levels = Counter(str(i.get("level")) for i in items if isinstance(i, dict))
        numbers["RL items by level"] = dict(sorted(levels.items()))
    if numbers:
        s.add(_pairs(numbers, caption="training datasets"))


def _training(r: _Round, s: _Section) -> None:
    _datasets(r, s)
    for label, kind in (("SFT checkpoint", "sft"), ("RL checkpoint (GRPO)", "rl")):
        folder = r.store.checkpoint_dir(kind, r.key)
        report_path = r.need(s, label, folder / "train_report.json")
        if report_path is None:
            continue
        # read as plain JSON: the trainers' TrainReport model lives above the engine, which never imports it
        data = json.loads(report_path.read_text(encoding="utf-8"))
        first, last = data.get("first_loss"), data.get("last_loss")
        numbers = {
            "trainer": data.get("kind"),
            "steps": data.get("steps"),
            "seconds": round(float(data.get("seconds") or 0.0), 1),
            "first loss": first,
            "last loss": last,
            "loss drop": (first - last) / abs(first)
            if isinstance(first, float) and isinstance(last, float) and first
            else None,
        }
        extra = data.get("extra") or {}
        if isinstance(extra.get("rewards"), list) and extra["rewards"]:
            numbers["mean reward, last step"] = extra["rewards"][-1][1]
        if "dropped_rollouts" in extra:
            numbers["dropped rollouts"] = extra["dropped_rollouts"]
        s.add(_h(3, label) + _pairs(numbers))
        r.images_in(s, folder, f"{label} curves")
    calibration = r.need(s, "reward-model calibration", r.artifact("reward_model_report", "report.json"))
    if calibration is None:
        return
    data = json.loads(calibration.read_text(encoding="utf-8"))
    minimums = {}
    table_path = r.artifact("reward_model_report")
    if table_path.exists():
        minimums = {str(row["dimension"]): row.get("minimum") for row in read_parquet(table_path)}
    scores = [
        {"dimension": d, "score": v, "minimum": minimums.get(d)}
        for d, v in (data.get("scores") or {}).items()
    ]
    s.add(
        _h(3, "reward-model calibration")
        + _table(scores)
        + _pairs(
            {
                "overall": data.get("overall"),
                "passed": data.get("passed"),
                "failures": data.get("failures") or "none",
            }
        )
    )
    plot = r.artifact("reward_model_report", "calibration.png")
    if plot.exists():
        s.add(r.image(plot, "reward-model calibration"))


def _benchmark(r: _Round, s: _Section) -> None:
    split_path = r.need(s, "benchmark split", r.store.root / "benchmark" / "split.json")
    if split_path:
        split = BenchmarkSplit.model_validate_json(split_path.read_text(encoding="utf-8"))
        s.add(
            _pairs(
                {
                    "benchmark": split.id,
                    "items": len(split.items),
                    "challenging items": sum(1 for i in split.items if i.challenging),
                    "items by route": dict(sorted(Counter(i.route for i in split.items).items())),
                },
                caption="the held-out benchmark (built once, shared by every round)",
            )
        )
    results = load_results(r.store, r.key)
    if not results:
        folder = r.store.root / "artifacts" / "omniabench_eval" / r.key
        s.lack("evaluation", f"not materialized for this round (no results under {r.rel(folder)})")
        return
    for policy, runs in results.items():
        rep = eval_report(runs)
        parts = [_h(3, f"policy {policy}"), _table(rep.rows("overall"), caption=f"overall (k = {rep.k})")]
        for axis in BENCHMARK_AXES:
            if axis in rep.breakdowns:
                table = _table(rep.rows(axis))
                parts.append(_details(f"by {axis}", table, open_=axis in ("route", "split")))
        s.add("".join(parts))
    folder = r.store.root / "artifacts" / "omniabench_eval" / r.key
    for path in sorted(folder.glob("*.png")):
        s.add(r.image(path, path.stem.replace("_", " ")))


def _prd_heading(text: str, fallback: str) -> str:
    front, _ = _split_front_matter(text)
    try:
        data = yaml.safe_load(front) if front is not None else None
    except yaml.YAMLError:
        data = None
    if not isinstance(data, dict):
        return fallback
    bits = [data.get("prd_id") or fallback, data.get("priority"), data.get("status"), data.get("title")]
    return " · ".join(str(b) for b in bits if b)


def _prds(r: _Round, s: _Section) -> None:
    diagnosis = r.need(s, "failure diagnosis", r.artifact("failure_diagnosis", "report.json"))
    if diagnosis:
        report = DiagnosisReport.model_validate_json(diagnosis.read_text(encoding="utf-8"))
        gaps = [
            {
                "capability": g.gap.capability,
                "atoms": list(g.gap.atoms),
                "tag": g.dominant_tag,
                "failures": g.frequency,
                "severity": g.severity,
                "tasks": len(g.task_ids),
            }
            for g in report.capability_diagnoses
        ]
        s.add(
            _pairs(
                {
                    "failures diagnosed": report.failure_count,
                    "capability gaps": len(gaps),
                    "analyst": report.analyst,
                },
                caption="failure diagnosis",
            )
        )
        if gaps:
            s.add(_table(gaps, caption="capability gaps, heaviest first"))
    folder = r.artifact("prds").parent
    documents = [(p.stem, p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.md"))]
    records = r.artifact("prds")
    if not documents and records.exists():
        documents = [(p.prd_id, render_markdown(p)) for p in load_records(records, PRD)]
    if not documents:
        if r.need(s, "PRDs", records):
            s.note("the round has no PRDs: no failures were diagnosed and no PRD files were in the inbox")
        return
    directives_path = r.artifact("prds", "directives.json")
    if directives_path.exists():
        d = SynthesisDirectives.model_validate_json(directives_path.read_text(encoding="utf-8"))
        s.add(
            _pairs(
                {
                    "PRDs": list(d.prd_ids),
                    "target L1": list(d.target_l1),
                    "target L2 domains": len(d.target_l2),
                    "environment variations": list(d.env_variations) or "none",
                    "task variations": list(d.task_variations) or "none",
                },
                caption="synthesis directives the PRDs set",
            )
        )
    for i, (name, text) in enumerate(documents):
        body = f'<div class="prd">{markdown_html(text, heading_offset=2)}</div>'
        s.add(_details(_prd_heading(text, name), body, open_=i == 0))


def _alignment_png(a: Alignment, r: _Round) -> str:
    from matplotlib.figure import Figure  # the object API: no global pyplot state, no display needed

    keys = sorted(a.support, key=lambda k: -a.p_failures.get(k, 0.0))[:25]
    series = [("failures", a.p_failures), ("this round", a.p_round)]
    if a.p_previous is not None:
        series.append(("previous data", a.p_previous))
    fig = Figure(figsize=(7, 0.28 * len(keys) + 1.4))
    ax = fig.subplots()
    height = 0.8 / len(series)
    for i, (label, dist) in enumerate(series):
        ax.barh(
            [j + i * height for j in range(len(keys))], [dist.get(k, 0.0) for k in keys], height, label=label
        )
    ax.set_yticks([j + height * (len(series) - 1) / 2 for j in range(len(keys))], keys, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("share")
    ax.legend(fontsize=7)
    previous = f", previous data {a.kl_previous:.3f}" if a.kl_previous is not None else ""
    ax.set_title(f"KL to the failures: this round {a.kl_round:.3f}{previous}", fontsize=9)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return r.png(
        buffer.getvalue(), "share of failures, of this round's tasks and of earlier data per L1 domain"
    )


def _alignment(r: _Round, s: _Section) -> None:
    path = r.need(s, "alignment", r.artifact("prd_alignment", "alignment.json"))
    if path is None:
        return
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("kl_round") is None:
        s.add(_pairs({"round": data.get("round"), "parent round": data.get("parent_round") or "none"}))
        s.note("nothing to compare: no failures triggered this round (or it has no training tasks)")
        return
    a = Alignment.model_validate({k: v for k, v in data.items() if k in Alignment.model_fields})
    s.add(
        _pairs(
            {
                "parent round": data.get("parent_round"),
                "axis": a.axis,
                "KL(round ‖ failures)": a.kl_round,
                "KL(previous data ‖ failures)": a.kl_previous,
                "closer to the failures than before": a.improved,
                "tasks in the round": a.n_round,
                "tasks before": a.n_previous,
                "failures": a.n_failures,
            },
            caption="alignment of the round's data with the failures that triggered it",
        )
    )
    rows = [
        {
            "L1": k,
            "failures": a.p_failures.get(k, 0.0),
            "this round": a.p_round.get(k, 0.0),
            "previous data": None if a.p_previous is None else a.p_previous.get(k, 0.0),
        }
        for k in sorted(a.support, key=lambda k: (-a.p_failures.get(k, 0.0), k))
    ]
    s.add(_details("distributions over L1 domains", _table(rows)))
    s.add(_alignment_png(a, r))


SECTIONS: tuple[tuple[str, str, Callable[[_Round, _Section], None]], ...] = (
    ("overview", "Pipeline at a glance", _overview),
    ("taxonomy", "Taxonomy coverage", _taxonomy),
    ("environments", "Environments", _environments),
    ("tasks", "Tasks", _tasks),
    ("trajectories", "Trajectories", _trajectories),
    ("training", "Training", _training),
    ("benchmark", "OmniaBench", _benchmark),
    ("prds", "Diagnosis and PRDs", _prds),
    ("alignment", "PRD alignment", _alignment),
)


# -- the page ---------------------------------------------------------------------------------------

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2330;
  background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:18px 28px}
header h1{margin:0 0 4px;font-size:22px}
header .meta{margin:0;color:#c9d1e0;font-size:12px}
nav ol{margin:10px 0 0;padding-left:20px;columns:3}
nav a{color:#9cc3ff}
main{padding:8px 28px 40px;max-width:1200px}
section{background:#fff;border:1px solid #dde1e8;border-radius:6px;padding:8px 18px 14px;margin:16px 0}
h2{font-size:18px;border-bottom:1px solid #e5e8ee;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}
h4{font-size:14px;margin:12px 0 4px}
h5,h6{font-size:13px;margin:10px 0 4px}
table{border-collapse:collapse;margin:8px 16px 8px 0;font-size:12.5px}
caption{text-align:left;font-weight:600;padding:4px 0}
th,td{border:1px solid #dde1e8;padding:3px 8px;text-align:left;vertical-align:top}
thead th{background:#eef1f6}
td.n{text-align:right;font-variant-numeric:tabular-nums}
table.pairs th{background:#f6f7f9;font-weight:500}
.row{display:flex;flex-wrap:wrap;align-items:flex-start}
figure{margin:10px 0}
figure img{max-width:100%;height:auto}
figcaption{font-size:12px;color:#5a6475}
.note{color:#7a4b00;background:#fff7e6;border-left:3px solid #f0b44c;padding:4px 8px;margin:6px 0}
.badge{font-size:11px;font-weight:500;background:#f0b44c;color:#3a2600;border-radius:3px;padding:1px 6px}
details{margin:6px 0}
summary{cursor:pointer;font-weight:600}
pre{background:#f3f4f7;padding:8px;overflow-x:auto;font-size:12px;white-space:pre-wrap}
code{background:#f3f4f7;padding:0 3px;font-size:12px}
.prd{border-left:3px solid #dde1e8;padding-left:12px}
@media print{details{display:block}section{break-inside:avoid-page}}
"""
# Nothing may be fetched: images only from data: URIs, styles only inline, no scripts at all.
_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def _page(r: _Round, sections: Sequence[_Section]) -> str:
    nav = "".join(
        f'<li><a href="#{s.key}">{_e(s.title)}</a>{"" if s.shown else " (not materialized)"}</li>'
        for s in sections
    )
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>AgentOmnia round {_e(r.key)}</title><style>{_CSS}</style></head>\n<body>"
        f"<header><h1>AgentOmnia run report: round {_e(r.key)}</h1>"
        f'<p class="meta">home {_e(r.store.root)} · generated {_e(stamp)}</p>'
        f"<nav><ol>{nav}</ol></nav></header>\n"
        "<main>" + "\n".join(s.html() for s in sections) + "</main></body></html>\n"
    )


def _run(r: _Round, key: str, title: str, build: Callable[[_Round, _Section], None]) -> _Section:
    section = _Section(key, title)
    try:
        build(r, section)
    except Exception as exc:  # one unreadable artifact costs its section, never the page
        section.lack(title, f"could not be read: {type(exc).__name__}: {exc}")
    return section


def _storage(home: Path | None) -> Storage:
    root = Path(home).expanduser().resolve() if home is not None else default_home()
    if not root.is_dir():
        raise FileNotFoundError(
            f"no platform home at {root}; pass the folder that holds artifacts/ (or set AGENTOMNIA_HOME)"
        )
    return Storage(root)


def render_report(round_key: str, *, home: Path | None = None) -> RenderedReport:
    """The page for one round of the home (default `$AGENTOMNIA_HOME`), built only by reading."""
    if not _ROUND_KEY.match(round_key) or round_key in (".", ".."):
        raise ValueError(f"round {round_key!r} may only contain letters, digits, '_', '.' and '-' (e.g. r0)")
    r = _Round(_storage(home), round_key)
    sections = [_run(r, key, title, build) for key, title, build in SECTIONS]
    return RenderedReport(
        round=round_key,
        html=_page(r, sections),
        sections=[s.key for s in sections if s.shown],
        missing=[m for s in sections for m in s.missing],
        images=r.images,
    )


def write_report(round_key: str, out: Path, *, home: Path | None = None) -> ReportSummary:
    """Write the round's page to `out` (a file, or a folder that gets `report-<round>.html`)."""
    rendered = render_report(round_key, home=home)
    path = Path(out)
    if path.is_dir():
        path = path / f"report-{round_key}.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = rendered.html.encode("utf-8")
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)  # a page to share: mkstemp's private mode would hide it from other readers
        os.replace(tmp, path)  # a reader never sees half a page
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return ReportSummary(
        round=round_key,
        path=str(path),
        sections=rendered.sections,
        missing=rendered.missing,
        images=rendered.images,
        bytes=len(data),
    )
