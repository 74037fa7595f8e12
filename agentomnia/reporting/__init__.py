"""The run report: one self-contained HTML page showing what a round made, stage by stage.

A round's results are spread over Parquet files, JSON reports, Markdown PRDs and PNG plots under the
platform home, and the Dagster UI shows them one asset at a time, only while an instance is running.
This page gathers them into a single file that can be mailed, attached to a pull request or opened
years later without a network: no external CSS, scripts or fonts (its Content-Security-Policy forbids
fetching anything), every plot embedded as a base64 PNG, and every piece of text from the data
escaped, so a PRD title or a rejection reason can never inject markup.

    summary = write_report("r1", Path("report.html"))   # home: $AGENTOMNIA_HOME unless given
    summary.sections, summary.missing, summary.bytes

It only reads the home, every artifact through the catalog (`agentomnia.catalog`). A stage not
materialized for the round becomes a short note saying so (and an entry in `ReportSummary.missing`);
an artifact that cannot be read becomes a note with the error. A report on a half-run round is still
a report.

- `page`: the page (style, section order, atomic write) and `render_report` / `write_report`
- `sections/`: one builder per section, grouped by what they show
- `reader`: the round through the catalog, creating nothing
- `markdown`: PRDs as escaped HTML (markdown-it-py)
- `widgets`: tables, notes and figures; `model`: the report's records
"""

from __future__ import annotations

from agentomnia.reporting.markdown import markdown_html
from agentomnia.reporting.model import MissingPart, RenderedReport, ReportSummary
from agentomnia.reporting.page import render_report, write_report

__all__ = ["MissingPart", "RenderedReport", "ReportSummary", "markdown_html", "render_report", "write_report"]
