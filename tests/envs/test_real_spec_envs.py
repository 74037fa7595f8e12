"""Real OpenAPI specs of real services become environments that keep every operation as the seed declares it.

The specs are read from the shared seed folder (see its README); the module is skipped without it.
Each spec is ingested, its domain inferred, and its environment built and verified once per module,
the way `agentomnia env build` does; the tests then hold each property over all of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentomnia.envs.state_space import schema_type
from agentomnia.seeds.models import Seed

SPECS = Path(__file__).resolve().parents[3] / "shared" / "seeds" / "openapi"
pytestmark = pytest.mark.skipif(not SPECS.is_dir(), reason=f"real specs not found at {SPECS}")


class Built:
    def __init__(self, seed: Seed, bundle: Path | None, data: dict[str, Any] | None, error: str = "") -> None:
        self.seed, self.bundle, self.data, self.error = seed, bundle, data, error

    def tools(self) -> dict[str, dict[str, Any]]:
        assert self.bundle is not None, self.error
        listed = json.loads((self.bundle / "tools.json").read_text())
        return {t["function"]["name"]: t["function"] for t in listed}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Built]]:
    from agentomnia.embeddings import default_embedder
    from agentomnia.envs.build import write_bundle
    from agentomnia.sandbox.sandbox import Sandbox
    from agentomnia.seeds.inference import DomainMatcher
    from agentomnia.seeds.ingest import ingest
    from agentomnia.stages import StageContext, build_candidate, candidates_stage
    from agentomnia.storage import Storage
    from agentomnia.taxonomy import load_taxonomy

    taxonomy = load_taxonomy()
    matcher = DomainMatcher(taxonomy, default_embedder())
    out: dict[str, Built] = {}
    box = Sandbox(workers=1, idle_timeout_s=0)
    home = tmp_path_factory.mktemp("home")
    try:
        for path in sorted(SPECS.glob("*.yaml")):
            result = ingest([path])
            assert not result.rejected, [r.message for r in result.rejected]
            (seed,) = result.accepted
            ctx = StageContext(seed.round)
            inferred = candidates_stage(ctx, [seed], matcher)
            if not inferred.kept:
                out[path.stem] = Built(seed, None, None, inferred.rejected[0].reason)
                continue
            made = build_candidate(ctx, inferred.kept[0], {seed.id: seed}, taxonomy, box, Storage(home))
            if not made.kept:
                out[path.stem] = Built(
                    seed, None, None, f"{made.rejected[0].stage}: {made.rejected[0].reason}"
                )
                continue
            env = made.kept[0]
            folder = write_bundle(env, home / "envs" / path.stem)
            out[path.stem] = Built(seed, folder, json.loads((folder / "verification.json").read_text()))
        yield out
    finally:
        box.close()


def test_every_real_spec_builds_and_verifies(built: dict[str, Built]) -> None:
    failed = {name: b.error for name, b in built.items() if b.bundle is None}
    assert not failed
    unverified = {name: b.data["failures"] for name, b in built.items() if b.data and not b.data["verified"]}
    assert not unverified


def test_at_least_98_percent_of_operations_are_tools_with_the_seed_name(built: dict[str, Built]) -> None:
    total = kept = 0
    for b in built.values():
        names = set(b.tools()) if b.bundle else set()
        total += len(b.seed.tools)
        kept += sum(1 for t in b.seed.tools if t.name in names)
    assert total > 300
    assert kept / total >= 0.98, f"{kept}/{total}"


def _types(schema: dict[str, Any]) -> tuple[str | None, bool]:
    return schema_type(schema)


@pytest.mark.parametrize("facet", ["names", "required", "types"])
def test_kept_tools_keep_the_seed_schema_exactly(built: dict[str, Built], facet: str) -> None:
    mismatches: list[str] = []
    checked = 0
    for name, b in built.items():
        if b.bundle is None:
            continue
        tools = b.tools()
        for op in b.seed.tools:
            if op.name not in tools:
                continue
            checked += 1
            declared = op.input_schema
            shown = tools[op.name]["parameters"]
            props, shown_props = declared.get("properties", {}), shown.get("properties", {})
            if facet == "names" and list(props) != list(shown_props):
                mismatches.append(f"{name}/{op.name}: {list(props)} != {list(shown_props)}")
            if facet == "required" and sorted(declared.get("required", [])) != sorted(
                shown.get("required", [])
            ):
                mismatches.append(f"{name}/{op.name}: required differs")
            if facet == "types":
                for p, s in props.items():
                    if _types(s) != _types(shown_props.get(p, {})) or s != shown_props.get(p):
                        mismatches.append(f"{name}/{op.name}.{p}: {s} != {shown_props.get(p)}")
    assert checked > 300
    assert not mismatches, mismatches[:5]


def test_integer_and_patterned_ids_are_kept_as_declared(built: dict[str, Built]) -> None:
    pets = built["petstore31"]
    assert pets.bundle is not None
    s0 = json.loads((pets.bundle / "s0.json").read_text())
    spec = json.loads((pets.bundle / "spec.json").read_text())
    pet = next(e for e in spec["entities"] if e["name"] == "pet")
    keys = [r[pet["key"]] for r in s0[pet["table"]].values()]
    assert keys and all(isinstance(k, int) for k in keys)
    twilio = built["twilio_messaging"]
    assert twilio.bundle is not None
    kept = {t for t in twilio.tools()}
    assert sum(1 for t in twilio.seed.tools if t.name in kept) == len(twilio.seed.tools)


def test_every_seed_operation_has_an_honest_fate(built: dict[str, Built]) -> None:
    from agentomnia.envs.build import BuiltEnv  # noqa: F401  (the record shape the counts read)

    for name, b in built.items():
        if b.data is None:
            continue
        notes = {n["candidate"]: n for n in b.data["normalization"] if n["origin"] == "seed"}
        dropped = {d["name"] for d in b.data["dropped_tools"]}
        for op in b.seed.tools:
            assert op.name in notes or op.name in dropped, f"{name}: {op.name} vanished without a record"


# Services that bring a service's worth of operations. Twilio's and Resend's are mirrored (the knowledge
# base does not know them), so their tasks are made mostly of the service's own operations. The pet
# store is matched to Pet Services and filled out with that domain's tools: its pet ids are integers
# the domain's tools take as text, and its tasks still call its own operations first.
MIRRORED = ("twilio_messaging", "resend")
FILLED_OUT = ("petstore31",)


def test_tasks_on_a_seeded_service_call_its_own_operations(built: dict[str, Built], tmp_path: Path) -> None:
    from agentomnia.sandbox.sandbox import Sandbox
    from agentomnia.tasks.families import requested_kind

    family, kind = requested_kind("dag-standard")
    calls = seeded = 0
    box = Sandbox(workers=1, idle_timeout_s=0)
    try:
        for name in (*MIRRORED, *FILLED_OUT):
            b = built[name]
            assert b.bundle is not None, b.error
            seed_ops = {t.name for t in b.seed.tools}
            n = 4 if name in MIRRORED else 8  # a filled-out service shares its tasks with the domain's tools
            made = family.synthesize(box, kind=kind, n=n, seed=0, env=b.bundle, out=tmp_path / name)
            # the generator gives every argument the type its parameter declares (an integer id as an
            # integer, a filter on a list as a list), so no candidate is lost to the schema
            refused = [r.reason for r in made.rejected if "invalid_arguments" in r.reason]
            assert not refused, f"{name}: {refused[0]}"
            assert len(made.tasks) == n, [r.reason for r in made.rejected][:5]
            own = [call.tool in seed_ops for task in made.tasks for call in task.reference_calls]
            assert sum(own) / len(own) >= 0.25, f"{name}: {sum(own)}/{len(own)} calls are the service's own"
            if name in MIRRORED:
                calls += len(own)
                seeded += sum(own)
    finally:
        box.close()
    assert calls >= 10
    assert seeded / calls >= 0.7, f"{seeded}/{calls} reference calls are the seed's operations"
