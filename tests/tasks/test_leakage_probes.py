"""The leakage checker compiles a pattern only when the query contains its literal: that shortcut
must never miss what the plain case-insensitive regex would find, ASCII look-alikes included."""

from __future__ import annotations

import random
import re
import sys

from agentomnia.envs.spec import AttributeSpec, EntitySpec, EnvSpec, ToolSpec
from agentomnia.tasks.leakage import _ASCII_FOLD, leakage_problems
from agentomnia.taxonomy import Coordinate


def _tool(name: str, props: list[str]) -> ToolSpec:
    schema = {"type": "object", "properties": {p: {"type": "string"} for p in props}}
    return ToolSpec(name=name, description=name, kind="read", op="get", entity="kit", parameters=schema)


SPEC = EnvSpec(
    name="kits", class_name="Kits", description="A kit store.",
    coordinate=Coordinate.for_domain(20096, ["tool_use"], ["tool_parameter_grounding"]),
    candidate_id="kits", seed_ids=(),
    entities=(EntitySpec(name="kit", table="kits", description="kit", key="kit_id", id_prefix="KIT",
                         attributes=(AttributeSpec(name="kit_id", type="str"), AttributeSpec(name="size", type="str"))),),
    relations=(), rules=(),
    tools=(_tool("book_kit", ["kit_id", "size"]), _tool("refund", ["kit_id", "status"]), _tool("list_kits", ["size"])),
)  # fmt: skip


def _reference(query: str) -> list[str]:
    """What the checker said before the shortcut: every pattern compiled and searched."""
    out: list[str] = []
    for t in SPEC.tools:
        if "_" in t.name:
            pattern = rf"(?<![A-Za-z0-9_]){re.escape(t.name)}(?![A-Za-z0-9_])"
        else:
            pattern = rf"(?:`{re.escape(t.name)}`|\b{re.escape(t.name)}\s*\()"
        if re.search(pattern, query, re.IGNORECASE):
            out.append(t.name)
    keys = sorted({p for t in SPEC.tools for p in t.parameters["properties"]})
    for p in keys:
        if "_" in p:
            pattern = rf"(?<![A-Za-z0-9_]){re.escape(p)}(?![A-Za-z0-9_])"
        else:
            pattern = rf"(?:`{re.escape(p)}`|(?<![A-Za-z0-9_]){re.escape(p)}\s*=)"
        if re.search(pattern, query, re.IGNORECASE):
            out.append(p)
    return out


def _named(problems: list[str]) -> list[str]:
    return [m.group(1) for p in problems if (m := re.search(r"`([^`]+)`", p))]


def test_the_fold_table_lists_every_non_ascii_character_that_matches_ascii() -> None:
    everything = "".join(chr(c) for c in range(0x80, sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    found = set(re.findall(r"[\x00-\x7f]", everything, re.IGNORECASE))
    assert found == {chr(c) for c in _ASCII_FOLD}


def test_probes_agree_with_plain_regexes_on_odd_queries() -> None:
    words = ["book_kit", "BOOK_KIT", "boo\u212a_kit", "refund", "`refund`", "refund (", "kit_id", "\u212aIT_ID",
             "size", "`size`", "size=", "s\u017fize =", "status =", "list_kits", "lı\u017ft_kits", "books_kit",
             "xbook_kit", "kit_ids", "—", "é", "Refund(", "plain words"]  # fmt: skip
    rng = random.Random(0)
    for _ in range(400):
        query = " ".join(rng.choice(words) for _ in range(rng.randint(1, 5)))
        got = _named(leakage_problems(query, SPEC, forbid_ids=False, forbid_steps=False))
        assert got == _reference(query), query
    assert _named(leakage_problems("please boo\u212a_kit — now", SPEC, forbid_ids=False)) == ["book_kit"]
