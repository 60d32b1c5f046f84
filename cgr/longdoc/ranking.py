"""Ranking a document's own paragraphs (or sections) for a question, without an LM: the
package's dense encoder (cosine) or BM25. Used by the PARAGRAPH baseline, D3's dense
re-ranking and its fallback. Vectors are kept per document, so a paper's questions share them."""

from __future__ import annotations

import numpy as np


class DocumentRanker:
    def __init__(self, kind: str = "dense", encoder: str = "minilm"):
        self.kind = kind
        self._encoder = None
        self._encoder_name = encoder
        self._vectors: dict[tuple[str, str], np.ndarray] = {}

    def _encode(self, texts: list[str]) -> np.ndarray:
        if self._encoder is None:
            from cgr.retrieval.encoders import TextEncoder

            self._encoder = TextEncoder(self._encoder_name, max_length=256)
        return self._encoder.encode(texts)

    def rank(
        self, question: str, texts: list[str], key: tuple[str, str] | None = None
    ) -> list[int]:
        """Positions of `texts` from most to least relevant (`key` names the text list, e.g.
        (document id, "paragraphs"), so its vectors are computed once)."""
        if not texts:
            return []
        if self.kind == "bm25":
            return self._bm25(question, texts)
        vectors = self._vectors.get(key) if key else None
        if vectors is None:
            vectors = self._encode(texts)
            if key:
                self._vectors[key] = vectors
        scores = vectors @ self._encode([question])[0]
        return [int(i) for i in np.argsort(-scores, kind="stable")]

    @staticmethod
    def _bm25(question: str, texts: list[str]) -> list[int]:
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

        from cgr.retrieval.sparse import import_bm25s

        bm25s = import_bm25s()

        # scikit-learn's list: bm25s's own "en" list keeps question words ("how", "many", "were")
        stop = sorted(ENGLISH_STOP_WORDS)
        model = bm25s.BM25()
        model.index(bm25s.tokenize(texts, stopwords=stop, show_progress=False), show_progress=False)
        query = bm25s.tokenize([question], stopwords=stop, show_progress=False)
        if not query.vocab:  # only stop words: no ranking, keep reading order
            return list(range(len(texts)))
        positions, _ = model.retrieve(query, k=len(texts), show_progress=False)
        return [int(i) for i in positions[0]]
