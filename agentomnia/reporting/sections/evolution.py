"""Sections on how the round steers the next one: the failure diagnosis, the PRDs it wrote, and how
close the round's data came to the failures that triggered it."""

from __future__ import annotations

import io

from agentomnia.catalog import ALIGNMENT, DIAGNOSIS, PRDS
from agentomnia.evolution import Alignment, render_markdown
from agentomnia.reporting.markdown import front_matter, markdown_html
from agentomnia.reporting.model import Section
from agentomnia.reporting.reader import RoundReader
from agentomnia.reporting.widgets import details, pairs, table


def _diagnosis(r: RoundReader, s: Section) -> None:
    if not r.need(s, "failure diagnosis", DIAGNOSIS, "report"):
        return
    report = r.artifacts.diagnosis()
    if report is None:
        return
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
        pairs(
            {
                "failures diagnosed": report.failure_count,
                "capability gaps": len(gaps),
                "analyst": report.analyst,
            },
            caption="failure diagnosis",
        )
    )
    if gaps:
        s.add(table(gaps, caption="capability gaps, heaviest first"))


def _prd_heading(text: str, fallback: str) -> str:
    data = front_matter(text)
    if data is None:
        return fallback
    bits = [data.get("prd_id") or fallback, data.get("priority"), data.get("status"), data.get("title")]
    return " · ".join(str(b) for b in bits if b)


def prds(r: RoundReader, s: Section) -> None:
    _diagnosis(r, s)
    a = r.artifacts
    documents = [(p.stem, p.read_text(encoding="utf-8")) for p in a.files(PRDS, "*.md")]
    if not documents:
        documents = [(p.prd_id, render_markdown(p)) for p in a.prds()]
    if not documents:
        if r.need(s, "PRDs", PRDS):
            s.note("the round has no PRDs: no failures were diagnosed and no PRD files were in the inbox")
        return
    if a.exists(PRDS, "directives"):
        d = a.directives()
        if d is None:
            s.note("the PRDs set no synthesis directives")
        else:
            s.add(
                pairs(
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
        s.add(details(_prd_heading(text, name), body, open_=i == 0))


def _alignment_png(a: Alignment, r: RoundReader) -> str:
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


def alignment(r: RoundReader, s: Section) -> None:
    if not r.need(s, "alignment", ALIGNMENT, "alignment"):
        return
    data = r.artifacts.alignment() or {}
    produced = data.get("data_by_prd") or []
    if data.get("kl_round") is None:
        s.add(pairs({"round": data.get("round"), "parent round": data.get("parent_round") or "none"}))
        s.note("nothing to compare: no failures triggered this round (or it has no training tasks)")
        if produced:
            s.add(table(produced, caption="what each PRD produced: seeds, environments, tasks by kind"))
        return
    a = Alignment.model_validate({k: v for k, v in data.items() if k in Alignment.model_fields})
    s.add(
        pairs(
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
    s.add(details("distributions over L1 domains", table(rows)))
    s.add(_alignment_png(a, r))
    if produced:
        s.add(table(produced, caption="what each PRD produced: seeds, environments, tasks by kind"))
