"""Relevance of a pool fact to one answer choice: cosine(query, fact) under the evidence encoder,
the query being the choice's hypothesis or "question choice". Why: a beam pool mixes scores of
different queries (step 1: the hypothesis; step 2: hypothesis + a first fact), so retrieval
scores do not rank facts by what they say about the choice. Corpus facts reuse the cached
corpus vectors; other texts are encoded once and kept; the last call's queries are kept for the
next call (chain selection and evidence selection ask for the same ones)."""

from __future__ import annotations

import numpy as np

from cgr.data.corpus import Corpus
from cgr.retrieval.base import RetrievedFact
from cgr.retrieval.embedding_cache import EmbeddingCache, cache_folder
from cgr.retrieval.encoders import TextEncoder


class HypothesisRelevance:
    def __init__(self, encoder: TextEncoder, corpus: Corpus | None = None, cache_dir: str = ""):
        self.encoder = encoder
        self._vectors: dict[str, np.ndarray] = {}
        self._queries: dict[str, np.ndarray] = {}  # the last call's only: bounded under serve
        self._corpus, self._corpus_vectors = corpus, None
        if corpus is not None:
            folder = cache_folder(cache_dir, encoder.model_name, corpus)
            self._corpus_vectors = EmbeddingCache(folder, encoder.model_name, corpus).load_or_build(
                encoder
            )

    def _fact_vectors(self, facts: list[RetrievedFact]) -> np.ndarray:
        missing = []
        for f in facts:
            if f.fact_id in self._vectors:
                continue
            if self._corpus is not None and f.fact_id in self._corpus:
                self._vectors[f.fact_id] = self._corpus_vectors[self._corpus.position(f.fact_id)]
            else:
                missing.append(f)
        if missing:
            encoded = self.encoder.encode([f.text for f in missing])
            self._vectors.update({f.fact_id: v for f, v in zip(missing, encoded, strict=True)})
        return np.stack([self._vectors[f.fact_id] for f in facts])

    def scores(self, hypotheses: list[str], pools: list[list[RetrievedFact]]) -> list[list[float]]:
        """Per query (a hypothesis or "question choice"), the cosine of each fact of its pool."""
        if not hypotheses:
            return []
        unique = list(dict.fromkeys(hypotheses))
        new = [h for h in unique if h not in self._queries]
        encoded = dict(zip(new, self.encoder.encode(new), strict=True))
        self._queries = {h: self._queries[h] if h in self._queries else encoded[h] for h in unique}
        queries = [self._queries[h] for h in hypotheses]
        out = []
        for q, pool in zip(queries, pools, strict=True):
            out.append((self._fact_vectors(pool) @ q).tolist() if pool else [])
        return out
