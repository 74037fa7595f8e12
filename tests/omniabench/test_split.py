"""The held-out split: routes, the challenging rule, stratification, coverage, dedup, determinism."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from agentomnia.embeddings import HashingEmbedder
from agentomnia.omniabench.split import exclude_near, hold_out, is_challenging, route_of
from agentomnia.tasks.models import Task
from tests.omniabench.builders import make_task

EMBEDDER = HashingEmbedder(dim=512)
DOMAINS = (20096, 10005, 30000, 20000)  # three splits, four L1 domains


def _query(rng: random.Random) -> str:
    # Random words from a large vocabulary: unrelated queries share almost no word 3-grams.
    return " ".join(f"w{rng.randrange(5000)}" for _ in range(14)) + "."


def _pool(n_per_stratum: int = 3, seed: int = 7) -> list[Task]:
    """Tasks over 4 domains x 4 routes, with one capability and one atom carried by a single task."""
    rng = random.Random(seed)
    shapes = (("dag_standard", False), ("dag_standard", True), ("program", False), ("solver_anchored", False))
    tasks = []
    for domain in DOMAINS:
        for kind, multi in shapes:
            for _ in range(n_per_stratum):
                tasks.append(make_task(_query(rng), kind=kind, taxonomy_id=domain, multi=multi,  # type: ignore[arg-type]
                                       capabilities=("tool_use", "information_gathering")))  # fmt: skip
    tasks.append(make_task(_query(rng), taxonomy_id=20000, capabilities=("office_document",)))
    tasks.append(make_task(_query(rng), taxonomy_id=10005, atoms=("long_context_evidence",)))
    return tasks


@pytest.mark.parametrize(
    ("kind", "multi", "route"),
    [
        ("dag_standard", True, "dag"),
        ("dag_challenge", True, "dag"),
        ("dag_standard", False, "dag_s"),
        ("program", False, "program"),
        ("solver_anchored", False, "solver"),
        ("solver_guided", True, "solver"),
    ],
)
def test_route_of(kind: str, multi: bool, route: str) -> None:
    assert route_of(make_task("Approve the claim.", kind=kind, multi=multi)) == route  # type: ignore[arg-type]


def test_challenging_rule() -> None:
    assert not is_challenging(make_task("Approve the claim."))
    assert is_challenging(make_task("Approve the claim.", kind="dag_challenge"))
    assert is_challenging(make_task("Approve the claim.", kind="solver_guided"))
    assert is_challenging(make_task("Approve the claim.", multi=True))
    three = ("ambiguous_goal", "tool_parameter_grounding", "dynamic_planning")
    assert is_challenging(make_task("Approve the claim.", atoms=three))
    assert not is_challenging(make_task("Approve the claim.", atoms=three[:2]))


def test_hold_out_is_stratified_and_covers_every_capability_and_atom() -> None:
    pool = _pool()
    split, training = hold_out(pool, EMBEDDER, fraction=0.25, seed=3)
    held = {i.task_id for i in split.items}
    assert len(held) == round(0.25 * len(pool))
    assert held.isdisjoint(t.id for t in training) and len(held) + len(training) == len(pool)
    by_id = {t.id: t for t in pool}
    strata = Counter((by_id[i].coordinate.l1_key, route_of(by_id[i])) for i in held)
    # 16 strata of 3 (plus 2 singletons) and 12 slots: no stratum gets more than its share plus one
    assert max(strata.values()) <= 2
    assert {route_of(by_id[i]) for i in held} == {"dag", "dag_s", "program", "solver"}
    assert {by_id[i].coordinate.split for i in held} == {"toc", "tob", "toe"}
    pool_caps = {c for t in pool for c in t.coordinate.capabilities}
    pool_atoms = {a for t in pool for a in t.coordinate.atoms}
    assert set(split.strata["capability"]) == pool_caps  # office_document is on one task only
    assert set(split.strata["atom"]) == pool_atoms
    assert "uncovered" not in split.strata
    assert sum(split.strata["route"].values()) == len(held)
    assert split.thresholds["ngram_jaccard"] == 0.6 and split.thresholds["embedding_cosine"] == 0.92
    # every item is marked with its route and the fixed challenging rule
    for item in split.items:
        assert item.route == route_of(by_id[item.task_id])
        assert item.challenging == is_challenging(by_id[item.task_id])
    assert split.strata["challenging"].get("challenging", 0) == sum(i.challenging for i in split.items)


def test_a_paraphrase_of_a_training_task_goes_back_to_training() -> None:
    rng = random.Random(99)  # not the pool's seed: its queries would repeat the pool's
    pool = _pool(seed=11)
    base = "Please approve the damage claim that was filed for the broken lamp on the Oslo shipment today."
    # reliability_safety is on this task alone, so coverage examines it before the other planner
    rare = make_task(base, taxonomy_id=30000, capabilities=("planning_decision", "reliability_safety"))
    twin = make_task(base.replace("today", "this morning"), taxonomy_id=30000)
    pool += [rare, twin, make_task(_query(rng), taxonomy_id=30000, capabilities=("planning_decision",))]
    split, training = hold_out(pool, EMBEDDER, seed=0)
    held = set(split.task_ids)
    assert rare.id not in held and twin.id not in held
    assert {rare.id, twin.id} <= {t.id for t in training}
    drop = next(d for d in split.dropped if d.task_id == rare.id)
    assert drop.nearest == twin.id and drop.similarity is not None and drop.similarity >= 0.6
    assert drop.reason.startswith("near_training: ngram_jaccard")
    # coverage found another task with planning_decision; nothing else carries reliability_safety
    assert "planning_decision" in split.strata["capability"]
    assert split.strata["uncovered"] == {"capability:reliability_safety": 1}


def test_embedding_similarity_alone_also_drops() -> None:
    pool = _pool(seed=5)
    text = "Refund the late parcel order for the customer in Lyon and send the receipt by email."
    a = make_task(text, taxonomy_id=10005, capabilities=("office_document",))
    b = make_task(text.replace("Lyon", "Nantes"), taxonomy_id=10005)
    pool = [t for t in pool if "office_document" not in t.coordinate.capabilities] + [a, b]
    split, _ = hold_out(pool, EMBEDDER, ngram_threshold=0.99, embedding_threshold=0.8, seed=0)
    drop = next(d for d in split.dropped if d.task_id == a.id)
    assert drop.reason.startswith("near_training: embedding_cosine") and drop.nearest == b.id
    assert split.thresholds["embedding_cosine"] == 0.8


def test_split_is_deterministic_for_a_seed_and_input_order() -> None:
    pool = _pool()
    first, train_a = hold_out(pool, EMBEDDER, seed=4)
    shuffled = list(pool)
    random.Random(1).shuffle(shuffled)
    again, train_b = hold_out(shuffled, EMBEDDER, seed=4)
    assert first.id == again.id and first.items == again.items
    assert [t.id for t in train_a] == [t.id for t in train_b]
    others = {hold_out(pool, EMBEDDER, seed=s)[0].id for s in range(5, 9)}
    assert len(others | {first.id}) > 1  # the seed does choose


def test_max_items_caps_the_benchmark_and_reports_what_stays_uncovered() -> None:
    pool = _pool()
    split, training = hold_out(pool, EMBEDDER, max_items=2, seed=0)
    assert len(split.items) == 2 and len(training) == len(pool) - 2
    assert split.strata.get("uncovered")  # two items cannot carry every capability and atom


def test_exclude_near_drops_benchmark_items_and_their_paraphrases() -> None:
    bench = [make_task("Approve the damage claim filed for the broken lamp on the Oslo shipment.")]
    later = [
        bench[0],
        make_task("Approve the damage claim filed for the broken lamp on the Oslo shipment please."),
        make_task("List every carrier that handled more than three shipments last week."),
    ]
    kept, dropped = exclude_near(later, bench, EMBEDDER, {"ngram_jaccard": 0.6, "embedding_cosine": 0.92})
    assert [t.id for t in kept] == [later[2].id]
    reasons = {d.task_id: d.reason for d in dropped}
    assert reasons[bench[0].id].startswith("benchmark_task")
    assert reasons[later[1].id].startswith("near_benchmark") and all(
        d.nearest == bench[0].id for d in dropped
    )
