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


def test_a_support_reader_is_measured_on_the_chains_against_the_chain_score(capsys, tmp_path,
                                                                            monkeypatch):  # fmt: skip
    """A judge that gives the probability to the choice whose word its fact names: the right
    choice's chain through the gold fact supports it, the wrong choice's link-word chain does
    not, so support tells them apart where the chain score (retrieval) ranks the wrong one
    higher, and the gold fact's chain is shown first though the search ranked it second."""
    import torch

    from cgr.data.records import Chain
    from cgr.reader.examples import ReaderExample
    from cgr.retrieval.base import RetrievedFact

    class WordJudge(torch.nn.Module):
        device = "cpu"

        def encode(self, batch, device):
            return batch

        def forward(self, batch):
            return torch.tensor([[4.0 if c in facts[0].text else 0.0
                                  for c, facts in zip(ex.choices, ex.facts, strict=True)]
                                 for ex in batch])  # fmt: skip

    gold = RetrievedFact("g", "a thermometer measures heat", 0.5)
    link = RetrievedFact("l", "a tool can measure length", 0.9)
    examples = []
    for n in range(4):
        chain_gold, chain_link = (
            Chain((f.fact_id,), ("measure",), (f.text,)) for f in (gold, link)
        )
        examples.append(ReaderExample(
            f"q{n}", "What measures heat?", ["A", "B", "C"], ["thermometer", "ruler", "scale"],
            ["h0", "h1", "h2"], answer_index=0,
            chains=[[chain_link, chain_gold], [chain_link], [chain_link]],
            pool=[[gold, link], [link], [link]], gold_facts=[gold.text]))  # fmt: skip
    measured = chain_quality.support_measures(examples, WordJudge(), resamples=50)
    assert measured["auc"] == 1.0 and measured["chain_score_auc"] == 0.5
    assert measured["auc_diff"][0] == 0.5
    assert (measured["right_supported"], measured["wrong_supported"]) == (100.0, 0.0)
    assert measured["as_answer"] == 100.0
    assert (measured["gold_first"], measured["gold_first_search"]) == (100.0, 0.0)
    # the answer's margin 0.96 - 1/3 (a link-word chain gives every choice a third), the
    # wrong choices' below 0: every right choice is marked before any wrong one
    assert measured["margin_auc"] == 1.0 and measured["right_at_wrong_cap"] == 100.0
    assert measured["best_support"][0][:2] == ["q0", 0]
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    name = chain_quality.result_name("obqa", "dev", "default")
    old = {k: v for k, v in measured.items() if k not in ("margin_auc", "right_at_wrong_cap")}
    common.save_result(name, {"support_reader": old,  # saved before the margin was measured
                              "support_reader_info": {"folder": "s", "rows": 8, "epochs": 1,
                                                      "base_model": "minilm"}})  # fmt: skip
    # a second judge of the same chains, saved apart (--judge-name big)
    common.save_result(f"{name}-judge-big", {"support_reader": measured, "support_reader_info": {
        "folder": "b", "rows": 4, "epochs": 1, "base_model": "/models/all-mpnet-base-v2"}})  # fmt: skip
    chain_quality.support_table(["obqa"], "dev", ["default"])
    out = capsys.readouterr().out
    assert "| default | s: minilm, 8 rows, 1 ep. | 1.00 / 0.50 | +0.50 [" in out
    assert "| – | – |" in out
    assert "| default | b: all-mpnet-base-v2, 4 rows, 1 ep. | 1.00 / 0.50 | +0.50 [" in out
    assert "| 1.00 | 100.0 |" in out
