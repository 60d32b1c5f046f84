"""Sparse baselines behind the same interface: BM25 (bm25s) and TF-IDF (scikit-learn)."""

from __future__ import annotations

import numpy as np

from cgr.data.corpus import Corpus
from cgr.retrieval.base import RetrievedFact


def import_bm25s():
    """bm25s, its logger quieted: the package sets it to DEBUG on import, so every index
    build would print "Building index from IDs" between the user's own lines."""
    import logging

    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s


def _to_facts(corpus: Corpus, positions, scores) -> list[RetrievedFact]:
    out = []
    for pos, score in zip(positions, scores, strict=True):
        if pos < 0 or score <= 0:
            continue
        fact = corpus[int(pos)]
        out.append(RetrievedFact(fact.id, fact.text, float(score), 1, "corpus"))
    return out


class BM25Retriever:
    def __init__(self, corpus: Corpus, k: int = 10):
        bm25s = import_bm25s()
        self._bm25s = bm25s
        self.corpus = corpus
        self.k = min(k, len(corpus))
        self.model = bm25s.BM25()
        self.model.index(
            bm25s.tokenize(corpus.texts, stopwords="en", show_progress=False), show_progress=False
        )

    def retrieve(self, queries: list[str], k: int | None = None) -> list[list[RetrievedFact]]:
        if not queries:
            return []
        k = min(k or self.k, len(self.corpus))
        tokens = self._bm25s.tokenize(queries, stopwords="en", show_progress=False)
        positions, scores = self.model.retrieve(tokens, k=k, show_progress=False)
        return [_to_facts(self.corpus, p, s) for p, s in zip(positions, scores, strict=True)]


class TfidfRetriever:
    def __init__(self, corpus: Corpus, k: int = 10):
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.corpus = corpus
        self.k = min(k, len(corpus))
        self.vectorizer = TfidfVectorizer(stop_words="english", sublinear_tf=True)
        self.matrix = self.vectorizer.fit_transform(corpus.texts)

    def retrieve(self, queries: list[str], k: int | None = None) -> list[list[RetrievedFact]]:
        if not queries:
            return []
        k = min(k or self.k, len(self.corpus))
        scores = (self.vectorizer.transform(queries) @ self.matrix.T).toarray()
        top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        out = []
        for row, cols in enumerate(top):
            order = cols[np.argsort(-scores[row, cols], kind="stable")]
            out.append(_to_facts(self.corpus, order, scores[row, order]))
        return out
