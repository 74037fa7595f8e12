"""Ground truth checks of a program task: verifier code, rubric, and the oracle that tests them.

The verifier (OmniaBench's `check_func(final_state)` with `initial_state` in scope, run only via
`Sandbox.run_check`) decides the task-critical fields: in every table the reference program wrote,
the changed fields hold the reference values and every other field of every record is as it was
(so a missed item, an extra item or collateral damage all fail). The rubric adds the answer fields
(selected records, computed values, fallback). The oracle: the reference passes, an empty run fails,
a run with one item wrong fails.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.tasks.grading import Outcome, diff_states, empty_outcome, grade
from agentomnia.tasks.models import Check, RubricItem, Task
from agentomnia.tasks.program.execute import SessionSlot, run_once
from agentomnia.tasks.program.plan import ProgramPlan
from agentomnia.tasks.program.query import plural, words

_VERIFIER = '''"""Checks the task-critical fields: expected changes made, nothing else touched."""

EXPECTED = {expected!r}
KEYS = {keys!r}


def check_func(final_state):
    for table, keys in KEYS.items():
        before = initial_state.get(table) or {{}}
        after = final_state.get(table)
        if not isinstance(after, dict) or sorted(after) != keys:
            return False
        for key in keys:
            want = EXPECTED.get(table, {{}}).get(key, {{}})
            record = after[key]
            old = before.get(key) or {{}}
            for field in sorted(set(record) | set(old) | set(want)):
                if field in want:
                    if record.get(field) != want[field]:
                        return False
                elif record.get(field) != old.get(field):
                    return False
    return True
'''


def expected_changes(
    before: Mapping[str, Any], after: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """(changed fields by table and key, the key list of every written table) from a reference run."""
    expected: dict[str, dict[str, dict[str, Any]]] = {}
    for d in diff_states(before, after):
        table, key = d["table"], d["key"]
        if table == "now" or key is None:
            continue
        if d["field"] is None:  # a created record: every field is expected
            expected.setdefault(table, {})[key] = dict(d["after"] or {})
        else:
            expected.setdefault(table, {}).setdefault(key, {})[d["field"]] = d["after"]
    keys = {t: sorted(after.get(t) or {}) for t in expected}
    return expected, keys


def verifier_code(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    expected, keys = expected_changes(before, after)
    return _VERIFIER.format(expected=expected, keys=keys)


def rubric_for(plan: ProgramPlan | None, answer: Mapping[str, Any]) -> tuple[RubricItem, ...]:
    things = plural(plan.entity) if plan else "records"
    value = words(str(plan.write.value)) if plan else "the requested state"
    items = [
        RubricItem(id="T1", scope="task", level="advanced", weight=3, check=Check(kind="verifier"),
                   text=f"Exactly the {things} the rule selects end up {value}, and no other record changes."),
    ]  # fmt: skip
    if "changed" in answer:
        items.append(RubricItem(id="T2", scope="task", weight=2, check=Check(kind="answer_equals", field="changed", value=answer["changed"]),
                                text=f"The answer names exactly the {things} that were changed."))  # fmt: skip
    if "count" in answer:
        items.append(RubricItem(id="T3", scope="task", weight=1, check=Check(kind="answer_equals", field="count", value=answer["count"]),
                                text="The answer gives how many records were changed."))  # fmt: skip
    for i, field in enumerate(("total", "average", "considered"), start=4):
        if answer.get(field) is not None:
            items.append(RubricItem(id=f"T{i}", scope="task", level="advanced", weight=1,
                                    check=Check(kind="answer_equals", field=field, value=answer[field], tolerance=0.01),
                                    text=f"The answer reports the computed {field} ({answer[field]})."))  # fmt: skip
    if "fallback_used" in answer:
        items.append(RubricItem(id="T7", scope="task", weight=1, check=Check(kind="answer_equals", field="fallback_used", value=answer["fallback_used"]),
                                text="The answer says whether the fallback for 'nothing qualifies' was needed."))  # fmt: skip
    if plan is None:
        for i, (field, v) in enumerate(sorted(answer.items())[:4], start=10):
            if isinstance(v, (str, int, float, list)) and field not in ("changed", "count"):
                items.append(RubricItem(id=f"T{i}", scope="task", weight=1, check=Check(kind="answer_equals", field=field, value=v, tolerance=0.01),
                                        text=f"The answer reports {words(field)}."))  # fmt: skip
    return tuple(items)


class OracleReport(BaseModel):
    passed: bool
    reference_passes: bool
    empty_fails: bool
    wrong_item_fails: bool
    details: list[str] = Field(default_factory=list)


def check_program_task(
    task: Task, sandbox: Sandbox, bundle: Bundle, *, slot: SessionSlot | None = None
) -> OracleReport:
    """Run the task's oracle: the reference program passes, an empty run fails, one wrong item fails.
    With a `slot`, the reference runs in the slot's session reset to the task's initial state."""
    details: list[str] = []

    def runner(code: str, initial_state: Mapping[str, Any], final_state: Mapping[str, Any]) -> bool | None:
        return sandbox.run_check(code, initial_state, final_state).passed

    if not task.reference_program or not task.verifier_code:
        return OracleReport(passed=False, reference_passes=False, empty_fails=False, wrong_item_fails=False,
                            details=["the task has no reference program or no verifier code"])  # fmt: skip
    result, final = run_once(sandbox, bundle, task.init_config, task.reference_program, slot=slot)
    answer = result.answer if isinstance(result.answer, dict) else {}
    score = grade(
        task,
        Outcome(final_state=final, answer=answer, calls=[(c.tool, c.arguments) for c in result.calls]),
        verifier=runner,
    )
    reference_ok = result.ok and score.passed
    if not reference_ok:
        details.append(
            "reference fails: "
            + "; ".join(f"{i.id}: {i.detail}" for i in score.items if i.passed is not True)[:300]
        )
    empty = grade(task, empty_outcome(task), verifier=runner)
    empty_fails = not empty.passed and runner(task.verifier_code, task.init_config, task.init_config) is False
    if not empty_fails:
        details.append("an empty run passes")
    wrong_ok = True
    for d in task.expected_diff:  # revert one expected change: one item wrong
        if d.get("field") is None or d.get("table") == "now":
            continue
        broken = copy.deepcopy(final)
        broken[d["table"]][d["key"]][d["field"]] = d["before"]
        wrong_ok = runner(task.verifier_code, task.init_config, broken) is False
        if not wrong_ok:
            details.append(f"reverting {d['table']}[{d['key']}].{d['field']} still passes")
        break
    else:
        wrong_ok = False
        details.append("no field-level change to perturb")
    return OracleReport(passed=reference_ok and empty_fails and wrong_ok, reference_passes=reference_ok,
                        empty_fails=empty_fails, wrong_item_fails=wrong_ok, details=details)  # fmt: skip
