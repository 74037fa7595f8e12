"""Learning figures: reference steps replayed on the parcel environment, the likelihood ranking of the
next tool, and a tiny checkpoint whose figures rise once it is taught the reference's calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentomnia.omniabench.learning import (
    REPLY_START,
    LearningSettings,
    call_head,
    learning_report,
    reference_probes,
    reference_reply,
    reply_log_likelihood,
    spread,
    tool_scores,
    well_formed,
)
from agentomnia.omniabench.split import benchmark_item
from agentomnia.tasks.models import Task
from agentomnia.trajectories.sft import align_context
from tests.fixtures.parcel import Parcel

pytestmark = pytest.mark.slow


def _probes(parcel: Parcel, tasks: list[Task]) -> list[Any]:
    items = {t.id: benchmark_item(t) for t in tasks}
    probes, problems = reference_probes(
        tasks,
        items,
        {parcel.env_id: parcel.bundle},
        parcel.sandbox,
        LearningSettings(samples=1, max_steps_per_task=4),
    )
    assert problems == []
    return probes


def test_reference_steps_are_replayed_and_never_show_the_step_itself(
    parcel: Parcel, tasks: list[Task]
) -> None:
    probes = _probes(parcel, tasks)
    # every task has a reference: calls, or a program whose calls the sandbox derives
    assert len({p.task_id for p in probes}) == len(tasks)
    for task in tasks:
        mine = [p for p in probes if p.task_id == task.id]
        assert [p.step for p in mine] == list(range(len(mine)))
        # the targets are the reference's own calls, in order
        if task.reference_calls:
            assert [(p.tool, dict(p.arguments)) for p in mine] == [
                (c.tool, dict(c.args)) for c in task.reference_calls
            ][: len(mine)]
    for p in probes:
        last = p.messages[-1]
        # the prompt ends before the step: on the user's request or on the previous call's result
        assert last["role"] in ("user", "tool")
        calls_shown = sum(len(m.get("tool_calls") or []) for m in p.messages)
        assert calls_shown == p.step
        # earlier turns keep their calls, not the reference's narration of its plan
        assert all(m["content"] == "" for m in p.messages if m.get("tool_calls"))


def test_a_sample_of_the_benchmark_is_spread_over_it(tasks: list[Task]) -> None:
    many = tasks * 2  # ten tasks, ordered as a benchmark is (by route)
    assert spread(many, 4) == [many[0], many[2], many[5], many[7]]
    assert spread(many, 0) == many == spread(many, 20)


def test_well_formed_replies() -> None:
    names = {"get_claim"}
    call = '<tool_call>\n{"name": "get_claim", "arguments": {"claim_id": "CLA-1"}}\n</tool_call>'
    assert well_formed(REPLY_START + call, names)
    assert not well_formed("I would look at the claim.", names)  # no call at all
    assert not well_formed(call.replace("get_claim", "get_order"), names)  # a tool not offered
    assert not well_formed(call.replace('{"claim_id": "CLA-1"}', '"CLA-1"'), names)  # arguments not an object
    assert not well_formed(call + '<tool_call>\n{"name": "get_claim", "arguments": {</tool_call>', names)


def _tiny(tmp_path: Path, probes: list[Any], local_window: int = 0) -> tuple[Any, Any]:
    from trainers.model import ModelSettings, build_tiny_model, build_tokenizer, rows_as_text

    settings = ModelSettings(vocab_size=1500, hidden_size=48, num_layers=2, num_heads=4, num_kv_heads=2,
                             intermediate_size=96, local_window=local_window)  # fmt: skip
    rows = [{"messages": list(p.messages), "tools": list(p.tools)} for p in probes]
    targets = [reference_reply(p.tool, p.arguments) for p in probes]
    tokenizer = build_tokenizer([*rows_as_text(rows, repeats=3), *targets * 5], settings.vocab_size)
    return build_tiny_model(tokenizer, settings), tokenizer


def _prompt(tokenizer: Any, probe: Any) -> str:
    return str(
        tokenizer.apply_chat_template(
            align_context(probe.messages), tools=list(probe.tools), add_generation_prompt=True, tokenize=False
        )
    )


@pytest.mark.parametrize("window", [0, 48], ids=["packed", "windowed-batches"])
def test_tool_scores_equal_a_full_forward_pass(
    tmp_path: Path, parcel: Parcel, tasks: list[Task], window: int
) -> None:
    """Continuations of different lengths (the whole reference reply beside each tool's call opening)
    scored in one call equal a full forward pass over prompt and continuation, one at a time: packed
    into one row after the prompt's cache, or, for a model with windowed attention, in batches."""
    import torch

    from agentomnia.omniabench.learning import continuation_log_likelihoods

    probes = _probes(parcel, tasks)
    model, tokenizer = _tiny(tmp_path, probes, local_window=window)
    model.eval()
    prompt = _prompt(tokenizer, probes[0])
    names = [t["function"]["name"] for t in probes[0].tools]
    fast = tool_scores(model, tokenizer, prompt, names)
    begin = len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
    continuations = [reference_reply(probes[0].tool, probes[0].arguments), *map(call_head, names)]
    slow = []
    for text in continuations:
        seq = tokenizer(prompt + text, add_special_tokens=False)["input_ids"]
        with torch.inference_mode():
            logp = torch.log_softmax(model(input_ids=torch.tensor([seq])).logits[0].float(), -1)
        slow.append(sum(float(logp[i - 1, seq[i]]) for i in range(begin, len(seq))))
    assert fast == pytest.approx(slow[1:], abs=1e-3)
    ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    together = continuation_log_likelihoods(model, tokenizer, ids, continuations)
    assert [total for total, _ in together] == pytest.approx(slow, abs=1e-3)
    assert len({n for _, n in together}) > 1  # the lengths differ: the reply is longer than a call's opening
    # the likelihood of a whole reference reply, read the same way, equals the full pass's
    reply = reference_reply(probes[0].tool, probes[0].arguments)
    ids = tokenizer(prompt + reply, add_special_tokens=False)["input_ids"]
    begin = len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
    with torch.inference_mode():
        logp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].float(), -1)
    full = sum(float(logp[i - 1, ids[i]]) for i in range(begin, len(ids)))
    assert reply_log_likelihood(model, tokenizer, prompt, reply) == (
        pytest.approx(full, abs=1e-3),
        len(ids) - begin,
    )


def test_figures_rise_when_a_checkpoint_learns_the_reference_calls(
    tmp_path: Path, parcel: Parcel, tasks: list[Task], monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    probes = _probes(parcel, tasks)
    model, tokenizer = _tiny(tmp_path, probes)
    model.save_pretrained(tmp_path / "base")
    tokenizer.save_pretrained(tmp_path / "base")
    # teacher-force every reference step's reply onto its prompt, as SFT does with a trajectory
    batch = []
    for p in probes:
        prompt_ids = tokenizer(_prompt(tokenizer, p), add_special_tokens=False)["input_ids"]
        reply_ids = tokenizer(reference_reply(p.tool, p.arguments), add_special_tokens=False)["input_ids"]
        batch.append((prompt_ids, reply_ids))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    torch.manual_seed(0)
    model.train()
    for _ in range(8):
        for prompt_ids, reply_ids in batch:
            ids = torch.tensor([prompt_ids + reply_ids])
            labels = ids.clone()
            labels[0, : len(prompt_ids)] = -100
            loss = model(input_ids=ids, labels=labels).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.save_pretrained(tmp_path / "sft")
    tokenizer.save_pretrained(tmp_path / "sft")

    settings = LearningSettings(samples=1, max_new_tokens=32, max_steps_per_task=4)
    report = learning_report(
        "r0", {"base": tmp_path / "base", "sft": tmp_path / "sft"}, probes, len(tasks), settings
    )
    base, sft = report.overall("base"), report.overall("sft")
    assert base is not None and sft is not None and base.probes == sft.probes == len(probes)
    assert base.action_likelihood is not None and sft.action_likelihood is not None
    # a random model spreads its probability over the vocabulary; the trained one has learned the replies
    assert base.action_likelihood < 0.01 and sft.action_likelihood > 20 * base.action_likelihood
    for row in (base, sft):
        for figure in ("next_tool", "next_action", "exact_arguments", "well_formed_calls"):
            assert 0.0 <= getattr(row, figure) <= 1.0
    # per route rows add up to the overall one
    routes = [r for r in report.rows if r.policy == "sft" and r.route != "all"]
    assert sum(r.probes for r in routes) == sft.probes
    assert "| sft | all |" in report.markdown()

    # the next round compares with the same base and continues from this sft checkpoint: both are
    # taken from this report instead of being measured again, unless their weights changed
    import agentomnia.omniabench.learning as learning_module

    def no_measuring(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("measured again")

    monkeypatch.setattr(learning_module, "measure", no_measuring)
    later = learning_report(
        "r1",
        {"base": tmp_path / "base", "start": tmp_path / "sft"},
        probes,
        len(tasks),
        settings,
        earlier=[report],
    )
    assert later.reused == ["base", "start"]
    assert later.overall("start") == sft.model_copy(update={"policy": "start"})
    with pytest.raises(AssertionError, match="measured again"):  # other settings: nothing to reuse
        learning_report(
            "r1",
            {"base": tmp_path / "base"},
            probes,
            len(tasks),
            settings.model_copy(update={"samples": 0}),
            earlier=[report],
        )


def test_a_free_reply_starts_from_the_scoring_pass_and_is_the_same(
    tmp_path: Path, parcel: Parcel, tasks: list[Task]
) -> None:
    """The greedy reply is generated on the prompt's keys and values the scoring pass already made,
    and is the reply a generation from nothing gives."""
    from agentomnia.omniabench.learning import _generate, continuation_log_likelihoods
    from agentomnia.trajectories.sft import GENERATION_TEMPLATE

    probes = _probes(parcel, tasks)
    model, tokenizer = _tiny(tmp_path, probes)
    model.eval()
    settings = LearningSettings(max_new_tokens=16)
    for probe in probes[:3]:
        prompt = _prompt(tokenizer, probe)
        reply_prompt = str(
            tokenizer.apply_chat_template(
                align_context(probe.messages), tools=list(probe.tools), add_generation_prompt=True,
                tokenize=False, **GENERATION_TEMPLATE,
            )
        )  # fmt: skip
        kept: list[tuple[Any, list[int]]] = []
        ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        continuation_log_likelihoods(model, tokenizer, ids, [call_head("a"), call_head("b")], keep=kept)
        [(cache, held)] = kept
        assert held[: len(ids)] == ids and cache.get_seq_length() == len(held)
        alone = _generate(model, tokenizer, reply_prompt, settings, sample=False)
        before = cache.get_seq_length()
        assert _generate(model, tokenizer, reply_prompt, settings, sample=False, prefix=kept[0]) == alone
        assert (
            cache.get_seq_length() != before
        )  # the kept cache was used: cut to the shared prompt, then grown
