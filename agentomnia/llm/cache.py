"""Response cache keyed by the request hash, so a rerun replays identical answers.

It lives in its own DuckDB file (not the lineage file) so that many concurrent LLM calls in
one stage never queue behind lineage writes.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentomnia.lineage.duckfile import DuckFile
from agentomnia.records import content_hash

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    request_hash VARCHAR PRIMARY KEY,
    model VARCHAR NOT NULL,
    request VARCHAR NOT NULL,
    text VARCHAR NOT NULL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    created_at TIMESTAMP NOT NULL
);
"""


def request_hash(request: dict[str, Any]) -> str:
    return content_hash(request, length=32)


class ResponseCache:
    def __init__(self, path: Path | str) -> None:
        self.file = DuckFile(path, schema=SCHEMA)

    def get(self, key: str) -> tuple[str, int, int] | None:
        rows = self.file.query(
            "SELECT text, prompt_tokens, completion_tokens FROM responses WHERE request_hash = ?", [key]
        )
        return (rows[0][0], rows[0][1] or 0, rows[0][2] or 0) if rows else None

    def put(
        self, key: str, request: dict[str, Any], text: str, prompt_tokens: int, completion_tokens: int
    ) -> None:
        with self.file.write() as con:
            con.execute(
                "INSERT OR IGNORE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    key,
                    str(request.get("model", "")),
                    json.dumps(request, sort_keys=True, ensure_ascii=False),
                    text,
                    prompt_tokens,
                    completion_tokens,
                    datetime.now(UTC).replace(tzinfo=None),
                ],
            )

    def __len__(self) -> int:
        rows = self.file.query("SELECT count(*) FROM responses")
        return int(rows[0][0]) if rows else 0
