"""The static policy in one pass: one parse, violations in source order, rewritten code fully located."""

from __future__ import annotations

import ast
import copy
import types

import pytest

from agentomnia.sandbox import policy
from agentomnia.sandbox.bundle import Bundle

MIXED = """
import json
import os

value = eval("1")


def eval(text):
    return text


async def later():
    exec("x")


class Box:
    def __del__(self):
        pass

    def peek(self, other):
        for other.slot in range(2):
            pass
        return open("f"), other.__globals__, type("T", (), {})
"""

REWRITTEN = '''
class Counter:
    """Attribute stores, deletes, augmented and private loads: everything the rewrite touches."""

    total = 0

    def __init__(self, config):
        self.items, self._seen = dict(config), set()
        self.total += len(self.items)
        self.__hidden = 1
        self.__hidden += self.total
        (self.first, [self.second, *self.rest]) = (1, [2, 3, 4])
        self.note: str = "n"
        del self._seen

    def bump(self, key, by=1):
        self.items[key] = self.items.get(key, 0) + by
        self.total += by
        label = "{0}".format(key)
        return {"ok": True, "data": label, "error": None}
'''


def test_violations_come_out_in_source_order_with_shadowed_builtins_allowed() -> None:
    found = [(v.line, v.rule, v.message.split(":")[0]) for v in policy.validate_source(MIXED)]
    assert found == [
        (3, "import", "`import os`"),
        (12, "statement", "async functions are not supported; tools are plain synchronous methods"),
        (17, "definition", "`def __del__`"),
        (21, "statement", "a `for` target cannot assign to an attribute (`.slot`); bind a local name first"),
        (23, "name", "`open` is not available in the sandbox (no code evaluation, files or introspection)"),
        (23, "attribute", "`.__globals__`"),
        (23, "call", "`type(name, bases, namespace)` is not allowed; define classes with a class statement"),
    ]
    # `eval` is bound by the module, so loading it is not refused; `exec` inside the async function
    # is not judged (the function itself is the problem)


def test_node_limit_counts_every_node(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = sum(1 for _ in ast.walk(ast.parse(REWRITTEN)))
    monkeypatch.setattr(policy, "MAX_AST_NODES", nodes - 1)
    (violation,) = policy.validate_source(REWRITTEN)
    assert violation.rule == "size" and f"{nodes} syntax nodes" in violation.message
    monkeypatch.setattr(policy, "MAX_AST_NODES", nodes)
    assert policy.validate_source(REWRITTEN) == []


def _guarded(source: str) -> ast.Module:
    guarder = policy._Guarder()
    tree = guarder.visit(policy.parse_python(source))
    guarder.locate_new_nodes()
    assert isinstance(tree, ast.Module)
    return tree


@pytest.mark.parametrize("which", ["rewritten", "shop"])
def test_every_node_the_rewrite_makes_has_the_location_fix_missing_locations_gives(
    which: str, shop: Bundle
) -> None:
    source = REWRITTEN if which == "rewritten" else shop.source
    tree = _guarded(source)
    fixed = ast.fix_missing_locations(copy.deepcopy(tree))
    assert ast.dump(fixed, include_attributes=True) == ast.dump(tree, include_attributes=True)
    assert policy.rules.GUARD_SETATTR in ast.unparse(tree)
    compile(tree, "<test>", "exec", dont_inherit=True)


def test_prepare_parses_the_source_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = policy.parse_python

    def counting(source: str) -> ast.Module:
        calls.append(len(source))
        return real(source)

    monkeypatch.setattr(policy, "parse_python", counting)
    source = REWRITTEN + "\n# parsed once\n"
    prepared = policy.prepare(source, "env")
    assert calls == [len(source)]
    assert prepared.code().co_filename == prepared.filename
    assert policy.rules.GUARD_SETATTR in _names(prepared.code())


def _names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names
