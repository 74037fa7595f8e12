"""The internal spec of a program task: the logic a solution program implements, as data.

A ProgramPlan is what the offline proposer composes from an environment spec (and what an LLM
proposer's program is summarized into): which records to iterate over, the decision rule that
selects them, the write applied to each, the fallback when nothing qualifies, and the answer fields
the program reports. The program source, the public query and the rubric are all rendered from it,
so they cannot drift apart.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Template = Literal["filter_write", "join_write", "aggregate_pick"]
CompareOp = Literal[">", ">=", "<", "<=", "=="]


class Predicate(BaseModel):
    """`attr op value` on the iterated record (or on its parent, for joins)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    attr: str
    op: CompareOp
    value: Any
    kind: Literal["number", "date", "enum", "bool"]


class Write(BaseModel):
    """The write applied to each selected record: a transition, or an update of one field."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: str
    key_param: str
    op: Literal["transition", "update"]
    attr: str  # the field the write changes
    value: Any = None  # the value it sets (transitions and enum/bool updates)
    param: str | None = None  # update: the parameter carrying the value
    allowed_from: tuple[str, ...] | None = None  # transition: statuses the move is allowed from


class Join(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    ref_attr: str  # the iterated record's reference attribute
    parent: str  # the parent entity
    get_tool: str
    get_param: str


class ProgramPlan(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    template: Template
    entity: str
    table: str
    key: str
    list_tool: str
    list_args: dict[str, Any] = Field(default_factory=dict)  # enum/bool filters + limit
    predicate: Predicate
    join: Join | None = None
    write: Write
    total_attr: str | None = None  # a numeric attribute summed over the selected records
    fallback: Literal["top_one", "none"] = "top_one"
    guard_status: bool = False  # skip records whose status cannot make the move (added by repair)
    record_refusals: bool = False  # report refused writes with their reason instead of failing
    notes: list[str] = Field(default_factory=list)
