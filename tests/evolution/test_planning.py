"""Planning a PRD round: merged directives, composed query seeds, corpus seeds, and where inference puts them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from agentomnia.evolution.diagnosis import DiagnosisReport
from agentomnia.evolution.planning import apportion, compose_request, directives_for, seeds_for
from agentomnia.evolution.prd import PRD, generate_prds
from agentomnia.seeds.models import Seed
from agentomnia.taxonomy import DomainKnowledge, taxonomy_index
from agentomnia.taxonomy.knowledge import load_file

KNOWLEDGE_DIR = Path(__file__).resolve().parents[2] / "agentomnia" / "taxonomy" / "data" / "knowledge"


@pytest.fixture(scope="module")
def toc_knowledge() -> dict[int, DomainKnowledge]:
    """Knowledge of the first ToC domains (10000-10016) only: enough here, and quicker than all of it."""
    return {kb.id: kb for kb in load_file(KNOWLEDGE_DIR / "toc_01.yaml")}


def _prd(prd_id: str, priority: str, l1: list[str], l2: list[int], **extra: object) -> PRD:
    return PRD.model_validate(
        {
            "prd_id": prd_id,
            "priority": priority,
            "status": "active",
            "scenario": "Agents fail here.",
            "requirements": ["Make it harder."],
            "case_study": "A failing task.",
            "target_l1": l1,
            "target_l2": l2,
            "source": "external:test.md",
        }
        | extra
    )


def test_directives_weigh_l1_domains_by_failures() -> None:
    prds = [
        _prd(
            "A",
            "P0",
            ["toc/Lifestyle", "tob/Finance"],
            [10005],
            failure_counts={"toc/Lifestyle": 6, "tob/Finance": 2},
            capabilities=["tool_use"],
            env_variations=["distractor_injection"],
        ),
        _prd(
            "B",
            "P2",
            ["toe/Data Analysis"],
            [],
            capabilities=["data_analysis"],
            task_variations=["dependency_depth"],
        ),
        _prd("C", "P0", ["toc/Travel"], [], status="proposed"),
    ]
    d = directives_for(prds, "r2", max_domains=5, seeds_per_domain=3)
    assert d.round == "r2" and d.prd_ids == ("A", "B")  # C is only proposed
    # weights are the failures: Lifestyle 6, Finance 2, Data Analysis 1 (no counts given)
    assert d.weights == pytest.approx(
        {"toc/Lifestyle": 6 / 9, "tob/Finance": 2 / 9, "toe/Data Analysis": 1 / 9}, abs=1e-6
    )
    assert d.target_l1 == ("toc/Lifestyle", "tob/Finance", "toe/Data Analysis")
    # Sainte-Lague over 5 slots: quotients 6, 2 (tie goes to Lifestyle), 2, 1.2, 1 -> L, L, F, L, D
    tax = taxonomy_index()
    per_l1 = [tax.by_id(i).l1_key for i in d.target_l2]
    assert per_l1.count("toc/Lifestyle") == 3 and per_l1.count("tob/Finance") == 1
    assert d.target_l2[0] == 10005  # the L2 the PRD names comes before the rest of its L1
    assert d.target_capabilities == ("tool_use", "data_analysis")
    assert d.env_variations == ("distractor_injection",) and d.task_variations == ("dependency_depth",)
    assert d.seeds_per_domain == 3
    narrow = directives_for(prds, "r2", max_domains=1)
    assert narrow.target_l1 == ("toc/Lifestyle",) and narrow.weights == {"toc/Lifestyle": 1.0}
    assert directives_for([], "r2").empty


def test_apportion_gives_each_l1_its_quota_rounded_by_largest_remainder() -> None:
    failures = {"A": 6.0, "B": 3.0, "C": 1.0}
    assert apportion(failures, 10) == {"A": 6, "B": 3, "C": 1}  # exact quotas
    # 4 seeds: quotas 2.4, 1.2, 0.4 -> whole parts 2, 1, 0 (3 seeds); the last seed goes to the
    # largest fraction, a tie of 0.4 between A and C that the larger weight (A) wins -> 3, 1, 0
    assert apportion(failures, 4) == {"A": 3, "B": 1, "C": 0}
    # 7 seeds: quotas 4.2, 2.1, 0.7 -> 4, 2, 0 and the last seed to C's 0.7 -> 4, 2, 1
    assert apportion(failures, 7) == {"A": 4, "B": 2, "C": 1}
    # A capped at 2: the other 8 seeds split 3:1 over B and C -> 6 and 2
    assert apportion(failures, 10, caps={"A": 2}) == {"A": 2, "B": 6, "C": 2}
    # caps that leave no room hand out fewer seeds; no weight, no seeds
    assert apportion({"A": 1.0, "Z": 0.0}, 5, caps={"A": 2}) == {"A": 2, "Z": 0}
    assert apportion(failures, 0) == {"A": 0, "B": 0, "C": 0}


def test_the_round_s_seeds_over_l1_match_the_failures(toc_knowledge: Mapping[int, DomainKnowledge]) -> None:
    prds = [
        _prd(
            "A",
            "P1",
            ["toc/Lifestyle", "toc/Travel"],
            [10005],
            failure_counts={"toc/Lifestyle": 6, "toc/Travel": 3},
        ),
        _prd("B", "P0", ["toe/Data Analysis"], [], failure_counts={"toe/Data Analysis": 1}),
    ]
    tax = taxonomy_index()
    d = directives_for(prds, "r2", max_domains=10, seeds_per_domain=1)
    per_l1 = [tax.by_id(i).l1_key for i in d.target_l2]
    assert [per_l1.count(k) for k in ("toc/Lifestyle", "toc/Travel", "toe/Data Analysis")] == [6, 3, 1]
    assert len(set(d.target_l2)) == 10  # spread over distinct domains, the named one first
    assert d.target_l2[:6] == (10005, 10004, 10006, 10007, 10008, 10009)
    assert d.target_l1 == ("toc/Lifestyle", "toc/Travel", "toe/Data Analysis")
    # 4 domains: 3, 1, 0 as in the apportionment above; the L1 without a seed is not targeted
    small = directives_for(prds, "r2", max_domains=4)
    assert [tax.by_id(i).l1_key for i in small.target_l2].count("toc/Lifestyle") == 3
    assert small.target_l1 == ("toc/Lifestyle", "toc/Travel")
    assert small.weights == pytest.approx({"toc/Lifestyle": 6 / 9, "toc/Travel": 3 / 9}, abs=1e-6)
    # `every_l1`: the budget grows until the lightest L1's quota is one domain (6:3:1 asks for 10, at
    # most two per L1: 6), and an L1 still left without takes one: 4-2-1, where one domain each first
    # and the rest by weight had made 2-1-1 of a budget of 4
    for budget in (2, 4):
        each = directives_for(prds, "r2", max_domains=budget, every_l1=True)
        assert each.target_l1 == ("toc/Lifestyle", "toc/Travel", "toe/Data Analysis")
        assert [[tax.by_id(i).l1_key for i in each.target_l2].count(k) for k in each.target_l1] == [4, 2, 1]
    larger = directives_for(prds, "r2", max_domains=10, every_l1=True, seeds_per_domain=1)
    assert larger.target_l2 == d.target_l2  # a budget that already reaches the lightest L1 is kept
    # Data Analysis has 3 domains: asked for 5 of 8 seeds it takes 3, and the other 2 go elsewhere
    heavy = [
        _prd(
            "C",
            "P0",
            ["toe/Data Analysis", "toc/Travel"],
            [],
            failure_counts={"toe/Data Analysis": 5, "toc/Travel": 3},
        )
    ]
    capped = directives_for(heavy, "r2", max_domains=8)
    assert [tax.by_id(i).l1_key for i in capped.target_l2].count("toc/Travel") == 5
    # the seeds follow the domains: one per domain, here in the toc knowledge loaded for the test
    seeds = seeds_for(d, tax, toc_knowledge, prds=prds)
    assert [s.metadata["l1"] for s in seeds].count("toc/Lifestyle") == 6


def test_generated_prds_give_directives_that_follow_the_failures(report: DiagnosisReport) -> None:
    prds = generate_prds(report)
    d = directives_for(prds, "r1", max_domains=8)
    assert d.target_l1[0] == "toc/Lifestyle"  # 4 of 7 failures, P0
    assert set(d.target_l1) == {"toc/Lifestyle", "tob/Finance", "toc/Travel"}
    assert len(d.target_l2) == 8 and len(set(d.target_l2)) == 8
    assert max(d.weights, key=d.weights.__getitem__) == "toc/Lifestyle"


def test_composed_seeds_are_query_seeds_with_provenance(toc_knowledge: Mapping[int, DomainKnowledge]) -> None:
    prds = [
        _prd(
            "PET",
            "P1",
            ["toc/Lifestyle"],
            [10005, 10004],
            capabilities=["tool_use", "information_gathering"],
            env_variations=["unavailable_entities"],
            task_variations=["implicit_references"],
        ),
        _prd("TRIP", "P3", ["toc/Travel"], [10016], capabilities=["reliability_safety"]),
    ]
    d = directives_for(prds, "r1", max_domains=3, seeds_per_domain=2)
    assert d.target_l2 == (10005, 10004, 10016)
    seeds = seeds_for(d, taxonomy_index(), toc_knowledge, prds=prds)
    assert len(seeds) == 6
    assert all(s.kind == "query" and s.round == "r1" and s.text == s.description for s in seeds)
    by_domain = {s.metadata["taxonomy_id"]: s for s in seeds}
    pet = by_domain[10005]
    assert pet.metadata["prd_ids"] == ["PET"] and pet.metadata["l1"] == "toc/Lifestyle"
    assert pet.metadata["env_variations"] == ["unavailable_entities"]
    assert "I don't have its id" in pet.text  # implicit reference instead of an id
    assert "by its name, not by its id" in pet.text  # the tool-use clause
    trip = by_domain[10016]
    assert trip.metadata["prd_ids"] == ["TRIP"] and "do not force it" in trip.text  # a domain rule to respect
    assert len({s.text for s in seeds}) == 6  # the index varies each domain's requests
    assert seeds_for(d, taxonomy_index(), toc_knowledge, prds=prds) == seeds  # deterministic, ids included


def test_compose_request_uses_the_domain_s_own_words(toc_knowledge: Mapping[int, DomainKnowledge]) -> None:
    domain = taxonomy_index().by_id(10005)
    text = compose_request(
        domain, toc_knowledge[10005], 0, capabilities=["planning_decision", "data_analysis"]
    )
    assert text.startswith("Please book a grooming appointment")
    assert "First " in text and "then " in text  # the read before the write
    assert "total" in text


def test_corpus_seeds_in_targeted_domains_join_the_round(
    toc_knowledge: Mapping[int, DomainKnowledge],
) -> None:
    def seed(name: str, taxonomy_id: int | None) -> Seed:
        meta = {"taxonomy_id": taxonomy_id} if taxonomy_id is not None else {}
        return Seed(kind="query", source=f"corpus#{name}", name=name, title=name, text=name, metadata=meta)

    corpus = [
        seed("pet-a", 10005),
        seed("pet-b", 10005),
        seed("pet-c", 10005),
        seed("msg", 10000),
        seed("x", None),
    ]
    d = directives_for(
        [_prd("PET", "P1", ["toc/Lifestyle"], [10005])], "r1", max_domains=1, seeds_per_domain=2
    )
    seeds = seeds_for(d, taxonomy_index(), toc_knowledge, corpus_seeds=corpus)
    from_corpus = [s for s in seeds if s.metadata["origin"] == "corpus"]
    assert [s.name for s in from_corpus] == [
        "pet-a",
        "pet-b",
    ]  # capped per domain; Social and unplaced skipped
    assert from_corpus[0].metadata["corpus_seed_id"] == corpus[0].id and from_corpus[0].round == "r1"
    assert from_corpus[0].metadata["prd_ids"] == ["PET"]


@pytest.mark.slow
def test_inference_places_prd_seeds_in_the_targeted_domains(report: DiagnosisReport) -> None:
    from agentomnia.embeddings import HashingEmbedder
    from agentomnia.seeds.inference import DomainMatcher, infer_candidates
    from agentomnia.taxonomy import load_knowledge, load_taxonomy

    prds = generate_prds(report)
    d = directives_for(prds, "r1", max_domains=8)
    taxonomy = load_taxonomy()
    seeds = seeds_for(d, taxonomy, load_knowledge(), prds=prds)
    candidates, failed = infer_candidates(seeds, DomainMatcher(taxonomy, HashingEmbedder()))
    assert failed == [] and len(candidates) == len(seeds) == 16
    share = sum(c.coordinate.l1_key in d.target_l1 for c in candidates) / len(candidates)
    assert share >= 0.6, f"only {share:.0%} of PRD seeds land in the targeted L1 domains"


def test_solver_tasks_fill_what_domains_left_short_and_never_pull_the_round_to_their_l1() -> None:
    """A default r1 had asked 66 tasks of each of Logistics' two solver families (failure share 0.11, one
    domain of 29) and made 18 of the round's 144 tasks there. A family now fills its L1's shortfall in
    whole domains, at 4 tasks a domain, split over the L1's families; one task where there is none."""
    from agentomnia.directives import SynthesisDirectives
    from agentomnia.taxonomy import load_taxonomy
    from agentomnia_assets.tasks import FAMILIES, family_quotas

    tax = load_taxonomy()
    home = {name: tax.by_id(f.taxonomy_id) for name, f in FAMILIES.items()}
    logistics = home["route_planning"].l1_key
    others = [d for d in tax.domains if d.l1_key not in {h.l1_key for h in home.values()}][:28]
    target_l2 = (home["route_planning"].id, *(d.id for d in others))
    weights = {logistics: 4 / 32, **{d.l1_key: 1 / 32 for d in others}}
    directives = SynthesisDirectives(
        round="r1",
        prd_ids=("p",),
        target_l1=tuple(weights),
        target_l2=target_l2,
        weights=weights,
        seeds_per_domain=1,
    )
    quotas = family_quotas(directives, 25)
    # Logistics is short 29 * 4/32 - 1 = 2.6 domains of one seed, 10.5 tasks, over its two families
    assert quotas == {"route_planning": 5, "assignment": 5}
    at_share = {**weights, logistics: 1 / 29}
    assert family_quotas(directives.model_copy(update={"weights": at_share}), 25) == {
        "route_planning": 1, "assignment": 1,
    }  # fmt: skip
    assert family_quotas(None, 25) == dict.fromkeys(FAMILIES, 25)


def test_a_prd_round_s_planned_environments_all_make_tasks(tmp_path: Path) -> None:
    """The task stages' cap on environments samples a base round; a PRD round's environments were
    planned one per domain for its failures (a default r1 capped at 30 of 33 had left two failing L1s
    without a task)."""
    from agentomnia.catalog import ENVIRONMENTS, PRDS
    from agentomnia.directives import SynthesisDirectives
    from agentomnia.storage import Storage, write_parquet
    from agentomnia_assets.tasks import environment_dirs

    store = Storage(tmp_path)
    for key in ("r0", "r1"):
        rows = [{"env_id": f"{i:02d}", "path": str(tmp_path / key / f"{i:02d}")} for i in range(5)]
        write_parquet(store.round(key).path(ENVIRONMENTS), rows)
    plan = SynthesisDirectives(round="r1", prd_ids=("p",), target_l1=("tob/Logistics",))
    store.round("r1").path(PRDS, "directives").write_text(plan.model_dump_json())
    assert [p.name for p in environment_dirs(store, "r0", 3)] == ["00", "01", "02"]
    assert len(environment_dirs(store, "r1", 3)) == 5
    assert len(environment_dirs(store, "r0", 0)) == 5
