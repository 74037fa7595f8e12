"""Base models for post-training: a real local checkpoint, or a tiny offline Qwen3 built here.

Real runs point `ModelSettings.path` at a local Hugging Face checkpoint (e.g. a Qwen3 model on a GPU
machine). Tests and the default pipeline cannot download anything, so the offline default builds a
Qwen3-architecture model with random weights and a byte-level BPE tokenizer trained on the project's
own text (seed corpus, taxonomy data, and the training rows themselves). The tokenizer carries the
Qwen3 chat template exactly as TRL ships it: TRL recognises templates by their text to swap in its
training variant (assistant-only loss) and to parse tool calls in GRPO, so an edited copy would fail.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "agentomnia"
CORPUS_DIRS = (PACKAGE_DIR / "seeds" / "corpus", PACKAGE_DIR / "taxonomy" / "data")
_TEXT_SUFFIXES = {".json", ".jsonl", ".yaml", ".yml", ".md", ".txt", ".csv"}

# Qwen3's control tokens: each must be one id, because the chat template and TRL's response parser
# find turn and tool-call boundaries by these strings.
SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)


class ModelSettings(BaseModel):
    """Which base model to train: `path` to a local checkpoint, else the tiny offline Qwen3."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Path | None = Field(
        default=None, description="local HF checkpoint folder; None builds the tiny model"
    )
    vocab_size: int = Field(default=2048, ge=300)
    hidden_size: int = Field(default=64, ge=16)
    num_layers: int = Field(default=2, ge=1)
    num_heads: int = Field(default=4, ge=1)
    num_kv_heads: int = Field(default=2, ge=1)
    intermediate_size: int = Field(default=128, ge=16)
    max_position_embeddings: int = Field(default=8192, ge=128)  # RoPE: a longer window costs no weights
    local_window: int = Field(
        default=0,
        ge=0,
        description="tokens the first layer attends to (sliding-window attention); 0 = full attention in "
        "every layer",
    )
    max_corpus_chars: int = Field(
        default=400_000, ge=10_000, description="text budget of the tokenizer corpus"
    )
    pretrain_steps: int = Field(
        default=0,
        ge=0,
        description="language-model steps on short windows of the training rows as the chat template "
        "renders them, before any post-training, so the tiny model starts out knowing the chat and "
        "tool-call format; 0 leaves its weights random",
    )
    pretrain_block: int = Field(default=256, ge=16, description="tokens per pretraining window")
    pretrain_batch: int = Field(
        default=8,
        ge=1,
        description="windows per pretraining step (more steps of fewer windows learn more a token)",
    )
    pretrain_learning_rate: float = Field(default=3e-3, gt=0)
    seed: int = 0


def qwen3_chat_template() -> str:
    """The Qwen3 chat template as the installed TRL knows it (read, never retyped)."""
    from trl.chat_template_utils import qwen3_chat_template as template

    return str(template)


def corpus_texts(extra: Iterable[str] = (), max_chars: int = 2_000_000) -> Iterator[str]:
    """Text to train the tokenizer on: the extra texts first (training rows), then the project's files."""
    budget = max_chars
    for text in extra:
        if budget <= 0:
            return
        budget -= len(text)
        yield text
    for folder in CORPUS_DIRS:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*")):
            if budget <= 0:
                return
            if path.suffix not in _TEXT_SUFFIXES or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="ignore")[:budget]
            budget -= len(text)
            yield text


def rows_as_text(rows: Iterable[dict[str, Any]], repeats: int = 3) -> Iterator[str]:
    """Training rows rendered through the chat template (tool schemas included) and repeated, so the
    tokenizer learns long merges for exactly the text it will see: short sequences make tiny-model
    training fast on a CPU."""
    import jinja2

    template = jinja2.Environment().from_string(qwen3_chat_template())
    for row in rows:
        messages = row.get("messages") or row.get("prompt") or []
        try:
            text = template.render(messages=messages, tools=row.get("tools"), add_generation_prompt=False)
        except (jinja2.TemplateError, TypeError, KeyError, IndexError):
            text = json.dumps(row, ensure_ascii=False, default=str)
        for _ in range(repeats):
            yield text


def build_tokenizer(texts: Iterable[str], vocab_size: int = 2048) -> Any:
    """A byte-level BPE tokenizer with Qwen3's control tokens and chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    # Lines, not words, bound the merges: repeated lines (tool schemas, template boilerplate) become a few
    # tokens each, which keeps sequences short enough to train a tiny model on a CPU.
    core.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split("\n", behavior="merged_with_previous"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(texts, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=[t for t in SPECIAL_TOKENS if t not in ("<|im_end|>", "<|endoftext|>")],
    )
    tokenizer.chat_template = qwen3_chat_template()
    tokenizer.padding_side = "left"
    return tokenizer


def build_tiny_model(tokenizer: Any, settings: ModelSettings) -> Any:
    """A randomly initialised Qwen3 sized by `settings`, its vocabulary matched to `tokenizer`."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(settings.seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=settings.hidden_size,
        intermediate_size=settings.intermediate_size,
        num_hidden_layers=settings.num_layers,
        num_attention_heads=settings.num_heads,
        num_key_value_heads=settings.num_kv_heads,
        head_dim=settings.hidden_size // settings.num_heads,
        max_position_embeddings=settings.max_position_embeddings,
        **_layer_types(settings),
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = Qwen3ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def _layer_types(settings: ModelSettings) -> dict[str, Any]:
    if not settings.local_window:
        return {}
    rest = ["full_attention"] * (settings.num_layers - 1)
    return {
        "use_sliding_window": True,
        "sliding_window": settings.local_window,
        "layer_types": ["sliding_attention", *rest] if rest else ["sliding_attention"],
    }


def load_base(settings: ModelSettings, rows: Iterable[dict[str, Any]] = ()) -> tuple[Any, Any]:
    """(model, tokenizer): the checkpoint at `settings.path`, or the tiny offline model."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if settings.path is not None:
        path = Path(settings.path)
        if not (path / "config.json").is_file():
            raise FileNotFoundError(
                f"model path {path} has no config.json; pass a local Hugging Face checkpoint folder "
                "(nothing is downloaded) or leave `path` unset for the tiny offline model"
            )
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        return model, tokenizer
    rows = list(rows)
    texts = corpus_texts(rows_as_text(rows), settings.max_corpus_chars)
    tokenizer = build_tokenizer(texts, settings.vocab_size)
    model = build_tiny_model(tokenizer, settings)
    if settings.pretrain_steps:
        # the rows as SFT will render them; the project's corpus only when there are none
        warmup = rendered_for_training(tokenizer, rows) or list(corpus_texts((), settings.max_corpus_chars))
        pretrain(model, tokenizer, warmup, settings)
    return model, tokenizer


PRETRAINING = "agentomnia_pretraining"  # the config entry that says how a tiny model was pretrained


def rendered_for_training(tokenizer: Any, rows: Iterable[dict[str, Any]]) -> list[str]:
    """Each row as TRL's SFT renders it (Qwen3's training template: every assistant turn opens with
    the empty thinking block, as the replies the model learns to write do); a row the template cannot
    render is skipped."""
    from trl.chat_template_utils import get_training_chat_template

    template = get_training_chat_template(tokenizer)
    out: list[str] = []
    for row in rows:
        messages = row.get("messages") or row.get("prompt") or []
        try:
            text = tokenizer.apply_chat_template(
                messages, tools=row.get("tools") or None, chat_template=template, tokenize=False
            )
        except Exception:  # a malformed row is left out of the warm-up, not fatal
            continue
        out.append(str(text))
    return out


def pretrain(model: Any, tokenizer: Any, texts: Iterable[str], settings: ModelSettings) -> dict[str, Any]:
    """Causal language modelling of a freshly built tiny model on random windows of `texts`.

    A randomly initialised model fine-tuned on rows thousands of tokens long learns next to nothing
    in a CPU budget: its attention starts out spread evenly over the whole row, so for many steps it
    predicts each token from the one before it alone (after every newline, another newline). Short
    windows make the local structure of the chat and tool-call format cheap to learn first, as
    pretraining does for a real base model. What was done is kept in the model's config
    (`agentomnia_pretraining`, without the time it took), so a checkpoint says how its base was made."""
    import random
    import time

    import torch

    ids: list[int] = []
    for text in texts:
        ids += tokenizer(text)["input_ids"] + [tokenizer.eos_token_id]
    block = min(settings.pretrain_block, max(16, len(ids) // 2))
    if len(ids) <= block + 1:
        raise ValueError(f"pretraining needs more than {block + 1} tokens of text, got {len(ids)}")
    torch.manual_seed(settings.seed)
    rng = random.Random(settings.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.pretrain_learning_rate, weight_decay=0.0)
    warmup = max(1, settings.pretrain_steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup))
    losses: list[float] = []
    started = time.perf_counter()
    model.train()
    for _ in range(settings.pretrain_steps):
        starts = [rng.randrange(0, len(ids) - block) for _ in range(settings.pretrain_batch)]
        batch = torch.tensor([ids[s : s + block] for s in starts])
        loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
    model.eval()
    tail = losses[-max(1, len(losses) // 10) :]
    summary = {
        "steps": settings.pretrain_steps,
        "block": block,
        "batch": settings.pretrain_batch,
        "text_tokens": len(ids),
        "first_loss": round(losses[0], 4),
        "last_loss": round(sum(tail) / len(tail), 4),  # mean of the last tenth: one window is noisy
        "seconds": round(time.perf_counter() - started, 1),
    }
    # the config travels with the weights and is part of what identifies a checkpoint (an evaluation's
    # id hashes it), so it keeps what was done, not how long it took
    setattr(model.config, PRETRAINING, {k: v for k, v in summary.items() if k != "seconds"})
    return summary


def causal_when_right_padded(model: Any) -> Any:
    """Run a forward pass whose padding all comes after each row's tokens as plain causal attention.

    A batch of rows padded on the right (GRPO's group: one prompt, completions of different
    lengths; the rollback curriculum's cross-entropy rows) carries an attention mask, and with a mask
    PyTorch's CPU attention takes its general path instead of the causal kernel, several times slower
    on rows thousands of tokens long. A real token never attends to a later position under causal
    attention, so no real token sees the padding with or without the mask: its logits are the same,
    and the padding's own positions are masked out of every loss. A mask with padding on the left,
    or a pass that extends a cache (generation), is left alone. Returns the hook's handle."""
    import torch

    def drop_mask(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        mask = kwargs.get("attention_mask")
        cache = kwargs.get("past_key_values")
        if (
            isinstance(mask, torch.Tensor)
            and mask.dim() == 2
            and (cache is None or (hasattr(cache, "get_seq_length") and cache.get_seq_length() == 0))
            and bool(mask[:, 0].all())
            and bool((mask[:, 1:] <= mask[:, :-1]).all())  # ones, then zeros: padding on the right only
        ):
            kwargs = {**kwargs, "attention_mask": None}
        return args, kwargs

    return model.register_forward_pre_hook(drop_mask, with_kwargs=True, prepend=True)
