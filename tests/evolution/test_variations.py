"""PRD variations: each one turns the refinement dial it names, and a PRD round's DAG tasks on the
parcel environment still pass their own oracle, carry their round's labels and are harder."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from agentomnia.directives import ENV_VARIATIONS, TASK_VARIATIONS, SynthesisDirectives
from agentomnia.envs.build import BuiltEnv
from agentomnia.rejection import Rejection
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.dag import CHALLENGE, STANDARD, check_task, synthesize_dag_tasks
from agentomnia.tasks.dag.variations import (
    ENV_OPERATORS,
    TASK_OPERATORS,
    profile_for_directives,
    requested_variations,
    variation_metadata,
    variations_in_effect,
)
from agentomnia.tasks.hardening import HardeningResult
from agentomnia.tasks.models import Task

PRD = SynthesisDirectives(
    round="r1",
    prd_ids=("prd-claims-1", "prd-claims-2"),
    target_l1=("toc/Logistics",),
    env_variations=tuple(ENV_VARIATIONS),
    task_variations=tuple(TASK_VARIATIONS),
)
Synth = tuple[list[Task], list[Rejection]]


def _directives(env: tuple[str, ...] = (), task: tuple[str, ...] = ()) -> SynthesisDirectives:
    return SynthesisDirectives(round="r1", env_variations=env, task_variations=task)


# -- the profile mapping ------------------------------------------------------------------------


def test_no_directives_or_no_variations_leave_the_profile_as_it_is() -> None:
    for profile in (STANDARD, CHALLENGE):
        assert profile_for_directives(profile, None) is profile
        assert profile_for_directives(profile, _directives()) is profile
        targets_only = SynthesisDirectives(round="r1", prd_ids=("p",), target_l2=(20096,))
        assert profile_for_directives(profile, targets_only) is profile


def test_every_named_variation_has_a_mapping() -> None:
    assert set(ENV_OPERATORS) == set(ENV_VARIATIONS)
    assert set(TASK_OPERATORS) == set(TASK_VARIATIONS)


def test_dependency_depth_lengthens_chains_and_adds_a_chain_to_challenge() -> None:
    deep = _directives(task=("dependency_depth",))
    standard = profile_for_directives(STANDARD, deep)
    assert standard.chain_len == (3, 4) and standard.chains == STANDARD.chains
    challenge = profile_for_directives(CHALLENGE, deep)
    assert challenge.chain_len == (3, 5) and challenge.chains == (2, 4)
    assert standard.variant == "dag_standard" and challenge.variant == "dag_challenge"


def test_implicit_references_forbid_ids_and_data_transformations_add_stacked_virtual_nodes() -> None:
    implicit = profile_for_directives(STANDARD, _directives(task=("implicit_references",)))
    assert implicit.allow_ids is False and implicit.indirect is True
    assert implicit.model_copy(update={"allow_ids": True, "indirect": False}) == STANDARD
    data = profile_for_directives(STANDARD, _directives(task=("data_transformations",)))
    assert data.virtual == STANDARD.virtual + 1 and data.stack_virtual is True
    assert data.hardening == (*STANDARD.hardening, "aggregatable_history")


def test_env_variations_append_their_operators_once_after_the_profiles_own() -> None:
    all_env = _directives(env=("conflicting_states", "unavailable_entities", "distractor_injection"))
    standard = profile_for_directives(STANDARD, all_env)
    assert standard.hardening == (
        "mutable_objects",
        "conflicting_states",
        "unavailable_entities",
        "distractor_injection",
        "multi_candidate",
    )
    # Challenge already injects distractors and lookalikes: asking for them again changes nothing
    assert profile_for_directives(CHALLENGE, _directives(env=("distractor_injection",))) is CHALLENGE


def test_an_unknown_variation_is_refused_with_the_known_names() -> None:
    with pytest.raises(ValueError, match=r"unknown variations \['shuffle_tools'\].*dependency_depth"):
        profile_for_directives(STANDARD, _directives(task=("shuffle_tools",)))


def test_an_env_variation_is_in_effect_only_where_one_of_its_operators_applied() -> None:
    directives = _directives(env=("distractor_injection", "conflicting_states"), task=("dependency_depth",))
    results = [
        HardeningResult(state={}, operator="multi_candidate", applied=True),
        HardeningResult(state={}, operator="conflicting_states", applied=False),
    ]
    assert requested_variations(directives) == (
        "distractor_injection",
        "conflicting_states",
        "dependency_depth",
    )
    assert variations_in_effect(directives, results) == ["distractor_injection", "dependency_depth"]
    labels = variation_metadata(directives, results)
    assert labels["round"] == "r1" and labels["variations_requested"] == list(
        requested_variations(directives)
    )
    assert variation_metadata(None, results) == {}


# -- a PRD round's DAG tasks on the parcel environment ------------------------------------------


@pytest.fixture(scope="module")
def box(sandbox: Sandbox) -> Sandbox:
    return sandbox


@pytest.fixture(scope="module")
def base(parcel_dir: Path, box: Sandbox) -> Synth:
    return synthesize_dag_tasks(parcel_dir, box, variant="dag-standard", n=4, seed=0)


@pytest.fixture(scope="module")
def prd(parcel_dir: Path, box: Sandbox) -> Synth:
    return synthesize_dag_tasks(parcel_dir, box, variant="dag-standard", n=4, seed=0, directives=PRD)


def _mean_calls(tasks: list[Task]) -> float:
    return statistics.mean(len(t.reference_calls) for t in tasks)


def _mean_longest_chain(tasks: list[Task]) -> float:
    return statistics.mean(max(t.metadata["chain_lengths"]) for t in tasks)


def test_prd_tasks_pass_their_own_oracle_in_a_fresh_session(
    prd: Synth, box: Sandbox, parcel_dir: Path, parcel_env: BuiltEnv
) -> None:
    tasks, rejected = prd
    assert len(tasks) == 4, [r.reason for r in rejected][:5]
    for task in tasks:
        result = check_task(task, box, Bundle.load(parcel_dir), parcel_env.spec)
        assert result.passed, result
        assert result.oracle_pass and result.empty_fail


def test_prd_tasks_carry_their_round_and_variations_and_base_tasks_do_not(base: Synth, prd: Synth) -> None:
    for task in prd[0]:
        assert task.metadata["round"] == "r1" and task.metadata["prd_ids"] == list(PRD.prd_ids)
        assert set(TASK_VARIATIONS) <= set(task.metadata["variations"])
        assert set(task.metadata["variations"]) <= set(task.metadata["variations_requested"])
    assert all("variations" not in t.metadata and "prd_ids" not in t.metadata for t in base[0])


def test_prd_tasks_are_longer_describe_records_without_ids_and_show_the_new_operators(
    base: Synth, prd: Synth
) -> None:
    assert _mean_calls(prd[0]) > _mean_calls(base[0]), (_mean_calls(base[0]), _mean_calls(prd[0]))
    assert min(min(t.metadata["chain_lengths"]) for t in prd[0]) >= 3
    assert all("ambiguous_goal" in t.coordinate.atoms for t in prd[0])  # implicit references
    applied = {h["operator"] for t in prd[0] for h in t.internal_spec["hardening"] if h["applied"]}
    assert {"unavailable_entities", "conflicting_states", "distractor_injection"} <= applied
    notes = " ".join(n for t in prd[0] for h in t.internal_spec["hardening"] for n in h["notes"])
    assert "out of service" in notes and "instead of" in notes


def test_no_prd_task_writes_to_a_record_it_took_out_of_service(prd: Synth) -> None:
    for task in prd[0]:
        dead = {
            k
            for h in task.internal_spec["hardening"]
            if h["operator"] == "unavailable_entities" and h["applied"]
            for k in h["facts"]["unavailable"]
        }
        for call in task.reference_calls:
            if not call.tool.startswith(("get_", "list_", "find_", "search_", "track_", "summarize_")):
                assert not dead & {v for v in call.args.values() if isinstance(v, str)}, call


@pytest.mark.slow
def test_challenge_prd_tasks_stay_verified_and_grow_longer(
    parcel_dir: Path, box: Sandbox, parcel_env: BuiltEnv
) -> None:
    plain, _ = synthesize_dag_tasks(parcel_dir, box, variant="dag-challenge", n=3, seed=0)
    harder, rejected = synthesize_dag_tasks(
        parcel_dir, box, variant="dag-challenge", n=3, seed=0, directives=PRD
    )
    assert len(harder) == 3, [r.reason for r in rejected][:5]
    # the dependency-depth dial lengthens the chains a task is built from (a task may hold fewer of
    # them, so its total number of calls is no measure)
    assert _mean_longest_chain(harder) > _mean_longest_chain(plain)
    bundle = Bundle.load(parcel_dir)
    assert all(check_task(t, box, bundle, parcel_env.spec).passed for t in harder)
    assert max(n for t in harder for n in t.metadata["chain_lengths"]) > CHALLENGE.chain_len[1]


def test_target_atoms_add_the_operators_and_dials_of_their_levers() -> None:
    """A PRD's atoms are read: each adds the hardening operators whose lever belongs to it, and an
    atom whose lever is the wording sets that dial; an atom with neither changes nothing."""
    from agentomnia.tasks.dag.variations import ATOM_OPERATORS

    def atoms(*ids: str) -> SynthesisDirectives:
        return SynthesisDirectives(round="r1", prd_ids=("p",), target_atoms=ids)

    planning = profile_for_directives(STANDARD, atoms("dynamic_planning"))
    assert {"unavailable_entities", "closed_loop"} <= set(planning.hardening) - set(STANDARD.hardening)
    assert planning.allow_ids and not planning.indirect  # only the state side moved
    conflicts = profile_for_directives(STANDARD, atoms("multi_source_inconsistency"))
    assert set(conflicts.hardening) - set(STANDARD.hardening) == {"conflicting_states"}
    ambiguous = profile_for_directives(STANDARD, atoms("ambiguous_goal"))
    assert ambiguous.indirect and "multi_candidate" in ambiguous.hardening
    grounding = profile_for_directives(STANDARD, atoms("tool_parameter_grounding"))
    assert not grounding.allow_ids and grounding.hardening == STANDARD.hardening
    assert profile_for_directives(STANDARD, atoms("risk_clarification")) is STANDARD
    assert set(ATOM_OPERATORS["structured_information"]) == {
        "boundary_tie", "cross_entity_evidence", "aggregatable_history"
    }  # fmt: skip
