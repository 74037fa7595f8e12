"""The cheaper DAG synthesis keeps its promises: several variants in one call give what one call per
variant gives, leaving chains out of sampling only drops chains that could not run, the predicted
output a chain's first record is picked by is the environment's real output, and the scoped
invariant checks find what the full ones find."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

from agentomnia.envs.spec import EnvSpec
from agentomnia.envs.state import state_violations
from agentomnia.rejection import Rejection
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.dag import check_task, synthesize_dag_tasks, synthesize_dag_variants
from agentomnia.tasks.dag.bench import bench_dag_tasks
from agentomnia.tasks.dag.generate import Executed, Generator, Reject, chain_can_run
from agentomnia.tasks.dag.sampling import chain_pool
from agentomnia.tasks.dag.synth import EnvContext, synthesize_dag_in_worker
from agentomnia.tasks.hardening import OPERATORS, apply_all, copy_state, violations_since
from agentomnia.tasks.leakage import leakage_problems
from agentomnia.tasks.models import Task

PLAN = [("dag-standard", 4), ("dag-challenge", 2)]


@pytest.fixture(scope="module")
def together(freight_dir: Path, freight_sandbox: Sandbox) -> tuple[list[Task], list[Rejection]]:
    return synthesize_dag_variants(freight_dir, freight_sandbox, PLAN, seed=3)


@pytest.fixture(scope="module")
def context(freight_dir: Path) -> EnvContext:
    return EnvContext.load(freight_dir)


def test_one_call_for_all_variants_equals_one_call_per_variant(
    together: tuple[list[Task], list[Rejection]], freight_dir: Path, freight_sandbox: Sandbox
) -> None:
    tasks, rejected = together
    apart = [synthesize_dag_tasks(freight_dir, freight_sandbox, variant=v, n=n, seed=3) for v, n in PLAN]
    assert [t.id for t in tasks] == [t.id for kept, _ in apart for t in kept]
    assert [(r.stage, r.reason) for r in rejected] == [(r.stage, r.reason) for _, rej in apart for r in rej]
    assert {t.kind for t in tasks} == {"dag_standard", "dag_challenge"}


def test_a_worker_process_makes_the_tasks_this_process_makes(
    freight_dir: Path, freight_sandbox: Sandbox
) -> None:
    """Offline DAG synthesis on pool workers (`synthesize_dag_in_worker`, each process with its own
    sandbox, as the dag_tasks asset runs it) gives the tasks and rejections a call here gives."""
    from agentomnia.processes import start_sandbox
    from agentomnia.progress import tracked_map

    tasks, rejected = synthesize_dag_variants(freight_dir, freight_sandbox, PLAN, multi_turn=0.5)
    jobs = [(freight_dir, PLAN, None, 0.5)] * 2
    apart = tracked_map("dag_tasks", "environments", synthesize_dag_in_worker, jobs, processes=2,
                        initializer=start_sandbox, initargs=(freight_sandbox.config,))  # fmt: skip
    assert tasks and len(apart) == 2
    for kept, refused in apart:
        assert [t.model_dump() for t in kept] == [t.model_dump() for t in tasks]
        assert [(r.stage, r.reason) for r in refused] == [(r.stage, r.reason) for r in rejected]


def test_kept_tasks_pass_their_oracle_and_leak_nothing(
    together: tuple[list[Task], list[Rejection]],
    freight_sandbox: Sandbox,
    freight_bundle: Bundle,
    freight_spec: EnvSpec,
) -> None:
    for task in together[0]:
        assert check_task(task, freight_sandbox, freight_bundle, freight_spec).passed, task.id
        assert leakage_problems(task.query, freight_spec, forbid_ids=task.kind == "dag_challenge") == []


def test_chains_left_out_of_sampling_cannot_run(context: EnvContext, freight_sandbox: Sandbox) -> None:
    pool = chain_pool(context.graph, random.Random(0), min_len=2, max_len=4, walks=400)
    left_out = [c for c in pool if not chain_can_run(context.graph, c, context.ungroundable)]
    assert left_out and len(left_out) < len(pool)
    session = freight_sandbox.open(context.bundle, context.bundle.s0)
    try:
        for chain in random.Random(1).sample(left_out, min(10, len(left_out))):
            session.reset(context.bundle.s0)
            gen = Generator(context.spec, session, context.graph, random.Random(2), allow_ids=True)
            with pytest.raises(Reject):
                gen.run_chain(chain)
        for name in context.ungroundable:
            session.reset(context.bundle.s0)
            gen = Generator(context.spec, session, context.graph, random.Random(2), allow_ids=True)
            with pytest.raises(Reject):
                gen.ground(context.spec.tool(name), None)
    finally:
        session.close()


def test_predicted_outputs_are_what_the_environment_returns(
    context: EnvContext, freight_sandbox: Sandbox
) -> None:
    session = freight_sandbox.open(context.bundle, context.bundle.s0)
    checked = 0
    try:
        gen = Generator(context.spec, session, context.graph, random.Random(0), allow_ids=True)
        for tool in context.spec.tools:
            key_param = tool.binding.get("key")
            if tool.op not in ("get", "lookup", "overview") or not key_param:
                continue
            table = context.spec.entity(tool.entity).table
            for key in sorted(context.bundle.s0.get(table) or {})[:3]:
                predicted = gen._output_for(tool, key)
                actual = session.call(tool.name, {key_param: key})
                assert actual.ok, actual
                data: Any = actual.data
                if tool.op == "overview":
                    assert predicted == {"record": data["record"], "related": data["related"]}
                else:
                    assert predicted == data
                checked += 1
        # the record a chain opens on is judged by what the list after it really returns
        judged = 0
        for u in (t for t in context.spec.tools if t.op == "get"):
            for v_name in sorted(set(context.graph.successors(u.name))):
                v = context.spec.tool(v_name)
                viable = gen._leads_on(u, v, goes_on=True)
                if v.op != "list" or viable is None:
                    continue
                for key in sorted(context.bundle.s0[context.spec.entity(u.entity).table])[:4]:
                    data = session.call(u.name, {u.binding["key"]: key}).data
                    try:
                        param, value, *_ = gen._incoming(Executed(0, u, {}, {}, data, None, None), v)
                    except Reject:
                        assert not viable(key)
                        continue
                    listed = session.call(v.name, {param: value})
                    assert viable(key) == bool(listed.ok and listed.data["items"]), (u.name, v.name, key)
                    judged += 1
        assert judged >= 3
    finally:
        session.close()
    assert checked >= 3


def _broken_copies(spec: EnvSpec, s0: dict[str, Any]) -> list[dict[str, Any]]:
    """Copies of s0 with one invariant broken each way the checker knows (plus one harmless edit)."""
    out: list[dict[str, Any]] = []
    for entity in spec.entities:
        table = s0.get(entity.table) or {}
        if not table:
            continue
        key = sorted(table)[0]
        for attr in entity.attributes:
            if attr.name == entity.key:
                continue
            bad: Any = {"enum": "no-such-value", "ref": "MISSING-1", "int": "seven", "money": -5}.get(
                attr.type, 12345 if attr.type in ("str", "text", "date") else None
            )
            state = copy.deepcopy(s0)
            state[entity.table][key][attr.name] = bad
            out.append(state)
        state = copy.deepcopy(s0)
        del state[entity.table][key]  # records that pointed at it now dangle
        out.append(state)
    for rule in spec.rules:
        if rule.kind == "unique" and rule.entity:
            table = s0[spec.entity(rule.entity).table]
            if len(table) >= 2:
                a, b = sorted(table)[:2]
                state = copy.deepcopy(s0)
                for name in rule.attrs:
                    state[spec.entity(rule.entity).table][b][name] = table[a].get(name)
                out.append(state)
    harmless = copy.deepcopy(s0)
    harmless["unrelated_note"] = "not a table of the spec"
    out.append(harmless)
    return out


def test_scoped_invariant_checks_find_what_the_full_check_finds(
    freight_spec: EnvSpec, freight_bundle: Bundle
) -> None:
    s0 = dict(freight_bundle.s0)
    assert state_violations(freight_spec, s0) == []
    broken = _broken_copies(freight_spec, s0)
    assert sum(1 for b in broken if state_violations(freight_spec, b)) >= 10
    for state in broken:
        full = state_violations(freight_spec, state)
        assert violations_since(freight_spec, s0, state, start_valid=True) == full
        assert violations_since(freight_spec, s0, state, start_valid=False) == full


def test_vouched_hardening_matches_checked_hardening_and_leaves_its_input(
    freight_spec: EnvSpec, freight_bundle: Bundle
) -> None:
    s0 = dict(freight_bundle.s0)
    before = copy.deepcopy(s0)
    names = sorted(OPERATORS)
    for seed in range(12):
        pick = random.Random(seed)
        steps: list[tuple[str, dict[str, Any]]] = [(n, {}) for n in pick.sample(names, 3)]
        fast, fast_results = apply_all(freight_spec, s0, random.Random(seed), steps, valid=True)
        slow, slow_results = apply_all(freight_spec, s0, random.Random(seed), steps)
        assert fast == slow
        assert [r.model_dump() for r in fast_results] == [r.model_dump() for r in slow_results]
        assert state_violations(freight_spec, fast) == []
    assert s0 == before
    state, results = apply_all(freight_spec, s0, random.Random(0), [])
    assert state == s0 and state is not s0 and results == []


def test_copy_state_is_a_deep_copy() -> None:
    tags = ["x"]
    state: dict[str, Any] = {"t": {"A-1": {"tags": tags, "n": 1}}, "now": "2025-01-01"}
    copied = copy_state(state)
    copied["t"]["A-1"]["tags"].append("y")
    assert copied != state and tags == ["x"]


def test_bench_reports_cost_and_verifies_what_it_kept(freight_dir: Path) -> None:
    report = bench_dag_tasks([freight_dir], per_env_standard=2, per_env_challenge=1, workers=1)
    assert report["kept"] >= 2 and report["environments"] == 1
    assert report["oracle_failures"] == 0 and report["leaking"] == 0
    assert report["cpu_seconds_per_kept"] > 0 and report["verified_tasks_per_min"] > 0
    assert 0 < report["kept_share"] <= 1
    stages = report["rejected_by_stage"]
    assert sum(n for per in stages.values() for n in per.values()) == report["rejected"]
    assert sum(report["rejected_by_cause"].values()) == report["rejected"]


def test_the_bench_command_reads_a_folder_of_bundles_and_says_what_is_wrong(
    freight_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentomnia.cli import main

    folder = tmp_path / "envs"
    folder.mkdir()
    (folder / "freight").symlink_to(freight_dir, target_is_directory=True)
    (folder / "notes").mkdir()  # not a bundle: passed over
    code = main(
        ["bench", "tasks", str(folder), "--standard", "1", "--challenge", "0", "--workers", "1", "--json"]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["environments"] == 1 and report["kept"] == 1
    assert report["oracle_failures"] == 0
    assert main(["bench", "tasks", str(tmp_path / "missing")]) == 1
    assert "is not a folder of environment bundles" in capsys.readouterr().err
    assert main(["bench", "tasks", str(folder / "notes")]) == 1
    assert "holds no environment bundle" in capsys.readouterr().err
