"""Judges: rubric decisions from what a run *said and did*, never from its end state.

A judge (an LLM, or a reward model) sees the request, the rubric item, the calls with what they
returned where the transcript keeps it, and the final answer, and must decide the item the way a
code check would from the end state. Calibration (`calibration.judge_calibration`) measures how far
such a judge can be trusted with RL rewards. In LLM mode the judge is
`trajectories.quality.rubric_judge`; offline it is `transcript_judge` here.

The offline judge reads the item's meaning from its structured target (`item.check`: table, key,
field and expected value, a record's fields, an answer field, a tool) and never from its wording. It
rebuilds the end state a careful reader of the transcript would believe: the task's initial state
with the evident effect of every call applied (a create adds a record with the given fields to the
table its name names, a delete removes the record it names by key, any other write sets the named
record's fields, or parts of a structured field, to the given values and marks it changed; reads,
and calls the transcript shows failing, change nothing), then decides the target on that belief. A
field the belief does not hold is read the way a person reads the log: `cancel_order` leaves the
order "cancelled", a `reason` argument is the `cancel_reason`. Answer items are read from the answer.
It is right when the transcript tells the whole story and wrong where it does not, as transcript
judges are:

- a refused write it believed: without per-call results, every write is taken at its word;
- a value overwritten later by a call that does not name it (a compound operation, a cascade), and
  side effects on records no argument names (a refund and a restock behind a cancellation);
- an archive it takes for a removal; a record addressed by anything but its key;
- an answer value given under another field name, which it accepts.

These are what the calibration metrics are there to expose.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from pydantic import Field

from agentomnia.tasks.grading import Judge, Outcome, run_check, values_match
from agentomnia.tasks.models import Check, RubricItem, Task

_READ_VERBS = frozenset(
    ("get", "list", "find", "search", "read", "query", "lookup", "look", "view", "show", "fetch", "count",
     "check", "describe", "retrieve", "browse", "login", "logout", "download", "preview", "validate",
     "verify", "calculate", "compute", "estimate", "quote", "export", "summarize")
)  # fmt: skip
# removals; a cancel, void or close is read as a transition of the record, not its removal
_DELETE_VERBS = frozenset(("delete", "remove", "archive", "drop", "destroy", "purge", "erase", "unregister"))
_CREATE_VERBS = frozenset(
    ("create", "add", "new", "insert", "register", "book", "submit", "place", "post", "make", "upload", "open",
     "schedule", "send", "enroll", "issue")
)  # fmt: skip


class Transcript(Outcome):
    """An outcome that also keeps whether each call succeeded (`ok[i]` for `calls[i]`), as a
    trajectory's steps record it. A plain Outcome carries no results, so its calls are taken at their word."""

    ok: list[bool] = Field(default_factory=list)


#: in a believed record, the writes that named it, in order. A record that carries it differs from the
#: initial state, so a reader counts it as changed even when no call said how.
WRITES = "(writes)"


class Write(NamedTuple):
    """A write that named a record: its verb, the fields it visibly set, and the parameters that matched
    no field of the record (a `reason` the environment may keep as `cancel_reason`)."""

    verb: str
    assigned: tuple[str, ...]
    unmatched: tuple[tuple[str, Any], ...]


def _words(name: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)]


def _norm(name: Any) -> str:
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ses", "xes", "ches", "shes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def _nouns(name: str) -> set[str]:
    return {_singular(w) for w in _words(name)}


def _leaves(data: Any, name: str = "") -> Iterator[tuple[str, Any]]:
    """(parameter name, scalar value) pairs at any depth; list items keep their parent's name."""
    if isinstance(data, Mapping):
        for key, value in data.items():
            yield from _leaves(value, str(key))
    elif isinstance(data, (list, tuple)):
        for value in data:
            yield from _leaves(value, name)
    else:
        yield name, data


def _same_id(value: Any, key: Any) -> bool:
    return not isinstance(value, bool) and str(value).strip().casefold() == str(key).strip().casefold()


def _key_field(record: Mapping[str, Any], key: str) -> str | None:
    return next((f for f, v in record.items() if _same_id(v, key)), None)


def _identifier_like(name: str, record: Mapping[str, Any], key: str) -> bool:
    n = _norm(name)
    key_field = _key_field(record, key)
    return n in ("id", "key") or n.endswith("id") or (key_field is not None and n == _norm(key_field))


def _addressed(
    state: Mapping[str, Any], tool: str, leaves: list[tuple[str, Any]]
) -> tuple[str, str, int] | None:
    """(table, key, leaf index) of the record a write names by its key; a table named in the tool's
    name wins over a record the call only refers to (an owner, a parent)."""
    nouns = _nouns(tool)
    best: tuple[int, int, str, str, int] | None = None
    for index, (name, value) in enumerate(leaves):
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            continue
        for table, records in state.items():
            if not isinstance(records, Mapping):
                continue
            for key, record in records.items():
                if not _same_id(value, key) or not isinstance(record, Mapping):
                    continue
                if not _identifier_like(name, record, str(key)):
                    continue
                rank = (int(bool(nouns & _nouns(table))), -index)
                if best is None or rank > best[:2]:
                    best = (*rank, table, key, index)
    return None if best is None else (best[2], best[3], best[4])


def _field_for(fields: Iterable[str], name: str) -> str | None:
    """The record field a parameter sets: the same name, or a name that ends with it (new_status)."""
    n = _norm(name)
    if not n:
        return None
    options = list(fields)
    exact = next((f for f in options if _norm(f) == n), None)
    if exact is not None:
        return exact
    suffixes = [f for f in options if len(_norm(f)) >= 3 and n.endswith(_norm(f))]
    return max(suffixes, key=lambda f: len(_norm(f))) if suffixes else None


def _table_for(state: Mapping[str, Any], tool: str) -> str | None:
    nouns = _nouns(tool)
    tables = [t for t, r in state.items() if isinstance(r, Mapping) and nouns & _nouns(t)]
    return min(tables, key=lambda t: (-len(nouns & _nouns(t)), len(t))) if tables else None


def believed_state(task: Task, outcome: Outcome) -> dict[str, Any]:
    """The end state a reader of the transcript infers: the task's initial state with the evident
    effect of each call applied in order. `outcome.final_state` is never read."""
    state: dict[str, Any] = copy.deepcopy(dict(task.init_config))
    ok = outcome.ok if isinstance(outcome, Transcript) and len(outcome.ok) == len(outcome.calls) else None
    for index, (tool, args) in enumerate(outcome.calls):
        words = _words(tool)
        verb = words[0] if words else ""
        if (ok is not None and not ok[index]) or verb in _READ_VERBS:
            continue
        leaves = list(_leaves(args))
        if verb in _CREATE_VERBS:
            table = _table_for(state, tool)
            if table is not None:
                known = {f for r in state[table].values() if isinstance(r, Mapping) for f in r if f != WRITES}
                state[table][f"new:{index}"] = {(_field_for(known, n) or n): v for n, v in leaves if n}
            continue
        target = _addressed(state, tool, leaves)
        if target is None:
            continue
        table, key, id_leaf = target
        if verb in _DELETE_VERBS:
            del state[table][key]
            continue
        record = state[table][key]
        key_field = _key_field(record, key)
        fields = [f for f in record if f != WRITES]
        assigned: list[str] = []
        unmatched: list[tuple[str, Any]] = []
        for i, (name, value) in enumerate(leaves):
            field = _field_for(fields, name)
            parent = next(
                (f for f in fields if isinstance(record[f], Mapping) and _field_for(record[f], name)), None
            )
            if i == id_leaf or field == key_field:
                continue
            if field is not None:
                record[field] = value
                assigned.append(field)
            elif parent is not None:  # a part of a structured field (a street of an address)
                record[parent] = {**record[parent], _field_for(record[parent], name): value}
                assigned.append(parent)
            else:
                unmatched.append((name, value))
        record[WRITES] = [*record.get(WRITES, ()), Write(verb, tuple(assigned), tuple(unmatched))]
    return state


def _from_writes(record: Mapping[str, Any], check: Check) -> bool | None:
    """What the writes that named a record say about a field its belief does not hold: a parameter
    named like the field (`reason` for `cancel_reason`) gives its value; a verb that names the expected
    value (cancel_order: "cancelled", close_ticket: "closed") implies it; None when they say nothing
    after the field was last set explicitly."""
    target = _norm(check.field or "")
    for write in reversed(record.get(WRITES, ())):
        if check.field in write.assigned:
            return None
        for name, value in write.unmatched:
            if len(_norm(name)) >= 4 and target.endswith(_norm(name)):
                return values_match(value, check.value, check.tolerance)
        stem = write.verb[:-1] if write.verb.endswith("e") else write.verb
        if (
            isinstance(check.value, str)
            and len(stem) >= 3
            and check.value.strip().casefold().startswith(stem)
        ):
            return True
    return None


def _answer_values(answer: Any) -> Iterator[Any]:
    """Every value of an answer at any depth, containers included."""
    if isinstance(answer, Mapping):
        for value in answer.values():
            yield value
            yield from _answer_values(value) if isinstance(value, (Mapping, list)) else ()
    elif isinstance(answer, list):
        for value in answer:
            yield value
            yield from _answer_values(value) if isinstance(value, (Mapping, list)) else ()


def _answered(check: Check, task: Task, answer: Mapping[str, Any]) -> bool:
    """The answer item's field, or, when the answer lacks that field, any value in it (a lenient reader)."""
    field = check.field or ""
    candidates = [answer[field]] if field in answer else list(_answer_values(answer))
    return any(
        run_check(check, task, Outcome(final_state={}, answer={field: value}))[0] is True
        for value in candidates
    )


def _created_as_expected(believed: Mapping[str, Any], after: Any) -> bool:
    """A record the calls visibly created whose fields all agree with the expected new record."""
    fresh = [r for k, r in believed.items() if str(k).startswith("new:") and isinstance(r, Mapping)]
    if not isinstance(after, Mapping):  # a diff that only says a record was made
        return bool(fresh)
    for record in fresh:
        shared = [f for f in record if f != WRITES and f in after]
        if shared and all(values_match(record[f], after[f], 0.01) for f in shared):
            return True
    return False


def _field_as_expected(record: Mapping[str, Any], field: str, after: Any) -> bool:
    """A changed field the transcript bears out: visibly set to the expected value, or not named by
    any call and not contradicted by the verbs and parameters that named the record (an `updated_at`,
    a total the environment derives: what a reader cannot see it does not hold against the run)."""
    if values_match(record.get(field), after, 0.01):
        return True
    if any(field in w.assigned for w in record.get(WRITES, ())):
        return False
    implied = _from_writes(record, Check(kind="field_equals", field=field, value=after, tolerance=0.01))
    return implied is not False


def _changes_as_expected(task: Task, state: Mapping[str, Any]) -> tuple[bool, str]:
    """Whether the believed end state makes the task's expected changes (`task.expected_diff`) and no
    other: every expected creation and removal seen, every expected record named by a write with its
    fields borne out, and no write, creation or removal beyond them. A record the diff changes that no
    call named counts as a side effect the reader cannot see, as long as some expected record was written."""
    initial = task.init_config
    wanted: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for d in task.expected_diff:
        if d.get("key") is None or not isinstance(initial.get(str(d.get("table"))), Mapping):
            continue  # scalar attributes (the logical clock) are not records
        wanted.setdefault((str(d["table"]), str(d["key"])), []).append(d)
    written = False
    for (table, key), entries in wanted.items():
        found = state.get(table)
        believed: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        if key not in initial[table]:
            if not _created_as_expected(believed, entries[0].get("after")):
                return False, f"no call visibly creates the expected {table} record"
            written = True
            continue
        if any(e.get("field") is None and e.get("after") is None for e in entries):
            if key in believed:
                return False, f"{table}[{key}] should be removed and no call removes it"
            written = True
            continue
        record = believed.get(key)
        if not isinstance(record, Mapping):
            return False, f"{table}[{key}] was removed, not changed"
        if not record.get(WRITES):
            continue
        written = True
        for e in entries:
            if e.get("field") is not None and not _field_as_expected(record, str(e["field"]), e.get("after")):
                return False, f"{table}[{key}].{e['field']} is not set to {e.get('after')!r}"
    for table, records in state.items():
        if not isinstance(records, Mapping) or not isinstance(initial.get(table), Mapping):
            continue
        for key, record in records.items():
            if str(key).startswith("new:"):
                if not any(t == table and k not in initial[table] for t, k in wanted):
                    return False, f"a {table} record was created beyond the request"
            elif isinstance(record, Mapping) and record.get(WRITES) and (table, str(key)) not in wanted:
                return False, f"{table}[{key}] was changed beyond the request"
        for key in initial[table]:
            if key not in records and (table, str(key)) not in wanted:
                return False, f"{table}[{key}] was removed beyond the request"
    if not written:
        return False, "no call makes any of the expected changes"
    return True, "the calls make the expected changes and no other"


def _verifier_verdict(task: Task, outcome: Outcome) -> bool | None:
    """A verifier item (the task's check code, which the judge never runs) decided from what the code
    checks: the expected changes of `task.expected_diff`, on the state the transcript shows. A solver
    task admits other plans than its reference, so there only the reference's changes pass and
    anything else stays undecided; a task without expected changes is undecided."""
    if not task.expected_diff:
        return None
    passed, _ = _changes_as_expected(task, believed_state(task, outcome))
    if str(task.kind) == "solver" and not passed:
        return None
    return passed


def transcript_judge() -> Judge:
    """The offline judge: decides an item from its structured target and the transcript (a verifier
    item from the task's expected changes); an item without a target (free text) is undecided
    (None), never a silent pass or fail."""

    def judge(item: RubricItem, task: Task, outcome: Outcome) -> bool | None:
        check = item.check
        if check is None:
            return None
        if check.kind == "verifier":
            return _verifier_verdict(task, outcome)
        if check.kind in ("answer_equals", "answer_contains"):
            return _answered(check, task, outcome.answer)
        state = believed_state(task, outcome)
        verdict = run_check(
            check, task, Outcome(final_state=state, answer=outcome.answer, calls=outcome.calls)
        )[0]
        record = (state.get(check.table or "") or {}).get(check.key or "")
        if verdict is False and check.kind == "field_equals" and isinstance(record, Mapping):
            implied = _from_writes(record, check)
            return verdict if implied is None else implied
        return verdict

    return judge


def outcome_groups(
    tasks: Mapping[str, Task],
    runs: Iterable[Any],
    final_state: Any,
    *,
    min_group: int = 2,
) -> list[tuple[Task, list[Outcome]]]:
    """Rollout groups for calibration: every task with at least `min_group` runs, each run turned into
    a Transcript (its calls, whether each succeeded, its answer) with the end state for the gold labels.
    `runs` are trajectories (task_id, answer, steps, calls()); `final_state(task, calls)` replays the
    calls in a fresh session and returns the end state (the sandbox does it)."""
    by_task: dict[str, list[Any]] = {}
    for run in runs:
        if run.task_id in tasks:
            by_task.setdefault(run.task_id, []).append(run)
    groups: list[tuple[Task, list[Outcome]]] = []
    for task_id in sorted(by_task):
        members = by_task[task_id]
        task = tasks[task_id]
        checked = [i for i in task.rubric if i.check is not None and i.check.kind != "verifier"]
        if len(members) < min_group or not checked:
            continue
        outcomes: list[Outcome] = []
        for run in members:
            calls = run.calls()
            steps = [s for s in getattr(run, "steps", ()) if getattr(s, "valid", True)]
            ok = [bool(s.ok) for s in steps] if len(steps) == len(calls) else []
            outcomes.append(
                Transcript(final_state=final_state(task, calls), answer=dict(run.answer), calls=calls, ok=ok)
            )
        groups.append((task, outcomes))
    return groups
