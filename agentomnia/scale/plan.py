"""How a corpus of a given size is cut into shards.

The paper's corpus (5,018 environments, 255,375 tools, 52,361 tasks: 43,851 DAG-Standard, 2,004
DAG-Challenge, 2,204 program, 4,302 solver) is the `paper` plan; `for_environments(n)` scales
those proportions to any size. Environments are spread over every level-2 domain (as evenly as
the count allows, the remainder going to domains in an order fixed by their ids), consecutive
domains are grouped into shards of about `shard_environments`, and each shard gets its share of
every task kind by cumulative rounding, so the shard quotas add up exactly to the plan's totals.

A shard's id is the content hash of everything that decides its output, so a rerun of the same
plan finds finished shards by id and skips them, and a changed plan never reuses stale ones.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from agentomnia.records import content_hash
from agentomnia.tasks.families import SOLVER, family_of
from agentomnia.taxonomy import Taxonomy

# Bump when shard output changes for the same plan, so reruns do not reuse older shards.
SHARD_FORMAT = 1

PAPER_ENVIRONMENTS = 5018
PAPER_TASKS = {"dag_standard": 43_851, "dag_challenge": 2_004, "program": 2_204, "solver": 4_302}


class ScalePlan(BaseModel):
    """What a scale run makes, and how it cuts the work."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    environments: int = Field(ge=1)
    dag_standard: int = Field(ge=0)
    dag_challenge: int = Field(ge=0)
    program: int = Field(ge=0)
    solver: int = Field(ge=0)
    shard_environments: int = Field(default=60, ge=1, description="environments per shard, about")
    oversample: float = Field(
        default=1.3,
        ge=1.0,
        description="composed seeds per environment wanted (selection and builds lose some)",
    )
    seed: int = 0

    @classmethod
    def paper(cls, **overrides: object) -> ScalePlan:
        return cls.for_environments(PAPER_ENVIRONMENTS, **overrides)

    @classmethod
    def for_environments(cls, n: int, **overrides: object) -> ScalePlan:
        """`n` environments and the paper's tasks per environment of every kind."""
        if n < 1:
            raise ValueError(f"a scale run needs at least one environment (got {n})")
        tasks = {k: round(v * n / PAPER_ENVIRONMENTS) for k, v in PAPER_TASKS.items()}
        return cls.model_validate({"environments": n, **tasks, **overrides})

    @property
    def tasks(self) -> int:
        return self.dag_standard + self.dag_challenge + self.program + self.solver


class DomainQuota(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    taxonomy_id: int
    environments: int


class ShardSpec(BaseModel):
    """One unit of work: some domains' environments and the shard's share of every task kind."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int
    domains: tuple[DomainQuota, ...]
    dag_standard: int
    dag_challenge: int
    program: int
    solver: int
    oversample: float
    seed: int

    @property
    def environments(self) -> int:
        return sum(d.environments for d in self.domains)

    @property
    def id(self) -> str:
        return f"shard-{self.index:04d}-{content_hash([SHARD_FORMAT, self.model_dump(mode='json')], 12)}"


def _cumulative(total: int, weights: Sequence[int]) -> list[int]:
    """`total` split in proportion to `weights`, rounding the running sum so the parts add up."""
    whole = sum(weights)
    if whole == 0:
        return [0] * len(weights)
    out, running, given = [], 0, 0
    for w in weights:
        running += w
        upto = (total * running) // whole
        out.append(upto - given)
        given = upto
    return out


def domain_quotas(plan: ScalePlan, taxonomy: Taxonomy) -> list[DomainQuota]:
    """Environments per level-2 domain: even, the remainder to domains in a fixed shuffled order."""
    domains = sorted(d.id for d in taxonomy.domains if d.knowledge is not None and d.knowledge.entities)
    if not domains:
        raise ValueError("the taxonomy has no domain with a knowledge entry to compose environments from")
    base, extra = divmod(plan.environments, len(domains))
    lucky = domains[:]
    random.Random(content_hash(["remainder", plan.seed], 16)).shuffle(lucky)
    bonus = set(lucky[:extra])
    return [
        DomainQuota(taxonomy_id=d, environments=base + (1 if d in bonus else 0))
        for d in domains
        if base + (1 if d in bonus else 0) > 0
    ]


def shard_plan(plan: ScalePlan, taxonomy: Taxonomy) -> list[ShardSpec]:
    """The shards of `plan`, in order; their environment and task quotas add up to the plan's."""
    quotas = domain_quotas(plan, taxonomy)
    groups: list[list[DomainQuota]] = [[]]
    for q in quotas:
        if groups[-1] and sum(x.environments for x in groups[-1]) + q.environments > plan.shard_environments:
            groups.append([])
        groups[-1].append(q)
    sizes = [sum(q.environments for q in g) for g in groups]
    split = {
        kind: _cumulative(getattr(plan, kind), sizes)
        for kind in ("dag_standard", "dag_challenge", "program", "solver")
    }
    return [
        ShardSpec(
            index=i,
            domains=tuple(g),
            dag_standard=split["dag_standard"][i],
            dag_challenge=split["dag_challenge"][i],
            program=split["program"][i],
            solver=split["solver"][i],
            oversample=plan.oversample,
            seed=plan.seed,
        )
        for i, g in enumerate(groups)
    ]


def plan_kind(task_kind: str) -> str:
    """The kind a scale plan counts a task under: solver-anchored and solver-guided are both `solver`."""
    family = family_of(task_kind)
    return family.name if family is SOLVER else task_kind


def per_item(total: int, n: int) -> list[int]:
    """`total` spread over `n` items as evenly as cumulative rounding allows."""
    return _cumulative(total, [1] * n) if n else []
