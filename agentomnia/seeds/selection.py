"""Quality-aware selection of environment candidates (paper §4.2.1).

In order: granularity control (too broad — a suite spanning many unrelated domains — or too
narrow — a single isolated operation), quality thresholds on utility and realism, exact dedup on
summaries keeping the higher realism, then clustering of the survivors' embeddings with each
cluster's medoid kept as its representative. Every candidate that does not survive gets a
rejection naming the rule. Deterministic for a fixed corpus and config.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agentomnia.rejection import Rejection
from agentomnia.seeds.inference import EnvCandidate


class SelectionConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    min_utility: float = Field(default=0.35, ge=0, le=1)
    min_realism: float = Field(default=0.35, ge=0, le=1)
    min_operations: int = Field(default=3, description="fewer operations than this is too narrow")
    min_state_components: int = Field(default=2, description="fewer state components than this is too narrow")
    max_seed_tools: int = Field(
        default=80, description="a seed with more tools than this is a suite: too broad"
    )
    max_state_components: int = Field(default=24, description="more state components than this is too broad")
    broad_min_tools: int = Field(
        25, description="a flat domain match only counts as broad above this many tools"
    )
    broad_margin: float = Field(
        0.02, description="top-1 minus top-3 domain similarity below this = no clear domain"
    )
    cluster_distance: float = Field(
        0.08, ge=0, le=2, description="cosine distance under which candidates are near-duplicates"
    )
    state_overlap: float | None = Field(
        None,
        ge=0,
        le=1,
        description=(
            "when set, candidates in one embedding cluster are near-duplicates only if their state "
            "components overlap at least this much (Jaccard); for corpora composed from one knowledge "
            "entry per domain, whose descriptions read alike while their states differ"
        ),
    )


class Selection(BaseModel):
    selected: list[EnvCandidate]
    rejected: list[Rejection]


def granularity(c: EnvCandidate, cfg: SelectionConfig) -> tuple[str, str] | None:
    f = c.features
    ops = len(c.overview.operations)
    if (
        f.get("seed_tools", 0) > cfg.max_seed_tools
        or len(c.overview.state_components) > cfg.max_state_components
    ):
        return "too_broad", (
            f"{int(f.get('seed_tools', 0))} tools over {len(c.overview.state_components)} state components: "
            "a suite, not one environment; split the seed by product area"
        )
    if f.get("seed_tools", 0) > cfg.broad_min_tools and f.get("domain_margin", 1.0) < cfg.broad_margin:
        return (
            "too_broad",
            "no level-2 domain stands out (flat similarity over the top 3): a generic multi-domain suite",
        )
    if ops < cfg.min_operations:
        return "too_narrow", f"only {ops} operation(s): a single isolated operation is not an environment"
    if len(c.overview.state_components) < cfg.min_state_components:
        return "too_narrow", f"only {len(c.overview.state_components)} state component(s)"
    if not any(o.kind == "write" for o in c.overview.operations):
        return "too_narrow", "no write operation: nothing the agent does changes state"
    return None


def select(
    candidates: Sequence[EnvCandidate], vectors: np.ndarray, cfg: SelectionConfig | None = None
) -> Selection:
    """`vectors[i]` is the unit-length embedding of `candidates[i]` (see `candidate_text`)."""
    cfg = cfg or SelectionConfig()
    if len(candidates) != len(vectors):
        raise ValueError(
            f"{len(candidates)} candidates but {len(vectors)} vectors; embed each candidate once"
        )
    order = sorted(range(len(candidates)), key=lambda i: candidates[i].id)  # input order must not matter
    rejected: list[Rejection] = []

    def reject(c: EnvCandidate, rule: str, reason: str) -> None:
        rejected.append(
            Rejection(subject=c.id, subject_kind="selected_candidate", stage="selection", reason=reason, parent=c.id,
                      detail={"rule": rule, "seed_ids": list(c.seed_ids)})
        )  # fmt: skip

    alive: list[int] = []
    for i in order:
        c = candidates[i]
        grain = granularity(c, cfg)
        if grain is not None:
            reject(c, *grain)
        elif c.utility < cfg.min_utility:
            reject(c, "low_utility", f"utility {c.utility:.2f} < {cfg.min_utility:.2f}")
        elif c.realism < cfg.min_realism:
            reject(c, "low_realism", f"realism {c.realism:.2f} < {cfg.min_realism:.2f}")
        else:
            alive.append(i)

    best_by_summary: dict[str, int] = {}
    for i in alive:
        key = " ".join(candidates[i].summary.lower().split())
        j = best_by_summary.get(key)
        if j is None:
            best_by_summary[key] = i
            continue
        keep, drop = (
            (i, j)
            if (candidates[i].realism, candidates[j].id) > (candidates[j].realism, candidates[i].id)
            else (j, i)
        )
        best_by_summary[key] = keep
        reject(
            candidates[drop],
            "duplicate_summary",
            f"same summary as {candidates[keep].id}, which has higher realism",
        )
    alive = sorted(best_by_summary.values(), key=lambda i: candidates[i].id)

    keep_idx: list[int] = []
    for cluster in _clusters(vectors[alive], cfg.cluster_distance) if alive else []:
        members = [alive[m] for m in cluster]
        sims = vectors[members] @ vectors[members].T
        order = [members[k] for k in np.argsort(-sims.sum(axis=1), kind="stable")]  # medoid first
        kept: list[int] = []
        for m in order:
            twin = next(
                (k for k in kept if _same_state(candidates[m], candidates[k], cfg.state_overlap)), None
            )
            if twin is None:
                kept.append(m)
                continue
            reject(
                candidates[m],
                "near_duplicate",
                f"in a cluster represented by {'its medoid ' if twin == order[0] else ''}{candidates[twin].id}",
            )
        keep_idx += kept
    selected = [candidates[i] for i in sorted(keep_idx, key=lambda i: candidates[i].id)]
    return Selection(selected=selected, rejected=sorted(rejected, key=lambda r: r.subject))


def _same_state(a: EnvCandidate, b: EnvCandidate, overlap: float | None) -> bool:
    """Whether two candidates of one embedding cluster are the same environment."""
    if overlap is None:
        return True
    x, y = set(a.overview.state_components), set(b.overview.state_components)
    return len(x & y) / max(1, len(x | y)) >= overlap


def _clusters(vectors: np.ndarray, distance: float) -> list[list[int]]:
    """Average-linkage agglomerative clusters under a cosine distance threshold."""
    if len(vectors) == 1:
        return [[0]]
    from sklearn.cluster import AgglomerativeClustering

    labels = AgglomerativeClustering(
        n_clusters=None, distance_threshold=distance, metric="cosine", linkage="average"
    ).fit_predict(vectors)
    groups: dict[int, list[int]] = {}
    for i, label in enumerate(labels):
        groups.setdefault(int(label), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])
