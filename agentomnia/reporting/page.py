"""The page: its style, the sections in order, and the file written atomically."""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from agentomnia.config import home as default_home
from agentomnia.reporting.model import RenderedReport, ReportSummary, Section
from agentomnia.reporting.reader import RoundReader
from agentomnia.reporting.sections import SECTIONS, Builder
from agentomnia.reporting.widgets import escape
from agentomnia.storage import Storage

_ROUND_KEY = re.compile(r"^[A-Za-z0-9_.-]+$")

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2330;
  background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:18px 28px}
header h1{margin:0 0 4px;font-size:22px}
header .meta{margin:0;color:#c9d1e0;font-size:12px}
nav ol{margin:10px 0 0;padding-left:20px;columns:3}
nav a{color:#9cc3ff}
main{padding:8px 28px 40px;max-width:1200px}
section{background:#fff;border:1px solid #dde1e8;border-radius:6px;padding:8px 18px 14px;margin:16px 0}
h2{font-size:18px;border-bottom:1px solid #e5e8ee;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}
h4{font-size:14px;margin:12px 0 4px}
h5,h6{font-size:13px;margin:10px 0 4px}
table{border-collapse:collapse;margin:8px 16px 8px 0;font-size:12.5px}
caption{text-align:left;font-weight:600;padding:4px 0}
th,td{border:1px solid #dde1e8;padding:3px 8px;text-align:left;vertical-align:top}
thead th{background:#eef1f6}
td.n{text-align:right;font-variant-numeric:tabular-nums}
table.pairs th{background:#f6f7f9;font-weight:500}
.row{display:flex;flex-wrap:wrap;align-items:flex-start}
figure{margin:10px 0}
figure img{max-width:100%;height:auto}
figcaption{font-size:12px;color:#5a6475}
.note{color:#7a4b00;background:#fff7e6;border-left:3px solid #f0b44c;padding:4px 8px;margin:6px 0}
.badge{font-size:11px;font-weight:500;background:#f0b44c;color:#3a2600;border-radius:3px;padding:1px 6px}
details{margin:6px 0}
summary{cursor:pointer;font-weight:600}
pre{background:#f3f4f7;padding:8px;overflow-x:auto;font-size:12px;white-space:pre-wrap}
code{background:#f3f4f7;padding:0 3px;font-size:12px}
.prd{border-left:3px solid #dde1e8;padding-left:12px}
@media print{details{display:block}section{break-inside:avoid-page}}
"""
# Nothing may be fetched: images only from data: URIs, styles only inline, no scripts at all.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def _page(r: RoundReader, sections: Sequence[Section]) -> str:
    nav = "".join(
        f'<li><a href="#{s.key}">{escape(s.title)}</a>{"" if s.shown else " (not materialized)"}</li>'
        for s in sections
    )
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>AgentOmnia round {escape(r.key)}</title><style>{CSS}</style></head>\n<body>"
        f"<header><h1>AgentOmnia run report: round {escape(r.key)}</h1>"
        f'<p class="meta">home {escape(r.store.root)} · generated {escape(stamp)}</p>'
        f"<nav><ol>{nav}</ol></nav></header>\n"
        "<main>" + "\n".join(s.html() for s in sections) + "</main></body></html>\n"
    )


def _build(r: RoundReader, key: str, title: str, build: Builder) -> Section:
    section = Section(key, title)
    try:
        build(r, section)
    except Exception as exc:  # one unreadable artifact costs its section, never the page
        section.lack(title, f"could not be read: {type(exc).__name__}: {exc}")
    return section


def _storage(home: Path | None) -> Storage:
    root = Path(home).expanduser().resolve() if home is not None else default_home()
    if not root.is_dir():
        raise FileNotFoundError(
            f"no platform home at {root}; pass the folder that holds artifacts/ (or set AGENTOMNIA_HOME)"
        )
    return Storage(root)


def render_report(round_key: str, *, home: Path | None = None) -> RenderedReport:
    """The page for one round of the home (default `$AGENTOMNIA_HOME`), built only by reading."""
    if not _ROUND_KEY.match(round_key) or round_key in (".", ".."):
        raise ValueError(f"round {round_key!r} may only contain letters, digits, '_', '.' and '-' (e.g. r0)")
    r = RoundReader(_storage(home), round_key)
    sections = [_build(r, key, title, build) for key, title, build in SECTIONS]
    return RenderedReport(
        round=round_key,
        html=_page(r, sections),
        sections=[s.key for s in sections if s.shown],
        missing=[m for s in sections for m in s.missing],
        images=r.images,
    )


def write_report(round_key: str, out: Path, *, home: Path | None = None) -> ReportSummary:
    """Write the round's page to `out` (a file, or a folder that gets `report-<round>.html`)."""
    rendered = render_report(round_key, home=home)
    path = Path(out)
    if path.is_dir():
        path = path / f"report-{round_key}.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = rendered.html.encode("utf-8")
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)  # a page to share: mkstemp's private mode would hide it from other readers
        os.replace(tmp, path)  # a reader never sees half a page
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return ReportSummary(
        round=round_key,
        path=str(path),
        sections=rendered.sections,
        missing=rendered.missing,
        images=rendered.images,
        bytes=len(data),
    )
