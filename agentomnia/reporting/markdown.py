"""Markdown documents (PRDs) as escaped HTML, parsed by markdown-it-py.

The parser is CommonMark with everything that could reach outside the page switched off: raw HTML is
escaped, and links, images, autolinks and link references stay literal text (a report follows no URL).
Three choices fit the PRDs the platform writes: a line break inside a paragraph is kept (`<br>`),
headings are pushed down under the page's own, and an indented run of top-level lines is shown as
preformatted text even right after a paragraph line, which is how a PRD quotes a call transcript.
YAML front matter becomes a collapsed table of its fields.
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Sequence
from functools import cache
from typing import Any

import yaml
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from agentomnia.reporting.widgets import details, pairs

_FENCE_MARKS = ("```", "~~~")


def split_front_matter(text: str) -> tuple[str | None, str]:
    """(YAML front matter, body); an opening fence that is never closed is left in the body."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return None, text
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1 :])
    return None, text


def front_matter(text: str) -> dict[str, Any] | None:
    """The document's front matter as a mapping, or None when it has none or it is not a YAML mapping."""
    front, _ = split_front_matter(text)
    try:
        data = yaml.safe_load(front) if front is not None else None
    except yaml.YAMLError:
        data = None
    return {str(k): v for k, v in data.items()} if isinstance(data, dict) else None


def _front_matter_html(front: str) -> str:
    try:
        data = yaml.safe_load(front)
    except yaml.YAMLError:
        data = None
    if not isinstance(data, dict):
        return f"<pre>{html.escape(front)}</pre>"
    return details(f"front matter ({len(data)} fields)", pairs({str(k): v for k, v in data.items()}))


def _indented_lines(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """Top-level lines indented by any amount, as one preformatted block; it may end a paragraph."""

    def indented(line: int) -> bool:
        text = state.src[state.bMarks[line] + state.tShift[line] : state.eMarks[line]]
        return state.sCount[line] > 0 and not state.isEmpty(line) and not text.startswith(_FENCE_MARKS)

    if state.blkIndent != 0 or not indented(start):
        return False
    if silent:
        return True
    last = start + 1
    while last < end and indented(last):
        last += 1
    token = state.push("code_block", "code", 0)
    token.content = state.getLines(start, last, 0, False) + "\n"
    token.map = [start, last]
    state.line = last
    return True


def _shift_headings(state: StateCore) -> None:
    offset = int(state.env.get("heading_offset", 0))
    for token in state.tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, int(token.tag[1:]) + offset)}"


def _join_list_lines(state: StateCore) -> None:
    """A list item's continuation lines join its first with a space, not a line break."""
    depth = 0
    for token in state.tokens:
        if token.type == "list_item_open":
            depth += 1
        elif token.type == "list_item_close":
            depth -= 1
        elif token.type == "inline" and depth and token.children:
            for child in token.children:
                if child.type == "softbreak":
                    child.type, child.content = "text", " "


def _preformatted(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    """Code blocks and fences as plain `<pre>`, dedented and escaped; the info string is ignored."""
    return "<pre>" + html.escape(textwrap.dedent(tokens[idx].content).removesuffix("\n")) + "</pre>\n"


@cache
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "xhtmlOut": False})
    md.disable(["link", "image", "autolink", "reference", "html_inline", "html_block"])
    md.block.ruler.before("code", "indented_lines", _indented_lines, {"alt": ["paragraph"]})
    md.core.ruler.push("shift_headings", _shift_headings)
    md.core.ruler.push("join_list_lines", _join_list_lines)
    md.add_render_rule("code_block", _preformatted)
    md.add_render_rule("fence", _preformatted)
    return md


def markdown_html(text: str, *, heading_offset: int = 2) -> str:
    """A Markdown document as escaped HTML; YAML front matter becomes a collapsed table.
    `heading_offset` pushes headings down so a document's `#` sits under the page's own headings."""
    front, body = split_front_matter(text)
    rendered = _parser().render(body, {"heading_offset": heading_offset})
    return (_front_matter_html(front) if front is not None else "") + rendered
