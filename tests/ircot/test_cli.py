"""`cgr ircot` end to end with the packaged SmolLM2 generator (a real model, a small budget)."""

import json

import pytest

from cgr.cli import main
from tests.conftest import ROOT

HOTPOT = ROOT.parent / "shared" / "data" / "hotpotqa" / "ircot_processed_dev_subsampled.jsonl"


def official_sample(tmp_path):
    """Two questions in HotpotQA's official format, written for this test."""
    rows = [
        {"_id": "t1", "question": "Which river flows through the city where Arto Venn died?", "answer": "Sella",
         "supporting_facts": [["Arto Venn", 0], ["Tamberg", 0]],
         "context": [["Arto Venn", ["Arto Venn was a novelist.", " He died in the city of Tamberg."]],
                     ["Tamberg", ["Tamberg is a city.", " The Sella river flows through Tamberg."]],
                     ["Glass Orchard", ["Glass Orchard is an electronic duo."]]]},
        {"_id": "t2", "question": "Who designed the Lindqvist Tower?", "answer": "Helena Marsk",
         "supporting_facts": [["Lindqvist Tower", 0]],
         "context": [["Lindqvist Tower", ["The Lindqvist Tower was designed by Helena Marsk."]]]},
    ]  # fmt: skip
    path = tmp_path / "hotpot.json"
    path.write_text(json.dumps(rows))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("method", ["ircot", "oner", "nor"])
def test_ircot_cli_writes_predictions_and_prints_metrics_last(tmp_path, capsys, method):
    data = official_sample(tmp_path)
    out = tmp_path / "out"
    args = ["ircot", "--config", str(ROOT / "configs" / "ircot_hotpotqa.yaml"), "--data", str(data), "--limit", "2",
            "--out", str(out), "--method", method, "--loop.max_steps", "2", "--loop.reader_max_new_tokens", "24",
            "--generator.max_new_tokens", "24", "--demos.file", str(ROOT / "data" / "ircot" / "demos.json")]  # fmt: skip
    assert main(args) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("recall: ") and " em: " in last and " f1: " in last
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["t1", "t2"]
    for r in rows:
        assert len(r["paragraphs"]) <= 15 and r["generated_tokens"] > 0
        if method == "nor":
            assert r["paragraphs"] == [] and r["steps"] == []
        else:
            assert r["steps"][0]["query"] == r["question"] and r["recall"] is not None
        if method == "ircot":
            assert 1 <= len(r["cot"]) <= 2  # max_steps
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["questions"] == 2 and metrics["method"] == method


@pytest.mark.slow
def test_a_killed_run_resumes_from_its_partial_results(tmp_path, capsys):
    """The llama.cpp backend (fast to load); a partial file as a killed run leaves it: one
    finished record and a line cut short. The same command answers only the other question."""
    from cgr.runs import partial_results

    data = official_sample(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    args = ["ircot", "--config", str(ROOT / "configs" / "ircot_hotpotqa.yaml"), "--data", str(data),
            "--out", str(out), "--method", "oner", "--generator.backend", "llamacpp",
            "--loop.reader_max_new_tokens", "24", "--demos.file", str(ROOT / "data" / "ircot" / "demos.json")]  # fmt: skip
    kept = {"id": "t1", "question": "q", "gold_answers": ["Sella"], "prediction": "Sella", "em": 1.0,
            "f1": 1.0, "recall": 1.0, "cot": [], "reader_output": "", "steps": [], "paragraphs": [],
            "generated_tokens": 1, "seconds": 0.0}  # fmt: skip
    partial = partial_results(out, args[1:])
    partial.write_text(json.dumps(kept) + "\n" + '{"id": "t2", "quest')
    assert main(args) == 0
    assert "ircot" in capsys.readouterr().err  # the progress bar
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert rows[0] == kept and rows[1]["id"] == "t2" and rows[1]["reader_output"]
    assert not partial.exists()  # removed once predictions.jsonl is written


def test_the_resume_key_follows_the_content_of_the_files_the_command_names(tmp_path):
    """An edited data or config file starts anew: the stale answers are not resumed."""
    from cgr.runs import partial_results

    data, config = tmp_path / "dev.json", tmp_path / "run.yaml"
    data.write_text("[]")
    config.write_text("a: 1")
    args = ["--data", str(data), f"--config={config}", "--out", str(tmp_path)]
    first = partial_results(tmp_path, args)
    assert partial_results(tmp_path, args) == first  # the same inputs resume
    data.write_text('[{"id": "x"}]')
    second = partial_results(tmp_path, args)
    config.write_text("a: 2")
    assert len({first, second, partial_results(tmp_path, args)}) == 3


@pytest.mark.slow
def test_ircot_retrieves_from_a_corpus_of_its_own(tmp_path, capsys):
    """`--corpus`: paragraphs come from the corpus file (its BM25 index saved beside it), not the
    question's contexts; gold recall is still by title."""
    data = official_sample(tmp_path)
    corpus = tmp_path / "corpus.jsonl"
    rows = [{"id": "1", "title": "Arto Venn", "text": "Arto Venn was a novelist. He died in the city of Tamberg."},
            {"id": "2", "title": "Tamberg", "text": "Tamberg is a city. The Sella river flows through Tamberg."},
            {"id": "3", "title": "Lindqvist Tower", "text": "The Lindqvist Tower was designed by Helena Marsk."},
            *({"id": str(n), "title": f"Filler {n}", "text": f"Filler paragraph number {n} about nothing."}
              for n in range(4, 60))]  # fmt: skip
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    args = ["ircot", "--config", str(ROOT / "configs" / "ircot_hotpotqa.yaml"), "--data", str(data), "--limit", "2",
            "--out", str(out), "--method", "oner", "--corpus", str(corpus), "--loop.k", "2",
            "--loop.reader_max_new_tokens", "24", "--generator.backend", "llamacpp",
            "--demos.file", str(ROOT / "data" / "ircot" / "demos.json")]  # fmt: skip
    assert main(args) == 0
    rows_out = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    titles = {t for r in rows_out for t in r["paragraphs"]}
    assert titles <= {r["title"] for r in rows} and "Glass Orchard" not in titles
    assert (tmp_path / "corpus.jsonl.bm25s" / "cgr_corpus.json").is_file()
    assert all(r["recall"] is not None for r in rows_out)
