"""The offline transcript judge: it decides rubric items from their structured targets and the transcript
(never their wording, never the end state), is right when the transcript tells the whole story and
wrong where it does not, and calibration on labelled rollouts of a real environment measures that."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from agentomnia.rewards import judge_calibration
from agentomnia.rewards.judges import Transcript, believed_state, outcome_groups, transcript_judge
from agentomnia.sandbox.fixtures import fixture_bundle
from agentomnia.tasks.grading import Outcome, run_check
from agentomnia.tasks.models import Check, RubricItem, Task
from agentomnia.tasks.rubric import build_rubric
from agentomnia.trajectories.models import Step, Trajectory
from tests.fixtures.mock import mock_spec
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
    # a record the request never named is collateral; a reference to a user is not a write to it
    stray = _outcome(S0, [("assign_task", {"task_id": "task_1", "user_id": "user_1"}),
                          ("register_user", {"user_id": "user_7"})], {})  # fmt: skip
    assert judge(NO_COLLATERAL, task, stray) is False
    assert judge(NO_COLLATERAL, task, _outcome(S0, stray.calls[:1], {})) is True


def test_judge_decides_from_the_target_not_the_wording_nor_the_end_state() -> None:
    task = make_task(SET_DONE)
    judge = transcript_judge()
    reworded = SET_DONE.model_copy(update={"text": "Ticket one got closed out."})
    wrote = _outcome(S0, [("update_task", {"task_id": "task_1", "new_status": "done"})], {})
    assert judge(reworded, task, wrote) is True  # decided from check.field/value; `new_status` sets `status`
    # the end state says done, the transcript shows nothing: the judge goes by the transcript
    assert judge(reworded, task, _outcome(done_state(), [], {})) is False
    # the builder's template wording with no structured target is not read at all
    template_only = SET_DONE.model_copy(update={"check": None})
    assert judge(template_only, task, wrote) is None
    assert judge(RubricItem(id="T9", scope="task", text="The reply is polite."), task, wrote) is None
    verifier = SET_DONE.model_copy(update={"check": Check(kind="verifier")})
    assert judge(verifier, task, wrote) is None


def test_refused_writes_fool_the_judge_only_without_results() -> None:
    task = make_task(SET_DONE, ANSWER)
    judge = transcript_judge()
    calls = [("update_task", {"task_id": "task_1", "status": "done"})]
    refused = _outcome(S0, calls, {"owner": "user_1"})
    assert judge(SET_DONE, task, refused) is True  # no results in the transcript: the write is believed
    shown = Transcript(final_state=S0, calls=calls, answer={"owner": "user_1"}, ok=[False])
    assert judge(SET_DONE, task, shown) is False  # the transcript shows the refusal
    good = _outcome(done_state(), calls, {"owner": "user_1"})
    nothing = _outcome(S0, [], {})
    honest = judge_calibration([(task, [good, nothing])], judge, repeats=2)
    fooled = judge_calibration([(task, [good, refused, nothing])], judge, repeats=2)
    assert honest.basic_accuracy == 1.0 and honest.scores["magnitude"] == pytest.approx(1.0)
    assert fooled.basic_accuracy == pytest.approx(5 / 6)  # 6 items, the refused write's status item wrong
    # gold (1, .5, 0) vs judge (1, 1, 0): A_gold (√1.5, 0, -√1.5), A_judge (√.5, √.5, -√2), Var(A_gold) 1;
    # squared errors (2 - √3, 1/2, 7/2 - 2√3) sum to 6 - 3√3, so MSE = 2 - √3 and C_Mag = √3 - 1
    assert fooled.scores["magnitude"] == pytest.approx(0.7320508076)


def test_the_belief_applies_creates_deletes_and_updates() -> None:
    task = make_task(SET_DONE)
    calls = [
        ("get_user", {"user_id": "user_1"}),
        ("create_task", {"user_id": "user_1", "title": "Write notes"}),
        ("assign_task", {"task_id": "task_1", "user_id": "user_2"}),
        ("delete_task", {"task_id": "task_1"}),
    ]
    belief = believed_state(task, _outcome({}, calls, {}))
    assert "task_1" not in belief["tasks"]
    assert belief["tasks"]["new:1"] == {"user_id": "user_1", "title": "Write notes"}
    assert belief["users"] == S0["users"]
    partial = believed_state(task, _outcome({}, calls[:3], {}))
    assert (
        partial["tasks"]["task_1"]["user_id"] == "user_2" and partial["tasks"]["task_1"]["status"] == "open"
    )


def test_judge_infers_what_a_reader_of_the_calls_would() -> None:
    s0 = {
        "orders": {
            "O-1": {"order_id": "O-1", "status": "paid", "address": {"city": "Denver", "country": "US"}}
        }
    }
    task = make_task(SET_DONE).model_copy(update={"init_config": s0})
    judge = transcript_judge()

    def target(field: str, value: Any) -> RubricItem:
        check = Check(kind="field_equals", table="orders", key="O-1", field=field, value=value)
        return RubricItem(id="T1", scope="task", text="…", check=check)

    status, reason = target("status", "cancelled"), target("cancel_reason", "late")
    cancel = ("cancel_order", {"order_id": "O-1", "reason": "late"})
    assert judge(status, task, _outcome({}, [cancel], {})) is True  # the verb names the value
    assert judge(reason, task, _outcome({}, [cancel], {})) is True  # `reason` is read as `cancel_reason`
    assert judge(target("cancel_reason", "early"), task, _outcome({}, [cancel], {})) is False
    paid_again = ("update_order", {"order_id": "O-1", "status": "paid"})
    assert (
        judge(status, task, _outcome({}, [cancel, paid_again], {})) is False
    )  # an explicit later write wins
    assert judge(status, task, _outcome({}, [("ship_order", {"order_id": "O-1"})], {})) is False
    city = target("address", {"city": "Boulder", "country": "US"})
    assert judge(city, task, _outcome({}, [("update_address", {"order_id": "O-1", "city": "Boulder"})], {}))
    assert not judge(
        city, task, _outcome({}, [("update_address", {"order_id": "O-1", "city": "Bolder"})], {})
    )


# ---- labelled rollouts on the shipped mock task tracker, with four operations whose effect the
# ---- transcript does not spell out: a real delete, a soft delete, a restart that reopens a task and
# ---- a sync that cascades to a task no argument names


def _tracker_class() -> type:
    bundle = fixture_bundle("mock")
    namespace: dict[str, Any] = {}
    exec(compile(bundle.source, "mock_env.py", "exec"), namespace)  # the shipped fixture's own code
    base = namespace[bundle.class_name]

    class Tracker(base):  # type: ignore[misc, valid-type]
        def delete_task(self, task_id: str) -> dict[str, Any]:
            return (
                self._ok(self.tasks.pop(task_id))
                if task_id in self.tasks
                else self._fail("not_found", task_id)
            )

        def archive_task(self, task_id: str) -> dict[str, Any]:
            self.tasks[task_id]["status"] = "archived"  # kept, only hidden: a soft delete
            return self._ok(dict(self.tasks[task_id]))

        def restart_task(self, task_id: str) -> dict[str, Any]:
            self.tasks[task_id].update(status="open", description="")  # overwrites without naming fields
            return self._ok(dict(self.tasks[task_id]))

        def sync_owner_tasks(self, task_id: str) -> dict[str, Any]:
            source = self.tasks[task_id]
            siblings = [
                t for t in self.tasks.values() if t["user_id"] == source["user_id"] and t is not source
            ]
            for t in siblings:
                t["status"] = source["status"]  # a cascade over records no argument names
            return self._ok(len(siblings))

    return Tracker


def _run(
    tracker: type, s0: dict[str, Any], calls: list[tuple[str, dict[str, Any]]], answer: dict[str, Any]
) -> Transcript:
    import copy

    env = tracker(copy.deepcopy(s0))
    ok = [bool(getattr(env, tool)(**args)["ok"]) for tool, args in calls]
    state = {"users": env.users, "tasks": env.tasks, "next_task_number": env.next_task_number}
    return Transcript(final_state=copy.deepcopy(state), calls=calls, answer=answer, ok=ok)


def _task(s0: dict[str, Any], query: str, rubric: tuple[RubricItem, ...]) -> Task:
    return make_task(*rubric).model_copy(update={"init_config": s0, "query": query})


def _labelled_groups() -> list[tuple[Task, list[Outcome]]]:
    tracker = _tracker_class()
    s0 = dict(fixture_bundle("mock").s0)
    spec = mock_spec()

    def rubric(
        calls: list[tuple[str, dict[str, Any]]], answer: dict[str, Any], **created: Any
    ) -> tuple[RubricItem, ...]:
        reference = _run(tracker, s0, calls, answer)
        return build_rubric(spec, s0, reference.final_state, answer, {}, created_fields=created or None)

    finish = _task(s0, "Finish the offsite task and tell me who owns it.",
                   rubric([("update_task_status", {"task_id": "task_2", "status": "done"})], {"owner": "user_1"}))  # fmt: skip
    start = _task(s0, "Start on the quarterly report.",
                  rubric([("update_task_status", {"task_id": "task_1", "status": "in_progress"})], {}))  # fmt: skip
    remove = _task(
        s0, "Drop the quarterly report task.", rubric([("delete_task", {"task_id": "task_1"})], {})
    )
    plan = {"user_id": "user_2", "title": "Plan the sprint"}
    create = _task(s0, "Open 'Plan the sprint' for Grace.", rubric([("create_task", plan)], {}, tasks=[plan]))
    count = _task(s0, "How many of Ada's tasks are still active?", rubric([], {"total_active": 2}))

    def runs(
        task: Task, *rollouts: tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]
    ) -> tuple[Task, list[Outcome]]:
        return task, [_run(tracker, s0, calls, answer) for calls, answer in rollouts]

    finish_2 = ("update_task_status", {"task_id": "task_2", "status": "done"})
    return [
        runs(
            finish,
            ([finish_2], {"owner": "user_1"}),  # right
            ([finish_2, ("restart_task", {"task_id": "task_2"})], {"owner": "user_1"}),  # overwritten later
            (
                [finish_2, ("sync_owner_tasks", {"task_id": "task_2"})],  # also finishes task_1
                {"name": "user_1"},
            ),
            ([], {}),
        ),  # fmt: skip
        runs(
            start,
            ([("update_task_status", {"task_id": "task_1", "status": "in_progress"})], {}),
            (
                [
                    ("update_task_status", {"task_id": "task_1", "status": "done"}),
                    ("update_task_status", {"task_id": "task_1", "status": "in_progress"}),
                ],
                {},
            ),  # refused, shown
            ([("archive_task", {"task_id": "task_1"})], {}),
        ),  # fmt: skip
        runs(
            remove,
            ([("delete_task", {"task_id": "task_1"})], {}),
            ([("archive_task", {"task_id": "task_1"})], {}),  # a soft delete taken for a removal
            ([("list_tasks", {"user_id": "user_1"})], {}),
        ),  # fmt: skip
        runs(create, ([("create_task", plan)], {}), ([("create_task", {**plan, "user_id": "user_9"})], {})),
        runs(count, ([], {"total_active": 2}), ([], {"total_active": 3}), ([], {"count": 2})),
    ]


def test_calibration_on_labelled_rollouts_measures_the_judges_mistakes() -> None:
    groups = _labelled_groups()
    judge = transcript_judge()
    finish_task, finish_runs = groups[0]
    assert [i.check.kind for i in finish_task.rubric if i.check] == [
        "field_equals",
        "answer_equals",
        "diff_within",
    ]
    verdicts = [[judge(i, finish_task, o) for i in finish_task.rubric] for o in finish_runs]
    assert verdicts == [[True, True, True], [True, True, True], [True, True, True], [False, False, True]]
    # gold: the restart reopened task_2; the sync finished task_1 too; the owner was given as `name`
    report = judge_calibration(groups, judge, repeats=2)
    # 31 basic items, 4 wrong (restart, sync, `name` for `owner`, archive as removal);
    # 3 advanced (total_active) items, 1 wrong (`count` for `total_active`)
    assert report.items == 34 and report.undecided == 0
    assert report.basic_accuracy == pytest.approx(27 / 31) and report.advanced_accuracy == pytest.approx(
        2 / 3
    )
    assert report.scores["reliability"] == pytest.approx(108 / 143)  # (0.5*31/27 + 0.5*3/2)^-1
    # 6 gold positives all kept; 9 gold negatives, 3 made non-negative (sync, archive, `count`)
    assert (report.adv_fnr, report.adv_fpr) == (0.0, pytest.approx(1 / 3))
    assert report.scores["direction"] == pytest.approx(0.8)  # (0.5/(2/3) + 0.5/1)^-1
    assert report.scores["consistency"] == 1.0  # a deterministic judge
    gold = [np.array([1, 0.6, 0.4, 0.2]), np.array([1, 1, 1]) / [1, 3, 3], np.array([1, 1, 1]) / [1, 3, 3],
            np.array([1, 1 / 3]), np.array([1, 1, 1]) / [1, 3, 3]]  # fmt: skip
    judged = [np.array([1, 1, 1, 0.2]), np.array([1, 1, 1]) / [1, 3, 3], np.array([1, 1, 1]) / [1, 1, 3],
              np.array([1, 1 / 3]), np.array([1, 1, 1]) / [1, 3, 1]]  # fmt: skip
    a_gold = np.concatenate([(g - g.mean()) / g.std() for g in gold])
    a_judge = np.concatenate([(j - j.mean()) / j.std() for j in judged])
    assert report.scores["magnitude"] == pytest.approx(1 - np.mean((a_judge - a_gold) ** 2) / np.var(a_gold))
    assert report.c_rm is not None and 0.7 < report.c_rm < 0.9
    assert report.failed_minimums == ("magnitude",) and not report.passed


def _trajectory(
    task_id: str, calls: list[tuple[str, dict[str, Any]]], ok: list[bool], attempt: int
) -> Trajectory:
    steps = tuple(
        Step(index=i, turn=1, tool=t, arguments=a, ok=good, state_hash="h")
        for i, ((t, a), good) in enumerate(zip(calls, ok, strict=True))
    )
    return Trajectory(task_id=task_id, env_id="mock", task_kind="dag_standard", policy="p",
                      messages=({"role": "user", "content": "x"},), steps=steps, attempt=attempt)  # fmt: skip


def test_outcome_groups_need_two_runs_replay_their_calls_and_keep_results() -> None:
    task = make_task(SET_DONE)
    runs = [
        _trajectory(task.id, [("update_task", {"task_id": "task_1", "status": "done"})], [False], 0),
        _trajectory(task.id, [], [], 1),
    ]
    replayed: list[int] = []

    def final_state(t: Any, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        replayed.append(len(calls))
        return S0

    groups = outcome_groups({task.id: task}, runs, final_state)
    assert len(groups) == 1 and replayed == [1, 0]
    first = groups[0][1][0]
    assert isinstance(first, Transcript) and first.ok == [False]
    assert transcript_judge()(SET_DONE, task, first) is False  # the refusal is in the transcript
    assert outcome_groups({task.id: task}, runs[:1], final_state) == []


def test_on_the_shop_a_cancellation_is_read_but_its_refund_is_not_seen() -> None:
    """The shipped shop environment: cancel_order also refunds the payment and restocks the products."""
    bundle = fixture_bundle("shop")
    namespace: dict[str, Any] = {}
    exec(compile(bundle.source, "shop_env.py", "exec"), namespace)  # the shipped fixture's own code
    shop, s0 = namespace[bundle.class_name], dict(bundle.s0)

    def run(calls: list[tuple[str, dict[str, Any]]]) -> Transcript:
        import copy

        env = shop(copy.deepcopy(s0))
        ok = [bool(getattr(env, tool)(**args)["ok"]) for tool, args in calls]
        return Transcript(final_state={t: copy.deepcopy(getattr(env, t)) for t in s0}, calls=calls, ok=ok)

    def item(id_: str, check: Check) -> RubricItem:
        return RubricItem(id=id_, scope="task", text="…", check=check)

    rubric = (
        item(
            "T1", Check(kind="field_equals", table="orders", key="O-0009", field="status", value="cancelled")
        ),
        item(
            "T2", Check(kind="field_equals", table="payments", key="P-0001", field="refunded", value=302.26)
        ),
        item("T3", Check(kind="record_absent", table="orders", match={"order_id": "O-0009"})),
    )
    task = make_task(*rubric).model_copy(update={"init_config": s0})
    judge = transcript_judge()
    cancel = run([("cancel_order", {"order_id": "O-0009", "reason": "changed mind"})])
    shipped = run([("cancel_order", {"order_id": "O-0019", "reason": "changed mind"})])
    assert cancel.ok == [True] and shipped.ok == [False]
    gold = [[run_check(i.check, task, o)[0] for i in rubric] for o in (cancel, shipped)]  # type: ignore[arg-type]
    judged = [[judge(i, task, o) for i in rubric] for o in (cancel, shipped)]
    assert gold == [[True, True, False], [False, False, False]]
    assert judged == [[True, False, False], [False, False, False]]  # the refund is a side effect it misses


VERIFIER_ITEM = RubricItem(
    id="T1", scope="task", level="advanced", weight=3, check=Check(kind="verifier"),
    text="Exactly the tasks the rule selects end up done, and no other record changes.",
)  # fmt: skip
CLOSE_DIFF = (
    {"table": "tasks", "key": "task_1", "field": "status", "before": "open", "after": "done"},
    {"table": "tasks", "key": "task_1", "field": "updated_at", "before": None, "after": "2025-01-02"},
)


def test_judge_decides_a_verifier_item_from_the_expected_changes_on_the_transcript() -> None:
    """The judge never runs verifier code: it reads the task's expected changes against what the calls
    visibly did. A derived field no call names (updated_at) is not held against the run."""
    task = make_task(VERIFIER_ITEM, verifier_code="def check_func(final_state):\n    return True",
                     expected_diff=CLOSE_DIFF)  # fmt: skip
    judge = transcript_judge()
    close = ("update_task", {"task_id": "task_1", "status": "done"})
    assert judge(VERIFIER_ITEM, task, _outcome(S0, [close], {})) is True
    # a write of another value, no write at all, a stray write or a stray record: not what the code checks
    assert (
        judge(
            VERIFIER_ITEM, task, _outcome(S0, [("update_task", {"task_id": "task_1", "status": "open"})], {})
        )
        is False
    )
    assert judge(VERIFIER_ITEM, task, _outcome(S0, [], {})) is False
    stray = [close, ("update_user", {"user_id": "user_1", "name": "Ada"})]
    assert judge(VERIFIER_ITEM, task, _outcome(S0, stray, {})) is False
    made = [close, ("create_task", {"user_id": "user_1", "status": "open"})]
    assert judge(VERIFIER_ITEM, task, _outcome(S0, made, {})) is False
    # a solver task admits other plans: only the reference's changes pass, anything else is undecided
    solver = task.model_copy(update={"kind": "solver"})
    assert judge(VERIFIER_ITEM, solver, _outcome(S0, [close], {})) is True
    assert judge(VERIFIER_ITEM, solver, _outcome(S0, [], {})) is None
    # without expected changes there is nothing to read the item against
    assert (
        judge(VERIFIER_ITEM, task.model_copy(update={"expected_diff": ()}), _outcome(S0, [close], {})) is None
    )


def test_judge_reads_expected_creations_and_removals() -> None:
    created = {"task_id": "task_2", "user_id": "user_1", "status": "open"}
    task = make_task(VERIFIER_ITEM, expected_diff=(
        {"table": "tasks", "key": "task_2", "field": None, "before": None, "after": created},
    ))  # fmt: skip
    judge = transcript_judge()
    assert (
        judge(
            VERIFIER_ITEM, task, _outcome(S0, [("create_task", {"user_id": "user_1", "status": "open"})], {})
        )
        is True
    )
    assert judge(VERIFIER_ITEM, task, _outcome(S0, [("create_task", {"user_id": "user_9"})], {})) is False
    removal = make_task(VERIFIER_ITEM, expected_diff=(
        {"table": "tasks", "key": "task_1", "field": None, "before": S0["tasks"]["task_1"], "after": None},
    ))  # fmt: skip
    assert judge(VERIFIER_ITEM, removal, _outcome(S0, [("delete_task", {"task_id": "task_1"})], {})) is True
    assert judge(VERIFIER_ITEM, removal, _outcome(S0, [("get_task", {"task_id": "task_1"})], {})) is False
