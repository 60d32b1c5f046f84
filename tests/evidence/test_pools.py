"""Where the chains searched over a cached pool are kept: one file per ranking of the pool's
facts, so a run reading another evidence order does not read chains ranked for this one."""

from pathlib import Path

from cgr.chains.builder import ChainConfig
from cgr.evidence.pools import chain_cache_path

POOL = Path("cache/train-0123.jsonl")


def test_the_evidence_order_keys_the_chains_where_it_ranks_their_facts():
    ranked = ChainConfig(chain_order="open_book")
    default = chain_cache_path(POOL, ranked)
    assert chain_cache_path(POOL, ranked, "question_choice") == default  # earlier keys hold
    assert chain_cache_path(POOL, ranked, "retriever") != default
    assert chain_cache_path(POOL, ranked, "retriever").parent == POOL.parent
    by_length = ChainConfig(chain_order="length")  # no relevance: one ranking
    assert chain_cache_path(POOL, by_length, "retriever") == chain_cache_path(POOL, by_length)
