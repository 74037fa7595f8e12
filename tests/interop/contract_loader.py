"""A stand-in for OmniaBench's runtime, written from its published item contract and nothing of ours.

It plays the external runtime in the export tests, so it imports only the standard library and runs
as its own process (`python -I contract_loader.py ...`) under resource limits, the way a user's
OmniaBench checkout would load our files. For every task item it:

1. finds the environment item (embedded `env_item`, else `environments.json` by `env_id`), builds the
   class from `env_class_code`, constructs it with a copy of `init_config` (falling back to `{}` and
   then to no argument on TypeError) and sets every `init_config` key as an attribute;
2. takes the state as the instance's attributes (double-underscore names left out);
3. runs the reference solution (`reference_solution`): tool calls as methods with keyword arguments,
   each name checked against the item's OpenAI tool list, or a `solve(call)` program whose `call`
   does the same; or, in `--empty` mode, nothing at all;
4. scores: every `checklist_with_func` entry is exec'd alone with `initial_state` as a global and
   `check_func(final_state)` must return a bool (anything else, or an exception, scores 0); every
   rubric item is decided as its `decided_by` says (`check_func` via the checklist entries with its
   tag, `answer` via `verify` on that field of the ground truth, `trajectory` from the calls made,
   `judge` left unscored); `verifier_code`, when present, is the route's own score.
   A task passes when every rubric item is scored and earns its points (score exactly 1.0), every
   checklist entry returns True, and `verifier_code` (if any) returns 1.0.

Output: one JSON object per task on stdout (a JSON list).
"""

from __future__ import annotations

import argparse
import copy
import json
import resource
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()


def build_env(env_item: dict[str, Any], init_config: Any, class_name: str | None = None) -> Any:
    module = types.ModuleType("omniabench_dynamic_env")
    exec(compile(env_item["env_class_code"], "<env_class_code>", "exec"), module.__dict__)
    cls = getattr(module, class_name or env_item["env_class_name"])
    config = copy.deepcopy(init_config)
    try:
        instance = cls(config) if config and isinstance(config, dict) else cls({})
    except TypeError:
        instance = cls()
    for key, value in (config or {}).items():
        setattr(instance, key, value)
    return instance


def state_of(instance: Any) -> dict[str, Any]:
    return copy.deepcopy(
        {k: v for k, v in vars(instance).items() if not (k.startswith("__") and k.endswith("__"))}
    )


def run_check(code: str, initial_state: dict[str, Any], final_state: dict[str, Any]) -> bool | None:
    namespace: dict[str, Any] = {"initial_state": copy.deepcopy(initial_state)}
    try:
        exec(code, namespace)
        result = namespace["check_func"](copy.deepcopy(final_state))
    except Exception:
        return None
    return result if isinstance(result, bool) else None


def run_verify(code: str, candidate: Any, truth: Any) -> float | None:
    namespace: dict[str, Any] = {}
    try:
        exec(code, namespace)
        return max(0.0, min(1.0, float(namespace["verify"](copy.deepcopy(candidate), copy.deepcopy(truth)))))
    except Exception:
        return None


def tool_names(tools: list[dict[str, Any]]) -> set[str]:
    return {str((t.get("function") or t).get("name")) for t in tools}


def run_solution(
    instance: Any, tools: set[str], solution: dict[str, Any] | None
) -> tuple[Any, list[tuple[str, dict[str, Any]]]]:
    calls: list[tuple[str, dict[str, Any]]] = []

    def call(name: str, /, **arguments: Any) -> Any:
        if name not in tools:
            raise KeyError(f"tool {name!r} is not in the item's tool list")
        calls.append((name, dict(arguments)))
        return getattr(instance, name)(**copy.deepcopy(arguments))

    if solution is None:
        return {}, calls
    if solution.get("program"):
        namespace: dict[str, Any] = {}
        exec(solution["program"], namespace)
        return namespace["solve"](call), calls
    for step in solution.get("calls", []):
        call(step["name"], **step.get("arguments", {}))
    return solution.get("answer", {}), calls


def decide_trajectory(check: dict[str, Any], calls: list[tuple[str, dict[str, Any]]]) -> bool | None:
    wanted = check.get("args") or {}
    made = any(
        name == check.get("tool") and all(args.get(k) == v for k, v in wanted.items()) for name, args in calls
    )
    if check.get("kind") == "called":
        return made
    if check.get("kind") == "not_called":
        return not made
    return None


def score_task(task: dict[str, Any], envs: dict[str, Any], empty: bool) -> dict[str, Any]:
    env_item = task.get("env_item") or envs[task["env_id"]]
    instance = build_env(env_item, task["init_config"], task.get("env_class_name"))
    initial = state_of(instance)
    answer, calls = run_solution(
        instance, tool_names(env_item["tools"]), None if empty else task.get("reference_solution")
    )
    final = state_of(instance)
    checklist = task.get("checklist_with_func", [])
    results = {}
    for n, entry in enumerate(checklist):
        results[n] = run_check(entry["check_func"], initial, final)
    truth = task.get("ground_truth_answer")
    verifier = task.get("verifier_code") or task.get("answer_verifier_code")
    items = []
    for rubric in task.get("rubrics", []):
        by = rubric.get("decided_by", "judge")
        passed: bool | None = None
        if by == "check_func":
            own = [results[n] for n, entry in enumerate(checklist) if entry.get("tag") == rubric["tag"]]
            passed = all(r is True for r in own) if own else None
        elif by == "answer" and verifier and isinstance(truth, dict):
            field = (rubric.get("check") or {}).get("field")
            if field in truth:
                passed = run_verify(verifier, answer, {field: truth[field]}) == 1.0
        elif by == "trajectory":
            passed = decide_trajectory(rubric.get("check") or {}, calls)
        items.append({"tag": rubric["tag"], "points": int(rubric["points"]), "passed": passed})
    scored = [i for i in items if i["passed"] is not None]
    earned = sum(i["points"] for i in scored if i["passed"])
    total = sum(i["points"] for i in scored)
    checklist_avg = sum(1 for r in results.values() if r is True) / len(results) if results else None
    route_score = run_verify(task["verifier_code"], answer, truth) if task.get("verifier_code") else None
    passed = (
        total > 0
        and len(scored) == len(items)
        and earned == total
        and checklist_avg == 1.0
        and (route_score is None or route_score == 1.0)
    )
    return {
        "global_id": task.get("global_id"),
        "task_id": task.get("task_id"),
        "kind": (task.get("agentomnia") or {}).get("kind"),
        "score": earned / total if total else None,
        "unscored": len(items) - len(scored),
        "checklist": [results[n] for n in range(len(checklist))],
        "checklist_avg": checklist_avg,
        "route_score": route_score,
        "items": items,
        "calls": len(calls),
        "passed": passed,
    }


def limit_resources(memory_mb: int = 2048, cpu_s: int = 120) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("route_files", nargs="+", type=Path)
    parser.add_argument("--environments", type=Path, default=None)
    parser.add_argument("--empty", action="store_true", help="make no calls and give no answer")
    args = parser.parse_args(argv)
    limit_resources()
    envs = json.loads(args.environments.read_text(encoding="utf-8")) if args.environments else {}
    out = []
    for path in args.route_files:
        for task in json.loads(path.read_text(encoding="utf-8")):
            try:
                out.append(score_task(task, envs, args.empty))
            except Exception as exc:
                out.append(
                    {"task_id": task.get("task_id"), "passed": False, "error": f"{type(exc).__name__}: {exc}"}
                )
    json.dump(out, sys.stdout)
    return 0


def load_and_score(
    route_files: list[Path], environments: Path | None = None, *, empty: bool = False, timeout_s: float = 300
) -> list[dict[str, Any]]:
    """Run this loader in a fresh, isolated interpreter and return its per-task results."""
    command = [sys.executable, "-I", str(HERE), *map(str, route_files)]
    if environments is not None:
        command += ["--environments", str(environments)]
    if empty:
        command.append("--empty")
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={"PYTHONHASHSEED": "0"},
        cwd=HERE.parent,
    )
    if done.returncode != 0:
        raise RuntimeError(f"contract loader failed ({done.returncode}): {done.stderr[-2000:]}")
    return list(json.loads(done.stdout))


if __name__ == "__main__":
    sys.exit(main())
