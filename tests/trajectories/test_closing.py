"""How the teacher reports back at the end of a conversation."""

from __future__ import annotations

from agentomnia.trajectories.messages import closing


def test_the_teacher_reports_back_as_a_person_would() -> None:
    assert "tool calls" not in closing([True, True], "t1")
    assert closing([True, True], "t1") == closing([True, True], "t1")  # the same every time
    assert len({closing([True], f"t{i}") for i in range(40)}) > 1  # several wordings across tasks
    assert closing([True, False, True], "t1") == (
        "1 of the 3 steps was refused by the system; I left it as the system has it."
    )
    assert closing([False, False], "t1").startswith("2 of the 2 steps were refused")
    assert closing([False], "t1") == "The system refused that step, so nothing changed."
    assert closing([], "t1") == "Nothing needed changing."
