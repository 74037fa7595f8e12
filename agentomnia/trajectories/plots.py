"""The guidance ablation as a picture: verified yield per paradigm, with and without guidance
(the shape of the paper's Figure 14), for the trajectories asset's metadata."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agentomnia.trajectories.synthesis import PassRates


def guidance_ablation_png(
    with_guidance: Sequence[PassRates], without: Sequence[PassRates], path: str | Path
) -> Path:
    """Grouped bars of the verified rate per paradigm; a paradigm missing from one run shows as 0."""
    import matplotlib

    matplotlib.use("Agg")  # no display on pipeline workers
    import matplotlib.pyplot as plt

    paradigms = sorted({r.paradigm for r in [*with_guidance, *without]})
    guided = {r.paradigm: r.rates.get("verified", 0.0) for r in with_guidance}
    plain = {r.paradigm: r.rates.get("verified", 0.0) for r in without}
    xs = range(len(paradigms))
    fig, ax = plt.subplots(figsize=(max(4.0, 1.4 * len(paradigms)), 3.2))
    ax.bar([x - 0.2 for x in xs], [plain.get(p, 0.0) for p in paradigms], width=0.4, label="without guidance")
    ax.bar([x + 0.2 for x in xs], [guided.get(p, 0.0) for p in paradigms], width=0.4, label="with guidance")
    ax.set_xticks(list(xs), paradigms, rotation=15)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("verified trajectories")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
