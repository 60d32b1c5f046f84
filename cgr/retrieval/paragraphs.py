"""Paragraph retrievers for IRCoT, behind one interface: BM25 (bm25s) over title + text, and the
package's dense encoder with a FAISS index."""

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
        import bm25s

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

    def retrieve(self, queries: list[str], k: int = 10) -> list[list[CorpusParagraph]]:
        if not queries:
            return []
        _, positions = self.index.search(self.encoder.encode(queries), k)
        return [[self.corpus[int(i)] for i in row if i >= 0] for row in np.asarray(positions)]


def as_paragraph(p: CorpusParagraph) -> Paragraph:
    return Paragraph(p.title, p.text)
