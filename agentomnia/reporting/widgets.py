"""HTML pieces the sections are built from: tables, labelled values, notes, collapsible blocks and
embedded figures. Every piece of text from the data goes through `escape`, so none can inject markup."""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from typing import Any


def _number(value: float) -> str:
    if value != value:  # NaN
        return "nan"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if abs(value) < 1e-3:
        return f"{value:.3g}"
    return f"{value:.4f}".rstrip("0").rstrip(".")


def plain(value: Any) -> str:
    """A cell's text before escaping: numbers trimmed, collections joined, nothing as a dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(plain(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {plain(v)}" for k, v in value.items())
    return str(value)


def escape(value: Any) -> str:
    return html.escape(plain(value))


def cell(value: Any) -> str:
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    return f'<td class="n">{escape(value)}</td>' if numeric else f"<td>{escape(value)}</td>"


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None, caption: str = "") -> str:
    if not rows:
        return note(f"{caption or 'table'}: no rows")
    cols = list(columns) if columns is not None else list(dict.fromkeys(k for r in rows for k in r))
    head = "".join(f"<th>{escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(cell(r.get(c)) for c in cols) + "</tr>" for r in rows)
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def pairs(items: Mapping[str, Any], caption: str = "") -> str:
    """A two-column table of labelled values."""
    body = "".join(f"<tr><th>{escape(k)}</th>{cell(v)}</tr>" for k, v in items.items())
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f'<table class="pairs">{cap}<tbody>{body}</tbody></table>'


def note(text: str) -> str:
    return f'<p class="note">{html.escape(text)}</p>'


def details(summary: str, inner: str, *, open_: bool = False) -> str:
    return f"<details{' open' if open_ else ''}><summary>{escape(summary)}</summary>{inner}</details>"


def heading(level: int, text: str) -> str:
    return f"<h{level}>{escape(text)}</h{level}>"


def label(key: str) -> str:
    return key.replace("_", " ")


def figure(data: bytes, caption: str) -> str:
    """A PNG embedded as a data: URI (the page fetches nothing), with its caption."""
    encoded = base64.b64encode(data).decode("ascii")
    return (
        f'<figure><img alt="{html.escape(caption, quote=True)}" src="data:image/png;base64,{encoded}">'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )
