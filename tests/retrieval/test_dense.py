"""Beam iterative retrieval on a hand-built corpus whose second-hop fact is reachable only
through the first-hop fact."""

import pytest

from cgr.data.corpus import Corpus
from cgr.retrieval.dense import BeamIterativeRetriever, SearchSource
from cgr.retrieval.index import FaissIndex

HYPOTHESIS = "A glorp can light a bulb."
FIRST_HOP = "a glorp is a kind of battery"
SECOND_HOP = "a battery is a source of electricity"
FACTS = [
    FIRST_HOP,
    SECOND_HOP,
    "a bulb is made of glass",
    "a bulb can break when it falls",
    "a tree grows leaves in spring",
    "the ocean is salty",
    "a cat sleeps most of the day",
]


@pytest.fixture(scope="module")
def source(encoder):
    corpus = Corpus(FACTS)
    return SearchSource("corpus", corpus, FaissIndex(encoder.encode(corpus.texts), use_gpu=False))


def texts(pool):
    return [f.text for f in pool]


def test_second_hop_fact_needs_the_second_step(encoder, source):
    single = BeamIterativeRetriever(encoder, source, beam_size=2, steps=1).retrieve([HYPOTHESIS])[0]
    assert FIRST_HOP in texts(single) and SECOND_HOP not in texts(single)
    beam = BeamIterativeRetriever(encoder, source, beam_size=2, steps=2).retrieve([HYPOTHESIS])[0]
    found = {f.text: f for f in beam}
    assert SECOND_HOP in found and found[SECOND_HOP].step == 2 and found[FIRST_HOP].step == 1
    assert set(texts(single)) <= set(found)  # the pool keeps every step's facts


def test_one_search_call_per_step_for_the_whole_batch(encoder, source):
    retriever = BeamIterativeRetriever(encoder, source, beam_size=2, steps=3)
    pools = retriever.retrieve([HYPOTHESIS, "The ocean is salty.", "A cat is sleeping."])
    assert retriever.search_calls == 3 and len(pools) == 3
    assert all(p == sorted(p, key=lambda f: (-f.score, f.fact_id)) for p in pools)
    assert all(len({f.fact_id for f in p}) == len(p) for p in pools)


def test_batched_equals_one_by_one(encoder, source):
    queries = [HYPOTHESIS, "A bulb is fragile."]
    retriever = BeamIterativeRetriever(encoder, source, beam_size=2, steps=2)
    together = retriever.retrieve(queries)
    alone = [retriever.retrieve([q])[0] for q in queries]
    assert [texts(p) for p in together] == [texts(p) for p in alone]


def test_open_book_seeds_the_first_hop(encoder, source):
    book = Corpus(["a glorp is a kind of battery", "stars are far away"])
    open_book = SearchSource(
        "open_book", book, FaissIndex(encoder.encode(book.texts), use_gpu=False)
    )
    retriever = BeamIterativeRetriever(
        encoder, source, beam_size=2, steps=2, open_book=open_book, open_book_k=1
    )
    pool = retriever.retrieve([HYPOTHESIS])[0]
    by_text = {f.text: f for f in pool}
    assert retriever.search_calls == 3  # corpus + open book at step 1, corpus at step 2
    assert SECOND_HOP in by_text and by_text[SECOND_HOP].step == 2


def test_an_approximate_index_with_rerank_retrieves_like_flat_from_the_config(tmp_path, encoder):
    """`data.retrieval.index: ivfpq` with `index_rerank`: the saved PQ index finds candidates,
    the embedding cache's float vectors (memory-mapped) score them; on the sample corpus the
    pools equal exact search's, scores included."""
    from cgr.evidence.pools import pool_cache_key
    from cgr.retrieval.factory import RetrievalConfig, build_retriever

    corpus = ["data/sample/facts.txt", "data/sample/openbook.txt"]  # PQ trains on >= 256
    flat = RetrievalConfig(method="dense", corpus=corpus, cache_dir=str(tmp_path))
    pq = RetrievalConfig(method="dense", corpus=corpus, cache_dir=str(tmp_path), index="ivfpq",
                         index_nlist=4, index_nprobe=4, index_pq_m=8, index_rerank=40)  # fmt: skip
    hypotheses = ["a solar panel makes electricity from sunlight", "an animal needs food"]
    exact = build_retriever(flat).retrieve(hypotheses, 5)
    reranked = build_retriever(pq).retrieve(hypotheses, 5)
    compressed = build_retriever(RetrievalConfig(**{**pq.__dict__, "index_rerank": 0}))
    assert [texts(p) for p in compressed.retrieve(hypotheses, 5)] != [texts(p) for p in exact]
    assert [texts(p) for p in reranked] == [texts(p) for p in exact]
    for a, b in zip(reranked, exact, strict=True):
        assert [f.score for f in a] == pytest.approx([f.score for f in b], abs=1e-5)
    # index tuning is part of an approximate pool's cache key, not of an exact one
    assert pool_cache_key([], pq) != pool_cache_key(
        [], RetrievalConfig(**{**pq.__dict__, "index_rerank": 0})
    )
    assert pool_cache_key([], flat) == pool_cache_key(
        [], RetrievalConfig(**{**flat.__dict__, "index_nprobe": 4})
    )
