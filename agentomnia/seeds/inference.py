"""Environment inference: what stateful environment a seed implies (paper §4.2.1).

For each seed, an `EnvCandidate`: a brief summary naming the domain, a detailed overview
(persistent state components, typical operations, functional objectives), utility and realism
scores in [0, 1] with the features behind them, and a taxonomy coordinate.

The offline proposer reads structure already in the seed — id parameters and path segments
become state components, tool verbs and HTTP methods tell reads from writes — and fills the
rest from the knowledge base of the nearest level-2 domain. The domain is chosen by embedding
similarity, then checked against the seed's content: the top embedding hits are re-ranked by
how many of each domain's entity and operation words the seed actually uses.
The LLM proposer asks a model for the same record; both go through `validate_candidate`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agentomnia.embeddings import Embedder, nearest
from agentomnia.llm import LLM, LLMError
from agentomnia.llm.ledger import fallback, verdict
from agentomnia.records import Record
from agentomnia.seeds.models import Seed, SeedTool
from agentomnia.taxonomy import CAPABILITY_IDS, Coordinate, Domain, Taxonomy, guess_capabilities
from agentomnia.taxonomy.search import domain_vectors

WRITE_VERBS = frozenset(
    [
        "create",
        "add",
        "new",
        "insert",
        "update",
        "edit",
        "set",
        "change",
        "modify",
        "patch",
        "delete",
        "remove",
        "cancel",
        "archive",
        "assign",
        "approve",
        "reject",
        "submit",
        "book",
        "reserve",
        "schedule",
        "reschedule",
        "send",
        "post",
        "transfer",
        "pay",
        "refund",
        "close",
        "open",
        "mark",
        "complete",
        "start",
        "stop",
        "enable",
        "disable",
        "register",
        "enroll",
        "upload",
        "move",
        "merge",
        "split",
        "issue",
        "void",
        "publish",
        "invite",
        "confirm",
        "record",
        "log",
        "make",
        "respond",
        "report",
        "dispatch",
        "restore",
        "grant",
        "revoke",
        "lift",
        "release",
        "decide",
        "activate",
        "deactivate",
        "freeze",
        "unfreeze",
        "defer",
        "sign",
        "fill",
        "escalate",
        "acknowledge",
        "resolve",
        "silence",
        "suspend",
        "pin",
        "unpin",
        "mute",
        "block",
        "unblock",
        "reopen",
        "return",
        "redeem",
        "apply",
        "adjust",
        "allocate",
        "release",
        "reassign",
        "tag",
        "flag",
        "rate",
        "review",
        "dismiss",
        "snooze",
    ]
)
ASSIGN_VERBS = frozenset(
    ["assign", "reassign", "transfer", "move", "link", "attach", "allocate", "route", "delegate"]
)
READ_VERBS = frozenset(
    [
        "get",
        "list",
        "search",
        "find",
        "query",
        "fetch",
        "read",
        "show",
        "view",
        "lookup",
        "check",
        "count",
        "export",
        "describe",
    ]
)
_WORD = re.compile(r"[a-z][a-z0-9]*")


class Operation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: Literal["read", "write"]
    entity: str | None = None


class Overview(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    state_components: tuple[str, ...]
    operations: tuple[Operation, ...]
    objectives: tuple[str, ...]


class EnvCandidate(Record):
    record_kind: ClassVar[str] = "env_candidate"
    unhashed: ClassVar[frozenset[str]] = frozenset({"fallback"})

    seed_ids: tuple[str, ...]
    name: str
    summary: str
    overview: Overview
    utility: float = Field(ge=0, le=1)
    realism: float = Field(ge=0, le=1)
    features: dict[str, float]
    coordinate: Coordinate
    domain_similarity: float
    proposer: Literal["offline", "llm"] = "offline"
    fallback: str = ""  # why the offline proposer stood in for the model, when it did


class CandidateInvalid(ValueError):
    """A proposed candidate broke a check; the message says which."""


def words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower().replace("_", " ")))


def singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "ches", "shes", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word


# Words that name a role or a direction, not a thing: `origin_depot_id` is a depot.
ROLE_PREFIXES = frozenset(
    [
        "from",
        "to",
        "origin",
        "destination",
        "source",
        "target",
        "new",
        "old",
        "parent",
        "child",
        "reply",
        "primary",
        "secondary",
        "assigned",
        "requested",
        "current",
        "previous",
        "next",
        "default",
        "linked",
        "related",
        "original",
        "replacement",
        "recorded",
        "found",
        "expected",
        "actual",
        "home",
        "preferred",
        "alternate",
    ]
)
# Nouns that are attributes or plumbing, never state components of their own.
NOT_ENTITIES = frozenset(
    [
        "status",
        "state",
        "type",
        "kind",
        "summary",
        "details",
        "detail",
        "info",
        "information",
        "data",
        "result",
        "results",
        "count",
        "total",
        "id",
        "ids",
        "page",
        "limit",
        "offset",
        "query",
        "filter",
        "sort",
        "date",
        "time",
        "name",
        "value",
        "amount",
        "field",
        "fields",
        "item_count",
        "report",
    ]
)


def _entity_from_id_param(pname: str, known: set[str]) -> str | None:
    match = re.match(r"^([a-z][a-z0-9_]*?)_?id$", re.sub(r"(?<=[a-z])(?=[A-Z])", "_", pname).lower())
    if match is None or not match.group(1):
        return None
    parts = [singular(p) for p in match.group(1).strip("_").split("_") if p]
    while len(parts) > 1 and parts[0] in ROLE_PREFIXES:  # origin_depot_id is a depot
        parts = parts[1:]
    full = "_".join(parts)
    if full not in known:
        # a known tail wins only when what precedes it is a role (assigned_agent -> agent), never a
        # qualifier that names another thing (work_order is not an order)
        for i in range(1, len(parts)):
            if "_".join(parts[i:]) in known and all(p in ROLE_PREFIXES for p in parts[:i]):
                return "_".join(parts[i:])
    return None if full in NOT_ENTITIES else full


def seed_text(seed: Seed) -> str:
    """What the seed is about, in words: the text embedded for domain search and clustering."""
    parts = [seed.title, seed.description, seed.text[:1500]]
    parts += [f"{t.name.replace('_', ' ')}: {t.description}" for t in seed.tools[:40]]
    return "\n".join(p for p in parts if p)


# -- structure read from the seed ------------------------------------------------------------


def tool_kind(tool: SeedTool) -> Literal["read", "write"]:
    if tool.read_only is True or (tool.method or "").upper() in ("GET", "HEAD"):
        return "read"
    if tool.read_only is False or tool.destructive or tool.method:
        return "write"
    head = tool.name.replace("-", "_").replace(".", "_")
    first = re.split(r"_|(?<=[a-z])(?=[A-Z])", head)[0].lower()
    return "write" if first in WRITE_VERBS else "read"


def _name_nouns(tool_name: str) -> list[str]:
    """The nouns of a tool's name: its words but the verb it opens with, read verbs and stop words.
    A write verb later in the name is a noun there (`decide_expense_report` acts on a report,
    `create_return_request` on a return, `report_maintenance_issue` on an issue)."""
    tokens = [t.lower() for t in re.split(r"[-_./ ]|(?<=[a-z])(?=[A-Z])", tool_name) if t]
    stop = {"by", "for", "all", "my", "of", "in", "on", "to", "from", "with", "and"}
    return [
        singular(t)
        for i, t in enumerate(tokens)
        if not (i == 0 and t in WRITE_VERBS) and t not in READ_VERBS and t not in stop
    ]


def tool_entity(tool: SeedTool, known: set[str] | None = None) -> str | None:
    """The entity a tool acts on.

    A known entity named in the tool's own name wins (`open_claim` acts on a claim even when it
    takes a `policy_id`), the longest such name first (`create_work_order` is a work order); then
    the first `<x>_id` parameter; then a path segment; then the last noun of the name.
    """
    if tool.method and tool.path:  # an HTTP operation: its path says what it acts on
        from agentomnia.envs.resources import http_resource

        resource = http_resource(tool)
        if resource is not None:
            return resource.entity
    known = known or set()
    nouns = _name_nouns(tool.name)
    id_entities = [
        e for p in tool.input_schema.get("properties") or {} if (e := _entity_from_id_param(p, known))
    ]

    # the longest known span; of equals, the one whose id the tool takes first, then the last (the
    # head noun: `delete_expense_line(line_id)` removes a line, `set_transaction_category(transaction_id,
    # category_id)` changes a transaction)
    def rank(span: tuple[int, int]) -> tuple[int, int, int]:
        name = "_".join(nouns[span[0] : span[1]])
        return span[0] - span[1], id_entities.index(name) if name in id_entities else 99, -span[1]

    spans = sorted(((i, j) for i in range(len(nouns)) for j in range(i + 1, len(nouns) + 1)), key=rank)
    named = [span for i, j in spans if (span := "_".join(nouns[i:j])) in known]
    verb = re.split(r"[-_./ ]|(?<=[a-z])(?=[A-Z])", tool.name)[0].lower()
    if named and verb in ASSIGN_VERBS and len(id_entities) >= 2 and named[0] != id_entities[0]:
        # assign_adjuster(claim_id, adjuster_id) changes the claim: the named thing is what gets pointed at
        other = next((e for e in id_entities if e != named[0]), None)
        if other is not None:
            return other
    if named:
        return named[0]
    for pname in tool.input_schema.get("properties") or {}:
        ent = _entity_from_id_param(pname, known)
        if ent:
            return ent
    if tool.path:
        segments = [s for s in tool.path.split("/") if s and not s.startswith("{")]
        for seg in reversed(segments):
            name = singular(re.sub(r"[^a-z0-9]+", "_", seg.lower()).strip("_"))
            if name in known or (
                name and name not in NOT_ENTITIES and not re.fullmatch(r"v\d+(_\d+)*", name)
            ):
                return name
    nouns = [n for n in nouns if n not in NOT_ENTITIES]
    return nouns[-1] if nouns else None


def seed_components(seed: Seed, known: set[str] | None = None) -> list[str]:
    """State components the seed's own schemas imply, in order of first appearance."""
    known = set(known or ())
    # first pass: plain `<entity>_id` parameters name the entities; roles are resolved against them
    for tool in seed.tools:
        for pname in tool.input_schema.get("properties") or {}:
            stem = re.match(r"^([a-z][a-z0-9]*)_id$", pname.lower())
            if stem:
                known.add(singular(stem.group(1)))
    seen: dict[str, None] = {}
    for tool in seed.tools:
        for pname in tool.input_schema.get("properties") or {}:
            ent = _entity_from_id_param(pname, known)
            if ent:
                seen.setdefault(ent, None)
        ent = tool_entity(tool, known)
        if ent:
            seen.setdefault(ent, None)
    return list(seen)


# -- domain choice -----------------------------------------------------------------------------


def domain_overlap(seed_words: set[str], domain: Domain) -> float:
    """Share of a domain's entity and operation words that the seed uses (0 without knowledge)."""
    kb = domain.knowledge
    if kb is None:
        return 0.0
    vocab: set[str] = set()
    for e in kb.entities:
        vocab |= words(e.name)
    for o in kb.operations:
        vocab |= words(o.name)
    vocab -= READ_VERBS | WRITE_VERBS
    stems = {singular(w) for w in seed_words}
    return len({w for w in vocab if singular(w) in stems}) / max(1, len(vocab))


class DomainMatcher:
    """Nearest L2 domains by embedding, re-ranked by how well each domain's knowledge fits the seed."""

    def __init__(
        self, taxonomy: Taxonomy, embedder: Embedder, *, shortlist: int = 8, overlap_weight: float = 0.5
    ) -> None:
        self.taxonomy = taxonomy
        self.embedder = embedder
        self.domains = list(taxonomy.domains)
        self.vectors = domain_vectors(taxonomy, embedder)
        self.shortlist = shortlist
        self.overlap_weight = overlap_weight

    def match(
        self, texts: Sequence[str], seed_words: Sequence[set[str]]
    ) -> list[tuple[Domain, float, float, list[float]]]:
        """(domain, similarity, overlap, top similarities) per text."""
        if not texts:
            return []
        return self.match_vectors(self.embedder.embed(list(texts)), seed_words)

    def match_vectors(
        self, vecs: np.ndarray, seed_words: Sequence[set[str]]
    ) -> list[tuple[Domain, float, float, list[float]]]:
        """`match` for texts already embedded (`vecs[i]` is the unit vector of text i)."""
        if len(vecs) == 0:
            return []
        idx, sims = nearest(vecs, self.vectors, self.shortlist)
        out = []
        for row in range(len(vecs)):
            scored = []
            for i, s in zip(idx[row], sims[row], strict=True):
                d = self.domains[int(i)]
                ov = domain_overlap(seed_words[row], d)
                scored.append((float(s) + self.overlap_weight * ov, d, float(s), ov))
            best = max(scored, key=lambda x: x[0])
            out.append((best[1], best[2], best[3], [float(s) for s in sims[row]]))
        return out

    def text_vectors(self, texts: Sequence[str]) -> np.ndarray:
        return self.embedder.embed(list(texts))


# -- the offline proposer ------------------------------------------------------------------------


def _clip(x: float) -> float:
    return float(min(1.0, max(0.0, x)))


def _schema_richness(tools: Sequence[SeedTool]) -> float:
    """Share of parameters that carry a type, plus a bonus for enums and formats."""
    params = [
        p for t in tools for p in (t.input_schema.get("properties") or {}).values() if isinstance(p, dict)
    ]
    if not params:
        return 0.0
    typed = sum(1 for p in params if "type" in p or "$ref" in p or "enum" in p)
    extra = sum(1 for p in params if "enum" in p or "format" in p or "minimum" in p or "maximum" in p)
    return _clip(typed / len(params) * 0.7 + min(1.0, extra / max(1, len(params)) * 2) * 0.3)


def propose_offline(
    seed: Seed, domain: Domain, similarity: float, overlap: float, top_sims: list[float]
) -> EnvCandidate:
    kb = domain.knowledge
    sw = words(seed_text(seed))
    kb_entities = {e.name for e in kb.entities} if kb is not None else set()
    components = seed_components(seed, kb_entities)
    known = set(components) | kb_entities
    if seed.tools:
        operations = [
            Operation(name=t.name, kind=tool_kind(t), entity=tool_entity(t, known)) for t in seed.tools
        ]
    else:
        operations = []
    scope = seed_scope(seed)
    if kb is not None and scope:
        # A composed slice of the domain: its entities in the order given, the operations on them.
        components += [name for name in scope if name in kb_entities and name not in components]
        if not operations:
            operations = [
                Operation(name=o.name, kind=o.kind, entity=o.entity)
                for o in kb.operations
                if o.entity in components
            ]
    elif kb is not None:
        # Entities the seed mentions come first; the domain's knowledge fills the state out (high recall).
        mentioned = [
            e.name for e in kb.entities if {singular(w) for w in words(e.name)} & {singular(w) for w in sw}
        ]
        for name in mentioned + [e.name for e in kb.entities]:
            if name not in components and len(components) < max(12, len(components)):
                components.append(name)
        if not operations:
            operations = [Operation(name=o.name, kind=o.kind, entity=o.entity) for o in kb.operations]
    objectives: list[str] = []
    if seed.kind == "query":
        objectives.append(seed.text)
    elif seed.kind == "skill":
        objectives.append(seed.description)
    if kb is not None:
        ranked = sorted(kb.workflows, key=lambda w: -len(words(w) & sw))
        objectives += ranked[: 4 - len(objectives)]

    writes = sum(1 for o in operations if o.kind == "write")
    reads = len(operations) - writes
    tool_entities = {o.entity for o in operations if o.entity}
    chains = sum(
        1
        for t in seed.tools
        for p in (t.input_schema.get("properties") or {})
        if p.endswith("_id") and any(o.kind == "read" and o.entity == singular(p[:-3]) for o in operations)
    )
    features = {
        "state_components": float(len(components)),
        "operations": float(len(operations)),
        "write_operations": float(writes),
        "read_operations": float(reads),
        "entities_touched_by_tools": float(len(tool_entities)),
        "id_chains": float(chains),
        "schema_richness": _schema_richness(seed.tools) if seed.tools else 0.5,
        "domain_similarity": round(similarity, 4),
        "domain_overlap": round(overlap, 4),
        "domain_margin": round(top_sims[0] - top_sims[min(2, len(top_sims) - 1)], 4) if top_sims else 0.0,
        "text_length": float(len(seed.description) + len(seed.text)),
        "seed_tools": float(len(seed.tools)),
    }
    utility = _clip(
        0.30 * min(1.0, writes / 3)
        + 0.20 * min(1.0, reads / 3)
        + 0.25 * min(1.0, len(components) / 6)
        + 0.25 * min(1.0, (chains + len(tool_entities)) / 6 if seed.tools else 0.6)
    )
    realism = _clip(
        0.40 * _clip((similarity - 0.15) / 0.45)
        + 0.20 * min(1.0, overlap * 4)
        + 0.20 * features["schema_richness"]
        + 0.20 * min(1.0, features["text_length"] / 200)
    )
    caps = guess_capabilities(seed_text(seed)) or ("tool_use",)
    caps = tuple(
        dict.fromkeys((*caps, "tool_use", "state_management" if writes else "information_gathering"))
    )
    atoms = ["tool_parameter_grounding"]
    if len(seed.tools) >= 12 or len(components) >= 8:
        atoms.append("structured_information")
    if writes >= 2 and reads >= 2:
        atoms.append("dynamic_planning")
    if seed.kind == "query" and len(seed.text.split()) < 12:
        atoms.append("ambiguous_goal")
    coordinate = Coordinate.for_domain(domain.id, caps, atoms)
    # a composed slice is told apart by its whole scope; otherwise the leading components say enough
    entity_list = ", ".join(components if scope else components[:4])
    summary = f"{domain.l2} ({domain.l1}, {domain.split}) environment: {entity_list}"
    return EnvCandidate(
        round=seed.round,
        seed_ids=(seed.id,),
        name=seed.name,
        summary=summary,
        overview=Overview(
            state_components=tuple(components), operations=tuple(operations), objectives=tuple(objectives)
        ),
        utility=round(utility, 4),
        realism=round(realism, 4),
        features=features,
        coordinate=coordinate,
        domain_similarity=round(similarity, 4),
    )


# -- the LLM proposer ----------------------------------------------------------------------------

LLM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "summary",
        "state_components",
        "operations",
        "objectives",
        "utility",
        "realism",
        "capabilities",
    ],
    "properties": {
        "summary": {"type": "string"},
        "state_components": {"type": "array", "items": {"type": "string"}},
        "operations": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "kind", "entity"],
                "properties": {
                    "name": {"type": "string"},
                    "kind": {"enum": ["read", "write"]},
                    "entity": {"type": "string"},
                },
            },
        },
        "objectives": {"type": "array", "items": {"type": "string"}},
        "utility": {"type": "number", "minimum": 0, "maximum": 1},
        "realism": {"type": "number", "minimum": 0, "maximum": 1},
        "capabilities": {"type": "array", "items": {"enum": list(CAPABILITY_IDS)}},
    },
}


def propose_llm(
    seed: Seed, llm: LLM, domain: Domain, similarity: float, overlap: float, top_sims: list[float]
) -> EnvCandidate:
    """Ask the model for the overview and scores; the domain stays the matcher's (it is checked, not guessed)."""
    base = propose_offline(seed, domain, similarity, overlap, top_sims)
    prompt = (
        "You design executable, stateful tool-use environments from seeds. Infer the environment this seed implies.\n"
        f"Domain: {domain.path} ({domain.split}).\nSeed ({seed.kind}): {seed_text(seed)[:4000]}\n"
        "Give a one-line summary naming the domain, the persistent state components (entity names, snake_case), "
        "typical operations (snake_case verb_noun, read or write, the entity acted on), 2-4 functional objectives, "
        "utility and realism in [0,1], and the capabilities exercised."
    )
    out = llm.complete(
        [{"role": "user", "content": prompt}], schema=LLM_SCHEMA, schema_name="env_candidate"
    ).data
    caps = tuple(out["capabilities"]) or base.coordinate.capabilities
    return EnvCandidate(
        round=seed.round,
        seed_ids=base.seed_ids,
        name=base.name,
        summary=out["summary"],
        overview=Overview(
            state_components=tuple(out["state_components"]),
            operations=tuple(Operation(**o) for o in out["operations"]),
            objectives=tuple(out["objectives"]),
        ),
        utility=float(out["utility"]),
        realism=float(out["realism"]),
        features=base.features,
        coordinate=Coordinate.for_domain(domain.id, caps, base.coordinate.difficulty),
        domain_similarity=base.domain_similarity,
        proposer="llm",
    )


def _propose(
    seed: Seed, llm: LLM | None, domain: Domain, similarity: float, overlap: float, top_sims: list[float]
) -> EnvCandidate:
    """The model's candidate where it gives a valid one; otherwise the offline proposer's, saying why
    the model's answer could not stand (malformed, refused, truncated, timed out or invalid)."""
    if llm is None:
        return propose_offline(seed, domain, similarity, overlap, top_sims)
    try:
        cand = propose_llm(seed, llm, domain, similarity, overlap, top_sims)
        validate_candidate(cand, seed)
        verdict(llm, "env_candidate", True)
        return cand
    except (LLMError, CandidateInvalid, TypeError, ValueError, KeyError) as exc:
        if not isinstance(exc, LLMError):
            verdict(llm, "env_candidate", False)  # a usable answer that validation refused
        fallback(llm, "env_candidate")
        why = f"the model's candidate was unusable ({type(exc).__name__}: {str(exc)[:160]})"
        return propose_offline(seed, domain, similarity, overlap, top_sims).model_copy(
            update={"fallback": why}
        )


def validate_candidate(c: EnvCandidate, seed: Seed) -> None:
    """The checks every proposed candidate passes, whoever proposed it."""
    if not c.summary.strip():
        raise CandidateInvalid("summary is empty")
    if not c.overview.state_components:
        raise CandidateInvalid("no persistent state components")
    if not c.overview.operations:
        raise CandidateInvalid("no operations")
    bad = [s for s in c.overview.state_components if not re.match(r"^[a-z][a-z0-9_]*$", s)]
    if bad:
        raise CandidateInvalid(f"state components must be snake_case names: {bad[:3]}")
    if seed.tools:
        names = {t.name for t in seed.tools}
        missing = [o.name for o in c.overview.operations if o.kind == "write" and o.name not in names]
        if len(missing) > len(names):
            raise CandidateInvalid(f"operations invent far more writes than the seed offers: {missing[:3]}")


# Seeds the platform composed for a known domain: a PRD round's, and the scale run's variants.
COMPOSED_ORIGINS = frozenset({"prd", "composed"})


def seed_scope(seed: Seed) -> list[str]:
    """The entities a composed seed confines its environment to (empty: no confinement).

    The scale run composes many seeds per domain; each names a slice of the domain's knowledge
    (`metadata["scope"]`, focal entity first) so the environments built from them differ."""
    scope = seed.metadata.get("scope")
    if not isinstance(scope, list):
        return []
    return [str(s) for s in scope if isinstance(s, str) and s]


def _composed_for(seed: Seed, taxonomy: Taxonomy) -> Domain | None:
    """The domain a seed was composed for by a PRD round (its provenance, not a guess), if any.

    Seeds from the corpus keep being placed by inference even when they carry a label: the label is
    what inference is measured against there."""
    tid = seed.metadata.get("taxonomy_id")
    if seed.metadata.get("origin") not in COMPOSED_ORIGINS or not isinstance(tid, int) or tid not in taxonomy:
        return None
    return taxonomy.by_id(tid)


def infer_candidates(
    seeds: Sequence[Seed],
    matcher: DomainMatcher,
    llm: LLM | None = None,
    *,
    vectors: np.ndarray | None = None,
) -> tuple[list[EnvCandidate], list[tuple[Seed, str]]]:
    """Candidates for all seeds (batched embedding), and the seeds that failed with why.

    `vectors` are the seeds' text embeddings (`seed_text`) when the caller already has them."""
    texts = [seed_text(s) for s in seeds]
    vecs = vectors if vectors is not None else matcher.text_vectors(texts)
    matches = matcher.match_vectors(vecs, [words(t) for t in texts])
    out: list[EnvCandidate] = []
    failed: list[tuple[Seed, str]] = []
    for seed, (domain, sim, ov, top) in zip(seeds, matches, strict=True):
        domain = _composed_for(seed, matcher.taxonomy) or domain
        try:
            cand = _propose(seed, llm, domain, sim, ov, top)
            validate_candidate(cand, seed)
        except (CandidateInvalid, ValueError, KeyError) as exc:
            failed.append((seed, f"inference failed: {exc}"))
            continue
        out.append(cand)
    return out, failed


def candidate_text(c: EnvCandidate) -> str:
    """The text clustered in selection: what the environment holds and does."""
    ops = ", ".join(o.name for o in c.overview.operations[:30])
    return json.dumps(
        {"summary": c.summary, "state": c.overview.state_components, "ops": ops}, sort_keys=True
    )
