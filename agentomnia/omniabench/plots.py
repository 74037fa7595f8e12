"""Benchmark pictures for asset metadata: two policies per L1 domain, and one policy per route.

The L1 scatter is the shape of the paper's Figure 17: each point is an L1 domain, placed at the
pass@1 of policy A (x) and policy B (y); points above the diagonal are domains where B does better.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentomnia.omniabench.metrics import EvalReport
from agentomnia.omniabench.models import ROUTES

_SPLIT_COLOURS = {"toc": "tab:blue", "tob": "tab:orange", "toe": "tab:green"}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # no display on pipeline workers
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: str | Path) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    _pyplot().close(fig)
    return out


def l1_pairs(report_a: EvalReport, report_b: EvalReport) -> dict[str, tuple[float, float]]:
    """L1 key -> (pass@1 of A, pass@1 of B) for the domains where both ran at least one task."""
    a = {r.value: r.pass_at_1 for r in report_a.breakdowns.get("l1", []) if r.tasks}
    b = {r.value: r.pass_at_1 for r in report_b.breakdowns.get("l1", []) if r.tasks}
    return {k: (a[k], b[k]) for k in sorted(set(a) & set(b))}


def l1_scatter_png(
    report_a: EvalReport, report_b: EvalReport, label_a: str, label_b: str, path: str | Path
) -> Path:
    """pass@1 per L1 domain of policy A (x) against policy B (y), with the diagonal; only domains
    both reports cover are drawn, coloured by split."""
    plt = _pyplot()
    pairs = l1_pairs(report_a, report_b)
    shared = list(pairs)
    fig, ax = plt.subplots(figsize=(5.2, 5.0))
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="equal")
    for split, colour in _SPLIT_COLOURS.items():
        keys = [k for k in shared if k.split("/", 1)[0] == split]
        if keys:
            xs, ys = [pairs[k][0] for k in keys], [pairs[k][1] for k in keys]
            ax.scatter(xs, ys, s=36, color=colour, label=split, alpha=0.85)
    for k in shared:
        ax.annotate(k.split("/", 1)[-1][:18], pairs[k], fontsize=6, xytext=(3, 2), textcoords="offset points")
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel(f"{label_a} pass@1")
    ax.set_ylabel(f"{label_b} pass@1")
    ax.set_title(f"pass@1 per L1 domain ({len(shared)} domains)", fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    return _save(fig, path)


def pass_by_route_png(report: EvalReport, path: str | Path) -> Path:
    """Bars of pass@1, pass@k and pass^k per route (a route without tasks shows empty)."""
    plt = _pyplot()
    rows = {r.value: r for r in report.breakdowns.get("route", [])}
    xs = list(range(len(ROUTES)))
    fig, ax = plt.subplots(figsize=(5.6, 3.4))
    series = (
        ("pass@1", lambda r: r.pass_at_1),
        (f"pass@{report.k}", lambda r: r.pass_at_k),
        (f"pass^{report.k}", lambda r: r.pass_hat_k),
    )
    width = 0.26
    for n, (label, get) in enumerate(series):
        values = [get(rows[route]) if route in rows else 0.0 for route in ROUTES]
        ax.bar([x + (n - 1) * width for x in xs], values, width=width, label=label)
    ax.set_xticks(xs, [f"{route}\n(n={rows[route].tasks if route in rows else 0})" for route in ROUTES])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("rate")
    title = report.policy or "policy"
    ax.set_title(f"{title}: pass rates by route", fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    return _save(fig, path)
