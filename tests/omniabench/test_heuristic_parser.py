"""The heuristic reads answer fields asked for in plain sentences, not only `"key": text` lists."""

from __future__ import annotations

from agentomnia.omniabench.heuristic.parser import parse_request


def _fields(request: str) -> dict[str, str]:
    return {f.name: f.text for f in parse_request(request).fields}


def test_a_field_asked_in_a_sentence_is_read_with_its_description() -> None:
    fields = _fields(
        'I run the desk. Tell me how many claims with status open there are as "open_claims". '
        'Let me know the amount of claim CLA-004 ("amount"). '
        'Could you find out how many claims that shipment\'s carrier has? Call it "carrier_claims". '
        'Put how many claims are linked to shipment SH2-003 in "linked". '
        'Answer in JSON with "open_claims", "amount", "carrier_claims" and "linked".'
    )
    assert fields == {
        "open_claims": "the number of claims with status open",
        "amount": "the amount of claim CLA-004",
        "carrier_claims": "the number of claims of the carrier of that shipment",
        "linked": "the number of claims linked to shipment SH2-003",
    }


def test_the_old_key_list_still_reads_and_single_quoted_values_are_not_fields() -> None:
    assert _fields(
        'Report back as a JSON object with "count": the number of claims of shipment SH2-003.'
    ) == {"count": "the number of claims of shipment SH2-003"}
    # 'open' is a value in single quotes, and a sentence naming two fields describes neither
    assert _fields('Set the status to \'open\'. Reply with "a" and "b" as JSON.') == {}


def test_a_check_on_another_field_stays_a_question_the_heuristic_cannot_compute() -> None:
    fields = _fields(
        'Let me know whether "amount" is at least 4 (true or false) ("big"). Answer in JSON with "big".'
    )
    assert "big" not in fields


def test_that_kind_reads_as_the_record_of_that_kind_named_last_by_its_id() -> None:
    plan = parse_request(
        "Move alert delivery AL4-013 to failed. Mark that alert delivery as acknowledged. "
        'Tell me how many areas that alert delivery\'s alert has as "areas". Mark that invoice as paid.'
    )
    assert [s.subject[0].kind for s in plan.steps] == ["id", "id", "opaque"]  # no invoice was named
    assert plan.steps[1].subject[0].value == "AL4-013"
    assert {f.name: f.text for f in plan.fields} == {
        "areas": "the number of areas of the alert of the alert delivery AL4-013"
    }
