"""`agentomnia run` says each stage as it starts and ends, from the event log of its own runs."""

from __future__ import annotations

import os

import dagster as dg

from agentomnia.runs import HOST_TAG, PID_TAG, host
from agentomnia_assets.pipeline import StageProgress


@dg.asset
def first() -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"records": 12, "share": 0.5, "realism/x": 1, "note": "text"})


@dg.asset(deps=[first])
def second() -> None:
    return None


def test_each_stage_is_said_when_it_starts_and_when_it_is_done_with_its_headline_figures() -> None:
    lines: list[str] = []
    with dg.instance_for_test() as instance:
        with StageProgress(instance, {"first", "second"}, say=lines.append, poll_s=0.05):
            result = dg.materialize(
                [first, second], instance=instance, tags={PID_TAG: str(os.getpid()), HOST_TAG: host()}
            )
        assert result.success
    said = [" ".join(line.split()[1:]) for line in lines]  # without the clock
    assert "first started" in said and "second started" in said
    done = next(line for line in said if line.startswith("first done in"))
    assert "records 12" in done and "share 0.5" in done
    assert "realism/x" not in done and "note" not in done  # only plain figures
    assert said.index("first started") < said.index(done) < said.index("second started")
    assert len(said) == len(set(said))  # nothing said twice


def test_quiet_says_nothing(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("AGENTOMNIA_QUIET", "1")
    lines: list[str] = []
    with (
        dg.instance_for_test() as instance,
        StageProgress(instance, {"first"}, say=lines.append, poll_s=0.05),
    ):
        dg.materialize([first], instance=instance, tags={PID_TAG: str(os.getpid()), HOST_TAG: host()})
    assert lines == []
