"""The support reader (cgr.reader.support_reader): its training rows, the link-word fact it
reads for a wrong choice, the held-out questions, a real fit that learns to tell a fact that
answers from one that only shares a choice's words, and the command's errors."""

import json

import numpy as np
import pytest
import torch

from cgr.cli import main as cli_main
from cgr.data.records import Choice, Question
from cgr.errors import ConfigError
from cgr.pretrained.support_reader import load_support_reader
from cgr.reader.support_reader import (
    SUPPORT_FILE,
    SupportReaderConfig,
    held_out,
    support_rows,
)
from cgr.training.support_reader import train_support_reader


def question(qid: str, stem: str, choices: list[str], answer: int | None, gold: list[str]):
    return Question(qid, stem, [Choice("ABCD"[i], c) for i, c in enumerate(choices)], answer, gold)


THERMOMETER = question("t", "What measures heat?", ["a ruler", "a thermometer"], 1,
                       ["a thermometer measures temperature"])  # fmt: skip
# a fake encoder: "question ruler" is closest to the gold fact (the stem dominates), then to the
# ruler fact, which leans to the ruler; the rock fact is far from both
VECTORS = {
    "What measures heat? a ruler": [0.9, 0.4, 0.0],
    "What measures heat? a thermometer": [1.0, 0.0, 0.0],
    "a thermometer measures temperature": [1.0, 0.0, 0.0],
    "a ruler measures length": [0.6, 0.8, 0.0],
    "rocks are hard": [0.0, 0.0, 1.0],
}


def encode(texts: list[str]) -> np.ndarray:
    v = np.array([VECTORS[t] for t in texts], dtype=float)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_rows_read_a_gold_fact_for_the_answer_and_a_link_word_fact_for_nothing():
    book = ["rocks are hard", "a thermometer measures temperature", "a ruler measures length"]
    unlabelled = question("u", "Why?", ["x", "y"], None, ["a fact"])
    rows = support_rows([THERMOMETER, unlabelled], book, encode, negatives=1)
    read = {ex.facts[0][0].text: target for ex, target in rows}
    # the gold fact answers (every choice reads it); the fact nearest "question ruler" that is
    # not gold and leans to the ruler over the answer answers nothing
    assert read == {"a thermometer measures temperature": [0.0, 1.0],
                    "a ruler measures length": [0.5, 0.5]}  # fmt: skip
    for ex, _ in rows:
        assert ex.choices == ["a ruler", "a thermometer"] and len(ex.facts) == 2
        assert ex.facts[0] == ex.facts[1]
    assert [t for _, t in support_rows([THERMOMETER], book, encode, 0)] == [[0.0, 1.0]]


def test_of_many_gold_facts_the_ones_closest_to_question_answer_are_read():
    many = question("m", "What measures heat?", ["a ruler", "a thermometer"], 1,
                    ["rocks are hard", "a thermometer measures temperature",
                     "a ruler measures length"])  # fmt: skip
    rows = support_rows([many], [], encode, negatives=0, max_gold=1)
    assert [ex.facts[0][0].text for ex, _ in rows] == ["a thermometer measures temperature"]
    rows = support_rows([many], [], encode, negatives=0, max_gold=2)  # kept in their order
    assert [ex.facts[0][0].text for ex, _ in rows] == ["a thermometer measures temperature",
                                                        "a ruler measures length"]  # fmt: skip


def test_held_out_questions_are_seeded_and_only_answered_ones_with_gold():
    qs = [question(str(i), "Q?", ["x", "y"], 0, ["f"]) for i in range(10)]
    qs.append(question("nogold", "Q?", ["x", "y"], 0, []))
    kept = held_out(qs, 3, seed=0)
    assert len(kept) == 3 and "nogold" not in kept and kept == held_out(qs, 3, seed=0)
    assert held_out(qs, 50, 0) == {str(i) for i in range(10)}


def test_support_reader_config_is_checked():
    with pytest.raises(ConfigError, match="support reader lr"):
        SupportReaderConfig(lr=0)
    with pytest.raises(ConfigError, match="support reader negatives"):
        SupportReaderConfig(negatives=-1)


@pytest.mark.slow
def test_a_fit_learns_which_fact_answers_and_saves_a_support_reader(tmp_path):
    """A real Lightning fit of the MiniLM wheel on a few gold and link-word facts: afterwards
    the gold fact gives its answer most of the probability (an untrained head gives each of
    two choices about half), a link-word fact leaves the choices near even, and the folder
    loads back as a reader."""
    facts = {
        ("What measures heat?", ("a ruler", "a thermometer"), 1):
            ("a thermometer measures temperature", "a ruler measures length"),
        ("What do plants need to grow?", ("sunlight", "darkness"), 0):
            ("plants need sunlight to grow", "darkness is the absence of light"),
        ("What do magnets attract?", ("wood", "iron"), 1):
            ("magnets attract iron", "wood comes from trees"),
    }  # fmt: skip
    qs, book = [], []
    for n, ((stem, choices, answer), (gold, link)) in enumerate(facts.items()):
        qs.append(question(str(n), stem, list(choices), answer, [gold]))
        book += [gold, link]
    from cgr.retrieval.encoders import TextEncoder

    rows = support_rows(qs, book, TextEncoder("minilm").encode, negatives=1)
    out = tmp_path / "support"
    cfg = SupportReaderConfig(epochs=8, batch_size=6, lr=1e-4, hold_out=0)
    info = train_support_reader(rows, "minilm", out, cfg, {"held_out": []}, accelerator="cpu",
                                devices=1)  # fmt: skip
    assert info["rows"] == 6 and json.loads((out / SUPPORT_FILE).read_text())["held_out"] == []
    reader = load_support_reader(out)
    assert not reader.training and reader.max_length == 128
    with torch.no_grad():
        probs = reader(reader.encode([ex for ex, _ in rows])).softmax(-1)
    for (ex, target), p in zip(rows, probs, strict=True):
        if max(target) == 1.0:  # a gold fact: its answer gets most of the probability
            assert p[ex.answer_index] > 0.65, (ex.facts[0][0].text, p)
        else:  # a link-word fact: near even
            assert p.max() < 0.6, (ex.facts[0][0].text, p)


def test_the_command_refuses_a_folder_that_is_not_a_support_readers(tmp_path, capsys):
    train = tmp_path / "train.jsonl"
    train.write_text(json.dumps({"id": "q1", "question": {"stem": "Why?", "choices": [
        {"label": "A", "text": "x"}, {"label": "B", "text": "y"}]}, "answerKey": "A"}) + "\n")  # fmt: skip
    config = tmp_path / "config.yaml"
    config.write_text(f"data:\n  train_file: {train}\n  dev_file: {train}\n")
    out = ["--out", str(tmp_path / "s")]
    assert cli_main(["support-reader", "--config", str(config), *out]) == 2
    err = capsys.readouterr().err.strip()
    assert str(train) in err and "fact1/gold_facts" in err and len(err.splitlines()) == 1
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    assert cli_main(["support-reader", "--config", str(config), "--out", str(taken)]) == 2
    assert "not a support reader's" in capsys.readouterr().err
    assert (taken / "notes.txt").read_text() == "mine"
    with pytest.raises(ConfigError, match="no support_reader.json"):
        load_support_reader(taken)
    (taken / SUPPORT_FILE).write_text("{}")
    (taken / "config.json").write_text("{}")
    (taken / "pytorch_model.bin").write_bytes(b"pickle")
    with pytest.raises(ConfigError, match="pickle file where safetensors"):
        load_support_reader(taken)
