"""Frozen evidence vectors of fact texts, for CGR's chain losses.

The evidence encoder is frozen, so a corpus fact's vector is the one the embedding cache already
holds: each training step looks its facts up by text (rows of the memory-mapped cache) instead of
running the encoder over them again. Texts outside the corpora (a gold fact worded differently
from the open book) are encoded once by the same frozen encoder and kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from cgr.data.corpus import Corpus
from cgr.retrieval.index import ExactVectors


class FactVectors:
    """Args:
    encode: the frozen evidence encoder (texts -> normalised float32 rows), for texts no
        source holds.
    dim: the vectors' dimension.
    sources: (corpus, its cached vectors) pairs; a text found in several reads the first.
    """

    def __init__(
        self,
        encode: Callable[[list[str]], np.ndarray],
        dim: int,
        sources: Sequence[tuple[Corpus, ExactVectors | np.ndarray]] = (),
    ):
        self._encode, self.dim = encode, dim
        self._vectors = [
            v if isinstance(v, ExactVectors) else ExactVectors([v]) for _, v in sources
        ]
        self._rows: dict[str, tuple[int, int]] = {}
        for s, (corpus, vectors) in enumerate(sources):
            if len(vectors) != len(corpus):
                raise ValueError(f"{len(vectors)} vectors for a corpus of {len(corpus)} facts")
            for position, fact in enumerate(corpus.facts):
                self._rows.setdefault(fact.text, (s, position))
        self._encoded: dict[str, np.ndarray] = {}
        self.encoded_texts = 0  # texts the encoder had to run on (none found in a source)

    def __call__(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32, one row per text in order."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        new = [t for t in dict.fromkeys(texts) if t not in self._rows and t not in self._encoded]
        if new:
            self._encoded.update(zip(new, self._encode(new), strict=True))
            self.encoded_texts += len(new)
        by_source: dict[int, tuple[list[int], list[int]]] = {}
        for i, text in enumerate(texts):
            found = self._rows.get(text)
            if found is None:
                out[i] = self._encoded[text]
            else:
                rows, positions = by_source.setdefault(found[0], ([], []))
                rows.append(i)
                positions.append(found[1])
        for s, (rows, positions) in by_source.items():
            out[rows] = self._vectors[s].take(np.asarray(positions))
        return out
