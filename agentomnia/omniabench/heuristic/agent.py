"""The policy: the plan's steps run in request order, references resolved through the run's memory."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from agentomnia.dates import with_iso_dates
from agentomnia.omniabench.heuristic.parser import (
    DESCRIPTIVE,
    MASKED,
    AnswerField,
    Plan,
    Ref,
    Step,
    parse_ref,
    parse_request,
    unmask,
)
from agentomnia.omniabench.heuristic.tools import ToolIndex, ToolView
from agentomnia.omniabench.heuristic.values import (
    Filled,
    Observation,
    Seen,
    build_answer,
    fill,
    is_id,
    is_paging,
    is_scalar,
    observations,
    signature,
    text_candidates,
)
from agentomnia.omniabench.heuristic.words import (
    CREATE_VERBS,
    DELETE_VERBS,
    name_words,
    same_stem,
    singular,
    words_of,
)
from agentomnia.trajectories.evidence import DATE_PATTERN, ID_PATTERN, NUMBER_PATTERN, number_of
from agentomnia.trajectories.messages import answer_block, assistant_message, tool_call

MIN_SCORE = 0.05  # below this cosine a tool is unrelated to the request
RELATIVE_SCORE = 0.5  # a candidate must score at least this share of the best tool's score
FILLED_BONUS = 0.15  # per argument filled from the request: a read that can be aimed beats a vague one


def _id_prefix(value: Any) -> str | None:
    if isinstance(value, str) and ID_PATTERN.fullmatch(value):
        return value.rsplit("-", 1)[0]
    return None


class _Need(Exception):
    """A read must be made before the reference can be resolved."""

    def __init__(self, tool: ToolView, args: dict[str, Any], why: str) -> None:
        super().__init__(why)
        self.tool, self.arguments, self.why = tool, args, why  # `args` is taken by Exception


class _Unresolved(Exception):
    """The heuristic cannot resolve this; the message says what and why."""


def _coerce(value: Any, schema: Mapping[str, Any]) -> Any:
    """A literal typed by the parameter's schema; _Unresolved when it does not fit."""
    text = str(value).strip()
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        for option in enum:
            if (
                str(option).casefold() == text.casefold()
                or str(option).replace("_", " ").casefold() == text.casefold()
            ):
                return option
        raise _Unresolved(f"{text!r} is none of {enum}")
    kind = schema.get("type")
    if kind == "boolean":
        if text.casefold() in ("yes", "true"):
            return True
        if text.casefold() in ("no", "false"):
            return False
        raise _Unresolved(f"{text!r} is not yes or no")
    if kind in ("number", "integer"):
        try:
            number = number_of(text)
        except ValueError as exc:
            raise _Unresolved(f"{text!r} is not a number") from exc
        if kind == "integer":
            if not number.is_integer():
                raise _Unresolved(f"{text!r} is not a whole number")
            return int(number)
        return number
    return text


def _find_key(record: Mapping[str, Any], attr: Sequence[str]) -> str | None:
    """The key of `record` an attribute phrase names ("trigger tag" -> trigger_tag_id)."""
    wanted = [singular(w) for w in attr]
    for key in record:
        words = [singular(w) for w in name_words(str(key))]
        if words == wanted or words == [*wanted, "id"]:
            return str(key)
    return None


class Memory:
    """The run's observations, read for records that are still current."""

    def __init__(self, results: Sequence[Observation], index: ToolIndex) -> None:
        self.results = list(results)
        self.index = index
        names = {t.name: t for t in index.tools}
        self.tools = names
        last = -1
        for n, obs in enumerate(self.results):
            tool = names.get(obs.tool)
            if obs.ok and (tool is None or not tool.read):
                last = n
        # A write may change any record, so only what was read at or after the latest write is current.
        self.fresh = self.results[max(last, 0) :]

    def fetch(self, tool: ToolView, args: dict[str, Any], why: str) -> Any:
        """The data of a current read with these arguments, or _Need it; a failed one is final."""
        sig = signature(tool.name, args)
        for obs in reversed(self.fresh):
            if signature(obs.tool, obs.arguments) == sig:
                if not obs.ok:
                    raise _Unresolved(f"`{tool.name}` failed for {why}")
                return obs.data
        raise _Need(tool, args, why)

    def record(self, record_id: str) -> Mapping[str, Any]:
        """The current record with this id: from a result about it, else read with its get tool."""
        prefix = _id_prefix(record_id)
        for obs in reversed(self.fresh):
            found = self._own_record(obs, record_id)
            if found is not None:
                return found
        located = self.index.record_tool(prefix or "")
        if located is None:
            raise _Unresolved(f"no tool reads a record like {record_id}")
        tool, key = located
        data = self.fetch(tool, {key: record_id}, record_id)
        body = data.get("record", data) if isinstance(data, Mapping) else None
        if not isinstance(body, Mapping) or body.get(key) != record_id:
            raise _Unresolved(f"`{tool.name}` did not return {record_id}")
        return body

    def _own_record(self, obs: Observation, record_id: str) -> Mapping[str, Any] | None:
        if not obs.ok or not isinstance(obs.data, Mapping):
            return None
        tool = self.tools.get(obs.tool)
        body = obs.data.get("record", obs.data)
        if tool is None or not isinstance(body, Mapping):
            return None
        for param, value in obs.arguments.items():
            if value == record_id and self.index.is_key(tool, param) and body.get(param) == record_id:
                return body
        return None


class HeuristicAgent:
    """The clause-by-clause baseline; one per rollout (it counts its own calls)."""

    name = "baseline:heuristic"

    def __init__(
        self,
        index: ToolIndex,
        *,
        max_calls: int = 6,
        max_lookups: int = 2,
        min_score: float = MIN_SCORE,
        relative_score: float = RELATIVE_SCORE,
    ) -> None:
        self.index = index
        self.max_calls = max_calls
        self.max_lookups = max_lookups
        self.min_score = min_score
        self.relative_score = relative_score
        self._calls = 0
        self._lookups = 0
        self._read_done = False  # one read answers a free-text question; more would only wander
        self._plans: dict[str, Plan] = {}
        self._purpose: dict[str, str] = {}  # call id -> the step key it writes for
        self._created: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {}  # step key -> (kind, args)
        self._request = ""
        self._skipped: dict[str, str] = {}  # step key or answer field -> why it was left undone
        self._answers: dict[str, Any] = {}

    # ---- plan and progress

    def _plan(self, request: str) -> Plan:
        if request not in self._plans:
            self._plans[request] = parse_request(request, self.index.writes)
        return self._plans[request]

    def _step_state(self, step: Step, results: Sequence[Observation]) -> str:
        mine = [o for o in results if self._purpose.get(o.call_id) == step.key]
        if any(o.ok for o in mine):
            return "done"
        if mine or step.key in self._skipped:
            return "failed"
        return "open"

    def _created_record(
        self, words: Sequence[str], results: Sequence[Observation]
    ) -> tuple[str, dict[str, Any]]:
        """(id, record) of the record an earlier create step made, by the kind the phrase names."""
        wanted = tuple(singular(w) for w in words)
        for obs in reversed(results):
            step_key = self._purpose.get(obs.call_id)
            if not obs.ok or step_key not in self._created:
                continue
            entity, args = self._created[step_key]
            if entity[-len(wanted) :] != wanted and wanted[-len(entity) :] != entity:
                continue
            data = obs.data.get("record", obs.data) if isinstance(obs.data, Mapping) else None
            if not isinstance(data, Mapping):
                continue
            # The new record's own id is the id in the result that the call did not pass in.
            passed = {v for v in args.values() if isinstance(v, str)}
            ids = [v for v in data.values() if _id_prefix(v) and v not in passed]
            known = self.index.entity_named(entity)
            if known is not None and _id_prefix(data.get(known.key)):
                return str(data[known.key]), dict(data)
            if len(ids) == 1:
                return str(ids[0]), dict(data)
            raise _Unresolved(f"cannot tell which id in the result is the new {' '.join(wanted)}")
        raise _Unresolved(f"no new {' '.join(wanted)} was created")

    # ---- references

    def _value_of(self, refs: Sequence[Ref], memory: Memory) -> Any:
        problems: list[str] = []
        for ref in refs:
            try:
                return self._value_of_one(ref, memory)
            except _Unresolved as exc:
                problems.append(str(exc))
        raise _Unresolved(problems[0] if problems else "nothing to resolve")

    def _value_of_one(self, ref: Ref, memory: Memory) -> Any:
        if ref.kind == "id":
            return ref.value
        if ref.kind == "new":
            return self._created_record(ref.words, memory.results)[0]
        if ref.kind == "attr":
            record = self._record_of(ref.inner, memory)
            key = _find_key(record, ref.words)
            if key is None:
                raise _Unresolved(f"the record has no field {' '.join(ref.words)!r} ({ref.text})")
            return record[key]
        if ref.kind == "named":
            entity = self.index.entity_named(ref.words)
            record = self._named_record(ref, memory)
            if entity is None or not is_scalar(record.get(entity.key)):
                raise _Unresolved(f"cannot tell the id of {ref.text}")
            return record[entity.key]
        raise _Unresolved(f"{ref.text!r} describes a record instead of naming it")

    def _record_of(self, refs: Sequence[Ref], memory: Memory) -> Mapping[str, Any]:
        problems: list[str] = []
        for ref in refs:
            try:
                if ref.kind == "new":
                    return self._created_record(ref.words, memory.results)[1]
                if ref.kind == "named":
                    return self._named_record(ref, memory)
                value = self._value_of_one(ref, memory)
                if not _id_prefix(value):
                    raise _Unresolved(f"{ref.text!r} is not a record id ({value!r})")
                return memory.record(str(value))
            except _Unresolved as exc:
                problems.append(str(exc))
        raise _Unresolved(problems[0] if problems else "nothing to resolve")

    def _named_record(self, ref: Ref, memory: Memory) -> Mapping[str, Any]:
        """The record of the named kind whose label is exactly `ref.value`, through a find tool."""
        entity = self.index.entity_named(ref.words)
        if entity is None:
            raise _Unresolved(f"no record type called {' '.join(ref.words)!r}")
        for tool in self.index.reads:
            if tool.verb != "find" or entity.key not in tool.properties or tool.required:
                continue
            if entity.words[-1] not in tool.nouns:
                continue  # "find_available_vehicles" takes a route id but finds no route
            labels = [
                p
                for p, schema in tool.properties.items()
                if p != entity.key and not is_paging(p) and not is_id(p, schema)
                and schema.get("type", "string") == "string" and not schema.get("enum")
            ]  # fmt: skip
            if len(labels) != 1:
                continue
            data = memory.fetch(tool, {labels[0]: ref.value}, ref.text)
            body = data.get("record", data) if isinstance(data, Mapping) else None
            if isinstance(body, Mapping) and body.get(labels[0]) == ref.value:
                return body
        raise _Unresolved(f"no find tool looks up {ref.text}")

    def _typed(self, phrase: str, schema: Mapping[str, Any], quoted: Sequence[str], memory: Memory) -> Any:
        text = phrase.strip().rstrip(".")
        token = MASKED.fullmatch(text)
        if token:
            return _coerce(quoted[int(token.group(1))], schema)
        if (
            NUMBER_PATTERN.fullmatch(text)
            or DATE_PATTERN.fullmatch(text)
            or text.casefold() in ("yes", "no", "true", "false")
        ):
            return _coerce(text, schema)
        if ID_PATTERN.search(text) or text.casefold().startswith("the "):
            return _coerce(self._value_of(parse_ref(text, quoted), memory), schema)
        return _coerce(text, schema)

    # ---- writes

    def _rank_writes(self, step: Step, prefix: str | None) -> list[tuple[float, ToolView, str | None]]:
        """Write tools for a step, best first: (score, tool, the parameter that takes the subject)."""
        similarity = self.index.similarities(step.text)
        ranked: list[tuple[float, ToolView, str | None]] = []
        made = self.index.entity_named(step.entity) if step.op == "create" else None
        for tool in self.index.writes:
            key = None
            if step.op != "create":
                keys = [p for p in tool.properties if self.index.param_prefix(tool, p) == prefix]
                keys = [p for p in keys if self.index.is_key(tool, p)] or keys
                if not keys:
                    continue
                key = keys[0]
            elif made is not None and made.key in tool.required:
                continue  # it acts on a record of that kind that exists already
            matched = [_match_param(label, tool, key) for label, _ in step.pairs]
            covered = {m for m in matched if m is not None}
            uncovered = [p for p in tool.required if p != key and p not in covered]
            score = 2.0 * len(covered) - 2.0 * (len(matched) - len(covered)) - 3.0 * len(uncovered)
            score += self._cue(step, tool) + 0.5 * similarity[tool.name]
            ranked.append((score, tool, key))
        ranked.sort(key=lambda r: -r[0])
        return ranked

    def _cue(self, step: Step, tool: ToolView) -> float:
        """How strongly the tool's name and description say it does what the clause asks."""
        words = tool.words
        described = words_of(tool.description)[:1]
        if step.op == "create":
            head = 2.0 if step.entity and step.entity[-1] in tool.topic else 0.0
            verb = 1.0 if tool.verb in CREATE_VERBS or (described and described[0] in CREATE_VERBS) else 0.0
            return head + 0.5 * len(set(step.entity[:-1]) & tool.topic) + verb
        if step.op == "delete":
            return 3.0 if tool.verb in DELETE_VERBS or (described and described[0] in DELETE_VERBS) else -1.0
        if step.op == "transition":
            if step.target and all(any(same_stem(t, w) for w in words) for t in step.target):
                return 3.0
            quoted_state = "'" + "_".join(step.target) + "'"
            if quoted_state in tool.description.casefold():
                return 3.0
            enums = [s.get("enum") or [] for p, s in tool.properties.items() if p in tool.required]
            return 1.0 if any("_".join(step.target) in map(str, e) for e in enums) else -2.0
        if step.op == "assign":
            attr = step.pairs[0][0] if step.pairs else ()
            return 1.0 if attr and all(any(same_stem(a, w) for w in words) for a in attr) else 0.0
        if step.op == "update":
            # a tool named for a lifecycle move or a deletion does more than set the fields asked for
            return -1.0 if tool.verb in DELETE_VERBS else 0.0
        return 0.0

    def _write_for(
        self, step: Step, plan: Plan, memory: Memory, made: set[str]
    ) -> tuple[ToolView, dict[str, Any]]:
        if step.op == "verb":
            return self._verb_write(step, plan, memory, made)
        prefix = None
        subject: Any = None
        if step.op != "create":
            subject = self._value_of(step.subject, memory)
            prefix = _id_prefix(subject)
            if prefix is None:
                raise _Unresolved(f"{step.subject[0].text!r} is not a record id")
        ranked = self._rank_writes(step, prefix)
        if not ranked or ranked[0][0] <= 0:
            raise _Unresolved("no tool takes what the sentence gives")
        _, tool, key = ranked[0]
        args: dict[str, Any] = {key: subject} if key is not None else {}
        for label, phrase in step.pairs:
            param = _match_param(label, tool, key)
            if param is not None:
                args[param] = self._typed(phrase, tool.properties[param], plan.quoted, memory)
        if step.op == "transition":
            state = "_".join(step.target)
            for param in tool.required:
                enum = tool.properties.get(param, {}).get("enum") or []
                if param not in args and state in map(str, enum):
                    args[param] = state
        for param in [p for p in tool.required if p not in args]:
            args[param] = self._unnamed(tool, param, step, plan, memory)
        return tool, args

    def _unnamed(self, tool: ToolView, param: str, step: Step, plan: Plan, memory: Memory) -> Any:
        """A required value the clause does not label: from the clause's text, else an id or enum value
        of the right kind anywhere in the request, else the one value the observations show for it."""
        ok = [o for o in memory.results if o.ok]
        found = text_candidates(tool, param, Seen(step.text, [], dict(self.index.prefixes)))
        schema = tool.properties.get(param, {})
        if not found and (is_id(param, schema) or schema.get("enum")):
            found = text_candidates(tool, param, Seen(plan.request, [], dict(self.index.prefixes)))
            found = found if len(found) == 1 else []  # two ids of that kind: which one is meant is unclear
        if not found and is_id(param, schema):
            found = Seen(plan.request, ok, dict(self.index.prefixes)).observed(param)
        if not found:
            raise _Unresolved(f"`{tool.name}` needs {param}, which the request does not give")
        return found[0]

    def _verb_write(
        self, step: Step, plan: Plan, memory: Memory, made: set[str]
    ) -> tuple[ToolView, dict[str, Any]]:
        """A write named by its verb ("Approve claim CLA-001"): arguments from the sentence, then the
        whole request, then the observations; a missing id is first looked up with an aimed read."""
        ok = [o for o in memory.results if o.ok]
        clause = Seen(step.text, ok, dict(self.index.prefixes))
        whole = Seen(plan.request, ok, dict(self.index.prefixes))
        tools = [t for t in self.index.writes if t.name in step.verbs]
        similarity = self.index.similarities(step.text)
        tools.sort(key=lambda t: -similarity[t.name])
        problems: list[str] = []
        for tool in tools:
            filled, missing = fill(tool, clause, made, whole)
            if filled is not None:
                return tool, filled.args
            for param in missing:
                if is_id(param, tool.properties.get(param, {})) and self._lookups < self.max_lookups:
                    support = self._lookup(tool, param, whole, made)
                    if support is not None:
                        raise _Need(support.tool, support.args, f"the {param} `{tool.name}` needs")
            problems.append(f"`{tool.name}` needs {', '.join(missing) or 'a new combination of values'}")
        raise _Unresolved("; ".join(problems) or "no tool matches the verb")

    def _lookup(self, goal: ToolView, param: str, seen: Seen, made: set[str]) -> Filled | None:
        """A read about the entity `param` refers to that can be aimed with what the request gives."""
        entity = {singular(w) for w in param.removesuffix("_id").split("_") if w}
        options: list[tuple[float, Filled]] = []
        for tool, score in self.index.rank(seen.request):
            if tool is goal or not tool.read or param in tool.required or not entity <= tool.nouns:
                continue
            filled, _ = fill(tool, seen, made)
            if filled is None or (not filled.args and tool.verb != "list"):
                continue
            options.append((score + FILLED_BONUS * filled.from_request, filled))
        return max(options, key=lambda o: o[0])[1] if options else None

    # ---- answers

    def _answer(self, spec: AnswerField, plan: Plan, memory: Memory) -> Any:
        text = spec.text.strip()
        lowered = text.casefold()
        count = re.fullmatch(r"the number of (?:the )?(?P<what>.+)", lowered)
        if count is None:
            if lowered.startswith("the "):
                return self._value_of(parse_ref(text, plan.quoted), memory)
            raise _Unresolved(f"{unmask(text, plan.quoted)!r} is not a value the tools report")
        what = text[len(text) - len(count.group("what")) :]
        return self._count(what, plan, memory)

    def _count(self, what: str, plan: Plan, memory: Memory) -> int:
        """How many records a phrase names, read from one list, search, summary or overview call."""
        lowered = what.casefold()
        if set(words_of(lowered)) & (DESCRIPTIVE - {"with", "matching", "whose", "all"}):
            raise _Unresolved(f"{unmask(what, plan.quoted)!r} selects records by a description")
        linked = re.fullmatch(r"(?P<kind>.+?) linked to (?P<ref>.+)", what, re.IGNORECASE)
        if linked:
            record_id = self._value_of(parse_ref(linked.group("ref"), plan.quoted), memory)
            return self._linked_count(words_of(linked.group("kind")), record_id, memory)
        matching = re.fullmatch(r"(?P<kind>.+?) matching qv(?P<q>\d+)qv", lowered)
        if matching:
            tool = self._listings(words_of(matching.group("kind")), {"query"}, search=True)[0]
            return _count_of(memory.fetch(tool, {"query": plan.quoted[int(matching.group("q"))]}, what))
        whose = re.fullmatch(r"(?P<kind>.+?) whose (?P<attr>.+?) is (?P<value>\S+)", lowered)
        if whose:
            return self._group_count(whose, plan, memory)
        kind_words = words_of(lowered.removeprefix("all "))
        with_ = re.fullmatch(r"(?P<kind>.+?) with (?P<conds>.+)", what, re.IGNORECASE)
        if with_:
            filters: dict[str, str] = {}
            for cond in re.split(r"\s+and\s+", with_.group("conds")):
                label, _, value = cond.replace(" set to ", " ").rpartition(" ")
                filters["_".join(words_of(label))] = value
            problems: list[str] = []
            for tool in self._listings(words_of(with_.group("kind")), set(filters)):
                try:  # the first list whose filters accept the values ("announced" is a concert status)
                    args = {
                        p: self._typed(v, tool.properties[p], plan.quoted, memory) for p, v in filters.items()
                    }
                except _Unresolved as exc:
                    problems.append(f"`{tool.name}`: {exc}")
                    continue
                return _count_of(memory.fetch(tool, args, what))
            raise _Unresolved("; ".join(problems))
        for match in re.finditer(r"\s+of\s+", what):
            kind, rest = what[: match.start()], what[match.end() :]
            refs = parse_ref(rest, plan.quoted)
            if refs[0].kind == "opaque":
                continue
            record_id = self._value_of(refs, memory)
            prefix = _id_prefix(record_id)
            if prefix is None:
                raise _Unresolved(f"{rest!r} is not a record id")
            tool, param = self._listing_by(words_of(kind), prefix)
            return _count_of(memory.fetch(tool, {param: record_id}, what))
        return _count_of(memory.fetch(self._listings(kind_words, set())[0], {}, what))

    def _listings(self, kind: Sequence[str], filters: set[str], search: bool = False) -> list[ToolView]:
        """The reads that list records of a kind and take these filters, best first."""
        wanted = [singular(w) for w in kind]
        options: list[tuple[float, ToolView]] = []
        for tool in self.index.reads:
            if not filters <= set(tool.properties) or set(tool.required) - filters - {"limit"}:
                continue
            if ("query" in tool.properties) != search or {"start", "end"} & set(tool.required):
                continue
            if not wanted or wanted[-1] not in tool.topic:
                continue
            score = sum(w in tool.topic for w in wanted) + (1.0 if tool.verb in ("list", "search") else 0.0)
            options.append((score - 0.1 * len(tool.properties), tool))
        if not options:
            raise _Unresolved(f"no tool lists {' '.join(kind)} by {', '.join(sorted(filters)) or 'nothing'}")
        return [tool for _, tool in sorted(options, key=lambda o: -o[0])]

    def _listing_by(self, kind: Sequence[str], prefix: str) -> tuple[ToolView, str]:
        """A list of records of a kind filtered by a record id with this prefix, and that filter."""
        wanted = [singular(w) for w in kind]
        options: list[tuple[float, ToolView, str]] = []
        for tool in self.index.reads:
            params = [p for p in tool.properties if self.index.param_prefix(tool, p) == prefix]
            if not params or set(tool.required) - {params[0], "limit"} or "query" in tool.properties:
                continue
            if self.index.is_key(tool, params[0]):
                continue  # the tool reads that record itself, not the records that refer to it
            if not wanted or wanted[-1] not in tool.topic:
                continue
            score = sum(w in tool.topic for w in wanted) + (1.0 if tool.verb == "list" else 0.0)
            options.append((score - 0.1 * len(tool.properties), tool, params[0]))
        if not options:
            raise _Unresolved(f"no tool lists {' '.join(kind)} by a {prefix} record")
        _, tool, param = max(options, key=lambda o: o[0])
        return tool, param

    def _group_count(self, whose: re.Match[str], plan: Plan, memory: Memory) -> int:
        attr = "_".join(words_of(whose.group("attr")))
        wanted = [singular(w) for w in words_of(whose.group("kind"))]
        for tool in self.index.reads:
            options = tool.properties.get("group_by", {}).get("enum") or []
            if attr not in options or not wanted or wanted[-1] not in tool.topic:
                continue
            data = memory.fetch(tool, {"group_by": attr}, whose.group(0))
            groups = data.get("groups") if isinstance(data, Mapping) else None
            if not isinstance(groups, Mapping):
                raise _Unresolved(f"`{tool.name}` returned no groups")
            token = MASKED.fullmatch(whose.group("value"))
            label = plan.quoted[int(token.group(1))] if token else whose.group("value")
            for name, group in groups.items():
                if str(name).casefold() == label.casefold() and isinstance(group, Mapping):
                    return int(group.get("count") or 0)
            return 0
        raise _Unresolved(f"no tool counts {whose.group('kind')} by {attr}")

    def _linked_count(self, kind: Sequence[str], record_id: Any, memory: Memory) -> int:
        prefix = _id_prefix(record_id)
        wanted = [singular(w) for w in kind]
        for tool in self.index.reads:
            keys = [
                p
                for p in tool.properties
                if self.index.is_key(tool, p) and self.index.param_prefix(tool, p) == prefix
            ]
            if not keys or "overview" not in tool.words:
                continue
            data = memory.fetch(tool, {keys[0]: record_id}, f"the records linked to {record_id}")
            counts = data.get("counts") if isinstance(data, Mapping) else None
            for table, value in (counts or {}).items():
                if [singular(w) for w in name_words(str(table))] == wanted and isinstance(value, int):
                    return value
            raise _Unresolved(f"`{tool.name}` shows no count of {' '.join(kind)}")
        raise _Unresolved(f"no overview tool for {record_id}")

    # ---- turns

    def _call(
        self, tool: ToolView, args: dict[str, Any], reason: str, purpose: str | None = None
    ) -> dict[str, Any]:
        self._calls += 1
        call_id = f"call_{self._calls}"
        if purpose is not None:
            self._purpose[call_id] = purpose
        shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in sorted(args.items()))
        return assistant_message(f"{reason} `{tool.name}`({shown}).", [tool_call(call_id, tool.name, args)])

    def _free_read(self, plan: Plan, results: list[Observation], made: set[str]) -> dict[str, Any] | None:
        """The best aimed read for a free-text question, once, and only if no write was made."""
        if self._read_done or any(self._step_state(s, results) == "done" for s in plan.steps):
            return None
        ok = [o for o in results if o.ok]
        seen = Seen(plan.request, ok, dict(self.index.prefixes))
        ranked = self.index.rank(plan.request)
        if not ranked:
            return None
        floor = max(self.min_score, self.relative_score * ranked[0][1])
        aimed: list[tuple[float, Filled]] = []
        for tool, score in ranked:
            if score < floor or not tool.read:
                continue
            filled, _ = fill(tool, seen, made)
            # A read that nothing in the request aims is only worth it as the best match overall.
            if filled is not None and (filled.from_request or tool is ranked[0][0]):
                aimed.append((score + FILLED_BONUS * filled.from_request, filled))
        if aimed:
            best = max(aimed, key=lambda a: a[0])[1]
            self._read_done = True
            return self._call(best.tool, best.args, "The request asks for this, so I call")
        # No read can be aimed: the best one is, once the id it lacks is looked up.
        goal = next((t for t, score in ranked if score >= floor and t.read), None)
        if goal is None:
            return None
        filled, missing = fill(goal, seen, made)
        if filled is not None:
            self._read_done = True
            return self._call(filled.tool, filled.args, "The request asks for this, so I call")
        for param in missing:
            if is_id(param, goal.properties.get(param, {})) and self._lookups < self.max_lookups:
                support = self._lookup(goal, param, seen, made)
                if support is not None:
                    self._lookups += 1
                    return self._call(
                        support.tool, support.args, f"`{goal.name}` needs the {param}, so first I call"
                    )
        return None

    def act(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        # dates back in the form the tools take: "March 13, 2026" is 2026-03-13
        request = with_iso_dates(
            "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")
        )
        plan = self._plan(request)
        if request != self._request:  # the user said more: what was out of reach may not be now
            self._request = request
            self._skipped.clear()
            self._answers.clear()
        results, made = observations(messages)
        memory = Memory(results, self.index)
        if self._calls < self.max_calls:
            for step in plan.steps:
                if self._step_state(step, results) != "open":
                    continue
                try:
                    tool, args = self._write_for(step, plan, memory, made)
                except _Need as need:
                    if step.op == "verb":
                        self._lookups += 1
                    return self._call(need.tool, need.arguments, f"To resolve {need.why}, I first call")
                except _Unresolved as why:
                    self._skipped[step.key] = str(why)
                    continue
                if step.op == "create":
                    self._created[step.key] = (step.entity, dict(args))
                return self._call(tool, args, f'For "{step.text}" I call', purpose=step.key)
            for spec in plan.fields:
                if spec.name in self._answers or spec.name in self._skipped:
                    continue
                try:
                    self._answers[spec.name] = self._answer(spec, plan, memory)
                except _Need as need:
                    return self._call(need.tool, need.arguments, f'For "{spec.name}" ({need.why}) I call')
                except _Unresolved as why:
                    self._skipped[spec.name] = str(why)
            if plan.questions and not plan.fields:
                read = self._free_read(plan, results, made)
                if read is not None:
                    return read
        ok = [o for o in results if o.ok]
        answer = dict(self._answers) if plan.fields else build_answer(request, ok) if plan.questions else {}
        skipped = "".join(
            f" Not done: {unmask(k, plan.quoted)} ({unmask(v, plan.quoted)})."
            for k, v in self._skipped.items()
        )
        done = sum(o.ok for o in results)
        return assistant_message(
            f"I made {len(results)} tool calls ({done} succeeded).{skipped} " + answer_block(answer)
        )


def _match_param(label: Sequence[str], tool: ToolView, taken: str | None = None) -> str | None:
    """The parameter a field phrase names ("planned km" -> planned_km, "tag" -> tag_id); never
    `taken`, the parameter that already holds the record the clause is about."""
    wanted = [singular(w) for w in label]
    for param in tool.properties:
        words = [singular(w) for w in name_words(param)]
        if param != taken and (words == wanted or words == [*wanted, "id"]):
            return param
    return None


def _count_of(data: Any) -> int:
    if isinstance(data, Mapping):
        count = data.get("count")
        if isinstance(count, int) and not isinstance(count, bool):
            return count
        items = data.get("items")
        if isinstance(items, list):
            return len(items)
    raise _Unresolved("the result carries no count")
