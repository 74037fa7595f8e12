"""What one stage asked the model, and what became of the answers.

Every call through an `OpenAICompatibleLLM` is counted under its purpose (the schema name a stage
gives it: `env_candidate`, `method_repair`, `rubric_item`, `teacher_turn`…): requests sent, answers
replayed from the cache, tokens, and whether the answer was usable (valid), broke its schema
(invalid) or never came (failed: timeouts, HTTP errors after the retries). Stages add what only they
know: whether a usable answer survived verification (`verdict`) and when they fell back to their
offline proposer (`fallback`). A stage's ledger is written beside its artifact (`llm.json`) and read
by the run report, so a team sees per stage how much of the model's work was kept.

The counts are what the model layer saw, so a replay from the cache shows the same answers as cache
hits with zero requests.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

Outcome = Literal["valid", "invalid", "failed"]
TOTAL = "all"
USAGE_FILE = "llm.json"  # beside a stage's artifact: <artifacts root>/<stage>/<round>/llm.json


class PurposeCounts(BaseModel):
    """The counts of one purpose (or of a whole stage, as `all`)."""

    model_config = ConfigDict(extra="forbid")

    calls: int = 0  # answers asked for: requests sent plus answers replayed from the cache
    requests: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    valid: int = 0
    invalid: int = 0
    failed: int = 0
    accepted: int = 0
    rejected: int = 0
    fallbacks: int = 0

    def add(self, other: PurposeCounts) -> None:
        for name in PurposeCounts.model_fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def valid_rate(self) -> float | None:
        """Usable answers among the answers asked for."""
        return self.valid / self.calls if self.calls else None

    @property
    def accepted_rate(self) -> float | None:
        """Answers kept after verification among those a verdict was given on."""
        judged = self.accepted + self.rejected
        return self.accepted / judged if judged else None

    def row(self, purpose: str) -> dict[str, Any]:
        return {
            "purpose": purpose,
            **self.model_dump(),
            "valid_rate": _round(self.valid_rate),
            "accepted_rate": _round(self.accepted_rate),
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


class Ledger:
    """Thread-safe counts per purpose; one per model handle, so one per stage run."""

    def __init__(self) -> None:
        self._counts: dict[str, PurposeCounts] = {}
        self._lock = threading.Lock()

    def _entry(self, purpose: str) -> PurposeCounts:
        return self._counts.setdefault(purpose or "output", PurposeCounts())

    def call(
        self,
        purpose: str,
        outcome: Outcome,
        *,
        cached: bool = False,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
    ) -> None:
        with self._lock:
            c = self._entry(purpose)
            c.calls += 1
            c.cache_hits += cached
            c.requests += not cached
            c.prompt_tokens += prompt_tokens
            c.completion_tokens += completion_tokens
            setattr(c, outcome, getattr(c, outcome) + 1)

    def verdict(self, purpose: str, accepted: bool, n: int = 1) -> None:
        """`n` usable answers of `purpose` were kept (or refused) by the stage's verification."""
        with self._lock:
            c = self._entry(purpose)
            if accepted:
                c.accepted += n
            else:
                c.rejected += n

    def fallback(self, purpose: str, n: int = 1) -> None:
        """The stage used its offline proposer `n` times where the model's answer did not serve."""
        with self._lock:
            self._entry(purpose).fallbacks += n

    def snapshot(self) -> dict[str, PurposeCounts]:
        with self._lock:
            return {k: v.model_copy() for k, v in sorted(self._counts.items())}

    def total(self) -> PurposeCounts:
        return total_of(self.snapshot().values())

    def rows(self) -> list[dict[str, Any]]:
        """One row per purpose, then the stage's total (`all`)."""
        counts = self.snapshot()
        return (
            [*(c.row(p) for p, c in counts.items()), total_of(counts.values()).row(TOTAL)] if counts else []
        )


def total_of(counts: Iterable[PurposeCounts]) -> PurposeCounts:
    out = PurposeCounts()
    for c in counts:
        out.add(c)
    return out


def ledger_of(llm: object) -> Ledger | None:
    """The ledger of a model handle (None for offline mode, or a stand-in without one)."""
    ledger = getattr(llm, "ledger", None)
    return ledger if isinstance(ledger, Ledger) else None


def verdict(llm: object, purpose: str, accepted: bool, n: int = 1) -> None:
    """Record on `llm`'s ledger, where it has one, that `n` answers were kept or refused."""
    if (ledger := ledger_of(llm)) is not None and n:
        ledger.verdict(purpose, accepted, n)


def fallback(llm: object, purpose: str, n: int = 1) -> None:
    """Record on `llm`'s ledger, where it has one, that the offline proposer stood in `n` times."""
    if (ledger := ledger_of(llm)) is not None and n:
        ledger.fallback(purpose, n)


def counts_from_rows(rows: Iterable[Mapping[str, Any]]) -> dict[str, PurposeCounts]:
    """Read back what `Ledger.rows` wrote (the total row is recomputed, not trusted)."""
    fields = set(PurposeCounts.model_fields)
    return {
        str(r["purpose"]): PurposeCounts(**{k: int(v or 0) for k, v in r.items() if k in fields})
        for r in rows
        if r.get("purpose") != TOTAL
    }


def save_usage(ledger: Ledger, path: Path, *, stage: str, model: str) -> None:
    """Write a stage's ledger (its rows per purpose and the total) as JSON at `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"stage": stage, "model": model, "purposes": ledger.rows()}
    path.write_text(json.dumps(body, indent=1, sort_keys=True), encoding="utf-8")


def round_usage(artifacts_root: Path, round_key: str) -> dict[str, dict[str, PurposeCounts]]:
    """Every stage's counts per purpose for one round, read from the files `save_usage` wrote (stage
    name -> purpose -> counts); an unreadable file is skipped, never fatal to a report."""
    out: dict[str, dict[str, PurposeCounts]] = {}
    for path in sorted(artifacts_root.glob(f"*/{round_key}/{USAGE_FILE}")):
        try:
            body = json.loads(path.read_text(encoding="utf-8"))
            out[str(body.get("stage") or path.parent.parent.name)] = counts_from_rows(
                body.get("purposes") or []
            )
        except (OSError, ValueError, TypeError, KeyError):
            continue
    return out


def usage_rows(usage: Mapping[str, Mapping[str, PurposeCounts]]) -> list[dict[str, Any]]:
    """One row per stage (its purposes named, their counts summed), for tables and `--json`."""
    return [
        {
            "stage": stage,
            "purposes": ", ".join(purposes),
            **{k: v for k, v in total_of(purposes.values()).row(TOTAL).items() if k != "purpose"},
        }
        for stage, purposes in usage.items()
    ]
