"""GRPO + RCRL: rollout verdicts (dynamic filtering) and a short CPU run from the SFT checkpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentomnia.rewards import AuxiliaryWeights, ProcessSettings
from agentomnia.rewards.judges import transcript_judge
from agentomnia.sandbox import Sandbox, fixture_bundle, open_local
from agentomnia.tasks.models import Check, RubricItem
from trainers.curriculum import CurriculumSettings
from trainers.environment import environment_class
from trainers.grpo import GRPOSettings, judge_rollout, train_grpo

EOS = 7


def _env(row: dict[str, Any], prefix_turns: int = 0, process: ProcessSettings | None = None) -> Any:
    env = environment_class(fixture_bundle("mock"), "mock")(
        lambda bundle, config: open_local(bundle, config), process
    )
    env.reset(**{**row, "prefix_turns": prefix_turns})
    return env


def _say(text: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": text}]


def test_a_correct_finished_rollout_earns_one_and_the_prefix_counts_for_state(rows: Any) -> None:
    row = rows[1][6]  # set task_1 to done
    env = _env(row)
    env.update_task_status(task_id="task_1", status="done")
    completion = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "type": "function",
                    "function": {
                        "name": "update_task_status",
                        "arguments": {"task_id": "task_1", "status": "done"},
                    },
                }
            ],
        },
        *_say("done"),
    ]
    verdict = judge_rollout(env, completion, [1, 2, EOS], EOS)
    assert verdict.dropped is None and verdict.task == 1.0 and verdict.format_valid
    replayed = _env(row, prefix_turns=1)  # the golden call was replayed; the policy only answers
    verdict = judge_rollout(replayed, _say("task_1 is now done."), [3, EOS], EOS)
    assert verdict.task == 1.0 and replayed.policy_calls == []


def test_wrong_outcomes_score_zero_and_repeats_are_penalised(rows: Any) -> None:
    env = _env(rows[1][6])
    for _ in range(3):
        env.get_user(user_id="user_1")
    verdict = judge_rollout(env, _say("ok"), [EOS], EOS)
    assert verdict.task == 0.0 and verdict.redundancy == pytest.approx(2 / 3)


def test_truncated_rollouts_are_dropped_when_well_formed_and_penalised_otherwise(rows: Any) -> None:
    env = _env(rows[1][6])
    assert (
        judge_rollout(env, _say("thinking about it"), [1, 2, 3], EOS).dropped == "truncated but well formed"
    )
    env = _env(rows[1][6])
    broken = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "nope", "arguments": {}}}],
        }
    ]
    verdict = judge_rollout(env, broken, [1, 2, 3], EOS)
    assert verdict.dropped is None and verdict.task == -1.0


def test_environment_faults_drop_the_rollout(rows: Any) -> None:
    env = _env(rows[1][6])
    env.fault = "update_task_status: worker_crashed: the worker died"
    verdict = judge_rollout(env, _say("done"), [EOS], EOS)
    assert (
        verdict.dropped is not None
        and verdict.dropped.startswith("environment fault")
        and verdict.task is None
    )


def _calls(name: str, args: dict[str, Any], times: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(times):
        call = {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": args}}
        out += [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": json.dumps({"user_id": "user_1"})},
        ]
    return out


def test_adopted_auxiliary_weights_penalise_what_the_rollout_shows(rows: Any) -> None:
    looping = [*_calls("get_user", {"user_id": "user_1"}, 3), *_say("ok")]
    weights = AuxiliaryWeights(weights={"repeated_calls": -0.2})
    verdict = judge_rollout(_env(rows[1][6]), looping, [EOS], EOS, weights=weights)
    assert verdict.auxiliary == {"repeated_calls": -0.2}
    once = [*_calls("get_user", {"user_id": "user_1"}, 1), *_say("ok")]
    assert judge_rollout(_env(rows[1][6]), once, [EOS], EOS, weights=weights).auxiliary == {}
    # an indicator the analysis did not adopt costs nothing, however often it shows
    assert judge_rollout(_env(rows[1][6]), looping, [EOS], EOS, weights=AuxiliaryWeights()).auxiliary == {}


def test_the_safeguard_judge_rescores_a_rule_that_cannot_execute(rows: Any) -> None:
    def broken(code: str, initial: Any, final: Any) -> bool | None:
        return None  # the verifier could not run

    def env() -> Any:
        e = _env(rows[1][6])
        change = {"table": "tasks", "key": "task_1", "field": "status", "before": "open", "after": "done"}
        verifier = RubricItem(id="T9", text="the verifier passes", scope="task", check=Check(kind="verifier"))
        e.task = e.task.model_copy(update={
            "verifier_code": "def verify(initial, final):\n    return 1/0",
            "expected_diff": (change,), "rubric": (*e.task.rubric, verifier),
        })  # fmt: skip
        return e

    def closing(status: str) -> tuple[Any, list[dict[str, Any]]]:
        e = env()
        e.update_task_status(task_id="task_1", status=status)
        return e, [*_calls("update_task_status", {"task_id": "task_1", "status": status}, 1), *_say("done")]

    e, done = closing("done")
    unscored = judge_rollout(e, done, [EOS], EOS, verifier=broken)
    assert unscored.dropped is not None and unscored.dropped.startswith("unscored: rule verification failed")
    # offline, the transcript judge decides the verifier item from the task's expected changes
    e, done = closing("done")
    rescored = judge_rollout(e, done, [EOS], EOS, verifier=broken, judge=transcript_judge())
    assert rescored.dropped is None and rescored.source == "judge_fallback" and rescored.task == 1.0
    e, reopened = closing("open")
    wrong = judge_rollout(e, reopened, [EOS], EOS, verifier=broken, judge=transcript_judge())
    assert wrong.source in ("judge_fallback", "rule") and wrong.task == 0.0


def test_a_forbidden_call_ends_the_rollout_scored_zero_before_verification(rows: Any) -> None:
    row = rows[1][-1]  # how many open tasks user_2 has; update_task_status is forbidden
    env = _env(row, process=ProcessSettings())
    env.update_task_status(task_id="task_1", status="done")
    refused = json.loads(env.update_task_status(task_id="task_1", status="open"))
    assert refused["error"]["code"] == "rollout_stopped" and "forbids" in refused["error"]["message"]
    assert len(env.policy_calls) == 1 and len(env.refused_calls) == 1  # the second never reached the sandbox
    assert env._final_state()["tasks"]["task_1"]["status"] == "done"

    def never(code: str, initial: Any, final: Any) -> bool | None:
        raise AssertionError("a doomed rollout needs no verification")

    verdict = judge_rollout(env, _say('{"count": 0}'), [EOS], EOS, verifier=never)
    assert verdict.task == 0.0 and verdict.source == "process" and "forbids" in (verdict.stopped or "")
    # without process validation the same rollout is graded at the end, and fails there
    late = _env(row)
    late.update_task_status(task_id="task_1", status="done")
    assert judge_rollout(late, _say('{"count": 0}'), [EOS], EOS).source == "rule"


def test_a_looping_rollout_is_stopped_but_still_graded_on_its_answer(rows: Any) -> None:
    row = rows[1][-1]  # user_2 has 0 open tasks
    env = _env(row, process=ProcessSettings(repeat_limit=2))
    for _ in range(3):
        env.list_tasks(user_id="user_2", status="open")
    assert env.stopped is not None and env.stopped.kind == "stuck" and len(env.refused_calls) == 1
    verdict = judge_rollout(env, _say('{"count": 0}'), [EOS], EOS)
    assert verdict.task == 1.0 and verdict.source == "rule" and "in a row" in (verdict.stopped or "")


@pytest.mark.slow
def test_grpo_with_rcrl_runs_and_logs_rewards_prefixes_and_hybrid_loss(
    rows: Any, sft_checkpoint: Any, tmp_path: Path
) -> None:
    settings = GRPOSettings(
        max_steps=2, num_generations=2, batch_size=2, max_completion_length=48,
        curriculum=CurriculumSettings(max_retries=1, alpha=0.5),
    )  # fmt: skip
    with Sandbox(workers=1, idle_timeout_s=0) as sandbox:
        weights = AuxiliaryWeights(weights={"repeated_calls": -0.2})
        report = train_grpo(
            rows[1][:4], None, sandbox, sft_checkpoint.checkpoint, tmp_path / "rl", settings,
            judge=transcript_judge(), weights=weights,
        )  # fmt: skip
        assert sandbox.sessions() == []  # every rollout session was closed
    # each reward component's mean is logged, with the safeguard's count and the weights it used
    assert set(report.extra["reward_components"]) == {
        "task_reward", "format_reward", "redundancy_reward", "auxiliary_reward"
    }  # fmt: skip
    assert report.extra["reward_components"]["auxiliary_reward"] <= 0
    assert report.extra["auxiliary_weights"] == {"repeated_calls": -0.2}
    assert 0 <= report.extra["safeguard_activations"] <= report.extra["scored_rollouts"]
    # rewards were streamed: every rollout has its time from end to reward
    assert report.extra["reward_streaming"] is True
    assert report.extra["reward_latency"]["latency_p50_ms"] is not None
    # ... and TRL's own log line for each step says so
    logged = [e for e in report.logs if "rewards/streaming" in e]
    assert len(logged) == 2 and all(e["rewards/streaming"] == 1.0 for e in logged)
    assert all(
        e["rewards/latency_p50_ms"] > 0 and 0 <= e["rewards/scored_before_loop_end"] <= 1 for e in logged
    )
    assert sum(e["rewards/safeguard_rescored"] for e in logged) <= report.extra["safeguard_activations"]
    assert isinstance(report.extra["process_stops"], dict)
    assert report.kind == "grpo" and report.steps == 2
    assert len(report.extra["rewards"]) == 2 and len(report.extra["prefix_turns"]) == 2
    assert len(report.extra["loss_rl"]) == 2 and len(report.extra["loss_ce"]) == 2
    for entry in (e for e in report.logs if "rcrl/loss_hybrid" in e):
        expected = settings.lambda_rl * entry["rcrl/loss_rl"] + settings.lambda_ce * entry["rcrl/loss_ce"]
        assert entry["rcrl/loss_hybrid"] == pytest.approx(expected, rel=1e-4, abs=1e-6)
    assert all(0 <= p <= 2 for p in report.extra["curriculum_prefixes"].values())
    for name in (
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "grpo_curves.png",
        "train_report.json",
    ):
        assert (report.checkpoint / name).is_file(), name
    assert json.loads((report.checkpoint / "grpo_settings.json").read_text())["epsilon_high"] == 0.28
