"""The domain axis: 354 level-2 domains under 90 level-1 domains in three splits, with their knowledge.

Ids, splits and names are those of OmniaBench's taxonomy.csv, so every artifact made here can be
reported next to OmniaBench results and OmniaBench items can be imported onto the same coordinates.
Two identity rules matter: an L2 domain is identified by its id alone (ToB has several L2s called
"Project Manager" under different L1s), and an L1 domain by (split, name) ("Finance" is both a ToC
and a ToB L1).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentomnia.taxonomy.knowledge import DomainKnowledge, load_knowledge

Split = Literal["toc", "tob", "toe"]
SPLITS: tuple[Split, ...] = ("toc", "tob", "toe")
SPLIT_NAMES: dict[str, str] = {
    "toc": "ToC (consumer)",
    "tob": "ToB (professional)",
    "toe": "ToE (enterprise)",
}
# (L1 count, L2 count) per split, and the first id of each split's block, as in OmniaBench.
EXPECTED_COUNTS: dict[str, tuple[int, int]] = {"toc": (22, 101), "tob": (38, 186), "toe": (30, 67)}
ID_BASE: dict[str, int] = {"toc": 10000, "tob": 20000, "toe": 30000}
CSV_COLUMNS = ("id", "split", "domain_l1_en", "domain_l1_zh", "domain_l2_en", "domain_l2_zh")
PATH_SEPARATOR = " > "

# Knowledge-base minimums (issue #3): per L2 domain, and averaged over all L2 domains.
MIN_ENTITIES = 4
MIN_RELATIONS = 1
MIN_RULES = 2
MIN_AVG_ENTITIES = 8.0
MIN_AVG_ATTRIBUTES = 45.0


class TaxonomyError(ValueError):
    """The taxonomy data is incomplete or inconsistent; the message lists every problem found."""


class Domain(BaseModel):
    """One level-2 domain with its place in the tree and, when loaded, its knowledge entry."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: int
    split: Split
    l1: str
    l1_zh: str
    l2: str
    l2_zh: str
    path: str
    knowledge: DomainKnowledge | None = Field(default=None, repr=False)

    @property
    def l1_key(self) -> str:
        return l1_key(self.split, self.l1)


def l1_key(split: str, l1: str) -> str:
    """The one string identity of an L1 domain, e.g. 'tob/Finance' (names alone repeat across splits)."""
    return f"{split}/{l1}"


def read_taxonomy_csv(path: Path) -> tuple[Domain, ...]:
    """Domains from a CSV with OmniaBench's columns (extra columns such as `paths` are ignored)."""
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in CSV_COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise TaxonomyError(f"{path}: missing columns {missing}; expected at least {list(CSV_COLUMNS)}")
        domains = []
        for line, row in enumerate(reader, start=2):
            try:
                l1, l2 = row["domain_l1_en"].strip(), row["domain_l2_en"].strip()
                domains.append(
                    Domain(
                        id=int(row["id"]),
                        split=row["split"].strip(),  # type: ignore[arg-type]
                        l1=l1,
                        l1_zh=row["domain_l1_zh"].strip(),
                        l2=l2,
                        l2_zh=row["domain_l2_zh"].strip(),
                        path=l1 + PATH_SEPARATOR + l2,
                    )
                )
            except ValueError as exc:
                raise TaxonomyError(f"{path}:{line}: cannot read row {dict(row)}: {exc}") from exc
    return tuple(domains)


def _csv_path() -> Path:
    return Path(str(resources.files("agentomnia.taxonomy") / "data" / "taxonomy.csv"))


class Taxonomy:
    """The domain tree; lookups by id, listings by split and L1, and a strict validation."""

    def __init__(self, domains: Iterable[Domain]) -> None:
        self.domains: tuple[Domain, ...] = tuple(domains)
        self._by_id = {d.id: d for d in self.domains}

    def __len__(self) -> int:
        return len(self.domains)

    def __contains__(self, taxonomy_id: object) -> bool:
        return taxonomy_id in self._by_id

    def by_id(self, taxonomy_id: int) -> Domain:
        try:
            return self._by_id[int(taxonomy_id)]
        except (KeyError, ValueError, TypeError):
            raise KeyError(
                f"unknown taxonomy id {taxonomy_id!r}; ids run {ID_BASE['toc']}.. (toc), {ID_BASE['tob']}.. (tob), "
                f"{ID_BASE['toe']}.. (toe) - see `agentomnia taxonomy show`"
            ) from None

    def l1s(self, split: str | None = None) -> list[tuple[str, str]]:
        """(split, L1 name) pairs in file order, optionally for one split."""
        _check_split(split)
        seen: dict[tuple[str, str], None] = {}
        for d in self.domains:
            if split is None or d.split == split:
                seen.setdefault((d.split, d.l1), None)
        return list(seen)

    def l2s(self, split: str | None = None, l1: str | None = None) -> list[Domain]:
        """L2 domains in file order, filtered by split and/or L1 name (case-insensitive)."""
        _check_split(split)
        wanted = l1.casefold() if l1 is not None else None
        return [
            d
            for d in self.domains
            if (split is None or d.split == split) and (wanted is None or d.l1.casefold() == wanted)
        ]

    def validate(self) -> list[str]:
        """Every problem with the tree and the knowledge base; empty means it meets issue #3 in full."""
        problems = structure_problems(self.domains)
        with_kb = [d for d in self.domains if d.knowledge is not None]
        missing = [d.id for d in self.domains if d.knowledge is None]
        if missing:
            shown = ", ".join(str(i) for i in missing[:10]) + (" ..." if len(missing) > 10 else "")
            problems.append(f"{len(missing)} L2 domains have no knowledge entry: {shown}")
        for d in with_kb:
            problems.extend(knowledge_minimum_problems(d))
        if with_kb and not missing:
            n = len(with_kb)
            avg_entities = sum(len(d.knowledge.entities) for d in with_kb if d.knowledge) / n
            avg_attributes = sum(d.knowledge.attribute_count for d in with_kb if d.knowledge) / n
            if avg_entities < MIN_AVG_ENTITIES:
                problems.append(
                    f"on average {avg_entities:.2f} entities per L2; at least {MIN_AVG_ENTITIES} required"
                )
            if avg_attributes < MIN_AVG_ATTRIBUTES:
                problems.append(
                    f"on average {avg_attributes:.2f} attributes per L2; at least {MIN_AVG_ATTRIBUTES} required"
                )
        return problems


def _check_split(split: str | None) -> None:
    if split is not None and split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")


def structure_problems(domains: Iterable[Domain]) -> list[str]:
    """Tree problems: counts per split, unique ids inside each split's id block, unique paths per L1."""
    domains = tuple(domains)
    problems: list[str] = []
    ids = [d.id for d in domains]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        problems.append(f"taxonomy ids repeat: {repeated}")
    for split, (n_l1, n_l2) in EXPECTED_COUNTS.items():
        rows = [d for d in domains if d.split == split]
        got_l1 = len({d.l1 for d in rows})
        if (got_l1, len(rows)) != (n_l1, n_l2):
            problems.append(f"split {split}: {got_l1} L1 / {len(rows)} L2 domains, expected {n_l1} / {n_l2}")
        outside = [d.id for d in rows if not ID_BASE[split] <= d.id < ID_BASE[split] + 10000]
        if outside:
            problems.append(f"split {split}: ids {outside} are outside the {ID_BASE[split]}.. block")
    paths = [(d.split, d.path) for d in domains]
    dup_paths = sorted({p for p in paths if paths.count(p) > 1})
    if dup_paths:
        problems.append(f"the same L1 > L2 path appears twice in a split: {dup_paths}")
    for d in domains:
        if not (d.l1 and d.l2 and d.l1_zh and d.l2_zh):
            problems.append(f"domain {d.id}: empty name (English and Chinese L1/L2 names are all required)")
    return problems


def knowledge_minimum_problems(domain: Domain) -> list[str]:
    """Per-L2 minimums of issue #3 for one domain that has a knowledge entry."""
    kb = domain.knowledge
    if kb is None:
        return [f"domain {domain.id} ({domain.path}): no knowledge entry"]
    problems = []
    if len(kb.entities) < MIN_ENTITIES:
        problems.append(
            f"domain {domain.id} ({domain.path}): {len(kb.entities)} entities, at least {MIN_ENTITIES}"
        )
    if len(kb.relations) < MIN_RELATIONS:
        problems.append(f"domain {domain.id} ({domain.path}): no relations between its entities")
    if len(kb.rules) < MIN_RULES:
        problems.append(f"domain {domain.id} ({domain.path}): {len(kb.rules)} rules, at least {MIN_RULES}")
    return problems


@cache
def _csv_domains() -> tuple[Domain, ...]:
    return read_taxonomy_csv(_csv_path())


@cache
def taxonomy_index() -> Taxonomy:
    """The tree from the shipped CSV without knowledge: cheap, and enough to check coordinates."""
    return Taxonomy(_csv_domains())


@cache
def load_taxonomy(require_knowledge: bool = True) -> Taxonomy:
    """The shipped taxonomy with each L2's knowledge entry attached.

    With `require_knowledge` (the default) a missing entry, or an entry for an id that is not in the
    tree, is an error; without it, domains lacking an entry get `knowledge=None`. Malformed knowledge
    files are always an error (see `python -m agentomnia.taxonomy.knowledge FILE`).
    """
    domains = _csv_domains()
    knowledge = load_knowledge()
    known = {d.id for d in domains}
    problems = []
    orphans = sorted(set(knowledge) - known)
    if orphans:
        problems.append(f"knowledge entries for ids that are not in taxonomy.csv: {orphans}")
    if require_knowledge:
        missing = [d.id for d in domains if d.id not in knowledge]
        if missing:
            shown = ", ".join(str(i) for i in missing[:10]) + (" ..." if len(missing) > 10 else "")
            problems.append(
                f"{len(missing)} L2 domains have no knowledge entry ({shown}); add them under "
                "agentomnia/taxonomy/data/knowledge/ or call load_taxonomy(require_knowledge=False)"
            )
    if problems:
        raise TaxonomyError("; ".join(problems))
    return Taxonomy(d.model_copy(update={"knowledge": knowledge.get(d.id)}) for d in domains)


class SplitCounts(BaseModel):
    """One row of the taxonomy counts table (a split, or 'all')."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    split: str
    l1: int
    l2: int
    with_knowledge: int
    entities: int
    attributes: int
    relations: int
    rules: int
    operations: int
    avg_entities: float
    avg_attributes: float


class TaxonomySummary(BaseModel):
    """What the `taxonomy` asset reports: the counts table and every validation problem."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    l1: int
    l2: int
    rows: tuple[SplitCounts, ...]
    capabilities: int
    atoms: int
    levers: int
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def _counts_row(split: str, rows: list[Domain]) -> SplitCounts:
    kbs = [d.knowledge for d in rows if d.knowledge is not None]
    n = len(kbs) or 1
    entities = sum(len(k.entities) for k in kbs)
    attributes = sum(k.attribute_count for k in kbs)
    return SplitCounts(
        split=split,
        l1=len({(d.split, d.l1) for d in rows}),
        l2=len(rows),
        with_knowledge=len(kbs),
        entities=entities,
        attributes=attributes,
        relations=sum(len(k.relations) for k in kbs),
        rules=sum(len(k.rules) for k in kbs),
        operations=sum(len(k.operations) for k in kbs),
        avg_entities=round(entities / n, 2),
        avg_attributes=round(attributes / n, 2),
    )


def summarize(taxonomy: Taxonomy) -> TaxonomySummary:
    """Counts per split and overall, the axes' sizes, and the taxonomy's validation problems."""
    from agentomnia.taxonomy.axes import atoms, capabilities

    rows = [_counts_row(s, taxonomy.l2s(split=s)) for s in SPLITS]
    rows.append(_counts_row("all", list(taxonomy.domains)))
    return TaxonomySummary(
        l1=len(taxonomy.l1s()),
        l2=len(taxonomy.domains),
        rows=tuple(rows),
        capabilities=len(capabilities()),
        atoms=len(atoms()),
        levers=sum(len(a.levers) for a in atoms()),
        problems=tuple(taxonomy.validate()),
    )


def load_and_validate(*, strict: bool = True) -> TaxonomySummary:
    """Load everything the taxonomy ships and summarise it; with `strict`, any problem raises TaxonomyError."""
    taxonomy = load_taxonomy(require_knowledge=strict)
    summary = summarize(taxonomy)
    if strict and summary.problems:
        raise TaxonomyError(f"{len(summary.problems)} taxonomy problems: " + "; ".join(summary.problems))
    return summary


def alignment_problems(omniabench_csv: Path, taxonomy: Taxonomy | None = None) -> list[str]:
    """Differences between OmniaBench's taxonomy.csv (a user's copy) and ours: ids, splits and names."""
    ours = {d.id: d for d in (taxonomy or taxonomy_index()).domains}
    theirs = {d.id: d for d in read_taxonomy_csv(omniabench_csv)}
    problems = [f"id {i} is only in ours" for i in sorted(set(ours) - set(theirs))]
    problems += [f"id {i} is only in {omniabench_csv.name}" for i in sorted(set(theirs) - set(ours))]
    for i in sorted(set(ours) & set(theirs)):
        a, b = ours[i], theirs[i]
        for field in ("split", "l1", "l1_zh", "l2", "l2_zh"):
            if getattr(a, field) != getattr(b, field):
                problems.append(
                    f"id {i}: {field} is {getattr(a, field)!r} here but {getattr(b, field)!r} there"
                )
    return problems
