"""`agentomnia run` says each stage as it ends, and one that takes a while also as it starts, from the
event log of its own runs."""

from __future__ import annotations

import io
import os
import re
import sys
import time

import dagster as dg

from agentomnia import progress
from agentomnia.runs import HOST_TAG, PID_TAG, host
from agentomnia_assets.pipeline import StageProgress


@dg.asset
def first() -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"records": 12, "share": 0.5, "realism/x": 1, "note": "text"})


@dg.asset(deps=[first])
def second() -> None:
    return None


@dg.asset(deps=[second])
def third() -> dg.MaterializeResult:
    time.sleep(1.0)
    return dg.MaterializeResult(metadata={"records": 3})


def test_each_stage_is_said_when_it_is_done_and_a_slow_one_also_when_it_starts() -> None:
    lines: list[str] = []
    with dg.instance_for_test() as instance:
        progress_ = StageProgress(
            instance, {"first", "second", "third"}, say=lines.append, poll_s=0.05, announce_after_s=0.4
        )
        with progress_:
            result = dg.materialize(
                [first, second, third], instance=instance, tags={PID_TAG: str(os.getpid()), HOST_TAG: host()}
            )
        assert result.success
    said = [" ".join(line.split()[1:]) for line in lines]  # without the clock
    done = next(line for line in said if re.match(r"first \d+\.\ds ", line))
    assert "records 12" in done and "share 0.5" in done
    assert "realism/x" not in done and "note" not in done  # only plain figures
    # the quick stages have their done line only; the slow one is said as it starts, then done
    assert "first started" not in said and "second started" not in said
    third_done = next(line for line in said if re.match(r"third \d+\.\ds ", line))
    assert said.index(done) < said.index("third started") < said.index(third_done)
    assert len(said) == len(set(said))  # nothing said twice


@dg.asset
def slow_items() -> dg.MaterializeResult:
    def one(n: int) -> int:
        time.sleep(0.06)
        return n * n

    squares = progress.tracked_map("slow_items", "environments", one, range(12), workers=2)
    return dg.MaterializeResult(metadata={"squares": sum(squares)})


def test_a_stage_that_reports_its_items_shows_how_many_are_done_of_how_many_and_how_fast() -> None:
    lines: list[str] = []
    with dg.instance_for_test() as instance:
        with StageProgress(instance, {"slow_items"}, say=lines.append, poll_s=0.05, every_s=0.1):
            result = dg.materialize(
                [slow_items], instance=instance, tags={PID_TAG: str(os.getpid()), HOST_TAG: host()}
            )
        assert result.success
    counts = [
        m for line in lines if (m := re.search(r"slow_items\s+(\d+)/12 environments, ([\d.]+)/s", line))
    ]
    assert counts, lines
    # a stage's first count comes after the line that says it started, however soon that is
    first_count = next(i for i, line in enumerate(lines) if re.search(r"slow_items\s+\d+/12", line))
    assert re.search(r"slow_items +started$", lines[first_count - 1]), lines
    done = [int(m[1]) for m in counts]
    assert done == sorted(done) and len(set(done)) == len(done) and all(0 < d <= 12 for d in done)
    assert all(float(m[2]) > 0 for m in counts)
    assert progress.snapshot() == {}  # a finished stage leaves nothing on the board


_OURS = re.compile(r"  \d\d:\d\d:\d\d  \S")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _watched(monkeypatch, stream: io.StringIO) -> str:  # type: ignore[no-untyped-def]
    """What a run of `slow_items` then `third` writes to standard error through the default say."""
    monkeypatch.setattr(sys, "stderr", stream)
    with (
        dg.instance_for_test() as instance,
        StageProgress(instance, {"slow_items", "third"}, poll_s=0.05, every_s=0.1, announce_after_s=0.2),
    ):
        dg.materialize([slow_items, third], instance=instance, tags={PID_TAG: str(os.getpid()), HOST_TAG: host()},
                       run_config={"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}})  # fmt: skip
    return stream.getvalue()


def test_on_a_terminal_starts_and_counts_stand_on_one_status_line_and_each_stage_leaves_one_line(
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    from agentomnia.runs import _CLEAR

    written = _watched(monkeypatch, _Terminal())
    kept = [line.rsplit(_CLEAR, 1)[-1] for line in written.split("\n")]
    kept = [line for line in kept if _OURS.match(line)]  # not Dagster's own log lines
    assert [re.sub(r"\d+\.\ds", "0.0s", " ".join(line.split()[1:3])) for line in kept] == [
        "slow_items 0.0s",
        "third 0.0s",
    ], written
    shown = [part for part in written.split(_CLEAR) if part and not part.endswith("\n")]
    assert any(re.search(r"slow_items\s+\d+/12 environments", part) for part in shown), written
    assert any(re.search(r"third +started$", part.rstrip()) for part in shown), written
    assert written.endswith("\n") or written.endswith(_CLEAR)  # nothing left standing after the run


def test_in_a_log_every_start_and_count_is_a_line_of_its_own(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    written = _watched(monkeypatch, io.StringIO())
    assert "\r" not in written and "\x1b" not in written
    lines = [" ".join(line.split()[1:]) for line in written.splitlines() if _OURS.match(line)]
    assert "slow_items started" in lines and "third started" in lines
    assert any(re.fullmatch(r"slow_items \d+/12 environments, [\d.]+/s", line) for line in lines), lines


def test_a_run_that_was_launched_before_the_reporter_opened_is_not_replayed(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from dagster import DagsterRun

    tags = {PID_TAG: str(os.getpid()), HOST_TAG: host()}
    lines: list[str] = []
    with dg.instance_for_test() as instance:
        dg.materialize([first, second], instance=instance, tags=tags)  # the round before
        time.sleep(1.1)
        # that round is still closing (its run not yet marked finished) as the next one starts
        monkeypatch.setattr(DagsterRun, "is_finished", property(lambda self: False))
        with StageProgress(instance, {"first", "second"}, say=lines.append, poll_s=0.05):
            dg.materialize([first], instance=instance, tags=tags)
    said = [" ".join(line.split()[1:]) for line in lines]
    assert sum(bool(re.match(r"first \d+\.\ds", s)) for s in said) == 1 and not any(
        s.startswith("second") for s in said
    )


def test_quiet_says_nothing(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("AGENTOMNIA_QUIET", "1")
    lines: list[str] = []
    with (
        dg.instance_for_test() as instance,
        StageProgress(instance, {"first"}, say=lines.append, poll_s=0.05),
    ):
        dg.materialize([first], instance=instance, tags={PID_TAG: str(os.getpid()), HOST_TAG: host()})
    assert lines == []


def test_the_summary_gives_each_round_its_records_on_lines_that_fit_a_terminal() -> None:
    from agentomnia_assets.pipeline import record_lines, rejection_lines

    rows = [
        {"kind": "task", "round": "r1", "status": "ok", "count": 119},
        {"kind": "task", "round": "r0", "status": "ok", "count": 138},
        {"kind": "task", "round": "r0", "status": "rejected", "count": 225},
        {"kind": "environment", "round": "r0", "status": "ok", "count": 162},
    ]
    assert record_lines(rows) == ["  r0  task 138, 225 rejected · environment 162", "  r1  task 119"]
    many = [{"kind": f"kind_{i}", "round": "r0", "status": "failed", "count": 1000 + i} for i in range(30)]
    lines = record_lines(many)
    assert 5 <= len(lines) <= 8 and all(len(line) <= 100 for line in lines)
    # an entry is never split across lines
    assert all(line.rstrip(" ·").endswith(" failed") for line in lines)
    reasons = [
        {"kind": "task", "reason": "execution", "count": 89},
        {"kind": "trajectory", "reason": "failed", "count": 60},
        {"kind": "task", "reason": "grounding", "count": 77},
        {"kind": "task", "reason": "leakage", "count": 5},
    ]
    assert rejection_lines(reasons, 3) == [
        "  task: execution 89, grounding 77; trajectory: failed 60; 5 more, for 1 other reason (--json)"
    ]


def test_the_summary_names_the_slowest_stages_after_a_watched_run_and_lists_them_all_after_a_quiet_one(
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    from agentomnia_assets.pipeline import PipelineSummary, StageReport

    stages = [
        StageReport(asset="environments", group="envs", seconds=42.0, round="r0",
                    metadata={"environments": 138, "discarded": 2, "kept_share": 0.986, "tools_total": 6922}),
        StageReport(asset="sft_checkpoint", group="training", seconds=55.6, round="r0", metadata={"steps": 40}),
        StageReport(asset="taxonomy", group="seeds", seconds=2.0, metadata={"l1_domains": 90}),
    ]  # fmt: skip
    rejections = [{"kind": "task", "count": 10 - i, "reason": f"reason {i}"} for i in range(10)]
    summary = PipelineSummary(home="h", round="r0", scale="default", seconds=99.0, stages=stages, records=[],
                              rejections=rejections, where={"lineage": "x"})  # fmt: skip
    monkeypatch.delenv("AGENTOMNIA_QUIET", raising=False)
    watched = summary.render()
    assert "3 stages; the slowest: sft_checkpoint r0 56s, environments r0 42s, taxonomy 2s" in " ".join(
        watched.split()
    )
    assert all(len(line) <= 100 for line in watched.splitlines())
    assert "kept_share" not in watched and "tools_total" not in watched
    kept = summary.model_copy(update={"stages": [*stages, StageReport(asset="toolsets", group="envs", seconds=0.0,
                                                                      round="r0", kept_from="run-abc")]})  # fmt: skip
    assert "1 stage kept from run-abc, not run again: toolsets" in kept.render()
    assert "reason 7" in watched and "reason 8" not in watched and "3 more, for 2 other reasons" in watched
    monkeypatch.setenv("AGENTOMNIA_QUIET", "1")
    quiet = summary.render()
    line = next(x for x in quiet.splitlines() if " environments " in x)
    assert line.endswith("42.0s  environments 138, discarded 2, kept_share 0.986")  # three figures, no more


def test_a_rate_is_said_only_once_a_tenth_of_a_second_has_gone_by() -> None:
    from agentomnia.progress import Progress

    assert Progress("eval", "trials", 1, 170, started=10.0, updated=10.05).line() == "1/170 trials"
    assert Progress("eval", "trials", 63, 170, started=10.0, updated=10.7).line() == "63/170 trials, 90.0/s"
