"""Standalone check code for exported tasks: OmniaBench's two code contracts, rendered from our checks.

OmniaBench runs two kinds of task code, each `exec`'d on its own with nothing of ours importable:

- `check_func(final_state) -> bool` with `initial_state` as a global (the `checklist_with_func`
  entries): decides something from the environment's state after the run;
- `verify(candidate_answer, ground_truth_answer) -> float` in [0, 1] (`verifier_code`): scores the
  JSON answer the agent gave against the ground truth.

A rubric item of ours with a deterministic state check becomes one `check_func` source, an answer
check becomes part of the task's `verify` source. Both embed the matching functions of
`agentomnia.tasks.grading` by their source text, so an exported check judges exactly as the
platform's own grader does (numbers within tolerance, strings case- and space-insensitive, lists as
multisets). Everything rendered here also passes the sandbox's static policy, so an exported task
imported back runs its checks in the sandbox unchanged.
"""

from __future__ import annotations

import ast
import inspect
import pprint
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from agentomnia.sandbox.policy import parse_python
from agentomnia.tasks import grading
from agentomnia.tasks.models import Check, CheckKind

STATE_KINDS: frozenset[CheckKind] = frozenset(
    {
        "field_equals",
        "field_changed",
        "field_unchanged",
        "record_exists",
        "record_absent",
        "count_equals",
        "diff_within",
    }
)
ANSWER_KINDS: frozenset[CheckKind] = frozenset({"answer_equals", "answer_contains"})
TRAJECTORY_KINDS: frozenset[CheckKind] = frozenset({"called", "not_called"})

_HEADER = "from __future__ import annotations\n\nimport math\nfrom collections.abc import Mapping\nfrom typing import Any\n"

# The grader's own matching functions, copied by source so the exported code cannot drift from them.
_MATCHING = "\n\n".join(
    inspect.getsource(fn)
    for fn in (grading._norm, grading.values_match, grading._records, grading._matches, grading.diff_states)
)

_DECIDE_STATE = '''
def decide_state_check(check, initial_state, final_state):
    """One state check of the exported rubric: True when the final state satisfies it."""
    kind, table, key, field = check["kind"], check.get("table") or "", check.get("key") or "", check.get("field") or ""
    tolerance = float(check.get("tolerance") or 0.0)
    if kind in ("field_equals", "field_changed", "field_unchanged"):
        record = (final_state.get(table) or {}).get(key)
        if not isinstance(record, Mapping):
            return False
        if kind == "field_equals":
            return values_match(record.get(field), check.get("value"), tolerance)
        before = (initial_state.get(table) or {}).get(key)
        old = before.get(field) if isinstance(before, Mapping) else None
        changed = not values_match(record.get(field), old)
        return changed if kind == "field_changed" else not changed
    if kind in ("record_exists", "record_absent", "count_equals"):
        match = check.get("match") or {}
        hits = [r for r in _records(final_state, table) if _matches(r, match, tolerance)]
        if kind == "record_exists":  # a record the run made, not one already there
            before = initial_state.get(table) or {}
            rows = final_state.get(table) or {}
            return any(k not in before and _matches(r, match, tolerance) for k, r in rows.items())
        if kind == "record_absent":
            return not hits
        return len(hits) == check.get("value")
    if kind == "diff_within":
        allowed = [(a.get("table"), a.get("key")) for a in (check.get("value") or []) if isinstance(a, Mapping)]
        for change in diff_states(initial_state, final_state):
            if not isinstance(initial_state.get(change["table"]), Mapping):
                continue  # scalar attributes (a clock, a counter) are not records
            new = change["key"] not in initial_state[change["table"]]
            if (change["table"], change["key"]) not in allowed and not (new and (change["table"], None) in allowed):
                return False
        return True
    return False
'''

_DECIDE_ANSWER = '''
def decide_answer_check(check, answer, expected):
    """One answer check: the answer's field against the expected value (equal, or containing it)."""
    value = answer.get(check["field"])
    tolerance = float(check.get("tolerance") or 0.0)
    if check["kind"] == "answer_equals":
        return values_match(value, expected, tolerance)
    wanted = expected if isinstance(expected, list) else [expected]
    if isinstance(value, str):
        return all(_norm(str(w)) in _norm(value) for w in wanted)
    if isinstance(value, list):
        return all(any(values_match(v, w, tolerance) for v in value) for w in wanted)
    return False


def verify(candidate_answer, ground_truth_answer):
    """Weighted share of the answer checks whose field the ground truth names (1.0 when none does)."""
    if not isinstance(candidate_answer, dict) or not isinstance(ground_truth_answer, dict):
        return 0.0
    earned = total = 0
    for check in ANSWER_CHECKS:
        if check["field"] not in ground_truth_answer:
            continue
        total += check["weight"]
        if decide_answer_check(check, candidate_answer, ground_truth_answer[check["field"]]):
            earned += check["weight"]
    return 1.0 if total == 0 else earned / total
'''


def _literal(value: Any) -> str:
    """A Python literal of JSON data (pprint keeps it readable and `repr` round-trips floats)."""
    return pprint.pformat(value, width=100, sort_dicts=True)


def _docstring(text: str) -> str:
    body = " ".join(text.split()).replace("\\", "\\\\").replace('"""', "'''")
    return '"""' + textwrap.fill(body, width=100) + '"""\n\n'


def check_payload(check: Check) -> dict[str, Any]:
    """The check's parameters as plain JSON data (defaults left out)."""
    return check.model_dump(mode="json", exclude_defaults=True) | {"kind": check.kind}


def state_check_source(check: Check, about: str) -> str:
    """`check_func(final_state)` source deciding one state check; `about` becomes its docstring."""
    if check.kind not in STATE_KINDS:
        raise ValueError(
            f"check kind {check.kind!r} is not decided from the state; use {sorted(STATE_KINDS)}"
        )
    return (
        _docstring(about)
        + _HEADER
        + f"\nCHECK = {_literal(check_payload(check))}\n\n\n"
        + _MATCHING
        + "\n"
        + _DECIDE_STATE
        + "\n\ndef check_func(final_state):\n    return decide_state_check(CHECK, initial_state, final_state)\n"
    )


def answer_verifier_source(checks: Sequence[tuple[Check, int]], about: str) -> str:
    """`verify(candidate_answer, ground_truth_answer) -> float` source over (answer check, weight) pairs.

    The expected values are read from `ground_truth_answer[field]` at run time, as the contract says;
    the source carries only which field is checked how, with which tolerance and weight."""
    entries = []
    for check, weight in checks:
        if check.kind not in ANSWER_KINDS or not check.field:
            raise ValueError(f"check {check.kind!r} on field {check.field!r} is not an answer check")
        entries.append(
            {"field": check.field, "kind": check.kind, "tolerance": check.tolerance, "weight": int(weight)}
        )
    return (
        _docstring(about)
        + _HEADER
        + f"\nANSWER_CHECKS = {_literal(entries)}\n\n\n"
        + _MATCHING
        + "\n"
        + _DECIDE_ANSWER
    )


def combine_check_sources(sources: Sequence[str]) -> str:
    """One `check_func` that passes when every given `check_func` source passes.

    Each source keeps its own namespace: its body becomes the body of a factory function that
    returns its `check_func`, so helper names in different sources cannot collide. A source that
    raises counts as failing, as in OmniaBench's checklist evaluation."""
    if not sources:
        raise ValueError("no check sources to combine")
    future = False
    parts = []
    for index, source in enumerate(sources):
        tree = parse_python(source)
        body = []
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                future = True
                continue
            body.append(node)
        if not any(isinstance(n, ast.FunctionDef) and n.name == "check_func" for n in body):
            raise ValueError(f"check source {index} defines no top-level `check_func(final_state)`")
        inner = ast.unparse(ast.Module(body=body, type_ignores=[])) if body else "pass"
        parts.append(f"def _check_{index}():\n{textwrap.indent(inner, '    ')}\n    return check_func\n")
    names = ", ".join(f"_check_{i}" for i in range(len(sources)))
    header = "from __future__ import annotations\n\n" if future else ""
    return (
        header
        + f'"""All {len(sources)} state checks of an imported OmniaBench checklist must pass."""\n\n\n'
        + "\n\n".join(parts)
        + f"\n\nCHECKS = ({names},)\n\n\n"
        + "def check_func(final_state):\n"
        + "    for factory in CHECKS:\n"
        + "        try:\n"
        + "            verdict = factory()(final_state)\n"
        + "        except Exception:\n"
        + "            return False\n"
        + "        if verdict is not True:\n"
        + "            return False\n"
        + "    return True\n"
    )


def expected_answer_for(checks: Sequence[Check], expected: Mapping[str, Any]) -> dict[str, Any]:
    """The ground truth answer: the task's expected answer, with each checked field set to the value
    its check requires (they agree for synthesized tasks; the check wins where they do not)."""
    truth = dict(expected)
    for check in checks:
        if check.field:
            truth[check.field] = check.value
    return truth
