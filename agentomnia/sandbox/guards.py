"""Run-time guards and the restricted builtins of one sandbox namespace.

The static policy rewrites attribute stores, deletes and sensitive loads into calls to the guards
built here (see `policy._Guarder`); the dynamic builtins (`getattr`, `setattr`, `vars`, `dir`,
`hasattr`, `delattr`) route through the same checks, so a name spelled in a string is judged exactly
like a name spelled in the source.

The rule is ownership. Every class created by a `class` statement in the sandboxed code is recorded
in the namespace's registry. Code may write attributes only on those classes and their instances,
and read private attributes or `__dict__` only where the attribute is defined by such a class or
held in such an instance. Everything else (stdlib classes, module views, functions, the shared
decimal context) stays read-only and opaque, which both closes the known escape roads that go
through private members and keeps one session from changing what another session in the same
worker sees.
"""

from __future__ import annotations

import builtins
import copy
import operator
import string
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from agentomnia.sandbox import rules, views


class SandboxViolation(Exception):
    """Generated code tried something the guards refuse; the message names it."""


_INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "Add": operator.iadd,
    "Sub": operator.isub,
    "Mult": operator.imul,
    "MatMult": operator.imatmul,
    "Div": operator.itruediv,
    "FloorDiv": operator.ifloordiv,
    "Mod": operator.imod,
    "Pow": operator.ipow,
    "LShift": operator.ilshift,
    "RShift": operator.irshift,
    "BitOr": operator.ior,
    "BitXor": operator.ixor,
    "BitAnd": operator.iand,
}

_SAFE_BUILTIN_NAMES = (
    "abs",
    "all",
    "any",
    "ascii",
    "bin",
    "bool",
    "bytearray",
    "bytes",
    "callable",
    "chr",
    "classmethod",
    "complex",
    "dict",
    "divmod",
    "enumerate",
    "filter",
    "float",
    "format",
    "frozenset",
    "hash",
    "hex",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "list",
    "map",
    "max",
    "min",
    "next",
    "object",
    "oct",
    "ord",
    "pow",
    "property",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "slice",
    "sorted",
    "staticmethod",
    "str",
    "sum",
    "super",
    "tuple",
    "type",
    "zip",
    "None",
    "True",
    "False",
    "Ellipsis",
    "NotImplemented",
)


def _exception_names() -> tuple[str, ...]:
    names = []
    for name in dir(builtins):
        value = getattr(builtins, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            names.append(name)
    return tuple(names)


_BASE_BUILTINS: dict[str, object] = {name: getattr(builtins, name) for name in _SAFE_BUILTIN_NAMES}
_BASE_BUILTINS.update({name: getattr(builtins, name) for name in _exception_names()})
_BASE_BUILTINS["SandboxViolation"] = SandboxViolation

_real_getattr = builtins.getattr
_real_setattr = builtins.setattr
_real_delattr = builtins.delattr
_FORMATTER = string.Formatter()


def _check_format(template: str) -> None:
    for _, field, spec, _ in _FORMATTER.parse(template):
        if field and ("." in field or "[_" in field):
            raise SandboxViolation(
                f"format field `{{{field}}}` reads attributes; use an f-string or pass the value itself"
            )
        if spec and "{" in spec:
            _check_format(spec)


def _safe_format(template: str) -> Callable[..., str]:
    def format(*args: Any, **kwargs: Any) -> str:
        _check_format(template)
        return template.format(*args, **kwargs)

    return format


def _safe_format_map(template: str) -> Callable[[Any], str]:
    def format_map(mapping: Any) -> str:
        _check_format(template)
        return template.format_map(mapping)

    return format_map


class Output:
    """What `print` wrote during one call or program, capped so a flood cannot exhaust memory."""

    __slots__ = ("chars", "limit", "parts", "truncated")

    def __init__(self, limit: int = 65_536) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.chars = 0
        self.truncated = False

    def write(self, text: str) -> None:
        room = self.limit - self.chars
        if room <= 0:
            self.truncated = True
            return
        piece = text[:room]
        self.parts.append(piece)
        self.chars += len(piece)
        if len(piece) < len(text):
            self.truncated = True

    def clear(self) -> None:
        self.parts.clear()
        self.chars = 0
        self.truncated = False

    def text(self) -> str:
        return "".join(self.parts) + ("\n[output truncated]" if self.truncated else "")


class Namespace:
    """One execution namespace: globals, restricted builtins and the registry of owned classes."""

    def __init__(
        self, ambient: views.Ambient, output: Output, extra_globals: dict[str, Any] | None = None
    ) -> None:
        self.ambient = ambient
        self.output = output
        self.registry: set[type] = set()
        # (class, name) pairs whose lookup resolves to a definition in an owned class. Cleared on any
        # attribute store or delete on a class, the only way that resolution can change.
        self._resolved: set[tuple[type, str]] = set()
        self.random = views.random_view(ambient)
        # Globals are a module's dict so that stdlib code resolving names through the class's module
        # (dataclasses reading string annotations) finds them while the module body runs.
        self.module = types.ModuleType(rules.ENV_MODULE_NAME)
        self.globals: dict[str, Any] = self.module.__dict__
        self.globals["__builtins__"] = self._builtins()
        if extra_globals:
            self.globals.update(extra_globals)

    @contextmanager
    def module_visible(self) -> Iterator[None]:
        """Register the module while its body runs; unregistered afterwards, so instances of its
        classes never pickle by reference (snapshots of such state use deep copies instead)."""
        previous = sys.modules.get(rules.ENV_MODULE_NAME)
        sys.modules[rules.ENV_MODULE_NAME] = self.module
        try:
            yield
        finally:
            if previous is None:
                sys.modules.pop(rules.ENV_MODULE_NAME, None)
            else:
                sys.modules[rules.ENV_MODULE_NAME] = previous

    # ownership
    def register(self, cls: type) -> None:
        self.registry.add(cls)

    def owns(self, obj: object) -> bool:
        registry = self.registry
        if isinstance(obj, type):
            return obj in registry
        return type(obj) in registry

    def _defined_by_owned(self, mro: tuple[type, ...], name: str) -> bool | None:
        for klass in mro:
            if name in klass.__dict__:
                return klass in self.registry
        return None

    def may_read(self, obj: object, name: str) -> bool:
        if name in rules.FRAME_ATTRS:
            return False
        if rules.is_dunder(name):
            if name in rules.SAFE_DUNDER_ATTRS:
                return True
            return name in rules.GUARDED_DUNDER_ATTRS and self.owns(obj)
        if not name.startswith("_"):
            return True
        if isinstance(obj, super):
            this: type = _real_getattr(obj, "__thisclass__")
            if this not in self.registry:
                return False
            self_class: type | None = _real_getattr(obj, "__self_class__")
            mro = self_class.__mro__ if self_class is not None else this.__mro__
            after = mro[mro.index(this) + 1 :] if this in mro else ()
            found = self._defined_by_owned(after, name)
            return True if found is None else found
        if isinstance(obj, type):
            found = self._defined_by_owned(obj.__mro__, name)
            return obj in self.registry if found is None else found
        kind = type(obj)
        if kind not in self.registry:
            return False
        instance_dict = _instance_dict(obj)
        if instance_dict is not None and name in instance_dict:
            return True
        found = self._defined_by_owned(kind.__mro__, name)
        if found:
            self._resolved.add((kind, name))
        return True if found is None else found

    def may_write(self, obj: object, name: str) -> bool:
        if rules.is_dunder(name) or name in rules.FRAME_ATTRS:
            return False
        return self.owns(obj)

    # guards
    def guard_getattr(self, obj: object, name: object, *default: object) -> object:
        if not isinstance(name, str):
            raise TypeError(f"attribute name must be a string, not {type(name).__name__}")
        if name in rules.FORMAT_ATTRS:
            if isinstance(obj, str):
                return _safe_format(obj) if name == "format" else _safe_format_map(obj)
            if obj is str:
                raise SandboxViolation(
                    "`str.format` is not available unbound; call `.format` on the string or use an f-string"
                )
        elif (
            (name.startswith("_") or name in rules.FRAME_ATTRS)
            and (type(obj), name) not in self._resolved
            and not self.may_read(obj, name)
        ):
            raise SandboxViolation(
                f"reading `{name}` of a {_describe(obj)} is not allowed: private and internal attributes are "
                "readable only on objects of classes the environment defines"
            )
        return _real_getattr(obj, name, *default)

    def guard_hasattr(self, obj: object, name: object) -> bool:
        try:
            self.guard_getattr(obj, name)
        except AttributeError:
            return False
        return True

    def guard_setattr(self, obj: object, name: object, value: object) -> None:
        if not isinstance(name, str):
            raise TypeError(f"attribute name must be a string, not {type(name).__name__}")
        if not self.may_write(obj, name):
            raise SandboxViolation(
                f"setting `{name}` on a {_describe(obj)} is not allowed: only objects of classes the environment "
                "defines can be changed (keep state on the environment instance)"
            )
        if isinstance(obj, type):
            self._resolved.clear()
        _real_setattr(obj, name, value)

    def guard_delattr(self, obj: object, name: object) -> None:
        if not isinstance(name, str):
            raise TypeError(f"attribute name must be a string, not {type(name).__name__}")
        if not self.may_write(obj, name):
            raise SandboxViolation(f"deleting `{name}` of a {_describe(obj)} is not allowed")
        if isinstance(obj, type):
            self._resolved.clear()
        _real_delattr(obj, name)

    def guard_vars(self, *args: object) -> object:
        if len(args) != 1:
            raise SandboxViolation("`vars()` needs an object in the sandbox; call `vars(self)`")
        (obj,) = args
        if not self.owns(obj):
            raise SandboxViolation(
                f"`vars()` of a {_describe(obj)} is not allowed; only objects the environment defines"
            )
        return _real_getattr(obj, "__dict__")

    def guard_dir(self, *args: object) -> list[str]:
        if len(args) != 1:
            raise SandboxViolation("`dir()` needs an object in the sandbox")
        return [name for name in builtins.dir(args[0]) if not name.startswith("_")]

    def build_class(self, func: Callable[..., Any], name: str, *bases: Any, **kwargs: Any) -> Any:
        if "metaclass" in kwargs:
            raise SandboxViolation(f"class `{name}`: custom metaclasses are not supported")
        cls = builtins.__build_class__(func, name, *bases, **kwargs)
        self.registry.add(cls)
        return cls

    def guard_import(
        self, name: str, globals_: object = None, locals_: object = None, fromlist: Any = (), level: int = 0
    ) -> object:
        if level:
            raise ImportError("relative imports are not available in the sandbox")
        if name not in rules.ALLOWED_MODULES:
            raise ImportError(f"module `{name}` is not on the sandbox allow-list")
        if name == "random":
            return self.random
        if name == "copy":
            return _COPY_VIEW
        if not fromlist and "." in name:
            return views.SHARED_VIEWS[name.split(".")[0]]
        return views.SHARED_VIEWS[name]

    def guard_print(self, *args: object, sep: str | None = " ", end: str | None = "\n", **_: object) -> None:
        text = (sep if sep is not None else " ").join(str(a) for a in args) + (
            end if end is not None else "\n"
        )
        self.output.write(text)

    def _builtins(self) -> dict[str, object]:
        table = dict(_BASE_BUILTINS)
        table.update(
            {
                "__build_class__": self.build_class,
                "__import__": self.guard_import,
                "getattr": self.guard_getattr,
                "hasattr": self.guard_hasattr,
                "setattr": self.guard_setattr,
                "delattr": self.guard_delattr,
                "vars": self.guard_vars,
                "dir": self.guard_dir,
                "print": self.guard_print,
                rules.GUARD_GETATTR: self.guard_getattr,
                rules.GUARD_SETATTR: self.guard_setattr,
                rules.GUARD_DELATTR: self.guard_delattr,
                rules.GUARD_INPLACE: _inplace,
            }
        )
        return table


# `copy.deepcopy` is what generated environments spend most of their time in (every record they
# return or change, and the whole init_config on every construction and reset). Plain data is
# copied here with the same memo and keep-alive bookkeeping, in the same order, as copy.deepcopy
# does it, so the result (sharing and cycles included) is the same; anything else, and any call
# that passes its own memo, is copy.deepcopy itself.
_stdlib_deepcopy = copy.deepcopy
_ATOMS = frozenset({str, int, float, bool, type(None)})
_NIL: Any = object()


def deepcopy(x: Any, memo: dict[int, Any] | None = None) -> Any:
    """copy.deepcopy, faster on plain data (exact dicts and lists of str, int, float, bool, None)."""
    if memo is not None:
        return _stdlib_deepcopy(x, memo)
    kind = type(x)
    if kind in _ATOMS:
        return x
    if kind is dict or kind is list:
        return _copy_plain(x, {})
    return _stdlib_deepcopy(x)


def _copy_plain(x: Any, memo: dict[int, Any]) -> Any:
    key = id(x)
    y = memo.get(key, _NIL)
    if y is not _NIL:
        return y
    atoms = _ATOMS
    if type(x) is dict:
        y = {}
        memo[key] = y
        for k, v in x.items():
            # `y[deepcopy(k)] = deepcopy(v)` copies the value first, then the key
            kind = type(v)
            if kind not in atoms:
                v = _copy_plain(v, memo) if kind is dict or kind is list else _stdlib_deepcopy(v, memo)
            kind = type(k)
            if kind not in atoms:
                k = _copy_plain(k, memo) if kind is dict or kind is list else _stdlib_deepcopy(k, memo)
            y[k] = v
    else:
        y = []
        memo[key] = y
        append = y.append
        for v in x:
            kind = type(v)
            if kind not in atoms:
                v = _copy_plain(v, memo) if kind is dict or kind is list else _stdlib_deepcopy(v, memo)
            append(v)
    # what copy.deepcopy does once an object is copied: memoize it and keep the original alive
    memo[key] = y
    alive = memo.get(id(memo))
    if alive is None:
        memo[id(memo)] = [x]
    else:
        alive.append(x)
    return y


def _copy_view() -> types.ModuleType:
    shared = views.SHARED_VIEWS["copy"]
    view = types.ModuleType(shared.__name__)
    view.__dict__.update({k: v for k, v in shared.__dict__.items() if k not in ("__name__", "__doc__")})
    view.__dict__["deepcopy"] = deepcopy
    return view


_COPY_VIEW = _copy_view()


def _inplace(op: str, current: Any, value: Any) -> Any:
    return _INPLACE[op](current, value)


def _instance_dict(obj: object) -> dict[str, Any] | None:
    try:
        found = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return None
    return found if isinstance(found, dict) else None


def _describe(obj: object) -> str:
    if isinstance(obj, type):
        return f"class `{obj.__name__}`"
    kind = type(obj).__name__
    if kind == "module":
        return f"module `{_real_getattr(obj, '__name__', '?')}`"
    return f"`{kind}` object"
