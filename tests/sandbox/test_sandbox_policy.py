"""The static policy: what it refuses (with line and rule), what it lets through, and how it rewrites."""

from __future__ import annotations

import pytest

from agentomnia.sandbox import PolicyError, validate_source
from agentomnia.sandbox.guards import Namespace, Output, SandboxViolation
from agentomnia.sandbox.policy import prepare
from agentomnia.sandbox.views import Ambient

ALLOWED = """
from __future__ import annotations
import json, math, re, datetime, copy, itertools, functools, collections, statistics, decimal
import random, string, typing, uuid, enum
import collections.abc
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class Line:
    sku: str
    qty: int = 1


class Color(enum.Enum):
    RED = "red"


class Shop:
    def __init__(self, init_config: dict[str, Any]) -> None:
        self.items = dict(init_config.get("items", {}))
        self.__secret = 1
        self.open = [k for k in self.items]

    def _helper(self) -> int:
        return self.__secret

    def total(self) -> dict[str, Any]:
        return {"ok": True, "data": self._helper() + len(self.open), "error": None}
"""


def test_ordinary_environment_code_passes() -> None:
    assert validate_source(ALLOWED) == []


@pytest.mark.parametrize(
    ("source", "rule", "needle"),
    [
        ("import os", "import", "`os`"),
        ("from subprocess import run", "import", "`subprocess`"),
        ("import importlib", "import", "`importlib`"),
        ("from . import sibling", "import", "relative"),
        ("from json import _default_encoder", "import", "private"),
        ("from typing import get_type_hints", "import", "get_type_hints"),
        ("x = open('/etc/passwd')", "name", "`open`"),
        ("eval('1')", "name", "`eval`"),
        ("__import__('os')", "name", "`__import__`"),
        ("b = __builtins__", "name", "`__builtins__`"),
        ("().__class__.__bases__[0].__subclasses__()", "attribute", "__bases__"),
        ("f = lambda: 0\ng = f.__globals__", "attribute", "__globals__"),
        ("def gen():\n    yield 1\nframe = gen().gi_frame", "attribute", "gi_frame"),
        ("class A:\n    def __del__(self):\n        return None", "definition", "__del__"),
        ("class A(metaclass=type):\n    pass", "definition", "metaclass"),
        ("async def f():\n    return 1", "statement", "async"),
        ("for self.x in range(3):\n    pass", "statement", "attribute"),
        ("x = 1\nx.__class__ = int", "attribute", "cannot be assigned"),
        ("Evil = type('Evil', (), {'__del__': print})", "call", "class statement"),
        ("def f(x: int) -> int:\n    return x +", "syntax", "syntax error"),
    ],
)
def test_refusals_name_the_line_and_rule(source: str, rule: str, needle: str) -> None:
    violations = validate_source(source)
    assert violations, source
    last = violations[-1]
    assert last.rule == rule
    assert needle in last.message
    assert last.line == len(source.splitlines()) or rule in ("definition", "syntax", "statement")


def test_shadowing_a_forbidden_builtin_is_just_a_name() -> None:
    assert validate_source("open = [1, 2]\nfirst = open[0]") == []
    assert validate_source("def f(input):\n    return input") == []


def test_prepare_raises_policy_error_listing_violations() -> None:
    with pytest.raises(PolicyError) as caught:
        prepare("import os\nimport socket\n", "env", label="environment `X`")
    assert len(caught.value.violations) == 2
    assert "environment `X`" in str(caught.value)
    assert "line 1" in str(caught.value)


def _run(source: str) -> dict[str, object]:
    namespace = Namespace(Ambient(0), Output())
    exec(prepare(source, "env").code(), namespace.globals)
    return namespace.globals


def test_rewriting_keeps_assignment_semantics() -> None:
    result = _run(
        """
class Box:
    def __init__(self):
        self.a, (self.b, c) = 1, (2, 3)
        self.c = c
        self.__hidden = 10
        self.count = 0
        self.count += 5
        self.x = self.y = [1]
        self.items: list = []
        self.items += [1]
        del self.y

    def hidden(self):
        return self.__hidden

box = Box()
values = (box.a, box.b, box.c, box.count, box.x, box.items, box.hidden(), hasattr(box, "y"))
"""
    )
    assert result["values"] == (1, 2, 3, 5, [1], [1], 10, False)
    assert "__sb_t1__" not in vars(result["Box"])  # class-body temporaries are cleaned up


def test_guards_refuse_writes_to_objects_the_code_did_not_create() -> None:
    for source in (
        "import json\njson.JSONEncoder.default = lambda self, o: 1",
        "import decimal\ndecimal.getcontext().prec = 2",
        "import json\nsetattr(json, 'dumps', None)",
        "def f():\n    return 1\nf.calls = 0",
    ):
        with pytest.raises(SandboxViolation):
            _run(source)


def test_guards_refuse_private_and_dynamic_dunder_reads() -> None:
    for source in (
        "import random\nx = random._os",
        "x = getattr((), '__subcl' + 'asses__')",
        "import json\nx = vars(json)",
        "x = '{0.__class__}'.format(1)",
        "import typing\nref = typing.get_args(typing.List['int'])[0]\nx = ref._evaluate",
    ):
        with pytest.raises((SandboxViolation, AttributeError)):
            _run(source)


def test_private_reads_work_on_the_codes_own_objects() -> None:
    result = _run(
        """
class Base:
    def _base(self):
        return "base"

class Child(Base):
    def _child(self):
        return super()._base() + "+child"

value = Child()._child()
attr = getattr(Child(), "_base")()
"""
    )
    assert result["value"] == "base+child"
    assert result["attr"] == "base"


def test_module_views_hide_withheld_members_with_a_reason() -> None:
    with pytest.raises(AttributeError, match="evaluates string annotations"):
        _run("import typing\ntyping.get_type_hints")


def test_preparing_code_gives_the_collector_back_as_it_found_it() -> None:
    import gc

    assert gc.isenabled()
    prepare("x = [1, 2, 3]\n", "env")
    assert gc.isenabled()
    with pytest.raises(PolicyError):
        prepare("import os\n", "env")  # refused half way: the collector is back all the same
    assert gc.isenabled()
    gc.disable()
    try:
        prepare("y = {'a': 1}\n", "env")
        assert not gc.isenabled()  # off before, off after: not switched on behind the caller's back
    finally:
        gc.enable()
