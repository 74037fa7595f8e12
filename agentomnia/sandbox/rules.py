"""The rule tables shared by the static policy (parent side) and the runtime guards (worker side).

Keeping them in one stdlib-only module means the check done on the source before it runs and the
check done on a dynamic `getattr(obj, name)` while it runs can never disagree about what is allowed.
"""

from __future__ import annotations

# Modules generated code may import. Each is handed over as a read-only *view* holding only public,
# non-module attributes (so `random._os`, `json.decoder` and the like do not exist inside), with a
# few members removed because they evaluate strings as code, reach shared process state or read the
# real clock. `random`, `uuid` and `datetime.now()` are rebound to a per-session seeded generator and
# a logical clock so every environment is deterministic by construction.
ALLOWED_MODULES: frozenset[str] = frozenset(
    {
        "__future__",
        "collections",
        "collections.abc",
        "copy",
        "dataclasses",
        "datetime",
        "decimal",
        "enum",
        "functools",
        "itertools",
        "json",
        "math",
        "random",
        "re",
        "statistics",
        "string",
        "typing",
        "uuid",
    }
)

# Members left out of the module views, with the reason shown to the author of the code.
WITHHELD_MEMBERS: dict[str, dict[str, str]] = {
    "typing": {
        "get_type_hints": "it evaluates string annotations as code",
        "ForwardRef": "it evaluates strings as code",
    },
    "functools": {
        "update_wrapper": "it copies arbitrary attributes between objects",
        "wraps": "it copies arbitrary attributes between objects",
        "singledispatch": "it evaluates string annotations as code",
        "singledispatchmethod": "it evaluates string annotations as code",
    },
    "string": {"Formatter": "it reads arbitrary attributes named in a string"},
    "decimal": {
        "setcontext": "the decimal context is shared by every session in a worker",
        "DefaultContext": "it is shared by every session in a worker",
        "BasicContext": "it is shared by every session in a worker",
        "ExtendedContext": "it is shared by every session in a worker",
    },
    "uuid": {
        "uuid1": "it reads the host's clock and network address; use uuid4 (seeded)",
        "getnode": "it reads the host's network address",
    },
    "random": {"SystemRandom": "it is not reproducible; use the seeded module functions"},
    "enum": {
        "global_enum": "it writes into the module registry",
        "global_enum_repr": "it writes into the module registry",
        "global_str": "it writes into the module registry",
        "global_flag_repr": "it writes into the module registry",
    },
    "dataclasses": {},
}

# Builtins that do not exist inside the sandbox. Referring to one that the code never binds itself
# is refused statically so the author sees the problem before anything runs.
FORBIDDEN_BUILTINS: frozenset[str] = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "open",
        "input",
        "breakpoint",
        "globals",
        "locals",
        "help",
        "exit",
        "quit",
        "copyright",
        "credits",
        "license",
        "memoryview",
        "id",
    }
)

# Dunder names code may *read* as attributes: naming, construction and operator protocol methods.
# Everything else double-underscored (`__subclasses__`, `__globals__`, `__code__`, `__mro__`, ...)
# is the usual road out of a Python sandbox and is refused. `__dict__` is allowed only on objects
# the generated code created itself (checked at run time).
SAFE_DUNDER_ATTRS: frozenset[str] = frozenset(
    {
        "__name__",
        "__qualname__",
        "__doc__",
        "__class__",
        "__init__",
        "__post_init__",
        "__repr__",
        "__str__",
        "__format__",
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__hash__",
        "__len__",
        "__iter__",
        "__next__",
        "__reversed__",
        "__contains__",
        "__getitem__",
        "__setitem__",
        "__delitem__",
        "__missing__",
        "__bool__",
        "__enter__",
        "__exit__",
        "__call__",
        "__members__",
        "__annotations__",
        "__add__",
        "__sub__",
        "__mul__",
        "__truediv__",
        "__floordiv__",
        "__mod__",
        "__neg__",
        "__abs__",
    }
)
GUARDED_DUNDER_ATTRS: frozenset[str] = frozenset({"__dict__"})

# Non-underscore attributes of frames, generators, coroutines, tracebacks and code objects: each
# leads from an ordinary object to the interpreter's stack and the trusted code's globals.
FRAME_ATTRS: frozenset[str] = frozenset(
    {
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "cr_frame",
        "cr_code",
        "cr_await",
        "cr_origin",
        "ag_frame",
        "ag_code",
        "ag_await",
        "f_back",
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_code",
        "f_trace",
        "tb_frame",
        "tb_next",
        "co_code",
        "co_consts",
        "co_names",
    }
)

# Attributes resolved through a runtime guard: `str.format` reads attributes named inside the format
# string, so the guard hands out a formatter that refuses attribute fields.
FORMAT_ATTRS: frozenset[str] = frozenset({"format", "format_map"})

# Special methods generated code may not define: they run at moments the sandbox does not control
# (garbage collection, pickling, class creation) or intercept the guards' own attribute reads.
DENIED_DEFINITIONS: frozenset[str] = frozenset(
    {
        "__del__",
        "__getattribute__",
        "__reduce__",
        "__reduce_ex__",
        "__getstate__",
        "__setstate__",
        "__init_subclass__",
        "__set_name__",
        "__class_getitem__",
        "__instancecheck__",
        "__subclasscheck__",
        "__prepare__",
        "__mro_entries__",
    }
)

# Dunder names a module or class body may assign (metadata only).
ASSIGNABLE_DUNDER_NAMES: frozenset[str] = frozenset({"__all__", "__version__", "__author__", "__slots__"})
READABLE_DUNDER_NAMES: frozenset[str] = frozenset({"__name__"})

# Names the rewritten code calls; they live in the sandbox builtins, out of the author's reach
# because the static policy refuses every other double-underscored name.
GUARD_GETATTR = "__sb_getattr__"
GUARD_SETATTR = "__sb_setattr__"
GUARD_DELATTR = "__sb_delattr__"
GUARD_INPLACE = "__sb_inplace__"
TEMP_PREFIX = "__sb_t"

# Namespace `__name__` of executed code. Not importable, so pickling an instance of a class the code
# defined fails cleanly (and the runtime falls back to deep copies) instead of importing anything.
ENV_MODULE_NAME = "__sandbox_env__"


def is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def is_private(name: str) -> bool:
    return name.startswith("_") and not is_dunder(name)
