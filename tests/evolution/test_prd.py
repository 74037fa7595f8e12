"""PRDs: generation from a diagnosis, priority, Markdown/YAML round trips and validation messages."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from agentomnia.evolution.diagnosis import DiagnosisReport
from agentomnia.evolution.prd import (
    PRD,
    PRDFormatError,
    generate_prds,
    parse_prd,
    priority_for,
    render_markdown,
)
from tests.evolution.conftest import ScriptedLLM, draft_in


@pytest.fixture(scope="module")
def prds(report: DiagnosisReport) -> list[PRD]:
    return generate_prds(report)


def test_one_prd_per_gap_group_heaviest_first(report: DiagnosisReport, prds: list[PRD]) -> None:
    assert len(prds) == len(report.capability_diagnoses)
    assert [p.prd_id for p in prds[:2]] == ["PRD-r1-01", "PRD-r1-02"]
    top = prds[0]
    assert top.title == "Tool Use: wrong tool chosen under Tool & Parameter Grounding"
    assert top.status == "active" and top.source == "diagnosis" and top.diagnosis_id == report.id
    assert top.target_l1 == ("toc/Lifestyle",) and top.target_l2 == (10005,)
    assert top.capabilities == ("tool_use",) and top.atoms == ("tool_parameter_grounding",)
    assert top.env_variations == ("distractor_injection",) and top.task_variations == ("implicit_references",)
    # 4 failures but 3 benchmark items: t-pet-1 (two trials at 0) and t-pet-2 count 1 each, the 0.9
    # near miss t-pet-3 counts 1 - 0.9 = 0.1
    assert len(top.source_failure_ids) == 4 and top.failure_counts == pytest.approx({"toc/Lifestyle": 2.1})
    # 4 of 7 failures at severity 2: 0.5714 x 2 = 1.1429 -> P0
    assert top.priority_score == pytest.approx(4 / 7 * 2, abs=1e-4) and top.priority == "P0"
    scores = [p.priority_score or 0 for p in prds]
    assert scores == sorted(scores, reverse=True)


def test_case_studies_quote_the_failure_evidence(prds: list[PRD]) -> None:
    top = prds[0]
    assert "\"book_appointment refused pet_id 'Biscuit': not a known pet id\"" in top.case_study
    assert "Task t-pet-1 (Pet Services, toc/Lifestyle" in top.case_study
    assert any("Distractor Injection" in r or "distractor injection" in r for r in top.requirements)
    assert "wrong_tool x4" in (top.failure_analysis or "")


def test_priority_buckets_frequency_times_severity() -> None:
    assert [priority_for(s) for s in (1.2, 0.6, 0.59, 0.3, 0.1, 0.099, 0.0)] == [
        "P0",
        "P0",
        "P1",
        "P1",
        "P2",
        "P3",
        "P3",
    ]


def test_max_prds_keeps_the_most_urgent(report: DiagnosisReport, prds: list[PRD]) -> None:
    two = generate_prds(report, max_prds=2, status="proposed")
    assert [p.title for p in two] == [p.title for p in prds[:2]]
    assert {p.status for p in two} == {"proposed"}
    with pytest.raises(ValueError, match="max_prds"):
        generate_prds(report, max_prds=0)


def test_markdown_round_trip(prds: list[PRD]) -> None:
    for prd in prds:
        text = render_markdown(prd)
        assert text.startswith("---\nprd_id: ")
        for heading in ("## Part I: Mandatory", "### Scenario", "### Requirements", "### Case Study"):
            assert heading in text
        back = parse_prd(text, prd.source)
        assert back == prd and back.id == prd.id


def test_yaml_round_trip(prds: list[PRD]) -> None:
    prd = prds[1]
    text = yaml.safe_dump(prd.model_dump(mode="json", exclude={"id", "schema_version"}), sort_keys=False)
    assert parse_prd(text, "diagnosis", fmt="yaml") == prd


def test_part_two_is_optional_and_absent_sections_stay_absent() -> None:
    text = (
        "---\nprd_id: EXT-1\npriority: p2\nstatus: Active\ntarget_l2: [Pet Services]\ncapabilities: [Tool Use]\n---\n"
        "# Grooming bookings\n\n## Scenario\nOwners book grooming.\n\n## Requirements\n"
        "1. Offer two groomers\n   with the same name.\n2. Check the caregiver id.\n\n## Case Study\nA wrong groomer.\n"
    )
    prd = parse_prd(text, "external:grooming.md")
    assert prd.priority == "P2" and prd.status == "active" and prd.title == "Grooming bookings"
    assert prd.requirements == ("Offer two groomers with the same name.", "Check the caregiver id.")
    assert prd.target_l2 == (10005,) and prd.target_l1 == ("toc/Lifestyle",)  # the L1 is implied
    assert prd.capabilities == ("tool_use",)
    assert prd.failure_analysis is None and "Part II" not in render_markdown(prd).split("### Case Study")[0]
    assert parse_prd(render_markdown(prd), prd.source) == prd


def _problems(text: str, source: str = "external:bad.md") -> dict[str, str]:
    with pytest.raises(PRDFormatError) as caught:
        parse_prd(text, source)
    out: dict[str, str] = {}
    for p in caught.value.problems:
        out[p.field] = out.get(p.field, "") + f"{p.problem} || {p.fix}\n"
    return out


def test_every_problem_is_reported_with_its_fix() -> None:
    problems = _problems(
        "---\nprd_id: EXT-2\npriority: P9\nstatus: active\ntarget_l1: [Finance, toc/Atlantis]\n"
        "capabilities: [tool_usage]\natoms: [ambiguous_goal]\nenv_variations: [flooding]\n---\n"
        "### Requirements\n- one\n### Case Stuff\ntext\n"
    )
    assert "missing mandatory Part I field `scenario`" in problems["scenario"]
    assert "'### Scenario' section" in problems["scenario"]
    assert "missing mandatory Part I field `case_study`" in problems["case_study"]
    assert "P9" in problems["priority"] or "'P0'" in problems["priority"]
    assert "ambiguous across splits" in problems["target_l1"] and "tob/Finance" in problems["target_l1"]
    assert "unknown L1 domain 'toc/Atlantis'" in problems["target_l1"]
    assert "did you mean 'tool_use'?" in problems["capabilities"]
    assert "unknown environment variations 'flooding'" in problems["env_variations"]
    assert "unknown section heading 'Case Stuff'" in problems["Case Stuff"]


def test_malformed_documents_name_what_to_fix() -> None:
    assert "never closed" in _problems("---\nprd_id: X\n")["<front matter>"]
    assert "invalid YAML" in _problems("prd_id: [unclosed\n", "external:bad.yaml")["<yaml>"]
    assert "expected a mapping" in _problems("- just\n- a list\n", "external:bad.yml")["<yaml>"]
    assert "unknown field `owner`" in _problems("owner: me\n", "external:x.yaml")["owner"]


def test_model_polish_keeps_machine_fields_and_falls_back_when_invalid(prds: list[PRD]) -> None:
    prd = prds[0]

    def polished(conversation: list[dict[str, Any]]) -> dict[str, Any]:
        draft = draft_in(conversation, "Draft:\n")
        return draft | {"scenario": "Polished: " + draft["scenario"]}

    def ungrounded(conversation: list[dict[str, Any]]) -> dict[str, Any]:
        return polished(conversation) | {"case_study": "A story about some agent that failed somewhere."}

    from agentomnia.evolution.diagnosis import diagnose
    from tests.evolution.conftest import sample_failures

    report = diagnose(sample_failures(), round_key="r1")
    good = generate_prds(report, max_prds=1, llm=ScriptedLLM({"prd_text": [ungrounded, polished]}))  # type: ignore[arg-type]
    assert good[0].scenario.startswith("Polished: ") and good[0].target_l2 == prd.target_l2
    assert good[0].source_failure_ids == prd.source_failure_ids
    bad = generate_prds(report, max_prds=1, llm=ScriptedLLM({"prd_text": [ungrounded]}), max_attempts=2)  # type: ignore[arg-type]
    assert bad[0].scenario == prd.scenario
    assert "no valid answer after 2 attempt(s)" in (bad[0].extra_information or "")
    assert "must name at least one of the failing tasks" in (bad[0].extra_information or "")
