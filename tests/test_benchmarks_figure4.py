"""benchmarks/figure4.py: the paper's Figure-4 quantities on a real tiny CGR run, and the
paired comparison and decision rule on saved rows."""

import pytest

from benchmarks import figure4
from tests.training.helpers import tiny_config

CGR = "cgr.training.cgr_module.CGRModule"


def saved(bits: dict[str, list[int]]) -> dict:
    return {"cells": figure4.cells(), "by_question": bits}


def row(correct: int, incorrect: int) -> list[int]:
    """A question's cells: the same two bits for every metric."""
    return [correct, incorrect] * (1 + len(figure4.READING_ORDERS)) + [1] * len(
        figure4.READING_ORDERS
    )


def test_a_term_that_cuts_only_the_incorrect_hypotheses_is_the_mechanism():
    without = saved({f"q{i}": row(1, 1) for i in range(100)})
    with_ = saved({f"q{i}": row(1, 0 if i < 10 else 1) for i in range(100)})
    right = figure4.compare(without, with_, "open_book_top10_correct")
    wrong = figure4.compare(without, with_, "open_book_top10_any_incorrect")
    assert right["diff"] == 0 and wrong["diff"] == -10 and wrong["lost"] == 10
    assert wrong["p"] == pytest.approx(2 * 0.5**10)
    assert figure4.decision(right, wrong) == "present"
    # the correct hypothesis loses as much: not the mechanism
    both = saved({f"q{i}": row(0 if i < 10 else 1, 0 if i < 10 else 1) for i in range(100)})
    right = figure4.compare(without, both, "open_book_top10_correct")
    wrong = figure4.compare(without, both, "open_book_top10_any_incorrect")
    assert figure4.decision(right, wrong) == "absent"


@pytest.mark.slow
def test_measured_on_a_tiny_cgr_run(tmp_path):
    from cgr.cli import main

    config = tiny_config(tmp_path, CGR, trainer_args={"limit_train_batches": 2})
    assert main(["train", "--config", str(config)]) == 0
    result = figure4.measure(tmp_path / "ckpt" / "best.ckpt", "trained")
    assert result["questions"] > 0 and result["cells"] == figure4.cells()
    assert all(len(bits) == len(result["cells"]) for bits in result["by_question"].values())
    assert all(0 <= v <= 100 for v in result["share"].values())
