"""The Python API on a real tiny checkpoint: Predictor answers like `cgr eval`, Retriever finds
facts, and the README's snippet runs as written."""

import json
import os
import re
import subprocess
import sys

import pytest

import cgr
from cgr.cli import main
from cgr.errors import ConfigError
from tests.conftest import ROOT, SAMPLE

pytestmark = pytest.mark.slow  # real training / model loading; `-m "not slow"` skips


@pytest.fixture(scope="module")
def predictor(tiny_run):
    return cgr.Predictor.from_checkpoint(tiny_run / "ckpt" / "best.ckpt")


def test_predict_one_question_gives_answer_scores_facts_and_chains(predictor):
    p = predictor.predict("Which energy source is renewable?", ["coal", "a solar panel", "oil"])
    assert [c.label for c in p.choices] == ["A", "B", "C"]
    assert p.answer == max(p.scores, key=p.scores.get)
    assert p.correct is None and p.gold is None
    assert all(0 < len(c.facts) <= 4 for c in p.choices)  # the facts read (max_evidence 4)
    assert any(c.chains for c in p.choices), "the sample corpus links renewable and solar"
    chain = next(ch for c in p.choices for ch in c.chains)
    assert len(chain.facts) == len(chain.texts) and len(chain.links) == len(chain.facts) + 1


def test_predict_file_scores_like_cgr_eval(predictor, tiny_run, capsys, tmp_path):
    predictions = predictor.predict_file(SAMPLE / "dev.jsonl")
    out = tmp_path / "eval.jsonl"
    assert (
        main(["eval", "--checkpoint", str(tiny_run / "ckpt" / "best.ckpt"), "--out", str(out)]) == 0
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [p.answer for p in predictions] == [r["predicted"] for r in rows]
    for p, r in zip(predictions, rows, strict=True):
        assert [c.score for c in p.choices] == pytest.approx(
            [c["score"] for c in r["choices"]], abs=1e-4
        )


def test_bad_questions_are_clear_errors(predictor):
    with pytest.raises(ConfigError, match="empty"):
        predictor.predict("  ", ["a", "b"])
    with pytest.raises(ConfigError, match=r"choices has 1 choice \(from 2 to 8\)"):
        predictor.predict("Why?", ["only one"])
    with pytest.raises(ConfigError, match=r"question has 1,000,000 characters \(at most 20,000\)"):
        predictor.predict("x" * 1_000_000, ["a", "b"])  # refused at once, not after spaCy's 52 s
    with pytest.raises(ConfigError, match="choices must be a list of texts, not str"):
        predictor.predict("Why?", "ab")
    with pytest.raises(ConfigError, match="choices.1. must be text, not int"):
        predictor.predict("Why?", ["a", 2])
    with pytest.raises(ConfigError, match="labels"):
        predictor.predict("Why?", ["a", "b"], labels=["A", "A"])
    with pytest.raises(ConfigError, match="path must be a file path, not NoneType"):
        predictor.predict_file(None)
    with pytest.raises(ConfigError, match="batch_size must be a whole number >= 1, not 0"):
        predictor.batch_size = 0
    assert predictor.batch_size == 16  # unchanged by the refused value


@pytest.mark.parametrize(
    ("question", "choices", "labels", "message"),
    [
        ("\u200b\u2060", ["a", "b"], None, "question is empty"),
        ("\u3164\u3164", ["a", "b"], None, "question is empty"),
        ("Why?", ["a", "\u2800 \u2800"], None, r"choices\[1\] is empty"),
        ("Why?", ["a", "\x00\x00"], None, r"choices\[1\] is empty"),
        ("Why?", ["a", "\ufeff "], None, r"choices\[1\] is empty"),
        ("Why?", ["a", "b"], [{"x": 1}, "B"], r"labels\[0\] must be text, not dict"),
        ("Why?", ["a", "b"], ["", "B"], r"labels\[0\] must be 1 to 16 visible characters"),
        ("Why?", ["a", "b"], ["A", "B" * 100_000], r"labels\[1\] must be 1 to 16 visible"),
        ("Why?", ["a", "b"], "AB", "labels must be a list of texts, not str"),
        ("Why?", ["a", "b"], ["A"], "labels 1 given for 2 choices"),
    ],
)
def test_questions_labels_and_invisible_text_are_refused(question, choices, labels, message):
    """The same limits for the API, `cgr serve` and question files: a text of zero-width or
    control characters only is empty; labels are short visible texts, one per choice."""
    from cgr.api import make_question

    with pytest.raises(ConfigError, match=message):
        make_question(question, choices, labels)


@pytest.mark.parametrize("method", ["dense", "bm25", "tfidf"])
def test_retriever_finds_the_fact_about_the_query(method, tmp_path):
    retriever = cgr.Retriever.from_corpus(
        [str(SAMPLE / "facts.txt")], method=method, cache_dir=str(tmp_path)
    )
    facts = retriever.retrieve("a solar panel changes sunlight into electricity", k=3)
    assert len(facts) == 3 and facts[0].text == "a solar panel changes sunlight into electricity"
    assert facts[0].score >= facts[1].score >= facts[2].score
    batch = retriever.retrieve(["solar panel", "wind turbine"], k=2)
    assert [len(b) for b in batch] == [2, 2] and "wind" in batch[1][0].text
    with pytest.raises(ConfigError, match="k must be"):
        retriever.retrieve("x", k=0)
    with pytest.raises(ConfigError, match="k must be a whole number, not '5'"):
        retriever.retrieve("x", k="5")
    with pytest.raises(ConfigError, match="queries must be a string or a list of strings"):
        retriever.retrieve(None)
    with pytest.warns(UserWarning, match="fewer than k=500 facts"):  # more than the corpus
        retriever.retrieve("solar panel", k=500)


def test_retriever_from_a_checkpoint_uses_its_retrieval_settings(tiny_run):
    retriever = cgr.Retriever.from_checkpoint(tiny_run / "ckpt" / "best.ckpt")
    assert retriever.config.method == "beam"
    assert retriever.retrieve("solar energy is renewable", k=4)


def test_readme_snippet_runs_as_written(tiny_run, tmp_path):
    """The README's API snippet, saved as snippet.py and run as a script (no `__main__` guard)
    in a folder laid out like the quickstart's: the AMR parse of its new question starts worker
    processes, which must not run the script again."""
    readme = (ROOT / "README.md").read_text()
    snippet = re.search(r"<!-- api-snippet -->\s*```python\n(.*?)```", readme, re.S).group(1)
    (tmp_path / "checkpoints" / "default").mkdir(parents=True)
    model = tmp_path / "checkpoints" / "default" / "model"  # as scripts/train.sh exports it
    assert (
        main(["export", "--checkpoint", str(tiny_run / "ckpt" / "best.ckpt"), "--out", str(model)])
        == 0
    )
    os.symlink(ROOT / "data", tmp_path / "data")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    (tmp_path / "snippet.py").write_text(snippet)
    proc = subprocess.run([sys.executable, "snippet.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "answer:" in proc.stdout
