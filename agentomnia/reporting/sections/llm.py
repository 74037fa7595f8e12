"""The section on what each stage asked the served model in `llm` mode, and what became of it."""

from __future__ import annotations

from agentomnia.llm.ledger import TOTAL, round_usage, total_of, usage_rows
from agentomnia.reporting.model import Section
from agentomnia.reporting.reader import RoundReader
from agentomnia.reporting.widgets import details, note, table

COLUMNS = (
    "stage", "purposes", "calls", "requests", "cache_hits", "prompt_tokens", "completion_tokens",
    "valid_rate", "accepted_rate", "fallbacks", "invalid", "failed",
)  # fmt: skip


def model_use(r: RoundReader, s: Section) -> None:
    usage = round_usage(r.store.artifacts_root, r.key)
    if not usage:
        if r.key in r.rounds_with_artifacts():
            s.add(note("No stage of this round asked a model: it ran offline (AGENTOMNIA_MODE=offline)."))
        else:
            s.lack("model use", "no stage of this round has run")
        return
    rows = usage_rows(usage)
    whole = total_of(c for purposes in usage.values() for c in purposes.values()).row(TOTAL)
    s.add(
        table(
            [
                *rows,
                {"stage": "all stages", "purposes": "", **{k: v for k, v in whole.items() if k != "purpose"}},
            ],
            list(COLUMNS),
            caption="per stage: answers asked for (calls = requests sent + cache hits), the share usable "
            "(valid rate), the share kept after verification (accepted rate), and offline fallbacks",
        )
    )
    by_purpose = [
        {"stage": stage, **c.row(purpose)}
        for stage, purposes in usage.items()
        for purpose, c in purposes.items()
    ]
    s.add(details("per stage and purpose", table(by_purpose)))
