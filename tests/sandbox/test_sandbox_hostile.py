"""A corpus of hostile code: each snippet is refused statically or contained at run time, the pool
recovers, and a bystander session in the same worker keeps its exact state."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from agentomnia.sandbox import Bundle, LoadError, PolicyError, Sandbox, Session

ToolFactory = Callable[..., dict[str, Any]]

TEMPLATE = """
import json, decimal, random, collections, itertools
{module}

class Hostile:
    def __init__(self, init_config):
        self.counter = 0
{init}
    def poke(self):
        self.counter += 1
        return {{"ok": True, "data": self.counter, "error": None}}

    def attack(self):
{body}
        return {{"ok": True, "data": None, "error": None}}
"""


@dataclass(frozen=True)
class Snippet:
    name: str
    body: str = "pass"
    module: str = ""
    init: str = ""
    expect: str = "static"  # "static", "load" (refused when the class is built), or failure codes "a|b"


def _indent(text: str, depth: int) -> str:
    return textwrap.indent(textwrap.dedent(text).strip("\n"), " " * depth)


CORPUS = [
    # refused by the static policy before anything runs
    Snippet("read_etc_passwd", "return {'ok': True, 'data': open('/etc/passwd').read(), 'error': None}"),
    Snippet("write_outside_scratch", "open('/tmp/pwned', 'w').write('x')"),
    Snippet("spawn_subprocess", "subprocess.run(['id'])", module="import subprocess"),
    Snippet("os_system", "os.system('id')", module="import os"),
    Snippet("fork_bomb", "while True:\n    os.fork()", module="import os"),
    Snippet("open_socket", "socket.create_connection(('example.com', 80))", module="import socket"),
    Snippet("dunder_import", "__import__('os').system('id')"),
    Snippet("importlib", "importlib.import_module('os')", module="import importlib"),
    Snippet("builtins_module", "builtins.open('/etc/passwd')", module="import builtins"),
    Snippet("builtins_dict", "__builtins__['open']('/etc/passwd')"),
    Snippet(
        "subclasses_walk", "[c for c in ().__class__.__bases__[0].__subclasses__() if 'wrap' in c.__name__]"
    ),
    Snippet("function_globals", "self.poke.__func__.__globals__['__builtins__']"),
    Snippet("generator_frame_walk", "gen = (x for x in [1])\nframe = gen.gi_frame.f_back.f_globals"),
    Snippet("signal_tampering", "signal.signal(signal.SIGALRM, signal.SIG_IGN)", module="import signal"),
    Snippet("eval_string", "eval(\"__import__('os').system('id')\")"),
    Snippet("exec_string", "exec('import os')"),
    Snippet("ctypes", "ctypes.CDLL(None)", module="import ctypes"),
    Snippet("sys_modules", "sys.modules['os'].system('id')", module="import sys"),
    Snippet(
        "metaclass", "pass", module="class Meta(type):\n    pass\n\nclass Sneaky(metaclass=Meta):\n    pass"
    ),
    Snippet(
        "finalizer_hook",
        "pass",
        module="class Later:\n    def __del__(self):\n        while True:\n            pass",
    ),
    Snippet("type_hints_eval", "get_type_hints(self.attack)", module="from typing import get_type_hints"),
    Snippet("globals_builtins", "globals()['__builtins__']"),
    Snippet("pathlib_read", "Path('/etc/passwd').read_text()", module="from pathlib import Path"),
    Snippet("threading", "threading.Thread(target=print).start()", module="import threading"),
    # contained at run time
    Snippet(
        "dynamic_dunder_getattr",
        "getattr(getattr((), '__cl' + 'ass__'), '__subcl' + 'asses__')()",
        expect="policy_violation",
    ),
    Snippet(
        "format_string_escape",
        "return {'ok': True, 'data': '{0.__class__.__mro__}'.format(self), 'error': None}",
        expect="policy_violation",
    ),
    Snippet("private_module_member", "random._os.system('id')", expect="policy_violation"),
    Snippet("vars_of_module", "vars(json)['JSONEncoder']", expect="policy_violation"),
    Snippet(
        "patch_stdlib_class", "json.JSONEncoder.default = lambda s, o: 'pwned'", expect="policy_violation"
    ),
    Snippet("shared_decimal_context", "decimal.getcontext().prec = 1", expect="policy_violation"),
    Snippet("infinite_loop", "while True:\n    self.counter += 1", expect="timeout"),
    Snippet("c_level_hang", "collections.deque(itertools.repeat(1), maxlen=0)", expect="timeout"),
    Snippet(
        "swallowed_timeout",
        "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass",
        expect="timeout",
    ),
    Snippet("memory_bomb", "self.blob = 'a' * (2 ** 34)", expect="memory_limit"),
    Snippet(
        "memory_growth",
        "blocks = []\nwhile True:\n    blocks.append(bytearray(10 ** 8))",
        expect="memory_limit|timeout",
    ),
    Snippet("deep_recursion", "def down(n):\n    return down(n + 1)\ndown(0)", expect="recursion_limit"),
    Snippet(
        "huge_output",
        "return {'ok': True, 'data': 'x' * 5_000_000, 'error': None}",
        expect="result_too_large",
    ),
    Snippet("print_flood", "for _ in range(100_000):\n    print('x' * 100)", expect="ok|timeout"),
    Snippet("system_exit", "self.counter = 99\nraise SystemExit(0)", expect="tool_raised"),
    Snippet("keyboard_interrupt", "raise KeyboardInterrupt", expect="tool_raised"),
    Snippet("non_json_return", "return {'ok': True, 'data': object(), 'error': None}", expect="bad_return"),
    Snippet("loop_at_load", init="        while True:\n            pass\n", expect="load"),
    Snippet("memory_at_load", init="        self.blob = [0] * (10 ** 10)\n", expect="load"),
]


def _bundle(snippet: Snippet, tool: ToolFactory) -> Bundle:
    source = TEMPLATE.format(module=snippet.module, init=snippet.init, body=_indent(snippet.body, 8))
    return Bundle.from_source(source, [tool("poke"), tool("attack")], {})


@pytest.fixture(scope="module")
def box() -> Iterator[Sandbox]:
    # One worker, so every bystander shares the worker with the attacker.
    with Sandbox(
        workers=1, call_timeout_s=0.5, cpu_seconds=2, memory_mb=768, grace_s=0.5, idle_timeout_s=0
    ) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def bystander(box: Sandbox, shop: Bundle) -> Session:
    session = box.open(shop)
    session.call_many(
        [
            ("create_order", {"customer_id": "CUS-003", "items": [{"product_id": "PRD-001", "quantity": 1}]}),
            ("open_ticket", {"customer_id": "CUS-003", "subject": "Broken pole", "body": "snapped"}),
        ]
    )
    return session


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 25
    assert len({s.name for s in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("snippet", CORPUS, ids=[s.name for s in CORPUS])
def test_hostile_snippet_is_refused_or_contained(
    box: Sandbox, bystander: Session, snippet: Snippet, tool: ToolFactory
) -> None:
    before = bystander.state_hash()
    bundle = _bundle(snippet, tool)
    if snippet.expect == "static":
        with pytest.raises(PolicyError) as caught:
            box.open(bundle)
        assert "line " in str(caught.value)
    elif snippet.expect == "load":
        with pytest.raises(LoadError) as loaded:
            box.open(bundle)
        assert "Hostile" in str(loaded.value)
    else:
        attacker = box.open(bundle)
        attacker.call("poke")
        result = attacker.call("attack")
        outcome = "ok" if result.ok else result.error.code  # type: ignore[union-attr]
        assert outcome in snippet.expect.split("|"), result
        if not result.ok:
            assert result.error is not None and result.error.message
        # The attacker's own session survives with its state rolled back to before the attack.
        assert attacker.call("poke").data == 2
        attacker.close()
    # The bystander, in the same worker, is untouched and keeps working; the pool still serves.
    assert bystander.state_hash() == before
    assert bystander.call("get_order", {"order_id": "O-0046"}).ok


def test_pool_replaced_the_worker_for_hard_limits(box: Sandbox) -> None:
    # c_level_hang and swallowed_timeout cannot be interrupted inside the worker.
    assert box.stats()["workers"][0]["replacements"] >= 2


def test_hostile_checks_and_programs_are_contained(box: Sandbox, bystander: Session) -> None:
    state = {"x": 1}
    static = box.run_check(
        "def check_func(final_state):\n    return open('/etc/passwd') is not None\n", state, state
    )
    assert static.passed is None and static.error is not None and static.error.code == "policy_violation"
    loop = box.run_check(
        "def check_func(final_state):\n    while True:\n        pass\n", state, state, timeout_s=0.3
    )
    assert loop.error is not None and loop.error.code == "timeout"
    escape = box.run_check(
        "def check_func(final_state):\n    return getattr(final_state, '__cl' + 'ass__').__name__ == 'dict'\n",
        state,
        state,
    )
    assert escape.passed is True  # reading a safe dunder dynamically is fine
    walk = box.run_check(
        "def check_func(final_state):\n    return bool(getattr(type(final_state), 'mro')()[-1].__name__)\n",
        state,
        state,
    )
    assert walk.passed is True
    before = bystander.state_hash()
    flood = box.run_program(
        "def solve(call):\n    while True:\n        call('get_order', order_id='O-0046')\n",
        bystander,
        timeout_s=5,
    )
    assert flood.error is not None and "tool calls" in flood.error.message
    spin = box.run_program("def solve(call):\n    while True:\n        pass\n", bystander, timeout_s=0.3)
    assert spin.error is not None and spin.error.code == "timeout"
    assert bystander.state_hash() == before


def test_worker_probe_shows_kernel_layers(box: Sandbox) -> None:
    report = box.containment()
    probe = box.probe()
    if report.get("syscall_filter"):
        for attempt in ("spawn_process", "open_socket", "write_file", "exec_program"):
            assert probe[attempt].startswith("blocked"), (attempt, probe)
    assert report["environment_cleared"] is True and report["imports_blocked"] is True
