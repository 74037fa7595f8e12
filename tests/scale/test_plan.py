"""The scale plan: quotas add up, every domain gets environments, shard ids decide resumption."""

from __future__ import annotations

import pytest

from agentomnia.scale.plan import (
    PAPER_ENVIRONMENTS,
    PAPER_TASKS,
    ScalePlan,
    domain_quotas,
    per_item,
    shard_plan,
)
from agentomnia.taxonomy import load_taxonomy


def test_the_paper_plan_spreads_over_every_l2_domain_and_its_shards_add_up() -> None:
    taxonomy = load_taxonomy()
    plan = ScalePlan.paper()
    assert plan.environments == PAPER_ENVIRONMENTS and plan.dag_standard == PAPER_TASKS["dag_standard"]
    quotas = domain_quotas(plan, taxonomy)
    assert len(quotas) == 354 and {q.environments for q in quotas} == {14, 15}
    shards = shard_plan(plan, taxonomy)
    assert sum(s.environments for s in shards) == PAPER_ENVIRONMENTS
    for kind, total in PAPER_TASKS.items():
        assert sum(getattr(s, kind) for s in shards) == total, kind
    assert max(s.environments for s in shards) <= plan.shard_environments
    assert len({s.id for s in shards}) == len(shards)


def test_smaller_plans_keep_the_papers_proportions() -> None:
    plan = ScalePlan.for_environments(500)
    assert plan.dag_standard == round(43_851 * 500 / 5018) and plan.solver == round(4_302 * 500 / 5018)
    assert plan.tasks == sum(round(v * 500 / 5018) for v in PAPER_TASKS.values())
    quotas = domain_quotas(plan, load_taxonomy())
    assert sum(q.environments for q in quotas) == 500 and {q.environments for q in quotas} == {1, 2}
    with pytest.raises(ValueError, match="at least one environment"):
        ScalePlan.for_environments(0)


def test_shard_ids_are_stable_and_change_with_what_decides_the_output() -> None:
    taxonomy = load_taxonomy()
    a = shard_plan(ScalePlan.for_environments(120, shard_environments=40), taxonomy)
    b = shard_plan(ScalePlan.for_environments(120, shard_environments=40), taxonomy)
    c = shard_plan(ScalePlan.for_environments(120, shard_environments=40, seed=1), taxonomy)
    assert [s.id for s in a] == [s.id for s in b]
    assert not {s.id for s in a} & {s.id for s in c}


def test_per_item_spreads_a_total_evenly() -> None:
    assert per_item(10, 4) == [2, 3, 2, 3] and sum(per_item(43_851, 5018)) == 43_851
    assert per_item(3, 0) == []
