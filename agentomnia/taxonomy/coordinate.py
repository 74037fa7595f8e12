"""The coordinate Z = (domain, capability profile, atomic-difficulty profile) and counting along it.

Every environment, task, trajectory and benchmark result carries a Coordinate. Synthesis compares
coverage with targets, the benchmark groups results by it, and self-evolution compares the L1
distribution of what it synthesized with the distribution of failures it was aiming at (KL
divergence). The coordinate checks itself against the shipped taxonomy and axes on construction, so
a wrong id or a name that drifted from the CSV is caught where it is made.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentomnia.taxonomy.axes import (
    ATOM_IDS,
    CAPABILITY_IDS,
    FULL_PROFILE,
    primary_atom,
    profile_atoms,
    profile_mask,
)
from agentomnia.taxonomy.domains import SPLITS, Split, Taxonomy, l1_key, taxonomy_index


class Coordinate(BaseModel):
    """Where an artifact sits: one L2 domain, a non-empty capability set and an 8-bit atom profile.

    `capabilities` is kept sorted (alphabetically) and free of repeats, so equal profiles compare and
    hash equal however they were written. Bit i of `difficulty` is ATOM_IDS[i];
    `primary_difficulty` must be one of the set atoms.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    split: Split
    taxonomy_id: int
    l1: str
    l2: str
    capabilities: tuple[str, ...] = Field(min_length=1)
    difficulty: int = Field(ge=1, le=FULL_PROFILE)
    primary_difficulty: str

    @field_validator("capabilities", mode="before")
    @classmethod
    def _normalise_capabilities(cls, value: Any) -> Any:
        if isinstance(value, str):
            raise ValueError("capabilities must be a list of capability ids, not one string")
        items = tuple(value)
        unknown = [c for c in items if c not in CAPABILITY_IDS]
        if unknown:
            raise ValueError(f"unknown capabilities {unknown}; use ids from {', '.join(CAPABILITY_IDS)}")
        return tuple(sorted(set(items)))

    @model_validator(mode="after")
    def _check(self) -> Coordinate:
        taxonomy = taxonomy_index()
        if self.taxonomy_id not in taxonomy:
            raise ValueError(
                f"taxonomy id {self.taxonomy_id} is not in taxonomy.csv; see `agentomnia taxonomy show`"
            )
        domain = taxonomy.by_id(self.taxonomy_id)
        if (self.split, self.l1, self.l2) != (domain.split, domain.l1, domain.l2):
            raise ValueError(
                f"coordinate names ({self.split}, {self.l1!r}, {self.l2!r}) do not match taxonomy id "
                f"{self.taxonomy_id}, which is ({domain.split}, {domain.l1!r}, {domain.l2!r}); "
                "build it with Coordinate.for_domain(id, ...) to fill the names from the taxonomy"
            )
        if self.primary_difficulty not in ATOM_IDS:
            raise ValueError(
                f"unknown primary atom {self.primary_difficulty!r}; use one of {', '.join(ATOM_IDS)}"
            )
        if self.primary_difficulty not in self.atoms:
            raise ValueError(
                f"primary atom {self.primary_difficulty!r} is not set in the difficulty profile {self.atoms}; "
                "pick one of those or add it to the profile"
            )
        return self

    @property
    def atoms(self) -> tuple[str, ...]:
        """The atoms set in `difficulty`, in bit order."""
        return profile_atoms(self.difficulty)

    @property
    def l1_key(self) -> str:
        return l1_key(self.split, self.l1)

    @classmethod
    def for_domain(
        cls,
        taxonomy_id: int,
        capabilities: Iterable[str],
        atoms: Iterable[str] | int,
        primary: str | None = None,
        *,
        taxonomy: Taxonomy | None = None,
    ) -> Coordinate:
        """Fill split and names from the taxonomy; `atoms` is atom ids or a profile bitmask.

        Without `primary`, the primary atom is the set atom with the lowest `primary_rank` in
        atoms.yaml (risk & clarification first, tool & parameter grounding last).
        """
        domain = (taxonomy or taxonomy_index()).by_id(taxonomy_id)
        mask = atoms if isinstance(atoms, int) else profile_mask(atoms)
        if mask == 0:
            raise ValueError(
                f"coordinate for domain {taxonomy_id}: give at least one atom of {', '.join(ATOM_IDS)}"
            )
        return cls(
            split=domain.split,
            taxonomy_id=domain.id,
            l1=domain.l1,
            l2=domain.l2,
            capabilities=tuple(capabilities),
            difficulty=mask,
            primary_difficulty=primary if primary is not None else primary_atom(mask),
        )


def coordinate_of(item: Coordinate | Any) -> Coordinate:
    """A coordinate itself, or the `.coordinate` of a record that carries one."""
    if isinstance(item, Coordinate):
        return item
    found = getattr(item, "coordinate", None)
    if not isinstance(found, Coordinate):
        raise TypeError(f"{type(item).__name__} is neither a Coordinate nor a record with a `.coordinate`")
    return found


class Coverage(BaseModel):
    """How many artifacts fall on each value of each axis.

    Keys: split ('toc'), L1 ('toc/Finance'), L2 (taxonomy id), capability id, atom id (an artifact
    counts once for every atom set in its profile), primary atom id. With `complete=True` in
    `coverage()`, every axis value is present, so zeros show the gaps.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    total: int
    split: dict[str, int]
    l1: dict[str, int]
    l2: dict[int, int]
    capability: dict[str, int]
    atom: dict[str, int]
    primary: dict[str, int]

    def gaps(self) -> dict[str, list[str]]:
        """Axis values with no artifact, per axis."""
        return {
            axis: [str(k) for k, v in getattr(self, axis).items() if v == 0]
            for axis in ("split", "l1", "l2", "capability", "atom", "primary")
        }

    def rows(self) -> list[dict[str, Any]]:
        """Long-format rows (axis, key, count) for tables and Parquet."""
        return [
            {"axis": axis, "key": str(key), "count": count}
            for axis in ("split", "l1", "l2", "capability", "atom", "primary")
            for key, count in getattr(self, axis).items()
        ]


def coverage(
    items: Iterable[Coordinate | Any], *, complete: bool = True, taxonomy: Taxonomy | None = None
) -> Coverage:
    """Count coordinates (or records with a `.coordinate`) along every axis."""
    split: Counter[str] = Counter()
    l1: Counter[str] = Counter()
    l2: Counter[int] = Counter()
    caps: Counter[str] = Counter()
    atom: Counter[str] = Counter()
    primary: Counter[str] = Counter()
    total = 0
    for item in items:
        c = coordinate_of(item)
        total += 1
        split[c.split] += 1
        l1[c.l1_key] += 1
        l2[c.taxonomy_id] += 1
        caps.update(c.capabilities)
        atom.update(c.atoms)
        primary[c.primary_difficulty] += 1

    def ordered(counts: Counter[Any], axis: Iterable[Any]) -> dict[Any, int]:
        # The axis order first (with zeros when complete), then anything counted outside it.
        keys = list(axis) if complete else [k for k in axis if counts[k]]
        return {k: counts[k] for k in keys} | {k: v for k, v in counts.items() if k not in keys}

    tax = taxonomy or taxonomy_index()
    return Coverage(
        total=total,
        split=ordered(split, SPLITS),
        l1=ordered(l1, (l1_key(s, n) for s, n in tax.l1s())),
        l2=ordered(l2, (d.id for d in tax.domains)),
        capability=ordered(caps, CAPABILITY_IDS),
        atom=ordered(atom, ATOM_IDS),
        primary=ordered(primary, ATOM_IDS),
    )


def distribution(counts: Mapping[str, float]) -> dict[str, float]:
    """Counts normalised to sum to 1; negative counts or an all-zero mapping are errors."""
    negative = {k: v for k, v in counts.items() if v < 0}
    if negative:
        raise ValueError(f"counts must be non-negative, got {negative}")
    total = float(sum(counts.values()))
    if total <= 0:
        raise ValueError("cannot normalise counts that sum to zero; there is nothing to distribute")
    return {k: v / total for k, v in counts.items()}


def kl_divergence(p: Mapping[str, float], q: Mapping[str, float], *, epsilon: float = 1e-6) -> float:
    """KL(p || q) in nats over the union of the two key sets (e.g. L1 keys 'toc/Finance').

    Smoothing, stated because KL is infinite wherever p has mass and q has none: both inputs are
    first normalised, a key missing from one side counts as mass 0 there, then `epsilon` is added to
    every key's mass on both sides and each side is renormalised. The result is finite for any
    epsilon > 0; with epsilon = 0 it is the exact KL (infinite when q lacks mass that p has). Pass
    counts or probabilities; both are normalised.
    """
    if epsilon < 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon}")
    keys = sorted(set(p) | set(q))
    pn, qn = distribution(p), distribution(q)
    ps = [pn.get(k, 0.0) + epsilon for k in keys]
    qs = [qn.get(k, 0.0) + epsilon for k in keys]
    p_total, q_total = sum(ps), sum(qs)
    result = 0.0
    for pk, qk in zip(ps, qs, strict=True):
        pk, qk = pk / p_total, qk / q_total
        if pk == 0.0:
            continue
        if qk == 0.0:
            return math.inf
        result += pk * math.log(pk / qk)
    return result
