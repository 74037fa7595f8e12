"""Continual post-training across rounds (§6.3): a round's SFT starts from the previous round's
checkpoint and replays earlier rows; a round with nothing new leaves the agent as it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dagster import AssetKey, instance_for_test, materialize

from agentomnia.omniabench.learning import LearningSettings, Probe, measure
from trainers.demo import demo_rows, save_sft_dataset

pytestmark = pytest.mark.slow


def _sft(round_key: str, rounds: list[str], tags: dict[str, str] | None = None) -> Any:
    from agentomnia_assets.definitions import defs

    with instance_for_test() as instance:
        instance.add_dynamic_partitions("rounds", rounds)
        result = materialize(
            [*defs.assets],  # type: ignore[list-item]
            selection=[AssetKey("sft_checkpoint")],
            partition_key=round_key,
            instance=instance,
            resources=defs.resources,
            tags=tags or {},
            run_config={"ops": {"sft_checkpoint": {"config": {"max_steps": 3}}}},
        )
    assert result.success
    [event] = result.get_asset_materialization_events()
    return {k: getattr(v, "value", v) for k, v in event.materialization.metadata.items()}


def _probes(rows: list[dict[str, Any]]) -> list[Probe]:
    """The first call of each demo row, as a reference step."""
    out = []
    for n, row in enumerate(rows):
        messages = row["messages"]
        at = next(i for i, m in enumerate(messages) if m.get("tool_calls"))
        call = messages[at]["tool_calls"][0]["function"]
        arguments = (
            call["arguments"] if isinstance(call["arguments"], dict) else json.loads(call["arguments"])
        )
        out.append(Probe(task_id=f"t{n}", route="dag", step=0, messages=tuple(messages[:at]),
                         tools=tuple(row["tools"]), tool=call["name"], arguments=arguments))  # fmt: skip
    return out


def test_rounds_continue_from_the_previous_checkpoint_and_an_empty_round_changes_nothing(home: Path) -> None:
    sft_rows, _ = demo_rows()
    datasets = home / "datasets" / "sft"
    save_sft_dataset(sft_rows[:4], datasets / "r0" / "hf")

    first = _sft("r0", ["r0"])
    assert first["trained"] is True and first["started_from"].startswith("tiny offline")
    assert first["replayed_rows"] == 0  # nothing earlier to replay
    start, r0 = home / "checkpoints" / "start" / "r0", home / "checkpoints" / "sft" / "r0"
    assert (start / "config.json").exists()  # the untrained model, kept to measure learning against

    # r1 has no new rows: the agent goes on unchanged, byte for byte, and measures the same
    second = _sft("r1", ["r0", "r1"], {"agentomnia/parent_round": "r0"})
    r1 = home / "checkpoints" / "sft" / "r1"
    assert second["trained"] is False and second["started_from"] == str(r0)
    assert (r1 / "model.safetensors").read_bytes() == (r0 / "model.safetensors").read_bytes()
    probes = _probes(sft_rows)
    settings = LearningSettings(samples=1, max_new_tokens=16)
    before = measure(r0, probes, settings, policy="r0")
    after = measure(r1, probes, settings, policy="r1")
    assert [r.model_dump(exclude={"policy", "checkpoint"}) for r in after] == [
        r.model_dump(exclude={"policy", "checkpoint"}) for r in before
    ]

    # r2 has new rows: it trains from r1's checkpoint (its tokenizer, not a new one) and replays r0's rows
    save_sft_dataset(sft_rows[4:], datasets / "r2" / "hf")
    third = _sft("r2", ["r0", "r1", "r2"])
    r2 = home / "checkpoints" / "sft" / "r2"
    assert third["trained"] is True and third["started_from"] == str(r1)
    assert third["new_rows"] == len(sft_rows[4:]) and third["replayed_rows"] >= 1
    assert (r2 / "tokenizer.json").read_text() == (r0 / "tokenizer.json").read_text()
    assert (r2 / "model.safetensors").read_bytes() != (r1 / "model.safetensors").read_bytes()
    origin = json.loads((r2 / "origin.json").read_text())
    assert origin == {"started_from": str(r1), "from_round": "r1", "new_rows": third["new_rows"],
                      "replayed_rows": third["replayed_rows"], "trained": True}  # fmt: skip
