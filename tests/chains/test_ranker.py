"""The chain ranker (cgr.chains.ranker): its training pairs and batches, a real fit of the base
encoder, the `cgr ranker` command's errors, and the setting that lets it rank the chains."""

import json

import numpy as np
import pytest

from cgr.chains.builder import ChainConfig
from cgr.chains.ranker import (
    RANKER_FILE,
    RankerConfig,
    batches,
    fingerprint,
    ranker_pairs,
    train_ranker,
    with_hard_negatives,
)
from cgr.cli import main as cli_main
from cgr.data.records import Choice, Question
from cgr.errors import ConfigError
from cgr.retrieval.encoders import TextEncoder


def question(qid: str, stem: str, choices: list[str], answer: int | None, gold: list[str]):
    labels = "ABCD"
    return Question(qid, stem, [Choice(labels[i], c) for i, c in enumerate(choices)], answer, gold)


def test_pairs_ask_what_the_chain_order_asks_for_each_gold_fact_of_a_right_answer():
    qs = [
        question("1", "What measures heat?", ["a ruler", "a thermometer"], 1,
                 ["a thermometer measures temperature", "heat is temperature",
                  "a thermometer measures temperature"]),
        question("2", "Unlabelled?", ["x", "y"], None, ["a fact"]),
        question("3", "No gold?", ["x", "y"], 0, []),
    ]  # fmt: skip
    assert ranker_pairs(qs) == [
        ("What measures heat? a thermometer", "a thermometer measures temperature"),
        ("What measures heat? a thermometer", "heat is temperature"),
    ]


def test_batches_hold_every_pair_once_and_never_one_fact_twice():
    pairs = [(f"q{i}", f"fact{i % 3}") for i in range(10)]
    out = batches(pairs, 4, seed=1)
    assert sorted(p for b in out for p in b) == sorted(pairs)
    assert all(len(b) <= 4 and len({f for _, f in b}) == len(b) for b in out)
    assert out == batches(pairs, 4, seed=1)  # seeded
    # two gold facts of one query never share a batch: each would be the other's negative
    same = [("q", "f1"), ("q", "f2"), ("r", "f3")]
    assert all(len({q for q, _ in b}) == len(b) for b in batches(same, 3, 0))


def test_ranker_config_is_checked():
    with pytest.raises(ConfigError, match="ranker lr"):
        RankerConfig(lr=0)
    with pytest.raises(ConfigError, match="ranker batch_size"):
        RankerConfig(batch_size=0)
    with pytest.raises(ConfigError, match="rank_encoder"):
        ChainConfig(rank_encoder=" ")


PAIRS = [
    ("Which tool measures temperature? a thermometer", "a thermometer measures temperature"),
    ("What do plants need to grow? sunlight", "plants need sunlight to grow"),
    ("What do magnets attract? iron", "magnets attract iron"),
    ("What causes rust? water", "water causes iron to rust"),
]


def margins(name: str) -> np.ndarray:
    """For each query, cosine to its gold fact minus the mean cosine to the other pairs' facts,
    under the encoder `name`: what the ranker is trained to widen."""
    encoder = TextEncoder(name)
    queries = encoder.encode([q for q, _ in PAIRS])
    facts = encoder.encode([f for _, f in PAIRS])
    sims = queries @ facts.T
    others = (sims.sum(1) - np.diag(sims)) / (len(PAIRS) - 1)
    return np.diag(sims) - others


@pytest.mark.slow
def test_a_fit_puts_each_gold_fact_further_ahead_and_saves_a_ranker(tmp_path):
    """A real Lightning fit of the MiniLM wheel: after it, every query's gold fact is further
    ahead of the other facts than before, and the folder loads as a ranker."""
    before = margins("minilm")
    out = tmp_path / "ranker"
    cfg = RankerConfig(epochs=4, batch_size=4, lr=1e-4)
    info = train_ranker(PAIRS, "minilm", out, cfg, accelerator="cpu", devices=1)
    assert info["pairs"] == len(PAIRS)
    assert json.loads((out / RANKER_FILE).read_text())["epochs"] == 4
    after = margins(str(out))
    assert (after > before).all(), (before, after)
    # the chain cache key follows the weights, not the folder's name
    assert fingerprint(str(out)).startswith(f"{out}@")
    assert fingerprint("sentence-transformers/all-MiniLM-L6-v2") == (
        "sentence-transformers/all-MiniLM-L6-v2"
    )


def test_the_command_says_what_is_wrong_before_any_model_loads(tmp_path, capsys):
    train = tmp_path / "train.jsonl"
    train.write_text(json.dumps({"id": "q1", "question": {"stem": "Why?", "choices": [
        {"label": "A", "text": "x"}, {"label": "B", "text": "y"}]}, "answerKey": "A"}) + "\n")  # fmt: skip
    config = tmp_path / "config.yaml"
    config.write_text(f"data:\n  train_file: {train}\n  dev_file: {train}\n")
    assert cli_main(["ranker", "--config", str(config), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert str(train) in err and "fact1/gold_facts" in err and len(err.splitlines()) == 1
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    assert cli_main(["ranker", "--config", str(config), "--out", str(taken)]) == 2
    assert "not a ranker's" in capsys.readouterr().err
    assert (taken / "notes.txt").read_text() == "mine"


def test_hard_negatives_are_the_books_closest_facts_that_are_not_gold():
    """A fake encoder with fixed vectors: the query is closest to its gold fact, then to the
    distractor, then to the far fact; the gold fact is never its own negative."""
    vectors = {"What measures heat? a thermometer": [1.0, 0.0],
               "a thermometer measures temperature": [1.0, 0.0],
               "a thermometer is glass": [0.8, 0.6], "rocks are hard": [0.0, 1.0]}  # fmt: skip
    encode = lambda texts: np.array([vectors[t] for t in texts])  # noqa: E731
    qs = [question("1", "What measures heat?", ["a ruler", "a thermometer"], 1,
                   ["a thermometer measures temperature"])]  # fmt: skip
    book = ["rocks are hard", "a thermometer measures temperature", "a thermometer is glass"]
    rows = with_hard_negatives(qs, book, encode, 1)
    assert rows == [("What measures heat? a thermometer", "a thermometer measures temperature",
                     "a thermometer is glass")]  # fmt: skip
    assert with_hard_negatives(qs, book, encode, 0) == ranker_pairs(qs)
    # a batch never holds a fact twice, negatives included
    clash = [("q1", "f1", "f2"), ("q2", "f2", "f3"), ("q3", "f4", "f5")]
    assert all(len({f for r in b for f in r[1:]}) == 2 * len(b) for b in batches(clash, 3, 0))
