"""A request speaks a date ("March 13, 2026") that the tools take in ISO form ('2026-03-13'): every
reader of a request finds it in either form, and a spoken date reads back to exactly the value."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import pytest

from agentomnia.dates import date_forms, iso_dates, spoken_date, with_iso_dates
from agentomnia.tasks.dag.describe import between, introduces, say, stated
from agentomnia.tasks.dag.generate import _its, new_record
from agentomnia.tasks.dag.interaction import _stands_as_detail
from agentomnia.tasks.quality import _stated
from agentomnia.trajectories.evidence import Evidence
from agentomnia.trajectories.users import _detail


@pytest.mark.parametrize(
    ("value", "spoken"),
    [
        ("2026-03-13", "March 13, 2026"),
        ("2025-10-01", "October 1, 2025"),
        ("2026-03-01T13:30:00", "March 1, 2026 at 1:30 PM"),
        ("2026-03-01T00:05:00", "March 1, 2026 at 12:05 AM"),
        ("2026-03-01T12:00:00", "March 1, 2026 at 12:00 PM"),
        ("2026-03-01T09:15:42", "March 1, 2026 at 9:15:42 AM"),
        ("2026-03-01T13:30:00Z", "March 1, 2026 at 1:30 PM UTC"),
    ],
)
def test_a_date_is_spoken_as_people_write_it_and_reads_back_exactly(value: str, spoken: str) -> None:
    assert spoken_date(value) == spoken
    assert iso_dates(f"The due date is {spoken}.") == [value]
    assert date_forms(value) == [value, spoken]


@pytest.mark.parametrize(
    "value",
    [
        "2026-02-30",
        "2026-03-01T13:30",
        "2026-03-01T13:30:00+01:00",
        "2026-03-01 13:30:00",
        "20260301",
        "March 1",
    ],
)
def test_a_form_a_spoken_date_cannot_give_back_is_left_as_it_is(value: str) -> None:
    assert spoken_date(value) is None
    assert date_forms(value) == [value]
    assert say(value) == f"'{value}'"


def test_every_day_and_minute_round_trips() -> None:
    rng = random.Random(3)
    start = datetime(2020, 1, 1)
    for _ in range(500):
        moment = start + timedelta(minutes=rng.randrange(0, 6 * 365 * 24 * 60), seconds=rng.choice((0, 0, 7)))
        for value in (moment.date().isoformat(), moment.isoformat(), f"{moment.isoformat()}Z"):
            spoken = spoken_date(value)
            assert spoken is not None and iso_dates(spoken) == [value], value


def test_a_text_reads_back_in_iso_form_with_nothing_else_changed() -> None:
    text = "Open a statement dated March 13, 2026, due April 2, 2026 at 4:05 PM, for 13 units."
    assert with_iso_dates(text) == "Open a statement dated 2026-03-13, due 2026-04-02T16:05:00, for 13 units."
    assert iso_dates("on February 30, 2026 or Mays 3, 2026") == []  # no such day; no such month


def test_a_request_says_a_date_unquoted_and_its_checks_find_the_value() -> None:
    assert say("2026-03-13") == "March 13, 2026" and say("SKU-001") == "'SKU-001'"
    query = f"Register a new vendor statement with statement date {say('2026-03-13')}."
    assert _stated("2026-03-13", query)
    assert not _stated("2026-03-14", query)

    evidence = Evidence()
    evidence.add_text(query)
    assert evidence.supports("2026-03-13") and not evidence.supports("2026-03-12")
    assert evidence.where("2026-03-13") == "the request"


def test_a_moment_reads_on_its_day_and_a_span_between_two_days() -> None:
    assert stated("created_at", say("2026-02-28T12:45:00")) == "created on February 28, 2026 at 12:45 PM"
    assert stated("created_at", "'pending'") == "created at 'pending'"  # no date: the field's own words
    assert stated("statement_date", say("2026-03-13")) == "statement date March 13, 2026"
    assert (
        between("started_on", "2025-12-12", "2026-03-21")
        == "started between December 12, 2025 and March 21, 2026"
    )
    assert between("start_date", "2025-12-12", "2026-03-21") == (
        "with start date between December 12, 2025 and March 21, 2026"
    )
    # what is due is said to be due, never "with due next between" (`due_next`)
    assert (
        between("due_date", "2025-12-12", "2026-03-21") == "due between December 12, 2025 and March 21, 2026"
    )
    assert (
        between("due_next", "2026-01-02", "2026-02-03") == "due between January 2, 2026 and February 3, 2026"
    )
    assert between("inspection_due", "2026-01-02", "2026-02-03") == (
        "whose inspection is due between January 2, 2026 and February 3, 2026"
    )
    # what was done on a day, however the participle is made; a date named by a preposition is a date
    assert (
        between("made_on", "2026-01-02", "2026-02-03") == "made between January 2, 2026 and February 3, 2026"
    )
    assert (
        between("starts_on", "2026-01-02", "2026-02-03")
        == "starting between January 2, 2026 and February 3, 2026"
    )
    assert between("valid_from", "2026-01-02", "2026-02-03") == (
        "whose valid from date is between January 2, 2026 and February 3, 2026"
    )


def test_one_end_of_a_span_is_never_withheld_a_date_that_stands_alone_is() -> None:
    query = (
        "Delete the subscription started between December 12, 2025 and March 21, 2026. "
        "Add a payment processed on March 1, 2026 at 2:15 PM."
    )
    assert not _stands_as_detail(query, "December 12, 2025", "start")
    assert not _stands_as_detail(query, "March 21, 2026", "end")
    assert _stands_as_detail(query, "March 1, 2026 at 2:15 PM", "processed_at")


def test_the_simulated_user_gives_a_withheld_date_as_a_person_would() -> None:
    assert _detail("statement_date", "2026-03-13") == "The statement date is March 13, 2026."
    assert _detail("opened_on", "2026-03-01T14:15:00") == "Opened on: March 1, 2026 at 2:15 PM."
    assert _detail("created_at", "2026-03-01T14:15:00") == "Created on: March 1, 2026 at 2:15 PM."
    assert _detail("weight_kg", 72.7) == "The weight is 72.7 kg."


def test_a_field_that_leads_into_its_date_is_said_before_it_without_with() -> None:
    assert introduces("effective on") and introduces("valid from") and introduces("starts on")
    assert not introduces("status on") and not introduces("effective")
    assert _its("effective on", say("2026-03-23"), {}) == "it is effective on March 23, 2026"
    assert new_record("supplier contract", ["valid from March 13, 2026", "rate 206.5"]) == (
        "supplier contract valid from March 13, 2026",
        "rate 206.5",
    )
