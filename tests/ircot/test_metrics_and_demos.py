import json

import pytest

from cgr.data.loaders import load_lenient
from cgr.evaluation.qa_metrics import exact_match, f1_score, normalize_answer, paragraph_recall
from cgr.generation.generator import _finished, first_sentence, until_blank_line
from cgr.ircot.demos import PromptBuilder, extract_answer, load_demonstrations
from cgr.retrieval.paragraphs import BM25ParagraphRetriever, paragraph_corpus
from tests.conftest import ROOT

DEMOS = ROOT / "data" / "ircot" / "demos.json"


def test_squad_normalisation_em_and_f1():
    assert normalize_answer("The  Sella River!") == "sella river"
    assert exact_match("the Sella river.", ["Sella River"]) == 1.0
    assert f1_score("Sella river port", ["the Sella river"]) == pytest.approx(
        2 * (2 / 3) * 1 / (2 / 3 + 1)
    )
    assert f1_score("yes", ["no"]) == 0.0 and f1_score("no", ["no"]) == 1.0
    assert (
        paragraph_recall(["A", "B", "C"], {"A", "D"}) == 0.5
        and paragraph_recall(["A"], set()) is None
    )


def test_answer_extraction_and_first_sentence():
    assert extract_answer("Thus X. So the answer is: Estonia.") == "Estonia"
    assert extract_answer("the answer is no") == "no"
    assert extract_answer("I do not know.") is None
    assert extract_answer("The answer is:") is None  # nothing after it: the fallback answers
    assert extract_answer("The answer is: .") is None
    assert extract_answer("The answer is:\nParis.") == "Paris"  # the answer on the next line
    assert (
        first_sentence(" Helena was born in 1951. She studied art.") == "Helena was born in 1951."
    )
    assert first_sentence("No full stop here\nnext line") == "No full stop here"


def test_cot_answers_stop_once_the_answer_sentence_or_the_example_ends():
    assert not _finished("Arto Venn died in Tamberg. So the answer is: 3.", "answer")  # 3.5?
    assert _finished("Arto Venn died in Tamberg. So the answer is: 3.5 million. ", "answer")
    assert _finished("So the answer is: Sella\n", "answer")
    assert not _finished("So the answer is:\n", "answer")  # the answer may follow on the next line
    assert _finished("So the answer is:\nSella.\n", "answer")
    assert _finished("Arto Venn died in Tamberg.\n\nWikipedia Title: X", "answer")
    assert not _finished("Arto Venn died in Tamberg. He", "answer")
    assert _finished("Arto Venn died in Tamberg. He", "sentence")
    assert (
        until_blank_line(" So the answer is: Sella.\n\n\nWikipedia Title: X")
        == "So the answer is: Sella."
    )


def test_our_demonstrations_load_and_pack_into_the_budget():
    demos = load_demonstrations(DEMOS)
    assert len(demos) == 4 and demos[0].answer == "Estonia"
    assert all(len(d.paragraphs) >= 2 and all(p.text for p in d.paragraphs) for d in demos)
    count = lambda text: len(text.split())  # noqa: E731  (a word count stands in for a tokenizer)
    small = PromptBuilder(demos, count, "cot", distractors=1, token_budget=120)
    large = PromptBuilder(demos, count, "cot", distractors=1, token_budget=10_000)
    assert small.prefix.count("Q: ") < large.prefix.count("Q: ") == 4
    assert small.prefix_tokens <= 120 or small.prefix.count("Q: ") == 1
    prompt = large.build("Who?", [], "First step.")
    assert prompt.endswith("Q: Who?\nA: First step. ")
    direct = PromptBuilder(demos, count, "direct", with_context=False)
    assert "Wikipedia Title" not in direct.prefix and "A: Estonia" in direct.prefix


def test_ircot_annotation_files_load_when_shared_data_is_there():
    path = ROOT.parent / "shared" / "data" / "ircot" / "cot_annotations" / "hotpotqa.json"
    if not path.exists():
        pytest.skip("../shared/data is not on this machine")
    demos = load_demonstrations(path)
    assert len(demos) == 29 and all(d.cot and d.answer for d in demos)


def test_malformed_records_are_counted_and_skipped(tmp_path):
    good = {"question_id": "1", "question_text": "Q?", "answers_objects": [{"spans": ["A"]}],
            "contexts": [{"title": "T", "paragraph_text": "text", "is_supporting": True}]}  # fmt: skip
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(good) + "\n{broken\n" + json.dumps({"question_id": "2"}) + "\n")
    from collections import Counter

    counters = Counter()
    questions = load_lenient(str(path), counters)
    assert [q.id for q in questions] == ["1"] and counters["malformed_records"] == 2


def test_bm25_paragraph_retrieval_over_pooled_contexts(tmp_path):
    from cgr.data.records import OpenQuestion, Paragraph

    qs = [OpenQuestion("1", "q", ["a"], [Paragraph("Tamberg", "Tamberg is a city on the Sella river."),
                                          Paragraph("Arto Venn", "Arto Venn was a novelist.")]),
          OpenQuestion("2", "q", ["a"], [Paragraph("Tamberg", "Tamberg is a city on the Sella river.")])]  # fmt: skip
    corpus = paragraph_corpus(qs)
    assert len(corpus) == 2
    found = BM25ParagraphRetriever(corpus).retrieve(
        ["Which river flows through Tamberg?", "zzz"], k=2
    )
    assert found[0][0].title == "Tamberg" and found[1] == []


def test_an_open_qa_prediction_draws_on_the_chains_page():
    from cgr.chains.export import page_record
    from cgr.ircot.commands import chain_prediction
    from cgr.retrieval.paragraphs import CorpusParagraph

    corpus = [CorpusParagraph("Zorbland", "Its capital is Quixville."),
              CorpusParagraph("Quixville", "Quixville has the Blue Heron Tower.")]  # fmt: skip
    chain = {"paragraphs": ["Zorbland", "Quixville"], "links": ["capital", "quixville"],
             "score": 1.2, "grounded": True}  # fmt: skip
    record = {"id": "z1", "question": "Which tower is in Zorbland's capital?", "prediction": "Blue Heron Tower",
              "gold_answers": ["Blue Heron Tower"], "em": 1.0, "f1": 1.0, "paragraphs": ["Zorbland", "Quixville"],
              "steps": [{"query": "q", "retrieved": ["Zorbland", "Quixville"], "chains": [chain]}]}  # fmt: skip
    page = page_record(chain_prediction(record, corpus))
    (choice,) = page["choices"]
    assert page["correct"] is True and choice["chains"] == 1 and choice["read"] == 2
    words = [edge[2] for edge in choice["graph"]["edges"]]
    assert words == ["capital", "Quixville", ""]  # concepts as written; no concept into the answer
