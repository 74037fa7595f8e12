"""Rollout analysis: each behavioural indicator on a small transcript, and the comparison of failed and
successful rollouts that turns separating indicators into auxiliary penalties.

Transcripts come from the project's own rollout loop (`trajectories.rollout.rollout`) on the mock
task tracker in the sandbox, driven by a scripted agent, so messages, tool results and state hashes
have exactly the shapes a real run leaves behind.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from agentomnia.rewards.analysis import (
    INDICATORS,
    AnalysisSettings,
    AuxiliaryWeights,
    ScoredRollout,
    analysis_markdown,
    analyze_rollouts,
    auxiliary_reward,
    auxiliary_terms,
    indicators_of,
    missing_details,
)
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.dag.interaction import GAP_PHRASES, make_multi_turn, says_gap
from agentomnia.tasks.models import Task
from agentomnia.trajectories.messages import answer_block, assistant_message, tool_call
from agentomnia.trajectories.rollout import rollout
from agentomnia.trajectories.users import make_user
from tests.fixtures.mock import mock_tasks

_ids = itertools.count()


def say(text: str, *calls: tuple[str, Any]) -> dict[str, Any]:
    """An assistant turn; a call's arguments given as text are sent verbatim (for bad JSON)."""
    out = []
    for name, args in calls:
        call = tool_call(f"call_{next(_ids)}", name, args if isinstance(args, Mapping) else {})
        if isinstance(args, str):
            call["function"]["arguments"] = args
        out.append(call)
    return assistant_message(text, out)


def final(text: str, answer: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return assistant_message(text + ("\n" + answer_block(answer) if answer is not None else ""))


class Scripted:
    """A policy that plays back its turns, then says it is done."""

    name = "scripted"

    def __init__(self, turns: Sequence[dict[str, Any]]) -> None:
        self.turns = list(turns)

    def act(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        return self.turns.pop(0) if self.turns else final("Done.")


def run(
    task: Task,
    bundle: Bundle,
    sandbox: Sandbox,
    *turns: dict[str, Any],
    reward: float | None = 1.0,
    succeeded: bool = True,
    max_steps: int = 30,
) -> ScoredRollout:
    """`turns` played through the real rollout loop (with the task's user simulator), graded as given."""
    result = rollout(task, bundle, sandbox, Scripted(turns), user=make_user(task), max_steps=max_steps)
    return ScoredRollout(
        task=task, messages=tuple(result.messages), tools=tuple(bundle.tools),
        read_tools=tuple(sorted(bundle.read_tools)), stop_reason=result.stop_reason,
        step_hashes=tuple(s.state_hash for s in result.steps), initial_hash=result.initial_hash,
        reward=reward, succeeded=succeeded,
    )  # fmt: skip


@pytest.fixture(scope="module")
def mock(mock_bundle: Bundle, sandbox: Sandbox) -> Any:
    create, question, program, handover = mock_tasks(mock_bundle)

    def go(task: Task, *turns: dict[str, Any], **kw: Any) -> ScoredRollout:
        return run(task, mock_bundle, sandbox, *turns, **kw)

    return type("Mock", (), {"create": create, "question": question, "program": program,
                             "handover": handover, "run": staticmethod(go), "bundle": mock_bundle})  # fmt: skip


def fired(rollout: ScoredRollout, name: str) -> list[str]:
    return [f.why for f in indicators_of(rollout)[name]]


# -- each indicator on a hand-made transcript -----------------------------------------------------


def test_clean_run_shows_no_indicator(mock: Any) -> None:
    clean = mock.run(
        mock.question,
        say("Let me list Ada's tasks.", ("list_tasks", {"user_id": "user_1"})),
        final(
            "Two are open.",
            {"open_count": 2, "titles": ["Book the team offsite", "File the quarterly report"]},
        ),
    )
    assert clean.stop_reason == "answer"
    assert {n: f for n, f in indicators_of(clean).items() if f} == {}


def test_tool_call_anomalies_name_the_step_and_the_problem(mock: Any) -> None:
    fine = say("List them.", ("list_tasks", {"user_id": "user_1"}))
    bad = mock.run(
        mock.question,
        say("Try a tool.", ("drop_tasks", {})),
        say("List them.", ("list_tasks", "{user_id: user_1")),
        fine,  # the loop stops after three invalid calls in a row
        say("List again.", ("list_tasks", {"status": "open"})),
        say("And once more.", ("list_tasks", {"user_id": 1, "status": "finished"})),
        fine,
        final("Two.", {"open_count": 2}),
    )
    assert bad.stop_reason == "answer"
    found = fired(bad, "tool_call_anomaly")
    assert len(found) == 4
    assert "step 0 `drop_tasks`: unknown tool" in found[0]
    assert "step 1 `list_tasks`: bad serialization" in found[1] and "not JSON" in found[1]
    assert "step 3" in found[2] and "'user_id' is a required property" in found[2]
    assert "step 4" in found[3] and "1 is not of type 'string'" in found[3]
    assert not any(f.startswith(("step 2", "step 5")) for f in found)


def test_repeated_calls_fire_at_the_limit_or_when_the_budget_runs_out(mock: Any) -> None:
    look = ("get_user", {"user_id": "user_1"})
    thrice = mock.run(
        mock.question, say("a", look), say("b", look), say("c", look), final("?", {"open_count": 2})
    )
    assert (
        "`get_user` called 3 times with the same arguments (steps [0, 1, 2]"
        in fired(thrice, "repeated_calls")[0]
    )
    twice = mock.run(mock.question, say("a", look), say("b", look), final("Two.", {"open_count": 2}))
    assert fired(twice, "repeated_calls") == []
    looping = mock.run(mock.question, say("a", look), say("b", look), say("c", look), max_steps=2)
    assert looping.stop_reason == "budget"
    assert "until the turn budget ran out" in fired(looping, "repeated_calls")[0]
    strict = indicators_of(twice, AnalysisSettings(repeat_limit=2))["repeated_calls"]
    assert strict and "2 times" in strict[0].why


def test_no_clarification_when_a_withheld_detail_is_not_asked_for(mock: Any) -> None:
    handover = mock.handover  # its persona withholds task_id: the user gives it only when asked
    assert missing_details(handover) == ["withheld task_id"]
    move = ("assign_task", {"task_id": "task_2", "user_id": "user_2"})
    blind = mock.run(handover, say("Moving it.", move), final("Moved task_2 to Grace."))
    found = indicators_of(blind)["no_clarification"]
    assert found and found[0].step == 0 and "withheld task_id" in found[0].why
    asked = mock.run(handover, final("Which task do you mean? Could you tell me the task id?"), say("Moving.", move),
                     final("Moved task_2 to Grace."))  # fmt: skip
    assert any(m["role"] == "user" and "task_2" in m["content"] for m in asked.messages[2:])
    assert fired(asked, "no_clarification") == []
    plain = mock.run(
        mock.create, say("Creating.", ("create_task", {"user_id": "user_2", "title": "Plan the sprint"}))
    )
    assert fired(plain, "no_clarification") == []  # nothing held back: no need to ask


def test_missing_details_read_the_multi_turn_dag_route(mock: Any) -> None:
    data = mock.create.model_dump(exclude={"id"})
    data["reference_calls"] = [{"tool": "create_task", "args": {"user_id": "user_2", "title": "Plan the sprint"},
                                "sources": {"title": "query", "user_id": "s0:users.user_2.user_id"}}]  # fmt: skip
    multi = make_multi_turn(Task.model_validate(data), random.Random(0))
    assert multi is not None and says_gap(multi.query)
    phrase = next(p for p in GAP_PHRASES if p in multi.query)
    assert missing_details(multi) == ["withheld title", f"the request says {phrase!r}"]
    blind = mock.run(multi, say("On it.", ("create_task", {"user_id": "user_2", "title": "Sprint"})))
    assert "withheld title" in fired(blind, "no_clarification")[0]


def test_unchecked_write_needs_a_read_of_the_record_or_its_table(mock: Any) -> None:
    finish = ("update_task_status", {"task_id": "task_1", "status": "done"})
    blind = mock.run(mock.program, say("Finishing.", finish), final("Done."))
    assert fired(blind, "unchecked_write") == [
        "step 0 `update_task_status` writes task_1 with no earlier read of it"
    ]
    other_table = mock.run(mock.program, say("Who?", ("get_user", {"user_id": "user_1"})), say("Go.", finish))
    assert "step 1" in fired(other_table, "unchecked_write")[0]
    listed = mock.run(mock.program, say("Look.", ("list_tasks", {"user_id": "user_1"})), say("Go.", finish))
    assert fired(listed, "unchecked_write") == []
    table_only = mock.run(
        mock.program, say("Look.", ("list_tasks", {"user_id": "user_2"})), say("Go.", finish)
    )
    assert fired(table_only, "unchecked_write") == []  # the tasks table was read, if not task_1 itself


def test_unsupported_answer_values_appear_in_no_tool_result(mock: Any) -> None:
    listing = say("Listing.", ("list_tasks", {"user_id": "user_1"}))
    grounded = mock.run(
        mock.question, listing, final("ok", {"open_count": 2, "titles": ["File the quarterly report"]})
    )
    assert fired(grounded, "unsupported_answer") == []
    invented = mock.run(mock.question, listing, final("ok", {"open_count": 2, "titles": ["Plan the sprint"],
                                                                "hours_left": 37.5}))  # fmt: skip
    found = fired(invented, "unsupported_answer")
    assert found == ["answer.hours_left = 37.5 appears in no tool result",
                     "answer.titles[0] = 'Plan the sprint' appears in no tool result"]  # fmt: skip
    # the request names the title, but only a tool result is evidence of what the system holds
    unlooked = mock.run(mock.create, final("Created.", {"title": "Plan the sprint"}))
    assert "answer.title" in fired(unlooked, "unsupported_answer")[0]


# -- comparison and weights -----------------------------------------------------------------------


def _round(mock: Any) -> list[ScoredRollout]:
    """Three failed rollouts that call an unknown tool, three successful ones that do not; every one of
    them looks the user up three times (a habit both groups share)."""
    look = ("get_user", {"user_id": "user_1"})
    listing = say("Listing.", ("list_tasks", {"user_id": "user_1"}))
    answer = {"open_count": 2, "titles": ["Book the team offsite", "File the quarterly report"]}
    out = []
    for n in range(3):
        out.append(mock.run(mock.question, say("a", look), say("b", look), say("c", look),
                            say("Count.", ("count_tasks", {"user_id": "user_1"})), listing,
                            final(f"Failed run {n}.", {"open_count": 2, "titles": ["Plan the sprint"]}), reward=0.0, succeeded=False))  # fmt: skip
        out.append(mock.run(mock.question, say("a", look), say("b", look), say("c", look), listing,
                            final(f"Good run {n}.", answer), reward=1.0, succeeded=True))  # fmt: skip
    return out


def test_a_failed_only_indicator_is_adopted_and_a_shared_one_is_not(mock: Any) -> None:
    rollouts = _round(mock)
    unscored = mock.run(mock.question, final("No idea.", {"open_count": 2}), reward=None, succeeded=False)
    report = analyze_rollouts([*rollouts, unscored], round_key="r1")
    assert (report.failed, report.successful, report.excluded) == (3, 3, 1)
    stats = {s.indicator: s for s in report.indicators}
    assert set(stats) == set(INDICATORS)
    anomaly, repeats = stats["tool_call_anomaly"], stats["repeated_calls"]
    assert (anomaly.failed_hits, anomaly.success_hits, anomaly.difference) == (3, 0, 1.0)
    assert anomaly.separates and anomaly.weight == -0.3  # 0.5 x 1.0, capped at 0.3
    assert "adopted: 3/3 failed (100%) vs 0/3 successful (0%), difference +1.00" in anomaly.reason
    assert (repeats.failed_hits, repeats.success_hits, repeats.difference) == (3, 3, 0.0)
    assert not repeats.separates and repeats.weight == 0.0
    assert repeats.reason.startswith(
        "not adopted: 3/3 failed (100%) vs 3/3 successful (100%), difference +0.00"
    )
    # the failed runs name a title no listing showed: unsupported, and separating too
    assert stats["unsupported_answer"].separates
    weights = report.weights
    assert weights.round == "r1" and set(weights.weights) == {"tool_call_anomaly", "unsupported_answer"}
    assert all(w < 0 for w in weights.weights.values())
    assert {d.indicator: d.adopted for d in weights.decisions} == {
        s.indicator: s.separates for s in report.indicators
    }
    assert AuxiliaryWeights.model_validate_json(weights.model_dump_json()) == weights
    assert json.loads(weights.model_dump_json())["weights"]["tool_call_anomaly"] == -0.3


def test_weights_scale_with_the_separation_and_need_support(mock: Any) -> None:
    rollouts = _round(mock)
    # one failed run in three shows the anomaly: difference 0.33, under the default support of 2
    thinned = [r for i, r in enumerate(rollouts) if i in (0, 1, 3, 5)]
    thinned += [mock.run(mock.question, say("List.", ("list_tasks", {"user_id": "user_1"})),
                         final("Wrong.", {"open_count": 2, "titles": ["Book the team offsite"]}),
                         reward=0.0, succeeded=False) for _ in range(2)]  # fmt: skip
    report = analyze_rollouts(thinned)
    anomaly = next(s for s in report.indicators if s.indicator == "tool_call_anomaly")
    assert (anomaly.failed_hits, anomaly.failed_total) == (1, 3) and not anomaly.separates
    assert "only 1 failed rollouts show it (< 2)" in anomaly.reason
    loose = analyze_rollouts(thinned, AnalysisSettings(min_support=1, penalty_scale=0.6, max_penalty=1.0))
    anomaly = next(s for s in loose.indicators if s.indicator == "tool_call_anomaly")
    assert anomaly.separates and anomaly.weight == pytest.approx(-0.2)  # 0.6 x (1/3 - 0)
    few = analyze_rollouts(rollouts[:2])
    assert all(not s.separates and "too few rollouts" in s.reason for s in few.indicators)


def test_adopted_weights_give_the_auxiliary_reward(mock: Any) -> None:
    rollouts = _round(mock)
    weights = analyze_rollouts(rollouts).weights
    failed, good = rollouts[0], rollouts[1]
    assert auxiliary_terms(failed, weights) == {"tool_call_anomaly": -0.3, "unsupported_answer": -0.3}
    assert auxiliary_reward(failed, weights) == pytest.approx(-0.6)
    assert auxiliary_reward(good, weights) == 0.0
    assert auxiliary_reward(failed, AuxiliaryWeights()) == 0.0
    with pytest.raises(ValueError, match="unknown indicators"):
        auxiliary_reward(failed, AuxiliaryWeights(weights={"vibes": -1.0}))


def test_analysis_markdown_is_one_row_per_indicator(mock: Any) -> None:
    report = analyze_rollouts(_round(mock), round_key="r1")
    text = analysis_markdown(report)
    assert text.startswith("**Rollout analysis r1**: 3 failed (reward <= 0.3), 3 successful, 0 excluded")
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert [r.split("`")[1] for r in rows] == list(INDICATORS)
    assert "| `tool_call_anomaly` | 3/3 (100%) | 0/3 (0%) | +1.00 | yes | -0.3 |" in text
    assert "| `repeated_calls` | 3/3 (100%) | 3/3 (100%) | +0.00 | no | 0 |" in text


def test_scored_rollout_from_a_verified_trajectory(mock: Any, sandbox: Sandbox) -> None:
    from agentomnia.trajectories import generate_trajectories

    tasks = [mock.question, mock.program]
    trajectories = generate_trajectories(tasks, {mock.question.env_id: mock.bundle}, sandbox)
    for trajectory, task in zip(trajectories, tasks, strict=True):
        scored = ScoredRollout.from_trajectory(
            trajectory, task, mock.bundle.tools, read_tools=mock.bundle.read_tools
        )
        assert scored.id == trajectory.id and scored.succeeded and scored.reward == 1.0
        assert len(scored.step_hashes) == len(trajectory.steps) and scored.initial_hash
        assert {n: f for n, f in indicators_of(scored).items() if f} == {}


def test_trl_shaped_transcripts_read_the_same(mock: Any) -> None:
    """GRPO completions carry arguments as dicts and tool results without call ids; bundles without a
    spec do not say which tools read. The indicators must not change."""
    look = ("get_user", {"user_id": "user_1"})
    finish = ("update_task_status", {"task_id": "task_1", "status": "done"})
    original = mock.run(mock.program, say("a", look), say("b", look), say("c", look), say("Go.", finish),
                        final("Done.", {"finished": ["task_9"]}))  # fmt: skip
    trl = []
    for m in original.messages:
        m = {k: v for k, v in m.items() if k != "tool_call_id"}
        if m.get("tool_calls"):
            m["tool_calls"] = [{"type": "function", "function": {"name": c["function"]["name"],
                                "arguments": json.loads(c["function"]["arguments"])}} for c in m["tool_calls"]]  # fmt: skip
        trl.append(m)
    reshaped = original.model_copy(update={"messages": tuple(trl), "read_tools": None})
    expected = {n: [f.why for f in found] for n, found in indicators_of(original).items()}
    assert {n: [f.why for f in found] for n, found in indicators_of(reshaped).items()} == expected
    assert {n for n, found in expected.items() if found} == {
        "repeated_calls",
        "unchecked_write",
        "unsupported_answer",
    }


def test_worked_arithmetic_and_the_agents_own_sentences_are_not_unobserved_values(mock: Any) -> None:
    """A total the closing message works out step by step from listed figures is derived, however many
    terms it sums; a reason the agent writes in its own words is prose, not a value it claims."""
    call = tool_call("call_sum", "list_tasks", {"user_id": "user_1"})
    listed = json.dumps(
        {"ok": True, "data": {"items": [{"fee": 68.88}, {"fee": 84.57}, {"fee": 145.55}, {"fee": 12.5}]}}
    )

    def closing(text: str, answer: Mapping[str, Any]) -> ScoredRollout:
        messages = ({"role": "user", "content": mock.question.query}, assistant_message("Listing.", [call]),
                    {"role": "tool", "tool_call_id": "call_sum", "content": listed}, final(text, answer))  # fmt: skip
        return ScoredRollout(task=mock.question, messages=messages, tools=tuple(mock.bundle.tools),
                             read_tools=tuple(sorted(mock.bundle.read_tools)), stop_reason="answer", reward=1.0, succeeded=True)  # fmt: skip

    worked = closing("Total: 68.88 + 84.57 = 153.45, 153.45 + 145.55 = 299.", {"total": 299})
    assert fired(worked, "unsupported_answer") == []
    assert fired(closing("Total: 299.", {"total": 299}), "unsupported_answer") == [
        "answer.total = 299 appears in no tool result"
    ]
    reason = {"fallback_reason": "no record met the rule; handled the one with the latest due date"}
    assert fired(closing("Done.", reason), "unsupported_answer") == []
    # a name stated as a value still needs a source
    assert fired(closing("Done.", {"owner": "Linus Torvalds"}), "unsupported_answer") == [
        "answer.owner = 'Linus Torvalds' appears in no tool result"
    ]
