"""PRD-guided synthesis planning: active PRDs -> one round's directives -> the seeds that round starts from.

A self-evolution round runs through the same seeds -> environments -> tasks assets as the base
round; what changes is its input. `directives_for` merges the active PRDs into one
`SynthesisDirectives` (targets, variations, and per-L1 weights proportional to the weighted failed
benchmark items behind each L1) and apportions the round's seed budget over the L1s by those
weights, so the round's seeds are distributed over L1 like the failures. `seeds_for` then writes
the round's seeds: query seeds composed offline from the domain knowledge base for every targeted
L2 domain (user requests that exercise the targeted capabilities and variations), plus
shipped-corpus seeds that already sit in a targeted domain.
Every seed names the PRDs it serves and its target taxonomy id in its metadata, so lineage can
trace a synthesized task back to the failures that asked for it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from fractions import Fraction

from pydantic import BaseModel, ConfigDict, Field

from agentomnia.directives import SynthesisDirectives
from agentomnia.evolution.prd import PART_II, PRD, PRIORITIES
from agentomnia.evolution.revise import ask_validated, attempts_summary
from agentomnia.llm import LLM
from agentomnia.records import content_hash
from agentomnia.seeds.inference import DomainMatcher, seed_text, singular, words
from agentomnia.seeds.models import Seed
from agentomnia.seeds.parsers import QueryColumns, query_seed
from agentomnia.taxonomy import Domain, DomainKnowledge, Taxonomy, taxonomy_index
from agentomnia.taxonomy.knowledge import Entity, Operation

DEFAULT_MAX_DOMAINS = 8
DEFAULT_SEEDS_PER_DOMAIN = 2
MAX_CAPABILITY_CLAUSES = 3


def _ordered(prds: Sequence[PRD]) -> list[PRD]:
    """Highest priority first; within a priority, the larger score, then the id (deterministic)."""
    return sorted(prds, key=lambda p: (PRIORITIES.index(p.priority), -(p.priority_score or 0.0), p.prd_id))


def _merge(values: Sequence[Sequence[str]]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v for group in values for v in group))


def apportion(
    weights: Mapping[str, float], seats: int, *, caps: Mapping[str, int] | None = None
) -> dict[str, int]:
    """Split `seats` over the keys of `weights` in proportion to the weights (largest remainder).

    Each key first gets the whole part of its exact quota `seats x weight / total`; the seats left
    go one each to the largest fractional parts, ties to the larger weight, then to the earlier key.
    So every key gets its quota rounded down or up, never further from it (Hamilton's method), and
    the result is deterministic. Quotas are computed exactly (as fractions), so a tie is a tie.
    A key may be capped (`caps`): it then gets at most its cap and the seats it cannot take are
    apportioned over the other keys the same way. Keys with no weight get nothing; fewer seats are
    handed out only when the caps leave no room for them.
    """
    if seats < 0:
        raise ValueError(f"seats must not be negative, got {seats}")
    limits = caps or {}
    out = dict.fromkeys(weights, 0)
    open_keys = [k for k in weights if weights[k] > 0]
    left = seats
    while True:
        share = _largest_remainder({k: weights[k] for k in open_keys}, left)
        full = [k for k in open_keys if k in limits and share[k] > limits[k]]
        if not full:
            return out | share
        for key in full:
            out[key] = limits[key]
            left -= limits[key]
            open_keys.remove(key)


def _largest_remainder(weights: Mapping[str, float], seats: int) -> dict[str, int]:
    total = sum((Fraction(w) for w in weights.values()), Fraction(0))
    if not total:
        return dict.fromkeys(weights, 0)
    quotas = {k: Fraction(w) * seats / total for k, w in weights.items()}
    out = {k: math.floor(q) for k, q in quotas.items()}
    order = list(weights)
    by_remainder = sorted(order, key=lambda k: (-(quotas[k] - out[k]), -weights[k], order.index(k)))
    for key in by_remainder[: seats - sum(out.values())]:
        out[key] += 1
    return out


def _l1_weights(prds: Sequence[PRD]) -> dict[str, float]:
    """L1 key -> the failures behind it, summed over the PRDs (in PRD order, for deterministic ties).

    A PRD with `failure_counts` weighs only the L1s it counts (generated PRDs count weighted failed
    benchmark items); one without counts, such as a hand-written PRD, weighs each L1 it targets as
    one failed item.
    """
    weight: dict[str, float] = {}
    for prd in prds:
        counts = prd.failure_counts or dict.fromkeys(prd.target_l1, 1.0)
        for key in prd.target_l1:
            weight[key] = weight.get(key, 0.0) + counts.get(key, 0.0)
    return {k: w for k, w in weight.items() if w > 0}


def _l2_candidates(prds: Sequence[PRD], l1_keys: Collection[str], tax: Taxonomy) -> dict[str, list[int]]:
    """Per L1, its L2 domains in the order they take the L1's seeds.

    First the L2s its PRDs name (highest priority PRD first), then the L1's other L2s in taxonomy
    order, so a heavily failing L1 can spread its seeds over as many domains as it has.
    """
    candidates: dict[str, list[int]] = {k: [] for k in l1_keys}
    for prd in prds:
        for taxonomy_id in prd.target_l2:
            ids = candidates.get(tax.by_id(taxonomy_id).l1_key)
            if ids is not None and taxonomy_id not in ids:
                ids.append(taxonomy_id)
    for key, ids in candidates.items():
        split, name = key.split("/", 1)
        ids.extend(d.id for d in tax.l2s(split=split, l1=name) if d.id not in ids)
    return candidates


def directives_for(
    prds: Sequence[PRD],
    round_key: str,
    *,
    max_domains: int = DEFAULT_MAX_DOMAINS,
    seeds_per_domain: int = DEFAULT_SEEDS_PER_DOMAIN,
    statuses: Collection[str] = ("active",),
    taxonomy: Taxonomy | None = None,
    every_l1: bool = False,
) -> SynthesisDirectives:
    """Merge the PRDs whose status is in `statuses` into one round's directives.

    The round's seed budget is `max_domains` L2 domains of `seeds_per_domain` seeds each. The
    domains go to the L1s in proportion to the failures behind them (`apportion`, largest
    remainder), so the round's seeds over L1 match the failure distribution as closely as whole
    domains allow; an L1 takes at most as many domains as it has, the rest go elsewhere. With
    `every_l1`, the budget grows until the lightest L1's quota is one domain (to at most two domains
    per L1), and an L1 the PRDs weigh that is still left without a domain takes one, so no failing L1
    is left without data: a round confined to L1s holding a share s of the failures is at least
    -ln(s) from them. (Giving every L1 one domain first and only the rest by weight had left a
    default r1's heaviest L1s, with 4 and 3 of 35 failed items, one domain each beside 27 L1s with
    one failed item.) Within an
    L1 the domains its PRDs name come first, then its other domains (see `_l2_candidates`); each
    domain appears once. `weights` are the targeted L1s' shares of those failures. Priority orders
    the PRDs and breaks ties; it does not weigh the L1s, since the round should look like what failed.
    """
    if max_domains < 1:
        raise ValueError(f"max_domains must be at least 1, got {max_domains}")
    active = _ordered([p for p in prds if p.status in statuses])
    if not active:
        return SynthesisDirectives(round=round_key, seeds_per_domain=seeds_per_domain)
    tax = taxonomy or taxonomy_index()
    weight = _l1_weights(active)
    order = sorted(weight, key=lambda k: -weight[k])  # stable: ties keep PRD priority order
    candidates = _l2_candidates(active, order, tax)
    caps = {k: len(candidates[k]) for k in order}
    budget = max_domains
    if every_l1:  # enough domains for the lightest L1's quota to be one (at most two per L1)
        lightest = min(weight.values())
        budget = max(budget, min(2 * len(order), math.ceil(sum(weight.values()) / lightest - 1e-9)))
    slots = apportion({k: weight[k] for k in order}, budget, caps=caps)
    if every_l1:  # and one domain for each L1 the budget still left without
        slots = {k: max(min(1, caps[k]), n) for k, n in slots.items()}
    kept = [k for k in order if slots[k] > 0]
    kept_weight = sum(weight[k] for k in kept)
    return SynthesisDirectives(
        round=round_key,
        prd_ids=tuple(p.prd_id for p in active),
        target_l1=tuple(kept),
        target_l2=tuple(i for k in kept for i in candidates[k][: slots[k]]),
        target_capabilities=_merge([p.capabilities for p in active]),
        target_atoms=_merge([p.atoms for p in active]),
        env_variations=_merge([p.env_variations for p in active]),
        task_variations=_merge([p.task_variations for p in active]),
        task_guidance=_merge([(p.task_guidance,) for p in active if p.task_guidance]),
        seeds_per_domain=seeds_per_domain,
        weights={k: round(weight[k] / kept_weight, 6) for k in kept},
    )


# -- composing query seeds from the knowledge base --------------------------------------------------


def _plural(noun: str) -> str:
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u"):
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def _phrase(name: str) -> str:
    return name.replace("_", " ")


def _clause(sentence: str) -> str:
    sentence = sentence.strip().rstrip(".")
    return sentence[:1].lower() + sentence[1:]


class _Scene:
    """The pieces of one domain a request is built from, chosen deterministically by index."""

    def __init__(self, domain: Domain, kb: DomainKnowledge, index: int) -> None:
        self.domain, self.kb, self.index = domain, kb, index
        self.workflow = kb.workflows[index % len(kb.workflows)] if kb.workflows else None
        writes = [o for o in kb.operations if o.kind == "write"] or list(kb.operations)
        # The write the workflow talks about, so the request's parts describe one piece of work;
        # without overlap, the index picks one.
        said = {singular(w) for w in words(self.workflow or "")}
        overlap = [len({singular(w) for w in words(f"{o.name} {o.entity}")} & said) for o in writes]
        best = max(overlap)
        fitting = [o for o, n in zip(writes, overlap, strict=True) if n == best] if best else writes
        self.write: Operation = fitting[index % len(fitting)]
        entity = kb.entity(self.write.entity)
        self.entity: Entity = entity if entity is not None else kb.entities[0]
        relations = [r for r in kb.relations if r.source == self.entity.name]
        self.related: str | None = relations[0].target if relations else None
        reads = [o for o in kb.operations if o.kind == "read"]
        preferred = [o for o in reads if o.entity in (self.related, self.entity.name)]
        pool = preferred or reads
        self.read: Operation | None = pool[index % len(pool)] if pool else None
        enums = [a for a in self.entity.attributes if a.type == "enum"]
        # A lifecycle field picks out a record the way a person would ("the booking that is still open").
        enums.sort(key=lambda a: a.name not in ("status", "state"))
        self.enum = enums[0] if enums else None
        numbers = [
            a
            for e in (self.entity, *kb.entities)
            for a in e.attributes
            if a.type in ("money", "int", "float")
        ]
        self.number = numbers[0].name if numbers else None
        rules = [r for r in kb.rules if r.entity == self.entity.name] or list(kb.rules)
        self.rule = rules[index % len(rules)] if rules else None
        digest = int(content_hash([domain.id, index, self.entity.name], 8), 16)
        initials = "".join(part[0] for part in self.entity.name.split("_")).upper()
        self.record_id = f"{initials}-{1000 + digest % 9000}"

    @property
    def noun(self) -> str:
        return _phrase(self.entity.name)

    def describe(self) -> str | None:
        """The record by one of its enum fields, as a person would pick it out ("that is currently booked")."""
        if self.enum is None:
            return None
        value = _phrase(self.enum_value() or "")
        if self.enum.name in ("status", "state"):
            return f"that is currently {value}"
        return f"whose {_phrase(self.enum.name)} is {value}"

    def enum_value(self, offset: int = 0) -> str | None:
        if self.enum is None:
            return None
        return self.enum.enum[(self.index + offset) % len(self.enum.enum)]


def _capability_clause(cap: str, s: _Scene) -> str | None:
    noun, plural = s.noun, _plural(s.noun)
    value, other = s.enum_value(), s.enum_value(1)
    attr = _phrase(s.enum.name) if s.enum is not None else None
    if cap == "task_understanding" and value:
        return f"Only {plural} whose {attr} is {_phrase(value)} count here; leave everything else as it is."
    if cap == "information_gathering":
        if s.related:
            return (
                f"Look up the {_phrase(s.related)} it is linked to first and go by what is recorded there, "
                "not by what you assume."
            )
        return f"Check the current {noun} record before changing anything."
    if cap == "planning_decision" and s.read is not None:
        branch = (
            f" If the {noun} turns out to be {_phrase(other)}, stop and tell me what you found."
            if other
            else ""
        )
        return f"First {_clause(s.read.description)}, then {_clause(s.write.description)}.{branch}"
    if cap == "state_management":
        return f"Change only what this needs and leave every other {noun} exactly as it is."
    if cap == "tool_use":
        # Named, not identified: the id must be looked up before the write tool accepts it.
        target = _phrase(s.related) if s.related else noun
        return f"I only know the {target} by its name, not by its id."
    if cap == "reliability_safety" and s.rule is not None:
        return f"{s.rule.text.rstrip('.')}. If that does not hold, do not force it; explain what blocks it."
    if cap == "data_analysis" and s.number:
        return f"Then tell me the total {_phrase(s.number)} across all {plural} involved."
    if cap == "code_programmatic":
        return f"Apply it to every matching {noun} in one pass and tell me how many changed."
    if cap == "office_document":
        return "Finish with a short written summary of the changes that I can forward to the team."
    if cap == "interactive_collaboration":
        return f"Check with me before you {_clause(s.write.description)}."
    return None


def _variation_clauses(s: _Scene, env: Sequence[str], task: Sequence[str]) -> list[str]:
    noun, plural = s.noun, _plural(s.noun)
    out = []
    if "dependency_depth" in task and s.related:
        out.append(f"That depends on the {_phrase(s.related)} it belongs to, so sort that record out first.")
    if "data_transformations" in task:
        out.append(f"Report the outcome as a share of all {plural}, in percent.")
    if "distractor_injection" in env:
        out.append(f"Several {plural} look alike, so make sure you have the right one.")
    if "unavailable_entities" in env:
        target = _phrase(s.related) if s.related else noun
        out.append(f"If the {target} you would pick is unavailable, choose another suitable one.")
    if "conflicting_states" in env and s.enum is not None:
        out.append(
            f"The records may disagree about the {_phrase(s.enum.name)}; trust the {noun} record itself."
        )
    return out


def compose_request(
    domain: Domain,
    kb: DomainKnowledge,
    index: int,
    *,
    capabilities: Sequence[str],
    env_variations: Sequence[str] = (),
    task_variations: Sequence[str] = (),
) -> str:
    """A user request in `domain` that exercises the capabilities and variations; `index` varies it."""
    s = _Scene(domain, kb, index)
    parts = []
    if s.workflow:
        parts.append(f"Please {_clause(s.workflow)}.")
    else:
        parts.append(f"Please {_clause(s.write.description)}.")
    description = s.describe() if "implicit_references" in task_variations else None
    if description is not None:
        parts.append(f"It is about the {s.noun} {description}; I don't have its id.")
    else:
        parts.append(f"It is about {s.noun} {s.record_id}.")
    caps = list(capabilities) or ["tool_use"]
    rotated = caps[index % len(caps) :] + caps[: index % len(caps)]
    clauses = [c for cap in rotated if (c := _capability_clause(cap, s))]
    parts += clauses[:MAX_CAPABILITY_CLAUSES]
    parts += _variation_clauses(s, env_variations, task_variations)
    return " ".join(dict.fromkeys(parts))


# -- the request in llm mode: the PRD's text conditions it -------------------------------------------

# The PRD text a model reads when it writes a PRD round's request: every prose field, Part I and II.
PRD_TEXT_FIELDS: tuple[str, ...] = ("title", "scenario", "requirements", "case_study", *PART_II)
MAX_REQUEST_WORDS = 120


class WrittenRequest(BaseModel):
    """What the model returns for one PRD seed: the request, in the user's own words."""

    model_config = ConfigDict(extra="forbid")

    request: str = Field(min_length=20, max_length=1500)


def prd_brief(prds: Sequence[PRD]) -> str:
    """The PRDs' prose, field by field, as the model reads it."""
    blocks = []
    for prd in prds:
        lines = [f"PRD {prd.prd_id} ({prd.priority})"]
        for name in PRD_TEXT_FIELDS:
            value = getattr(prd, name)
            if not value:
                continue
            text = "; ".join(value) if isinstance(value, tuple) else str(value)
            lines.append(f"- {name.replace('_', ' ')}: {text}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def request_messages(domain: Domain, draft: str, prds: Sequence[PRD]) -> list[dict[str, str]]:
    """The conversation asking a model to write one PRD seed's request (see `write_request`)."""
    system = (
        "You write the request a real user of a service would send to an AI assistant that can use the "
        "service's tools. Write it in the user's own voice: a goal, the details the user knows, what they "
        "want back. Never mention tools, APIs, ids the user would not know, PRDs, agents or benchmarks. "
        f'At most {MAX_REQUEST_WORDS} words. Answer with JSON: {{"request": "..."}}.'
    )
    user = (
        f"Domain: {domain.l2} ({domain.l1}).\n\n"
        "These product requirement documents say where the assistant fails and what new requests "
        f"should exercise:\n\n{prd_brief(prds)}\n\n"
        "A request composed from the domain's knowledge base for this purpose (keep its piece of work, its "
        "record and every condition it sets; make it read like a person wrote it, and let the "
        f"requirements above shape what the user asks for):\n{draft}"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


# Words that give a request away as machine-made: a user names none of them.
_GIVEAWAYS = re.compile(r"\b(prds?|benchmarks?|the agent|tool calls?|apis?|json)\b", re.IGNORECASE)


def _request_problems(value: WrittenRequest) -> list[str]:
    problems = []
    n = len(value.request.split())
    if n > MAX_REQUEST_WORDS:
        problems.append(f"request: {n} words; at most {MAX_REQUEST_WORDS}")
    leaked = sorted({m.group(0).lower() for m in _GIVEAWAYS.finditer(value.request)})
    if leaked:
        problems.append(f"request: says {leaked}; a user would not")
    return problems


def write_request(llm: LLM, domain: Domain, draft: str, prds: Sequence[PRD]) -> tuple[str, str]:
    """A PRD seed's request written by the model from the PRDs' text and the composed `draft`, and who
    wrote it: "model", or "rules (...)" with the reason when no valid answer came (the draft is used)."""
    value, attempts = ask_validated(
        llm, request_messages(domain, draft, prds), WrittenRequest,
        schema_name="prd_seed_request", check=_request_problems,
    )  # fmt: skip
    if value is None:
        return draft, f"rules ({attempts_summary('request', attempts)})"
    return value.request.strip(), "model"


# -- the round's seeds -------------------------------------------------------------------------------


def _serving(prds: Sequence[PRD], directives: SynthesisDirectives, domain: Domain) -> list[PRD]:
    chosen = [p for p in prds if p.prd_id in directives.prd_ids]
    return [p for p in chosen if domain.id in p.target_l2 or domain.l1_key in p.target_l1]


def seeds_for(
    directives: SynthesisDirectives,
    taxonomy: Taxonomy,
    knowledge: Mapping[int, DomainKnowledge],
    *,
    prds: Sequence[PRD] = (),
    corpus_seeds: Sequence[Seed] = (),
    matcher: DomainMatcher | None = None,
    llm: LLM | None = None,
) -> list[Seed]:
    """The seeds a PRD round starts from: composed query seeds, then matching corpus seeds.

    (a) For each targeted L2, `seeds_per_domain` query seeds composed from its knowledge entry.
    With `prds`, each domain's seeds use the capabilities and variations of the PRDs that target
    it and name exactly those PRDs; without, the directives' merged targets and all their PRD ids.
    (b) Corpus seeds whose domain is targeted, at most `seeds_per_domain` per L2: the domain is
    the seed's `metadata["taxonomy_id"]` when present, else the matcher's choice (seeds that have
    neither are skipped). Deterministic: the same inputs give the same seeds in the same order.
    With `llm` (llm mode), the model rewrites each composed request from the serving PRDs' text
    (`write_request`); `metadata["request_by"]` says whether the model's request or the rules' was used.
    """
    if directives.empty:
        return []
    out: list[Seed] = []
    columns = QueryColumns.default()
    for taxonomy_id in directives.target_l2:
        domain = taxonomy.by_id(taxonomy_id)
        kb = knowledge.get(taxonomy_id) or domain.knowledge
        if kb is None:
            continue  # nothing to compose from; corpus seeds may still cover the domain
        serving = _serving(prds, directives, domain)
        if serving:
            caps = _merge([p.capabilities for p in serving]) or directives.target_capabilities
            atoms = _merge([p.atoms for p in serving]) or directives.target_atoms
            env = _merge([p.env_variations for p in serving])
            task = _merge([p.task_variations for p in serving])
            prd_ids = tuple(p.prd_id for p in serving)
        else:
            caps, atoms = directives.target_capabilities, directives.target_atoms
            env, task, prd_ids = directives.env_variations, directives.task_variations, directives.prd_ids
        for index in range(directives.seeds_per_domain):
            name = f"prd-{directives.round}-{taxonomy_id}-{index + 1}"
            text = compose_request(
                domain, kb, index, capabilities=caps, env_variations=env, task_variations=task
            )
            by = "rules"
            if llm is not None:
                readers = serving or [p for p in prds if p.prd_id in prd_ids]
                text, by = write_request(llm, domain, text, readers) if readers else (text, by)
            row = {
                "id": name,
                "query": text,
                "origin": "prd",
                "prd_ids": list(prd_ids),
                "taxonomy_id": taxonomy_id,
                "split": domain.split,
                "l1": domain.l1_key,
                "capabilities": list(caps),
                "atoms": list(atoms),
                "env_variations": list(env),
                "task_variations": list(task),
                "request_by": by,
            }
            seed = query_seed(
                row,
                columns=columns,
                source=f"prd:{directives.round}",
                place=f"{taxonomy_id}-{index + 1}",
                default_name=name,
            )
            out.append(seed.in_round(directives.round))
    out += _corpus_seeds(directives, taxonomy, prds, corpus_seeds, matcher)
    return out


def _corpus_seeds(
    directives: SynthesisDirectives,
    taxonomy: Taxonomy,
    prds: Sequence[PRD],
    corpus_seeds: Sequence[Seed],
    matcher: DomainMatcher | None,
) -> list[Seed]:
    placed: dict[int, int] = {}  # index in corpus_seeds -> taxonomy id
    unplaced: list[int] = []
    for i, seed in enumerate(corpus_seeds):
        raw = seed.metadata.get("taxonomy_id")
        if raw is not None and str(raw).isdigit() and int(raw) in taxonomy:
            placed[i] = int(raw)
        else:
            unplaced.append(i)
    if matcher is not None and unplaced:
        texts = [seed_text(corpus_seeds[i]) for i in unplaced]
        for i, (domain, _, _, _) in zip(
            unplaced, matcher.match(texts, [words(t) for t in texts]), strict=True
        ):
            placed[i] = domain.id
    targeted_l2 = set(directives.target_l2)
    targeted_l1 = set(directives.target_l1)
    taken: dict[int, int] = {}
    out = []
    for i in sorted(placed):
        domain = taxonomy.by_id(placed[i])
        if domain.id not in targeted_l2 and domain.l1_key not in targeted_l1:
            continue
        if taken.get(domain.id, 0) >= directives.seeds_per_domain:
            continue
        taken[domain.id] = taken.get(domain.id, 0) + 1
        seed = corpus_seeds[i]
        serving = _serving(prds, directives, domain)
        metadata = seed.metadata | {
            "origin": "corpus",
            "corpus_seed_id": seed.id,
            "prd_ids": [p.prd_id for p in serving] if serving else list(directives.prd_ids),
            "taxonomy_id": domain.id,
            "split": domain.split,
            "l1": domain.l1_key,
        }
        data = seed.model_dump(exclude={"id"}) | {"metadata": metadata, "round": directives.round}
        out.append(Seed.model_validate(data))
    return out
