"""SFT and RL datasets: format, alignment, budgets, dedup, difficulty, overlap, and a chat-template render."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentomnia.embeddings import HashingEmbedder
from agentomnia.tasks.models import Check, RubricItem, Task
from agentomnia.trajectories import (
    Trajectory,
    align_context,
    build_rl_dataset,
    build_sft_dataset,
    convergence_budget,
    noisy_policy,
    partition_tasks,
    sft_format_problems,
    validate_format,
    validate_sft_dataset,
    validated_task,
)
from agentomnia.trajectories.rl import embedding_duplicates, load_attempts, ngram_duplicates


def _qwen3_template() -> str:
    import trl

    return (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()


def _local_tokenizer() -> Any:
    """A word-level tokenizer made here, carrying the Qwen3 chat template (nothing downloaded)."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(WordLevel(vocab={"[UNK]": 0, "<|im_start|>": 1, "<|im_end|>": 2}, unk_token="[UNK]"))
    core.pre_tokenizer = Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]", eos_token="<|im_end|>")
    tok.chat_template = _qwen3_template()
    return tok


@pytest.fixture(scope="module")
def sft(guided: list[Trajectory], unguided: list[Trajectory], parcel, tmp_path_factory) -> tuple[Any, Path]:  # type: ignore[no-untyped-def]
    out = tmp_path_factory.mktemp("sft")
    report = build_sft_dataset(
        list(guided) + list(unguided), out, tools_by_env={parcel.env_id: parcel.bundle.tools}
    )
    return report, out


def test_sft_dataset_loads_and_renders_with_a_tool_aware_template(sft: tuple[Any, Path]) -> None:
    from datasets import load_from_disk

    report, out = sft
    assert report.rows > 0 and report.budgeting == "balanced"
    data = load_from_disk(str(out / "hf"))
    assert set(data.column_names) == {"messages", "tools"} and len(data) == report.rows
    row = next(r for r in data if any(m.get("tool_calls") for m in r["messages"]))
    rendered = _local_tokenizer().apply_chat_template(row["messages"], tools=row["tools"], tokenize=False)
    call = next(m for m in row["messages"] if m.get("tool_calls"))["tool_calls"][0]["function"]
    assert "<tool_call>" in rendered and f'"name": "{call["name"]}"' in rendered
    assert "<tool_response>" in rendered and "# Tools" in rendered
    assert isinstance(call["arguments"], dict)  # dict arguments, not one merged struct with null keys
    assert None not in call["arguments"].values()
    assert validate_sft_dataset(out / "hf") == [] and sft_format_problems(out / "hf") == []


def test_an_sft_dataset_no_trajectory_reached_is_empty_not_an_error(tmp_path: Path) -> None:
    """A round whose verified trajectories all fell out saves no dataset: the row check has nothing
    to refuse and says so (it used to raise FileNotFoundError and fail the round)."""
    report = build_sft_dataset([], tmp_path / "sft", tools_by_env={})
    assert report.rows == 0 and report.hf_path == ""
    assert sft_format_problems(tmp_path / "sft" / "hf") is None


def test_sft_rows_keep_only_the_final_turns_reasoning(sft: tuple[Any, Path]) -> None:
    from datasets import load_from_disk

    _, out = sft
    for row in load_from_disk(str(out / "hf")):
        assistants = [m for m in row["messages"] if m["role"] == "assistant"]
        assert assistants[-1]["content"]
        assert all(m["content"] == "" for m in assistants[:-1] if m.get("tool_calls"))


def test_sft_drops_unverified_and_writes_openai_jsonl(
    sft: tuple[Any, Path], guided: list[Trajectory], unguided: list[Trajectory]
) -> None:
    report, out = sft
    unverified = sum(1 for t in list(guided) + list(unguided) if not t.verified)
    assert report.dropped.get("not verified") == unverified > 0
    lines = (out / "openai.jsonl").read_text().splitlines()
    assert len(lines) == report.rows
    for line in lines:
        row = json.loads(line)
        for m in row["messages"]:
            for c in m.get("tool_calls", []):
                assert isinstance(json.loads(c["function"]["arguments"]), dict)
            if m["role"] == "tool":
                assert set(m) == {"role", "tool_call_id", "content"}


def test_format_validation_rejects_bad_calls(guided: list[Trajectory], parcel, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    traj = guided[0]
    tools = parcel.bundle.tools
    assert validate_format(traj.messages, tools) == []
    turn = next(i for i, m in enumerate(traj.messages) if m.get("tool_calls"))
    messages = [dict(m) for m in traj.messages]
    call = json.loads(json.dumps(messages[turn]["tool_calls"][0]))
    call["function"]["arguments"] = json.dumps({"claim_id": 17})
    messages[turn] = {**messages[turn], "tool_calls": [call]}
    assert any("break the schema" in p for p in validate_format(messages, tools))
    call["function"]["name"] = "teleport_parcel"
    assert any("not among the row's tools" in p for p in validate_format(messages, tools))
    broken = Trajectory.model_validate({**traj.model_dump(exclude={"id", "messages"}), "messages": messages})
    assert broken.verified  # the format gate is independent of the quality verdict
    report = build_sft_dataset([broken], tmp_path, tools_by_env={parcel.env_id: tools})
    assert report.rows == 0 and report.dropped == {"format": 1}


def test_alignment_and_budgets() -> None:
    messages = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": "think 1",
            "tool_calls": [{"id": "a", "function": {"name": "t", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "a", "content": "{}"},
        {"role": "assistant", "content": "Which one?"},
        {"role": "user", "content": "That one."},
        {"role": "assistant", "content": "final"},
    ]
    aligned = align_context(messages)
    assert [m["content"] for m in aligned if m["role"] == "assistant"] == ["", "Which one?", "final"]
    assert aligned[1]["tool_calls"][0]["function"]["arguments"] == {}
    assert convergence_budget([(10, 0.5), (20, 0.69), (40, 0.705), (80, 0.71)], tolerance=0.01) == 40
    with pytest.raises(ValueError, match="at least one"):
        convergence_budget([])


def test_balanced_budgets_are_not_set_by_a_starved_source() -> None:
    from agentomnia.trajectories.sft import _budgets

    # one solver run must not cap 45 DAG-Standard runs at 2: the cap comes from the smallest source
    # with at least `min_source_rows`, and the starved source keeps what it has
    mode, budgets = _budgets(
        {"dag_standard": 45, "program": 13, "dag_challenge": 7, "solver": 1}, None, 2.0, 0.01
    )
    assert mode == "balanced"
    assert budgets == {"dag_standard": 14, "program": 13, "dag_challenge": 7, "solver": 1}
    # when every source is starved, the smallest still sets the cap
    assert _budgets({"a": 3, "b": 1}, None, 2.0, 0.01)[1] == {"a": 2, "b": 1}
    assert _budgets({"a": 30, "b": 10}, None, 2.0, 0.01)[1] == {"a": 20, "b": 10}
    # nor does a source with under a tenth of the rows: 5 DAG-Challenge runs do not cap the rest at 10
    assert _budgets({"dag_standard": 28, "program": 13, "solver": 10, "dag_challenge": 5}, None, 2.0, 0.01)[
        1
    ] == {"dag_standard": 20, "program": 13, "solver": 10, "dag_challenge": 5}


def test_learning_curves_set_per_source_budgets(guided: list[Trajectory], parcel, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    curves = {"dag_standard": [(1, 0.8), (2, 0.8), (4, 0.81)]}
    report = build_sft_dataset(
        guided, tmp_path, tools_by_env={parcel.env_id: parcel.bundle.tools}, learning_curves=curves
    )
    assert report.budgeting == "learning_curve"
    by = {s.source: s for s in report.sources}
    assert by["dag_standard"].available == 2 and by["dag_standard"].kept == 1


def test_max_tools_keeps_the_called_tools(guided: list[Trajectory], parcel, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from datasets import load_from_disk

    report = build_sft_dataset(
        guided[:1], tmp_path, tools_by_env={parcel.env_id: parcel.bundle.tools}, max_tools=5
    )
    row = load_from_disk(str(tmp_path / "hf"))[0]
    names = {t["function"]["name"] for t in row["tools"]}
    assert len(names) == 5 and {name for name, _ in guided[0].calls()} <= names
    assert report.tool_tokens > 0


def test_prompt_dedup_by_ngrams_and_embeddings() -> None:
    texts = [
        "Approve the late claim on shipment SH2-001 today",
        "Approve the late claim on shipment SH2-001 today please",
        "How many adjusters work in the north region",
    ]
    assert ngram_duplicates(texts, threshold=0.7) == {1: 0}
    assert embedding_duplicates([texts[2], texts[2], texts[0]], HashingEmbedder()) == {1: 0}


def test_rubric_validation_drops_conflicting_and_vague_items(tasks: list[Task]) -> None:
    task = tasks[0]
    key = task.rubric[0].check.key if task.rubric[0].check else None
    bad = Task.model_validate({
        **task.model_dump(exclude={"id", "rubric"}),
        "rubric": [item.model_dump() for item in task.rubric] + [
            RubricItem(id="T9", text="Claim ends rejected.", scope="task",
                       check=Check(kind="field_equals", table="claims", key=key, field="status", value="rejected")).model_dump(),
            RubricItem(id="G9", text="Behaves properly.", scope="general").model_dump(),
        ],
    })  # fmt: skip
    cleaned, problems = validated_task(bad)
    assert set(problems) == {"T1", "T9", "G9"}
    assert cleaned is not None and [i.id for i in cleaned.rubric] == ["G1"]


def test_partition_keeps_the_rl_overlap_in_range() -> None:
    ids = [f"t{i}" for i in range(100)]
    sft, rl = partition_tasks(ids, rl_share=0.4, overlap=0.15)
    shared = set(sft) & set(rl)
    assert len(rl) == 40 and 0.1 <= len(shared) / len(rl) <= 0.2
    assert set(sft) | set(rl) == set(ids)


def test_rl_dataset_rows_carry_prompt_task_bundle_and_golden(
    tasks: list[Task], guided: list[Trajectory], parcel, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    from datasets import load_from_disk

    duplicate = Task.model_validate(
        {**tasks[0].model_dump(exclude={"id", "metadata"}), "metadata": {"copy": True}}
    )
    short = Task.model_validate({**tasks[0].model_dump(exclude={"id", "query"}), "query": "Approve it."})
    report = build_rl_dataset(
        [*tasks, duplicate, short], guided, tmp_path, sandbox=parcel.sandbox,
        bundle_dirs={parcel.env_id: parcel.folder}, policy=noisy_policy(0.5), k=4,
        embedder=HashingEmbedder(), sft_task_ids=[tasks[0].id],
    )  # fmt: skip
    assert report.dropped.get("duplicate prompt") == 1 and report.dropped.get("prompt too short") == 1
    assert report.rows > 0 and all(i.pass_rate <= 0.8 for i in report.items)
    data = load_from_disk(str(tmp_path / "hf"))
    assert set(data.column_names) == {"prompt", "task", "bundle_dir", "golden"}
    for row in data:
        assert row["prompt"][-1]["role"] == "user" and row["golden"][0]["role"] == "assistant"
        task = Task.model_validate_json(row["task"])
        assert Path(row["bundle_dir"]) == parcel.folder and task.env_id == parcel.env_id
    items = json.loads((tmp_path / "items.json").read_text())
    assert len(items) == report.rows and {i["level"] for i in items} <= {"hard", "medium", "easy"}
    # every graded pass@K attempt is kept for the rollout analysis: the policy's successes and failures,
    # each rewarded as GRPO rewards it (binary)
    attempts = load_attempts(tmp_path)
    assert len(attempts) >= 4 * report.candidates
    assert {a.reward for a in attempts} == {0.0, 1.0} and all(
        a.succeeded == (a.reward == 1.0) for a in attempts
    )
    assert all(a.messages[-1]["role"] == "assistant" and a.tools for a in attempts)


def test_default_offline_pipeline_gives_non_empty_datasets(
    tasks: list[Task], guided: list[Trajectory], unguided: list[Trajectory], parcel, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    everything = list(guided) + list(unguided)
    sft_ids, _ = partition_tasks([t.id for t in tasks], rl_share=0.5)
    sft = build_sft_dataset(everything, tmp_path / "sft", tools_by_env={parcel.env_id: parcel.bundle.tools})
    # A handful of tasks on one environment, most of them easy for the noisy teacher: with the pass-rate
    # cap in force the RL set can shrink to tasks SFT also holds. This test is about the split and its
    # overlap, so the cap is lifted.
    rl = build_rl_dataset(
        tasks, everything, tmp_path / "rl", sandbox=parcel.sandbox, bundle_dirs={parcel.env_id: parcel.folder},
        sft_task_ids=sft_ids, max_pass_rate=1.0,
    )  # fmt: skip
    assert sft.rows > 0 and rl.rows > 0
    assert rl.policy == "noisy-teacher@0.25" and rl.k == 4
    assert sum(rl.levels.values()) == rl.rows and rl.overlap <= 0.2


@pytest.mark.slow
def test_rl_difficulty_can_come_from_a_checkpoint_sampled(
    tasks: list[Task], guided: list[Trajectory], parcel, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """pass@K of a (here untrained) checkpoint sorts the candidates: it passes nothing, so every task
    it ran validly is "hard", and runs it wrecked with invalid calls are discarded, as §5.2.1 has it."""
    from agentomnia.omniabench.hf import sampling_policy
    from trainers.model import ModelSettings, build_tiny_model, build_tokenizer, rows_as_text

    settings = ModelSettings(vocab_size=600, hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1,
                             intermediate_size=64)  # fmt: skip
    rows = [{"messages": list(t.messages), "tools": []} for t in guided[:3]]
    tokenizer = build_tokenizer(rows_as_text(rows, repeats=2), settings.vocab_size)
    build_tiny_model(tokenizer, settings).save_pretrained(tmp_path / "ckpt")
    tokenizer.save_pretrained(tmp_path / "ckpt")
    policy = sampling_policy(tmp_path / "ckpt", max_new_tokens=16, device="cpu")
    report = build_rl_dataset(
        tasks[:3], guided, tmp_path / "rl", sandbox=parcel.sandbox, bundle_dirs={parcel.env_id: parcel.folder},
        policy=policy, k=2, max_steps=2, max_pass_rate=1.0,
    )  # fmt: skip
    assert report.policy == "hf:ckpt"  # a random model writes no call syntax: its runs end with an answer
    assert report.candidates + report.dropped.get("every pass@K run anomalous or truncated", 0) == 3
    assert all(i.level == "hard" and i.pass_rate == 0 for i in report.items)
