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
from cgr.retrieval.fact_vectors import FactVectors


class HypothesisRelevance:
    """`encoder` encodes the facts (and the queries, unless `use_query_model` gave a trained
    query encoder: order `retriever`, where the current retriever ranks the pool)."""

    def __init__(self, encoder: TextEncoder, corpus: Corpus | None = None, cache_dir: str = ""):
        self.encoder = encoder
        self.query_encoder = encoder
        self._queries: dict[str, np.ndarray] = {}  # the last call's only: bounded under serve
        sources = []
        if corpus is not None:
            folder = cache_folder(cache_dir, encoder.model_name, corpus)
            vectors = EmbeddingCache(folder, encoder.model_name, corpus).load_or_build(encoder)
            sources.append((corpus, vectors))
        self._facts = FactVectors(encoder.encode, encoder.dim, sources)

    def use_query_model(self, model) -> None:
        """Encode queries with `model` (a trained query encoder; None: the fact encoder)."""
        self.query_encoder = self.encoder if model is None else self.encoder.with_model(model)
        self._queries = {}

    def _fact_vectors(self, facts: list[RetrievedFact]) -> np.ndarray:
        return self._facts([f.text for f in facts])

    def scores(self, hypotheses: list[str], pools: list[list[RetrievedFact]]) -> list[list[float]]:
        """Per query (a hypothesis or "question choice"), the cosine of each fact of its pool."""
        if not hypotheses:
            return []
        unique = list(dict.fromkeys(hypotheses))
        new = [h for h in unique if h not in self._queries]
        encoded = dict(zip(new, self.query_encoder.encode(new), strict=True))
        self._queries = {h: self._queries[h] if h in self._queries else encoded[h] for h in unique}
        queries = [self._queries[h] for h in hypotheses]
        out = []
        for q, pool in zip(queries, pools, strict=True):
            out.append((self._fact_vectors(pool) @ q).tolist() if pool else [])
        return out


def ranker_relevance(
    name: str, batch_size: int = 64, max_length: int = 128, device=None
) -> HypothesisRelevance:
    """A chain ranker's relevance (`data.chains.rank_encoder`, cgr.chains.ranker): queries and
    pool facts both encoded by it, as it was trained; the model loads on first use."""
    return HypothesisRelevance(TextEncoder(name, batch_size, max_length, device))
