"""What a PRD asks of the next synthesis round, in the terms the synthesis stages understand.

A PRD is written for people (scenario, requirements, case study); `SynthesisDirectives` is its
machine-readable projection: which domains and capabilities to target, and which environment and
task variations to apply. The seeds, environment and task stages read one merged directive set per
round (written by the evolution stage next to the round's artifacts) and are otherwise unchanged,
so a PRD-guided round runs through exactly the same assets as the base round.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

EnvVariation = str  # one of ENV_VARIATIONS
TaskVariation = str  # one of TASK_VARIATIONS

# Environment variations (paper §7): how an initial state is made to probe a weakness.
ENV_VARIATIONS: dict[str, str] = {
    "distractor_injection": "add records that look like the target but differ in one decisive field",
    "unavailable_entities": "make some referenced records unavailable (inactive, closed, out of stock)",
    "conflicting_states": "leave records whose fields disagree, so the agent must check before acting",
}
# Task variations: how the request itself is made harder.
TASK_VARIATIONS: dict[str, str] = {
    "dependency_depth": "longer chains of dependent calls",
    "implicit_references": "refer to records by description instead of by id",
    "data_transformations": "answers that need aggregation or arithmetic over observations",
}


class SynthesisDirectives(BaseModel):
    """One round's synthesis targets, merged from every active PRD (highest priority first)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    round: str
    prd_ids: tuple[str, ...] = ()
    target_l1: tuple[str, ...] = ()  # l1 keys, e.g. "toc/Finance" (Coordinate.l1_key)
    target_l2: tuple[int, ...] = ()  # taxonomy ids
    target_capabilities: tuple[str, ...] = ()
    target_atoms: tuple[str, ...] = ()
    env_variations: tuple[str, ...] = ()  # keys of ENV_VARIATIONS
    task_variations: tuple[str, ...] = ()  # keys of TASK_VARIATIONS
    # The PRDs' Part II task guidance, in PRD order: prose that model-driven proposers read in llm mode
    # (the DAG description rewrite); offline synthesis turns only the dials above.
    task_guidance: tuple[str, ...] = ()
    seeds_per_domain: int = Field(2, ge=1, le=50)  # new seeds to synthesize per targeted L2 domain
    weights: dict[str, float] = Field(default_factory=dict)  # l1 key -> share of the round's seeds

    @property
    def empty(self) -> bool:
        return not (self.target_l1 or self.target_l2 or self.env_variations or self.task_variations)
