"""The shape every solver problem family shares, and the environment built around one instance.

A family knows its entities, how to draw an instance (the initial state itself: the agent reads
the data through tools and writes its plan by moving decision records to a chosen status), how to
state the instance as a MILP, a greedy baseline, and how to phrase the request. Everything else —
the EnvSpec and its tools, the draft plan, the solution as tool calls — is derived here once, so the
six families differ only in what is really different about them.

The request is written from a family's phrasings: templates with `{fact}` fields filled from the
instance and `[a|b|c]` groups of interchangeable wording. Which phrasing and which alternatives an
instance gets is a function of a content hash of its data, so reruns give the same text (and the
same task ids) while different instances read differently.
"""

from __future__ import annotations

import inspect
import itertools
import random
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from agentomnia.envs.spec import AttributeSpec, EntitySpec, EnvSpec, ToolSpec
from agentomnia.records import content_hash
from agentomnia.tasks.models import ReferenceCall
from agentomnia.tasks.solver import evaluators
from agentomnia.tasks.solver.contract import Blueprint, InputContract
from agentomnia.tasks.solver.milp import Milp, Sense
from agentomnia.taxonomy import Coordinate
from agentomnia.taxonomy.knowledge import Relation

State = dict[str, dict[str, dict[str, Any]]]
Plan = dict[str, list[str]]  # decision table -> keys whose status is the decision value

CAPABILITIES = ("data_analysis", "information_gathering", "planning_decision", "state_management", "tool_use")


def attr(name: str, type_: str, description: str = "", **extra: Any) -> AttributeSpec:
    return AttributeSpec(name=name, type=type_, description=description, **extra)  # type: ignore[arg-type]


def entity(
    name: str, table: str, prefix: str, description: str, attributes: list[AttributeSpec]
) -> EntitySpec:
    key = f"{name}_id"
    return EntitySpec(
        name=name,
        table=table,
        description=description,
        key=key,
        id_prefix=prefix,
        attributes=(attr(key, "str", f"id of the {name.replace('_', ' ')}"), *attributes),
    )


# -- wording of the public request ---------------------------------------------------------------

_GROUP = re.compile(r"\[([^\[\]]*)\]")
_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")  # fmt: skip


def count_word(n: int) -> str:
    """A small count in words (`seven`); larger ones stay digits."""
    return _NUMBER_WORDS[n] if 0 <= n < len(_NUMBER_WORDS) else str(n)


def listing(items: Sequence[str]) -> str:
    """Items as running text: `a`, `a and b`, `a, b and c`."""
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def choose(digest: str, slot: str, k: int) -> int:
    """A deterministic index in range(k) for one choice about one instance."""
    return int(content_hash({"instance": digest, "slot": slot}), 16) % k


def alternatives(template: str) -> list[list[str]]:
    """The `[a|b|c]` groups of a template, in order, each as its list of options."""
    return [group.split("|") for group in _GROUP.findall(template)]


def resolve(template: str, picks: Sequence[int]) -> str:
    """The template with its i-th group replaced by option `picks[i]`."""
    counter = itertools.count()
    return _GROUP.sub(lambda m: m.group(1).split("|")[picks[next(counter)]], template)


def variants(template: str) -> Iterator[str]:
    """Every wording a template can take (the product of its groups), facts still unfilled."""
    for picks in itertools.product(*(range(len(g)) for g in alternatives(template))):
        yield resolve(template, picks)


def render(text: str, facts: Mapping[str, str]) -> str:
    """Fill the `{fact}` fields and tidy the spacing an empty alternative leaves behind."""
    filled = text.format_map(dict(facts))
    return re.sub(r" {2,}", " ", re.sub(r" +([,.;:?!])", r"\1", filled)).strip()


class Decision:
    """A decision table: records move between `off` and `on` through two transition tools."""

    def __init__(
        self, entity: str, on: str, off: str, select: str, release: str, select_text: str, release_text: str
    ):
        self.entity, self.on, self.off = entity, on, off
        self.select, self.release = select, release
        self.select_text, self.release_text = select_text, release_text


class Family(ABC):
    """Base of the problem families; subclasses fill the class attributes and four methods.

    `phrasings` are the family's ways of stating the request (the module docstring gives the template
    syntax); every one of them, with every choice of alternatives, must keep the same contract:
    the objective, the explicit constraints, what to change in the system and what to report.
    """

    name: str
    title: str
    taxonomy_id: int
    class_name: str
    description: str
    sense: Sense
    objective_field: str  # the answer field that reports the objective
    entities: tuple[EntitySpec, ...]
    decisions: tuple[Decision, ...]
    contract: InputContract
    blueprint: Blueprint
    evaluator: Callable[[Any, Any], dict[str, Any]]
    phrasings: tuple[str, ...]
    atoms: tuple[str, ...] = ("dynamic_planning", "structured_information", "ambiguous_goal")
    primary: str = "dynamic_planning"

    # -- what each family defines ------------------------------------------------------------

    @abstractmethod
    def generate(self, rng: random.Random, *, ties: bool = False) -> State:
        """A fresh instance as an initial state, every decision record at its `off` value."""

    @abstractmethod
    def model(self, state: Mapping[str, Any]) -> Milp:
        """The instance as a MILP whose binary variables are the decision records."""

    @abstractmethod
    def baseline(self, state: Mapping[str, Any]) -> Plan:
        """A greedy plan a careful clerk might make; it may be infeasible or suboptimal."""

    @abstractmethod
    def facts(self, state: Mapping[str, Any]) -> dict[str, str]:
        """The instance facts the phrasings may quote (names, counts, places), read from `state`."""

    # -- the public request ------------------------------------------------------------------

    def query(self, state: Mapping[str, Any]) -> str:
        """The public request: goal and explicit constraints in plain words; implicit ones left to find."""
        digest = self.instance_digest(state)
        index = self._phrasing_of(digest)
        template = self.phrasings[index]
        picks = [choose(digest, f"{index}:{g}", len(opts)) for g, opts in enumerate(alternatives(template))]
        return render(resolve(template, picks), self.facts(state))

    def phrasing_index(self, state: Mapping[str, Any]) -> int:
        """Which of the phrasings states this instance's request."""
        return self._phrasing_of(self.instance_digest(state))

    def _phrasing_of(self, digest: str) -> int:
        return choose(digest, "phrasing", len(self.phrasings))

    def instance_digest(self, state: Mapping[str, Any]) -> str:
        """A hash of the instance's data, blind to the decision fields, so a draft plan or a
        finished one leaves the request unchanged."""
        decision = self.decision_tables()
        data = {
            table: {
                key: {f: v for f, v in record.items() if not (table in decision and f == "status")}
                for key, record in records.items()
            }
            for table, records in state.items()
            if isinstance(records, dict)
        }
        return content_hash({"family": self.name, "instance": data})

    # -- derived -----------------------------------------------------------------------------

    def table(self, entity_name: str) -> str:
        return next(e.table for e in self.entities if e.name == entity_name)

    def decision_tables(self) -> dict[str, Decision]:
        return {self.table(d.entity): d for d in self.decisions}

    def coordinate(self) -> Coordinate:
        return Coordinate.for_domain(self.taxonomy_id, CAPABILITIES, self.atoms, self.primary)

    def spec(self) -> EnvSpec:
        relations = tuple(
            Relation(
                source=e.name, attr=a.name, target=a.ref or "", description=f"{e.name} belongs to a {a.ref}"
            )
            for e in self.entities
            for a in e.attributes
            if a.type == "ref"
        )
        return EnvSpec(
            name=f"solver-{self.name}",
            class_name=self.class_name,
            description=self.description,
            coordinate=self.coordinate(),
            candidate_id=f"solver:{self.name}",
            seed_ids=(),
            entities=self.entities,
            relations=relations,
            rules=(),
            tools=tuple(self._tools()),
        )

    def _tools(self) -> list[ToolSpec]:
        tools: list[ToolSpec] = []
        for e in self.entities:
            label = e.name.replace("_", " ")
            filters = {
                a.name: a.name for a in e.attributes if a.type in ("ref", "enum", "bool") and a.name != e.key
            }
            props: dict[str, Any] = {p: e.attribute(p).json_schema() for p in filters}  # type: ignore[union-attr]
            props["limit"] = {
                "type": "integer",
                "minimum": 1,
                "maximum": 100,
                "description": "at most this many records (default 20)",
            }
            tools.append(
                ToolSpec(
                    name=f"list_{e.table}",
                    description=f"List {e.table.replace('_', ' ')}, optionally filtered; returns items and the total count.",
                    kind="read", op="list", entity=e.name,
                    parameters={"type": "object", "properties": props, "required": [], "additionalProperties": False},
                    binding={"filters": filters},
                )
            )  # fmt: skip
            key_schema = {"type": "string", "description": f"id of the {label} (e.g. {e.id_prefix}-001)"}
            tools.append(
                ToolSpec(
                    name=f"get_{e.name}",
                    description=f"Get one {label} by its id, with every field.",
                    kind="read", op="get", entity=e.name,
                    parameters={"type": "object", "properties": {e.key: key_schema}, "required": [e.key], "additionalProperties": False},
                    binding={"key": e.key},
                )
            )  # fmt: skip
        for d in self.decisions:
            e = next(x for x in self.entities if x.name == d.entity)
            key_schema = {"type": "string", "description": f"id of the {e.name.replace('_', ' ')}"}
            for name, value, text in ((d.select, d.on, d.select_text), (d.release, d.off, d.release_text)):
                tools.append(
                    ToolSpec(
                        name=name, description=text, kind="write", op="transition", entity=e.name,
                        parameters={"type": "object", "properties": {e.key: key_schema}, "required": [e.key], "additionalProperties": False},
                        binding={"key": e.key, "attr": "status", "value": value},
                    )
                )  # fmt: skip
        return tools

    def apply(self, state: Mapping[str, Any], plan: Plan) -> State:
        """The state with exactly the plan's records at their decision value (others at `off`)."""
        out: State = {
            t: {k: dict(r) for k, r in recs.items()} for t, recs in state.items() if isinstance(recs, dict)
        }
        for table, d in self.decision_tables().items():
            chosen = set(plan.get(table, []))
            for key, record in out.get(table, {}).items():
                record["status"] = d.on if key in chosen else d.off
        return out

    def plan_of(self, state: Mapping[str, Any]) -> Plan:
        return {
            table: sorted(k for k, r in (state.get(table) or {}).items() if r.get("status") == d.on)
            for table, d in self.decision_tables().items()
        }

    def plan_from_refs(self, refs: Any) -> Plan:
        plan: Plan = {t: [] for t in self.decision_tables()}
        for table, key in refs:
            plan.setdefault(table, []).append(key)
        return {t: sorted(v) for t, v in plan.items()}

    def calls_to(self, state: Mapping[str, Any], target: Plan) -> list[ReferenceCall]:
        """The writes that turn the plan in `state` into `target`: releases first, then selections."""
        current = self.plan_of(state)
        releases: list[ReferenceCall] = []
        selects: list[ReferenceCall] = []
        for table, d in self.decision_tables().items():
            key_attr = next(e.key for e in self.entities if e.table == table)
            now, want = set(current.get(table, [])), set(target.get(table, []))
            for key in sorted(now - want):
                releases.append(
                    ReferenceCall(
                        tool=d.release,
                        args={key_attr: key},
                        sources={key_attr: f"s0:{table}.{key}.{key_attr}"},
                    )
                )
            for key in sorted(want - now):
                selects.append(
                    ReferenceCall(
                        tool=d.select,
                        args={key_attr: key},
                        sources={key_attr: f"s0:{table}.{key}.{key_attr}"},
                    )
                )
        return releases + selects

    def verifier_code(self, objective: float, *, tolerance: float = 1e-6, proven: bool = True) -> str:
        """check_func(final_state): the plan keeps every constraint and matches or beats `objective`."""
        helpers = "\n\n".join(inspect.getsource(f) for f in (evaluators.data_problems, evaluators.chosen))
        body = inspect.getsource(self.evaluator)
        compare = ">=" if self.sense == "max" else "<="
        bound = f"OPTIMUM - {tolerance!r}" if self.sense == "max" else f"OPTIMUM + {tolerance!r}"
        return (
            "from __future__ import annotations\n\n"
            f"# {self.title}: the plan must keep every constraint and reach an objective {compare} the "
            f"{'solver optimum' if proven else 'reference plan (not proven optimal)'}.\n"
            f"OPTIMUM = {objective!r}\n\n"
            f"{helpers}\n\n{body}\n\n"
            "def check_func(final_state):\n"
            f"    result = {self.evaluator.__name__}(initial_state, final_state)\n"
            f"    return bool(result['feasible'] and result['objective'] {compare} {bound})\n"
        )
