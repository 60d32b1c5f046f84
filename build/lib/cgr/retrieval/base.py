"""The one interface all retrievers share: a batch of queries in, scored facts out."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Protocol

from cgr.data.records import text_key


@dataclass
class RetrievedFact:
    """A fact in a question's evidence pool: where it was found and how well it scored."""

    fact_id: str
    text: str
    score: float
    step: int = 1  # retrieval iteration that first found it (1-based)
    source: str = "corpus"  # "corpus" or "open_book"

    def to_dict(self) -> dict:
        return asdict(self)

    def in_open_book(self, open_book: frozenset[str]) -> bool:
        """Found in the open book, or its text is one of the book's (`text_key`s): `source`
        names only the corpus that scored it first, and the corpus may hold the same sentence."""
        return self.source == "open_book" or text_key(self.text) in open_book


class Retriever(Protocol):
    """Dense, beam, BM25 and TF-IDF fact retrievers; IRCoT's paragraph retrievers take the same
    call and return paragraphs."""

    def retrieve(self, queries: list[str], k: int | None = None) -> list[list[RetrievedFact]]:
        """For each query, its evidence pool, best first (at most `k` items; None: as configured)."""
        ...


def merge_pool(pool: dict[str, RetrievedFact], fact: RetrievedFact) -> None:
    """Keep each fact once, with its best score and the earliest step that found it."""
    old = pool.get(fact.fact_id)
    if old is None:
        pool[fact.fact_id] = fact
        return
    if fact.score > old.score:
        old.score = fact.score
        old.source = fact.source
    old.step = min(old.step, fact.step)


def ranked(pool: dict[str, RetrievedFact]) -> list[RetrievedFact]:
    return sorted(pool.values(), key=lambda f: (-f.score, f.fact_id))
