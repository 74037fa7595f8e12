"""Free text -> the nearest level-2 domains, by sentence embedding.

Seeds, PRDs and user queries arrive as prose; placing them on the domain axis is a nearest-neighbour
search over one vector per L2 domain. Each domain is embedded from its path, its description and
its workflows (when the knowledge base has them), because a bare name such as "Dispatcher" says
little while its workflows say what the work is. The 354 corpus vectors are computed once per
embedder and corpus and kept in memory; the embedder's own disk cache makes later processes fast.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

import numpy as np

from agentomnia.embeddings import Embedder, default_embedder, nearest
from agentomnia.taxonomy.domains import SPLIT_NAMES, Domain, Taxonomy, load_taxonomy

# Two workflows already say what the work is; more would run past the model's 128-token input window.
MAX_WORKFLOWS = 2


def domain_text(domain: Domain) -> str:
    """The text a domain is embedded from: path, description and leading workflows.

    The split is left out on purpose: its label would pull every domain of a split together and make
    the embedding map and the search reflect the label rather than the work.
    """
    parts = [f"{domain.path}."]
    if domain.knowledge is not None:
        parts.append(domain.knowledge.description.strip())
        workflows = [w.strip().rstrip(".") for w in domain.knowledge.workflows[:MAX_WORKFLOWS]]
        if workflows:
            parts.append("Typical work: " + "; ".join(workflows) + ".")
    return " ".join(parts)


_CORPUS: dict[tuple[int, str], tuple[Embedder, np.ndarray]] = {}
_CORPUS_LOCK = threading.Lock()


def domain_vectors(taxonomy: Taxonomy, embedder: Embedder) -> np.ndarray:
    """One unit vector per domain of `taxonomy`, in its order; memoised per embedder and corpus text."""
    texts = [domain_text(d) for d in taxonomy.domains]
    corpus_key = hashlib.sha256("\x1f".join(texts).encode("utf-8")).hexdigest()
    # Keyed by the embedder's identity; the entry holds the embedder so its id cannot be reused.
    key = (id(embedder), corpus_key)
    with _CORPUS_LOCK:
        hit = _CORPUS.get(key)
        if hit is not None:
            return hit[1]
    vectors = embedder.embed(texts)
    with _CORPUS_LOCK:
        _CORPUS[key] = (embedder, vectors)
    return vectors


def _default_taxonomy() -> Taxonomy:
    # Search still works on names alone while the knowledge base is incomplete.
    return load_taxonomy(require_knowledge=False)


def find_domains(
    text: str,
    k: int = 3,
    embedder: Embedder | None = None,
    *,
    taxonomy: Taxonomy | None = None,
    split: str | None = None,
) -> list[tuple[Domain, float]]:
    """The k L2 domains closest to `text` by cosine similarity, best first, with their scores."""
    if not text.strip():
        raise ValueError("find_domains needs some text to search for; got an empty string")
    taxonomy = taxonomy or _default_taxonomy()
    embedder = embedder or default_embedder()
    vectors = domain_vectors(taxonomy, embedder)
    domains = list(taxonomy.domains)
    if split is not None:
        keep = [i for i, d in enumerate(taxonomy.domains) if d.split == split]
        if not keep:
            raise ValueError(f"no domains in split {split!r}; use one of {', '.join(sorted(SPLIT_NAMES))}")
        domains, vectors = [domains[i] for i in keep], vectors[keep]
    indices, scores = nearest(embedder.embed([text]), vectors, k)
    return [(domains[i], float(s)) for i, s in zip(indices[0], scores[0], strict=True)]


def find_rows(
    text: str, k: int = 3, embedder: Embedder | None = None, *, split: str | None = None
) -> list[dict[str, Any]]:
    """Rows for `taxonomy find "text"`: rank, id, split, names and the cosine score (3 decimals)."""
    return [
        {"rank": rank, "id": d.id, "split": d.split, "l1": d.l1, "l2": d.l2, "score": round(score, 3)}
        for rank, (d, score) in enumerate(find_domains(text, k, embedder, split=split), start=1)
    ]


def shipped_vectors(write: bool = False) -> dict[str, Any]:
    """How many of the domains' texts the package's shipped vectors cover (`SHIPPED_VECTORS`); with
    `write`, encode every domain text with the packaged model and ship exactly those vectors."""
    from agentomnia.embeddings import (
        MINILM_DIM,
        SHIPPED_VECTORS,
        MiniLMEmbedder,
        read_shard,
        text_key,
        write_shard,
    )

    texts = [domain_text(d) for d in _default_taxonomy().domains]
    keys = [text_key(t) for t in texts]
    if write:
        write_shard(SHIPPED_VECTORS, dict(zip(keys, MiniLMEmbedder(shipped=None).embed(texts), strict=True)))
    shipped = read_shard(SHIPPED_VECTORS, MINILM_DIM)
    stale = [d.id for d, key in zip(_default_taxonomy().domains, keys, strict=True) if key not in shipped]
    return {
        "file": str(SHIPPED_VECTORS),
        "domains": len(texts),
        "covered": len(texts) - len(stale),
        "not_covered": stale,
        "unused": len(set(shipped) - set(keys)),
    }
