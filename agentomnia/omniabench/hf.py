"""A local Hugging Face checkpoint as an evaluation policy, and the Qwen3 tool-call text format.

The project's trained checkpoints (a model folder with its tokenizer and the Qwen3 chat template)
are evaluated in-process: the conversation is rendered with the checkpoint's own chat template,
exactly as the SFT rows were, decoded greedily, and the reply text is turned back into an
OpenAI-format assistant message. Qwen3 writes each call as
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>` and may think inside `<think>...</think>`
first; the thinking is dropped. A block that does not parse is still returned as a call (its raw
text as the arguments) so the rollout records an invalid call, which counts against the policy's
invalid-call allowance, instead of mistaking a broken call for a final answer.

Loading takes seconds, so each (checkpoint, device) is loaded once per process and shared by every
rollout. This module imports torch and transformers only when a checkpoint is actually used.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentomnia.records import content_hash
from agentomnia.sandbox.bundle import Bundle
from agentomnia.tasks.models import ReferenceCall, Task
from agentomnia.trajectories.agents import PolicyFactory
from agentomnia.trajectories.messages import assistant_message
from agentomnia.trajectories.sft import GENERATION_TEMPLATE, align_context

_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL)
_CALL_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_NAME = re.compile(r'"name"\s*:\s*"([^"\\]*)"')
# Turn and padding markers a decoder keeps when special tokens are not skipped (they must not be
# skipped wholesale: <tool_call> is itself a special token in Qwen3 vocabularies).
_END_MARKERS = ("<|im_end|>", "<|endoftext|>", "<|im_start|>")


def strip_thinking(text: str) -> str:
    """The reply without `<think>` blocks (an unterminated one runs to the end of the text)."""
    return _THINK.sub("", text).replace("</think>", "").strip()


def _call_from_block(block: str, index: int) -> tuple[dict[str, Any], bool]:
    """(OpenAI-format call, well formed) from the JSON inside a `<tool_call>` block; a block that
    does not parse keeps its raw text as the arguments so the rollout rejects it as an invalid call."""
    call_id = f"call_{index}"
    payload = _json_object(block)
    if payload is not None and isinstance(payload.get("name"), str):
        arguments = payload.get("arguments", payload.get("parameters", {}))
        if isinstance(arguments, Mapping):
            text = json.dumps(dict(arguments), ensure_ascii=False, sort_keys=True)
        else:
            # A string is passed on as written (the loop parses it); anything else is left for the
            # loop to refuse as "not an object".
            text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        function = {"name": payload["name"], "arguments": text}
        return {"id": call_id, "type": "function", "function": function}, True
    named = _NAME.search(block)
    function = {"name": named.group(1) if named else "", "arguments": block.strip()}
    return {"id": call_id, "type": "function", "function": function}, False


def _visible(text: str) -> str:
    visible = strip_thinking(text)
    for marker in _END_MARKERS:
        visible = visible.replace(marker, "")
    return visible


def read_calls(text: str) -> list[tuple[dict[str, Any], bool]]:
    """Each `<tool_call>` block of generated text as (OpenAI-format call, well formed)."""
    blocks = [m.group(1).strip() for m in _CALL_BLOCK.finditer(_visible(text))]
    return [_call_from_block(block, i) for i, block in enumerate(blocks)]


def parse_tool_calls(text: str) -> tuple[str, list[dict[str, Any]]]:
    """(content, calls) from Qwen3-style generated text.

    The content is the text outside `<tool_call>` blocks with thinking removed; when some block is
    malformed the whole visible text is kept as content, so the transcript shows what was written.
    """
    visible = _visible(text)
    parsed = read_calls(visible)
    calls = [call for call, _ in parsed]
    malformed = not all(ok for _, ok in parsed)
    content = visible if malformed else _CALL_BLOCK.sub("", visible)
    return content.strip(), calls


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def to_assistant_message(text: str) -> dict[str, Any]:
    content, calls = parse_tool_calls(text)
    return assistant_message(content, calls)


# ------------------------------------------------------------------ checkpoints

_LOADED: dict[tuple[str, str], tuple[Any, Any]] = {}
_LOAD_LOCK = threading.Lock()


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def check_checkpoint(path: Path) -> Path:
    """The checkpoint folder, or an error that says what a usable one holds."""
    folder = Path(path).expanduser()
    if not (folder / "config.json").is_file():
        raise ValueError(
            f"hf:{path}: no config.json in {folder}; pass a local Hugging Face checkpoint folder "
            "(a model saved with its tokenizer, e.g. the output folder of SFT training)"
        )
    return folder.resolve()


def load_checkpoint(path: Path, device: str) -> tuple[Any, Any]:
    """(model, tokenizer) for a checkpoint folder, loaded once per (folder, device) per process."""
    key = (str(check_checkpoint(path)), device)
    with _LOAD_LOCK:
        if key not in _LOADED:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(key[0], local_files_only=True)
            if not getattr(tokenizer, "chat_template", None):
                raise ValueError(
                    f"hf:{path}: the tokenizer has no chat template; save the tokenizer that was used "
                    "in training (it carries the Qwen3 template) next to the model"
                )
            if tokenizer.pad_token is None:
                tokenizer.pad_token = tokenizer.eos_token
            model: Any = AutoModelForCausalLM.from_pretrained(key[0], local_files_only=True)
            model.to(device)
            model.eval()
            _LOADED[key] = (model, tokenizer)
        return _LOADED[key]


class HFAgent:
    """A local checkpoint through its chat template, one reply per turn: greedy, or sampled at
    `temperature` after seeding torch's global generator with (seed, turn), so the same seed gives the
    same replies. Sampling agents must run one at a time in a process (pass@K runs them in turn)."""

    def __init__(
        self,
        path: Path | str,
        *,
        max_new_tokens: int = 512,
        device: str | None = None,
        name: str | None = None,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> None:
        self.path = Path(path)
        self.max_new_tokens = max_new_tokens
        self.device = device or default_device()
        self.name = name or f"hf:{path}"
        self.temperature, self.seed, self.turn = temperature, seed, 0
        # the keys and values of the last turn's prompt and reply: the next turn's prompt starts with
        # the same tokens, so only what was added since is run through the model (`_reused`)
        self._cache: Any = None
        self._cached: list[int] = []
        self.reused_tokens = 0  # prompt tokens this agent did not have to run again

    def render(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]) -> str:
        """The prompt text: the conversation shaped like an SFT row (arguments as dicts, earlier
        reasoning dropped), then the assistant generation prompt."""
        _, tokenizer = load_checkpoint(self.path, self.device)
        rendered = tokenizer.apply_chat_template(
            align_context(messages),
            tools=list(tools) or None,
            add_generation_prompt=True,
            tokenize=False,
            **GENERATION_TEMPLATE,
        )
        return str(rendered)

    def generate(self, prompt: str) -> str:
        import torch

        model, tokenizer = load_checkpoint(self.path, self.device)
        encoded = tokenizer(prompt, return_tensors="pt", add_special_tokens=False).to(self.device)
        sampling: dict[str, Any] = {"do_sample": False}
        if self.temperature > 0:
            sampling = {"do_sample": True, "temperature": self.temperature, "top_k": 0}
            torch.manual_seed(self.seed * 1009 + self.turn)  # one stream per agent and turn
            self.turn += 1
        ids = encoded["input_ids"]
        cache = self._reused(model, ids[0].tolist())
        with torch.inference_mode():
            output = model.generate(
                **encoded,
                max_new_tokens=self.max_new_tokens,
                pad_token_id=tokenizer.pad_token_id,
                eos_token_id=tokenizer.eos_token_id,
                past_key_values=cache,
                return_dict_in_generate=True,
                **sampling,
            )
        sequence = output.sequences[0]
        self._cache = output.past_key_values
        if self._cache is not None:
            self._cached = sequence[: self._cache.get_seq_length()].tolist()
        return str(tokenizer.decode(sequence[ids.shape[1] :], skip_special_tokens=False))

    def _reused(self, model: Any, ids: list[int]) -> Any:
        """The last turn's cache, cut back to what the new prompt shares with it (`reusable_cache`)."""
        cache, cached = self._cache, self._cached
        self._cache, self._cached = None, []  # generate() extends it in place: never reuse it twice
        reused = reusable_cache(model, cache, cached, ids)
        if reused is not None:
            self.reused_tokens += reused.get_seq_length()
        return reused

    def act(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        return to_assistant_message(self.generate(self.render(messages, tools)))


def reusable_cache(model: Any, cache: Any, cached: Sequence[int], ids: Sequence[int]) -> Any:
    """`cache` (the keys and values of the tokens `cached`) cut back to the tokens the prompt `ids`
    begins with, to pass to `generate` with the whole prompt; None when there is none, the model's
    attention is windowed, or too little is shared to be worth it. At least the prompt's last token
    is always run again, so the model has a position to predict from."""
    if cache is None or getattr(model.config, "use_sliding_window", False):
        return None
    shared = 0
    for a, b in zip(cached, ids[:-1], strict=False):
        if a != b:
            break
        shared += 1
    if shared < 16:
        return None
    cache.crop(shared - cache.get_seq_length())  # a negative count removes that many from the end
    return cache


def sampling_policy(
    folder: Path, *, temperature: float = 0.7, max_new_tokens: int = 64, device: str | None = None
) -> PolicyFactory:
    """A pass@K policy sampling the checkpoint in `folder` at `temperature`:
    attempt i of a task always draws the same replies, so pass@K repeats exactly."""
    checked = check_checkpoint(folder)

    def make(task: Task, plan: Sequence[ReferenceCall], bundle: Bundle, attempt: int) -> HFAgent:
        seed = int(content_hash([task.id, attempt], 8), 16)
        return HFAgent(checked, max_new_tokens=max_new_tokens, device=device, name=f"hf:{folder.name}",
                       temperature=temperature, seed=seed)  # fmt: skip

    return make
