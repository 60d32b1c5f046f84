"""The paper's Figure-4 measure (benchmarks/mechanism.py) on a hand-built corpus: which
hypotheses retrieve the gold fact, with the real MiniLM encoder and FAISS."""

from benchmarks.mechanism import gold_retrieval, print_rows
from cgr.data.corpus import Corpus
from cgr.data.records import Choice, Question
from cgr.retrieval.dense import BeamIterativeRetriever, SearchSource
from cgr.retrieval.index import FaissIndex

GOLD = "a thermometer is used to measure temperature"
FACTS = [
    GOLD,
    "a telescope is used to see distant planets",
    "a ruler is used to measure length",
    "a stopwatch is used to measure time",
    *(f"filler fact number {i} about rivers" for i in range(20)),
]


def test_the_right_hypothesis_retrieves_the_gold_fact_first(encoder):
    corpus = Corpus(FACTS)
    source = SearchSource("corpus", corpus, FaissIndex(encoder.encode(corpus.texts), use_gpu=False))
    # the open book holds the gold fact too: found twice, counted once
    book = Corpus([GOLD])
    open_book = SearchSource(
        "open_book", book, FaissIndex(encoder.encode(book.texts), use_gpu=False)
    )
    retriever = BeamIterativeRetriever(encoder, source, steps=1, open_book=open_book)
    choices = ["measure temperature", "see distant planets", "measure length", "measure time"]
    question = Question(
        id="q1",
        stem="What is a thermometer used to do?",
        choices=[Choice(label, text) for label, text in zip("ABCD", choices, strict=True)],
        answer_index=0,
        gold_facts=[GOLD],
    )
    unlabelled = Question(id="q2", stem="Why?", choices=question.choices, answer_index=None)
    result = gold_retrieval(retriever, [question, unlabelled])
    assert result["questions"] == 1
    assert result["correct_rank1"] == 100.0 and result["correct_top15"] == 100.0
    # every hypothesis shares "thermometer", so the wrong ones find the gold fact in their 15
    # (24 facts), but not first: the paper's Figure 4 measures exactly this gap
    assert result["incorrect_top15"] == 100.0
    assert result["incorrect_rank1"] < 100.0


def test_rows_without_gold_questions_are_left_out_not_crashed_on(capsys):
    # a dev file whose records and gold files name no gold fact measures 0 questions
    print_rows([{"run": "base encoder", "questions": 0}])
    assert "Figure 4 not measured" in capsys.readouterr().out
