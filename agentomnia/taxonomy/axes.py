"""The capability and atomic-difficulty axes of the coordinate, loaded from the package's YAML.

Both axes are small, fixed vocabularies that every later stage refers to by id: synthesis picks a
capability profile and a set of atoms and applies the atoms' construction levers, the benchmark
reports along them, and diagnosis maps failures onto them. Keeping them as data (with ids that never
change) lets the descriptions improve without touching code, and keeps the order that the 8-bit
difficulty profile depends on in one place.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

_SNAKE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
ATOM_COUNT = 8
CAPABILITY_COUNT = 10


def _snake_case(value: str, what: str) -> str:
    if not _SNAKE.match(value):
        raise ValueError(
            f"{what} id {value!r} must be snake_case (lowercase letters, digits, single underscores)"
        )
    return value


class Capability(BaseModel):
    """One capability dimension: what it evaluates and how a task shows it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    name_zh: str
    evaluates: str
    signals: tuple[str, ...] = Field(min_length=2)
    keywords: tuple[str, ...] = ()

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return _snake_case(value, "capability")


class Lever(BaseModel):
    """A construction move that makes a task exhibit an atom; `acts_on` is the part of the task it changes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    text: str
    acts_on: Literal["query", "state", "tools", "user"]

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return _snake_case(value, "lever")


class Atom(BaseModel):
    """One atomic-difficulty factor with the levers that produce it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    name_zh: str
    primary_rank: int = Field(ge=0)
    description: str
    signals: tuple[str, ...] = Field(min_length=2)
    levers: tuple[Lever, ...] = Field(min_length=3)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return _snake_case(value, "atom")

    def lever(self, lever_id: str) -> Lever | None:
        return next((lv for lv in self.levers if lv.id == lever_id), None)


def _data_file(name: str) -> Path:
    return Path(str(resources.files("agentomnia.taxonomy") / "data" / name))


def _read_list(path: Path) -> list[dict[str, Any]]:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
        raise ValueError(f"{path}: expected a YAML list of mappings")
    return raw


def read_capabilities(path: Path | None = None) -> tuple[Capability, ...]:
    path = path or _data_file("capabilities.yaml")
    caps = tuple(Capability.model_validate(item) for item in _read_list(path))
    ids = [c.id for c in caps]
    if len(caps) != CAPABILITY_COUNT or len(set(ids)) != len(ids):
        raise ValueError(f"{path}: expected {CAPABILITY_COUNT} capabilities with distinct ids, got {ids}")
    return caps


def read_atoms(path: Path | None = None) -> tuple[Atom, ...]:
    path = path or _data_file("atoms.yaml")
    atoms = tuple(Atom.model_validate(item) for item in _read_list(path))
    ids = [a.id for a in atoms]
    if len(atoms) != ATOM_COUNT or len(set(ids)) != len(ids):
        raise ValueError(f"{path}: expected {ATOM_COUNT} atoms with distinct ids, got {ids}")
    ranks = sorted(a.primary_rank for a in atoms)
    if ranks != list(range(ATOM_COUNT)):
        raise ValueError(
            f"{path}: primary_rank must number the atoms 0..{ATOM_COUNT - 1} once each, got {ranks}"
        )
    lever_ids = [lv.id for a in atoms for lv in a.levers]
    duplicates = sorted({i for i in lever_ids if lever_ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"{path}: lever ids must be unique across atoms; repeated: {duplicates}")
    return atoms


@cache
def capabilities() -> tuple[Capability, ...]:
    """The 10 capability dimensions in axis order."""
    return read_capabilities()


@cache
def atoms() -> tuple[Atom, ...]:
    """The 8 atoms in bit order."""
    return read_atoms()


CAPABILITY_IDS: tuple[str, ...] = tuple(c.id for c in capabilities())
ATOM_IDS: tuple[str, ...] = tuple(a.id for a in atoms())
FULL_PROFILE = (1 << ATOM_COUNT) - 1


def capability(capability_id: str) -> Capability:
    for cap in capabilities():
        if cap.id == capability_id:
            return cap
    raise KeyError(f"unknown capability {capability_id!r}; use one of {', '.join(CAPABILITY_IDS)}")


def atom(atom_id: str) -> Atom:
    for a in atoms():
        if a.id == atom_id:
            return a
    raise KeyError(f"unknown atom {atom_id!r}; use one of {', '.join(ATOM_IDS)}")


def lever(lever_id: str) -> tuple[Atom, Lever]:
    """The atom a lever belongs to, and the lever."""
    for a in atoms():
        found = a.lever(lever_id)
        if found is not None:
            return a, found
    raise KeyError(f"unknown lever {lever_id!r}; see agentomnia/taxonomy/data/atoms.yaml for the lever ids")


def profile_mask(atom_ids: Iterable[str]) -> int:
    """The 8-bit difficulty profile with the bits of the given atoms set (bit i = ATOM_IDS[i])."""
    mask = 0
    for atom_id in atom_ids:
        if atom_id not in ATOM_IDS:
            raise KeyError(f"unknown atom {atom_id!r}; use one of {', '.join(ATOM_IDS)}")
        mask |= 1 << ATOM_IDS.index(atom_id)
    return mask


def profile_atoms(mask: int) -> tuple[str, ...]:
    """The atoms set in a difficulty profile, in bit order."""
    if not 0 <= mask <= FULL_PROFILE:
        raise ValueError(f"difficulty profile {mask} is outside 0..{FULL_PROFILE} (8 bits, one per atom)")
    return tuple(atom_id for i, atom_id in enumerate(ATOM_IDS) if mask >> i & 1)


def primary_atom(mask: int) -> str:
    """The primary atom of a profile: among the set atoms, the one with the lowest `primary_rank`.

    The rank order (see atoms.yaml) puts the atoms that decide what a task tests and that are rare to
    construct first - risk & clarification, multi-source inconsistency, progressive disclosure - and
    the ones nearly every tool task shows last, so the label is informative and deterministic.
    """
    present = profile_atoms(mask)
    if not present:
        raise ValueError("an empty difficulty profile has no primary atom; set at least one atom bit")
    ranks = {a.id: a.primary_rank for a in atoms()}
    return min(present, key=ranks.__getitem__)


def guess_capabilities(text: str, *, limit: int = 3) -> tuple[str, ...]:
    """Capabilities whose keywords occur in `text`, most hits first (ties in axis order), at most `limit`.

    A cheap offline cue for proposers that have only a query or a tool description; it returns an
    empty tuple when nothing matches, leaving the default to the caller.
    """
    lowered = " " + re.sub(r"[^a-z0-9]+", " ", text.lower()) + " "
    hits = []
    for index, cap in enumerate(capabilities()):
        count = sum(lowered.count(f" {kw} ") for kw in cap.keywords)
        if count:
            hits.append((-count, index, cap.id))
    return tuple(cap_id for _, _, cap_id in sorted(hits)[:limit])
