"""The offline teacher's narration of its calls."""

from __future__ import annotations


def test_the_teacher_says_what_a_call_is_for_with_a_verb() -> None:
    """A tool described by a noun phrase takes its name's verb ("list episodes of ..."), never
    "to episodes of a series"; a description that opens with a verb keeps it, in the base form."""
    from agentomnia.trajectories.agents import _purpose

    assert (
        _purpose("Episodes of a series by season", "list_episodes") == "list episodes of a series by season"
    )
    assert _purpose("Returns pet inventories by status", "getInventory") == "return pet inventories by status"
    assert _purpose("End playback.", "stop_stream") == "end playback"
    assert _purpose("Weather for a city", "weather_now") == "look up weather for a city"
