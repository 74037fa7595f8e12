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
