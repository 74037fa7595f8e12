"""OmniaBench: the held-out benchmark, evaluation runs, metrics, failure tags and the failure table.

split, training = hold_out(tasks, embedder)
results = evaluate(bench_tasks, {i.task_id: i for i in split.items}, bundles, sandbox, factory,
                   policy_name="baseline:heuristic", eval_id="e1")
print(report(results).render())
store.add_failures(failures_of(results, tasks_by_id, bundles))
"""

from agentomnia.omniabench.failures import TAG_ORDER, failures_of, program_calls, reference_of, tag_failure
from agentomnia.omniabench.metrics import AXES, EvalReport, MetricRow, pass_at_k, pass_hat_k, report, tally
from agentomnia.omniabench.models import (
    FAILURE_TAGS,
    ROUTES,
    BenchmarkItem,
    BenchmarkSplit,
    DroppedCandidate,
    EvalResult,
    Failure,
    FieldDiff,
    Route,
)
from agentomnia.omniabench.plots import l1_pairs, l1_scatter_png, pass_by_route_png
from agentomnia.omniabench.runner import PolicyFactory, end_state_diff, evaluate, run_trial
from agentomnia.omniabench.split import benchmark_item, exclude_near, hold_out, is_challenging, route_of
from agentomnia.omniabench.store import EvaluationRow, EvaluationSummary, FailureRow, FailureStore

__all__ = [
    "AXES",
    "FAILURE_TAGS",
    "ROUTES",
    "TAG_ORDER",
    "BenchmarkItem",
    "BenchmarkSplit",
    "DroppedCandidate",
    "EvalReport",
    "EvalResult",
    "EvaluationRow",
    "EvaluationSummary",
    "Failure",
    "FailureRow",
    "FailureStore",
    "FieldDiff",
    "MetricRow",
    "PolicyFactory",
    "Route",
    "benchmark_item",
    "end_state_diff",
    "evaluate",
    "exclude_near",
    "failures_of",
    "hold_out",
    "is_challenging",
    "l1_pairs",
    "l1_scatter_png",
    "pass_at_k",
    "pass_by_route_png",
    "pass_hat_k",
    "program_calls",
    "reference_of",
    "report",
    "route_of",
    "run_trial",
    "tag_failure",
    "tally",
]
