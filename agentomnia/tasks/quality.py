"""Task-trajectory-state consistency (paper §4.4.1, step 6), shared by every task synthesizer.

A kept task must hang together: every write of the reference serves an objective the description
states or implies (names its record), nothing changes in the end state that no objective covers
(a trajectory that edits an unrelated record, or pursues another goal, is rejected), every answer
field is asked for in the description, and every argument of the reference is grounded — its
recorded source is the initial state (and the value really is there), an earlier step's output, or
the description itself. Auxiliary reads need no objective: looking things up is how the agent plans.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from agentomnia.dates import date_forms
from agentomnia.envs.spec import EnvSpec, compound_of
from agentomnia.envs.values import written_figure, written_number
from agentomnia.tasks.models import Task

_SOURCE = re.compile(
    r"^(?:s0:(?P<table>[^.]+)\.(?P<key>[^.]+)\.(?P<field>.+)|out:(?P<step>\d+)\..+|query|literal)$"
)


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _stated(value: Any, query: str) -> bool:
    """Whether the description states a value (as written, or with underscores read as spaces)."""
    if isinstance(value, bool) or value is None:
        return True  # yes/no settings are phrased, not quoted
    if isinstance(value, list):  # a filter a parameter takes as a list: each value it holds
        return bool(value) and all(_stated(v, query) for v in value)
    text = _norm(query)
    forms = {
        *date_forms(str(value)),
        written_number(value) if isinstance(value, float) else str(value),
        *((written_figure(value),) if isinstance(value, (int, float)) else ()),
        str(value).replace("_", " "),
    }
    return any(_norm(f) in text for f in forms)


def _same(held: Any, passed: Any) -> bool:
    """A recorded value and the argument taken from it: equal, or the same number written as the text
    a parameter declared as a string takes (a seed's integer pet id given to a domain tool's `pet_id`)."""
    if held == passed:
        return True
    scalar = (int, str)
    return (
        isinstance(held, scalar) and isinstance(passed, scalar) and not isinstance(held, bool)
        and not isinstance(passed, bool) and type(held) is not type(passed) and str(held) == str(passed)
    )  # fmt: skip


def _told(param: str, value: Any, task: Task) -> bool:
    """A multi-turn task's withheld detail: the simulated user gives it when the agent asks."""
    return (
        task.persona is not None and param in task.persona.withheld and task.persona.withheld[param] == value
    )


def grounding_problems(task: Task) -> list[str]:
    """Arguments whose recorded source is missing, malformed, in the future, or not in s0."""
    out: list[str] = []
    for i, call in enumerate(task.reference_calls):
        for param, value in call.args.items():
            source = call.sources.get(param)
            if source is None:
                out.append(f"step {i} {call.tool}: argument `{param}` has no recorded source")
                continue
            m = _SOURCE.match(source)
            if m is None:
                out.append(
                    f"step {i} {call.tool}: source {source!r} of `{param}` is not s0:/out:/query/literal"
                )
            elif m.group("step") is not None and int(m.group("step")) >= i:
                out.append(
                    f"step {i} {call.tool}: `{param}` comes from step {m.group('step')}, which has not run yet"
                )
            elif source == "query" and not _stated(value, task.query) and not _told(param, value, task):
                out.append(
                    f"step {i} {call.tool}: `{param}`={value!r} is said to come from the description, which never states it"
                )
            elif m.group("table") is not None:
                record = (task.init_config.get(m.group("table")) or {}).get(m.group("key"))
                if not isinstance(record, Mapping) or not _same(record.get(m.group("field")), value):
                    out.append(
                        f"step {i} {call.tool}: `{param}`={value!r} is not in the initial state at {source}"
                    )
    return out


def consistency_problems(task: Task, spec: EnvSpec) -> list[str]:
    """Everything that breaks task-trajectory-state consistency; empty when the task hangs together."""
    problems = grounding_problems(task)
    query = _norm(task.query)
    objectives: list[dict[str, Any]] = list(task.internal_spec.get("objectives", []))
    by_step = {int(o["step"]): o for o in objectives if "step" in o}
    writes = {t.name for t in spec.tools if t.kind == "write"}
    for i, call in enumerate(task.reference_calls):
        if call.tool in writes and i not in by_step:
            problems.append(
                f"step {i} writes with {call.tool} but no objective in the description asks for it"
            )
    for o in objectives:
        mention = str(o.get("mention", ""))
        if not mention or _norm(mention) not in query:
            problems.append(
                f"objective of step {o.get('step')} ({o.get('op')}) is not stated in the description: {mention!r}"
            )
    targets = {(o.get("table"), str(o.get("key"))) for o in objectives}  # a seed's key may be a number
    create_tables = {o.get("table") for o in objectives if o.get("op") == "create"}
    follows = _declared_effects(task, spec, asked=set(by_step))
    for d in task.expected_diff:
        table, key = str(d.get("table")), d.get("key")
        if not isinstance(task.init_config.get(table), Mapping):
            continue
        new = key not in task.init_config[table]
        if (table, str(key)) not in targets and not (new and table in create_tables) and table not in follows:
            problems.append(
                f"the reference changes {table}[{key}], which no objective names (an unrelated record)"
            )
    for field in task.expected_answer:
        if f'"{field}"' not in task.query:
            problems.append(f"answer field {field!r} is never asked for in the description")
    return problems


def _declared_effects(task: Task, spec: EnvSpec, *, asked: set[int]) -> set[str]:
    """The tables that the reference's asked-for writes (the steps in `asked`) change by their
    declared behaviour beyond their own record (approving an invoice moves the invoice, a fill takes
    stock from its lot): a change there follows from what the request asks, not an unrelated edit."""
    names = {t.name: t for t in spec.tools}
    tables: set[str] = set()
    for i, call in enumerate(task.reference_calls):
        tool = names.get(call.tool) if i in asked else None
        found = compound_of(tool) if tool is not None and tool.kind == "write" else None
        if tool is None or found is None:
            continue
        tables |= {spec.entity(x).table for x in found.get("touches", ()) if x != tool.entity}
    return tables
