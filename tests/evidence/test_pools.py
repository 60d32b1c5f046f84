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


def test_similar_links_key_their_own_chains_and_off_keeps_the_earlier_keys():
    # the key of the default settings before `link_similarity` existed
    assert chain_cache_path(POOL, ChainConfig()).name == "train-0123.chains-6f17aec2eb29.jsonl"
    assert chain_cache_path(POOL, ChainConfig(link_similarity=0.5)) != chain_cache_path(
        POOL, ChainConfig()
    )


def test_a_chain_ranker_keys_the_chains_it_ranks_by_its_weights(tmp_path):
    ranked = ChainConfig(chain_order="open_book", rank_encoder=str(tmp_path))
    (tmp_path / "model.safetensors").write_bytes(b"one")
    first = chain_cache_path(POOL, ranked)
    assert first != chain_cache_path(POOL, ChainConfig(chain_order="open_book"))
    (tmp_path / "model.safetensors").write_bytes(b"two")  # retrained into the same folder
    assert chain_cache_path(POOL, ranked) != first
