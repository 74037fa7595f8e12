"""Repair of generated environment code: rule-based patches for deterministic errors, and (in LLM
mode) a model-driven rewrite of one failing method fed with its error trace.

Rule-based patches cover the errors a code generator (or a person editing a bundle) makes most:
a module used but not imported, a tool method whose signature lacks a parameter its schema
declares (or that the caller passes), and a name used but never defined when it is one of the
allowed modules. Each patch is a small AST-level edit; a patch that does not parse is discarded.
"""

from __future__ import annotations

import ast
import re

from agentomnia.llm import LLM, LLMError
from agentomnia.sandbox.policy import parse_python
from agentomnia.sandbox.rules import ALLOWED_MODULES

_UNDEFINED = re.compile(r"name '([A-Za-z_][A-Za-z0-9_]*)' is not defined")
_UNEXPECTED = re.compile(r"(\w+)\(\) got an unexpected keyword argument '(\w+)'")
_SIGNATURE = re.compile(r"tool `(\w+)`.*?parameter[s]? `?(\w+)`?", re.S)


def _parses(source: str) -> bool:
    try:
        parse_python(source)
        return True
    except SyntaxError:
        return False


def add_import(source: str, module: str) -> str:
    """`import module` after the docstring and the other imports."""
    tree = parse_python(source)
    line = 0
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) or (
            isinstance(node, ast.Expr)
            and isinstance(getattr(node, "value", None), ast.Constant)
            and line == 0
        ):
            line = node.end_lineno or line
        else:
            break
    lines = source.splitlines(keepends=True)
    lines.insert(line, f"import {module}\n")
    return "".join(lines)


def add_parameter(source: str, method: str, param: str) -> str | None:
    """Give `method` a keyword parameter `param=None` (before any **kwargs)."""
    tree = parse_python(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == method:
            if any(a.arg == param for a in node.args.args + node.args.kwonlyargs):
                return None
            node.args.args.append(ast.arg(arg=param))
            node.args.defaults.append(ast.Constant(value=None))
            return ast.unparse(tree)
    return None


def rule_based_patch(source: str, error: str) -> str | None:
    """A patched source for an error message, or None when no rule applies."""
    match = _UNDEFINED.search(error)
    if match and match.group(1) in ALLOWED_MODULES:
        patched = add_import(source, match.group(1))
        return patched if _parses(patched) else None
    match = _UNEXPECTED.search(error)
    if match:
        return add_parameter(source, match.group(1), match.group(2))
    match = _SIGNATURE.search(error)
    if match and "signature" in error:
        return add_parameter(source, match.group(1), match.group(2))
    return None


def method_source(source: str, method: str) -> str | None:
    tree = parse_python(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == method:
            return ast.get_source_segment(source, node)
    return None


def replace_method(source: str, method: str, new_method: str) -> str | None:
    """Swap one method's source for another (indentation normalised to the class body's); None unless
    the new source is one `def` of the same name and parameters (a model once answered with the bare
    name, which parsed and broke the class when it loaded)."""
    try:
        given = parse_python(_dedent(new_method)).body
    except SyntaxError:
        return None
    old = next(
        (n for n in ast.walk(parse_python(source)) if isinstance(n, ast.FunctionDef) and n.name == method),
        None,
    )
    if (
        old is None
        or len(given) != 1
        or not isinstance(given[0], ast.FunctionDef)
        or given[0].name != method
        or _parameters(given[0]) != _parameters(old)
    ):
        return None
    tree = parse_python(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == method:
            lines = source.splitlines(keepends=True)
            indent = " " * node.col_offset
            start = node.lineno - 1 - len(node.decorator_list)
            body = [indent + ln if ln.strip() else ln for ln in _dedent(new_method).splitlines(keepends=True)]
            patched = "".join(lines[:start] + body + ["\n"] + lines[node.end_lineno or node.lineno :])
            return patched if _parses(patched) else None
    return None


def _parameters(node: ast.FunctionDef) -> list[str]:
    a = node.args
    rest = [f"*{a.vararg.arg}" if a.vararg else "", f"**{a.kwarg.arg}" if a.kwarg else ""]
    return [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs] + rest


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text).strip("\n") + "\n"


LLM_REPAIR_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["method_source"],
    "properties": {"method_source": {"type": "string"}},
}


def llm_patch(llm: LLM, source: str, method: str, failure: str) -> str | None:
    """Ask the model to rewrite one failing tool method given the failure; None if it cannot be applied."""
    current = method_source(source, method)
    if current is None:
        return None
    prompt = (
        "This method of a Python environment class fails its verification. Return the corrected method "
        "(the complete `def`, same name and parameters, same helpers available on self). Return a dict "
        '{"ok", "data", "error"} from every path, never raise, and never change state on a failed call.\n\n'
        f"Failure:\n{failure}\n\nMethod:\n{current}"
    )
    try:
        answer = llm.complete(
            [{"role": "user", "content": prompt}], schema=LLM_REPAIR_SCHEMA, schema_name="method_repair"
        )
    except LLMError:  # no usable rewrite: the repair loop goes on as without a model
        return None
    data = answer.data if isinstance(answer.data, dict) else {}
    if not isinstance(data.get("method_source"), str):
        return None
    return replace_method(source, method, data["method_source"])
