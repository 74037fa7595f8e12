"""One arithmetic step from stated values is derived; anything further is not. A string is found as a
whole token."""

from __future__ import annotations

import random
import re

from agentomnia.trajectories.evidence import combines, has_token


def test_sums_differences_and_ratios_of_stated_values_are_derived() -> None:
    assert combines(5, [1, 4]) and combines(-804.9, [100.0, 904.9]) and combines(0.25, [1, 4])
    assert combines(806.9, [2.0, 804.9])


def test_values_two_steps_away_or_from_one_number_are_not() -> None:
    assert not combines(13, [1, 4, 6])  # 1 + 4 + 6 = 11, and no pair gives 13
    assert not combines(8, [4])  # a single value cannot be combined with itself
    assert not combines(3, [])


def test_a_token_is_found_as_the_regular_expression_finds_it() -> None:
    """`has_token` (substring search) agrees with the whole-token regular expression it replaced, on
    needles placed at the edges of words, ids and numbers."""

    def by_pattern(text: str, needle: str) -> bool:
        return re.search(r"(?<![A-Za-z0-9_-])" + re.escape(needle) + r"(?![A-Za-z0-9_])", text) is not None

    rng = random.Random(5)
    pieces = ["cla-001", "cla-0012", "7", "17", "7.5", "a b", "_x", "-", " ", ".", "é", "x", "\n", '"']
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        needle = rng.choice(pieces[:6]) if rng.random() < 0.8 else text[1:4]
        assert has_token(text, needle) == (bool(needle) and by_pattern(text, needle)), (text, needle)
    assert has_token("order cla-001.", "cla-001") and not has_token("order cla-0012", "cla-001")
    assert not has_token("x-7", "7") and has_token("7-x", "7")


def test_a_figure_is_cited_from_where_it_was_written_with_grouping() -> None:
    """The request's "height 5,152 px" is where height_px=5152 came from, not "the earlier results"."""
    from agentomnia.trajectories.evidence import Evidence

    evidence = Evidence()
    evidence.add_text("Create a photo with height 5,152 px and width 7,728 px.", "the request")
    evidence.add_observation(
        '{"ok": true, "data": {"album_id": "ALB-015", "rating": 0}}', "the result of `create_album`"
    )
    assert evidence.where(5152) == "the request" and evidence.where(7728.0) == "the request"
    assert evidence.where("ALB-015") == "the result of `create_album`"
    assert evidence.where(9999) is None
