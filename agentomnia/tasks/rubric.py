"""Outcome-focused rubrics built from a task's description, initial state, reference run and end state.

Items test what the task asked for, not how it was done: each requested change is a state check
(a field now holds its new value, a record exists with the given fields, a record is gone), each
requested answer is an answer check with tolerant matching, and one general item forbids collateral
changes. None of them needs the reference call order, so any path to the right end state and answer
scores 1.0. Every item carries a deterministic check; a task built here never needs a judge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentomnia.envs.spec import EnvSpec
from agentomnia.tasks.grading import diff_states
from agentomnia.tasks.models import Check, RubricItem


def _entity_by_table(spec: EnvSpec, table: str) -> Any:
    return next((e for e in spec.entities if e.table == table), None)


def build_rubric(
    spec: EnvSpec,
    initial: Mapping[str, Any],
    final: Mapping[str, Any],
    answer: Mapping[str, Any],
    answer_texts: Mapping[str, str],
    *,
    created_fields: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> tuple[RubricItem, ...]:
    """Rubric items for the change initial -> final and the expected answer.

    `created_fields` maps a table to the field values each created record was given in the request
    (new keys depend on the order of creates, so new records are matched by content, not key).
    """
    items: list[RubricItem] = []
    allowed: list[dict[str, Any]] = []
    created = {t: list(v) for t, v in (created_fields or {}).items()}
    n = 0
    for d in diff_states(initial, final):
        table, key, fname = d["table"], d["key"], d["field"]
        entity = _entity_by_table(spec, table)
        if entity is None or key is None:
            continue
        if key not in (initial.get(table) or {}):
            allowed.append({"table": table, "key": None})
            continue
        allowed.append({"table": table, "key": key})
        if fname is None and d["after"] is None:
            n += 1
            items.append(
                RubricItem(
                    id=f"T{n}", scope="task", weight=2,
                    text=f"The {entity.name.replace('_', ' ')} {key} has been removed.",
                    check=Check(kind="record_absent", table=table, match={entity.key: key}),
                )
            )  # fmt: skip
            continue
        attr = entity.attribute(fname) if fname else None
        if attr is None:
            continue
        n += 1
        items.append(
            RubricItem(
                id=f"T{n}", scope="task", weight=2,
                text=f"{table}[{key}].{fname} is {d['after']!r} (was {d['before']!r}).",
                check=Check(kind="field_equals", table=table, key=key, field=fname, value=d["after"], tolerance=0.01),
            )
        )  # fmt: skip
    for table, records in sorted(created.items()):
        for fields in records:
            n += 1
            items.append(
                RubricItem(
                    id=f"T{n}", scope="task", weight=2,
                    text=f"A new record in {table} has {dict(fields)}.",
                    check=Check(kind="record_exists", table=table, match=dict(fields), tolerance=0.01),
                )
            )  # fmt: skip
    for field, value in answer.items():
        n += 1
        items.append(
            RubricItem(
                id=f"T{n}", scope="task", weight=2, level="advanced" if field.startswith(("total", "check", "larger", "difference", "combined", "matching", "top")) else "basic",
                text=f"The answer gives {answer_texts.get(field, field)} as {value!r} (field `{field}`).",
                check=Check(kind="answer_equals", field=field, value=value, tolerance=0.01),
            )
        )  # fmt: skip
    items.append(
        RubricItem(
            id="G1",
            scope="general",
            weight=1,
            text="Nothing outside the requested records was changed.",
            check=Check(kind="diff_within", value=_dedupe(allowed)),
        )
    )
    return tuple(items)


def _dedupe(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    for e in entries:
        if dict(e) not in seen:
            seen.append(dict(e))
    return seen
