"""Static policy: what machine-written Python may say before it is allowed to run.

Every piece of generated code (environment classes, check functions, task programs) passes through
`prepare`, which checks it (`validate_source` is that check alone), rewrites the few constructs that
can only be judged at run time into calls to the sandbox's guards and compiles the result, all from
one parse; the check is a single pass over the tree (generated environments run to ~100 KB, so
every walk counts). The policy is an allow-list for
imports and a deny-list for the known roads out of a Python sandbox: the `exec`/`eval`/`open` family,
double-underscore attributes (`__subclasses__`, `__globals__`, `__builtins__`, ...), frame and
generator internals, metaclasses and special methods that run at uncontrolled moments.

The rewriting (see `_Guarder`): attribute *stores* and *deletes* go through a guard that permits them
only on objects whose class the code itself defined (so a tool cannot patch `json.JSONEncoder` or the
shared decimal context for every other session in the worker), and loads of private attributes,
`__dict__` and `str.format` go through a guard that refuses to leave the code's own objects.

Static checks are the first layer, not the only one: see `agentomnia.sandbox` for the process-level
containment that catches what they miss.
"""

from __future__ import annotations

import ast
import base64
import gc
import hashlib
import marshal
import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict

from agentomnia.sandbox import rules
from agentomnia.sandbox.errors import PolicyError

MAX_SOURCE_CHARS = 2_000_000
MAX_AST_NODES = 400_000

CodeKind = Literal["env", "check", "program"]


class PolicyViolation(BaseModel):
    """One refused construct: where it is, what kind of construct, and what to do instead."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    line: int
    col: int
    rule: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


class PreparedCode(BaseModel):
    """Source that passed the policy, rewritten and compiled; `payload` is what a worker receives."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    kind: CodeKind
    filename: str
    payload: str  # base64 of marshal(code object); same interpreter on both ends

    def code(self) -> types.CodeType:
        code = marshal.loads(base64.b64decode(self.payload))
        assert isinstance(code, types.CodeType)
        return code


def validate_source(
    source: str, *, allowed_modules: frozenset[str] = rules.ALLOWED_MODULES
) -> list[PolicyViolation]:
    """Check source against the static policy without running it; an empty list means it passes."""
    with _collector_paused():
        _, violations = _parse_and_check(source, allowed_modules)
    return violations


def prepare(source: str, kind: CodeKind, *, label: str | None = None) -> PreparedCode:
    """Validate, rewrite and compile; raises PolicyError naming every refused construct."""
    key = hashlib.sha256(f"{kind}\0{source}".encode()).hexdigest()[:32]
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
        if cached is not None:
            _CACHE.move_to_end(key)
            return cached
    with _collector_paused():
        # One parse serves the check and the rewrite (the checker only reads the tree).
        tree, violations = _parse_and_check(source, rules.ALLOWED_MODULES)
        what = label or f"{kind} code"
        if violations or tree is None:
            raise PolicyError(what, violations)
        filename = f"<{kind}:{key[:12]}>"
        with AST_LOCK:
            guarder = _Guarder()
            tree = guarder.visit(tree)
            guarder.locate_new_nodes()
            code = compile(tree, filename, "exec", dont_inherit=True)
        del tree
    prepared = PreparedCode(
        key=key, kind=kind, filename=filename, payload=base64.b64encode(marshal.dumps(code)).decode("ascii")
    )
    remember(prepared)
    return prepared


def remember(prepared: PreparedCode) -> None:
    """Keep code that passed the policy, so `prepare` of the same source answers it at once: code
    this process prepared, or code a worker process of the same interpreter prepared and sent back
    (an environment built on a builder process is opened here without being checked and compiled
    again)."""
    with _CACHE_LOCK:
        _CACHE[prepared.key] = prepared
        _CACHE.move_to_end(prepared.key)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a source becomes a tree and then code.

    A 100 KB source is some 200,000 tree nodes, allocated in one go, and the allocations set off
    collections that walk every live object of the process while the tree holds no garbage at all:
    about a third of `prepare`'s time (25.5 against 37.7 ms per generated environment, side by side).
    The tree is dropped before the collector is back; it was on only if it was on before."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


# CPython 3.11 can fail ("AST constructor recursion depth mismatch") when threads parse or compile
# at the same time; evaluation and synthesis run sessions on threads, so every parse goes through this.
AST_LOCK = threading.RLock()


def parse_python(source: str) -> ast.Module:
    """`ast.parse`, serialized across threads (see AST_LOCK)."""
    with AST_LOCK:
        return ast.parse(source)


_CACHE: OrderedDict[str, PreparedCode] = OrderedDict()
_CACHE_SIZE = 512
_CACHE_LOCK = threading.Lock()


def _parse_and_check(
    source: str, allowed_modules: frozenset[str]
) -> tuple[ast.Module | None, list[PolicyViolation]]:
    """The parsed tree and every violation (the tree is None when the source cannot be judged)."""
    if len(source) > MAX_SOURCE_CHARS:
        return None, [
            PolicyViolation(
                line=1,
                col=0,
                rule="size",
                message=f"source is {len(source)} characters; the limit is {MAX_SOURCE_CHARS}",
            )
        ]
    try:
        tree = parse_python(source)
    except SyntaxError as exc:
        return None, [
            PolicyViolation(
                line=exc.lineno or 1, col=exc.offset or 0, rule="syntax", message=f"syntax error: {exc.msg}"
            )
        ]
    except (RecursionError, MemoryError, ValueError) as exc:
        return None, [
            PolicyViolation(
                line=1, col=0, rule="syntax", message=f"source cannot be parsed: {type(exc).__name__}"
            )
        ]
    checker = _Checker(allowed_modules)
    if not checker.scan(tree, MAX_AST_NODES):
        return None, [
            PolicyViolation(
                line=1,
                col=0,
                rule="size",
                message=f"source has {checker.count} syntax nodes; the limit is {MAX_AST_NODES}",
            )
        ]
    return tree, checker.result()


def _bound_name(node: ast.AST) -> str | None:
    """The name a node binds, if any; a forbidden builtin the code binds is just a local name."""
    if isinstance(node, ast.Name):
        return node.id if isinstance(node.ctx, ast.Store | ast.Del) else None
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name
    if isinstance(node, ast.arg):
        return node.arg
    if isinstance(node, ast.alias):
        return (node.asname or node.name).split(".")[0]
    if isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar):
        return node.name or None
    return None


def _attribute_targets(target: ast.AST) -> Iterator[ast.Attribute]:
    if isinstance(target, ast.Attribute):
        yield target
    elif isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _attribute_targets(element)
    elif isinstance(target, ast.Starred):
        yield from _attribute_targets(target.value)


class _Checker:
    """One depth-first pass over the tree: counts nodes, collects bound names and applies the rules.

    Violations come out in source (pre-)order. A load of a forbidden builtin is judged once the
    whole tree has been seen, since binding the name anywhere makes it a local name; its place in
    the order is kept. Under a refused async construct nothing more is checked (the construct is
    the problem), but names and nodes are still counted.
    """

    def __init__(self, allowed_modules: frozenset[str]) -> None:
        self.allowed = allowed_modules
        self.bound: set[str] = set()
        self.count = 0
        self.violations: list[PolicyViolation | ast.Name] = []

    def scan(self, tree: ast.AST, limit: int) -> bool:
        """Walk the tree; False when it has more than `limit` nodes (nothing else is then judged)."""
        rules_by_type = _CHECKS
        bound = self.bound
        stack: list[tuple[ast.AST, bool]] = [(tree, True)]
        pop, push = stack.pop, stack.append
        count = 0
        while stack:
            node, checking = pop()
            count += 1
            kind = type(node)
            if kind is ast.Name:
                name_node = cast(ast.Name, node)
                count += 1  # its context node
                if checking:
                    self.visit_Name(name_node)
                if type(name_node.ctx) is not ast.Load:
                    bound.add(name_node.id)
                continue
            if kind is ast.Constant:
                continue
            if kind in _BINDERS:
                name = _bound_name(node)
                if name:
                    bound.add(name)
            if checking:
                rule = rules_by_type.get(kind)
                if rule is not None:
                    rule(self, node)
                    if kind in _OPAQUE:
                        checking = False
            children: list[ast.AST] = []
            for field in kind._fields:
                value = getattr(node, field, None)
                if type(value) is list:
                    children.extend(v for v in value if isinstance(v, ast.AST))
                elif isinstance(value, ast.AST):
                    if value._fields:
                        children.append(value)
                    else:
                        count += 1  # a context or operator node: no children, no rules
            for child in reversed(children):
                push((child, checking))
            if count > limit:
                self.count = count + _count_rest(stack)
                return False
        self.count = count
        return count <= limit

    def result(self) -> list[PolicyViolation]:
        out: list[PolicyViolation] = []
        for item in self.violations:
            if isinstance(item, ast.Name):
                if item.id not in self.bound:
                    out.append(
                        _violation(
                            item,
                            "name",
                            f"`{item.id}` is not available in the sandbox (no code evaluation, files or "
                            "introspection)",
                        )
                    )
            else:
                out.append(item)
        return out

    def _refuse(self, node: ast.AST, rule: str, message: str) -> None:
        self.violations.append(_violation(node, rule, message))

    def _allowed_list(self) -> str:
        return ", ".join(sorted(m for m in self.allowed if m != "__future__"))

    # imports
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name not in self.allowed:
                self._refuse(
                    node,
                    "import",
                    f"`import {alias.name}`: module `{alias.name}` is not on the allow-list ({self._allowed_list()})",
                )

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            self._refuse(
                node, "import", "relative imports are not available; generated code is a single module"
            )
            return
        if module not in self.allowed:
            self._refuse(
                node,
                "import",
                f"`from {module} import ...`: module `{module}` is not on the allow-list ({self._allowed_list()})",
            )
            return
        for alias in node.names:
            if alias.name != "*" and alias.name.startswith("_"):
                self._refuse(
                    node, "import", f"`from {module} import {alias.name}`: private names cannot be imported"
                )
            withheld = rules.WITHHELD_MEMBERS.get(module, {}).get(alias.name)
            if withheld:
                self._refuse(
                    node, "import", f"`{module}.{alias.name}` is not available in the sandbox: {withheld}"
                )

    # names
    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if name.startswith("__") and not name.startswith(rules.TEMP_PREFIX):
            if isinstance(node.ctx, ast.Load) and name in rules.READABLE_DUNDER_NAMES:
                return
            if isinstance(node.ctx, ast.Store) and name in rules.ASSIGNABLE_DUNDER_NAMES:
                return
            self._refuse(node, "name", f"`{name}`: double-underscore names reach the interpreter's internals")
        elif name.startswith(rules.TEMP_PREFIX):
            self._refuse(node, "name", f"`{name}` is reserved for the sandbox's rewriting")
        elif isinstance(node.ctx, ast.Load) and name in rules.FORBIDDEN_BUILTINS:
            self.violations.append(node)  # refused in `result` unless the code binds the name

    # attributes
    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        if attr in rules.FRAME_ATTRS:
            self._refuse(
                node, "attribute", f"`.{attr}`: frame, generator and code internals are not accessible"
            )
        elif rules.is_dunder(attr):
            if not isinstance(node.ctx, ast.Load):
                self._refuse(node, "attribute", f"`.{attr}` cannot be assigned or deleted")
            elif attr not in rules.SAFE_DUNDER_ATTRS and attr not in rules.GUARDED_DUNDER_ATTRS:
                self._refuse(
                    node,
                    "attribute",
                    f"`.{attr}`: this double-underscore attribute reaches the interpreter's internals",
                )

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id == "type" and len(node.args) == 3:
            # A class built from a dict can carry any special method the `def` rules refuse.
            self._refuse(
                node,
                "call",
                "`type(name, bases, namespace)` is not allowed; define classes with a class statement",
            )

    # definitions and statements
    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name in rules.DENIED_DEFINITIONS:
            self._refuse(
                node,
                "definition",
                f"`def {node.name}`: this special method runs at moments the sandbox does not control",
            )

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._refuse(
            node, "statement", "async functions are not supported; tools are plain synchronous methods"
        )

    def visit_Await(self, node: ast.Await) -> None:
        self._refuse(node, "statement", "`await` is not supported")

    def visit_AsyncFor(self, node: ast.AsyncFor) -> None:
        self._refuse(node, "statement", "`async for` is not supported")

    def visit_AsyncWith(self, node: ast.AsyncWith) -> None:
        self._refuse(node, "statement", "`async with` is not supported")

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for keyword in node.keywords:
            if keyword.arg == "metaclass":
                self._refuse(node, "definition", f"class `{node.name}`: custom metaclasses are not supported")

    def _no_attribute_target(self, node: ast.AST, target: ast.AST, where: str) -> None:
        for attr in _attribute_targets(target):
            self._refuse(
                attr,
                "statement",
                f"{where} cannot assign to an attribute (`.{attr.attr}`); bind a local name first",
            )

    def visit_For(self, node: ast.For) -> None:
        self._no_attribute_target(node, node.target, "a `for` target")

    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            if item.optional_vars is not None:
                self._no_attribute_target(node, item.optional_vars, "a `with ... as` target")

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self._no_attribute_target(node, node.target, "a comprehension target")

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        for attr in node.kwd_attrs:
            if attr.startswith("_") or attr in rules.FRAME_ATTRS:
                self._refuse(node, "attribute", f"class pattern attribute `{attr}` is not accessible")


# The rule each node type is judged by, and the types whose insides are not judged: an import's
# aliases carry no rules, and inside a refused async construct the construct itself is the problem.
_CHECKS: dict[type[ast.AST], Callable[[_Checker, Any], None]] = {
    ast.Import: _Checker.visit_Import,
    ast.ImportFrom: _Checker.visit_ImportFrom,
    ast.Attribute: _Checker.visit_Attribute,
    ast.Call: _Checker.visit_Call,
    ast.FunctionDef: _Checker.visit_FunctionDef,
    ast.AsyncFunctionDef: _Checker.visit_AsyncFunctionDef,
    ast.Await: _Checker.visit_Await,
    ast.AsyncFor: _Checker.visit_AsyncFor,
    ast.AsyncWith: _Checker.visit_AsyncWith,
    ast.ClassDef: _Checker.visit_ClassDef,
    ast.For: _Checker.visit_For,
    ast.With: _Checker.visit_With,
    ast.comprehension: _Checker.visit_comprehension,
    ast.MatchClass: _Checker.visit_MatchClass,
}
_OPAQUE = frozenset(
    {ast.Import, ast.ImportFrom, ast.AsyncFunctionDef, ast.Await, ast.AsyncFor, ast.AsyncWith}
)
_BINDERS = frozenset(
    {
        ast.FunctionDef,
        ast.AsyncFunctionDef,
        ast.ClassDef,
        ast.arg,
        ast.alias,
        ast.ExceptHandler,
        ast.MatchAs,
        ast.MatchStar,
    }
)


def _count_rest(stack: list[tuple[ast.AST, bool]]) -> int:
    return sum(1 for node, _ in stack for _ in ast.walk(node))


def _violation(node: ast.AST, rule: str, message: str) -> PolicyViolation:
    return PolicyViolation(
        line=getattr(node, "lineno", 1), col=getattr(node, "col_offset", 0), rule=rule, message=message
    )


class _Guarder(ast.NodeTransformer):
    """Rewrite attribute stores/deletes and sensitive loads into calls to the runtime guards.

    Statement order and evaluation order are kept (value first, then target objects, left to right);
    `__private` names are mangled here because the guards receive them as strings.
    """

    def __init__(self) -> None:
        self._classes: list[str] = []
        self._counter = 0
        self._in_class_body: list[bool] = [False]
        self._new: list[ast.AST] = []

    # traversal: leaves (names, constants, contexts, operators) hold nothing to rewrite
    def visit(self, node: ast.AST) -> Any:
        kind = type(node)
        if kind in _LEAVES or not kind._fields:
            return node
        method = _GUARD_VISITORS.get(kind)
        if method is not None:
            return method(self, node)
        return self.generic_visit(node)

    def generic_visit(self, node: ast.AST) -> ast.AST:
        """`NodeTransformer.generic_visit`, rebuilding a list only when something in it changed."""
        for field in node._fields:
            old = getattr(node, field, None)
            if type(old) is list:
                rebuilt: list[Any] | None = None
                for index, value in enumerate(old):
                    result = self.visit(value) if isinstance(value, ast.AST) else value
                    if result is not value and rebuilt is None:
                        rebuilt = old[:index]
                    if rebuilt is None:
                        continue
                    if result is None:
                        continue
                    if isinstance(value, ast.AST) and not isinstance(result, ast.AST):
                        rebuilt.extend(result)
                    else:
                        rebuilt.append(result)
                if rebuilt is not None:
                    old[:] = rebuilt
            elif isinstance(old, ast.AST):
                new_node = self.visit(old)
                if new_node is None:
                    delattr(node, field)
                elif new_node is not old:
                    setattr(node, field, new_node)
        return node

    # locations: every node this class makes is placed where the code it replaces was
    def _located(self, new: _N, anchor: ast.AST) -> _N:
        ast.copy_location(new, anchor)
        self._new.append(new)
        return new

    def locate_new_nodes(self) -> None:
        """What `ast.fix_missing_locations` would do, visiting only the nodes made here: a made node
        without a location takes its parent's (original nodes all have one from the parser)."""
        stack = list(self._new)
        while stack:
            parent = stack.pop()
            where = (parent.lineno, parent.col_offset, parent.end_lineno, parent.end_col_offset)  # type: ignore[attr-defined]
            for child in ast.iter_child_nodes(parent):
                if "lineno" not in child._attributes or hasattr(child, "lineno"):
                    continue
                child.lineno, child.col_offset = where[0], where[1]  # type: ignore[attr-defined]
                if getattr(child, "end_lineno", None) is None:
                    child.end_lineno = where[2]  # type: ignore[attr-defined]
                if getattr(child, "end_col_offset", None) is None:
                    child.end_col_offset = where[3]  # type: ignore[attr-defined]
                stack.append(child)
        self._new.clear()

    def _temp(self) -> str:
        self._counter += 1
        return f"{rules.TEMP_PREFIX}{self._counter}__"

    def _mangle(self, attr: str) -> str:
        if attr.startswith("__") and not attr.endswith("__") and self._classes:
            owner = self._classes[-1].lstrip("_")
            if owner:
                return f"_{owner}{attr}"
        return attr

    @staticmethod
    def _call(name: str, *args: ast.expr) -> ast.Call:
        return ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=list(args), keywords=[])

    def _store(self, target: ast.Attribute, value: ast.expr) -> ast.stmt:
        call = self._call(
            rules.GUARD_SETATTR, self.visit(target.value), ast.Constant(self._mangle(target.attr)), value
        )
        return self._located(ast.Expr(value=call), target)

    def _cleanup(self, names: list[str], anchor: ast.AST) -> list[ast.stmt]:
        # Temporaries in a class body would otherwise become class attributes.
        if not self._in_class_body[-1] or not names:
            return []
        return [self._located(ast.Delete(targets=[ast.Name(id=n, ctx=ast.Del()) for n in names]), anchor)]

    # scopes
    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.bases = [self.visit(b) for b in node.bases]
        node.keywords = [self.visit(k) for k in node.keywords]
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        self._classes.append(node.name)
        self._in_class_body.append(True)
        node.body = self._visit_body(node.body)
        self._in_class_body.pop()
        self._classes.pop()
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.args = self.visit(node.args)
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        if node.returns is not None:
            node.returns = self.visit(node.returns)
        self._in_class_body.append(False)
        node.body = self._visit_body(node.body)
        self._in_class_body.pop()
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        self._in_class_body.append(False)
        self.generic_visit(node)
        self._in_class_body.pop()
        return node

    def _visit_body(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in body:
            result = self.visit(stmt)
            if isinstance(result, list):
                out.extend(result)
            elif result is not None:
                out.append(result)
        return out

    # stores
    def visit_Assign(self, node: ast.Assign) -> ast.AST | list[ast.stmt]:
        if not any(True for t in node.targets for _ in _attribute_targets(t)):
            self.generic_visit(node)
            return node
        value = self.visit(node.value)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute):
            if isinstance(node.targets[0].value, ast.Name):
                # Loading a plain name has no side effects, so the value can be evaluated inside the call.
                return self._store(node.targets[0], value)
            holder = self._temp()
            first = self._located(
                ast.Assign(targets=[ast.Name(id=holder, ctx=ast.Store())], value=value), node
            )
            store = self._store(node.targets[0], ast.Name(id=holder, ctx=ast.Load()))
            return [first, store, *self._cleanup([holder], node)]
        holder = self._temp()
        temps = [holder]
        stmts: list[ast.stmt] = [
            self._located(ast.Assign(targets=[ast.Name(id=holder, ctx=ast.Store())], value=value), node)
        ]
        for target in node.targets:
            if isinstance(target, ast.Attribute):
                stmts.append(self._store(target, ast.Name(id=holder, ctx=ast.Load())))
                continue
            pending: list[tuple[ast.Attribute, str]] = []
            pattern = self._replace_attributes(target, pending, temps)
            stmts.append(
                self._located(ast.Assign(targets=[pattern], value=ast.Name(id=holder, ctx=ast.Load())), node)
            )
            for attr, name in pending:
                stmts.append(self._store(attr, ast.Name(id=name, ctx=ast.Load())))
        return stmts + self._cleanup(temps, node)

    def _replace_attributes(
        self, target: ast.expr, pending: list[tuple[ast.Attribute, str]], temps: list[str]
    ) -> ast.expr:
        if isinstance(target, ast.Attribute):
            name = self._temp()
            temps.append(name)
            pending.append((target, name))
            return self._located(ast.Name(id=name, ctx=ast.Store()), target)
        if isinstance(target, ast.Tuple | ast.List):
            target.elts = [self._replace_attributes(e, pending, temps) for e in target.elts]
            return target
        if isinstance(target, ast.Starred):
            target.value = self._replace_attributes(target.value, pending, temps)
            return target
        return self.visit(target)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST | list[ast.stmt]:
        if not isinstance(node.target, ast.Attribute):
            self.generic_visit(node)
            return node
        if node.value is None:
            return self._located(ast.Expr(value=self.visit(node.target.value)), node)
        holder = self._temp()
        first = self._located(
            ast.Assign(targets=[ast.Name(id=holder, ctx=ast.Store())], value=self.visit(node.value)), node
        )
        return [
            first,
            self._store(node.target, ast.Name(id=holder, ctx=ast.Load())),
            *self._cleanup([holder], node),
        ]

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST | list[ast.stmt]:
        if not isinstance(node.target, ast.Attribute):
            self.generic_visit(node)
            return node
        target = node.target
        holder = self._temp()
        attr = self._mangle(target.attr)
        first = self._located(
            ast.Assign(targets=[ast.Name(id=holder, ctx=ast.Store())], value=self.visit(target.value)), node
        )
        current = self._call(rules.GUARD_GETATTR, ast.Name(id=holder, ctx=ast.Load()), ast.Constant(attr))
        combined = self._call(
            rules.GUARD_INPLACE, ast.Constant(type(node.op).__name__), current, self.visit(node.value)
        )
        store = self._call(
            rules.GUARD_SETATTR, ast.Name(id=holder, ctx=ast.Load()), ast.Constant(attr), combined
        )
        return [first, self._located(ast.Expr(value=store), node), *self._cleanup([holder], node)]

    def visit_Delete(self, node: ast.Delete) -> ast.AST | list[ast.stmt]:
        if not any(isinstance(t, ast.Attribute) for t in node.targets):
            self.generic_visit(node)
            return node
        stmts: list[ast.stmt] = []
        for target in node.targets:
            if isinstance(target, ast.Attribute):
                call = self._call(
                    rules.GUARD_DELATTR, self.visit(target.value), ast.Constant(self._mangle(target.attr))
                )
                stmts.append(self._located(ast.Expr(value=call), node))
            else:
                stmts.append(self._located(ast.Delete(targets=[self.visit(target)]), node))
        return stmts

    # loads
    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        node.value = self.visit(node.value)
        attr = node.attr
        if isinstance(node.ctx, ast.Load) and (
            rules.is_private(attr) or attr in rules.GUARDED_DUNDER_ATTRS or attr in rules.FORMAT_ATTRS
        ):
            call = self._call(rules.GUARD_GETATTR, node.value, ast.Constant(self._mangle(attr)))
            return self._located(call, node)
        return node


_N = TypeVar("_N", bound=ast.AST)
_LEAVES = frozenset({ast.Name, ast.Constant})
_GUARD_VISITORS: dict[type[ast.AST], Callable[[_Guarder, Any], Any]] = {
    getattr(ast, name[len("visit_") :]): method
    for name, method in vars(_Guarder).items()
    if name.startswith("visit_") and name != "visit"
}
