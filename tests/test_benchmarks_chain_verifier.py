"""The chain verifier benchmarks/chain_verifier.py fits: its stored weights score as the fitted
model does, and its threshold and measures count what they say."""

import math
import random
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from benchmarks.chain_verifier import FEATURES, best_scores, calibrate, evaluate, fit, verify
from cgr.data.records import Chain


def rows(n: int, positive: bool, rng: random.Random) -> list[list[float]]:
    shift = 1.0 if positive else 0.0
    return [[rng.gauss(shift, 0.5) for _ in FEATURES] for _ in range(n)]


def test_stored_weights_score_as_the_fitted_model():
    rng = random.Random(0)
    x = rows(60, True, rng) + rows(60, False, rng)
    y = [1] * 60 + [0] * 60
    verifier = fit(x, y)
    assert all(math.isfinite(w) for w in verifier["weights"])
    assert verifier["features"] == list(FEATURES)
    arr = np.asarray(x)
    model = LogisticRegression(C=1.0, max_iter=1000, class_weight="balanced")
    model.fit((arr - arr.mean(0)) / (arr.std(0) + 1e-9), y)
    expected = model.predict_proba((arr - arr.mean(0)) / (arr.std(0) + 1e-9))[:, 1]
    assert [verify(verifier, r) for r in x] == pytest.approx(expected.tolist(), abs=1e-9)
    # separable data: positives score above negatives on average
    assert sum(verify(verifier, r) for r in x[:60]) > sum(verify(verifier, r) for r in x[60:])


def question(answer: int, gold: str) -> SimpleNamespace:
    return SimpleNamespace(answer_index=answer, gold_facts=[gold])


def test_threshold_and_measures_on_a_hand_made_question():
    # two choices, right = 0; its best chain (index 1) holds the gold fact
    ex = SimpleNamespace(chains=[[Chain(("a",), ("q", "x"), ("Plants need water.",)),
                                  Chain(("g",), ("q", "y"), ("Heat melts ice.",))],
                                 [Chain(("b",), ("q", "z"), ("Salt is white.",))]])  # fmt: skip
    features = [[[[0.2], [0.9]], [[0.4]]]]
    best = best_scores(features, lambda r: r[0])
    assert best == [[(0.9, 1), (0.4, 0)]]
    q = question(0, "Heat melts ice.")
    assert calibrate(best, [q]) == pytest.approx(0.9)  # right at 0.9 kept, wrong at 0.4 dropped
    measured = evaluate([q], [ex], best, 0.5)
    assert measured["auc"] == 1.0 and measured["gold_first"] == 100.0
    assert (measured["right_supported"], measured["wrong_supported"]) == (100.0, 0.0)
    assert measured["answer_accuracy"] == 100.0
    # the wrong choice's chain scored higher: it is answered, and the gold chain is not first
    flipped = best_scores([[[[0.9], [0.2]], [[0.95]]]], lambda r: r[0])
    measured = evaluate([q], [ex], flipped, 0.5)
    assert measured["answer_accuracy"] == 0.0 and measured["gold_first"] == 0.0


def test_each_signal_against_support_is_paired_per_question():
    from benchmarks.chain_verifier import paired_answer

    row = {"signals": {"support": {"answered": [1, 1, 0, 0, 1]},
                       "verifier": {"answered": [1, 0, 1, 1, 1]},
                       "support_reader": {"answered": [0, 1, 0, 0, 1]}}}  # fmt: skip
    verifier, reader = paired_answer(row)
    assert (
        verifier.startswith("verifier − support as the answer: +20.0 [") and "5 paired" in verifier
    )
    assert reader.startswith("support_reader − support as the answer: -20.0 [")
    assert paired_answer({"signals": {"support": {}, "verifier": {}}}) == []


def test_a_support_reader_adds_its_signal_read_from_the_last_feature():
    from benchmarks.chain_verifier import (
        FEATURES,
        MARGIN,
        SUPPORT_READER,
        SUPPORT_READER_MARGIN,
        fit,
        signals,
    )

    rows = [[float(i % 2), 0.5 * (i % 2)] + [float(i % 2)] * (len(FEATURES) - 2)
            + [0.1 + 0.8 * (i % 2), 0.3 * (i % 2)] for i in range(20)]  # fmt: skip
    verifier = fit(rows, [i % 2 for i in range(20)],
                   FEATURES + (SUPPORT_READER, SUPPORT_READER_MARGIN))  # fmt: skip
    judged = signals(verifier)
    assert set(judged) == {"support", MARGIN, "verifier", SUPPORT_READER, SUPPORT_READER_MARGIN}
    assert judged[SUPPORT_READER](rows[1]) == 0.9 and judged["support"](rows[1]) == 1.0
    assert judged[MARGIN](rows[1]) == 0.5 and judged[SUPPORT_READER_MARGIN](rows[1]) == 0.3
    assert SUPPORT_READER not in signals({"features": list(FEATURES)})
    # a run saved before the margin was a signal named its feature otherwise: no margin row
    assert MARGIN not in signals({"features": ["support", "contrast"]})


def test_margins_in_the_verifier_rows_are_the_packages():
    from benchmarks.chain_verifier import chain_features
    from cgr.evaluation.support import margins

    chain = Chain(("a",), ("q", "x"), ("Plants need water.",))
    ex = SimpleNamespace(chains=[[chain, chain], [chain]], pool=None)
    support = [[0.7, 0.2], [0.4]]
    feats = chain_features([ex], [support], candidates=10)[0]
    assert [[r[1] for r in rows] for rows in feats] == margins(support)
    assert margins(support) == [[pytest.approx(0.3), pytest.approx(-0.2)], [pytest.approx(-0.3)]]


def test_each_signal_pairs_its_auc_with_supports_where_saved():
    from benchmarks.chain_verifier import paired_answer

    best = [[0, [0.9, 0.5]], [1, [0.6, 0.4]], [0, [0.7, 0.2]]]
    sharper = [[0, [0.4, -0.4]], [1, [0.2, -0.2]], [0, [0.5, -0.5]]]
    row = {"signals": {"support": {"answered": [1, 0, 1], "best": best},
                       "margin": {"answered": [1, 0, 1], "best": sharper}}}  # fmt: skip
    (line,) = paired_answer(row)
    # support: right 0.9 0.4 0.7 against wrong 0.5 0.6 0.2, 7 of 9 pairs in order; margin:
    # right 0.4 -0.2 0.5 against wrong -0.4 0.2 -0.5, 8 of 9; the same answers
    assert "+0.0 [" in line and "AUC right vs wrong +0.111 [" in line


def test_a_choice_without_chains_has_the_margin_margins_gives_it():
    """A chainless choice once scored margin 0, above every choice whose chains another
    choice's outdo: it must score 0 minus the other choices' best support."""
    from benchmarks.chain_verifier import MARGIN, MARGIN_OF

    # choice 0: a chain of support 0.6 (margin +0.2); 1: none; 2: support 0.4 (margin -0.2)
    features = [[[[0.6, 0.2]], [], [[0.4, -0.2]]]]
    best = best_scores(features, lambda r: r[1], MARGIN_OF[MARGIN])
    assert best == [[(0.2, 0), (-0.6, None), (-0.2, 0)]]
    assert best_scores(features, lambda r: r[0])[0][1] == (0.0, None)  # support: 0
