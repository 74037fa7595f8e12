"""The shared embedder: unit float32 rows, an on-disk cache that survives the process, nearest()."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agentomnia.embeddings import Embedder, HashingEmbedder, MiniLMEmbedder, VectorCache, nearest


def test_minilm_rows_are_unit_float32(embedder: MiniLMEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    vectors = embedder.embed(["refund a damaged parcel", "book a table for two", "refund a damaged parcel"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(vectors[0], vectors[2])
    # Meaning, not spelling: a paraphrase is closer than an unrelated request.
    para = embedder.embed(["get my money back for a broken package"])[0]
    assert para @ vectors[0] > para @ vectors[1] + 0.1
    assert embedder.embed([]).shape == (0, 384)
    with pytest.raises(TypeError, match="sequence of texts"):
        embedder.embed("one text")


def test_disk_cache_is_reused_by_a_new_embedder(embedder: MiniLMEmbedder, tmp_path: Path) -> None:
    texts = ["weekly sales report", "reset my password"]
    first = MiniLMEmbedder(cache_dir=tmp_path).embed(texts)
    shards = list((tmp_path / "all-MiniLM-L6-v2").glob("shard-*.npz"))
    assert len(shards) == 1
    cache = VectorCache(tmp_path / "all-MiniLM-L6-v2", 384)
    assert len(cache) == 2
    second = MiniLMEmbedder(cache_dir=tmp_path)
    assert np.array_equal(second.embed(texts), first)
    assert np.allclose(first, embedder.embed(texts), atol=1e-6)
    # Nothing new to encode, so nothing new is written.
    assert len(list((tmp_path / "all-MiniLM-L6-v2").glob("shard-*.npz"))) == 1


def test_cache_with_wrong_dimension_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    store = VectorCache(folder, 4)
    store.put("k", np.ones(4, dtype=np.float32))
    store.flush()
    with pytest.raises(ValueError, match="4-dim vectors but the model makes 8-dim"):
        VectorCache(folder, 8)


def test_hashing_embedder_is_deterministic_and_lexical() -> None:
    emb = HashingEmbedder(dim=64)
    a, b, c = emb.embed(["late parcel refund", "refund for a late parcel", "quarterly tax filing"])
    assert np.array_equal(emb.embed(["late parcel refund"])[0], a)
    assert np.isclose(np.linalg.norm(a), 1.0)
    assert a @ b > a @ c
    assert not emb.embed([""]).any()
    with pytest.raises(ValueError, match="at least 8"):
        HashingEmbedder(dim=4)


def test_nearest_orders_by_cosine_and_breaks_ties_by_position() -> None:
    corpus = np.array([[1, 0], [0, 1], [1, 0], [0.6, 0.8]], dtype=np.float32)
    indices, scores = nearest(np.array([[1, 0], [0, 1]], dtype=np.float32), corpus, k=3)
    assert indices.tolist() == [[0, 2, 3], [1, 3, 0]]
    assert np.allclose(scores, [[1, 1, 0.6], [1, 0.8, 0]])
    indices, _ = nearest(np.array([1, 0], dtype=np.float32), corpus, k=10)
    assert indices.shape == (1, 4)
    with pytest.raises(ValueError, match="same embedder"):
        nearest(np.ones((1, 3)), corpus, k=1)
    with pytest.raises(ValueError, match="k must be at least 1"):
        nearest(corpus, corpus, k=0)


def test_the_numpy_forward_pass_gives_the_torch_model_s_vectors() -> None:
    from agentomnia.embeddings import NumpyMiniLM, _load_sentence_transformer, packaged_model_path

    path = packaged_model_path()
    texts = [
        "refund a damaged parcel",
        "Ok",  # shorter than the others: its padding must not count
        # past 128 word pieces: both paths cut it at the same place
        " ".join(f"step {i}: scan the pallet label and confirm the dock door" for i in range(30)),
    ]
    torch_vectors = _load_sentence_transformer(path, "cpu").encode(
        texts, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
    )
    numpy_vectors = NumpyMiniLM(path).encode(texts)
    assert numpy_vectors.shape == (3, 384) and numpy_vectors.dtype == np.float32
    assert np.abs(numpy_vectors - torch_vectors).max() < 1e-5


def test_a_few_texts_are_embedded_without_importing_torch(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from agentomnia.embeddings import MiniLMEmbedder\n"
        f"vectors = MiniLMEmbedder(cache_dir={str(tmp_path)!r}).embed(['book a table for two', 'a clock'])\n"
        "assert vectors.shape == (2, 384), vectors.shape\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_shipped_domain_vectors_cover_every_domain_and_are_the_models_own(tmp_path: Path) -> None:
    """The package ships the packaged model's vector of every domain's text, so a new home embeds none
    of them; a domain whose knowledge changed is named, with the command that ships it again."""
    from agentomnia.embeddings import SHIPPED_VECTORS, text_key
    from agentomnia.taxonomy.search import _default_taxonomy, domain_text, shipped_vectors

    status = shipped_vectors()
    assert status["not_covered"] == [], (
        f"the shipped vectors miss domains {status['not_covered'][:10]}: run "
        "`agentomnia taxonomy vectors --write` and commit agentomnia/taxonomy/data/domain_vectors.npz"
    )
    assert status["covered"] == status["domains"] == 354
    texts = [domain_text(d) for d in _default_taxonomy().domains][::71]  # five of them, encoded here
    fresh = MiniLMEmbedder(shipped=None).embed(texts)
    shipped = MiniLMEmbedder()  # the packaged model reads the shipped vectors unless told otherwise
    shipped._encode = lambda texts: (_ for _ in ()).throw(AssertionError(f"encoded {texts[:1]}"))  # type: ignore[method-assign]
    vectors = shipped.embed(texts)  # read, not encoded
    assert np.allclose(np.sum(vectors * fresh, axis=1), 1.0, atol=1e-4)
    assert text_key(texts[0]) in shipped._memory
    # a text the package does not ship is encoded as before; another model never reads them
    assert SHIPPED_VECTORS.is_file()
    assert MiniLMEmbedder(shipped=tmp_path / "missing.npz").embed(texts[:1]).shape == (1, 384)
    other = MiniLMEmbedder(model_path=SHIPPED_VECTORS.parent, shipped=SHIPPED_VECTORS)
    assert other._memory == {}
