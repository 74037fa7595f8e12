"""Topology-aware group sampling (paper §4.4.1, step 2).

A pool of long chains comes from depth-first search out of source tools and high-out-degree tools,
plus random walks for variety. A group is a few chains plus scattered tools (auxiliary queries,
verification, inspection, plausible distractions); groups that overlap a retained group too much
(Jaccard over tool sets) are dropped, so one environment yields different tasks, not one task
many times. Given `prefer` (the operations of the seed an environment was built around), chains are
drawn with a weight for each of those operations they call, and only groups that call one are kept:
the draw `synth` tries before the usual one, so tasks exercise the service the user brought. Chains
obey a few shape rules that keep them meaningful: no tool twice, a delete only
at the end, and no read of a record right after a read that already returned it.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import networkx as nx
from pydantic import BaseModel, ConfigDict

_IDENTIFY = {"lookup", "search", "list", "range"}
PREFER_WEIGHT = 4  # how much more likely a chain is drawn for each preferred tool it calls


class ToolGroup(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    chains: tuple[tuple[str, ...], ...]
    scattered: tuple[str, ...]

    @property
    def tools(self) -> frozenset[str]:
        return frozenset(t for c in self.chains for t in c) | frozenset(self.scattered)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


class _Steps:
    """Which tool may follow a path. Apart from "no tool twice", the rules only look at the last
    tool and the next one, so each tool's admissible successors are worked out once (the pool asks
    hundreds of thousands of times on a large environment)."""

    def __init__(self, graph: nx.MultiDiGraph) -> None:
        node = {n: graph.nodes[n] for n in graph.nodes}
        self.succ = {
            u: [v for v in sorted(set(graph.successors(u))) if _pair_ok(node[u], node[v])]
            for u in graph.nodes
        }

    def after(self, path: Sequence[str]) -> list[str]:
        return [n for n in self.succ[path[-1]] if n not in path]


def _pair_ok(last: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    if node["op"] == "manage":
        return False  # a mode selector hides which operation it performs; chains use single-purpose tools
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
    steps = _Steps(graph)
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
            succ = steps.after(path)
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
            succ = steps.after(path)
            if not succ:
                break
            path.append(rng.choice(succ))
        keep(path)
    return pool


def _weighted_order(
    chains: Sequence[tuple[str, ...]], weight: Mapping[tuple[str, ...], int], rng: random.Random
) -> list[tuple[str, ...]]:
    """The chains in a random order by weight (a weighted draw without replacement: each chain's
    key is u ** (1 / weight))."""
    return sorted(chains, key=lambda c: rng.random() ** (1 / weight[c]), reverse=True)


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
    prefer: Collection[str] = (),
) -> list[ToolGroup]:
    """Up to `n` groups whose tool sets overlap every retained group by at most `max_overlap`; with
    `prefer`, only groups whose chains call one of those tools, drawn towards calling more of them."""
    fitting = [c for c in pool if chain_len[0] <= len(c) <= chain_len[1]]
    preferred = frozenset(prefer)
    # each chain's weight: 1, plus PREFER_WEIGHT for each preferred tool it calls (worked out once)
    weight = {c: 1 + PREFER_WEIGHT * sum(t in preferred for t in c) for c in fitting} if preferred else {}
    reads = sorted(n for n in graph.nodes if graph.nodes[n]["kind"] == "read")
    kept: list[ToolGroup] = []
    kept_tools: list[frozenset[str]] = []  # each kept group's tool set, for the overlap test
    for _ in range(tries):
        if len(kept) >= n or not fitting:
            break
        k = rng.randint(*chains)
        picked: list[tuple[str, ...]] = []
        m = min(len(fitting), 4 * k)
        for c in _weighted_order(fitting, weight, rng)[:m] if preferred else rng.sample(fitting, m):
            if len(picked) == k:
                break
            if all(not (set(c) & set(p)) for p in picked):
                picked.append(c)
        used = {t for c in picked for t in c}
        if preferred and not used & preferred:
            continue
        extra = [t for t in reads if t not in used]
        scattered_tools = tuple(sorted(rng.sample(extra, min(len(extra), rng.randint(*scattered)))))
        tools = frozenset(used) | frozenset(scattered_tools)
        if all(jaccard(tools, other) <= max_overlap for other in kept_tools):
            kept.append(ToolGroup(chains=tuple(picked), scattered=scattered_tools))
            kept_tools.append(tools)
    return kept
