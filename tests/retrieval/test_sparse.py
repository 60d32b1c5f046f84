import logging

import pytest

from cgr.data.corpus import Corpus
from cgr.retrieval.sparse import BM25Retriever, TfidfRetriever

FACTS = [
    "copper is a metal",
    "metal conducts electricity",
    "a cat sleeps",
    "the ocean is salty",
    "rain falls from clouds",
]


@pytest.mark.parametrize("cls", [BM25Retriever, TfidfRetriever])
def test_lexical_match_ranks_first(cls):
    retriever = cls(Corpus(FACTS), k=3)
    pools = retriever.retrieve(["Copper is made of what metal?", "Where does rain come from?"])
    assert pools[0][0].text == "copper is a metal"
    assert pools[1][0].text == "rain falls from clouds"
    assert all(len(p) <= 3 for p in pools)
    assert all(a.score >= b.score for p in pools for a, b in zip(p, p[1:], strict=False))


@pytest.mark.parametrize("cls", [BM25Retriever, TfidfRetriever])
def test_query_without_overlap_gets_an_empty_pool(cls):
    assert cls(Corpus(FACTS), k=3).retrieve(["zzz qqq"]) == [[]]


def test_building_an_index_prints_no_debug_lines():
    # bm25s sets its own logger to DEBUG on import, and a record passes every handler of the
    # root logger (cgr's commands log there at INFO, with a handler of no level of its own)
    seen: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = seen.append
    logging.getLogger().addHandler(handler)
    try:
        BM25Retriever(Corpus(FACTS), k=3).retrieve(["copper"])
    finally:
        logging.getLogger().removeHandler(handler)
    assert not [r for r in seen if r.name.startswith("bm25s")]
