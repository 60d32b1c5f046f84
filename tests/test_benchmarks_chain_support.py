"""The AMR role signal benchmarks/chain_support.py measures beside the reader's support."""

import math
from types import SimpleNamespace

import pytest

import benchmarks.chain_support as chain_support
import benchmarks.common as common
from benchmarks.chain_support import auc, gold_reach, role_agreement, role_triples
from cgr.data.records import Chain
from cgr.retrieval.base import RetrievedFact

HYPOTHESIS = "(u / use-01 :ARG1 (t / thermometer) :ARG2 (m / measure-01 :ARG1 (l / length)))"
STATES = "(u / use-01 :ARG1 (t / thermometer) :ARG2 (m / measure-01 :ARG1 (l / length)))"
CONFLICTS = "(u / use-01 :ARG1 (t / thermometer) :ARG2 (m / measure-01 :ARG1 (x / temperature)))"
PARTIAL = "(u / use-01 :ARG1 (t / thermometer) :ARG2 (m / measure-01))"
UNRELATED = "(s / shine-01 :ARG0 (s2 / sun))"


def test_triples_drop_senses_and_keep_roles():
    assert ("measure", ":ARG1", "length") in role_triples(HYPOTHESIS)
    assert ("use", ":ARG2", "measure") in role_triples(HYPOTHESIS)
    assert role_triples("(broken") == set()


def test_a_fact_that_fills_a_role_with_another_argument_scores_below_one_that_leaves_it_open():
    hyp = role_triples(HYPOTHESIS)
    scores = [role_agreement(hyp, [role_triples(g)]) for g in (STATES, PARTIAL, CONFLICTS)]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == 3
    assert scores[0] == 1.0
    assert role_agreement(hyp, [role_triples(UNRELATED)]) == 0.0
    assert role_agreement(set(), [role_triples(STATES)]) == 0.0


def test_auc_counts_ties_as_half():
    assert auc([1.0, 0.5], [0.5, 0.0]) == (1 + 1 + 0.5 + 1) / 4


def test_gold_reach_counts_the_answers_ranked_chains_and_its_pool():
    gold = "a thermometer measures temperature"
    pool = [
        RetrievedFact("g", gold, 0.9, 1, "open_book"),
        RetrievedFact("o", "rain falls", 0.5, 1, "corpus"),
    ]
    chain = Chain(("g",), (), texts=(gold,))
    other = Chain(("o",), (), texts=("rain falls",))
    questions = [SimpleNamespace(answer_index=0, gold_facts=[gold])] * 3
    questions.append(SimpleNamespace(answer_index=0, gold_facts=[]))  # no gold facts: left out
    examples = [SimpleNamespace(chains=[[other, chain], []], pool=[pool, []]),  # 2nd ranked chain
                SimpleNamespace(chains=[[other, other, chain], []], pool=[pool, []]),  # beyond 2
                SimpleNamespace(chains=[[chain], []], pool=[pool[1:], []]),  # counted apart
                SimpleNamespace(chains=[], pool=[pool])]  # fmt: skip
    reach = gold_reach(questions, examples, candidates=2)
    assert reach == {
        "gold_on_ranked_chains": pytest.approx(200 / 3),
        "gold_in_pool": pytest.approx(200 / 3),
    }


def test_support_alone_is_set_beside_the_readers_of_the_same_budget(tmp_path, monkeypatch):
    for module in (common, chain_support):
        monkeypatch.setattr(module, "RESULTS", tmp_path)
    budget = chain_support.BESIDE["obqa"]
    for name, acc in (
        (f"reader-{budget}-s1", 0.50), (f"reader-{budget}-s2", 0.54),
        (f"iterative-{budget}-s1", 0.56), (f"iterative-{budget}-authors-s1", 0.10),
        (f"iterative-{budget}-s1-d2", 0.90), ("reader-q1000-e1-l128-s1", 0.30),
    ):  # fmt: skip
        common.save_result(f"cgr_ablations-obqa-{name}", {"accuracy": acc})
    line = chain_support.readers_line("obqa")
    assert line == "obqa: no facts 52.0 ± 2.8 (2 seeds), iterative 56.0 (1 seed)"
    assert chain_support.readers_line("arc_challenge") is None
    assert chain_support.readers_line("quickstart") is None


def test_two_runs_are_paired_on_their_common_questions(tmp_path, monkeypatch):
    for module in (common, chain_support):
        monkeypatch.setattr(module, "RESULTS", tmp_path)
    # run b ranks the answer first on every question (AUC 1), run a on none (AUC 0.5); q9: b only
    a = [[f"q{i}", 0, [[0.2, 0.1], [0.5], []]] for i in range(8)]  # every chain's support
    b = [[f"q{i}", 0, [[0.9], [0.1], [0.1]]] for i in range(8)] + [["q9", 1, [[0.9], [], []]]]
    common.save_result("chain_support-a", {"chain_support": a})
    common.save_result("chain_support-b", {"chain_support": b})
    line = chain_support.paired_line("a", "b")
    assert line.startswith("b − a (8 paired questions): support AUC +0.500 [+0.500, +0.500]")
    assert "support as the answer +100.0 [+100.0, +100.0] points" in line
    assert "gold fact" not in line  # neither run saved its gold-first questions
    common.save_result("chain_support-c", {"support_auc": 0.6})  # saved before the per-question
    assert chain_support.paired_line("a", "c") is None  # values: nothing to pair
    # the gold fact on the first chain: a finds it on q0, q1; b on q1, q2, q3 (q9: b only)
    order = "supported_first"
    each_a = {"questions": ["q0", "q1", "q2", "q3"], order: [True, True, False, False]}
    each_b = {"questions": ["q0", "q1", "q2", "q3", "q9"], order: [False, True, True, True, True]}
    common.save_result("chain_support-a", {"chain_support": a, "gold_first_each": each_a})
    common.save_result("chain_support-b", {"chain_support": b, "gold_first_each": each_b})
    line = chain_support.paired_line("a", "b")
    assert line.endswith("; gold fact on the first chain (supported first) +25.0 [-56.3, +106.3] "
                         "points over 4 questions")  # fmt: skip


def test_auc_by_ranks_equals_the_pairwise_count():
    import random

    rng = random.Random(1)
    for _ in range(100):
        right = [rng.choice([0.0, 0.2, 0.5, rng.random()]) for _ in range(rng.randint(1, 9))]
        wrong = [rng.choice([0.0, 0.2, 0.5, rng.random()]) for _ in range(rng.randint(1, 9))]
        pairwise = sum((r > w) + 0.5 * (r == w) for r in right for w in wrong)
        assert auc(right, wrong) == pytest.approx(pairwise / (len(right) * len(wrong)))


def test_two_judges_of_the_same_chains_are_also_measured_together(tmp_path, monkeypatch):
    """Each chain's support as the two judges' mean, against the reader's alone; questions
    whose chains differ between the runs are left out."""
    for module in (common, chain_support):
        monkeypatch.setattr(module, "RESULTS", tmp_path)
    # the reader ties the answer with a wrong choice; the support reader prefers the wrong one
    # a little; their mean ranks the answer first on q0..q5 (AUC 0.5 -> 1.0)
    reader = [[f"q{i}", 0, [[0.6], [0.6]]] for i in range(6)] + [["q6", 0, [[0.1], [0.2, 0.3]]]]
    judge = [[f"q{i}", 0, [[0.5], [0.45]]] for i in range(6)] + [["q6", 0, [[0.1], [0.9]]]]
    common.save_result("chain_support-a", {"chain_support": reader, "support_reader": None})
    common.save_result("chain_support-b", {"chain_support": judge, "support_reader": "DIR"})
    line = chain_support.paired_line("a", "b")
    assert line.endswith("; the two judges' mean: support AUC +0.500 [+0.500, +0.500] against "
                         "the reader's (6 questions with the same chains)"), line  # fmt: skip
    common.save_result("chain_support-b", {"chain_support": judge})  # not a support reader's run
    assert "judges' mean" not in chain_support.paired_line("a", "b")


def test_the_margin_ranks_choices_against_the_others_of_their_question():
    from benchmarks.chain_support import margin_auc

    # question 1: the right choice's best chain 0.4, the wrong one's 0.3 (margin +0.1 / -0.1);
    # question 2: right 0.6 against wrong 0.5 and 0.2. Support puts q2's wrong 0.5 above q1's
    # right 0.4; the margins (+0.1 for both right choices) put every right above every wrong
    run = {"chain_support": [["q1", 0, [[0.4, 0.1], [0.3]]],
                             ["q2", 1, [[0.5], [0.6], [0.2, 0.1]]]]}  # fmt: skip
    margin, (diff, low, high), right, wrong, at_cap = margin_auc(run)
    assert (right, wrong, at_cap) == (
        100.0,
        0.0,
        100.0,
    )  # each right choice's margin is +0.1, each wrong's < 0
    assert margin == 1.0
    support = auc([0.4, 0.6], [0.3, 0.5, 0.2])  # 5 of 6 pairs in order
    assert support == pytest.approx(5 / 6) and diff == pytest.approx(1 - 5 / 6)
    assert low <= diff <= high
    assert margin_auc({"chain_support": None}) is None and margin_auc({}) is None


def test_right_at_wrong_is_the_roc_height_at_the_wrong_cap():
    from benchmarks.chain_support import margin_auc, right_at_wrong

    wrong = [0.9, 0.5, 0.4, 0.1]  # at most 50 %: two wrong above the threshold, so it is 0.4
    assert right_at_wrong([0.95, 0.45, 0.41, 0.3], wrong, cap=50.0) == 75.0
    assert right_at_wrong([0.95, 0.45, 0.4, 0.3], wrong, cap=50.0) == 50.0  # a tie is not above
    assert right_at_wrong([0.2, -math.inf], wrong, cap=100.0) == 50.0  # no chain: never shown
    # a right choice with no chain has a margin (0 minus the others' best) but is shown none
    run = {"chain_support": [["q1", 0, [[], [0.3]]], ["q2", 0, [[0.6], [0.5], [0.1]]]]}
    assert margin_auc(run)[4] == 50.0


def test_link_similarity_zero_turns_similar_links_off():
    from argparse import Namespace

    from benchmarks.chain_support import chain_settings

    assert chain_settings(Namespace(link_similarity=0.0, rank_encoder=None)) == {
        "link_similarity": None
    }
    assert chain_settings(Namespace(link_similarity=0.5, rank_encoder="r")) == {
        "link_similarity": 0.5,
        "rank_encoder": "r",
    }
    assert chain_settings(Namespace(link_similarity=None, rank_encoder=None)) == {}


def test_the_search_order_is_paired_only_where_the_runs_ranked_chains_apart(tmp_path, monkeypatch):
    for module in (common, chain_support):
        monkeypatch.setattr(module, "RESULTS", tmp_path)
    rows = [[f"q{i}", 0, [[0.6], [0.4]]] for i in range(4)]

    def run(ranker: str, search: list[bool]) -> dict:
        each = {"questions": [f"q{i}" for i in range(4)], "supported_first": [True] * 4,
                "search": search}  # fmt: skip
        return {"chain_support": rows, "rank_encoder": ranker, "gold_first_each": each}

    common.save_result("chain_support-a", run("R1", [True, False, False, False]))
    common.save_result("chain_support-b", run("R3", [True, True, True, False]))
    line = chain_support.paired_line("a", "b")
    assert "(supported first) +0.0" in line
    assert "; gold fact on the first chain (search) +50.0 [" in line, line
    common.save_result("chain_support-b", run("R1", [True, True, True, False]))
    assert "(search)" not in chain_support.paired_line("a", "b")  # one chain search


def test_the_auc_is_split_by_the_readers_answer(tmp_path, monkeypatch):
    for module in (common, chain_support):
        monkeypatch.setattr(module, "RESULTS", tmp_path)
    # q0, q1: support ranks the answer first; q2, q3: a wrong choice first
    rows = [["q0", 0, [[0.9], [0.1]]], ["q1", 1, [[0.2], [0.7]]],
            ["q2", 0, [[0.1], [0.8]]], ["q3", 1, [[0.6], []]]]  # fmt: skip
    run = {"chain_support": rows, "checkpoint": "checkpoints/bench/run-s1/best.ckpt"}
    assert chain_support.auc_by_reader(run) is None  # no answers saved anywhere
    # the checkpoint's own dev answers, kept beside its result: right on q0 and q2
    answers = {"q0": [True, None], "q1": [False, None], "q2": [True, None], "q3": [False, True]}
    common.save_result("answers-run-s1", {"run": "run-s1", "answers": answers})
    split = chain_support.auc_by_reader(run)
    # q0, q2: right choices' support 0.9, 0.1 against the wrong ones' 0.1, 0.8 (a tie counts
    # half); margins 0.8, -0.7 against -0.8, 0.7
    assert split[True] == (2, 2.5 / 4, 3 / 4)
    assert split[False] == (2, 2 / 4, 1 / 4)  # q1, q3: 0.7, 0 (no chain) against 0.2, 0.6
    # the run's own reader answers come first: right on q0 and q1, where support is right too
    run["reader_answers"] = {"q0": True, "q1": True, "q2": False, "q3": False}
    split = chain_support.auc_by_reader(run)
    assert split[True] == (2, 1.0, 1.0) and split[False] == (2, 0.0, 0.0)
    common.save_result("chain_support-x", run)
    assert chain_support.by_reader_text("chain_support-x") == "x 1.00 / 1.00 (2) | 0.00 / 0.00 (2)"


def test_the_chain_orders_are_split_by_the_readers_answer():
    each = {"questions": ["q0", "q1", "q2"], "support": [False, True, False],
            "supported_first": [True, True, False], "search": [True, True, True]}  # fmt: skip
    run = {"gold_first_each": each, "reader_answers": {"q0": True, "q1": True, "q2": False}}
    assert chain_support.orders_by_reader(run) == (
        "; 50.0 / 100.0 / 100.0 on the 2 the reader answers right, "
        "0.0 / 0.0 / 100.0 on the 1 the reader answers wrong"
    )
    assert chain_support.orders_by_reader({"gold_first_each": each}) == ""  # no answers saved
