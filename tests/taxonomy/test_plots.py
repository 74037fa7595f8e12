"""The taxonomy asset's outputs: counts table, listing rows and the embedding-map PNG."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from agentomnia.embeddings import MiniLMEmbedder
from agentomnia.taxonomy import counts_table, embedding_map_png, load_taxonomy, show_rows
from agentomnia.taxonomy.plots import embedding_layout

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_counts_table_rows() -> None:
    rows = counts_table(load_taxonomy(require_knowledge=False))
    assert [(r["split"], r["l1"], r["l2"]) for r in rows] == [
        ("toc", 22, 101),
        ("tob", 38, 186),
        ("toe", 30, 67),
        ("all", 90, 354),
    ]
    total = rows[-1]
    assert total["with_knowledge"] == sum(r["with_knowledge"] for r in rows[:3])
    assert total["entities"] == sum(r["entities"] for r in rows[:3])
    if total["with_knowledge"]:
        assert total["avg_entities"] == round(total["entities"] / total["with_knowledge"], 2)


def test_show_rows_filter_by_split_and_l1() -> None:
    tax = load_taxonomy(require_knowledge=False)
    assert len(show_rows(tax)) == 354
    assert len(show_rows(tax, split="toe")) == 67
    finance = show_rows(tax, l1="Finance")
    assert {r["split"] for r in finance} == {"toc", "tob"} and len(finance) == 11
    assert [r["l2"] for r in show_rows(tax, split="tob", l1="Logistics")][0] == "Logistics Specialist"
    with pytest.raises(ValueError, match="no L1 domain named 'Fintech'"):
        show_rows(tax, l1="Fintech")


@pytest.mark.slow
def test_embedding_map_png(embedder: MiniLMEmbedder, tmp_path: Path) -> None:
    out = embedding_map_png(tmp_path / "maps" / "taxonomy.png", embedder=embedder)
    data = out.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert width >= 800 and height >= 700
    assert len(data) > 30_000


def test_layout_is_reproducible_and_refuses_tiny_inputs() -> None:
    import numpy as np

    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(40, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    first, second = embedding_layout(vectors), embedding_layout(vectors)
    assert first.shape == (40, 2) and np.allclose(first, second)
    with pytest.raises(ValueError, match="at least 3 points"):
        embedding_layout(vectors[:2])
