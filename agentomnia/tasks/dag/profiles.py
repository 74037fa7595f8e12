"""Refinement profiles: what makes a DAG-Challenge task harder than a DAG-Standard one (step 7).

Three dials, one profile per variant:
- structural: how many chains, how long, how many scattered tools, how many virtual nodes and
  whether they stack (a check on a computed total adds a level of depth);
- state: which hardening operators shape the task's initial state (candidates, boundaries, history);
- description: whether ids may appear, and whether the phrasing is direct or indirect.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Variant = Literal["dag_standard", "dag_challenge"]


class RefinementProfile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    variant: Variant
    chains: tuple[int, int]
    chain_len: tuple[int, int]
    scattered: tuple[int, int]
    virtual: int
    stack_virtual: bool
    hardening: tuple[str, ...]
    allow_ids: bool
    indirect: bool
    max_overlap: float = 0.6


STANDARD = RefinementProfile(
    variant="dag_standard",
    chains=(1, 1),
    chain_len=(2, 3),
    scattered=(0, 1),
    virtual=1,
    stack_virtual=False,
    hardening=("mutable_objects",),
    allow_ids=True,
    indirect=False,
)
CHALLENGE = RefinementProfile(
    variant="dag_challenge",
    chains=(2, 3),
    chain_len=(3, 4),
    scattered=(1, 2),
    virtual=3,
    stack_virtual=True,
    hardening=(
        "multi_candidate",
        "distractor_injection",
        "aggregatable_history",
        "boundary_tie",
        "mutable_objects",
    ),
    allow_ids=False,
    indirect=True,
    max_overlap=0.5,
)
PROFILES: dict[str, RefinementProfile] = {"dag_standard": STANDARD, "dag_challenge": CHALLENGE}


def profile_for(variant: str) -> RefinementProfile:
    """`dag-standard`, `dag_standard`, `standard` all name the same profile."""
    key = variant.replace("-", "_")
    key = key if key.startswith("dag_") else f"dag_{key}"
    if key not in PROFILES:
        raise ValueError(f"unknown DAG variant {variant!r}; use dag-standard or dag-challenge")
    return PROFILES[key]
