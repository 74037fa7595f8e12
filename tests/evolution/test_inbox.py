"""External PRDs from the inbox folder: good files load, bad ones become rejections that say what to fix."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentomnia.evolution.inbox import example_prd_path, inbox_dir, read_inbox, read_prd_file
from agentomnia.evolution.prd import PRD, render_markdown
from agentomnia.rejection import Rejection

GOOD_YAML = """\
prd_id: EXT-analyst-totals
priority: P2
status: proposed
scenario: Analysts ask for quarterly totals across many client accounts.
requirements:
  - Ask for totals that need aggregation over at least ten records.
case_study: The agent summed only the first page of accounts.
target_l1: [tob/Finance]
capabilities: [data_analysis]
task_variations: [data_transformations]
"""

BAD_MD = """\
---
prd_id: EXT-bad
priority: P1
status: active
atoms: [mind_reading]
target_l2: [99999]
---

### Scenario

Something fails.

### Requirements

- Fix it.
"""


def test_the_shipped_example_parses() -> None:
    outcome = read_prd_file(example_prd_path())
    assert isinstance(outcome, PRD), getattr(outcome, "message", "")
    assert outcome.prd_id == "EXT-pet-booking-grounding" and outcome.status == "active"
    assert outcome.source == "external:tool-grounding-pet-services.md"
    assert outcome.target_l2 == (10005,) and outcome.target_l1 == ("toc/Lifestyle",)
    assert outcome.env_variations == ("distractor_injection", "unavailable_entities")
    assert len(outcome.requirements) == 4 and outcome.trajectory_comparison is None
    assert outcome.task_guidance is not None and outcome.extra_information is not None


def test_a_bad_file_never_costs_a_good_neighbour_its_place(tmp_path: Path) -> None:
    shutil.copy(example_prd_path(), tmp_path / "a-example.md")
    (tmp_path / "b-totals.yaml").write_text(GOOD_YAML, encoding="utf-8")
    (tmp_path / "c-bad.md").write_text(BAD_MD, encoding="utf-8")
    (tmp_path / "d-broken.yml").write_text("prd_id: [unclosed\n", encoding="utf-8")
    (tmp_path / "e-copy.md").write_text((tmp_path / "a-example.md").read_text(), encoding="utf-8")
    (tmp_path / "f-latin1.md").write_bytes("scenario: caf\xe9\n".encode("latin-1"))
    (tmp_path / "README.txt").write_text("not a PRD", encoding="utf-8")
    prds, rejections = read_inbox(tmp_path)
    assert [p.prd_id for p in prds] == ["EXT-pet-booking-grounding", "EXT-analyst-totals"]
    assert prds[1].source == "external:b-totals.yaml" and prds[1].status == "proposed"
    by_file = {Path(r.subject).name: r for r in rejections}
    assert set(by_file) == {"c-bad.md", "d-broken.yml", "e-copy.md", "f-latin1.md"}
    bad = by_file["c-bad.md"].message
    assert bad.startswith(str(tmp_path / "c-bad.md"))
    assert "missing mandatory Part I field `case_study`" in bad and "'### Case Study' section" in bad
    assert "unknown atoms 'mind_reading'" in bad and "atoms.yaml" in bad
    assert "unknown L2 domain '99999'" in bad
    assert "invalid YAML" in by_file["d-broken.yml"].message
    assert "already used by a-example.md" in by_file["e-copy.md"].message
    assert (
        "not UTF-8" in by_file["f-latin1.md"].message
        and "save the file as UTF-8" in by_file["f-latin1.md"].message
    )
    assert all(isinstance(r, Rejection) and r.subject_kind == "prd" for r in rejections)


def test_a_missing_inbox_holds_nothing(tmp_path: Path) -> None:
    assert read_inbox(tmp_path / "absent") == ([], [])


def test_the_default_inbox_lives_under_the_platform_home(home: Path) -> None:
    assert inbox_dir() == home / "prd_inbox"
    inbox_dir().mkdir()
    prd = read_prd_file(example_prd_path())
    assert isinstance(prd, PRD)
    (inbox_dir() / "mine.md").write_text(render_markdown(prd), encoding="utf-8")
    prds, rejections = read_inbox()
    assert rejections == [] and prds[0].source == "external:mine.md"
    assert prds[0].id == prd.id  # the source is provenance, not content


@pytest.mark.parametrize("suffix", [".md", ".yaml"])
def test_empty_files_are_rejected_with_the_missing_fields(tmp_path: Path, suffix: str) -> None:
    (tmp_path / f"empty{suffix}").write_text("", encoding="utf-8")
    _, (rejection,) = read_inbox(tmp_path)
    fields = {p["field"] for p in rejection.detail["problems"]}
    assert {"prd_id", "priority", "status", "scenario", "requirements", "case_study"} <= fields
