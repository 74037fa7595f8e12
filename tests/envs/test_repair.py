"""Repair: rule-based patches fix the errors they name (a missing import, a missing parameter), and
give up (None) on what they cannot fix; a model rewrite replaces one method and nothing else."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentomnia.envs.codegen import generate_source
from agentomnia.envs.repair import add_parameter, llm_patch, method_source, replace_method, rule_based_patch
from agentomnia.envs.spec import EnvSpec
from agentomnia.envs.state import generate_state
from agentomnia.llm.protocol import LLMResponse, Usage
from agentomnia.sandbox.policy import validate_source

BROKEN = '''"""A tiny environment with two bugs."""

import copy


class Broken:
    def __init__(self, init_config):
        self.items = copy.deepcopy(init_config.get("items", {}))

    def count_items(self):
        return {"ok": True, "data": math.floor(len(self.items)), "error": None}

    def get_item(self, item_id=None):
        return {"ok": True, "data": self.items.get(item_id), "error": None}
'''


def run(source: str, method: str, **kwargs: Any) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(source, "<repaired>", "exec"), namespace)
    return getattr(namespace["Broken"]({"items": {"a": {"id": "a"}}}), method)(**kwargs)


def test_a_missing_allowed_import_is_added_and_the_call_then_works() -> None:
    error = "NameError: name 'math' is not defined"
    patched = rule_based_patch(BROKEN, error)
    assert patched is not None and "import math\n" in patched and validate_source(patched) == []
    assert run(patched, "count_items")["data"] == 1


def test_an_unexpected_keyword_becomes_a_parameter() -> None:
    patched = rule_based_patch(BROKEN, "TypeError: get_item() got an unexpected keyword argument 'verbose'")
    assert patched is not None
    assert run(patched, "get_item", item_id="a", verbose=True)["data"] == {"id": "a"}
    assert add_parameter(patched, "get_item", "verbose") is None  # already there: nothing to do


def test_unfixable_errors_get_no_patch() -> None:
    assert rule_based_patch(BROKEN, "NameError: name 'subprocess' is not defined") is None  # not allowed
    assert rule_based_patch(BROKEN, "ZeroDivisionError: division by zero") is None
    assert rule_based_patch(BROKEN, "TypeError: nowhere() got an unexpected keyword argument 'x'") is None


class RewritingModel:
    """Answers a repair prompt with a fixed method source."""

    model = "rewrite-stub"

    def __init__(self, method: str) -> None:
        self.method = method
        self.prompts: list[str] = []

    def complete(self, messages: Sequence[Mapping[str, Any]], **_: Any) -> LLMResponse:
        self.prompts.append(str(messages[-1]["content"]))
        return LLMResponse(text="", data={"method_source": self.method}, request_hash="stub")

    @property
    def usage(self) -> Usage:
        return Usage()


def test_a_model_rewrite_replaces_only_the_failing_method() -> None:
    fixed = "def count_items(self):\n    return {'ok': True, 'data': len(self.items), 'error': None}\n"
    model = RewritingModel(fixed)
    patched = llm_patch(model, BROKEN, "count_items", "NameError: name 'math' is not defined")  # type: ignore[arg-type]
    assert patched is not None and "math" not in patched and run(patched, "count_items")["data"] == 1
    assert method_source(patched, "get_item") == method_source(BROKEN, "get_item")
    assert "NameError" in model.prompts[0] and "math.floor" in model.prompts[0]
    assert llm_patch(model, BROKEN, "no_such_method", "boom") is None  # type: ignore[arg-type]
    assert replace_method(BROKEN, "count_items", "def count_items(self):\n    return (\n") is None


def test_a_model_answer_that_is_not_the_method_is_refused() -> None:
    """Only one `def` of the same name and parameters replaces a method: a bare name (what a small
    model answered in a real round; it parsed, and the class then failed to load with NameError), a
    renamed or re-signed def, or two defs leave the source alone."""
    for answer in (
        "count_items",
        "def count_things(self):\n    return {'ok': True, 'data': 0, 'error': None}\n",
        "def count_items(self, extra):\n    return {'ok': True, 'data': 0, 'error': None}\n",
        "def count_items(self):\n    return {}\n\ndef other(self):\n    return {}\n",
    ):
        assert llm_patch(RewritingModel(answer), BROKEN, "count_items", "boom") is None, answer  # type: ignore[arg-type]
    typed = (
        "def count_items(self) -> dict:\n    return {'ok': True, 'data': len(self.items), 'error': None}\n"
    )
    assert replace_method(BROKEN, "count_items", typed) is not None


def test_generated_sources_patch_cleanly(mock_spec: EnvSpec) -> None:
    source = generate_source(mock_spec)
    patched = rule_based_patch(source, "finish_task() got an unexpected keyword argument 'note'")
    assert patched is not None and validate_source(patched) == []
    namespace: dict[str, Any] = {}
    exec(compile(patched, "<patched>", "exec"), namespace)
    env = namespace[mock_spec.class_name](generate_state(mock_spec, seed=0))
    task = next(k for k, t in sorted(env.tasks.items()) if t["status"] == "open")
    assert env.finish_task(task_id=task, note="done by hand")["ok"]
