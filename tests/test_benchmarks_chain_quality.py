"""benchmarks/chain_quality.py: a setting's gold-on-best-chain difference, paired per question."""

import benchmarks.chain_quality as chain_quality
import benchmarks.common as common


def test_settings_are_paired_on_their_common_questions(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    name = chain_quality.result_name
    # default finds the gold fact first on q0, q1; similar_links on q1, q2, q3 (q9: its own)
    common.save_result(name("obqa", "dev", "default"),
                       {"question_ids": ["q0", "q1", "q2", "q3"], "on_best": [1, 1, 0, 0]})  # fmt: skip
    common.save_result(name("obqa", "dev", "similar_links"),
                       {"question_ids": ["q0", "q1", "q2", "q3", "q9"], "on_best": [0, 1, 1, 1, 1]})  # fmt: skip
    line = chain_quality.paired_line("obqa", "dev", "similar_links", "default")
    assert line == ("obqa dev, similar_links − default: gold on the best chain +25.0 "
                    "[-56.3, +106.3] points over 4 paired questions (McNemar p = 1)")  # fmt: skip
    common.save_result(name("obqa", "dev", "default"), {"gold_on_best_chain": 0.4})  # saved
    assert chain_quality.paired_line("obqa", "dev", "similar_links", "default") is None  # before


def test_ranker_settings_rank_by_the_ranker_they_are_given():
    config = {"data": {"chains": {"amr": {}, "enabled": True, "workers": None}}}
    cfg = chain_quality.chain_config(config, "similar_links_ranker", "checkpoints/ranker-obqa")
    assert (cfg.rank_encoder, cfg.link_similarity) == ("checkpoints/ranker-obqa", 0.5)
    assert chain_quality.chain_config(config, "default", "checkpoints/r").rank_encoder is None
    assert chain_quality.RANKER.format(dataset="arc") == "checkpoints/ranker-arc"
