"""Ask a model for a protocol record, check it, and send the problems back until it is valid.

Diagnosis reports and PRD texts are pydantic "protocol" models. In `llm` mode a model proposes one
as JSON constrained by the model's JSON schema; the answer is then validated by pydantic and by
checks the schema cannot express (ids that must match the input, counts that must add up). When
something is wrong the model gets its answer back with the list of problems and tries again, a
bounded number of times. The caller decides what to do when no valid answer came: every caller in
this package falls back to its deterministic rules and records that it did.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agentomnia.llm import LLM, LLMError, LLMOutputError
from agentomnia.llm.ledger import fallback, verdict

M = TypeVar("M", bound=BaseModel)

DEFAULT_ATTEMPTS = 3


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema in the shape strict structured-output endpoints accept.

    Strict mode wants every property listed as required and no extra properties on every object;
    defaults and titles only add tokens. Optional fields stay optional in meaning because their
    schema already admits null.
    """
    schema = copy.deepcopy(model.model_json_schema())

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            node.pop("title", None)
            node.pop("default", None)
            props = node.get("properties")
            if isinstance(props, dict) and node.get("type", "object") == "object":
                node["required"] = list(props)
                node["additionalProperties"] = False
            for key, value in node.items():
                if key in ("properties", "$defs"):
                    # name -> schema maps: their keys are field names (a field may be called "title")
                    for sub in value.values():
                        visit(sub)
                else:
                    visit(value)
        elif isinstance(node, list):
            for item in node:
                visit(item)

    visit(schema)
    return schema


def validation_problems(exc: ValidationError) -> list[str]:
    """One line per pydantic error: where in the JSON, and what was wrong."""
    out = []
    for err in exc.errors():
        where = "/".join(str(p) for p in err["loc"]) or "<root>"
        message = str(err["msg"]).removeprefix("Value error, ")
        out.append(f"{where}: {message}")
    return out


class Attempt(BaseModel):
    """What one request returned and why it was refused (empty `problems`: accepted)."""

    number: int
    problems: tuple[str, ...] = ()


def ask_validated(
    llm: LLM,
    messages: Sequence[Mapping[str, Any]],
    model: type[M],
    *,
    schema_name: str,
    check: Callable[[M], list[str]] | None = None,
    max_attempts: int = DEFAULT_ATTEMPTS,
) -> tuple[M | None, list[Attempt]]:
    """A valid `model` instance (or None after `max_attempts`), and the record of every attempt.

    `check` returns the problems pydantic cannot see; an empty list accepts the value. An endpoint
    failure (LLMError that is not an output error) ends the loop at once: retrying the same
    request is the backend's job, and it already did. The outcome is counted on the model's ledger
    under `schema_name`: kept, or refused with the caller's rules standing in (a fallback).
    """
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
    schema = strict_schema(model)
    conversation = [dict(m) for m in messages]
    attempts: list[Attempt] = []
    for number in range(1, max_attempts + 1):
        text = ""
        try:
            response = llm.complete(conversation, schema=schema, schema_name=schema_name)
            text = response.text
            data = response.data if response.data is not None else json.loads(text)
            value = model.model_validate(data)
            problems = check(value) if check is not None else []
        except LLMOutputError as exc:
            problems = [str(exc)]
        except LLMError as exc:
            attempts.append(Attempt(number=number, problems=(f"the endpoint failed: {exc}",)))
            return _gave_up(llm, schema_name, attempts)
        except json.JSONDecodeError as exc:
            problems = [f"the answer is not JSON ({exc.msg} at char {exc.pos})"]
        except ValidationError as exc:
            problems = validation_problems(exc)
        attempts.append(Attempt(number=number, problems=tuple(problems)))
        if not problems:
            verdict(llm, schema_name, True)
            return value, attempts
        conversation.append({"role": "assistant", "content": text or "(no usable answer)"})
        conversation.append(
            {
                "role": "user",
                "content": (
                    f"That {schema_name} is not valid. Problems:\n"
                    + "\n".join(f"- {p}" for p in problems)
                    + "\nReturn the whole corrected JSON object, following the schema exactly."
                ),
            }
        )
    return _gave_up(llm, schema_name, attempts)


def _gave_up(llm: LLM, schema_name: str, attempts: list[Attempt]) -> tuple[None, list[Attempt]]:
    """No valid answer: counted on the model's ledger as refused, and the caller's rules stand in."""
    verdict(llm, schema_name, False)
    fallback(llm, schema_name)
    return None, attempts


def attempts_summary(what: str, attempts: Sequence[Attempt]) -> str:
    """One line saying why a model-written record was replaced by the rules' one."""
    last = attempts[-1].problems if attempts else ("no attempt was made",)
    shown = "; ".join(last[:3]) + (f" (+{len(last) - 3} more)" if len(last) > 3 else "")
    return f"{what}: no valid answer after {len(attempts)} attempt(s), rules used instead (last problems: {shown})"
