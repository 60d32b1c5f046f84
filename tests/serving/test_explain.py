"""`cgr explain` on a real tiny checkpoint: the answer, chains as text, and the page."""

import xml.etree.ElementTree as ET

import pytest

from cgr.chains.search import Chain
from cgr.cli import main
from cgr.evaluation.prediction import ChoicePrediction, Prediction
from cgr.retrieval.base import RetrievedFact
from cgr.serving.explain import explanation

SVG = "http://www.w3.org/2000/svg"


@pytest.mark.slow
def test_explain_prints_the_answer_and_a_chain_and_writes_a_page(tiny_run, capsys, tmp_path):
    code = main(["explain", "--checkpoint", str(tiny_run / "ckpt" / "best.ckpt"),
                 "--question", "Which energy source is renewable?",
                 "--choices", "coal", "a solar panel", "--out-dir", str(tmp_path / "x"),
                 "--svg", str(tmp_path / "q.svg")])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("question: Which energy source is renewable?\nanswer: (")
    assert "Question -" in out and "-> (B)" in out, out  # a chain to the solar-panel choice
    assert (tmp_path / "x" / "chains.html").is_file()
    svg = ET.fromstring((tmp_path / "q.svg").read_text())  # well-formed, the question drawn
    assert any("Which energy source" in (t.text or "") for t in svg.iter(f"{{{SVG}}}text"))


def test_an_unwritable_out_dir_fails_before_the_model_loads(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    code = main(["explain", "--checkpoint", "no/such.ckpt", "--question", "q?",
                 "--choices", "a", "b", "--out-dir", str(blocker / "sub")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "--out-dir" in err and "cannot write there" in err


def test_explanation_lists_chains_under_their_choice():
    chain = Chain(("f1",), ("renewable", "solar"), ("solar energy is renewable",))
    coal = RetrievedFact("f2", "coal burns", 0.5)
    p = Prediction("q", "Which is renewable?", "B", [
        ChoicePrediction("A", "coal", -1.0, "Coal is renewable.", [coal], []),
        ChoicePrediction("B", "solar", 2.0, "Solar is renewable.", [], [chain]),
    ])  # fmt: skip
    lines = explanation(p)
    assert lines[1] == "answer: (B) solar  score 2.000"
    assert "      no chain; best fact read: [2] coal burns" in lines
    b = lines.index("* (B) solar  score 2.000  1 chain(s), 0 fact(s) read")
    assert lines[b + 1] == "      Question -renewable-> [1] -solar-> (B)"
    assert lines[-2:] == ["  [1] solar energy is renewable", "  [2] coal burns"]


def test_every_fact_in_the_export_has_its_id_and_facts_read_names_ids():
    """chains.jsonl numbers each fact once by its content id (never its text), the facts a
    choice read included; `facts_read` names them as the chains do, by id."""
    from cgr.chains.export import export_record
    from cgr.data.records import fact_id

    chain = Chain(("f1",), ("renewable", "solar"), ("solar energy is renewable",))
    coal = RetrievedFact(fact_id("coal burns"), "coal burns", 0.5)
    solar = RetrievedFact("f1", "solar energy is renewable", 0.9)
    p = Prediction("q", "Which is renewable?", "B", [
        ChoicePrediction("A", "coal", -1.0, "Coal is renewable.", [coal], [], []),
        ChoicePrediction("B", "solar", 2.0, "Solar is renewable.", [solar, coal], [chain], [0.2]),
    ], contrast={"kind": "none", "answer": "B", "runner_up": "A", "answer_support": 0.2,
                 "runner_up_support": 0.0, "facts": ["coal burns"]})  # fmt: skip
    record = export_record(p.to_dict())
    assert [(f["n"], f["id"]) for f in record["facts"]] == [(1, "f1"), (2, fact_id("coal burns"))]
    assert all(f["id"] != f["text"] for f in record["facts"])
    assert [c["facts_read"] for c in record["choices"]] == [[coal.fact_id], ["f1", coal.fact_id]]
    assert record["contrast"]["line"].endswith("rests on facts [2]")


@pytest.mark.parametrize("question", ["", "   "])
def test_empty_question_is_exit_2(capsys, question, tmp_path):
    code = main(["explain", "--checkpoint", "never/loaded.ckpt", "--question",
                 question, "--choices", "a", "b", "--out-dir", str(tmp_path)])  # fmt: skip
    assert code == 2 and "question is empty" in capsys.readouterr().err


def test_a_missing_rank_encoder_fails_before_the_model_loads(capsys, tmp_path):
    code = main(["explain", "--checkpoint", "never/loaded.ckpt", "--question", "q?",
                 "--choices", "a", "b", "--out-dir", str(tmp_path),
                 "--rank-encoder", str(tmp_path / "no-ranker")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "--rank-encoder" in err and "no-ranker" in err


@pytest.mark.slow
def test_explain_ranks_the_chains_with_a_ranker_it_is_given(tiny_run, capsys, tmp_path):
    """--rank-encoder reaches the chain search: the base MiniLM folder as the ranker (a ranker
    folder is a sentence-transformers folder), the answer and its chain still shown."""
    from cgr.models import resolve_model

    code = main(["explain", "--checkpoint", str(tiny_run / "ckpt" / "best.ckpt"),
                 "--question", "Which energy source is renewable?",
                 "--choices", "coal", "a solar panel", "--out-dir", str(tmp_path / "x"),
                 "--rank-encoder", str(resolve_model("minilm"))])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "-> (B)" in out, out


def test_a_support_reader_folder_is_checked_before_the_model_loads(capsys, tmp_path):
    code = main(["explain", "--checkpoint", "never/loaded.ckpt", "--question", "q?",
                 "--choices", "a", "b", "--out-dir", str(tmp_path),
                 "--support-reader", str(tmp_path)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "--support-reader" in err and "support_reader.json" in err


@pytest.mark.slow
def test_explain_judges_support_with_a_support_reader_it_is_given(tiny_run, capsys, tmp_path):
    """--support-reader reaches the support: a support reader folder (here MiniLM with a
    seeded, scaled head, saved as `cgr support-reader` saves) gives the chains other support
    values than the model's reader, and the answer stays the reader's."""
    import json
    import re

    import torch

    from cgr.reader.model import MultipleChoiceReader
    from cgr.reader.support_reader import SUPPORT_FILE

    torch.manual_seed(0)
    judge = MultipleChoiceReader("minilm", 128)
    with torch.no_grad():  # a decisive head: its support is far from the untrained reader's 0.5
        judge.model.classifier.weight.mul_(300)
    folder = tmp_path / "support"
    judge.model.save_pretrained(str(folder))
    judge.tokenizer.save_pretrained(str(folder))
    (folder / SUPPORT_FILE).write_text(json.dumps({"max_length": 128, "held_out": []}))
    ask = ["explain", "--checkpoint", str(tiny_run / "ckpt" / "best.ckpt"),
           "--question", "Which energy source is renewable?", "--choices", "coal", "a solar panel"]  # fmt: skip
    assert main([*ask, "--out-dir", str(tmp_path / "own")]) == 0
    own = capsys.readouterr().out
    assert main([*ask, "--out-dir", str(tmp_path / "judged"), "--support-reader", str(folder)]) == 0
    judged = capsys.readouterr().out
    support = re.compile(r"support (\d\.\d+)")
    assert support.findall(own) and support.findall(judged) != support.findall(own)
    assert own.splitlines()[1] == judged.splitlines()[1]  # "answer: (X) ..." unchanged


def test_the_chain_order_is_one_of_the_orders_and_reaches_what_is_written(tmp_path, monkeypatch):
    """--chain-order (eval, explain, serve) is refused outside the orders by argparse (exit 2,
    nothing loaded), set on the opened model, and passed to the support ranking eval writes."""
    import argparse
    from pathlib import Path

    from cgr.evaluation import predict, prediction, support
    from cgr.pretrained.source import OpenedModel, add_model_arguments, with_command_line

    parser = argparse.ArgumentParser()
    add_model_arguments(parser)
    assert set(parser._option_string_actions["--chain-order"].choices) == set(support.ORDERS)
    args = parser.parse_args(["--checkpoint", "x.ckpt", "--chain-order", "search"])
    assert with_command_line(OpenedModel(Path("x.ckpt"), {}), args).chain_order == "search"
    default = parser.parse_args(["--checkpoint", "x.ckpt"])
    assert with_command_line(OpenedModel(Path("x.ckpt"), {}), default).chain_order is None
    with pytest.raises(SystemExit) as refused:
        parser.parse_args(["--checkpoint", "x.ckpt", "--chain-order", "longest"])
    assert refused.value.code == 2
    seen = []
    monkeypatch.setattr(
        prediction, "predictions", lambda module, outputs, order, *rest: seen.append(order) or []
    )
    writer = predict.PredictionWriter(tmp_path / "p.jsonl", None, "search")
    with writer:
        writer.on_predict_batch_end(None, None, [], None, 0)
    predict.prediction_records(None, [])
    assert seen == ["search", support.DEFAULT_ORDER]
