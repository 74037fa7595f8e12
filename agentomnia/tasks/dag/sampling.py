"""Topology-aware group sampling (paper §4.4.1, step 2).

A pool of long chains comes from depth-first search out of source tools and high-out-degree tools,
plus random walks for variety. A group is a few chains plus scattered tools (auxiliary queries,
verification, inspection, plausible distractions); groups that overlap a retained group too much
(Jaccard over tool sets) are dropped, so one environment yields different tasks, not one task
many times. Chains obey a few shape rules that keep them meaningful: no tool twice, a delete only
at the end, and no read of a record right after a read that already returned it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import networkx as nx
from pydantic import BaseModel, ConfigDict

_IDENTIFY = {"lookup", "search", "list", "range"}


class ToolGroup(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    chains: tuple[tuple[str, ...], ...]
    scattered: tuple[str, ...]

    @property
    def tools(self) -> frozenset[str]:
        return frozenset(t for c in self.chains for t in c) | frozenset(self.scattered)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def _step_ok(graph: nx.MultiDiGraph, path: Sequence[str], nxt: str) -> bool:
    if nxt in path or graph.nodes[nxt]["op"] == "manage":
        return False  # a mode selector hides which operation it performs; chains use single-purpose tools
    last = graph.nodes[path[-1]]
    node = graph.nodes[nxt]
    if last["op"] == "delete" or last["op"] == "aggregate":
        return False  # nothing flows out of a delete or a grouped count
    if last["kind"] == "read" and node["kind"] == "read" and last["entity"] == node["entity"]:
        return last["op"] in _IDENTIFY and node["op"] in ("get", "overview")
    return True


def chain_pool(
    graph: nx.MultiDiGraph,
    rng: random.Random,
    *,
    min_len: int = 2,
    max_len: int = 4,
    walks: int = 200,
    per_start: int = 12,
) -> list[tuple[str, ...]]:
    """Distinct chains of `min_len`..`max_len` tools, longest first within each start."""
    usable = [n for n in graph.nodes if graph.nodes[n]["op"] != "manage"]
    starts = sorted(n for n in usable if graph.in_degree(n) == 0)
    hubs = sorted(usable, key=lambda n: (-graph.out_degree(n), n))[: max(4, len(graph) // 6)]
    starts += [h for h in hubs if h not in starts]
    seen: set[tuple[str, ...]] = set()
    pool: list[tuple[str, ...]] = []

    def keep(path: Sequence[str]) -> None:
        t = tuple(path)
        if len(t) >= min_len and t not in seen:
            seen.add(t)
            pool.append(t)

    for start in starts:
        found: list[tuple[str, ...]] = []
        stack: list[list[str]] = [[start]]
        while stack and len(found) < per_start:
            path = stack.pop()
            succ = [n for n in sorted(set(graph.successors(path[-1]))) if _step_ok(graph, path, n)]
            rng.shuffle(succ)
            if len(path) == max_len or not succ:
                if len(path) >= min_len:
                    found.append(tuple(path))
                continue
            stack.extend([*path, n] for n in succ[:3])
        for p in sorted(found, key=len, reverse=True):
            keep(p)
    nodes = sorted(n for n in graph.nodes if graph.nodes[n]["op"] != "manage")
    for _ in range(walks):
        path = [rng.choice(nodes)]
        while len(path) < max_len:
            succ = [n for n in sorted(set(graph.successors(path[-1]))) if _step_ok(graph, path, n)]
            if not succ:
                break
            path.append(rng.choice(succ))
        keep(path)
    return pool


def sample_groups(
    graph: nx.MultiDiGraph,
    pool: Sequence[tuple[str, ...]],
    rng: random.Random,
    *,
    n: int,
    chains: tuple[int, int],
    chain_len: tuple[int, int],
    scattered: tuple[int, int],
    max_overlap: float = 0.6,
    tries: int = 400,
) -> list[ToolGroup]:
    """Up to `n` groups whose tool sets overlap every retained group by at most `max_overlap`."""
    fitting = [c for c in pool if chain_len[0] <= len(c) <= chain_len[1]]
    reads = sorted(n for n in graph.nodes if graph.nodes[n]["kind"] == "read")
    kept: list[ToolGroup] = []
    for _ in range(tries):
        if len(kept) >= n or not fitting:
            break
        k = rng.randint(*chains)
        picked: list[tuple[str, ...]] = []
        for c in rng.sample(fitting, min(len(fitting), 4 * k)):
            if len(picked) == k:
                break
            if all(not (set(c) & set(p)) for p in picked):
                picked.append(c)
        used = {t for c in picked for t in c}
        extra = [t for t in reads if t not in used]
        group = ToolGroup(
            chains=tuple(picked),
            scattered=tuple(sorted(rng.sample(extra, min(len(extra), rng.randint(*scattered))))),
        )
        if all(jaccard(group.tools, g.tools) <= max_overlap for g in kept):
            kept.append(group)
    return kept
