"""The report pictures are written as PNG files and draw what the reports hold."""

from __future__ import annotations

from pathlib import Path

from agentomnia.omniabench.metrics import report
from agentomnia.omniabench.plots import l1_pairs, l1_scatter_png, pass_by_route_png
from tests.fixtures.benchmark import make_task, result_of

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _reports():  # type: ignore[no-untyped-def]
    tasks = [
        make_task(f"Approve claim number {i} of the shipment.", taxonomy_id=t)
        for i, t in enumerate((20096, 10005, 30000))
    ]
    a = [result_of(t, passed=i % 2 == 0, score=1.0, eval_id="a") for i, t in enumerate(tasks)]
    b = [result_of(t, passed=True, score=1.0, eval_id="b", route="program") for t in tasks[:2]]
    return report(a), report(b)


def test_l1_scatter_and_route_bars_are_pngs(tmp_path: Path) -> None:
    rep_a, rep_b = _reports()
    scatter = l1_scatter_png(rep_a, rep_b, "heuristic", "reference", tmp_path / "plots" / "l1.png")
    bars = pass_by_route_png(rep_a, tmp_path / "routes.png")
    for path in (scatter, bars):
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 2000


def test_scatter_only_draws_domains_both_reports_cover(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rep_a, rep_b = _reports()
    before = plt.get_fignums()
    l1_scatter_png(rep_a, rep_b, "a", "b", tmp_path / "l1.png")
    assert plt.get_fignums() == before  # the figure is closed, not leaked
    # task 0 (Logistics) passed for A, task 1 (Lifestyle) did not; B passed both; Scheduling is A's only
    assert l1_pairs(rep_a, rep_b) == {"tob/Logistics": (1.0, 1.0), "toc/Lifestyle": (0.0, 1.0)}
