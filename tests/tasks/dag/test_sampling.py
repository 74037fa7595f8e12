"""Chain pools, group sampling with the overlap filter, and the augmented DAG's acyclicity."""

from __future__ import annotations

import random
from itertools import combinations

import pytest

from agentomnia.envs.spec import EnvSpec
from agentomnia.tasks.dag.augment import AugmentedDAG, VirtualNode
from agentomnia.tasks.dag.graph import build_tool_graph
from agentomnia.tasks.dag.sampling import chain_pool, jaccard, sample_groups


def test_chains_follow_edges_and_respect_length_and_shape(freight_spec: EnvSpec) -> None:
    graph, _ = build_tool_graph(freight_spec)
    pool = chain_pool(graph, random.Random(0), min_len=3, max_len=4)
    assert len(pool) >= 20 and len(set(pool)) == len(pool)
    assert any(len(c) == 4 for c in pool)
    for chain in pool:
        assert 3 <= len(chain) <= 4 and len(set(chain)) == len(chain)
        assert all(graph.has_edge(u, v) for u, v in zip(chain, chain[1:], strict=False))
        assert all(graph.nodes[t]["op"] not in ("delete", "aggregate") for t in chain[:-1])
        assert all(graph.nodes[t]["op"] != "manage" for t in chain)


def test_groups_mix_chains_and_scattered_reads_without_heavy_overlap(freight_spec: EnvSpec) -> None:
    graph, _ = build_tool_graph(freight_spec)
    rng = random.Random(1)
    pool = chain_pool(graph, rng, min_len=2, max_len=4)
    groups = sample_groups(
        graph, pool, rng, n=12, chains=(2, 3), chain_len=(2, 4), scattered=(1, 2), max_overlap=0.4
    )
    assert len(groups) >= 6
    for g in groups:
        assert 2 <= len(g.chains) <= 3 and 1 <= len(g.scattered) <= 2
        assert all(graph.nodes[t]["kind"] == "read" for t in g.scattered)
        used = [t for c in g.chains for t in c]
        assert len(used) == len(set(used))  # chains of one group share no tool
    for a, b in combinations(groups, 2):
        assert jaccard(a.tools, b.tools) <= 0.4


def test_a_preferred_draw_keeps_groups_that_call_those_tools_and_leans_towards_them(
    freight_spec: EnvSpec,
) -> None:
    """With `prefer` (a seed's own operations), every group calls one of them, and more of the chains
    do than in the plain draw."""
    graph, _ = build_tool_graph(freight_spec)
    names = sorted(graph.nodes)
    seeded = set(names[::12])

    def share(prefer: set[str]) -> float:
        hits = total = 0
        for seed in range(5):
            rng = random.Random(seed)
            pool = chain_pool(graph, rng, min_len=2, max_len=4)
            groups = sample_groups(
                graph, pool, rng, n=10, chains=(1, 2), chain_len=(2, 4), scattered=(0, 1), prefer=prefer
            )
            assert groups
            for g in groups:
                assert not prefer or any(t in prefer for c in g.chains for t in c), g
                hits += sum(any(t in seeded for t in c) for c in g.chains)
                total += len(g.chains)
        return hits / total

    preferred, plain = share(seeded), share(set())
    assert preferred >= plain + 0.15, (preferred, plain)


def test_virtual_nodes_only_join_existing_nodes_and_cycles_are_caught() -> None:
    dag = AugmentedDAG()
    for n in ("c0", "c1", "c2"):
        dag.add_call(n)
    dag.link("c0", "c1", "entity_anchor")
    node = VirtualNode(id="v0", type="COMPUTE", inputs=("c1", "c2"), field="total", value=3, text="sum")
    dag.add_virtual(node)
    dag.add_virtual(
        VirtualNode(id="v1", type="VALIDATE", inputs=("v0",), field="check", value=True, text="at least 2")
    )
    dag.check()
    assert dag.depth == 4  # c0 -> c1 -> v0 -> v1
    with pytest.raises(ValueError, match="unknown inputs"):
        dag.add_virtual(VirtualNode(id="v2", type="LOGIC", inputs=("v9",), field="x", value=True, text="?"))
    dag.link("c1", "c0", "parameter")
    with pytest.raises(AssertionError, match="cycle"):
        dag.check()
