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
