import pytest

from cgr.data.records import Choice, Question
from cgr.errors import ConfigError
from cgr.evidence.pools import gold_pools
from cgr.evidence.relevance import HypothesisRelevance
from cgr.evidence.selection import EvidenceConfig, select_evidence
from cgr.reader.examples import ReaderExample
from cgr.retrieval.base import RetrievedFact
from cgr.retrieval.encoders import TextEncoder


def fact(text, score=0.5):
    return RetrievedFact(text[:8], text, score)


def example(pools, chain_texts=None):
    n = len(pools)
    return ReaderExample("q", "What melts ice?", list("ABCD"[:n]), ["salt", "sand"][:n],
                         ["Salt melts ice.", "Sand melts ice."][:n], answer_index=0, pool=pools,
                         chain_facts=chain_texts or [])  # fmt: skip


@pytest.fixture(scope="module")
def relevance():
    return HypothesisRelevance(TextEncoder("minilm"))


@pytest.mark.parametrize("order", ["hypothesis", "question_choice"])
def test_relevance_orders_put_the_fact_about_the_choice_first(relevance, order):
    pool = [
        fact("the moon orbits the earth", 0.9),
        fact("salt lowers the melting point of ice", 0.1),
    ]
    ex = example([list(pool)])
    select_evidence([ex], EvidenceConfig(order=order), 5, relevance)
    assert ex.facts[0][0].text.startswith("salt lowers")
    kept = example([list(pool)])
    select_evidence([kept], EvidenceConfig(order="retrieval"), 5)  # no scorer needed
    assert kept.facts[0][0].text.startswith("the moon")


def test_chain_facts_stay_first_under_hypothesis_order(relevance):
    pool = [fact("salt lowers the melting point of ice"), fact("oceans are salty water")]
    ex = example([pool], chain_texts=[["oceans are salty water"]])
    select_evidence([ex], EvidenceConfig(order="hypothesis"), 5, relevance)
    assert [f.text for f in ex.facts[0]][0] == "oceans are salty water"
    by_relevance = example([list(pool)], chain_texts=[["oceans are salty water"]])
    cfg = EvidenceConfig(order="hypothesis", chain_facts_first=False)
    select_evidence([by_relevance], cfg, 5, relevance)
    assert by_relevance.facts[0][0].text.startswith("salt lowers")


def test_near_duplicates_are_read_once_and_max_evidence_cuts():
    pool = [fact("Salt melts ice."), fact("salt melts ice"), fact("a"), fact("b"), fact("c")]
    ex = example([pool])
    select_evidence([ex], EvidenceConfig(order="retrieval"), 3)
    assert [f.text for f in ex.facts[0]] == ["Salt melts ice.", "a", "b"]


def test_shared_facts_can_be_dropped():
    shared = fact("ice is frozen water")
    ex = example([[shared, fact("salt is a mineral")], [shared, fact("sand is made of rock")]])
    keep = example([list(p) for p in ex.pool])
    select_evidence([ex], EvidenceConfig(order="retrieval", shared_facts="drop"), 5)
    assert [[f.text for f in p] for p in ex.facts] == [
        ["salt is a mineral"],
        ["sand is made of rock"],
    ]
    select_evidence([keep], EvidenceConfig(order="retrieval"), 5)
    assert keep.facts[0][0] is shared


def test_bad_settings_are_refused():
    with pytest.raises(ConfigError, match="order"):
        EvidenceConfig(order="random")
    with pytest.raises(ConfigError, match="shared_facts"):
        EvidenceConfig(shared_facts="dropp")
    with pytest.raises(ConfigError, match="open_book_first"):
        EvidenceConfig(open_book_first=-1)


def test_open_book_first_offers_the_best_open_book_facts_first(relevance):
    """By text, since the corpus can hold an open-book sentence (its fact then says "corpus")."""
    pool = [fact("the moon orbits the earth", 0.9), fact("salt is a mineral", 0.8),
            fact("Ice melts when it is warm", 0.3), fact("salt lowers the melting point of ice", 0.1),
            RetrievedFact("ob", "rocks are hard", 0.2, source="open_book")]  # fmt: skip
    book = frozenset({"salt lowers the melting point of ice", "ice melts when it is warm"})
    ex = example([list(pool)])
    select_evidence([ex], EvidenceConfig(order="retrieval", open_book_first=2), 5, open_book=book)
    # the first two open-book facts in pool order (the retrieval order), then the pool as it was
    assert [f.text[:9] for f in ex.facts[0]] == ["Ice melts", "salt lowe", "the moon ", "salt is a",
                                                 "rocks are"]  # fmt: skip
    ranked = example([list(pool)], chain_texts=[["salt is a mineral"]])
    cfg = EvidenceConfig(order="question_choice", open_book_first=1)
    select_evidence([ranked], cfg, 5, relevance, open_book=book)
    # Ê first, then the open book's best fact for "What melts ice? salt", then the rest by relevance
    assert [f.text for f in ranked.facts[0][:2]] == [
        "salt is a mineral",
        "salt lowers the melting point of ice",
    ]
    plain = example([list(pool)])
    select_evidence([plain], EvidenceConfig(order="retrieval"), 5, open_book=book)
    assert [f.score for f in plain.facts[0]] == [0.9, 0.8, 0.3, 0.1, 0.2]  # 0: off, pool order


def test_gold_pools_read_gold_facts_and_need_some():
    q = Question("7-1", "What melts ice?", [Choice("A", "salt")], 0, ["salt melts ice"], "x.jsonl")
    bare = Question("7-2", "What is hot?", [Choice("A", "fire")], 0, [], "x.jsonl")
    pools = gold_pools([q, bare], [["h1", "h2"], ["h3"]])
    assert [[f.text for f in p] for p in pools] == [["salt melts ice"], ["salt melts ice"], []]
    with pytest.raises(ConfigError, match="x.jsonl: no question has gold facts"):
        gold_pools([bare], [["h3"]])


def test_selection_leaves_the_pool_as_retrieved_and_can_offer_only_chain_facts():
    pool = [fact("the moon orbits the earth", 0.9), fact("salt lowers the melting point of ice")]
    ex = example([list(pool)], chain_texts=[["salt lowers the melting point of ice"]])
    select_evidence([ex], EvidenceConfig(order="retrieval"), 1)
    assert [f.text for f in ex.facts[0]] == ["salt lowers the melting point of ice"]  # Ê first
    assert ex.pool[0] == pool  # the retrieved pool is not overwritten
    select_evidence([ex], EvidenceConfig(order="retrieval"), 5, chain_facts_only=True)
    assert [f.text for f in ex.facts[0]] == ["salt lowers the melting point of ice"]
    select_evidence([ex], EvidenceConfig(order="retrieval"), 5)  # selecting again: same pool
    assert len(ex.facts[0]) == 2


POOL_TEXTS = [
    "salt lowers the melting point of ice",
    "sand gives tires grip on ice",
    "ice is frozen water",
    "heat melts ice",
    "the moon orbits the earth",
    "oceans are salty water",
    "roads are covered in ice in winter",
    "sugar dissolves in water",
    "a thermometer measures temperature",
    "friction makes surfaces less slippery",
]


def retriever_order(relevance, query_model, chain=(), open_book=frozenset(), max_evidence=6):
    relevance.use_query_model(query_model)
    ex = example([[fact(t) for t in POOL_TEXTS]], chain_texts=[list(chain)])
    select_evidence([ex], EvidenceConfig(order="retriever"), max_evidence, relevance,
                    open_book=open_book)  # fmt: skip
    return [f.text for f in ex.facts[0]]


def test_the_current_query_encoder_decides_the_reading_order(relevance):
    """The authors' pathway: two query encoders read the same pool in two orders."""
    import copy

    import torch

    base = relevance.encoder.model
    other = copy.deepcopy(base)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in other.parameters():
            p.add_(torch.randn(p.shape, generator=generator) * 0.05)
    first = retriever_order(relevance, None)
    assert retriever_order(relevance, base) == first  # the same encoder, the same order
    second = retriever_order(relevance, other)
    assert second != first
    assert first[0] == "salt lowers the melting point of ice"
    relevance.use_query_model(None)


def test_retriever_order_reads_chain_facts_in_rank_order_and_the_open_book_first(relevance):
    from cgr.data.records import text_key

    plain = retriever_order(relevance, None, max_evidence=3)
    chain = ["the moon orbits the earth"]  # ranked low: read because Ê holds it, last
    with_chain = retriever_order(relevance, None, chain=chain, max_evidence=3)
    assert with_chain == [*plain[:2], "the moon orbits the earth"]
    book = frozenset({text_key("sugar dissolves in water")})
    assert retriever_order(relevance, None, open_book=book, max_evidence=3)[0] == (
        "sugar dissolves in water"
    )
