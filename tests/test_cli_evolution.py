"""`agentomnia omniabench` and `agentomnia evolution`: clear errors before anything exists, then the
report and the status read what an evaluation and a PRD round left behind."""

from __future__ import annotations

import json
from pathlib import Path

from agentomnia.evolution import example_prd_path, read_prd_file
from agentomnia.omniabench.store import FailureStore
from agentomnia.storage import Storage, save_records
from tests.fixtures.benchmark import approve_task, make_failure, result_of
from tests.fixtures.cli import run_cli as _cli


def test_benchmark_commands_explain_what_is_missing(home: Path) -> None:
    run = _cli("omniabench", "run", "--policy", "baseline:heuristic", home=home)
    assert run.returncode == 1 and "omniabench_split" in run.stderr
    report = _cli("omniabench", "report", "--round", "r0", home=home)
    assert report.returncode == 1 and "omniabench run" in report.stderr
    bad = _cli("omniabench", "run", "--policy", "gpt", home=home)
    assert bad.returncode == 1
    # tokens per turn are a local checkpoint's setting, said before anything runs
    tokens = _cli("omniabench", "run", "--policy", "baseline:heuristic", "--max-new-tokens", "96", home=home)
    assert tokens.returncode == 1 and "hf: policies only" in tokens.stderr
    tokens = _cli("omniabench", "run", "--policy", "hf:/x", "--max-new-tokens", "0", home=home)
    assert tokens.returncode == 1 and "at least 1" in tokens.stderr
    # so are the processes that decode a checkpoint
    decoders = _cli("omniabench", "run", "--policy", "baseline:heuristic", "--decoders", "2", home=home)
    assert decoders.returncode == 1 and "hf: policies only" in decoders.stderr
    decoders = _cli("omniabench", "run", "--policy", "hf:/x", "--decoders", "-1", home=home)
    assert decoders.returncode == 1 and "0 (decode in this process) or more" in decoders.stderr


def test_report_and_status_read_the_stored_round(home: Path) -> None:
    store = Storage(home)
    task = approve_task()
    results = [result_of(task, trial=k, passed=k == 0, score=float(k == 0)) for k in range(2)]
    save_records(store.artifact("omniabench_eval", "r0", "baseline_test.parquet"), results)
    report = _cli("omniabench", "report", "--round", "r0", "--json", home=home)
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)["policies"]
    [(policy, rep)] = data.items()
    assert rep["overall"]["pass_at_1"] == 0.5
    failures = FailureStore(store.lineage_path)
    failures.start("ev-1", "r0", policy, "bench", tasks=1, trials=2)
    failures.add_failures([make_failure(1, eval_id="ev-1")])
    failures.finish("ev-1", 0.5)
    prd = read_prd_file(example_prd_path())
    save_records(store.artifact("prds", "r1"), [prd.in_round("r1")])  # type: ignore[union-attr]
    (store.artifact_dir("prd_alignment", "r1") / "alignment.json").write_text(
        json.dumps({"round": "r1", "parent_round": "r0", "kl_round": 0.4, "kl_previous": 1.9})
    )
    figures = {"checkpoint": "ck", "probes": 30, "samples": 30, "next_action": 0.1, "exact_arguments": 0.0,
               "well_formed_calls": 0.2}  # fmt: skip
    rows = [
        {**figures, "policy": "base", "route": "all", "action_likelihood": 0.001, "next_tool": 0.1},
        {**figures, "policy": "sft", "route": "all", "action_likelihood": 0.02, "next_tool": 0.25},
        {**figures, "policy": "sft", "route": "dag", "action_likelihood": 0.03, "next_tool": 0.5},
    ]
    (store.artifact_dir("agent_learning", "r0") / "report.json").write_text(json.dumps({"rows": rows}))
    # the evaluation's report file gives its mean score, which moves before pass@1 does
    (store.artifact_dir("omniabench_eval", "r0") / "baseline_test.report.json").write_text(
        json.dumps({"eval_id": "ev-1", "overall": {"pass_at_1": 0.5, "mean_score": 0.625}})
    )
    status = _cli("evolution", "status", "--json", home=home)
    assert status.returncode == 0, status.stderr
    rounds = {r["round"]: r for r in json.loads(status.stdout)["rounds"]}
    assert rounds["r0"]["evaluations"][0]["pass_at_1"] == 0.5
    assert rounds["r0"]["evaluations"][0]["mean_score"] == 0.625
    assert rounds["r1"]["kl_round"] == 0.4 and rounds["r1"]["prds"][0]["id"] == prd.prd_id  # type: ignore[union-attr]
    # what each checkpoint learned, overall (the per-route rows stay in the report)
    assert [(f["policy"], f["next_tool"]) for f in rounds["r0"]["learning"]] == [("base", 0.1), ("sft", 0.25)]
    text = _cli("evolution", "status", home=home).stdout
    assert "pass@1 0.500  mean score 0.625" in text
    assert "KL(round||failures) 0.400 vs KL(previous||failures) 1.900" in text
    assert "learning sft    action likelihood 0.020  next tool 0.250" in text


def test_report_refuses_an_empty_round_and_writes_a_page_for_a_stored_one(home: Path, tmp_path: Path) -> None:
    empty = _cli("report", "--round", "r3", "--out", str(tmp_path / "r3.html"), home=home)
    assert empty.returncode == 1 and "nothing materialized" in empty.stderr
    store = Storage(home)
    task = approve_task()
    save_records(store.artifact("omniabench_eval", "r0", "baseline_test.parquet"),
                 [result_of(task, trial=0, passed=True, score=1.0)])  # fmt: skip

    save_records(store.artifact("dag_tasks", "r0"), [task])
    done = _cli("report", "--round", "r0", "--out", str(tmp_path), "--json", home=home)
    assert done.returncode == 0, done.stderr
    page = Path(json.loads(done.stdout)["path"])
    assert page.name == "report-r0.html" and "pass@1" in page.read_text()
