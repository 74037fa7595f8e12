"""Policies that act in a rollout: the one small protocol, a model-backed agent and offline teachers.

`Agent.act(messages, tools) -> assistant message` is all the rollout loop needs, so the same loop
serves teachers during synthesis and any policy under evaluation (an OpenAI-compatible model, a
local checkpoint wrapped the same way, a baseline).

The offline teacher follows the task's reference plan (privileged knowledge) but must act through
the tools and may only write what it has observed: before a planned call whose arguments it cannot
yet attribute to the request, the tool schemas or an earlier result, it looks the values up with
read tools or asks the user, and its reasoning cites where each value came from. Guidance adds what
a teacher may know about the outcome (which answer fields to report, the target values) or the
plan; it shapes the teacher's behaviour and never appears in the messages it writes.

Tasks that get no guidance by design (DAG-Standard: solvable from the request alone) stand for a
teacher that reads the request's answer specification ("the cost of commissioning test COM-004",
"whether it is at least 89") and works the values out from what it observed. This deterministic
teacher cannot read such clauses, so it takes each value from the task's oracle outcome and states
it only when its own transcript supports it: observed in a tool result, or one arithmetic step from
values it reports. Runs without guidance of the other kinds (the guidance ablation) never do this.
"""

from __future__ import annotations

import json
import operator
import random
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from agentomnia.envs.toolset import QUERY_PARAMS
from agentomnia.envs.values import written_number
from agentomnia.llm.protocol import LLM
from agentomnia.sandbox.bundle import Bundle
from agentomnia.tasks.dag.describe import labelled, lead_word, singular
from agentomnia.tasks.models import ReferenceCall, Task
from agentomnia.tasks.wording import lead_clause
from agentomnia.trajectories.evidence import (
    ID_PATTERN,
    Evidence,
    combines,
    needs_support,
    record_index,
    records_in,
    state_facts,
)
from agentomnia.trajectories.guidance import GUIDANCE_KIND, Guidance
from agentomnia.trajectories.messages import (
    answer_block,
    assistant_message,
    closing,
    parse_arguments,
    tool_call,
)
from agentomnia.trajectories.users import words

_REQUEST = "\0request"  # marks the opening question about what the user needs


def detail_question(param: str) -> str:
    """How the agent asks for a detail the user has not given, by what the argument is: a record it
    points at ("which customer is it?"), a date or time by its name ("what is the visit date?") or, where
    a verb names it, as the field it goes into ("what date should I use for "started at"?"), who did
    something ("who raised it?"), or a value ("what should the priority be?")."""
    label = words(param)
    last = label.split()[-1] if label else ""
    if last.lower() == "id" and len(label.split()) > 1:
        return f"Before I continue, which {label.rsplit(' ', 1)[0]} is it?"
    if last in ("date", "time", "day", "deadline") and len(label.split()) > 1 or label == "deadline":
        return f"Before I continue, what is the {label}?"  # "what is the visit date?"
    if label == "due":
        return "Before I continue, when is it due?"
    if last in ("at", "on", "date", "time", "until", "from"):
        return f'Before I continue, what date should I use for "{label}"?'
    if (
        last == "by" and len(label.split()) > 1
    ):  # `raised_by`: "who raised it?", never "what should the raised by be?"
        return f"Before I continue, who {label.rsplit(' ', 1)[0]} it?"
    # the field as a person says it, without its unit: "what should the size be?", never "size sqm"
    return f"Before I continue, what should the {labelled(param, '1')[0]} be?"


class Agent(Protocol):
    """Any policy: given the conversation so far and the tool schemas, return one assistant message.
    An agent may keep state across the turns of one run, so make one per rollout."""

    name: str

    def act(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]: ...


_API_FIELDS = frozenset({"role", "content", "tool_calls", "tool_call_id"})


class LLMAgent:
    """An OpenAI-compatible chat model; guidance (if any) is appended to the system prompt it reads,
    never to the messages the rollout keeps."""

    def __init__(
        self,
        llm: LLM,
        *,
        guidance_text: str = "",
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
        purpose: str = "teacher_turn",
    ) -> None:
        self.llm = llm
        self.purpose = purpose  # what its turns count as on the model's ledger (a teacher's, a policy's)
        self.guidance_text = guidance_text
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed  # the sampling seed sent with each turn (pass@K: one per attempt)
        self.name = f"llm:{llm.model}"

    def act(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        # Only the fields the chat API defines travel; the trajectory's extras (a tool message's
        # `name`) are refused by strict endpoints.
        seen = [{k: v for k, v in m.items() if k in _API_FIELDS} for m in messages]
        if self.guidance_text:
            if seen and seen[0].get("role") == "system":
                seen[0] = {**seen[0], "content": f"{seen[0].get('content', '')}\n\n{self.guidance_text}"}
            else:
                seen.insert(0, {"role": "system", "content": self.guidance_text})
        response = self.llm.complete(
            seen,
            tools=list(tools),
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            schema_name=self.purpose,
            seed=self.seed,
        )
        calls = [
            {**c, "id": c.get("id") or f"call_{len(messages)}_{i}", "type": "function"}
            for i, c in enumerate(response.tool_calls)
        ]
        return assistant_message(response.text or "", calls)


def _first_sentence(text: str) -> str:
    sentence = lead_clause(text)
    return sentence[:1].lower() + sentence[1:] if sentence else "do the next step"


_VERBS = frozenset({"get", "list", "find", "search", "fetch", "retrieve", "return", "create", "add", "update", "delete", "remove", "set", "mark", "cancel", "end", "stop", "start", "rate", "book", "assign", "record", "register", "open", "close", "send", "check", "schedule", "move", "approve", "reject", "submit", "upload", "download", "show", "view", "read", "post", "place", "track", "log", "issue", "refund", "pay", "apply", "change", "edit", "modify", "reserve", "confirm", "complete", "archive", "restore", "generate", "calculate", "compute", "count", "export", "import", "link", "unlink", "transfer", "enroll", "invite", "publish", "pause", "resume", "look", "query", "lookup", "replace", "patch", "reset", "renew", "release", "resolve", "escalate", "flag", "dispatch", "credit", "debit", "extend", "grant", "lift", "point", "revoke", "suspend", "withdraw", "redeem", "settle", "void", "reassign", "reschedule", "sanction"})  # fmt: skip


# words that open a verb's object: a description whose second word is one opens with a verb
_DETERMINERS = frozenset({"a", "an", "the", "one", "each", "every", "all", "its", "their", "this", "that", "these", "those", "any", "some", "another", "my", "your", "our"})  # fmt: skip


# verbs a tool's name may use for what its description's verb says ("Change fields of a deviation"
# is what `update_protocol_deviation` does, not a "change field" it updates)
_SYNONYMS = {"change": {"update", "edit", "modify", "set", "patch"}}


# words after a plural noun that no verb's third person takes ("shows by artist", "returns of an order")
_PREPOSITIONS = frozenset({"by", "of", "for", "in", "at", "from", "with", "per", "on", "between", "within"})


# verbs that are nouns as often: a description opening with one without an object names a thing
_NOUNS_TOO = frozenset({"rate", "record", "log", "book", "check", "place", "post", "track", "schedule", "list", "count", "view", "transfer", "flag", "issue", "return", "search", "order", "release", "change", "link", "pay"})  # fmt: skip


def _verb(word: str) -> str | None:
    """`Returns` -> `return`, `lists` -> `list`, `Get` -> `get`; None for a word that is no such verb."""
    w = word.lower()
    for base in (w, w[:-1] if w.endswith("s") else "", w[:-2] if w.endswith("es") else ""):
        if base in _VERBS:
            return base
    return None


def _purpose(description: str, tool: str) -> str:
    """What a call is for, as the end of "Next I call `x` to ...": the description's first sentence
    where it opens with a verb ("get a pet by id"), else the tool name's verb before it ("list episodes
    of a series by season" for `list_episodes` described as "Episodes of a series by season")."""
    sentence = _first_sentence(description)
    head, _, rest = sentence.partition(" ")
    verb = _verb(head)
    object_follows = rest.partition(" ")[0].lower() in _DETERMINERS
    if verb is None and head.isalpha() and object_follows:
        verb = head.lower()  # "Sanction a player", "Point a player's server at another server"
    if (
        verb in _NOUNS_TOO
        and head.lower() == verb  # "Returns pet inventories" says what it does
        and not object_follows
        and _verb(lead_word(tool)) not in (None, verb)
        and _verb(lead_word(tool)) not in _SYNONYMS.get(verb or "", set())
    ):
        verb = None  # "Rate plans and conditions of a room type" names what `get_rate_plans` gets
    if verb is not None and head.lower() != verb and rest.partition(" ")[0].lower() in _PREPOSITIONS:
        verb = None  # "Shows by artist, city and date" names what `search_concerts` finds
    if verb is not None:
        return f"{verb} {rest}".strip()
    named = _verb(lead_word(tool))
    return f"{named or 'look up'} {sentence}" if description.strip() else "do the next step"


class OfflineTeacher:
    """Deterministic teacher that executes a reference plan through the tools, grounding every value."""

    name = "offline-teacher"

    def __init__(
        self,
        task: Task,
        plan: Sequence[ReferenceCall],
        guidance: Guidance | None = None,
        *,
        read_tools: Mapping[str, str] | Sequence[str] = (),
        max_lookups: int = 3,
    ) -> None:
        self.task = task
        self.plan = list(plan)
        self.guidance = guidance if guidance is not None and guidance.kind != "none" else None
        # no guidance by design: the oracle's answer, stated only where observations support it
        self._oracle_answer = task.expected_answer if GUIDANCE_KIND.get(task.kind) == "none" else {}
        # read tool -> the table it reads ("" when unknown: then the tool's name must mention the table)
        self.read_tools: dict[str, str] = (
            dict(read_tools) if isinstance(read_tools, Mapping) else {name: "" for name in read_tools}
        )
        self.max_lookups = max_lookups
        self._keys, self._facts = state_facts(task.init_config)
        self._index = record_index(task.init_config)
        self._next = 0
        self._pending: tuple[str, int] | None = None
        self._lookups: dict[int, int] = {}
        self._tried: set[str] = set()
        self._asked: set[str] = set()
        self._calls = 0

    # -------------------------------------------------------------- evidence

    def _evidence(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> Evidence:
        evidence = Evidence.from_tools(tools)
        names: dict[str, str] = {}
        for m in messages:
            role = m.get("role")
            if role in ("system", "user"):
                evidence.add_text(
                    str(m.get("content") or ""), "the request" if role == "user" else "the instructions"
                )
            elif role == "assistant":
                for call in m.get("tool_calls") or []:
                    names[str(call.get("id"))] = parse_arguments(call)[0]
            elif role == "tool":
                tool = names.get(str(m.get("tool_call_id")), str(m.get("name", "a tool")))
                evidence.add_observation(str(m.get("content") or ""), f"the result of `{tool}`")
        return evidence

    def _needs(self, value: Any) -> bool:
        return needs_support(value, self._keys, self._facts)

    def _missing(self, call: ReferenceCall, evidence: Evidence) -> list[str]:
        # A detail the task withholds for the user is asked for until it has been asked: free text,
        # or a value the privileged guidance happens to mention, is still the user's to give.
        withheld = self.task.persona.withheld if self.task.persona is not None else {}
        return [
            p
            for p, v in sorted(call.args.items())
            if (p in withheld and p not in self._asked) or (self._needs(v) and not evidence.supports(v))
        ]

    # -------------------------------------------------------------- choices

    def _held_back(self, messages: Sequence[Mapping[str, Any]]) -> bool:
        """Whether the user has so far given only the first line of a longer request (a terse
        persona), so that no step can be taken on what they said."""
        persona = self.task.persona
        if self.task.interaction != "multi" or persona is None or persona.granularity != "terse":
            return False
        if _REQUEST in self._asked or self._calls:
            return False
        said = " ".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")
        return (
            len(said.strip()) < len(self.task.query.strip())
            and len([s for s in re.split(r"(?<=[.!?])\s+", self.task.query.strip()) if s]) > 1
        )

    def _ask(self, call: ReferenceCall, missing: list[str], evidence: Evidence) -> str | None:
        persona = self.task.persona
        if self.task.interaction != "multi" or persona is None:
            return None
        # A detail the user stated that the plan contradicts is confirmed before anything relies on it.
        for key, wrong in sorted(persona.misleading.items()):
            if key not in self._asked and evidence.supports(wrong):
                self._asked.add(key)
                return f"Could you confirm the {words(key)}? You gave {wrong}."
        for param in missing:
            if param not in self._asked and (param in persona.withheld or call.sources.get(param) == "query"):
                self._asked.add(param)
                return detail_question(param)
        return None

    def _record_of(self, value: Any, source: str) -> tuple[str, str, Mapping[str, Any]] | None:
        """(table, key, record) the value was taken from, by its provenance or by search of s0."""
        if source.startswith("s0:"):
            parts = source[3:].split(".")
            if len(parts) >= 2:
                record = (self.task.init_config.get(parts[0]) or {}).get(parts[1])
                if isinstance(record, Mapping):
                    return parts[0], parts[1], record
        for table, records in self.task.init_config.items():
            if isinstance(records, Mapping) and isinstance(value, str) and value in records:
                record = records[value]
                if isinstance(record, Mapping):
                    return table, value, record
        return None

    def _lookup(
        self, value: Any, source: str, evidence: Evidence, schemas: Mapping[str, Mapping[str, Any]]
    ) -> tuple[str, dict[str, Any], str] | None:
        """A read call likely to reveal `value`, with the reason to give for it."""
        found = self._record_of(value, source)
        if found is None:
            return None
        table, key, record = found
        stem = singular(table)
        key_field = self._index.get(key, "")
        options: list[tuple[int, str, dict[str, Any], str]] = []  # (preference, tool, args, reason)
        for name, schema in sorted(schemas.items()):
            if self.read_tools and name not in self.read_tools:
                continue
            reads = self.read_tools.get(name, "")
            if reads != table and not (not reads and (stem in name or table in name)):
                continue
            props = dict(schema.get("properties") or {})
            required = set(schema.get("required") or [])
            limit = props.get("limit", {})
            extra = {"limit": limit["maximum"]} if isinstance(limit, Mapping) and "maximum" in limit else {}
            if key_field in props and required <= {key_field} and evidence.supports(key) and value != key:
                options.append((0, name, {key_field: key}, f"to read {words(stem)} {key}"))
            for f, v in sorted(record.items()):
                usable = isinstance(v, (str, int, float)) and not isinstance(v, bool) and f != key_field
                # a value the request names: an id or a figure, or a status it says ("the sent message")
                named = self._needs(v) or v in ((props.get(f) or {}).get("enum") or ())
                if f in props and usable and required <= {f, "limit"} and named and evidence.supports(v):
                    why = f"to find the {words(stem)} whose {words(f)} is {v}"
                    options.append((1, name, {f: v, **extra}, why))
            text = next((q for q in QUERY_PARAMS if q in props), None)  # a search's text: `query`, `q`
            if text is not None and required <= {text, "limit"}:
                for f, v in sorted(record.items()):
                    if isinstance(v, str) and f != key_field and len(v) >= 4 and evidence.supports(v):
                        options.append((2, name, {text: v}, f"to search {words(table)} for {v}"))
            if (
                not required - {"limit"}
                and text is None
                and (name.startswith(("list_", "search_", "find_")) or "limit" in props)
            ):
                options.append((3, name, dict(extra), f"to list the {words(table)}"))
        for _, name, args, why in sorted(options, key=lambda o: (o[0], o[1])):
            marker = name + json.dumps(args, sort_keys=True, default=str)
            if marker not in self._tried:
                self._tried.add(marker)
                return name, args, why
        return None

    def _argument_notes(self, call: ReferenceCall, evidence: Evidence) -> str:
        notes = []
        for param, value in sorted(call.args.items()):
            shown = json.dumps(value, ensure_ascii=False, default=str)
            if not self._needs(value):
                notes.append(f"{param}={shown}")
                continue
            origin = evidence.where(value)
            notes.append(f"{param}={shown} (from {origin or 'the earlier results'})")
        return ", ".join(notes)

    # -------------------------------------------------------------- act

    def _last_results(self, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for m in reversed(messages):
            if m.get("role") != "tool":
                break
            try:
                out.append(json.loads(str(m.get("content") or "{}")))
            except json.JSONDecodeError:
                out.append({"ok": False, "error": {"code": "unreadable", "message": "unreadable result"}})
        return list(reversed(out))

    def _call_message(self, reason: str, name: str, args: Mapping[str, Any]) -> dict[str, Any]:
        self._calls += 1
        return assistant_message(reason, [tool_call(f"call_{self._calls}", name, args)])

    def act(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        evidence = self._evidence(messages, tools)
        schemas = {
            str(t.get("function", t).get("name")): dict(t.get("function", t).get("parameters") or {})
            for t in tools
        }
        prefix = ""
        failed = [r for r in self._last_results(messages) if not r.get("ok")]
        if failed and self._pending is not None:
            error = failed[0].get("error") or {}
            last: Mapping[str, Any] = next(
                (m for m in reversed(messages) if m.get("role") == "assistant"), {}
            )
            tool = parse_arguments((last.get("tool_calls") or [{}])[0])[0] or "the tool"
            prefix = (
                f"The call to `{tool}` failed ({error.get('code')}: {error.get('message')}); "
                "I will carry on with the remaining steps. "
            )
        self._pending = None
        if self._held_back(messages):
            # a user who opened with one line has said what kind of help, not what to do: ask first
            self._asked.add(_REQUEST)
            return assistant_message("Happy to help. What needs doing?")
        while self._next < len(self.plan):
            call = self.plan[self._next]
            missing = self._missing(call, evidence)
            question = self._ask(call, missing, evidence)
            if question is not None:
                self._pending = ("ask", self._next)
                return assistant_message(prefix + question)
            if missing and self._lookups.get(self._next, 0) < self.max_lookups:
                self._lookups[self._next] = self._lookups.get(self._next, 0) + 1
                param = missing[0]
                found = self._lookup(call.args[param], call.sources.get(param, ""), evidence, schemas)
                if found is not None:
                    name, args, why = found
                    self._pending = ("lookup", self._next)
                    reason = f"{prefix}I need the {words(param)} for the next step, so I call `{name}` {why}."
                    return self._call_message(reason, name, args)
                self._lookups[self._next] = self.max_lookups
            description = str(schemas.get(call.tool, {}).get("description", "")) or next(
                (
                    str(t.get("function", t).get("description", ""))
                    for t in tools
                    if t.get("function", t).get("name") == call.tool
                ),
                "",
            )
            reason = f"{prefix}Next I call `{call.tool}` to {_purpose(description, call.tool)}, with {self._argument_notes(call, evidence)}."
            self._pending = ("plan", self._next)
            self._next += 1
            return self._call_message(reason, call.tool, call.args)
        fetch = self._objective_read(messages, schemas)
        if fetch is not None:
            name, args, reason = fetch
            return self._call_message(prefix + reason, name, args)
        return assistant_message(prefix + self._final(messages, evidence))

    # -------------------------------------------------------------- a plan's objective

    def _objective(self) -> dict[str, list[tuple[str, ...]]]:
        """For a task that asks for a plan and its objective (a solver task): per list of the plan (a
        table whose records it chooses), the factors each chosen record's share of the objective
        multiplies, read off the objective's fields. A factor is `(table, attribute)`: the record's
        own attribute ("lanes", "unit_cost") or one of the record it points at ("stores", "demand");
        `(table, start, end)` is the span between two ("shifts", "start_hour", "end_hour"). A field
        of another list of the plan is that list's own share (a supplier's fee is not a lane's)."""
        spec = self.task.internal_spec if isinstance(self.task.internal_spec, Mapping) else {}
        blueprint = spec.get("blueprint")
        objective = blueprint.get("objective") if isinstance(blueprint, Mapping) else None
        plan = self.task.expected_answer.get("plan")
        if not isinstance(objective, Mapping) or not isinstance(plan, Mapping):
            return {}
        by_table: dict[str, list[str]] = {}
        for f in objective.get("fields") or []:
            table, _, attr = str(f).partition(".")
            if attr and attr.isidentifier():
                by_table.setdefault(table, []).append(attr)
        out: dict[str, list[tuple[str, ...]]] = {}
        for chosen in plan:
            factors: list[tuple[str, ...]] = []
            rows = self.task.init_config.get(str(chosen))
            first = next(iter(rows.values()), None) if isinstance(rows, Mapping) and rows else None
            for table, attrs in by_table.items():
                if table != chosen and (table in plan or first is None or self._linked(first, table) is None):
                    continue
                for a in attrs:
                    end = "end_" + a.removeprefix("start_")
                    if a.startswith("start_") and end in attrs:
                        factors.append((table, a, end))
                    elif not (a.startswith("end_") and "start_" + a.removeprefix("end_") in attrs):
                        factors.append((table, a))
            out[str(chosen)] = factors
        return out

    def _seen_records(self, messages: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
        """Every record the run has read, by key, as it first read it (before changing it); a record
        that only points at a key (an availability's `employee_id`) is not that key's record."""
        tables = {
            str(k): row
            for rows in self.task.init_config.values()
            if isinstance(rows, Mapping)
            for k, row in rows.items()
            if isinstance(row, Mapping)
        }
        seen: dict[str, Mapping[str, Any]] = {}
        for data in _tool_data(messages):
            for key, record in records_in(data, self._index):
                row = tables.get(key, {})
                if 2 * len(set(record) & set(row)) >= len(row):
                    seen.setdefault(key, record)
        return seen

    def _linked(self, record: Mapping[str, Any], table: str) -> str | None:
        """The key of the record of `table` that `record` points at."""
        rows = self.task.init_config.get(table)
        if not isinstance(rows, Mapping):
            return None
        return next((str(v) for v in record.values() if isinstance(v, str) and v in rows), None)

    def _unread(self, messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
        """(table, what of it is needed) the plan's objective needs and the run has not read yet."""
        plan = self.task.expected_answer.get("plan")
        terms = self._objective()
        if not terms or not isinstance(plan, Mapping):
            return []
        seen = self._seen_records(messages)
        out: list[tuple[str, str]] = []
        for chosen, keys in plan.items():
            records = [seen.get(str(k)) for k in keys] if isinstance(keys, list) else []
            if not all(records):
                out.append((str(chosen), "figures"))
                continue
            for table, *attrs in terms.get(str(chosen), []):
                if table == chosen:
                    continue
                linked = [self._linked(r, table) for r in records if r is not None]
                if any(k is None or k not in seen for k in linked):
                    out.append((table, " and ".join(words(a) for a in attrs)))
        return list(dict.fromkeys(out))

    def _objective_read(
        self, messages: Sequence[Mapping[str, Any]], schemas: Mapping[str, Mapping[str, Any]]
    ) -> tuple[str, dict[str, Any], str] | None:
        """A listing the plan's objective still needs before it can be worked out ("the hourly rate
        of the employees"), each table read once; None when nothing is missing or no tool lists it."""
        summed = next((f for f in self._answer_fields(messages) if _SUMMED.match(f)), None)
        if summed is None:
            return None
        for table, what in self._unread(messages):
            if table in self._tried:
                continue
            self._tried.add(table)
            for name, schema in sorted(schemas.items()):
                reads = self.read_tools.get(name)
                if reads is None or (reads != table and not (not reads and name == f"list_{table}")):
                    continue
                props = dict(schema.get("properties") or {})
                if set(schema.get("required") or []) - {"limit"}:
                    continue
                limit = props.get("limit", {})
                rows = len(self.task.init_config.get(table) or {})
                args = (
                    {"limit": min(int(limit.get("maximum", rows)), max(rows, 1))}
                    if isinstance(limit, Mapping) and "limit" in props
                    else {}
                )
                return (
                    name,
                    args,
                    f"To work out the {words(summed)} I need the {what} of the {words(table)}, so I call `{name}`.",
                )
        return None

    def _plan_worked(
        self, field: str, answer: Mapping[str, Any], messages: Sequence[Mapping[str, Any]]
    ) -> tuple[list[float], list[str]] | None:
        """Each chosen record's share of a plan's objective with its working ("SHF-002: 14 - 8 = 6,
        24 × 6 = 144"), in the order the plan lists them; None where something was never read."""
        plan = answer.get("plan")
        terms = self._objective()
        if not terms or not isinstance(plan, Mapping):
            return None
        seen = self._seen_records(messages)
        values: list[float] = []
        lines: list[str] = []
        for chosen, keys in plan.items():
            factors = terms.get(str(chosen)) or []
            for key in keys if isinstance(keys, list) else []:
                record = seen.get(str(key))
                if record is None or not factors:
                    return None
                parts: list[tuple[str, float]] = []  # (what it is, figure); a span is said as worked out
                steps: list[str] = []
                for table, *attrs in factors:
                    source = record if table == chosen else seen.get(self._linked(record, table) or "")
                    read = [source.get(a) if source is not None else None for a in attrs]
                    got = [float(v) for v in read if isinstance(v, (int, float)) and not isinstance(v, bool)]
                    if len(got) != len(attrs):
                        return None
                    if len(got) == 2:
                        span = round(got[1] - got[0], 6)
                        steps.append(
                            f"{words(attrs[1])} {written_number(got[1])} - {words(attrs[0])} "
                            f"{written_number(got[0])} = {written_number(span)}"
                        )
                        parts.append(("", span))
                    else:
                        parts.append((words(attrs[0]), got[0]))
                said, share = parts[0]
                for what, p in parts[1:]:
                    after = round(share * p, 6)
                    left = f"{said} {written_number(share)}".strip()
                    steps.append(
                        f"{left} × {f'{what} {written_number(p)}'.strip()} = {written_number(after)}"
                    )
                    said, share = "", after
                values.append(share)
                lines.append(
                    f"{key}: " + (", ".join(steps) or f"{words(factors[0][-1])} {written_number(share)}")
                )
        # shares that are one figure each are plain to see in the sum; the lines say the products
        return values, lines if len(lines) > sum(1 for line in lines if " = " not in line) else []

    # -------------------------------------------------------------- answer

    def _answer_fields(self, messages: Sequence[Mapping[str, Any]]) -> list[str]:
        if self.guidance is not None and self.guidance.answer_fields:
            return list(self.guidance.answer_fields)
        asked = " ".join(str(m.get("content") or "") for m in messages if m.get("role") == "user").casefold()
        return [
            f
            for f in sorted(self.task.expected_answer)
            if words(f).casefold() in asked or f.casefold() in asked
        ]

    def _observed_value(self, field: str, messages: Sequence[Mapping[str, Any]]) -> Any:
        for data in reversed(_tool_data(messages)):
            found = _find_key(data, field)
            if found is not None:
                return found
        return None

    def _final(self, messages: Sequence[Mapping[str, Any]], evidence: Evidence) -> str:
        answer: dict[str, Any] = {}
        derivable: dict[str, Any] = {}
        # a total over the records an answer lists is worked out from them below, never read off
        # whatever record happens to have a field of that name
        over_records = bool({"changed", "plan"} & set(self.task.expected_answer))
        given: dict[str, Any] = {}  # a guided total over those records, said bare only if no working shows it
        for field in self._answer_fields(messages):
            target = self.guidance.target_answer.get(field) if self.guidance is not None else None
            if over_records and _SUMMED.match(field):
                if target is not None and evidence.supports(target):
                    given[field] = target
                continue
            if target is not None and (not self._needs(target) or evidence.supports(target)):
                answer[field] = target
                continue
            if target is None and field in self._oracle_answer:
                target = self._oracle_answer[field]
                if evidence.supports(target):
                    answer[field] = target
                    continue
            observed = self._observed_value(field, messages)
            if observed is not None:
                answer[field] = observed
            elif isinstance(target, (int, float)) and not isinstance(target, bool):
                derivable[field] = target
        # a total or difference of values already reported is derived from them, not invented
        stated = [
            float(v) for v in answer.values() if isinstance(v, (int, float)) and not isinstance(v, bool)
        ]
        for field, target in derivable.items():
            if combines(float(target), stated):
                answer[field] = target
        # a total or an average over the records the answer lists is worked out, and the working shown
        work: list[str] = []
        for field in sorted(self._answer_fields(messages), key=lambda f: f.startswith("average")):
            if field not in answer and _SUMMED.match(field):
                worked = self._worked(field, answer, messages)
                if worked is not None:
                    answer[field], line = worked
                    work.append(line)
                elif field in given:
                    answer[field] = given[field]
        done = []
        for m in messages:
            if m.get("role") == "tool":
                try:
                    ok = bool(json.loads(str(m.get("content") or "{}")).get("ok"))
                except json.JSONDecodeError:
                    ok = False
                done.append(ok)
        summary = closing(done, self.task.id)
        return "\n".join([summary, *work, *([answer_block(answer)] if answer else [])])

    def _summed_attr(self, field: str, record: Mapping[str, Any]) -> str | None:
        """The attribute of `record` a total or average adds up: the one the task names
        (`total_attr`), else the one the field is named after (`total_cost`: `cost`, or `unit_cost`)."""
        named = (
            self.task.internal_spec.get("total_attr")
            if isinstance(self.task.internal_spec, Mapping)
            else None
        )
        stem = _SUMMED.sub("", field)
        options = [named] if isinstance(named, str) and named else []
        if stem:
            options += [
                stem,
                *sorted(a for a in record if a.endswith(f"_{stem}") or a.startswith(f"{stem}_")),
            ]
        return next(
            (
                a
                for a in options
                if isinstance(record.get(a), (int, float)) and not isinstance(record.get(a), bool)
            ),
            None,
        )

    def _considered(self, messages: Sequence[Mapping[str, Any]]) -> list[str]:
        """The keys of the records the request's rule picks out of the run's listing ("every coin
        top-up whose method is google play"), the ones an aggregate over what was looked at adds up."""
        spec = self.task.internal_spec if isinstance(self.task.internal_spec, Mapping) else {}
        rule, key, total = spec.get("predicate"), spec.get("key"), spec.get("total_attr")
        if not isinstance(rule, Mapping) or not isinstance(key, str):
            return []
        for data in _tool_data(messages):
            items = data.get("items") if isinstance(data, Mapping) else None
            if isinstance(items, list) and any(isinstance(i, Mapping) and key in i for i in items):
                return [
                    str(i[key])
                    for i in items
                    if isinstance(i, Mapping)
                    and _holds(i.get(str(rule.get("attr"))), str(rule.get("op")), rule.get("value"))
                    and (not isinstance(total, str) or i.get(total) is not None)
                ]
        return []

    def _worked(
        self, field: str, answer: Mapping[str, Any], messages: Sequence[Mapping[str, Any]]
    ) -> tuple[float, str] | None:
        """(value, the working as a sentence) of a total or an average over the records the answer
        lists (the records it changed, the plan it chose), each as the run first saw it, before
        changing it: "Total cost: 120 + 200 = 320, 320 + 214 = 534." None where a record was never seen."""
        values: list[float] = []
        shares: list[str] = []
        planned = self._plan_worked(field, answer, messages) if not field.startswith("average") else None
        if planned is not None:
            values, shares = planned
        else:
            keys = (
                self._considered(messages)
                if "considered" in self.task.expected_answer
                else _listed_keys(answer)
            )
            # each record as the run first saw it, before it changed it
            first: dict[str, Mapping[str, Any]] = {}
            for data in _tool_data(messages):
                for key, record in records_in(data, self._index):
                    if self._summed_attr(field, record) is not None:  # never a record that only points at it
                        first.setdefault(key, record)
            for key in keys:
                seen = first.get(key)
                attr = self._summed_attr(field, seen) if seen is not None else None
                if seen is None or attr is None:
                    return None
                values.append(float(seen[attr]))
        if not values:
            return None
        steps, total = [], values[0]
        for v in values[1:]:
            after = round(total + v, 6)
            steps.append(f"{written_number(total)} + {written_number(v)} = {written_number(after)}")
            total = after
        label = words(field)
        if field.startswith("average"):
            if answer.get(field.replace("average", "total", 1)) == total:
                steps = []  # the total is worked out already: the average is one step from it
            mean = round(total / len(values), 6)
            steps.append(f"{written_number(total)} / {len(values)} = {written_number(mean)}")
            total = mean
        said = ", ".join(steps) if steps else written_number(total)
        value = int(total) if float(total).is_integer() else round(total, 6)
        meant = self.task.expected_answer.get(field)
        if isinstance(meant, (int, float)) and abs(float(meant) - value) > max(0.005, 1e-6 * abs(value)):
            return None  # the objective is none the records' shares add up to
        sentence = f"{label[:1].upper() + label[1:]}: {said}."
        return value, "\n".join([*(s + "." for s in shares), sentence])


_SUMMED = re.compile(r"^(total|average)(_|$)")


_COMPARE = {"==": operator.eq, ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}


def _holds(value: Any, op: str, wanted: Any) -> bool:
    """`value op wanted` as a request's rule means it; a missing value meets no rule."""
    compare = _COMPARE.get(op)
    try:
        return value is not None and compare is not None and bool(compare(value, wanted))
    except TypeError:
        return False


def _tool_data(messages: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The `data` of every tool result, in the order the run saw them."""
    out = []
    for m in messages:
        if m.get("role") == "tool":
            try:
                out.append(json.loads(str(m.get("content") or "{}")).get("data"))
            except (json.JSONDecodeError, AttributeError):
                continue
    return out


def _listed_keys(answer: Mapping[str, Any]) -> list[str]:
    """The record keys an answer lists: the records changed, or every list of a chosen plan."""
    listed = answer.get("changed")
    if not isinstance(listed, list):
        plan = answer.get("plan")
        listed = (
            [k for v in plan.values() if isinstance(v, list) for k in v] if isinstance(plan, Mapping) else []
        )
    return [str(k) for k in listed if isinstance(k, (str, int)) and not isinstance(k, bool)]


def _find_key(data: Any, field: str) -> Any:
    if isinstance(data, Mapping):
        if field in data and not isinstance(data[field], (dict, list)):
            return data[field]
        for v in data.values():
            found = _find_key(v, field)
            if found is not None:
                return found
    elif isinstance(data, list):
        for v in data:
            found = _find_key(v, field)
            if found is not None:
                return found
    return None


class NoisyTeacher(OfflineTeacher):
    """The offline teacher without guidance and with seeded slips: it sometimes skips a planned step
    or swaps an id argument for another id it has seen. A cheap policy whose pass@K separates easy
    tasks (short plans, few ids) from hard ones; used offline for RL difficulty estimation."""

    def __init__(
        self,
        task: Task,
        plan: Sequence[ReferenceCall],
        *,
        noise: float = 0.25,
        seed: int = 0,
        read_tools: Mapping[str, str] | Sequence[str] = (),
    ) -> None:
        super().__init__(task, plan, None, read_tools=read_tools)
        self.noise = noise
        self.rng = random.Random(seed)
        self.name = f"noisy-teacher@{noise:g}"
        self._perturbed: set[int] = set()

    def act(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        step = self._next
        if step < len(self.plan) and step not in self._perturbed:
            self._perturbed.add(step)
            if self.rng.random() < self.noise:
                call = self.plan[step]
                if self.rng.random() < 0.5:
                    self.plan.pop(step)  # a forgotten step
                else:
                    seen = sorted(
                        {m for msg in messages for m in ID_PATTERN.findall(str(msg.get("content") or ""))}
                    )
                    ids = [
                        p
                        for p, v in sorted(call.args.items())
                        if isinstance(v, str) and ID_PATTERN.fullmatch(v)
                    ]
                    if ids:
                        param = self.rng.choice(ids)
                        prefix = call.args[param].rsplit("-", 1)[0]
                        others = [s for s in seen if s.startswith(prefix + "-") and s != call.args[param]]
                        if others:
                            args = {**call.args, param: self.rng.choice(others)}
                            self.plan[step] = call.model_copy(update={"args": args})
        return super().act(messages, tools)


def read_tool_tables(bundle: Bundle) -> dict[str, str]:
    """Read tool -> the table it reads, from the bundle's spec when it has one (names alone can
    mislead: a seed's `get_budget_status` may list vendor orders)."""
    spec = bundle.spec or {}
    tables = {
        str(e.get("name")): str(e.get("table")) for e in spec.get("entities", []) if isinstance(e, Mapping)
    }
    out = {name: "" for name in bundle.read_tools}
    for tool in spec.get("tools", []):
        if isinstance(tool, Mapping) and tool.get("name") in out:
            out[str(tool["name"])] = tables.get(str(tool.get("entity")), "")
    return out


TeacherFactory = Callable[[Task, Sequence[ReferenceCall], Guidance, Bundle], Agent]
PolicyFactory = Callable[[Task, Sequence[ReferenceCall], Bundle, int], Agent]


def offline_teacher(task: Task, plan: Sequence[ReferenceCall], guidance: Guidance, bundle: Bundle) -> Agent:
    return OfflineTeacher(task, plan, guidance, read_tools=read_tool_tables(bundle))


def llm_teacher(llm: LLM) -> TeacherFactory:
    def make(task: Task, plan: Sequence[ReferenceCall], guidance: Guidance, bundle: Bundle) -> Agent:
        return LLMAgent(llm, guidance_text=guidance.text)

    return make


def noisy_policy(noise: float = 0.25) -> PolicyFactory:
    """Factory of the offline pass@K policy: rollout `attempt` gets its own seed."""

    def make(task: Task, plan: Sequence[ReferenceCall], bundle: Bundle, attempt: int) -> Agent:
        seed = attempt * 7919 + int(task.id[:8], 16) % 7919
        return NoisyTeacher(task, plan, noise=noise, seed=seed, read_tools=read_tool_tables(bundle))

    return make
