"""Holding the benchmark out: which tasks are evaluated on, and which may ever be trained on.

A benchmark is only worth its numbers if no training task is a rewording of one of its items. Synthesis
makes whole families of such rewordings (a solver family poses the same text with other numbers), so the
split is made over near-duplicate clusters, not single tasks: the connected components of the graph
whose edges are pairs of public queries at or over a word 3-gram Jaccard or an embedding cosine
threshold. A cluster goes entirely to one side. A held-out cluster keeps at most `max_per_cluster`
members as benchmark items and the rest are dropped from both sides (recorded as "cluster_held_out"),
so a template family can be evaluated without the benchmark filling up with copies of one text, and no
near-duplicate pair ever crosses the split.

Clusters are picked stratified over split x L1 domain x route, after a greedy first pass that makes
every capability, atom, route and split of the pool appear at least once; so a route made only of
template families is still posed. The thresholds and the per-cluster cap travel with the split, and
later rounds exclude near-duplicates of the benchmark items with the same rule (`exclude_near`).

The route and the challenging subset are the task family's (`agentomnia.tasks.families`: `route_of`,
`is_challenging`, re-exported here); the challenging rule is fixed and documented over the task
itself, so it never depends on how any policy happened to score.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from agentomnia.embeddings import Embedder
from agentomnia.omniabench.models import BenchmarkItem, BenchmarkSplit, DroppedCandidate
from agentomnia.tasks.families import is_challenging, route_of
from agentomnia.tasks.models import Task

NGRAM_N = 3
NGRAM_KEY = "ngram_jaccard"
EMBEDDING_KEY = "embedding_cosine"
CLUSTER_CAP_KEY = "max_per_cluster"
MAX_PER_CLUSTER = 2
_WORD = re.compile(r"\w+")

# Why a task was dropped (DroppedCandidate.reason starts with one of these).
CLUSTER_HELD_OUT = "cluster_held_out"  # (hold_out) its cluster is held out, past the cap: in neither set
NEAR_BENCHMARK = "near_benchmark"  # (exclude_near) too close to a benchmark item: excluded from training
SAME_ID = "benchmark_task"  # (exclude_near) the task is itself a benchmark item

Stratum = tuple[str, str, str]  # (split, L1 domain, route)


def benchmark_item(task: Task) -> BenchmarkItem:
    return BenchmarkItem(task_id=task.id, route=route_of(task), challenging=is_challenging(task))


def _stratum(task: Task) -> Stratum:
    return task.coordinate.split, task.coordinate.l1_key, route_of(task)


def _features(task: Task) -> set[str]:
    """What the coverage pass wants seen at least once: capabilities, atoms, the route and the split."""
    return (
        {f"capability:{c}" for c in task.coordinate.capabilities}
        | {f"atom:{a}" for a in task.coordinate.atoms}
        | {f"route:{route_of(task)}", f"split:{task.coordinate.split}"}
    )


def shingles(text: str, n: int = NGRAM_N) -> frozenset[tuple[str, ...]]:
    """Word n-grams of a text (case-folded); a text shorter than n words is one shingle of itself."""
    words = [w.casefold() for w in _WORD.findall(text)]
    if len(words) < n:
        return frozenset({tuple(words)}) if words else frozenset()
    return frozenset(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


Near = tuple[int, str, float]  # (index of the other task, measure, similarity)
_BLOCK = 512  # rows per similarity block: bounded memory, one matrix product per block


def _near_pairs(
    rows: Sequence[str],
    cols: Sequence[str] | None,
    embedder: Embedder,
    ngram_threshold: float,
    embedding_threshold: float,
) -> list[list[Near]]:
    """For each row text, the column texts at or over a threshold, n-gram hits first, then the
    closest by meaning. `cols=None` compares the rows with each other (a text is not its own
    neighbour). Shingles meet through an inverted index and cosines come in blocks, so the cost is
    one pass, not one scan per question."""
    same = cols is None
    row_grams = [shingles(t) for t in rows]
    col_grams = row_grams if cols is None else [shingles(t) for t in cols]
    out: list[list[Near]] = [[] for _ in rows]
    if not rows or not col_grams:
        return out
    index: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for j, grams in enumerate(col_grams):
        for g in grams:
            index[g].append(j)
    for i, grams in enumerate(row_grams):
        shared: Counter[int] = Counter()
        for g in grams:
            shared.update(index.get(g, ()))
        for j, common in shared.items():
            score = common / (len(grams) + len(col_grams[j]) - common)
            if score >= ngram_threshold and not (same and i == j):
                out[i].append((j, NGRAM_KEY, score))
    texts = list(rows) if cols is None else [*rows, *cols]
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    row_vecs = vectors[: len(rows)]
    col_vecs = row_vecs if same else vectors[len(rows) :]
    for start in range(0, len(rows), _BLOCK):
        block = row_vecs[start : start + _BLOCK] @ col_vecs.T
        for r, j in np.argwhere(block >= embedding_threshold):
            i = start + int(r)
            if not (same and i == int(j)):
                out[i].append((int(j), EMBEDDING_KEY, float(block[r, j])))
    for near in out:
        near.sort(key=lambda n: (n[1] != NGRAM_KEY, -n[2], n[0]))
    return out


def _apportion(sizes: Mapping[Stratum, int], total: int, given: Mapping[Stratum, int]) -> dict[Stratum, int]:
    """Largest remainder: the floor of each stratum's exact share of `total`, then one more slot at a
    time to the stratum furthest below its share. Ties go to the split, then the L1 domain, then the
    route with the fewest slots so far (counting those `given` to other strata), so small shares are
    spread over the splits and domains rather than handed out in alphabetical order."""
    pool = sum(sizes.values())
    if pool == 0 or total <= 0:
        return dict.fromkeys(sizes, 0)
    exact = {k: total * n / pool for k, n in sizes.items()}
    quota = {k: min(sizes[k], math.floor(v)) for k, v in exact.items()}
    for _ in range(min(total, pool) - sum(quota.values())):
        per_axis: list[Counter[str]] = [Counter(), Counter(), Counter()]
        for k, q in [*given.items(), *quota.items()]:
            for axis in range(3):
                per_axis[axis][k[axis]] += q
        open_strata = [k for k in sorted(sizes) if quota[k] < sizes[k]]
        best = min(
            open_strata,
            key=lambda k: (round(quota[k] - exact[k], 9), *(per_axis[a][k[a]] for a in range(3))),
        )
        quota[best] += 1
    return quota


def _allocate(sizes: Mapping[Stratum, int], total: int) -> dict[Stratum, int]:
    """Proportional quotas per (split, L1, route) stratum summing to `total`, routes first: each route
    gets its share of `total`, then that share is apportioned over the route's split x L1 strata. One
    largest-remainder pass over all strata would hand the remainders to the routes whose strata happen
    to be larger, and a route made of single-task strata would get almost nothing."""
    routes = sorted({k[2] for k in sizes})
    by_route = {("", "", r): sum(n for k, n in sizes.items() if k[2] == r) for r in routes}
    shares = _apportion(by_route, total, {})
    quota: dict[Stratum, int] = {}
    for r in routes:
        quota.update(_apportion({k: n for k, n in sizes.items() if k[2] == r}, shares[("", "", r)], quota))
    return quota


def _strata_counts(tasks: Sequence[Task]) -> dict[str, dict[str, int]]:
    axes: dict[str, Counter[str]] = {
        a: Counter() for a in ("split", "l1", "route", "capability", "atom", "challenging")
    }
    for t in tasks:
        axes["split"][t.coordinate.split] += 1
        axes["l1"][t.coordinate.l1_key] += 1
        axes["route"][route_of(t)] += 1
        axes["capability"].update(t.coordinate.capabilities)
        axes["atom"].update(t.coordinate.atoms)
        axes["challenging"]["challenging" if is_challenging(t) else "regular"] += 1
    return {a: dict(sorted(c.items())) for a, c in axes.items()}


def _cluster_drop(
    pool: Sequence[Task], i: int, chosen: Sequence[int], near: Sequence[Near], size: int, cap: int
) -> DroppedCandidate:
    """The record of a held-out cluster's member past the cap, naming the benchmark item it is closest
    to (a direct neighbour when it has one, else the first item it is chained to)."""
    task = pool[i]
    direct = next((nb for nb in near if nb[0] in chosen), None)
    tail = (
        f"its near-duplicate cluster of {size} is held out with {len(chosen)} item(s) (cap {cap}), "
        "so it is in neither set"
    )
    if direct is None:
        other = pool[chosen[0]].id
        return DroppedCandidate(
            task_id=task.id, nearest=other, similarity=None,
            reason=f"{CLUSTER_HELD_OUT}: chained through near-duplicates to benchmark item {other}; {tail}",
        )  # fmt: skip
    j, measure, score = direct
    return DroppedCandidate(
        task_id=task.id, nearest=pool[j].id, similarity=round(score, 4),
        reason=f"{CLUSTER_HELD_OUT}: {measure} {score:.3f} with benchmark item {pool[j].id}; {tail}",
    )  # fmt: skip


def _components(near_of: Sequence[Sequence[Near]]) -> list[list[int]]:
    """Connected components of the near-duplicate graph (union-find), each sorted, ordered by first index.
    Chains count: when a is near b and b near c, the three are one cluster even if a and c are not,
    because wherever b went, one of its near pairs would cross the split."""
    parent = list(range(len(near_of)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, near in enumerate(near_of):
        for j, _, _ in near:
            a, b = root(i), root(j)
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(len(near_of)):
        groups[root(i)].append(i)
    return sorted(groups.values(), key=lambda g: g[0])


def near_duplicate_clusters(
    texts: Sequence[str],
    embedder: Embedder,
    *,
    ngram_threshold: float = 0.6,
    embedding_threshold: float = 0.92,
) -> list[list[int]]:
    """Indices of `texts` grouped into near-duplicate clusters: connected components of the graph whose
    edges are pairs at or over either threshold. Every text is in exactly one cluster (most are
    singletons); each cluster is sorted and clusters are ordered by their first index."""
    return _components(_near_pairs(texts, None, embedder, ngram_threshold, embedding_threshold))


def _home(strata: Sequence[Stratum]) -> Stratum:
    """The stratum a cluster is counted in: that of most of its members (ties: the first in order)."""
    counts = Counter(strata)
    return min(counts, key=lambda k: (-counts[k], k))


def hold_out(
    tasks: Sequence[Task],
    embedder: Embedder,
    *,
    fraction: float = 0.25,
    max_items: int | None = None,
    ngram_threshold: float = 0.6,
    embedding_threshold: float = 0.92,
    seed: int = 0,
    coverage_cap: float = 0.5,
    max_per_cluster: int = MAX_PER_CLUSTER,
) -> tuple[BenchmarkSplit, list[Task]]:
    """Split `tasks` into a held-out benchmark and the training rest.

    About `fraction` of the pool is held out (at most `max_items`; a held-out cluster may overshoot the
    fraction by up to `max_per_cluster - 1` items); the coverage pass may take more, up to
    `coverage_cap` of the pool, so that every capability, atom, route and split appears. Features it
    could not cover within that cap are listed under `strata["uncovered"]`. Near-duplicate clusters
    are held out whole: at most `max_per_cluster` members become items, the others are in `dropped`
    and in neither set. The result is a pure function of the tasks (in any order), the embedder and
    `seed`.
    """
    if not 0 < fraction < 1:
        raise ValueError(f"fraction must be between 0 and 1 (exclusive), got {fraction}")
    if max_per_cluster < 1:
        raise ValueError(
            f"max_per_cluster must be at least 1 (items kept per held-out cluster), got {max_per_cluster}"
        )
    pool = sorted({t.id: t for t in tasks}.values(), key=lambda t: t.id)
    n = len(pool)
    thresholds = {
        NGRAM_KEY: float(ngram_threshold),
        EMBEDDING_KEY: float(embedding_threshold),
        "ngram_n": float(NGRAM_N),
        CLUSTER_CAP_KEY: float(max_per_cluster),
    }
    if n == 0:
        return BenchmarkSplit(items=(), thresholds=thresholds), []
    target = max(1, round(fraction * n))
    cap = max(target, math.floor(coverage_cap * n))
    if max_items is not None:
        target, cap = min(target, max_items), min(cap, max_items)
    near_of = _near_pairs([t.query for t in pool], None, embedder, ngram_threshold, embedding_threshold)
    rng = random.Random(seed)
    rank = list(range(n))
    rng.shuffle(rank)  # a seeded tie-break, so equal members are not always the lowest ids
    # Members in seeded order, clusters in seeded order: a cluster's position is its tie-break.
    clusters = [sorted(c, key=lambda i: rank[i]) for c in _components(near_of)]
    rng.shuffle(clusters)
    strata = [_stratum(t) for t in pool]
    home = [_home([strata[i] for i in c]) for c in clusters]
    features = [_features(t) for t in pool]
    cluster_features = [set().union(*(features[i] for i in c)) for c in clusters]
    uncovered = set().union(*features)

    held: list[int] = []
    decided: set[int] = set()  # clusters already placed on the benchmark side
    per_stratum: Counter[Stratum] = Counter()  # items held, counted in their cluster's home stratum
    dropped: list[DroppedCandidate] = []
    lost: set[int] = set()  # members of held clusters past the cap: in neither set

    def pick(c: int, k: int) -> list[int]:
        # Up to k members, each the one adding most still-uncovered features; seeded order breaks ties.
        rest, chosen = list(clusters[c]), []
        gained: set[str] = set()
        for _ in range(min(k, len(rest))):
            best = max(rest, key=lambda i: len((features[i] & uncovered) - gained))
            rest.remove(best)
            chosen.append(best)
            gained |= features[best] & uncovered
        return chosen

    def admit(c: int, k: int) -> None:
        nonlocal uncovered
        decided.add(c)
        chosen = pick(c, k)
        held.extend(chosen)
        per_stratum[home[c]] += len(chosen)
        for i in chosen:
            uncovered -= features[i]
        for i in clusters[c]:
            if i not in chosen:
                lost.add(i)
                dropped.append(_cluster_drop(pool, i, chosen, near_of[i], len(clusters[c]), max_per_cluster))

    # Coverage: greedily the cluster adding most uncovered features, then fewest held in its stratum,
    # then the one that wastes fewest training tasks (members past the cap are lost to both sides).
    while uncovered and len(held) < cap:
        room = cap - len(held)
        options = [c for c in range(len(clusters)) if c not in decided and cluster_features[c] & uncovered]
        if not options:
            break
        best, best_key = -1, (0, 0, 0, 0)
        for c in options:
            take = min(max_per_cluster, len(clusters[c]), room)
            gain = len(set().union(*(features[i] for i in pick(c, take))) & uncovered)
            key = (gain, -per_stratum[home[c]], take - len(clusters[c]), -c)
            if best < 0 or key > best_key:
                best, best_key = c, key
        admit(best, min(max_per_cluster, len(clusters[best]), room))

    # Stratified fill: proportional quotas over split x L1 x route, sized by what each stratum's
    # clusters can give (a template family counts as its capped members, not its whole size); the
    # stratum furthest below its quota, within the route furthest below its own, takes its next
    # cluster in seeded order.
    capacity: Counter[Stratum] = Counter()
    queues: dict[Stratum, list[int]] = defaultdict(list)
    for c, members in enumerate(clusters):
        capacity[home[c]] += min(len(members), max_per_cluster)
        if c not in decided:
            queues[home[c]].append(c)
    quota = _allocate(capacity, target)
    route_quota: Counter[str] = Counter()
    for k, slots in quota.items():
        route_quota[k[2]] += slots
    while len(held) < target:
        open_strata = sorted(k for k, q in queues.items() if q)
        if not open_strata:
            break
        # The route furthest below its share first: a cluster gives up to `max_per_cluster` items at
        # once, and a route of template families would otherwise overshoot at the others' expense.
        per_route: Counter[str] = Counter()
        for k, got in per_stratum.items():
            per_route[k[2]] += got
        stratum = min(
            open_strata,
            key=lambda k: (per_route[k[2]] - route_quota[k[2]], per_stratum[k] - quota[k], -len(queues[k])),
        )
        c = queues[stratum].pop(0)
        # A cluster keeps its capped members even past the target (within `cap`, so never past
        # `max_items`): cutting it to the last free slot would lose more training tasks per item.
        admit(c, min(max_per_cluster, len(clusters[c]), cap - len(held)))

    held_set = set(held)
    bench = [pool[i] for i in sorted(held, key=lambda i: pool[i].id)]
    counts = _strata_counts(bench)
    missing = set().union(*features) - set().union(*(features[i] for i in held))
    if missing:
        counts["uncovered"] = {f: sum(1 for s in features if f in s) for f in sorted(missing)}
    multi = [c for c in range(len(clusters)) if len(clusters[c]) > 1]
    counts["clusters"] = {
        "pool": len(clusters),
        "held": len(decided),
        "pool_multi_member": len(multi),
        "held_multi_member": sum(1 for c in multi if c in decided),
        "largest": max(len(c) for c in clusters),
    }
    split = BenchmarkSplit(
        items=tuple(benchmark_item(t) for t in bench),
        thresholds=thresholds,
        strata=counts,
        dropped=tuple(sorted(dropped, key=lambda d: d.task_id)),
    )
    training = [pool[i] for i in range(n) if i not in held_set and i not in lost]
    return split, training


def exclude_near(
    tasks: Sequence[Task],
    benchmark_tasks: Sequence[Task],
    embedder: Embedder,
    thresholds: Mapping[str, float],
) -> tuple[list[Task], list[DroppedCandidate]]:
    """Training tasks of a later round minus those that are benchmark items or too close to one,
    judged with the split's own thresholds. Returns (kept, dropped with reasons)."""
    if not benchmark_tasks or not tasks:
        return list(tasks), []
    ngram = float(thresholds.get(NGRAM_KEY, 0.6))
    cosine = float(thresholds.get(EMBEDDING_KEY, 0.92))
    held_ids = {t.id for t in benchmark_tasks}
    held = list(benchmark_tasks)
    near_of = _near_pairs([t.query for t in tasks], [t.query for t in held], embedder, ngram, cosine)
    kept: list[Task] = []
    dropped: list[DroppedCandidate] = []
    for offset, task in enumerate(tasks):
        if task.id in held_ids:
            dropped.append(DroppedCandidate(
                task_id=task.id, nearest=task.id, similarity=1.0,
                reason=f"{SAME_ID}: the task is a held-out benchmark item and may never be trained on",
            ))  # fmt: skip
            continue
        near = near_of[offset][0] if near_of[offset] else None
        if near is None:
            kept.append(task)
            continue
        j, measure, score = near
        dropped.append(DroppedCandidate(
            task_id=task.id, nearest=held[j].id, similarity=round(score, 4),
            reason=f"{NEAR_BENCHMARK}: {measure} {score:.3f} with benchmark item {held[j].id}; "
                   "excluded from training",
        ))  # fmt: skip
    return kept, dropped
