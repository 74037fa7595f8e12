"""What the taxonomy asset and the CLI show: the counts table, listing rows and the embedding map.

The map places the 354 L2 domains by the meaning of their descriptions (MiniLM vectors reduced to
two dimensions with t-SNE) and colours them by split, so one can see at a glance that the three
splits cover different ground and where they overlap. t-SNE runs with a fixed random_state and PCA
initialisation, so the same vectors always give the same picture.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from agentomnia.embeddings import Embedder, default_embedder
from agentomnia.taxonomy.domains import SPLIT_NAMES, SPLITS, Taxonomy, load_taxonomy, summarize
from agentomnia.taxonomy.search import domain_vectors

SPLIT_COLOURS = {"toc": "#1f77b4", "tob": "#ff7f0e", "toe": "#2ca02c"}
TSNE_SEED = 0


def counts_table(taxonomy: Taxonomy) -> list[dict[str, Any]]:
    """One row per split plus 'all': L1/L2 counts and knowledge-base sizes and averages."""
    return [row.model_dump() for row in summarize(taxonomy).rows]


def show_rows(taxonomy: Taxonomy, split: str | None = None, l1: str | None = None) -> list[dict[str, Any]]:
    """Rows for `taxonomy show [--split] [--l1]`: one per L2 domain, with its knowledge-base size."""
    rows = []
    for d in taxonomy.l2s(split=split, l1=l1):
        kb = d.knowledge
        rows.append(
            {
                "id": d.id,
                "split": d.split,
                "l1": d.l1,
                "l2": d.l2,
                "l2_zh": d.l2_zh,
                "entities": len(kb.entities) if kb else None,
                "attributes": kb.attribute_count if kb else None,
                "rules": len(kb.rules) if kb else None,
            }
        )
    if not rows and l1 is not None:
        names = sorted({name for _, name in taxonomy.l1s(split)})
        raise ValueError(
            f"no L1 domain named {l1!r}{f' in split {split}' if split else ''}; choose from {names}"
        )
    return rows


def embedding_layout(vectors: np.ndarray, *, seed: int = TSNE_SEED) -> np.ndarray:
    """2-D t-SNE coordinates for unit vectors (cosine metric, PCA init, fixed seed)."""
    from sklearn.manifold import TSNE

    n = vectors.shape[0]
    if n < 3:
        raise ValueError(f"an embedding map needs at least 3 points, got {n}")
    # Perplexity must stay below the number of points; 30 is the usual choice for a few hundred.
    tsne = TSNE(
        n_components=2, perplexity=min(30.0, (n - 1) / 3), metric="cosine", init="pca", random_state=seed
    )
    return np.asarray(tsne.fit_transform(vectors), dtype=np.float64)


def embedding_map_png(
    out_path: Path | str,
    embedder: Embedder | None = None,
    *,
    taxonomy: Taxonomy | None = None,
    dpi: int = 150,
) -> Path:
    """Draw the L2 embedding map coloured by split to `out_path` (PNG) and return the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    taxonomy = taxonomy or load_taxonomy(require_knowledge=False)
    xy = embedding_layout(domain_vectors(taxonomy, embedder or default_embedder()))
    splits = np.array([d.split for d in taxonomy.domains])
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7.5, 6.5))
    try:
        for split in SPLITS:
            mask = splits == split
            if mask.any():
                ax.scatter(
                    xy[mask, 0],
                    xy[mask, 1],
                    s=22,
                    alpha=0.8,
                    c=SPLIT_COLOURS[split],
                    edgecolors="white",
                    linewidths=0.4,
                    label=f"{SPLIT_NAMES[split]}: {int(mask.sum())} L2",
                )
        ax.set_title(f"{len(taxonomy.domains)} level-2 domains by description (t-SNE of sentence embeddings)")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.legend(loc="best", frameon=False)
        fig.tight_layout()
        fig.savefig(out, dpi=dpi, format="png")
    finally:
        plt.close(fig)
    return out
