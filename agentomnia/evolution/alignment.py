"""The alignment metric of self-evolution (paper Figure 18): does a PRD round aim where the failures are?

A PRD-guided round should move the data toward the benchmark failures it was written for. The
metric compares two divergences from the failure distribution over one taxonomy axis (L1 domains
by default): KL(P_round || P_failures) for what the round synthesized, and KL(P_previous ||
P_failures) for the data that existed before it. A lower round value means the round is better
aligned with the failures than the earlier data was.

All three distributions are put on one support (the union of their keys) before smoothing, so the
two KL values are comparable; smoothing is additive (`epsilon` on every key, then renormalised),
as in `agentomnia.taxonomy.kl_divergence`, which keeps KL finite where the failures have no mass.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from agentomnia.taxonomy import Coordinate, distribution, kl_divergence
from agentomnia.taxonomy.coordinate import coordinate_of

Axis = Literal["l1", "l2", "split", "primary", "capability"]
AXES: tuple[str, ...] = ("l1", "l2", "split", "primary", "capability")
DEFAULT_EPSILON = 1e-3


class Alignment(BaseModel):
    """Both KL values of one round and the distributions behind them (on the shared support)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    axis: Axis
    epsilon: float
    support: tuple[str, ...]
    p_round: dict[str, float]
    p_previous: dict[str, float] | None  # None when there was no earlier data
    p_failures: dict[str, float]
    kl_round: float
    kl_previous: float | None
    n_round: int
    n_previous: int
    n_failures: int

    @property
    def improved(self) -> bool | None:
        """True when the round is closer to the failures than the earlier data (None without earlier data)."""
        return None if self.kl_previous is None else self.kl_round < self.kl_previous


def axis_counts(items: Iterable[Coordinate | Any], axis: str = "l1") -> Counter[str]:
    """How many coordinates (or records with a `.coordinate`) fall on each value of `axis`.

    `capability` counts a coordinate once per capability it lists; the other axes once.
    """
    if axis not in AXES:
        raise ValueError(f"unknown axis {axis!r}; use one of {', '.join(AXES)}")
    counts: Counter[str] = Counter()
    for item in items:
        c = coordinate_of(item)
        if axis == "l1":
            counts[c.l1_key] += 1
        elif axis == "l2":
            counts[str(c.taxonomy_id)] += 1
        elif axis == "split":
            counts[c.split] += 1
        elif axis == "primary":
            counts[c.primary_difficulty] += 1
        else:
            counts.update(c.capabilities)
    return counts


def _on_support(counts: Counter[str], support: tuple[str, ...]) -> dict[str, float]:
    return distribution({k: float(counts.get(k, 0)) for k in support})


def alignment(
    round_coords: Iterable[Coordinate | Any],
    previous_coords: Iterable[Coordinate | Any],
    failure_coords: Iterable[Coordinate | Any],
    *,
    axis: Axis = "l1",
    epsilon: float = DEFAULT_EPSILON,
) -> Alignment:
    """KL(P_round || P_failures) and KL(P_previous || P_failures) over `axis`, with the distributions.

    The round and the failures must be non-empty (there is nothing to compare otherwise); an
    empty previous set (the base round has no predecessor) gives `kl_previous=None`.
    """
    if epsilon <= 0:
        raise ValueError(f"epsilon must be > 0 so that KL stays finite on the shared support, got {epsilon}")
    rounds, previous, failures = (
        axis_counts(c, axis) for c in (round_coords, previous_coords, failure_coords)
    )
    if not failures:
        raise ValueError(
            "no failure coordinates: alignment measures distance to failures, so there must be some"
        )
    if not rounds:
        raise ValueError("the round has no coordinates yet; materialize its environments or tasks first")
    support = tuple(sorted(set(rounds) | set(previous) | set(failures)))
    p_round, p_failures = _on_support(rounds, support), _on_support(failures, support)
    p_previous = _on_support(previous, support) if previous else None
    return Alignment(
        axis=axis,
        epsilon=epsilon,
        support=support,
        p_round=p_round,
        p_previous=p_previous,
        p_failures=p_failures,
        kl_round=kl_divergence(p_round, p_failures, epsilon=epsilon),
        kl_previous=kl_divergence(p_previous, p_failures, epsilon=epsilon)
        if p_previous is not None
        else None,
        n_round=sum(rounds.values()),
        n_previous=sum(previous.values()),
        n_failures=sum(failures.values()),
    )
