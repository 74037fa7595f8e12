"""The held-out split: routes, the challenging rule, stratification, coverage, near-duplicate clusters held
out whole, determinism."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from agentomnia.embeddings import HashingEmbedder
from agentomnia.omniabench.split import (
    _allocate,
    exclude_near,
    hold_out,
    is_challenging,
    near_duplicate_clusters,
    route_of,
    shingles,
)
from agentomnia.tasks.models import Task
from tests.fixtures.benchmark import make_task

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
    assert not split.dropped and split.strata["clusters"]["pool_multi_member"] == 0  # no near pairs here
    # every item is marked with its route and the fixed challenging rule
    for item in split.items:
        assert item.route == route_of(by_id[item.task_id])
        assert item.challenging == is_challenging(by_id[item.task_id])
    assert split.strata["challenging"].get("challenging", 0) == sum(i.challenging for i in split.items)


def _crossing_pairs(
    held: list[Task], training: list[Task], ngram: float, cosine: float
) -> list[tuple[str, str]]:
    """Every (benchmark, training) pair at or over a threshold, by brute force over all pairs."""
    vectors = EMBEDDER.embed([t.query for t in [*held, *training]])
    out = []
    for i, h in enumerate(held):
        for j, t in enumerate(training):
            a, b = shingles(h.query), shingles(t.query)
            jaccard = len(a & b) / len(a | b)
            if jaccard >= ngram or float(vectors[i] @ vectors[len(held) + j]) >= cosine:
                out.append((h.id, t.id))
    return out


TEMPLATE = (
    "Assign the {a} open deliveries to the drivers who quoted for them so that every delivery has exactly "
    "one driver, no driver takes more than {b} jobs, the quotes already accepted stay accepted, and the "
    "total price paid is as low as possible."
)
NUMBERS = ((6, 2), (7, 3), (5, 2), (8, 3), (9, 4), (6, 3))


def _one_family_solver_pool(seed: int = 7) -> list[Task]:
    """The random pool with its solver tasks replaced by one template family (text differing only in
    numbers), the way a solver generator poses its instances."""
    pool = [t for t in _pool(seed=seed) if route_of(t) != "solver"]
    family = [
        make_task(TEMPLATE.format(a=a, b=b), kind="solver_anchored", taxonomy_id=DOMAINS[k % 4])
        for k, (a, b) in enumerate(NUMBERS)
    ]
    return pool + family


def test_a_route_made_of_one_template_family_is_still_held_out() -> None:
    pool = _one_family_solver_pool()
    family = {t.id for t in pool if route_of(t) == "solver"}
    clusters = near_duplicate_clusters([t.query for t in pool], EMBEDDER)
    assert sorted(len(c) for c in clusters if len(c) > 1) == [len(NUMBERS)]  # the family is one cluster
    split, training = hold_out(pool, EMBEDDER, seed=0)
    solver_items = [i.task_id for i in split.items if i.route == "solver"]
    assert len(solver_items) == 2  # the cluster is held out, capped at max_per_cluster
    assert split.strata["route"]["solver"] == 2
    # the rest of the family is in neither set: dropped with the reason and a benchmark item as nearest
    rest = family - set(solver_items)
    assert rest.isdisjoint(t.id for t in training)
    drops = {d.task_id: d for d in split.dropped}
    assert set(drops) == rest
    for tid in rest:
        assert drops[tid].reason.startswith("cluster_held_out: ngram_jaccard")
        assert drops[tid].nearest in solver_items and (drops[tid].similarity or 0) >= 0.6
    assert len(split.items) + len(training) + len(split.dropped) == len(pool)
    assert split.strata["clusters"]["held_multi_member"] == 1 and split.strata["clusters"]["largest"] == 6
    assert split.thresholds["max_per_cluster"] == 2


def test_no_near_pair_crosses_the_split() -> None:
    # Template families on three routes, a chained paraphrase trio and random tasks, over several seeds.
    pool = _one_family_solver_pool(seed=13)
    for k, (a, b) in enumerate(NUMBERS[:4]):
        pool.append(make_task(TEMPLATE.replace("deliveries", "parcels").format(a=a, b=b), kind="program",
                              taxonomy_id=DOMAINS[k % 4]))  # fmt: skip
    base = "Please approve the damage claim that was filed for the broken lamp on the Oslo shipment today."
    pool += [make_task(base.replace("Oslo", city)) for city in ("Oslo", "Bergen", "Tromso")]
    for seed in range(4):
        split, training = hold_out(pool, EMBEDDER, seed=seed, max_per_cluster=1)
        held = [t for t in pool if t.id in set(split.task_ids)]
        assert _crossing_pairs(held, training, 0.6, 0.92) == []
        dropped = {d.task_id for d in split.dropped}
        assert all(d.reason.startswith("cluster_held_out") for d in split.dropped)
        # every task is in exactly one of: benchmark, training, dropped
        sides = [set(split.task_ids), {t.id for t in training}, dropped]
        assert sum(len(x) for x in sides) == len(pool) == len(set().union(*sides))


def test_members_past_the_cap_are_dropped_from_training_too() -> None:
    rng = random.Random(99)  # not the pool's seed: its queries would repeat the pool's
    pool = _pool(seed=11)
    base = "Please approve the damage claim that was filed for the broken lamp on the Oslo shipment today."
    # reliability_safety is on this task alone, so coverage holds its cluster out
    rare = make_task(base, taxonomy_id=30000, capabilities=("planning_decision", "reliability_safety"))
    twin = make_task(base.replace("today", "this morning"), taxonomy_id=30000)
    third = make_task(base.replace("Oslo", "Bergen"), taxonomy_id=30000)
    pool += [
        rare,
        twin,
        third,
        make_task(_query(rng), taxonomy_id=30000, capabilities=("planning_decision",)),
    ]
    split, training = hold_out(pool, EMBEDDER, seed=0)
    held = set(split.task_ids)
    assert rare.id in held  # the member that covers something is the one kept
    assert len(held & {twin.id, third.id}) == 1  # cap 2: one more member, the other dropped
    (lost,) = {twin.id, third.id} - held
    assert lost not in {t.id for t in training}
    drop = next(d for d in split.dropped if d.task_id == lost)
    assert drop.reason.startswith("cluster_held_out: ngram_jaccard") and "cluster of 3" in drop.reason
    assert drop.nearest in held and drop.similarity is not None and drop.similarity >= 0.6
    assert split.strata["capability"]["reliability_safety"] == 1 and "uncovered" not in split.strata


def test_a_cluster_left_in_training_stays_whole() -> None:
    pool = _pool(seed=11)
    base = "Please approve the damage claim that was filed for the broken lamp on the Oslo shipment today."
    pair = [
        make_task(base, taxonomy_id=30000),
        make_task(base.replace("today", "this morning"), taxonomy_id=30000),
    ]
    ids = {p.id for p in pair}
    held_in: set[bool] = set()
    for seed in range(6):
        split, training = hold_out([*pool, *pair], EMBEDDER, seed=seed)
        held_in.add(ids <= set(split.task_ids))
        if ids.isdisjoint(split.task_ids):  # not chosen: both stay trainable, nothing recorded for them
            assert ids <= {t.id for t in training} and not split.dropped
        else:  # chosen: a cluster of two fits under the cap, so both are items
            assert ids <= set(split.task_ids) and ids.isdisjoint(t.id for t in training)
    assert held_in == {True, False}  # the seeds exercised both sides


def test_chained_near_duplicates_form_one_cluster() -> None:
    rng = random.Random(5)
    words = [f"w{rng.randrange(5000)}" for _ in range(20)]
    a = words
    b = words[:16] + ["x1", "x2", "x3", "x4"]  # a and b share 14 of 22 trigrams
    c = ["y1", "y2", "y3", "y4"] + b[4:]  # b and c too; a and c share only 10 of 26
    texts = [" ".join(w) for w in (a, b, c)]
    assert len(shingles(texts[0]) & shingles(texts[2])) / len(shingles(texts[0]) | shingles(texts[2])) < 0.6
    assert near_duplicate_clusters([*texts, "an unrelated request"], EMBEDDER) == [[0, 1, 2], [3]]


def test_embedding_similarity_alone_also_links_a_cluster() -> None:
    pool = _pool(seed=5)
    text = "Refund the late parcel order for the customer in Lyon and send the receipt by email."
    a = make_task(text, taxonomy_id=10005, capabilities=("office_document",))
    b = make_task(text.replace("Lyon", "Nantes"), taxonomy_id=10005)
    pool = [t for t in pool if "office_document" not in t.coordinate.capabilities] + [a, b]
    split, training = hold_out(
        pool, EMBEDDER, ngram_threshold=0.99, embedding_threshold=0.8, seed=0, max_per_cluster=1
    )
    assert a.id in split.task_ids and b.id not in {t.id for t in training}
    drop = next(d for d in split.dropped if d.task_id == b.id)
    assert drop.reason.startswith("cluster_held_out: embedding_cosine") and drop.nearest == a.id
    assert split.thresholds["embedding_cosine"] == 0.8 and split.thresholds["max_per_cluster"] == 1


def test_route_shares_come_before_stratum_remainders() -> None:
    # dag_s strata of three tasks and program strata of one: a single largest-remainder pass over the
    # strata would give dag_s 8 of 12 slots; the routes are half and half, so 6 each.
    sizes = {("tob", f"tob/D{k}", "dag_s"): 3 for k in range(8)}
    sizes |= {("toc", f"toc/P{k}", "program"): 1 for k in range(24)}
    quota = _allocate(sizes, 12)
    by_route = Counter[str]()
    for key, q in quota.items():
        by_route[key[2]] += q
    assert by_route == {"dag_s": 6, "program": 6}
    assert all(quota[k] <= n for k, n in sizes.items()) and sum(quota.values()) == 12


def test_max_per_cluster_must_keep_an_item() -> None:
    with pytest.raises(ValueError, match="max_per_cluster"):
        hold_out(_pool(), EMBEDDER, max_per_cluster=0)


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
