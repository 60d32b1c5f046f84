"""The parser score the chain search sees (benchmarks/amr_parser.py), on hand-written AMRs."""

import pytest

from benchmarks.amr_parser import concept_scores

GOLD = "(u / use-01 :ARG1 (t / thermometer) :ARG2 (m / measure-01 :ARG1 (t2 / temperature)))"
# the root put on the measuring: "use" (the gold root) now links, "measure" no longer does
WRONG_ROOT = "(m / measure-01 :ARG0 (t / thermometer) :ARG1 (t2 / temperature) :ARG2 (u / use-01))"


def test_a_perfect_parse_scores_one_and_a_wrong_root_swaps_the_linked_concepts():
    perfect = concept_scores([GOLD], [GOLD])
    assert perfect == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "root_accuracy": 1.0}
    # gold: {thermometer, measure, temperature}; parsed: {thermometer, temperature, use}
    wrong = concept_scores([WRONG_ROOT], [GOLD])
    assert wrong["precision"] == pytest.approx(2 / 3) and wrong["recall"] == pytest.approx(2 / 3)
    assert wrong["root_accuracy"] == 0.0
    # with every root linking the concept sets are equal: only the root was wrong
    assert concept_scores([WRONG_ROOT], [GOLD], merge_roots=True)["f1"] == 1.0


def test_a_failed_parse_finds_nothing():
    assert concept_scores([None], [GOLD]) == {
        "precision": 0.0, "recall": 0.0, "f1": 0.0, "root_accuracy": 0.0
    }  # fmt: skip
