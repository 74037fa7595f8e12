"""What the model adds to an environment in llm mode (paper §4.2.2-4.2.4), each piece checked by code
before anything of it is kept.

- `augment_state_space`: attributes that real records of an entity carry and neither the seed nor the
  knowledge base gave it (knowledge augmentation, §4.2.2).
- `propose_operations` / `refine_operations`: operations a service of the domain offers. They are
  compiled like the knowledge base's and judged by the toolset's own refinement (grounding,
  redundancy, the tool bound); what it refuses goes back to the model once, with its reasons, for
  replacements (critique and regeneration, §4.2.3).
- `realistic_records`: the descriptive values of a few s0 records, rewritten as the domain's data
  reads. A value must fit its attribute, must not be a placeholder, and the state must still hold
  every invariant, else the generated values stand (§4.2.4).

What a seed declares is never touched: the model adds attributes and tools beside the seed's, and
rewrites only values the platform made. A bad, refused or missing answer costs only what it was asked
for; every answer is counted on the model's ledger as kept or refused, with the offline result
standing in (`fallback`) where nothing of it was kept.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema
from pydantic import BaseModel, ConfigDict

from agentomnia.envs import naming
from agentomnia.envs.naming import verb_of
from agentomnia.envs.spec import EntitySpec, EnvSpec, spec_problems
from agentomnia.llm import LLM, LLMError
from agentomnia.llm.ledger import fallback, verdict
from agentomnia.llm.protocol import list_answer

# the verbs an operation's name is compiled from (its op and, for a lifecycle verb, its target)
COMPILED_VERBS = frozenset(
    {*naming.TRANSITION_VERBS, *naming.CREATE_VERBS, *naming.UPDATE_VERBS, *naming.ASSIGN_VERBS,
     *naming.DELETE_VERBS, *naming.READ_VERBS, *naming.LIST_VERBS, *naming.AGG_VERBS}
)  # fmt: skip
ATTRIBUTE_PURPOSE = "state_attribute"
OPERATION_PURPOSE = "tool_proposal"
REFINEMENT_PURPOSE = "tool_refinement"  # replacements asked with the validator's critique (§4.2.3)
RECORD_PURPOSE = "s0_record"

_NAME = re.compile(r"^[a-z][a-z0-9_]{1,39}$")
_TOOL = re.compile(r"^[a-z][a-z0-9_]{2,63}$")
# what the model may give an entity: plain values only; references, lifecycles and lists are the
# state space's to decide, since rules, tools and tasks are built on them
ATTRIBUTE_TYPES = ("str", "text", "int", "float", "bool", "date", "money")
_RESERVED = re.compile(r"(^|_)(id|key|status|state|stage)$")


def _ask(
    llm: LLM, prompt: str, schema: Mapping[str, Any], purpose: str, *, history: Sequence[Any] = ()
) -> Any:
    """The model's JSON answer, or None where it gave no usable one (counted on its ledger)."""
    try:
        return llm.complete(
            [*history, {"role": "user", "content": prompt}], schema=schema, schema_name=purpose
        ).data
    except LLMError:
        return None


def _entities_text(spec: EnvSpec) -> str:
    return "\n".join(
        f"- {e.name}: "
        + ", ".join(f"{a.name} ({a.ref if a.type == 'ref' else a.type})" for a in e.attributes)
        for e in spec.entities
    )


# -- state space -------------------------------------------------------------------------------------


def _attribute_schema(spec: EnvSpec, limit: int) -> dict[str, Any]:
    return list_answer(
        "attributes",
        {
            "entity": {"enum": [e.name for e in spec.entities]},
            "name": {"type": "string"},
            "type": {"enum": list(ATTRIBUTE_TYPES)},
            "description": {"type": "string"},
        },
        max_items=limit,
    )


def _attribute_refusal(
    e: EntitySpec | None, item: Mapping[str, Any], taken: set[tuple[str, str]]
) -> str | None:
    """Why a proposed attribute cannot join its entity, or None where it can."""
    name = str(item.get("name", ""))
    if e is None:
        return f"no entity {item.get('entity')!r} in this environment"
    if not _NAME.match(name):
        return f"{name!r} is not a snake_case name of 2-40 characters"
    if e.attribute(name) is not None or (e.name, name) in taken:
        return f"{e.name} already has {name}"
    if _RESERVED.search(name) or name.endswith("_ids"):
        return f"{name!r} reads as a key, a reference or a lifecycle, which the state space decides"
    if item.get("type") not in ATTRIBUTE_TYPES:
        return f"type {item.get('type')!r} is not one of {', '.join(ATTRIBUTE_TYPES)}"
    return None


def augment_state_space(
    llm: LLM | None, spec: EnvSpec, *, limit: int = 6, per_entity: int = 2
) -> tuple[EnvSpec, list[str], dict[str, str]]:
    """`spec` with the attributes the model adds (nullable, `source="model"`), the ones added
    ("entity.name") and the ones refused with why. Without a model, or without a usable answer,
    the spec is returned as it was."""
    from agentomnia.envs.spec import AttributeSpec

    if llm is None or not spec.entities:
        return spec, [], {}
    prompt = (
        f"An environment simulates this service: {spec.description}\n"
        f"Its records and their attributes:\n{_entities_text(spec)}\n\n"
        f"Name up to {limit} attributes that real records of these entities carry and that are missing "
        "above: facts a person working with this service would look up or change. Give each its entity, a "
        "snake_case name, a type (str, text, int, float, bool, date or money) and a one-line description. "
        "No ids, references to other records or status fields."
    )
    data = _ask(llm, prompt, _attribute_schema(spec, limit), ATTRIBUTE_PURPOSE)
    if not isinstance(data, Mapping):
        fallback(llm, ATTRIBUTE_PURPOSE)
        return spec, [], {}
    by_name = {e.name: e for e in spec.entities}
    added: dict[str, list[AttributeSpec]] = {}
    refused: dict[str, str] = {}
    taken: set[tuple[str, str]] = set()
    for item in data.get("attributes") or []:
        if not isinstance(item, Mapping):
            continue
        e = by_name.get(str(item.get("entity", "")))
        label = f"{item.get('entity')}.{item.get('name')}"
        why = _attribute_refusal(e, item, taken)
        if why is None and e is not None and len(added.get(e.name, [])) >= per_entity:
            why = f"{e.name} already takes {per_entity} attributes from the model"
        if why is None and sum(map(len, added.values())) >= limit:
            why = f"the environment already takes {limit} attributes from the model"
        if why is not None or e is None:
            refused[label] = why or "no entity"
            continue
        taken.add((e.name, str(item["name"])))
        added.setdefault(e.name, []).append(
            AttributeSpec(
                name=str(item["name"]), type=item["type"], nullable=True, source="model",
                description=" ".join(str(item.get("description", "")).split())[:200],
            )
        )  # fmt: skip
    grown = spec
    if added:
        entities = tuple(
            e.model_copy(update={"attributes": (*e.attributes, *added.get(e.name, ()))})
            for e in spec.entities
        )
        grown = spec.model_copy(update={"entities": entities, "proposer": "llm"})
        if problems := spec_problems(grown):  # never expected: the checks above keep it consistent
            refused.update(
                {f"{n}.{a.name}": "; ".join(problems[:2]) for n, attrs in added.items() for a in attrs}
            )
            grown, added = spec, {}
    kept = [f"{n}.{a.name}" for n, attrs in added.items() for a in attrs]
    verdict(llm, ATTRIBUTE_PURPOSE, True, len(kept))
    verdict(llm, ATTRIBUTE_PURPOSE, False, len(refused))
    if not kept:
        fallback(llm, ATTRIBUTE_PURPOSE)
    return grown, kept, refused


# -- operations --------------------------------------------------------------------------------------


class ProposedOperation(BaseModel):
    """An operation the model proposes for an environment, before the toolset's refinement judges it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    entity: str
    kind: str
    description: str


def _operation_schema(spec: EnvSpec, limit: int) -> dict[str, Any]:
    return list_answer(
        "operations",
        {
            "name": {"type": "string"},
            "entity": {"enum": [e.name for e in spec.entities]},
            "kind": {"enum": ["read", "write"]},
            "description": {"type": "string"},
        },
        max_items=limit,
    )


def _operations(data: Any, spec: EnvSpec) -> tuple[list[ProposedOperation], dict[str, str]]:
    """The well-formed proposals of an answer, and the ones refused before compiling, with why."""
    entities = {e.name for e in spec.entities}
    ok: list[ProposedOperation] = []
    refused: dict[str, str] = {}
    for item in (data.get("operations") or []) if isinstance(data, Mapping) else []:
        if not isinstance(item, Mapping):
            continue
        name, description = str(item.get("name", "")), " ".join(str(item.get("description", "")).split())
        if not _TOOL.match(name):
            refused[name or "(unnamed)"] = "not a snake_case tool name of 3-64 characters"
        elif verb_of(name) not in COMPILED_VERBS:
            refused[name] = (
                f"{verb_of(name)!r} is not a verb an operation is compiled from (e.g. approve, cancel, create, "
                "update, assign, delete, get, list, count)"
            )
        elif item.get("entity") not in entities:
            refused[name] = f"no entity {item.get('entity')!r} in this environment"
        elif item.get("kind") not in ("read", "write"):
            refused[name] = f"kind {item.get('kind')!r} is neither read nor write"
        elif len(description) < 12:
            refused[name] = "no description of what it does"
        elif name in {p.name for p in ok}:
            refused[name] = "proposed twice"
        else:
            ok.append(ProposedOperation(name=name, entity=str(item["entity"]), kind=str(item["kind"]),
                                        description=description[:300]))  # fmt: skip
    return ok, refused


def _operation_prompt(spec: EnvSpec, tools: Sequence[str], limit: int) -> str:
    return (
        f"An environment simulates this service: {spec.description}\n"
        f"Its records and their attributes:\n{_entities_text(spec)}\n"
        f"Tools it already has: {', '.join(tools) or 'none'}.\n\n"
        f"Propose up to {limit} further operations that people using this service perform, that the tools "
        "above do not already do. Give each a snake_case name starting with a verb, the entity it acts on, "
        "whether it reads or writes, and one sentence saying what it does."
    )


def propose_operations(
    llm: LLM | None, spec: EnvSpec, tools: Sequence[str], *, limit: int = 4
) -> tuple[list[ProposedOperation], dict[str, str], list[dict[str, str]]]:
    """The model's operations for `spec` (whose toolset already has `tools`), the ones refused as
    malformed, and the conversation so far (for `refine_operations`)."""
    if llm is None or not spec.entities:
        return [], {}, []
    prompt = _operation_prompt(spec, tools, limit)
    data = _ask(llm, prompt, _operation_schema(spec, limit), OPERATION_PURPOSE)
    if data is None:
        fallback(llm, OPERATION_PURPOSE)
        return [], {}, []
    ok, refused = _operations(data, spec)
    history = [{"role": "user", "content": prompt}, {"role": "assistant", "content": json.dumps(data)}]
    return ok, refused, history


def refine_operations(
    llm: LLM | None,
    spec: EnvSpec,
    refused: Mapping[str, str],
    history: Sequence[dict[str, str]],
    *,
    limit: int = 4,
) -> tuple[list[ProposedOperation], dict[str, str]]:
    """Replacements for the proposals the toolset's refinement refused, asked with its reasons."""
    if llm is None or not refused or not history:
        return [], {}
    critique = (
        "The toolset's validator refused these:\n"
        + "\n".join(f"- {name}: {why}" for name, why in refused.items())
        + f"\n\nPropose up to {limit} replacements that avoid these problems, in the same form."
    )
    data = _ask(llm, critique, _operation_schema(spec, limit), REFINEMENT_PURPOSE, history=history)
    if data is None:
        return [], {}
    return _operations(data, spec)


def judge_operations(
    llm: LLM | None, proposed: Sequence[ProposedOperation], kept: set[str], refused: Mapping[str, str]
) -> None:
    """Count the refinement's verdict on the model's operations: kept in the toolset, or refused."""
    accepted = sum(1 for p in proposed if p.name in kept)
    verdict(llm, OPERATION_PURPOSE, True, accepted)
    verdict(llm, OPERATION_PURPOSE, False, len(refused))
    if (proposed or refused) and not accepted:
        fallback(llm, OPERATION_PURPOSE)


# -- s0 records --------------------------------------------------------------------------------------


def _text_attributes(e: EntitySpec) -> list[str]:
    """The attributes of `e` whose values the model may rewrite: free text the platform made, not a
    key, reference, code, contact or value the seed constrains beyond a plain string."""
    from agentomnia.realism import is_free_text_field

    out = []
    for a in e.attributes:
        declared = a.declared or {}
        if (
            a.type in ("str", "text")
            and a.name != e.key
            and is_free_text_field(a.name)
            and not set(declared) - {"type", "description", "maxLength", "minLength", "nullable", "title"}
        ):
            out.append(a.name)
    return out


def _record_schema(keys: Sequence[str], fields: Sequence[str]) -> dict[str, Any]:
    values = {
        "type": "object",
        "additionalProperties": False,
        "properties": {f: {"type": "string"} for f in fields},
    }
    return list_answer("records", {"id": {"enum": list(keys)}, "values": values}, max_items=len(keys))


def _value_refusal(e: EntitySpec, field: str, value: Any, current: Any) -> str | None:
    from agentomnia.realism import is_placeholder

    attr = e.attribute(field)
    if attr is None:
        return "no such attribute"
    if not isinstance(value, str) or not value.strip():
        return "empty"
    text = value.strip()
    if len(text) > 240:
        return f"{len(text)} characters, longer than a record's field reads (240)"
    if text == current:
        return "unchanged"
    if is_placeholder(text, e.name, field) or text.lower() in {
        field.replace("_", " "),
        e.name.replace("_", " "),
    }:
        return "a placeholder: names its own entity or field, or is filler"
    if "{" in text or "}" in text or "<" in text:
        return "holds template or markup characters"
    if attr.declared is not None:
        try:
            jsonschema.validate(text, attr.declared)
        except (jsonschema.ValidationError, jsonschema.SchemaError) as exc:
            return f"breaks the seed's schema: {exc.message}"
    return None


def rewritten_entities(spec: EnvSpec, s0: Mapping[str, Any], n: int) -> list[EntitySpec]:
    """The `n` entities whose records the model is asked to rewrite: those with the most free text."""
    return sorted(
        (e for e in spec.entities if _text_attributes(e) and s0.get(e.table)),
        key=lambda e: -len(_text_attributes(e)),
    )[:n]


def realistic_records(
    llm: LLM | None,
    spec: EnvSpec,
    s0: dict[str, Any],
    *,
    entities: int = 3,
    records: int = 3,
) -> tuple[dict[str, Any], list[str]]:
    """`s0` with the descriptive values of up to `records` records of up to `entities` entities as the
    model writes them, and one line per value kept or refused. An entity whose rewritten records
    break an invariant keeps its generated ones."""
    from agentomnia.envs.state import state_violations

    if llm is None:
        return s0, []
    notes: list[str] = []
    state = s0
    for e in rewritten_entities(spec, s0, entities):
        fields = _text_attributes(e)[:4]
        table: Mapping[str, Any] = state[e.table]
        keys = list(table)[:records]
        shown = [{"id": k, **{f: table[k].get(f) for f in fields}} for k in keys]
        prompt = (
            f"An environment simulates this service: {spec.description}\n"
            f"These are {e.name.replace('_', ' ')} records ({e.description or e.name}), with the fields "
            f"{', '.join(fields)}:\n{json.dumps(shown, ensure_ascii=False)}\n\n"
            "Rewrite those field values so each reads like the real data of this service: specific, "
            "plausible, consistent with the record's other fields. Keep each record's id."
        )
        data = _ask(llm, prompt, _record_schema(keys, fields), RECORD_PURPOSE)
        if not isinstance(data, Mapping):
            fallback(llm, RECORD_PURPOSE)
            continue
        trial = copy.deepcopy(state)
        kept: list[str] = []
        refused: list[str] = []
        for item in data.get("records") or []:
            if not isinstance(item, Mapping) or str(item.get("id")) not in keys:
                continue
            record = trial[e.table][str(item["id"])]
            values = item.get("values")
            for field, value in values.items() if isinstance(values, Mapping) else ():
                why = (
                    _value_refusal(e, field, value, record.get(field)) if field in fields else "not asked for"
                )
                if why is None:
                    record[field] = value.strip()
                    kept.append(f"{e.name} {item['id']}.{field}")
                else:
                    refused.append(f"{e.name} {item['id']}.{field}: {why}")
        if kept and (broken := state_violations(spec, trial)):
            refused += [f"{k}: the state then breaks {broken[0]}" for k in kept]
            kept = []
        if kept:
            state = trial
        verdict(llm, RECORD_PURPOSE, True, len(kept))
        verdict(llm, RECORD_PURPOSE, False, len(refused))
        if not kept:
            fallback(llm, RECORD_PURPOSE)
        notes += [f"model wrote {k}" for k in kept] + [f"model's value refused, {r}" for r in refused]
    return state, notes
