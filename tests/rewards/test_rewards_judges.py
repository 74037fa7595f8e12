"""The offline transcript judge: right when the calls tell the truth, wrong where a transcript misleads."""

from __future__ import annotations

from typing import Any

from agentomnia.rewards import judge_calibration
from agentomnia.rewards.judges import outcome_groups, transcript_judge
from agentomnia.tasks.grading import Outcome
from agentomnia.tasks.models import Check, RubricItem
from agentomnia.trajectories.models import Step, Trajectory
from tests.rewards.conftest import S0, done_state, make_task

SET_DONE = RubricItem(
    id="T1", scope="task", weight=2, text="tasks[task_1].status is 'done' (was 'open').",
    check=Check(kind="field_equals", table="tasks", key="task_1", field="status", value="done"),
)  # fmt: skip
ANSWER = RubricItem(
    id="T2", scope="task", weight=2, text="The answer gives the owner as 'user_1' (field `owner`).",
    check=Check(kind="answer_equals", field="owner", value="user_1"),
)  # fmt: skip
NO_COLLATERAL = RubricItem(
    id="G1", scope="general", text="Nothing outside the requested records was changed.",
    check=Check(kind="diff_within", value=[{"table": "tasks", "key": "task_1"}]),
)  # fmt: skip


def _outcome(
    state: dict[str, Any], calls: list[tuple[str, dict[str, Any]]], answer: dict[str, Any]
) -> Outcome:
    return Outcome(final_state=state, calls=calls, answer=answer)


def test_judge_reads_writes_and_answers_from_the_transcript() -> None:
    task = make_task(SET_DONE, ANSWER, NO_COLLATERAL)
    judge = transcript_judge()
    good = _outcome(
        done_state(), [("update_task", {"task_id": "task_1", "status": "done"})], {"owner": "user_1"}
    )
    assert [judge(i, task, good) for i in task.rubric] == [True, True, True]
    wrong_value = _outcome(
        S0, [("update_task", {"task_id": "task_1", "status": "open"})], {"owner": "user_9"}
    )
    assert judge(SET_DONE, task, wrong_value) is False
    assert judge(ANSWER, task, wrong_value) is False


def test_judge_is_fooled_by_a_refused_write_and_calibration_shows_it() -> None:
    """The write was asked for but the environment refused it: the state says no, the transcript yes."""
    task = make_task(SET_DONE, ANSWER)
    judge = transcript_judge()
    refused = _outcome(S0, [("update_task", {"task_id": "task_1", "status": "done"})], {"owner": "user_1"})
    assert judge(SET_DONE, task, refused) is True  # the judge's mistake
    good = _outcome(
        done_state(), [("update_task", {"task_id": "task_1", "status": "done"})], {"owner": "user_1"}
    )
    nothing = _outcome(S0, [], {})
    honest = judge_calibration([(task, [good, nothing])], judge, repeats=2)
    fooled = judge_calibration([(task, [good, refused, nothing])], judge, repeats=2)
    assert honest.basic_accuracy == 1.0
    assert fooled.basic_accuracy is not None and fooled.basic_accuracy < 1.0
    assert fooled.scores["magnitude"] is not None and honest.scores["magnitude"] is not None
    assert fooled.scores["magnitude"] < honest.scores["magnitude"]


def test_unreadable_items_stay_undecided() -> None:
    task = make_task(SET_DONE)
    odd = RubricItem(id="T9", scope="task", text="The reply is polite.")
    assert transcript_judge()(odd, task, _outcome(S0, [], {})) is None


def _run(task_id: str, calls: list[tuple[str, dict[str, Any]]], attempt: int) -> Trajectory:
    steps = tuple(
        Step(index=i, turn=1, tool=t, arguments=a, ok=True, state_hash="h") for i, (t, a) in enumerate(calls)
    )
    return Trajectory(task_id=task_id, env_id="mock", task_kind="dag_standard", policy="p",
                      messages=({"role": "user", "content": "x"},), steps=steps, attempt=attempt)  # fmt: skip


def test_outcome_groups_need_two_runs_and_replay_their_calls() -> None:
    task = make_task(SET_DONE)
    runs = [
        _run(task.id, [("update_task", {"task_id": "task_1", "status": "done"})], 0),
        _run(task.id, [], 1),
    ]
    replayed: list[int] = []

    def final_state(t: Any, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        replayed.append(len(calls))
        return done_state() if calls else S0

    groups = outcome_groups({task.id: task}, runs, final_state)
    assert len(groups) == 1 and replayed == [1, 0]
    assert groups[0][1][0].final_state == done_state()
    assert outcome_groups({task.id: task}, runs[:1], final_state) == []
