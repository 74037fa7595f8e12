"""Sentence frames of DAG requests: records named once and then "that X", plain answer formats."""

from __future__ import annotations

import random

from agentomnia.envs.naming import article
from agentomnia.tasks.dag.phrasing import (
    answer_format,
    ask,
    count_question,
    flag_question,
    is_handle,
    key_words,
    possessive,
)


def test_a_short_handle_takes_a_possessive_and_a_long_phrase_does_not() -> None:
    assert possessive("that order", "customer") == "that order's customer"
    assert possessive("the new invoice", "vendor") == "the new invoice's vendor"
    long = "whichever of that artist's tracks has the highest plays"
    assert not is_handle(long)
    assert possessive(long, "album") == f"the album of {long}"


def test_counts_are_asked_as_questions() -> None:
    assert count_question("the tracks with status active") == "how many tracks with status active there are"
    assert count_question("that artist's tracks") == "how many tracks that artist has"
    assert count_question("all tracks") == "how many tracks there are in total"


def test_a_yes_no_field_is_asked_as_whether() -> None:
    assert flag_question("that picker", "active") == "whether that picker is active"
    assert flag_question("the new user", "is_verified") == "whether the new user is verified"
    assert flag_question("that account", "has_overdraft") == "whether that account has overdraft"
    assert flag_question("that request", "issue_resolved") == "whether that request's issue is resolved"
    assert flag_question("that listing", "pets_allowed") == "whether that listing's pets are allowed"
    assert flag_question("that plan", "auto_renew") == "whether that plan has auto renew turned on"
    # a question frame, so it is never asked as "the active of ..."
    for seed in range(20):
        asked = ask(random.Random(seed), flag_question("that picker", "active"), "active")
        assert "the active" not in asked and '"active"' in asked


def test_every_ask_names_its_field_in_double_quotes() -> None:
    for seed in range(30):
        rng = random.Random(seed)
        assert '"track_count"' in ask(rng, "how many tracks that artist has", "track_count")
        assert '"duration"' in ask(rng, "that track's duration", "duration")
        # a question is never forced into a noun frame ("I need whether ...")
        assert not ask(rng, "whether it is late", "late").startswith(("I need whether", "Put whether"))


def test_the_format_sentence_lists_every_field_once() -> None:
    text = answer_format(random.Random(1), ["a", "b", "c"])
    assert all(text.count(f'"{k}"') == 1 for k in "abc")
    assert answer_format(random.Random(1), ["only"]).count('"only"') == 1


def test_field_names_and_articles() -> None:
    assert key_words("work order", "count") == "work_order_count"
    assert key_words("K-12 class") == "k_12_class"
    assert article("invoice") == "an invoice" and article("budget") == "a budget"
    assert (
        article("alarm panel") == "an alarm panel"
        and article("user") == "a user"
        and article("hour") == "an hour"
    )
    assert article("information gathering") == "an information gathering" and article("unit") == "a unit"


def test_a_chain_that_comes_back_to_a_named_record_calls_it_by_its_handle() -> None:
    """plan -> its only subscriber account -> that account's plan is the plan already named: "that plan"."""
    from types import SimpleNamespace

    from agentomnia.envs.spec import EntitySpec
    from agentomnia.tasks.dag.generate import Executed, Generated, Generator

    gen = Generator.__new__(Generator)
    gen.out = Generated(clauses=["Look at plan PLA-001 (Ad-Free Plus)."])
    plan = Executed(
        0, SimpleNamespace(), {}, {}, {}, ("plan", "PLA-001"), "plan PLA-001 (Ad-Free Plus)", "that plan"
    )
    gen.out.calls.append(plan)
    gen._marks = {0: (1, "plan")}
    gen.out.clauses.append("That plan's only subscriber account can be marked cancelled now.")
    entity = EntitySpec(
        name="plan", table="plans", key="plan_id", attributes=(), description="A plan.", id_prefix="PLA"
    )
    assert gen._named(entity, "PLA-001") == "that plan"
    assert gen._named(entity, "PLA-002") is None  # another plan keeps its own description
    gen.out.clauses.append("Take the plan named 'Family'.")  # another plan was named since
    assert gen._named(entity, "PLA-001") is None


def test_a_domain_operation_is_asked_for_as_itself() -> None:
    """'End playback' is not 'update its device': a tool that does more than edit fields is asked for by
    its own description, with the record put where the description names one."""
    from types import SimpleNamespace

    from agentomnia.tasks.dag.generate import operation_clause

    def clause(name: str, description: str, entity: str, phrase: str) -> str | None:
        return operation_clause(
            SimpleNamespace(name=name, description=description),  # type: ignore[arg-type]
            SimpleNamespace(name=entity),  # type: ignore[arg-type]
            phrase,
        )

    assert clause(
        "pay_citation", "Pay a citation. Also sets the status to paid.", "citation", "citation CIT-3"
    ) == ("Pay citation CIT-3")
    assert (
        clause("check_in_attendee", "Check an attendee in.", "attendee", "that attendee")
        == "Check that attendee in"
    )
    assert (
        clause(
            "decide_package_review",
            "Approve a pending package review and record when.",
            "package_review",
            "it",
        )
        == "Approve it and record when"
    )
    assert (
        clause("stop_stream", "End playback.", "stream_session", "stream STR-7")
        == "end playback for stream STR-7"
    )
    assert clause("update_plan_item", "Change fields of a plan item.", "plan_item", "that plan item") is None


def test_a_figure_is_checked_against_a_round_level() -> None:
    from agentomnia.tasks.dag.generate import round_figure

    assert round_figure(1586, 1584) == 1500 and round_figure(1586, 1589) == 2000  # not 1,584 or 1,589
    assert round_figure(134.75, 133) == 100 and round_figure(134.75, 135) == 150
    assert round_figure(7, 5) == 5 and round_figure(250, 250) == 250  # small counts and round figures stay
