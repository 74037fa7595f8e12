"""GRPO + RCRL: rollout verdicts (dynamic filtering) and a short CPU run from the SFT checkpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentomnia.rewards import AuxiliaryWeights
from agentomnia.rewards.judges import transcript_judge
from agentomnia.sandbox import Sandbox, fixture_bundle, open_local
from trainers.curriculum import CurriculumSettings
from trainers.environment import environment_class
from trainers.grpo import GRPOSettings, judge_rollout, train_grpo

EOS = 7


def _env(row: dict[str, Any], prefix_turns: int = 0) -> Any:
    env = environment_class(fixture_bundle("mock"), "mock")(lambda bundle, config: open_local(bundle, config))
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
        e.task = e.task.model_copy(update={"verifier_code": "def verify(initial, final):\n    return 1/0"})
        e.update_task_status(task_id="task_1", status="done")
        return e

    done = [*_calls("update_task_status", {"task_id": "task_1", "status": "done"}, 1), *_say("done")]
    unscored = judge_rollout(env(), done, [EOS], EOS, verifier=broken)
    assert unscored.dropped is not None and unscored.dropped.startswith("unscored: rule verification failed")
    rescored = judge_rollout(env(), done, [EOS], EOS, verifier=broken, judge=transcript_judge())
    assert rescored.dropped is None and rescored.source == "judge_fallback" and rescored.task is not None


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
