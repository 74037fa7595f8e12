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


def test_the_teacher_asks_for_a_missing_detail_as_a_person_would_and_the_user_hears_it() -> None:
    """A record is asked for as which one, a date as the field it goes into, anything else as what it
    should be ("could you tell me the started at?" before); the scripted user recognises each question
    as being about that detail, a seed's camelCase id included, and not a word inside another."""
    from agentomnia.trajectories.agents import detail_question
    from agentomnia.trajectories.users import _asks_about

    cases = {
        "customer_id": "Before I continue, which customer is it?",
        "petId": "Before I continue, which pet is it?",
        "started_at": 'Before I continue, what date should I use for "started at"?',
        "priority": "Before I continue, what should the priority be?",
    }
    for key, question in cases.items():
        assert detail_question(key) == question
        assert _asks_about(question, key)
    assert not _asks_about("Before I continue, which carpet is it?", "pet_id")
    assert not _asks_about("Before I continue, which customer is it?", "priority")
