"""The domain tree: exact counts, OmniaBench ids and names, identities and lookups."""

from __future__ import annotations

import csv
from importlib import resources
from pathlib import Path

import pytest

from agentomnia.taxonomy import SPLITS, Taxonomy, TaxonomyError, alignment_problems, taxonomy_index
from agentomnia.taxonomy.domains import EXPECTED_COUNTS, read_taxonomy_csv, structure_problems

CSV_PATH = Path(str(resources.files("agentomnia.taxonomy") / "data" / "taxonomy.csv"))


def csv_rows() -> list[dict[str, str]]:
    with CSV_PATH.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_exact_counts() -> None:
    tax = taxonomy_index()
    assert len(tax.l1s()) == 90
    assert len(tax.domains) == 354
    got = {s: (len(tax.l1s(s)), len(tax.l2s(split=s))) for s in SPLITS}
    assert got == {"toc": (22, 101), "tob": (38, 186), "toe": (30, 67)}
    assert got == EXPECTED_COUNTS


def test_ids_and_names_match_the_csv() -> None:
    rows = csv_rows()
    tax = taxonomy_index()
    assert [d.id for d in tax.domains] == [int(r["id"]) for r in rows]
    assert len({d.id for d in tax.domains}) == 354
    for d, r in zip(tax.domains, rows, strict=True):
        assert (d.split, d.l1, d.l1_zh, d.l2, d.l2_zh) == (
            r["split"],
            r["domain_l1_en"],
            r["domain_l1_zh"],
            r["domain_l2_en"],
            r["domain_l2_zh"],
        )
        assert d.path == f"{r['domain_l1_en']} > {r['domain_l2_en']}"


def test_id_blocks_per_split() -> None:
    for d in taxonomy_index().domains:
        base = {"toc": 10000, "tob": 20000, "toe": 30000}[d.split]
        assert base <= d.id < base + 1000
    assert structure_problems(taxonomy_index().domains) == []


def test_l1_identity_includes_the_split() -> None:
    tax = taxonomy_index()
    assert ("toc", "Finance") in tax.l1s() and ("tob", "Finance") in tax.l1s()
    assert {d.split for d in tax.l2s(l1="Finance")} == {"toc", "tob"}
    assert [d.l2 for d in tax.l2s(split="toc", l1="finance")][:2] == ["Insurance Services", "Debt Management"]
    assert tax.l2s(split="tob", l1="Finance")[0].l1_key == "tob/Finance"
    assert tax.l2s(split="toc", l1="Finance")[0].l1_key == "toc/Finance"


def test_repeated_l2_names_are_distinct_domains() -> None:
    managers = [d for d in taxonomy_index().l2s(split="tob") if d.l2 == "Project Manager"]
    assert len(managers) >= 3
    assert len({d.id for d in managers}) == len(managers)
    assert len({d.l1 for d in managers}) == len(managers)


def test_lookups_fail_with_guidance() -> None:
    tax = taxonomy_index()
    assert tax.by_id(10000).l2 == "Instant Messaging"
    assert tax.by_id("10000").id == 10000  # type: ignore[arg-type]
    with pytest.raises(KeyError, match="unknown taxonomy id 99999"):
        tax.by_id(99999)
    with pytest.raises(ValueError, match="unknown split 'b2b'"):
        tax.l2s(split="b2b")


def test_structure_problems_catch_wrong_counts_and_ids() -> None:
    domains = list(taxonomy_index().domains)
    broken = domains[2:] + [domains[5].model_copy(update={"id": 20001})]
    problems = structure_problems(broken)
    assert any("split toc: 22 L1 / 100 L2" in p for p in problems)
    assert any("split toc: ids [20001] are outside the 10000.. block" in p for p in problems)
    assert any("appears twice" in p for p in problems)
    assert any("ids repeat: [20001]" in p for p in problems)
    assert any("expected" in p for p in Taxonomy(domains[:-1]).validate())


def test_alignment_with_an_omniabench_copy(tmp_path: Path) -> None:
    rows = csv_rows()
    rows[3]["domain_l2_en"] = "Social Media"
    del rows[-1]
    copy = tmp_path / "taxonomy.csv"
    with copy.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=[*rows[0], "paths"])
        writer.writeheader()
        for r in rows:
            writer.writerow({**r, "paths": f"{r['split']}/{r['domain_l1_en']}/{r['domain_l2_en']}"})
    problems = alignment_problems(copy)
    assert problems == [
        f"id {csv_rows()[-1]['id']} is only in ours",
        "id 10003: l2 is 'Social Networking' here but 'Social Media' there",
    ]


def test_csv_without_required_columns_is_rejected(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("id,split\n1,toc\n", encoding="utf-8")
    with pytest.raises(TaxonomyError, match="missing columns"):
        read_taxonomy_csv(bad)
