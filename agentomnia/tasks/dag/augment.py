"""The augmented DAG (paper §4.4.1, step 3): tool calls plus virtual reasoning nodes.

Executed calls are the real nodes; a chain's data flow gives their edges. Virtual nodes of seven
types (COMPUTE, LOGIC, EXTRACT, TRANSFORM, AGGREGATE, VALIDATE, FILTER) join reported values of
scattered tools to those of chains — a sum, a comparison, a pick from a list — and become answer
fields. A virtual node only ever takes inputs that already exist (earlier calls or earlier virtual
nodes), so the graph is acyclic by construction; `AugmentedDAG.check` asserts it anyway, because a
cycle would mean the task's answer depends on itself.
"""

from __future__ import annotations

from typing import Any, Literal

import networkx as nx
from pydantic import BaseModel, ConfigDict, Field

VirtualType = Literal["COMPUTE", "LOGIC", "EXTRACT", "TRANSFORM", "AGGREGATE", "VALIDATE", "FILTER"]
VIRTUAL_TYPES: tuple[VirtualType, ...] = (
    "COMPUTE", "LOGIC", "EXTRACT", "TRANSFORM", "AGGREGATE", "VALIDATE", "FILTER",
)  # fmt: skip


class VirtualNode(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    type: VirtualType
    inputs: tuple[str, ...]
    field: str  # the answer field it produces
    value: Any
    text: str


class AugmentedDAG(BaseModel):
    """Calls (`c<step>`) and virtual nodes (`v<n>`) with their dependency edges."""

    model_config = ConfigDict(extra="forbid")

    calls: list[str] = Field(default_factory=list)
    chains: list[list[str]] = Field(default_factory=list)
    edges: list[tuple[str, str, str]] = Field(default_factory=list)  # (from, to, kind)
    virtual: list[VirtualNode] = Field(default_factory=list)

    def add_call(self, node: str) -> None:
        self.calls.append(node)

    def link(self, source: str, target: str, kind: str) -> None:
        known = set(self.calls) | {v.id for v in self.virtual}
        if source not in known or target not in known:
            raise ValueError(f"edge {source} -> {target} names a node that is not in the DAG yet")
        self.edges.append((source, target, kind))

    def add_virtual(self, node: VirtualNode) -> None:
        """Insert a virtual node after its inputs only: inputs must already be nodes."""
        known = set(self.calls) | {v.id for v in self.virtual}
        missing = [i for i in node.inputs if i not in known]
        if missing:
            raise ValueError(f"virtual node {node.id} takes unknown inputs {missing}; add them first")
        self.virtual.append(node)
        for i in node.inputs:
            self.edges.append((i, node.id, "data"))

    def graph(self) -> nx.DiGraph:
        g = nx.DiGraph()
        g.add_nodes_from(self.calls, kind="call")
        g.add_nodes_from((v.id for v in self.virtual), kind="virtual")
        g.add_edges_from((u, v, {"kind": k}) for u, v, k in self.edges)
        return g

    def check(self) -> None:
        g = self.graph()
        if not nx.is_directed_acyclic_graph(g):
            raise AssertionError(f"augmented DAG has a cycle: {nx.find_cycle(g)}")

    @property
    def depth(self) -> int:
        """Nodes on the longest dependency path (a lone call has depth 1)."""
        g = self.graph()
        return nx.dag_longest_path_length(g) + 1 if len(g) else 0

    def summary(self) -> dict[str, Any]:
        return {
            "calls": len(self.calls),
            "chains": [len(c) for c in self.chains],
            "virtual": [v.type for v in self.virtual],
            "depth": self.depth,
            "edges": [list(e) for e in self.edges],
        }
