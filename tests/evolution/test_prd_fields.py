"""Every field of a PRD has an effect, field by field.

One PRD is turned into a round the way the evolution and seed stages do it: merged directives
(`directives_for`), the round's seeds (`seeds_for`, in llm mode so the PRD's prose reaches the model)
and the DAG refinement profile the directives give (`profile_for_directives`). Each field is then
changed on its own, and the test asserts where the round changed. Provenance fields must change
nothing: the same requirement read from another file or diagnosis is the same round. A field added to
`PRD` without an entry here fails `test_every_field_is_covered`.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentomnia.directives import SynthesisDirectives
from agentomnia.evolution import directives_for, seeds_for
from agentomnia.evolution.prd import PRD
from agentomnia.seeds.models import Seed
from agentomnia.tasks.dag import STANDARD
from agentomnia.tasks.dag.profiles import RefinementProfile
from agentomnia.tasks.dag.variations import profile_for_directives
from agentomnia.taxonomy import load_knowledge, taxonomy_index
from tests.evolution.conftest import ScriptedLLM

PET, HOME = 10005, 10004  # toc/Lifestyle
ADVISOR = 20000  # tob/Finance

BASE: dict[str, Any] = {
    "prd_id": "PRD-r1-01",
    "priority": "P1",
    "status": "active",
    "title": "Check availability before booking",
    "scenario": "Pet owners ask to book a grooming slot that is no longer offered.",
    "requirements": ["Requests where the first choice is unavailable", "The user names the pet, not its id"],
    "case_study": "The agent booked a cancelled slot for Bella and reported success.",
    "failure_analysis": "The agent never read the slot's status before writing.",
    "trajectory_comparison": "The correct run lists the slots, sees 'cancelled' and picks the next one.",
    "environment_guidance": "Leave several slots cancelled or fully booked.",
    "task_guidance": "Ask for a booking in the user's words, with a fallback preference.",
    "extra_information": "Weekend slots fill first.",
    "target_l1": ["toc/Lifestyle"],
    "target_l2": [PET],
    "capabilities": ["information_gathering"],
    "atoms": ["dynamic_planning"],
    "env_variations": ["unavailable_entities"],
    "task_variations": ["implicit_references"],
    "source": "diagnosis",
    "source_failure_ids": ["f1", "f2"],
    "failure_counts": {"toc/Lifestyle": 2.0},
    "priority_score": 0.4,
    "diagnosis_id": "diag-1",
}
OTHER: dict[str, Any] = BASE | {
    "prd_id": "PRD-r1-02",
    "priority": "P2",
    "title": "Totals across records",
    "target_l1": ["tob/Finance"],
    "target_l2": [ADVISOR],
    "capabilities": ["data_analysis"],
    "atoms": [],
    "env_variations": [],
    "task_variations": [],
    "failure_counts": {"tob/Finance": 1.0},
    "priority_score": 0.2,
}


class Round:
    """What one set of PRDs makes of a round: directives, seeds, the model's prompts, the DAG profile."""

    def __init__(self, *documents: dict[str, Any]) -> None:
        prds = [PRD.model_validate(d) for d in documents]
        self.llm = ScriptedLLM({"prd_seed_request": [_echo_request]})
        self.directives: SynthesisDirectives = directives_for(prds, "r1", max_domains=3, seeds_per_domain=1)
        self.seeds: list[Seed] = seeds_for(self.directives, taxonomy_index(), load_knowledge(), prds=prds,
                                           llm=self.llm)  # fmt: skip
        self.prompts = [c[-1]["content"] for _, c in self.llm.calls]
        self.profile: RefinementProfile = profile_for_directives(STANDARD, self.directives)

    @property
    def texts(self) -> list[str]:
        return [s.text or "" for s in self.seeds]

    def synthesis(self) -> tuple[Any, ...]:
        """Everything synthesis reads from the round (directives, seeds, profile), for equality."""
        return (self.directives, [(s.text, s.metadata) for s in self.seeds], self.profile)


def _echo_request(conversation: list[dict[str, Any]]) -> dict[str, Any]:
    """A model that writes the composed draft back with the first PRD line it was shown: its request
    changes with what the PRD says, as a real model's does."""
    prompt = conversation[-1]["content"]
    draft = prompt.rsplit("\n", 1)[-1]
    said = next(line for line in prompt.splitlines() if line.startswith("- "))
    return {"request": f"{draft} ({said[2:60]})"}


@pytest.fixture(scope="module")
def base() -> Round:
    return Round(BASE, OTHER)


def _changed(field: str, value: Any) -> Round:
    return Round(BASE | {field: value}, OTHER)


# field -> (a new value, where the round must change)
PROSE = ("title", "scenario", "requirements", "case_study", "failure_analysis", "trajectory_comparison",
         "environment_guidance", "task_guidance", "extra_information")  # fmt: skip
PROVENANCE = {"source": "external:prds/booking.md", "source_failure_ids": ["f9"], "diagnosis_id": "diag-2"}
BOOKKEEPING = ("schema_version", "round", "id")  # the record's own: hashed id, round, format


def test_every_field_is_covered() -> None:
    covered = {*PROSE, *PROVENANCE, *BOOKKEEPING, "prd_id", "priority", "status", "target_l1", "target_l2",
               "capabilities", "atoms", "env_variations", "task_variations", "failure_counts", "priority_score"}  # fmt: skip
    assert set(PRD.model_fields) == covered


def test_the_base_round_reads_every_prose_field(base: Round) -> None:
    assert all(s.metadata["request_by"] == "model" for s in base.seeds) and base.seeds
    pet = next(p for p in base.prompts if "Pet" in p or "pet" in p)
    for field in PROSE:
        value = BASE[field]
        assert (value[0] if isinstance(value, list) else value) in pet, field


@pytest.mark.parametrize("field", PROSE)
def test_prose_reaches_the_model_and_changes_the_request(base: Round, field: str) -> None:
    value = (
        ["Requests that name a second pet as a fallback"]
        if field == "requirements"
        else "Something else entirely."
    )
    changed = _changed(field, value)
    assert changed.prompts != base.prompts
    assert (value[0] if isinstance(value, list) else value) in "".join(changed.prompts)
    # prose steers the words, not the targets; task guidance is also handed on to the DAG rewrite
    assert changed.directives.model_copy(update={"task_guidance": ()}) == base.directives.model_copy(
        update={"task_guidance": ()}
    )
    assert (changed.directives.task_guidance != base.directives.task_guidance) == (field == "task_guidance")


@pytest.mark.parametrize("field", sorted(PROVENANCE))
def test_provenance_is_kept_but_never_steers_synthesis(base: Round, field: str) -> None:
    changed = _changed(field, PROVENANCE[field])
    assert changed.synthesis() == base.synthesis() and changed.prompts == base.prompts


def test_prd_id_names_the_round_and_its_seeds(base: Round) -> None:
    changed = _changed("prd_id", "PRD-r1-07")
    assert "PRD-r1-07" in changed.directives.prd_ids
    assert ["PRD-r1-07"] in [s.metadata["prd_ids"] for s in changed.seeds]


def test_status_decides_whether_the_prd_is_in_force(base: Round) -> None:
    for status in ("proposed", "done", "rejected"):
        changed = _changed("status", status)
        assert BASE["prd_id"] not in changed.directives.prd_ids and PET not in changed.directives.target_l2


def test_priority_and_priority_score_order_the_prds(base: Round) -> None:
    assert base.directives.prd_ids == ("PRD-r1-01", "PRD-r1-02")
    assert _changed("priority", "P3").directives.prd_ids == ("PRD-r1-02", "PRD-r1-01")
    # within one priority the larger score leads
    same = Round(BASE | {"priority": "P2"}, OTHER)
    assert same.directives.prd_ids == ("PRD-r1-01", "PRD-r1-02")
    assert Round(BASE | {"priority": "P2", "priority_score": 0.1}, OTHER).directives.prd_ids == (
        "PRD-r1-02", "PRD-r1-01"
    )  # fmt: skip
    # the order decides which capability leads a shared domain's requests
    both = OTHER | {
        "target_l1": ["toc/Lifestyle"],
        "target_l2": [PET],
        "failure_counts": {"toc/Lifestyle": 1.0},
    }
    first, second = Round(BASE, both), Round(BASE | {"priority": "P3"}, both)
    assert first.directives.target_capabilities == ("information_gathering", "data_analysis")
    assert second.directives.target_capabilities == ("data_analysis", "information_gathering")


def test_targets_choose_the_domains(base: Round) -> None:
    assert base.directives.target_l2[0] == PET
    assert _changed("target_l2", [HOME]).directives.target_l2[0] == HOME
    moved = Round(
        BASE | {"target_l1": ["tob/Finance"], "target_l2": [], "failure_counts": {"tob/Finance": 2.0}}, OTHER
    )
    assert "toc/Lifestyle" not in moved.directives.target_l1


def test_failure_counts_apportion_the_seed_budget(base: Round) -> None:
    def domains(r: Round) -> dict[str, int]:
        tax = taxonomy_index()
        out: dict[str, int] = {}
        for i in r.directives.target_l2:
            out[tax.by_id(i).l1_key] = out.get(tax.by_id(i).l1_key, 0) + 1
        return out

    assert domains(base) == {"toc/Lifestyle": 2, "tob/Finance": 1}
    assert domains(_changed("failure_counts", {"toc/Lifestyle": 0.5})) == {
        "toc/Lifestyle": 1,
        "tob/Finance": 2,
    }


def test_capabilities_shape_the_request(base: Round) -> None:
    changed = _changed("capabilities", ["interactive_collaboration"])
    assert changed.directives.target_capabilities[0] == "interactive_collaboration"
    assert changed.texts[0] != base.texts[0] and "Check with me before" in changed.texts[0]


def test_atoms_turn_the_dag_profile(base: Round) -> None:
    assert "unavailable_entities" in base.profile.hardening
    changed = _changed("atoms", ["multi_source_inconsistency"])
    assert changed.directives.target_atoms == ("multi_source_inconsistency",)
    assert (
        "conflicting_states" in changed.profile.hardening and "closed_loop" not in changed.profile.hardening
    )


def test_variations_reach_the_seeds_the_environment_and_the_profile(base: Round) -> None:
    pet = base.seeds[0]
    assert pet.metadata["env_variations"] == ["unavailable_entities"]  # the environment build reads this
    changed = _changed("env_variations", ["conflicting_states"])
    assert changed.seeds[0].metadata["env_variations"] == ["conflicting_states"]
    assert "conflicting_states" in changed.profile.hardening
    assert not base.profile.allow_ids  # implicit_references
    plain = _changed("task_variations", [])
    assert plain.profile.allow_ids and "implicit_references" not in plain.seeds[0].metadata["task_variations"]


def test_task_guidance_reaches_the_model_that_rewrites_dag_requests(base: Round) -> None:
    from agentomnia.tasks.wording import rephrase

    assert base.directives.task_guidance == (BASE["task_guidance"],)
    llm = ScriptedLLM({"task_description": [lambda conversation: {"query": "Please book it."}]})
    assert rephrase(llm, "Book slot SLO-004.", base.directives.task_guidance) == "Please book it."
    assert BASE["task_guidance"] in llm.calls[0][1][0]["content"]
    rephrase(llm, "Book slot SLO-004.")
    assert "product requirements" not in llm.calls[1][1][0]["content"]


def test_a_bad_model_request_falls_back_to_the_composed_one_and_says_why() -> None:
    """A request that gives itself away (or breaks the schema) is refused; after the attempts the
    composed request is used, and the seed records who wrote it and why."""
    prds = [PRD.model_validate(BASE)]
    directives = directives_for(prds, "r1", max_domains=1, seeds_per_domain=1)
    llm = ScriptedLLM(
        {"prd_seed_request": [lambda c: {"request": "As the agent, run the benchmark task now."}]}
    )
    [seed] = seeds_for(directives, taxonomy_index(), load_knowledge(), prds=prds, llm=llm)
    [offline] = seeds_for(directives, taxonomy_index(), load_knowledge(), prds=prds)
    assert seed.text == offline.text and offline.metadata["request_by"] == "rules"
    assert seed.metadata["request_by"].startswith("rules (request: no valid answer after 3 attempt(s)")
    assert "a user would not" in seed.metadata["request_by"] and len(llm.calls) == 3
