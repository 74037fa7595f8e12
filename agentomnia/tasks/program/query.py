"""Public queries for program tasks: the plan's objective and constraints in plain words, checked for leaks.

The query keeps what the program decides (which records, by what rule, what to do to each, what to
do when none qualifies, what to report) and leaves out how: no tool names, no parameter keys, no
call sequence, no record ids. Attribute names are spoken as words ("declared value", not
`declared_value`). The shared leakage checker has the final say.
"""

from __future__ import annotations

from agentomnia.envs.spec import EnvSpec
from agentomnia.tasks.leakage import leakage_problems
from agentomnia.tasks.program.plan import Predicate, ProgramPlan

_OP_WORDS = {">": "above", ">=": "at least", "<": "below", "<=": "at most", "==": "equal to"}


def words(name: str) -> str:
    return name.replace("_", " ").strip()


def plural(name: str) -> str:
    text = words(name)
    if text.endswith("y") and not text.endswith(("ay", "ey", "oy")):
        return text[:-1] + "ies"
    return text + ("es" if text.endswith(("s", "x", "ch", "sh")) else "s")


def spoken(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return words(str(value))


def _rule(pred: Predicate, subject: str) -> str:
    if pred.kind == "date":
        return f"whose {subject}{words(pred.attr)} is {'before' if pred.op == '<' else 'on or after'} {pred.value}"
    if pred.kind in ("enum", "bool"):
        return f"whose {subject}{words(pred.attr)} is {spoken(pred.value)}"
    return f"whose {subject}{words(pred.attr)} is {_OP_WORDS[pred.op]} {pred.value:g}"


def _action(plan: ProgramPlan) -> str:
    w = plan.write
    value = spoken(w.value)
    if w.op == "transition":
        return f"move it to {value}"
    return f"set its {words(w.attr)} to {value}"


def _already(plan: ProgramPlan) -> str:
    w = plan.write
    return f"{spoken(w.value)}" if w.op == "transition" else "set that way"


def render_query(spec: EnvSpec, plan: ProgramPlan) -> str:
    """The request a user would write for this plan."""
    things = plural(plan.entity)
    scope = ""
    for param, value in plan.list_args.items():
        if param == "limit":
            continue
        attr = spec.entity(plan.entity).attribute(
            spec.tool(plan.list_tool).binding.get("filters", {}).get(param, param)
        )
        scope = f" with {words(attr.name if attr else param)} {words(str(value))}"
    pred = plan.predicate
    if plan.template == "filter_write":
        text = (
            f"Please go through all {things}{scope} and, for every one {_rule(pred, '')}, {_action(plan)}. "
            f"Leave any that are already {_already(plan)} alone. If none of them qualifies, do it only "
            f"for the one with the {'latest' if pred.kind == 'date' else 'highest'} {words(pred.attr)} instead and tell me "
            "that you had to fall back."
        )
        if plan.total_attr:
            text += f" Report which {things} you changed, how many, and the total {words(plan.total_attr)} of those."
        else:
            text += f" Report which {things} you changed and how many."
    elif plan.template == "join_write":
        parent = words(plan.join.parent) if plan.join else "related record"
        rule = _rule(pred, parent + "'s ")
        text = (
            f"For every {words(plan.entity)} {rule}, "
            f"{_action(plan)}; the deciding detail is on the {parent}, not on the {words(plan.entity)} itself. "
            f"Skip the ones that are already {_already(plan)}. If none qualifies, change nothing and say so. "
            f"Report which {things} you changed and how many."
        )
    else:
        total = words(plan.total_attr or "")
        text = (
            f"Look at all {things} {_rule(pred, '')} and work out their total and average {total}. Then take the one "
            f"with the highest {total} (if two are tied, the one that was registered first) and {_action(plan)}. "
            f"If there are no such {things}, change nothing and say so. Report how many you looked at, the total "
            f"and average {total}, and which one you changed."
        )
    if plan.record_refusals or plan.guard_status:
        text += " If the system will not allow the change for one of them, skip it and tell me why."
    return text


def query_problems(query: str, spec: EnvSpec) -> list[str]:
    """Leaks in a program task's query (tool names, parameter keys, step lists, record ids)."""
    return leakage_problems(query, spec, forbid_ids=True)
