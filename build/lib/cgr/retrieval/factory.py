"""Builds the configured retriever (the `data.retrieval` group of configs/*.yaml)."""

from __future__ import annotations

import logging

from cgr.data.corpus import Corpus
from cgr.errors import CacheMismatchError
from cgr.retrieval.base import Retriever
from cgr.retrieval.config import METHODS, RetrievalConfig
from cgr.retrieval.dense import BeamIterativeRetriever, SearchSource
from cgr.retrieval.embedding_cache import EmbeddingCache, cache_folder
from cgr.retrieval.encoders import TextEncoder
from cgr.retrieval.index import (
    DeviceFlatIndex,
    ExactVectors,
    FaissIndex,
    search_backend,
)
from cgr.retrieval.sparse import BM25Retriever, TfidfRetriever

log = logging.getLogger(__name__)
__all__ = ["METHODS", "RetrievalConfig", "build_retriever", "cached_vectors"]  # config: re-exported


def _dense_source(
    name: str, corpus: Corpus, encoder: TextEncoder, cfg: RetrievalConfig, device=None
) -> SearchSource:
    folder = cache_folder(cfg.cache_dir, cfg.encoder, corpus)
    use_gpu: bool | str = {"true": True, "false": False}.get(str(cfg.use_gpu).lower(), "auto")
    cache = EmbeddingCache(folder, cfg.encoder, corpus)
    if search_backend(cfg.index_spec(), device, use_gpu) == "torch":
        log.info("searching %s exactly on %s (torch; no FAISS GPU build)", name, device)
        return SearchSource(name, corpus, DeviceFlatIndex(cache.load_or_build(encoder), device))
    index = FaissIndex.load_or_build(
        folder,
        lambda: cache.load_or_build(encoder),
        cfg.index_spec(),
        use_gpu,
        exact=cache.exact_vectors,
    )
    return SearchSource(name, corpus, index)


def cached_vectors(cfg: RetrievalConfig, corpus: Corpus) -> ExactVectors | None:
    """The embedding cache's vectors of `corpus` (memory-mapped), or None when they are not all
    on disk yet."""
    cache = EmbeddingCache(cache_folder(cfg.cache_dir, cfg.encoder, corpus), cfg.encoder, corpus)
    try:
        return cache.exact_vectors()
    except CacheMismatchError as e:
        log.info("no cached vectors for %d facts: %s", len(corpus), e)
        return None


def build_retriever(
    cfg: RetrievalConfig, device=None, encoder: TextEncoder | None = None
) -> Retriever | None:
    """`device`: where dense retrieval encodes queries (and searches, see `search_backend`);
    `encoder`: the base encoder to share (it encodes the corpus when its vectors are not
    cached, and the queries unless a trained query encoder replaces it)."""
    if cfg.method in {"none", "gold"}:
        return None
    corpus = Corpus.from_files(cfg.corpus)
    log.info("corpus: %d facts from %s", len(corpus), ", ".join(cfg.corpus))
    if cfg.method == "bm25":
        return BM25Retriever(corpus, k=cfg.beam_size)
    if cfg.method == "tfidf":
        return TfidfRetriever(corpus, k=cfg.beam_size)
    encoder = encoder or TextEncoder(
        cfg.encoder, cfg.encode_batch_size, cfg.max_query_length, device
    )
    main = _dense_source("corpus", corpus, encoder, cfg, device)
    open_book = None
    if cfg.open_book:
        book = Corpus.from_files([cfg.open_book])
        open_book = _dense_source("open_book", book, encoder, cfg, device)
    return BeamIterativeRetriever(
        encoder,
        main,
        beam_size=cfg.beam_size,
        steps=1 if cfg.method == "dense" else cfg.steps,
        open_book=open_book,
        open_book_k=cfg.open_book_k,
        open_book_first_hop=cfg.open_book_first_hop,
        beam_score=cfg.beam_score,
    )
