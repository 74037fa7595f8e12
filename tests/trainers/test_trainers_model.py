"""The tiny offline Qwen3: TRL's Qwen3 chat template verbatim, single-id control tokens, no downloads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from trl.chat_template_utils import (
    add_response_schema,
    is_chat_template_prefix_preserving,
    qwen3_chat_template,
)

from trainers.model import SPECIAL_TOKENS, ModelSettings, load_base


@pytest.fixture(scope="module")
def base(rows: Any, tiny_model: ModelSettings) -> tuple[Any, Any]:
    return load_base(tiny_model, rows[0])


def test_chat_template_is_trls_qwen3_text(base: tuple[Any, Any]) -> None:
    _, tokenizer = base
    assert tokenizer.chat_template == qwen3_chat_template
    # TRL recognises it: the tool-call response parser attaches, which fails for any edited template
    add_response_schema(tokenizer)
    parsed = tokenizer.parse_response(
        '<tool_call>\n{"name": "get_user", "arguments": {"user_id": "u1"}}\n</tool_call><|im_end|>', prefix=""
    )
    assert parsed["tool_calls"][0]["function"] == {"name": "get_user", "arguments": {"user_id": "u1"}}
    assert not is_chat_template_prefix_preserving(
        tokenizer
    )  # Qwen3's own template; TRL swaps in its training variant


def test_control_tokens_are_single_ids_and_model_matches_vocabulary(base: tuple[Any, Any]) -> None:
    model, tokenizer = base
    for token in SPECIAL_TOKENS:
        assert len(tokenizer.encode(token, add_special_tokens=False)) == 1, token
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token == "<|endoftext|>"
    assert (
        model.config.model_type == "qwen3"
        and model.config.hidden_size == 64
        and model.config.num_hidden_layers == 2
    )
    assert model.get_input_embeddings().weight.shape[0] == len(tokenizer)


def test_rendered_rows_are_short(base: tuple[Any, Any], rows: Any) -> None:
    _, tokenizer = base
    row = rows[0][0]
    ids = tokenizer.apply_chat_template(row["messages"], tools=row["tools"], tokenize=True, return_dict=True)[
        "input_ids"
    ]
    assert len(ids) < 600  # line-bounded merges compress the repeated tool schemas


def test_a_missing_checkpoint_path_is_refused_without_downloading(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nothing is downloaded"):
        load_base(ModelSettings(path=tmp_path / "nope"))


def _next_token_after_reply_start(model: Any, tokenizer: Any, row: dict[str, Any]) -> tuple[str, float]:
    """The most likely token where a reply starts (after the empty thinking block), and the
    probability of `<tool_call>` there, for the conversation up to the row's first call."""
    import torch

    first = next(i for i, m in enumerate(row["messages"]) if m.get("tool_calls"))
    prompt = tokenizer.apply_chat_template(
        row["messages"][:first], tools=row["tools"], add_generation_prompt=True, tokenize=False,
        enable_thinking=False,
    )  # fmt: skip
    ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"]
    with torch.inference_mode():
        probs = torch.softmax(model(ids).logits[0, -1], -1)
    call = tokenizer.convert_tokens_to_ids("<tool_call>")
    return str(tokenizer.decode([int(probs.argmax())])), float(probs[call])


def test_pretraining_on_short_windows_teaches_the_reply_format(rows: Any) -> None:
    """A random tiny model fine-tuned on long rows keeps answering a newline after a newline (its
    attention has not yet learned to look back); a short language-model warm-up on windows of the
    rendered rows makes a reply start with a tool call, and the checkpoint's config says so."""
    train, held_out = rows[0][:-2], rows[0][-2:]
    settings = ModelSettings(
        max_corpus_chars=60_000, pretrain_steps=300, pretrain_block=128, pretrain_batch=16
    )
    random_model, tokenizer = load_base(settings.model_copy(update={"pretrain_steps": 0}), train)
    model, _ = load_base(settings, train)
    summary = model.config.agentomnia_pretraining
    assert summary["steps"] == 300 and summary["block"] == 128
    # no wall-clock time in the config: it is part of a checkpoint's identity (evaluation ids hash it)
    assert "seconds" not in summary
    assert summary["last_loss"] < 0.6 * summary["first_loss"], summary
    for row in held_out:
        before, p_before = _next_token_after_reply_start(random_model, tokenizer, row)
        after, p_after = _next_token_after_reply_start(model, tokenizer, row)
        assert after == "<tool_call>", (before, after)
        assert p_after > 10 * p_before


def test_right_padding_runs_as_plain_causal_attention_with_the_same_logits(base: tuple[Any, Any]) -> None:
    """A batch padded on the right is run without its mask (the causal kernel): every real token's
    logits are what the masked pass gives; a batch padded on the left keeps its mask."""
    import torch

    from trainers.model import causal_when_right_padded

    model, _ = base
    ids = torch.randint(10, 200, (2, 40))
    right = torch.ones_like(ids)
    right[1, 25:] = 0
    left = torch.ones_like(ids)
    left[1, :15] = 0
    seen: list[Any] = []
    probe = model.register_forward_pre_hook(
        lambda _m, _a, kw: seen.append(kw.get("attention_mask")), with_kwargs=True
    )
    with torch.no_grad():
        masked = model(input_ids=ids, attention_mask=right).logits
        handle = causal_when_right_padded(model)
        try:
            plain = model(input_ids=ids, attention_mask=right).logits
            kept = model(input_ids=ids, attention_mask=left).logits
            reference = model(input_ids=ids, attention_mask=left.clone()).logits
        finally:
            handle.remove()
            probe.remove()
    assert seen[1] is None and seen[2] is not None  # the hook ran first: right padding lost its mask
    assert torch.allclose(masked[0], plain[0], atol=1e-5) and torch.allclose(
        masked[1, :25], plain[1, :25], atol=1e-5
    )
    assert torch.equal(kept, reference)
