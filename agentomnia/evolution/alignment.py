"""The alignment metric of self-evolution (paper Figure 18): does a PRD round aim where the failures are?

A PRD-guided round should move the data toward the benchmark failures it was written for. The
metric compares two divergences from the failure distribution over one taxonomy axis (L1 domains
by default): KL(P_round || P_failures) for what the round synthesized, and KL(P_previous ||
P_failures) for the data that existed before it. A lower round value means the round is better
aligned with the failures than the earlier data was.

The failures may be weighted (`failure_weights`): the evolution stage passes
`agentomnia.evolution.diagnosis.failure_weights`, so a benchmark item counts once however many
trials failed it, by how far it is from passing. That is the distribution the PRD round is planned
against, so the metric measures the round against what it was asked to cover; unweighted, an item
failed in three trials would count three times.

All three distributions are put on one support (the union of their keys) before smoothing, so the
two KL values are comparable; smoothing is additive (`epsilon` on every key, then renormalised),
as in `agentomnia.taxonomy.kl_divergence`, which keeps KL finite where the failures have no mass.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from agentomnia.evolution.prd import PRD
from agentomnia.seeds.models import Seed
from agentomnia.tasks.models import Task
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


def _axis_values(item: Coordinate | Any, axis: str) -> tuple[str, ...]:
    c = coordinate_of(item)
    if axis == "l1":
        return (c.l1_key,)
    if axis == "l2":
        return (str(c.taxonomy_id),)
    if axis == "split":
        return (c.split,)
    if axis == "primary":
        return (c.primary_difficulty,)
    return c.capabilities


def _check_axis(axis: str) -> None:
    if axis not in AXES:
        raise ValueError(f"unknown axis {axis!r}; use one of {', '.join(AXES)}")


def axis_counts(items: Iterable[Coordinate | Any], axis: str = "l1") -> Counter[str]:
    """How many coordinates (or records with a `.coordinate`) fall on each value of `axis`.

    `capability` counts a coordinate once per capability it lists; the other axes once.
    """
    _check_axis(axis)
    return Counter(v for item in items for v in _axis_values(item, axis))


def axis_weights(
    items: Iterable[Coordinate | Any], weights: Iterable[float], axis: str = "l1"
) -> dict[str, float]:
    """Like `axis_counts`, but each item adds its weight (paired in order with `weights`)."""
    _check_axis(axis)
    out: dict[str, float] = {}
    for item, weight in zip(items, weights, strict=True):
        for value in _axis_values(item, axis):
            out[value] = out.get(value, 0.0) + weight
    return out


def _on_support(counts: Mapping[str, float], support: tuple[str, ...]) -> dict[str, float]:
    return distribution({k: float(counts.get(k, 0)) for k in support})


def alignment(
    round_coords: Iterable[Coordinate | Any],
    previous_coords: Iterable[Coordinate | Any],
    failure_coords: Iterable[Coordinate | Any],
    *,
    axis: Axis = "l1",
    epsilon: float = DEFAULT_EPSILON,
    failure_weights: Sequence[float] | None = None,
) -> Alignment:
    """KL(P_round || P_failures) and KL(P_previous || P_failures) over `axis`, with the distributions.

    `failure_weights`, paired in order with `failure_coords`, weigh the failures in P_failures
    (each failure counts 1 without them); `n_failures` still counts failure coordinates.
    The round and the failures must be non-empty (there is nothing to compare otherwise); an
    empty previous set (the base round has no predecessor) gives `kl_previous=None`.
    """
    if epsilon <= 0:
        raise ValueError(f"epsilon must be > 0 so that KL stays finite on the shared support, got {epsilon}")
    rounds, previous = axis_counts(round_coords, axis), axis_counts(previous_coords, axis)
    failure_coords = list(failure_coords)
    weights = [1.0] * len(failure_coords) if failure_weights is None else failure_weights
    failures = {k: w for k, w in axis_weights(failure_coords, weights, axis).items() if w > 0}
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
        n_failures=len(failure_coords),
    )


# -- which PRD produced which data --------------------------------------------------------------------

NO_PRD = "(no PRD)"


def data_by_prd(
    prds: Sequence[PRD],
    seeds: Iterable[Seed],
    env_seed_ids: Mapping[str, Sequence[str]],
    tasks: Iterable[Task],
) -> list[dict[str, Any]]:
    """One row per PRD: the round's seeds, environments and tasks (by kind) it produced.

    A seed names the PRDs it serves (`metadata["prd_ids"]`); an environment was produced by the PRDs
    of its seeds (`env_seed_ids`: env id -> seed ids); a task by its environment's PRDs. A task on an
    environment no PRD seeded (a solver task's own environment) is credited to the PRDs that target
    its domain (its L2, else its L1), since the round made it for that domain. What no PRD explains
    falls in a last row, `NO_PRD`. A record serving two PRDs counts in both rows, so rows may sum to
    more than the round holds.
    """
    seed_prds = {s.id: tuple(s.metadata.get("prd_ids") or ()) for s in seeds}
    env_prds = {
        env: tuple(dict.fromkeys(p for sid in sids for p in seed_prds.get(sid, ())))
        for env, sids in env_seed_ids.items()
    }
    known = [p.prd_id for p in prds]
    rows: dict[str, dict[str, Any]] = {
        p.prd_id: {"prd": p.prd_id, "priority": p.priority, "seeds": 0, "environments": 0, "tasks": 0}
        for p in prds
    }
    rows[NO_PRD] = {"prd": NO_PRD, "priority": "", "seeds": 0, "environments": 0, "tasks": 0}

    def credit(ids: Sequence[str], column: str, kind: str | None = None) -> None:
        for pid in [i for i in ids if i in rows] or [NO_PRD]:
            rows[pid][column] += 1
            if kind is not None:
                rows[pid][kind] = rows[pid].get(kind, 0) + 1

    for ids in seed_prds.values():
        credit(ids, "seeds")
    for ids in env_prds.values():
        credit(ids, "environments")
    for t in tasks:
        ids = env_prds.get(t.env_id) or tuple(
            p.prd_id
            for p in prds
            if t.coordinate.taxonomy_id in p.target_l2 or t.coordinate.l1_key in p.target_l1
        )
        credit(ids, "tasks", t.kind)
    unexplained = rows[NO_PRD]
    shown = [rows[k] for k in known]
    if unexplained["seeds"] or unexplained["environments"] or unexplained["tasks"]:
        shown.append(unexplained)
    kinds = sorted({k for r in shown for k in r} - {"prd", "priority", "seeds", "environments", "tasks"})
    return [{**r, **{k: r.get(k, 0) for k in kinds}} for r in shown]
