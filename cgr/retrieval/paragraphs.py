"""Paragraph retrievers for the open-QA modes, behind one interface (`retrieve(queries, k)`):
BM25 (bm25s) over title + text, the package's dense encoder with a FAISS index, and CGR's
beam-iterative search over the paragraphs, which returns the best chains of paragraphs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cgr.data.records import OpenQuestion, Paragraph


@dataclass(frozen=True)
class CorpusParagraph:
    title: str
    text: str

    @property
    def searchable(self) -> str:
        return f"{self.title} {self.text}"


@dataclass
class ParagraphChain:
    """Paragraphs in hop order with the concept into each (empty when the retriever has none)
    and the path's score; `grounded`: the last paragraph writes the concept that led to it."""

    paragraphs: tuple[CorpusParagraph, ...]
    links: tuple[str, ...]
    score: float
    grounded: bool = False

    def to_dict(self) -> dict:
        return {"paragraphs": [p.title for p in self.paragraphs], "links": list(self.links),
                "score": round(self.score, 4), "grounded": self.grounded}  # fmt: skip


def paragraphs_of(chains: list[ParagraphChain], k: int) -> list[CorpusParagraph]:
    """The paragraphs of the chains, best chain first and in hop order, without repeats."""
    found: list[CorpusParagraph] = []
    for chain in chains:
        found += [p for p in chain.paragraphs if p not in found]
        if len(found) >= k:
            break
    return found[:k]


def paragraph_corpus(questions: list[OpenQuestion]) -> list[CorpusParagraph]:
    """The pooled, de-duplicated contexts of a dataset (the IRCoT setting without Wikipedia)."""
    seen: dict[tuple[str, str], CorpusParagraph] = {}
    for q in questions:
        for p in q.paragraphs:
            if p.text.strip():
                seen.setdefault((p.title, p.text), CorpusParagraph(p.title, p.text))
    return sorted(seen.values(), key=lambda p: (p.title, p.text))


class BM25ParagraphRetriever:
    def __init__(self, corpus: list[CorpusParagraph]):
        from cgr.retrieval.sparse import import_bm25s

        bm25s = import_bm25s()
        self._bm25s = bm25s
        self.corpus = corpus
        self.model = bm25s.BM25()
        tokens = bm25s.tokenize([p.searchable for p in corpus], stopwords="en", show_progress=False)
        self.model.index(tokens, show_progress=False)

    def retrieve(self, queries: list[str], k: int = 10) -> list[list[CorpusParagraph]]:
        if not queries or not self.corpus:
            return [[] for _ in queries]
        tokens = self._bm25s.tokenize(queries, stopwords="en", show_progress=False)
        k = min(k, len(self.corpus))
        positions, scores = self.model.retrieve(tokens, k=k, show_progress=False)
        return [[self.corpus[int(i)] for i, s in zip(row, srow, strict=True) if s > 0]
                for row, srow in zip(positions, scores, strict=True)]  # fmt: skip


class DenseParagraphRetriever:
    def __init__(self, corpus: list[CorpusParagraph], encoder: str = "minilm"):
        from cgr.retrieval.encoders import TextEncoder
        from cgr.retrieval.index import FaissIndex

        self.corpus = corpus
        self.encoder = TextEncoder(encoder, max_length=256)
        self.index = FaissIndex(self.encoder.encode([p.searchable for p in corpus]), use_gpu="auto")

    def search(self, queries: list[str], k: int = 10) -> list[list[tuple[float, CorpusParagraph]]]:
        """Each query's k best paragraphs with their cosine scores, best first."""
        if not queries:
            return []
        scores, positions = self.index.search(self.encoder.encode(queries), k)
        return [[(float(s), self.corpus[int(i)]) for s, i in zip(srow, row, strict=True) if i >= 0]
                for srow, row in zip(np.asarray(scores), np.asarray(positions), strict=True)]  # fmt: skip

    def retrieve(self, queries: list[str], k: int = 10) -> list[list[CorpusParagraph]]:
        return [[p for _, p in hits] for hits in self.search(queries, k)]


class BeamParagraphRetriever:
    """CGR's beam-iterative retrieval (paper §2.1) over paragraphs: the question retrieves K
    paragraphs, each "question [SEP] paragraph" K more; the K best paths by summed score are
    kept at each step. `retrieve` returns the paragraphs of the best paths in path order (the
    bridge paragraph, then the one it led to), without repeats, `k` in all."""

    def __init__(self, corpus: list[CorpusParagraph], encoder: str = "minilm",
                 beam_size: int = 5, steps: int = 2):  # fmt: skip
        from cgr.data.corpus import Corpus
        from cgr.data.records import fact_id
        from cgr.retrieval.dense import BeamIterativeRetriever, SearchSource
        from cgr.retrieval.encoders import TextEncoder
        from cgr.retrieval.index import FaissIndex

        self.by_id = {fact_id(p.searchable): p for p in corpus}
        facts = Corpus(p.searchable for p in corpus)
        self.encoder = TextEncoder(encoder, max_length=256)
        index = FaissIndex(self.encoder.encode([f.text for f in facts]), use_gpu="auto")
        self.beam = BeamIterativeRetriever(self.encoder, SearchSource("paragraphs", facts, index),
                                           beam_size=beam_size, steps=steps)  # fmt: skip

    def retrieve_chains(self, queries: list[str]) -> list[list[ParagraphChain]]:
        """Each query's paths, best first (no concepts: the beam links by vectors)."""
        return [[ParagraphChain(tuple(self.by_id[i] for i in path), (), score)
                 for score, path in paths] for paths in self.beam.retrieve_paths(queries)]  # fmt: skip

    def retrieve(self, queries: list[str], k: int = 10) -> list[list[CorpusParagraph]]:
        return [paragraphs_of(chains, k) for chains in self.retrieve_chains(queries)]


def as_paragraph(p: CorpusParagraph) -> Paragraph:
    return Paragraph(p.title, p.text)
