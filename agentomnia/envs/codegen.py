"""Executable state compilation (paper §4.2.2): an EnvSpec becomes the Python source of one class.

The class is constructed with an `init_config` dict whose keys become attributes (entity tables,
dicts of records keyed by id, plus `now`, the environment's logical clock); its public methods are
the tools, called with keyword arguments, each returning `{"ok", "data", "error"}`. That is the
shape OmniaBench's runtime loads, so a bundle exports unchanged. The class checks its own
arguments and every invariant on every write (types, enums, references, the domain's range,
comparison and uniqueness rules, lifecycle transitions and preconditions), so it stays correct even
outside the sandbox; inside it, the sandbox additionally rolls back any failed call.

Per-entity metadata (attribute types, rules, tool signatures) is emitted as class-level literals and
read by a handful of private helpers; each tool method is written out with its own docstring.
"""

from __future__ import annotations

import json
import keyword
import math
import pprint
import textwrap
from typing import Any

from agentomnia.envs.naming import method_names, python_name
from agentomnia.envs.spec import AttributeSpec, EnvSpec, ToolSpec, action_targets, compound_of

HEADER = '''"""{title}

{description}

Generated from environment spec {spec_id}. State: one dict of records per entity, keyed by id.
Tools: the public methods; each returns {{"ok": bool, "data": ..., "error": {{"code", "message"}} | None}}.
"""

import copy
import datetime
import json
import re

'''

HELPERS = '''
    def __init__(self, init_config: dict):
        self.now = "2026-03-02T09:00:00"
{tables}
        for key, value in (init_config or {{}}).items():
            setattr(self, key, copy.deepcopy(value))

    # -- protocol helpers -------------------------------------------------------------------

    def _ok(self, data):
        return {{"ok": True, "data": data, "error": None}}

    def _fail(self, code, message):
        return {{"ok": False, "data": None, "error": {{"code": code, "message": message}}}}

    def _check_args(self, tool, args):
        """Arguments against the tool's JSON schema and cross-parameter constraints; None when fine."""
        schema = self._PARAMS[tool]
        props = schema["properties"]
        for name in schema["required"]:
            if args.get(name) is None:
                return self._fail("invalid_arguments", f"{{tool}}: missing required argument `{{name}}`")
        for name, value in args.items():
            if value is None:
                continue
            if name not in props:
                return self._fail("invalid_arguments", f"{{tool}}: unknown argument `{{name}}`")
            problem = self._type_problem(props[name], value)
            if problem:
                return self._fail("invalid_arguments", f"{{tool}}: argument `{{name}}` {{problem}}")
        for kind, names, when, text in self._CONSTRAINTS.get(tool, ()):
            given = [n for n in names if args.get(n) is not None]
            if kind == "exactly_one" and len(given) != 1:
                return self._fail("invalid_arguments", f"{{tool}}: {{text}}")
            if kind == "less_equal" and len(given) == 2 and args[names[0]] > args[names[1]]:
                return self._fail("invalid_arguments", f"{{tool}}: {{text}}")
            if kind == "required_if":
                applies = all(
                    (args.get(k) != v[1:]) if isinstance(v, str) and v.startswith("!") else args.get(k) == v
                    for k, v in when.items()
                )
                if applies and not given:
                    return self._fail("invalid_arguments", f"{{tool}}: {{text}}")
        return None

    def _type_problem(self, schema, value):
        if not isinstance(schema, dict):
            return None
        branches = schema.get("anyOf") or schema.get("oneOf")
        if branches:
            problems = [self._type_problem(branch, value) for branch in branches]
            if all(problems):
                return problems[0]
        kinds = schema.get("type")
        if kinds is None:
            return None if branches or "enum" not in schema or value in schema["enum"] else (
                f"must be one of {{schema['enum']}}, got {{value!r}}")
        kinds = kinds if isinstance(kinds, list) else [kinds]
        checks = {{
            "string": isinstance(value, str),
            "integer": isinstance(value, int) and not isinstance(value, bool),
            "number": isinstance(value, (int, float)) and not isinstance(value, bool),
            "boolean": isinstance(value, bool),
            "array": isinstance(value, list),
            "object": isinstance(value, dict),
            "null": value is None,
        }}
        kind = next((k for k in kinds if checks.get(k, True)), None)
        if kind is None:
            return f"must be a {{' or '.join(kinds)}}, got {{type(value).__name__}}"
        if "enum" in schema and value not in schema["enum"]:
            return f"must be one of {{schema['enum']}}, got {{value!r}}"
        if kind in ("integer", "number"):
            if "minimum" in schema and value < schema["minimum"]:
                return f"must be at least {{schema['minimum']}}"
            if "maximum" in schema and value > schema["maximum"]:
                return f"must be at most {{schema['maximum']}}"
        if kind == "string" and schema.get("format") in ("date", "date-time"):
            try:
                if schema["format"] == "date":
                    datetime.date.fromisoformat(value)
                else:
                    datetime.datetime.fromisoformat(value)
            except ValueError:
                return f"must be an ISO {{schema['format']}}, got {{value!r}}"
        if kind == "string":
            if len(value) < schema.get("minLength", 0):
                return "must not be empty" if schema["minLength"] == 1 else f"must be at least {{schema['minLength']}} characters"
            if len(value) > schema.get("maxLength", len(value)):
                return f"must be at most {{schema['maxLength']}} characters"
            if "pattern" in schema and re.search(schema["pattern"], value) is None:
                return f"must match {{schema['pattern']}}"
        if kind == "array" and isinstance(schema.get("items"), dict):
            for item in value:
                problem = self._type_problem(schema["items"], item)
                if problem:
                    return f"item {{item!r}} {{problem}}"
        return None

    def _table(self, entity):
        return getattr(self, self._ENTITIES[entity][0])

    def _fetch(self, entity, key):
        record = self._table(entity).get(str(key))
        if record is None:
            return None, self._fail("not_found", f"no {{entity.replace('_', ' ')}} with id {{key!r}}")
        return record, None

    def _new_key(self, entity):
        """A fresh id of the entity's own kind: the next integer, an unused id from the entity's pool of
        ids in the seed's declared format, or the next prefixed number."""
        table_name, key_attr, prefix = self._ENTITIES[entity]
        taken = getattr(self, table_name)
        if self._KEY_KINDS.get(entity) == "int":
            return max((r[key_attr] for r in taken.values() if isinstance(r.get(key_attr), int)), default=0) + 1
        if entity in self._FRESH_KEYS:
            for key in self._FRESH_KEYS[entity]:
                if key not in taken:
                    return key
        n = len(taken) + 1
        while f"{{prefix}}-{{n:03d}}" in taken:
            n += 1
        return f"{{prefix}}-{{n:03d}}"

    def _blank(self, entity):
        """A new record with every attribute at its default (or the type's empty value)."""
        empty = {{"str": "", "text": "", "int": 0, "float": 0.0, "money": 0.0, "bool": False, "list": [], "object": {{}}}}
        record = {{}}
        for name, kind, options, nullable, default in self._ATTRS[entity]:
            if default is not None:
                record[name] = default
            elif kind == "enum":
                record[name] = options[0]
            elif kind == "datetime" and not nullable:
                record[name] = self.now
            elif kind == "date" and not nullable:
                record[name] = self.now[:10]
            elif nullable or kind == "ref":
                record[name] = None
            else:
                record[name] = copy.deepcopy(empty.get(kind))
        return record

    def _follow_dates(self, entity, record, given):
        """Dates a new record was not given follow the rules that order them after (or before) the
        ones it was: a lease that starts on 14 February ends after it, not on today's date. The gap
        is the record's own term where it has one (`term_months`, `nights`), else a day."""
        for rule in self._RULES.get(entity, ()):
            if rule[0] != "compare" or rule[2] not in ("<", "<=", ">", ">="):
                continue
            sides = [side.partition(".") if isinstance(side, str) else ("", "", "") for side in (rule[1], rule[3])]
            if any(owner != entity or "->" in attr for owner, _, attr in sides):
                continue
            (_, _, later), (_, _, earlier) = sides if rule[2] in (">", ">=") else sides[::-1]
            start, end = record.get(earlier), record.get(later)
            if not isinstance(start, str) or not isinstance(end, str) or end > start:
                continue
            if later not in given:
                record[later] = self._moved(start, record, 1)
            elif earlier not in given:
                record[earlier] = self._moved(end, record, -1)

    def _moved(self, value, record, sign):
        months = next((v for k, v in record.items() if "months" in k and isinstance(v, int) and v > 0), None)
        days = next((v for k, v in record.items() if re.search(r"days|nights", k) and isinstance(v, int) and v > 0), 1)
        try:
            when = datetime.datetime.fromisoformat(value)
        except ValueError:
            return value
        if months:
            total = when.month - 1 + sign * months
            day = min(when.day, 28)
            when = when.replace(year=when.year + total // 12, month=total % 12 + 1, day=day)
        else:
            when = when + sign * datetime.timedelta(days=days)
        return when.isoformat()[: len(value)] if len(value) == 10 else when.isoformat()

    def _value_problem(self, kind, options, nullable, value):
        if value is None:
            return None if nullable or kind == "ref" else "must not be empty"
        ok = {{
            "str": isinstance(value, str), "text": isinstance(value, str), "enum": isinstance(value, str),
            "ref": isinstance(value, (str, int)), "int": isinstance(value, int) and not isinstance(value, bool),
            "float": isinstance(value, (int, float)) and not isinstance(value, bool),
            "money": isinstance(value, (int, float)) and not isinstance(value, bool),
            "bool": isinstance(value, bool), "date": isinstance(value, str), "datetime": isinstance(value, str),
            "list": isinstance(value, list), "object": isinstance(value, dict),
        }}[kind]
        if not ok:
            return f"must be {{kind}}, got {{type(value).__name__}}"
        if kind == "enum" and value not in options:
            return f"must be one of {{list(options)}}, got {{value!r}}"
        if kind == "money" and value < 0:
            return "must not be negative"
        if kind == "ref" and str(value) not in self._table(options):
            return f"points to no existing {{options.replace('_', ' ')}} ({{value!r}})"
        if kind in ("date", "datetime"):
            try:
                (datetime.date if kind == "date" else datetime.datetime).fromisoformat(value)
            except ValueError:
                return f"must be an ISO {{kind}}, got {{value!r}}"
        return None

    def _side(self, entity, record, side):
        if not isinstance(side, str):
            return side
        owner, _, rest = side.partition(".")
        attr, _, target_attr = rest.partition("->")
        if owner != entity:
            return None
        value = record.get(attr)
        if not target_attr or value is None:
            return value
        for name, kind, options, nullable, default in self._ATTRS[entity]:
            if name == attr and kind == "ref":
                target = self._table(options).get(str(value))
                return None if target is None else target.get(target_attr)
        return None

    def _check_record(self, entity, key, record):
        """Every invariant one record must keep: types, enums, references and the domain's rules."""
        for name, kind, options, nullable, default in self._ATTRS[entity]:
            problem = self._value_problem(kind, options, nullable, record.get(name))
            if problem:
                return self._fail("invalid_value", f"{{entity}}.{{name}} {{problem}}")
        for rule in self._RULES.get(entity, ()):
            kind, text = rule[0], rule[-1]
            if kind == "range":
                value = record.get(rule[1])
                low, high = rule[2], rule[3]
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    if (low is not None and value < low) or (high is not None and value > high):
                        return self._fail("rule_violation", text)
            elif kind == "compare":
                left, right = self._side(entity, record, rule[1]), self._side(entity, record, rule[3])
                if left is not None and right is not None:
                    holds = {{
                        "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, "==": lambda a, b: a == b,
                        "!=": lambda a, b: a != b, ">=": lambda a, b: a >= b, ">": lambda a, b: a > b,
                    }}[rule[2]]
                    try:
                        good = holds(left, right)
                    except TypeError:
                        good = False
                    if not good:
                        return self._fail("rule_violation", text)
            elif kind == "unique":
                combo = tuple(record.get(a) for a in rule[1])
                if None not in combo:
                    for other_key, other in self._table(entity).items():
                        if other_key != str(key) and tuple(other.get(a) for a in rule[1]) == combo:
                            return self._fail("rule_violation", f"{{text}} (clashes with {{other_key}})")
        return None

    def _check_transition(self, entity, attr, old, new):
        allowed = self._TRANSITIONS.get(entity, {{}}).get(attr)
        if old == new:
            return self._fail("invalid_transition", f"{{entity.replace('_', ' ')}} is already {{new!r}}")
        if allowed is not None and new not in allowed.get(old, ()):
            return self._fail(
                "invalid_transition",
                f"{{entity.replace('_', ' ')}} {{attr}} cannot go from {{old!r}} to {{new!r}}"
                f" (allowed from {{old!r}}: {{list(allowed.get(old, ())) or 'none'}})",
            )
        return None

    def _check_preconditions(self, tool, entity, record):
        for rule_entity, via, attr, values, text in self._PRECONDITIONS.get(tool, ()):
            subject = record
            if via:
                if record.get(via) is None:
                    continue  # a message the call names no sender for: no sender's status to check
                subject = self._table(rule_entity).get(record.get(via)) or {{}}
            if subject.get(attr) not in values:
                return self._fail("precondition_failed", f"{{text}} ({{attr}} is {{subject.get(attr)!r}})")
        return None

    def _save(self, entity, key, record):
        problem = self._check_record(entity, key, record)
        if problem:
            return problem
        self._table(entity)[str(key)] = record
        return None

    def _matches(self, value, wanted):
        """A record's value against a filter argument: a list argument matches any of its values."""
        if isinstance(wanted, list):
            return any(self._matches(value, w) for w in wanted)
        if isinstance(value, list):
            return wanted in value
        if isinstance(value, str) and isinstance(wanted, str):
            return value.casefold() == wanted.casefold()
        return value == wanted or (value is not None and str(value) == str(wanted))

    def _referrers(self, entity, key):
        found = []
        for other, attrs in self._ATTRS.items():
            for name, kind, options, nullable, default in attrs:
                if kind == "ref" and options == entity:
                    found += [k for k, r in self._table(other).items() if r.get(name) is not None and str(r.get(name)) == str(key)]
        return found
'''


# Helpers of compound tools (emitted only into classes that have one): paths across references,
# values, record selectors, requirements, and the steps applied all together or not at all.
COMPOUND_HELPERS = '''
    def _follow(self, entity, record, path):
        """(entity, record or None, attribute) at the end of a path such as `account_id->status`."""
        hops = path.split("->")
        for hop in hops[:-1]:
            ref = next((o for n, k, o, _, _ in self._ATTRS[entity] if n == hop and k == "ref"), None)
            value = record.get(hop) if record is not None else None
            if ref is None or value is None:
                return ref or entity, None, hops[-1]
            entity, record = ref, self._table(ref).get(str(value))
        return entity, record, hops[-1]

    def _value(self, entity, record, value):
        if "const" in value:
            return copy.deepcopy(value["const"])
        if "path" in value:
            _, owner, attr = self._follow(entity, record, value["path"])
            return None if owner is None else copy.deepcopy(owner.get(attr))
        if "clock" in value:
            return self.now if value["clock"] == "now" else self.now[:10]
        if "count" in value:
            return len(self._select(entity, record, value["count"]))
        if "sum" in value:
            found = [r.get(value["attr"]) for _, r in self._select(entity, record, value["sum"])]
            return round(sum(v for v in found if isinstance(v, (int, float)) and not isinstance(v, bool)), 2)
        parts = value["expr"]
        total = self._value(entity, record, parts[0])
        for op, part in zip(parts[1::2], parts[2::2]):
            other = self._value(entity, record, part)
            numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (total, other))
            if not numbers or (op == "/" and other == 0):
                return None
            if op == "+":  # only the chosen operator: "/" by 0 is refused above
                total = total + other
            elif op == "-":
                total = total - other
            elif op == "*":
                total = total * other
            else:
                total = total / other
        return round(total, 2) if isinstance(total, float) else total

    def _select(self, entity, record, selector):
        wanted = {
            attr: (want["in"], None) if "in" in want else (None, self._value(entity, record, want))
            for attr, want in selector["where"].items()
        }
        table = self._table(selector["entity"])

        def same(a, b):
            if isinstance(b, list) and not isinstance(a, list):  # a list of ids wants any of them
                return any(same(a, x) for x in b)
            numeric = isinstance(a, (int, float)) and not isinstance(a, bool)
            return a == b or (a is not None and b is not None and not numeric and str(a) == str(b))

        return [
            (key, table[key])
            for key in sorted(table)
            if all(
                (table[key].get(a) in options) if options is not None else same(table[key].get(a), v)
                for a, (options, v) in wanted.items()
            )
        ]

    def _requires(self, tool, entity, record):
        """The tool's requirements on the target as the call leaves it; the first that fails, said plainly.
        A reference to no record is the caller's bad value, said before any rule read through it."""
        for name, kind, options, nullable, default in self._ATTRS[entity]:
            if kind == "ref" and record.get(name) is not None:
                problem = self._value_problem(kind, options, nullable, record.get(name))
                if problem:
                    return self._fail("invalid_value", f"{entity}.{name} {problem}")
        for req in self._COMPOUND[tool]["requires"]:
            why = self._unmet(entity, record, req)
            if why:
                return self._fail("precondition_failed", why)
        return None

    def _unmet(self, entity, record, req):
        """Why one condition does not hold for a record (None when it holds, or when it holds only
        `when` another does: releasing an invoice needs it on hold, holding it does not)."""
        if req.get("when") and self._unmet(entity, record, req["when"]):
            return None
        if req["kind"] == "none":
            found = self._select(entity, record, req["select"])
            return f"{req['text']} ({len(found)} match: {[k for k, _ in found][:5]})" if found else None
        _, owner, attr = self._follow(entity, record, req["left"])
        left = None if owner is None else owner.get(attr)
        if req["kind"] == "in":
            good = (left in req["right"]) == (req["op"] == "in")
            return None if good else f"{req['text']} ({req['left']} is {left!r})"
        right = self._value(entity, record, req["right"])
        if req.get("skip_null") and (left is None or right is None):
            return None
        compare = {
            "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, "==": lambda a, b: a == b,
            "!=": lambda a, b: a != b, ">=": lambda a, b: a >= b, ">": lambda a, b: a > b,
        }[req["op"]]
        try:
            if req["right"] == {"const": None} and req["op"] in ("==", "!="):
                good = (left is None) == (req["op"] == "==")  # `x == null`: is it empty
            else:
                good = left is not None and right is not None and compare(left, right)
        except TypeError:
            good = False
        return None if good else f"{req['text']} ({req['left']} is {left!r}, needs {req['op']} {right!r})"

    def _commit(self, tool, entity, key, record, delete=False):
        """Store the target, run the tool's steps on the records they reach, check every record
        touched, and keep all of it or none of it."""
        names = {entity, *self._COMPOUND[tool]["touches"]}
        saved = {self._ENTITIES[n][0]: getattr(self, self._ENTITIES[n][0]) for n in names}
        for table, rows in saved.items():
            setattr(self, table, copy.deepcopy(rows))
        self._table(entity)[str(key)] = copy.deepcopy(record)
        touched = [(entity, str(key))]
        for step in self._COMPOUND[tool]["steps"]:
            current = self._table(entity)[str(key)]
            if step.get("when") and self._unmet(entity, current, step["when"]):
                continue
            kind = step["kind"]
            if kind in ("set", "add", "subtract"):
                owner_entity, owner, attr = self._follow(entity, current, step["path"])
                if owner is None:
                    continue
                value = self._value(entity, current, step["value"])
                if kind != "set":
                    old = owner.get(attr)
                    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (old, value)):
                        continue
                    value = old + value if kind == "add" else old - value
                    value = round(value, 2) if isinstance(value, float) else value
                owner[attr] = value
                touched.append((owner_entity, str(owner[self._ENTITIES[owner_entity][1]])))
            elif kind == "each":
                values = {a: self._value(entity, current, v) for a, v in step["fields"].items()}
                for other_key, other in self._select(entity, current, step["select"]):
                    other.update(copy.deepcopy(values))
                    touched.append((step["select"]["entity"], other_key))
            elif kind == "create":
                side = step["entity"]
                new = self._blank(side)
                for a, v in step["fields"].items():
                    new[a] = self._value(entity, current, v)
                new_key = self._new_key(side)
                new[self._ENTITIES[side][1]] = new_key
                self._table(side)[str(new_key)] = new
                touched.append((side, str(new_key)))
        if delete:
            del self._table(entity)[str(key)]
            touched = touched[1:]
        for touched_entity, touched_key in dict.fromkeys(touched):
            problem = self._check_record(touched_entity, touched_key, self._table(touched_entity)[touched_key])
            if problem:
                for table, rows in saved.items():
                    setattr(self, table, rows)
                return problem
        return None
'''

# Helper of tools that reach their record through its parent's id (`PUT /accounts/{n}/autopay`):
# emitted only into classes that have one.
PARENT_HELPERS = '''
    def _held(self, entity, attr, value, status, ended):
        """(key, a copy of the record) of the parent's own live record: the newest whose `attr` is
        `value` and whose lifecycle (`status`) has not ended; (None, None) when it holds none."""
        table = self._table(entity)
        for key in sorted(table, reverse=True):
            record = table[key]
            if str(record.get(attr)) == str(value) and (status is None or record.get(status) not in ended):
                return key, copy.deepcopy(record)
        return None, None
'''


def _held_call(e: Any, parent: dict[str, Any]) -> str:
    """The generated lookup of the record a parent holds (`PARENT_HELPERS._held`)."""
    status = e.status_attribute.name if e.status_attribute is not None else None
    return f"self._held({e.name!r}, {parent['attr']!r}, {local(parent['param'])}, {status!r}, {tuple(parent['ended'])!r})"


def _held_by_parent(spec: EnvSpec) -> bool:
    return any(t.binding.get("parent") for t in spec.tools)


def _compound_literal(spec: EnvSpec) -> dict[str, Any]:
    out = {}
    for t in spec.tools:
        found = compound_of(t)
        if found is not None:
            out[t.name] = {
                "requires": found.get("requires", []),
                "steps": found.get("steps", []),
                "touches": list(found.get("touches", [t.entity])),
            }
    return out


class _NonFinite(float):
    """A NaN or an infinity, written as the call that makes it (a bare `nan` is a NameError)."""

    def __repr__(self) -> str:
        return f'float("{float.__repr__(self)}")'


def _finite_spelled(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return _NonFinite(value)
    if isinstance(value, dict):
        return {k: _finite_spelled(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_finite_spelled(v) for v in value)
    return value


def _literal(value: Any, indent: int = 8) -> str:
    text = pprint.pformat(_finite_spelled(value), width=104 - indent, sort_dicts=True)
    return textwrap.indent(text, " " * indent).lstrip()


def _table(value: Any, indent: int) -> str:
    """A large data table as JSON text the class reads once, where the value is plain JSON.

    Every generated source is parsed, checked against the policy and compiled before it runs; a
    dict display of a few thousand constants costs those steps about as much as all the methods
    together, a string costs them nothing. Anything JSON would change (tuples, dates, non-string
    keys) stays a Python literal. Two levels of keys get a line each, what is below them one line."""
    try:
        if json.loads(json.dumps(value, allow_nan=False)) != value:
            return _literal(value, indent)
        text = _json_lines(value, indent + 4, levels=2)
    except (TypeError, ValueError):
        return _literal(value, indent)
    # JSON never holds three unescaped quotes in a row, so the raw string cannot end early
    return f'json.loads(r"""{text}""")'


def _json_lines(value: Any, indent: int, levels: int) -> str:
    if not isinstance(value, dict) or not value or levels == 0:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)
    pad = " " * indent
    items = [
        f"{pad}{json.dumps(k, ensure_ascii=False)}: {_json_lines(value[k], indent + 4, levels - 1)}"
        for k in sorted(value)
    ]
    return "{\n" + ",\n".join(items) + "\n" + " " * (indent - 4) + "}"


def _entity_literals(spec: EnvSpec) -> dict[str, Any]:
    entities = {e.name: (e.table, e.key, e.id_prefix) for e in spec.entities}
    # a number a new record is not given starts at the least its range rule allows where that is above
    # nothing (a scorecard made from its per-competency ratings has an overall rating of 1, not 0)
    floors = {
        (r.entity, r.attr): r.min
        for r in spec.rules
        if r.kind == "range" and r.entity and r.attr and r.min is not None and r.min > 0
    }

    def start(a: AttributeSpec, low: float | None) -> Any:
        if low is None or a.type not in ("int", "float", "money"):
            return None
        return math.ceil(low) if a.type == "int" else float(low)

    attrs = {
        e.name: [
            (
                a.name,
                a.type,
                a.ref if a.type == "ref" else tuple(a.enum) if a.type == "enum" else None,
                a.nullable,
                a.default if a.default is not None or a.nullable else start(a, floors.get((e.name, a.name))),
            )
            for a in e.attributes
        ]
        for e in spec.entities
    }
    rules: dict[str, list[tuple[Any, ...]]] = {}
    transitions: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {}
    for r in spec.rules:
        if r.kind == "range" and r.entity:
            rules.setdefault(r.entity, []).append(("range", r.attr, r.min, r.max, r.text))
        elif r.kind == "compare" and isinstance(r.left, str) and "->" not in r.left:
            rules.setdefault(r.left.split(".")[0], []).append(("compare", r.left, r.op, r.right, r.text))
        elif r.kind == "unique" and r.entity:
            rules.setdefault(r.entity, []).append(("unique", tuple(r.attrs), r.text))
        elif r.kind == "transition" and r.entity and r.attr:
            transitions.setdefault(r.entity, {})[r.attr] = {k: tuple(v) for k, v in r.allowed.items()}
    return {"entities": entities, "attrs": attrs, "rules": rules, "transitions": transitions}


def _preconditions(spec: EnvSpec) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    tools = {t.name: t for t in spec.tools}
    for r in spec.rules:
        if r.kind != "precondition" or r.operation not in tools:
            continue
        tool = tools[r.operation]
        if tool.entity == r.entity:
            via = ""
        else:
            owner = spec.entity(tool.entity)
            ref = next((a for a in owner.attributes if a.type == "ref" and a.ref == r.entity), None)
            if ref is None:
                continue
            via = ref.name
        out.setdefault(tool.name, []).append((r.entity, via, r.attr, tuple(r.values), r.text))
    return out


def _plain(param: str) -> bool:
    return param.isidentifier() and not keyword.iskeyword(param)


def local(param: str) -> str:
    """The Python name holding a parameter: a keyword (`from`, `class`) gets a trailing underscore, a
    name that is no identifier (`page-size`, `fields[]`) an `arg_` spelling of it."""
    if _plain(param):
        return param
    return f"{param}_" if keyword.iskeyword(param) else "arg_" + python_name(param)


def _signature(tool: ToolSpec) -> tuple[str, str, list[str]]:
    """(signature, args-dict literal, prologue lines). Parameters whose names are keywords or no
    identifiers arrive through **extra under their exact names."""
    props = list(tool.parameters.get("properties", {}))
    plain = [p for p in props if _plain(p)]
    reserved = [p for p in props if not _plain(p)]
    params = ", ".join([f"{p}=None" for p in plain] + (["**extra"] if reserved else []))
    args = "{" + ", ".join(f'"{p}": {local(p)}' for p in props) + "}"
    prologue = [f"{local(p)} = extra.pop({p!r}, None)" for p in reserved]
    if reserved:
        prologue += [
            "if extra:",
            f"    return self._fail('invalid_arguments', f'{tool.name}: unknown argument `{{sorted(extra)[0]}}`')",
        ]
    return (f"self, {params}" if params else "self"), args, prologue


def _doc_safe(text: str) -> str:
    """Text a seed wrote, made safe inside a docstring: backslashes doubled, triple quotes broken."""
    return text.replace("\\", "\\\\").replace('"""', "'''").rstrip('"')


def _docstring(tool: ToolSpec) -> str:
    lines = [tool.description.strip() or tool.name, ""]
    props = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    if props:
        lines.append("Args:")
        for p, s in props.items():
            extra = f" one of {s['enum']}" if "enum" in s else ""
            need = "required" if p in required else "optional"
            desc = s.get("description", "")
            lines.append(
                f"    {p} ({s.get('type', 'string')}, {need}){':' if desc or extra else ''}{extra} {desc}".rstrip()
            )
    for c in tool.constraints:
        lines.append(f"Constraint: {c.text}.")
    text = _doc_safe("\n".join(lines).rstrip())
    return textwrap.indent('"""' + text + '\n"""', " " * 8)


def _body(spec: EnvSpec, tool: ToolSpec) -> str:
    e = spec.entity(tool.entity)
    b = tool.binding
    ent = repr(e.name)
    key_param = local(b["key"]) if b.get("key") else None
    fields: dict[str, str] = {local(p): a for p, a in b.get("fields", {}).items()}
    lines: list[str] = []
    parent = b.get("parent")  # the record is the parent's own, found by the parent's id
    if parent and tool.op != "create":
        lines.append(f"held_key, _ = {_held_call(e, parent)}")
        lines.append("if held_key is None:")
        lines.append(
            f"    return self._fail('not_found', f'{parent['parent'].replace('_', ' ')} {{{local(parent['param'])}!r}} has no {e.name.replace('_', ' ')}')"
        )
        key_param = "held_key"

    def fetch() -> None:
        lines.append(f"record, problem = self._fetch({ent}, {key_param})")
        lines.append("if problem:")
        lines.append("    return problem")

    compound = compound_of(tool) is not None
    op = tool.op

    def commit(record: str, key: str) -> None:
        """Preconditions, then the target and every step applied together (or nothing). A move's
        requirements read the lifecycle where it starts; everything else as the call leaves it."""
        seen = record
        if op == "transition":
            seen = f"{{**{record}, {b['attr']!r}: record.get({b['attr']!r})}}"
        lines.append(
            f"problem = self._check_preconditions({tool.name!r}, {ent}, record) or self._requires({tool.name!r}, {ent}, {seen})"
        )
        lines.append("if problem:")
        lines.append("    return problem")
        lines.append(f"problem = self._commit({tool.name!r}, {ent}, {key}, {record})")
        lines.append("if problem:")
        lines.append("    return problem")
        lines.append(f"return self._ok(copy.deepcopy(self._table({ent})[str({key})]))")

    def apply_fields(target: str = "updated") -> None:
        for param, attr in fields.items():
            lines.append(f"if {param} is not None:")
            lines.append(f"    {target}[{attr!r}] = copy.deepcopy({param})")

    op = tool.op
    if op == "get":
        fetch()
        lines.append("return self._ok(copy.deepcopy(record))")
    elif op in ("list", "search", "range"):
        if key_param:  # a read scoped to one record: the id must exist
            fetch()
            lines.append("matches = [record]")
        else:
            lines.append(f"matches = list(self._table({ent}).values())")
        for attr, value in b.get("where", {}).items():  # a read of the open ones lists no others
            lines.append(f"matches = [r for r in matches if r.get({attr!r}) == {value!r}]")
        for param, attr in b.get("filters", {}).items():
            param = local(param)
            lines.append(f"if {param} is not None:")
            lines.append(f"    matches = [r for r in matches if self._matches(r.get({attr!r}), {param})]")
        if op == "search":
            lines.append(f"needle = str({local(b.get('query', 'query'))}).casefold()")
            lines.append(f"fields = {tuple(b.get('text_fields', ()))!r}")
            lines.append(
                "matches = [r for r in matches if any(needle in str(r.get(f) or '').casefold() for f in fields)]"
            )
        if op == "range":
            lines.append(
                f"matches = [r for r in matches if r.get({b['attr']!r}) and start <= r[{b['attr']!r}][:10] <= end]"
            )
        limit = (
            "limit"
            if tool.parameters.get("properties", {}).get("limit", {}).get("type") in ("integer", None)
            and "limit" in tool.parameters.get("properties", {})
            else "None"
        )
        lines.append(f"matches.sort(key=lambda r: str(r[{e.key!r}]))")
        lines.append(
            f"return self._ok({{'items': [copy.deepcopy(r) for r in matches[: {limit} or 20]], 'count': len(matches)}})"
        )
    elif op == "create":
        if parent:  # the parent's own record is written over where it holds one
            lines.append(f"held_key, record = {_held_call(e, parent)}")
            lines.append("if record is None:")
            lines.append(f"    record = self._blank({ent})")
        else:
            lines.append(f"record = self._blank({ent})")
        apply_fields("record")
        if fields:
            pairs = ", ".join(f"({attr!r}, {param})" for param, attr in fields.items())
            lines.append(f"self._follow_dates({ent}, record, [a for a, v in ({pairs},) if v is not None])")
        else:
            lines.append(f"self._follow_dates({ent}, record, [])")
        lines.append(
            f"key = {'held_key if held_key is not None else ' if parent else ''}self._new_key({ent})"
        )
        if b.get("key_field"):
            chosen = local(b["key_field"])
            lines.append(f"if {chosen} is not None:")
            lines.append(f"    if str({chosen}) in self._table({ent}):")
            lines.append(
                f"        return self._fail('already_exists', f'a {e.name.replace('_', ' ')} with id {{{chosen}!r}} already exists')"
            )
            lines.append(f"    key = {chosen}")
        lines.append(f"record[{e.key!r}] = key")
        if compound:
            commit("record", "key")
            return "\n".join(lines)
        lines.append(
            f"problem = self._check_preconditions({tool.name!r}, {ent}, record) or self._save({ent}, key, record)"
        )
        lines.append("if problem:")
        lines.append("    return problem")
        lines.append("return self._ok(copy.deepcopy(record))")
    elif op in ("update", "assign", "transition"):
        fetch()
        lines.append("updated = copy.deepcopy(record)")
        if op == "assign":
            lines.append(f"updated[{b['attr']!r}] = {local(b['param'])}")
        elif op == "transition":
            attr, value = b["attr"], b["value"]
            lines.append(
                f"problem = self._check_transition({ent}, {attr!r}, record.get({attr!r}), {value!r})"
            )
            lines.append("if problem:")
            lines.append("    return problem")
            lines.append(f"updated[{attr!r}] = {value!r}")
            apply_fields()
        else:
            if not fields and tool.origin == "seed":  # nothing it sends maps onto the state: it reads back
                lines.append("return self._ok(copy.deepcopy(record))")
                return "\n".join(lines)
            if not fields and not compound:
                lines.append(f"return self._fail('invalid_arguments', {tool.name + ': nothing to change'!r})")
                return "\n".join(lines)
            if tool.origin == "seed":
                lines.append(f"if all(v is None for v in ({', '.join(fields)},)):")
                lines.append("    return self._ok(copy.deepcopy(record))")
            if fields:  # a compound update may change nothing but what its steps derive
                lines.append(f"if all(v is None for v in ({', '.join(fields)},)):")
                lines.append(
                    f"    return self._fail('invalid_arguments', {tool.name + ': give at least one field to change'!r})"
                )
            apply_fields()
            status = e.status_attribute
            if status is not None and status.name in fields.values():
                lines.append(f"if updated.get({status.name!r}) != record.get({status.name!r}):")
                lines.append(
                    f"    problem = self._check_transition({ent}, {status.name!r}, record.get({status.name!r}), updated.get({status.name!r}))"
                )
                lines.append("    if problem:")
                lines.append("        return problem")
        if compound:
            commit("updated", key_param or "None")
            return "\n".join(lines)
        lines.append(
            f"problem = self._check_preconditions({tool.name!r}, {ent}, record) or self._save({ent}, {key_param}, updated)"
        )
        lines.append("if problem:")
        lines.append("    return problem")
        lines.append("return self._ok(copy.deepcopy(updated))")
    elif op == "delete":
        fetch()
        lines.append(f"users = self._referrers({ent}, {key_param})")
        lines.append("if users:")
        lines.append(
            f"    return self._fail('in_use', f'{e.name} {{{key_param}}} is still referred to by {{sorted(users)[:5]}}')"
        )
        lines.append(f"problem = self._check_preconditions({tool.name!r}, {ent}, record)")
        lines.append("if problem:")
        lines.append("    return problem")
        if compound:
            lines.append(
                f"problem = self._requires({tool.name!r}, {ent}, record) or self._commit({tool.name!r}, {ent}, {key_param}, record, delete=True)"
            )
            lines.append("if problem:")
            lines.append("    return problem")
            lines.append(f"return self._ok({{'deleted': {key_param}}})")
            return "\n".join(lines)
        lines.append(f"del self._table({ent})[str({key_param})]")
        lines.append(f"return self._ok({{'deleted': {key_param}}})")
    elif op == "aggregate":
        has_sum = "sum_of" in tool.parameters.get("properties", {})
        lines.append("groups = {}")
        lines.append(f"for r in sorted(self._table({ent}).values(), key=lambda r: str(r[{e.key!r}])):")
        lines.append("    label = str(r.get(group_by))")
        lines.append("    group = groups.setdefault(label, {'count': 0, 'ids': []})")
        lines.append("    group['count'] += 1")
        lines.append(f"    group['ids'].append(r[{e.key!r}])")
        if has_sum:
            lines.append("    if sum_of is not None:")
            lines.append("        value = r.get(sum_of)")
            lines.append(
                "        group['sum'] = round(group.get('sum', 0) + (value if isinstance(value, (int, float)) else 0), 2)"
            )
        lines.append(f"return self._ok({{'groups': groups, 'total': len(self._table({ent}))}})")
    elif op == "overview":
        fetch()
        lines.append("related = {}")
        for table, attr in b.get("children", []):
            lines.append(
                f"related[{table!r}] = sorted(k for k, r in self.{table}.items() if r.get({attr!r}) is not None and str(r.get({attr!r})) == str({key_param}))"
            )
        lines.append("counts = {t: len(ids) for t, ids in related.items()}")
        lines.append(
            "return self._ok({'record': copy.deepcopy(record), 'related': related, 'counts': counts})"
        )
    elif op == "lookup":
        label = b["label"]
        var = local(label)
        lines.append(f"if {key_param} is not None:")
        lines.append(f"    record, problem = self._fetch({ent}, {key_param})")
        lines.append("    return problem or self._ok(copy.deepcopy(record))")
        lines.append(
            f"found = [r for r in self._table({ent}).values() if str(r.get({label!r}) or '').casefold() == {var}.casefold()]"
        )
        lines.append("if not found:")
        lines.append(f"    return self._fail('not_found', f'no {e.name} with {label} {{{var}!r}}')")
        lines.append("if len(found) > 1:")
        lines.append(f"    ids = sorted(r[{e.key!r}] for r in found)")
        lines.append(
            f"    return self._fail('ambiguous', f'{{len(found)}} {e.table} have {label} {{{var}!r}}: {{ids}}; give the id')"
        )
        lines.append("return self._ok(copy.deepcopy(found[0]))")
    elif op == "manage":
        status = e.status_attribute
        lines.append("if action == 'create':")
        lines.append(f"    record = self._blank({ent})")
        for param, attr in fields.items():
            lines.append(f"    if {param} is not None:")
            lines.append(f"        record[{attr!r}] = copy.deepcopy({param})")
        lines.append(f"    key = self._new_key({ent})")
        lines.append(f"    record[{e.key!r}] = key")
        lines.append(f"    problem = self._save({ent}, key, record)")
        lines.append("    return problem or self._ok(copy.deepcopy(record))")
        fetch()
        lines.append("updated = copy.deepcopy(record)")
        lines.append("if action == 'update':")
        lines.append(f"    if all(v is None for v in ({', '.join(fields) or 'None'},)):")
        lines.append(
            "        return self._fail('invalid_arguments', 'update: give at least one field to change')"
        )
        for param, attr in fields.items():
            lines.append(f"    if {param} is not None:")
            lines.append(f"        updated[{attr!r}] = copy.deepcopy({param})")
        if status is not None:
            lines.append("else:")
            lines.append(f"    target = {action_targets(tool, status.enum)!r}.get(action, action)")
            lines.append(
                f"    problem = self._check_transition({ent}, {status.name!r}, record.get({status.name!r}), target)"
            )
            lines.append("    if problem:")
            lines.append("        return problem")
            lines.append(f"    updated[{status.name!r}] = target")
        lines.append(f"problem = self._save({ent}, {key_param}, updated)")
        lines.append("return problem or self._ok(copy.deepcopy(updated))")
    else:
        raise ValueError(f"no code template for op {op!r}")
    return "\n".join(lines)


def generate_source(spec: EnvSpec) -> str:
    """The environment's Python source: one class, readable, with a docstring per tool."""
    lit = _entity_literals(spec)
    params = {
        t.name: {
            "properties": t.parameters.get("properties", {}),
            "required": list(t.parameters.get("required", [])),
        }
        for t in spec.tools
    }
    constraints = {
        t.name: [(c.kind, tuple(c.params), dict(c.when), c.text) for c in t.constraints]
        for t in spec.tools
        if t.constraints
    }
    tables = "\n".join(f"        self.{e.table} = {{}}" for e in spec.entities)
    compound = _compound_literal(spec)
    out = [
        HEADER.format(
            title=f"{spec.class_name}: {spec.coordinate.l2} environment",
            description=_doc_safe(textwrap.fill(spec.description, 96)),
            spec_id=spec.id,
        ),
        f"class {spec.class_name}:",
        textwrap.indent('"""' + _doc_safe(textwrap.fill(spec.description, 92)) + '"""', "    "),
        "",
        f"    _ENTITIES = {_literal(lit['entities'], 4)}",
        f"    _ATTRS = {_literal(lit['attrs'], 4)}",
        f"    _RULES = {_literal(lit['rules'], 4)}",
        f"    _TRANSITIONS = {_literal(lit['transitions'], 4)}",
        f"    _PRECONDITIONS = {_literal(_preconditions(spec), 4)}",
        f"    _PARAMS = {_table(params, 4)}",
        f"    _CONSTRAINTS = {_literal(constraints, 4)}",
        f"    _KEY_KINDS = {_literal(key_kinds(spec), 4)}",
        f"    _FRESH_KEYS = {_literal(fresh_keys(spec), 4)}",
        *([f"    _COMPOUND = {_table(compound, 4)}"] if compound else []),
        HELPERS.format(tables=tables).rstrip(),
        COMPOUND_HELPERS.rstrip() if compound else "",
        *([PARENT_HELPERS.rstrip()] if _held_by_parent(spec) else []),
        "",
        "    # -- tools ----------------------------------------------------------------------------",
    ]
    methods = method_names([t.name for t in spec.tools])
    for tool in spec.tools:
        sig, args, prologue = _signature(tool)
        out.append("")
        out.append(f"    def {methods[tool.name]}({sig}):")
        out.append(_docstring(tool))
        out += [" " * 8 + line for line in prologue]
        out.append(f"        problem = self._check_args({tool.name!r}, {args})")
        out.append("        if problem:")
        out.append("            return problem")
        out.append(textwrap.indent(_body(spec, tool), " " * 8))
    aliases = {name: method for name, method in methods.items() if name != method}
    if aliases:
        out.append("")
        out.append("")
        out.append("# Tools whose names are not Python identifiers keep their exact names as attributes.")
        for name, method in aliases.items():
            out.append(f"setattr({spec.class_name}, {name!r}, {spec.class_name}.{method})")
    return "\n".join(out) + "\n"


def key_kinds(spec: EnvSpec) -> dict[str, str]:
    """Entities whose ids the seed declares as integers: new records take the next integer."""
    out = {}
    for e in spec.entities:
        key = e.attribute(e.key)
        if key is not None and key.type == "int":
            out[e.name] = "int"
    return out


def fresh_keys(spec: EnvSpec, count: int = 40) -> dict[str, list[str]]:
    """For entities whose string ids have a declared format (a 34-character SID, a UUID), ids in that
    format for the records tools create, made here so the running class needs no generator."""
    import random

    out: dict[str, list[str]] = {}
    for e in spec.entities:
        key = e.attribute(e.key)
        declared = key.declared if key is not None else None
        if key is None or key.type == "int" or not declared:
            continue
        if not any(k in declared for k in ("pattern", "format", "minLength", "maxLength")):
            continue
        from agentomnia.envs.values import schema_value

        rng = random.Random(f"{spec.id}:{e.name}:fresh")
        pool = list(
            dict.fromkeys(str(schema_value(declared, rng, name=e.key, index=900 + i)) for i in range(count))
        )
        out[e.name] = pool
    return out


def tools_json(spec: EnvSpec) -> list[dict[str, Any]]:
    return [t.openai() for t in spec.tools]
