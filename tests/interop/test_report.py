"""The HTML run report on a small home built here: sections, numbers, images, escaping, gaps."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from agentomnia.catalog import (
    ALIGNMENT,
    DAG_TASKS,
    ENVIRONMENT_STATS,
    ENVIRONMENTS,
    EVALUATIONS,
    LEARNING,
    PRDS,
    RAW_SEEDS,
    SOLVER_TASKS,
    TRAJECTORIES,
)
from agentomnia.evolution import PRD, render_markdown
from agentomnia.omniabench.models import EvalResult
from agentomnia.omniabench.service import policy_slug
from agentomnia.reporting import markdown_html, render_report, write_report
from agentomnia.storage import Storage, save_records, write_parquet
from agentomnia.tasks.models import ReferenceCall, RubricItem, Task
from agentomnia.taxonomy import Coordinate, taxonomy_index
from agentomnia.trajectories.models import CheckVerdict, QualityReport, Trajectory

ROUND = "r0"
TOC_DOMAIN, TOB_DOMAIN = 10041, 20096
HOSTILE_TITLE = "<script>alert('prd')</script> & gaps"
HOSTILE_REASON = "cannot ground <img src=x onerror=alert(1)>"


def coordinate(taxonomy_id: int = TOC_DOMAIN) -> Coordinate:
    return Coordinate.for_domain(taxonomy_id, ["tool_use"], ["tool_parameter_grounding"])


def task(n: int, kind: str = "dag_standard", taxonomy_id: int = TOC_DOMAIN) -> Task:
    return Task(
        env_id="env-a",
        kind=kind,  # type: ignore[arg-type]
        coordinate=coordinate(taxonomy_id),
        init_config={},
        query=f"Close ticket {n}.",
        reference_calls=(ReferenceCall(tool="close_ticket", args={"n": n}),),
        rubric=(RubricItem(id="T1", text=f"Ticket {n} is closed.", scope="task"),),
    )


def trajectory(t: Task, *, grounded: bool, guidance: str) -> Trajectory:
    def verdict(name: str, passed: bool = True) -> CheckVerdict:
        return CheckVerdict(name=name, passed=passed)

    report = QualityReport(
        correctness=verdict("correctness"),
        continuity=verdict("continuity"),
        consistency=verdict("consistency"),
        grounding=verdict("grounding", grounded),
        leak=verdict("leak"),
    )
    return Trajectory(
        task_id=t.id,
        env_id=t.env_id,
        task_kind=t.kind,
        policy="offline-teacher",
        messages=({"role": "user", "content": t.query},),
        guidance=guidance,  # type: ignore[arg-type]
        verification=report,
    )


def result(t: Task, trial: int, passed: bool) -> EvalResult:
    return EvalResult(
        eval_id="ev-test",
        task_id=t.id,
        env_id=t.env_id,
        task_kind=t.kind,
        route="dag_s",
        coordinate=t.coordinate,
        policy="baseline:heuristic",
        trial=trial,
        score=1.0 if passed else 0.5,
        passed=passed,
    )


def tiny_png() -> bytes:
    fig = Figure(figsize=(1, 1), dpi=20)
    fig.subplots().plot([0, 1], [0, 1])
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A round with environments, DAG and solver tasks (no program tasks), trajectories, an SFT
    checkpoint (no RL one), an evaluation, one PRD and the alignment."""
    root = tmp_path_factory.mktemp("home")
    store = Storage(root)
    rnd = store.round(ROUND)
    png = tiny_png()
    toc, tob = taxonomy_index().by_id(TOC_DOMAIN), taxonomy_index().by_id(TOB_DOMAIN)
    envs = [
        {
            "env_id": f"env-{d.id}",
            "name": f"env {d.id}",
            "path": "",
            "taxonomy_id": d.id,
            "split": d.split,
            "l1": d.l1,
            "l2": d.l2,
            "tools": tools,
            "dropped_tools": 0,
        }
        for d, tools in ((toc, 9), (tob, 10))
    ]
    write_parquet(rnd.path(ENVIRONMENTS), envs)
    write_parquet(
        rnd.path(ENVIRONMENT_STATS),
        [{"environments": 2, "tools_mean": 9.5, "splits": ["tob", "toc"]}],
    )
    rnd.path(ENVIRONMENT_STATS, "histogram").write_bytes(png)

    dag = [task(1), task(2), task(3, taxonomy_id=TOB_DOMAIN)]
    solver = [task(4, kind="solver_anchored")]
    save_records(rnd.path(DAG_TASKS), dag, flat=["env_id", "kind", "query"])
    save_records(rnd.path(SOLVER_TASKS), solver, flat=["env_id", "kind", "query"])
    rejected = [
        {"env_id": "env-a", "kind": "dag_standard", "stage": "grounding", "reason": HOSTILE_REASON},
        {"env_id": "env-a", "kind": "dag_standard", "stage": "grounding", "reason": HOSTILE_REASON},
        {"env_id": "env-a", "kind": "dag_challenge", "stage": "execution", "reason": "tool failed"},
    ]
    write_parquet(rnd.path(DAG_TASKS, "rejected"), rejected)

    runs = [
        trajectory(dag[0], grounded=True, guidance="outcome"),
        trajectory(dag[1], grounded=False, guidance="none"),
    ]
    save_records(rnd.path(TRAJECTORIES), runs, flat=["task_id"])
    rnd.path(TRAJECTORIES, "ablation").write_bytes(png)

    sft = store.checkpoint_dir("sft", ROUND)
    sft.mkdir(parents=True)
    (sft / "train_report.json").write_text(
        json.dumps({"kind": "sft", "steps": 4, "seconds": 1.25, "first_loss": 2.0, "last_loss": 0.5})
    )
    (sft / "sft_curves.png").write_bytes(png)

    # task 1 passes both trials, task 2 one of two: pass@1 0.75, pass@2 1.0, pass^2 0.5
    results = [
        result(dag[0], 0, True),
        result(dag[0], 1, True),
        result(dag[1], 0, True),
        result(dag[1], 1, False),
    ]
    save_records(rnd.file(EVALUATIONS, f"{policy_slug('baseline:heuristic')}.parquet"), results)

    prd = PRD(
        prd_id="PRD-r0-01",
        priority="P1",
        status="active",
        title=HOSTILE_TITLE,
        scenario="Agents stop after the first ticket.",
        requirements=("Chain ticket closures & check `status`.",),
        case_study='Task 1 failed:\n  1. close_ticket({"n": 1}) -> ok',
    )
    save_records(rnd.path(PRDS), [prd], flat=["prd_id"])
    rnd.file(PRDS, "PRD-r0-01.md").write_text(render_markdown(prd))

    alignment = {
        "round": ROUND,
        "parent_round": "base",
        "axis": "l1",
        "epsilon": 0.001,
        "support": ["toc/Productivity", "tob/Logistics"],
        "p_round": {"toc/Productivity": 0.6, "tob/Logistics": 0.4},
        "p_previous": {"toc/Productivity": 0.9, "tob/Logistics": 0.1},
        "p_failures": {"toc/Productivity": 0.5, "tob/Logistics": 0.5},
        "kl_round": 0.1234,
        "kl_previous": 0.5678,
        "n_round": 4,
        "n_previous": 10,
        "n_failures": 6,
        "data_by_prd": [
            {
                "prd": "PRD-r0-01",
                "priority": "P1",
                "seeds": 3,
                "environments": 2,
                "tasks": 7,
                "dag_standard": 7,
            }
        ],
    }
    rnd.path(ALIGNMENT, "alignment").write_text(json.dumps(alignment))
    figures = {"action_likelihood": 0.0073, "next_tool": 0.0455, "next_action": 0.0, "exact_arguments": 0.0,
               "well_formed_calls": 0.0}  # fmt: skip
    rows = [{"policy": p, "route": route, "probes": 4, "samples": 4, **figures}
            for p in ("base", "sft") for route in ("all", "ToB")]  # fmt: skip
    rnd.path(LEARNING, "report").write_text(
        json.dumps({"round": ROUND, "tasks": 2, "probes": 4, "rows": rows})
    )
    return root


def section(page: str, key: str) -> str:
    start = page.index(f'<section id="{key}">')
    return page[start : page.index("</section>", start)]


def test_report_shows_the_round_stage_by_stage(home: Path, tmp_path: Path) -> None:
    summary = write_report(ROUND, tmp_path / "out" / "report.html", home=home)
    page = Path(summary.path).read_text(encoding="utf-8")
    assert summary.bytes == len(page.encode("utf-8"))
    for key in (
        "overview",
        "taxonomy",
        "environments",
        "tasks",
        "realism",
        "trajectories",
        "training",
        "benchmark",
        "learning",
        "prds",
    ):
        assert key in summary.sections, key
    assert "alignment" in summary.sections

    taxonomy = section(page, "taxonomy")
    toc_row = re.search(r"<tr><td>toc</td>(.*?)</tr>", taxonomy)
    assert toc_row is not None
    # the taxonomy's 22 toc L1s and 101 L2s; one toc environment; three of the four tasks, one L1, one L2
    cells = [int(n) for n in re.findall(r'<td class="n">(\d+)</td>', toc_row.group(1))]
    assert cells == [22, 101, 1, 1, 1, 3, 1, 1]
    assert "tob/Logistics" in taxonomy

    assert '<td class="n">9.5</td>' in section(page, "environments")
    tasks = section(page, "tasks")
    assert re.search(r'<td>dag_standard</td><td class="n">3</td>', tasks)
    assert re.search(
        r'<td>grounding</td><td>cannot ground &lt;img src=x onerror=alert\(1\)&gt;</td><td class="n">2</td>',
        tasks,
    )

    trajectories = section(page, "trajectories")
    all_row = re.search(r"<tr><td>all</td>(.*?)</tr>", trajectories)
    assert all_row is not None
    # two runs, one verified (the ungrounded one fails): yield 0.5, grounding 0.5
    assert re.findall(r'<td class="n">([\d.]+)</td>', all_row.group(1))[:5] == ["2", "1", "0.5", "1", "0.5"]

    benchmark = section(page, "benchmark")
    assert "pass@2" in benchmark and "pass^2" in benchmark
    overall = re.search(r"<tr><td>all</td>(.*?)</tr>", benchmark)
    assert overall is not None
    assert re.findall(r'<td class="n">([\d.]+)</td>', overall.group(1))[:6] == [
        "2",
        "4",
        "3",
        "0.75",
        "1",
        "0.5",
    ]

    realism = section(page, "realism")  # each figure beside its target, from the round's own data
    assert "distinct trigram share" in realism.lower() and "placeholder share" in realism.lower()
    assert "&lt; 0.02" in realism

    training = section(page, "training")
    assert '<td class="n">0.75</td>' in training  # the SFT loss drop, (2.0 - 0.5) / 2.0
    assert "0.1234" in section(page, "alignment") and "0.5678" in section(page, "alignment")
    assert "what each PRD produced" in section(page, "alignment") and "PRD-r0-01" in section(
        page, "alignment"
    )
    learned = section(page, "learning")
    assert "0.0073" in learned and "next_tool" in learned and "per model and route" in learned


def test_report_is_self_contained_and_escaped(home: Path) -> None:
    rendered = render_report(ROUND, home=home)
    page = rendered.html
    # histogram, ablation, SFT curve, the alignment plot drawn for the page
    assert rendered.images == 4
    sources = re.findall(r'src="([^"]*)"', page)
    assert len(sources) == 4 and all(s.startswith("data:image/png;base64,") for s in sources)
    assert not re.search(r"<(script|link|iframe|object)\b", page, re.IGNORECASE)
    assert 'href="http' not in page and "url(" not in page
    assert "default-src 'none'" in page

    prds = section(page, "prds")
    assert "&lt;script&gt;alert(&#x27;prd&#x27;)&lt;/script&gt; &amp; gaps" in prds
    assert "<code>status</code>" in prds  # Markdown inline code survives, escaped
    assert "<pre>1. close_ticket({&quot;n&quot;: 1}) -&gt; ok</pre>" in prds


def test_missing_stages_become_notes_not_crashes(home: Path) -> None:
    rendered = render_report(ROUND, home=home)
    missing = {(m.section, m.item) for m in rendered.missing}
    assert ("tasks", "program_tasks") in missing
    assert ("training", "RL checkpoint (GRPO)") in missing
    assert ("training", "reward-model calibration") in missing
    assert ("benchmark", "benchmark split") in missing
    assert "program_tasks: not materialized for this round" in section(rendered.html, "tasks")
    assert "RL checkpoint (GRPO): not materialized for this round" in section(rendered.html, "training")


def test_an_empty_round_reports_every_section_missing(tmp_path: Path) -> None:
    root = tmp_path / "home"
    Storage(root).round("r5").dir(RAW_SEEDS)  # another round has an artifact
    rendered = render_report("r0", home=root)
    assert rendered.sections == []
    assert {m.section for m in rendered.missing} == {
        "overview",
        "taxonomy",
        "environments",
        "tasks",
        "realism",
        "trajectories",
        "training",
        "benchmark",
        "learning",
        "prds",
        "alignment",
        "llm",
    }
    assert "rounds with artifacts: r5" in section(rendered.html, "overview")
    assert rendered.html.count('<span class="badge">not materialized</span>') == 12
    assert not (root / "artifacts" / ENVIRONMENTS.name).exists()  # the report created nothing in the home


def test_an_unreadable_artifact_costs_only_its_section(home: Path, tmp_path: Path) -> None:
    broken = tmp_path / "home"
    rnd = Storage(broken).round(ROUND)
    rnd.path(ENVIRONMENT_STATS).write_bytes(b"not parquet <b>")
    rnd.path(ALIGNMENT, "alignment").write_text(
        json.dumps({"round": ROUND, "parent_round": None, "kl_round": None, "kl_previous": None})
    )
    rendered = render_report(ROUND, home=broken)
    environments = section(rendered.html, "environments")
    assert "could not be read" in environments and "<b>" not in environments
    assert any(m.section == "environments" and "could not be read" in m.reason for m in rendered.missing)
    # the base round's alignment: materialized, with nothing to compare
    assert "alignment" in rendered.sections
    assert "nothing to compare" in section(rendered.html, "alignment")


def test_markdown_subset_is_structured_and_escaped() -> None:
    text = (
        "---\ntitle: <b>bold title</b>\ntargets: [a, b]\n---\n"
        "# Heading <i>\n\n- item `a<b>`\n- **strong** & more\n  continued\n\n"
        "Line one\nline two\n  indented <x>\n\n```\nfenced <y>\n```\n"
    )
    out = markdown_html(text, heading_offset=2)
    assert "<h3>Heading &lt;i&gt;</h3>" in out
    assert "<li>item <code>a&lt;b&gt;</code></li>" in out
    assert "<li><strong>strong</strong> &amp; more continued</li>" in out
    assert "<p>Line one<br>\nline two</p>" in out
    assert "<pre>indented &lt;x&gt;</pre>" in out and "<pre>fenced &lt;y&gt;</pre>" in out
    assert "&lt;b&gt;bold title&lt;/b&gt;" in out and "<td>a, b</td>" in out
    assert "<b>" not in out and "<i>" not in out


def test_bad_round_or_home_is_refused_with_a_reason(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="letters, digits"):
        render_report("../r0", home=tmp_path)
    with pytest.raises(FileNotFoundError, match="no platform home"):
        render_report("r0", home=tmp_path / "nowhere")


def test_a_folder_as_out_gets_a_named_file(home: Path, tmp_path: Path) -> None:
    summary = write_report(ROUND, tmp_path, home=home)
    assert Path(summary.path) == tmp_path / f"report-{ROUND}.html"
    assert Path(summary.path).read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert not list(tmp_path.glob("*.tmp"))
