"""QASPER's measures, the readers of the LM's lists and the extractive summaries."""

import pytest

from cgr.longdoc.metrics import answer_f1, evidence_scores, token_f1
from cgr.longdoc.prompts import outline, read_ids, read_sections
from cgr.longdoc.summaries import lead

NAMES = ["Introduction", "Data > Recording Sites", "Data > Annotation", "Model"]


def test_evidence_scores_take_the_best_annotator_and_empty_matches_empty():
    assert evidence_scores(set(), [set()])["f1"] == 1.0
    assert evidence_scores({1}, [set()])["f1"] == 0.0
    scores = evidence_scores({1, 2}, [{5}, {2}])
    assert (scores["precision"], scores["recall"]) == (0.5, 1.0)
    assert abs(scores["f1"] - 2 / 3) < 1e-9


def test_answer_f1_is_token_f1_against_the_best_reference():
    assert token_f1("The convolutional network.", "convolutional network") == 1.0  # article, case
    assert abs(token_f1("a small convolutional network", "convolutional network") - 0.8) < 1e-9
    assert answer_f1("Yes.", ["No", "yes"]) == 1.0
    assert answer_f1("Unanswerable", ["forty sensors"]) == 0.0


def test_section_names_are_read_leniently_in_the_order_named():
    assert read_sections("Model, Introduction", NAMES) == [3, 0]
    assert read_sections("* Section: Recording Sites\n- data annotation", NAMES) == [1, 2]
    assert read_sections("Model, model, Nothing relevant here", NAMES) == [3]
    assert read_sections("", NAMES) == []


def test_paragraph_ids_are_only_those_shown():
    assert read_ids("[3], 5, 12 and 3", {3, 5, 7}) == [3, 5]


def test_outline_and_lead_summaries():
    assert (
        outline(["Model", "Results"], ["A network.", ""])
        == "* Section: Model A network.\n* Section: Results"
    )
    text = "First sentence has five words. Second one is here too. Third."
    assert lead(text, 8) == "First sentence has five words."
    assert lead(text, 3) == "First sentence has ..."


def test_official_evidence_f1_default_and_text_only_by_hand(tmp_path):
    """QASPER's scorer compares evidence strings: a caption ("FLOAT SELECTED") and a section
    heading named as evidence count against recall by default; the text-only variant drops the
    caption, not the heading. cgr's paragraph-id F1 drops both."""
    import json

    from cgr.longdoc.document import load_qasper
    from cgr.longdoc.metrics import evidence_scores, official_evidence_f1

    paper = {"title": "T", "abstract": "A", "full_text": [
        {"section_name": "Intro", "paragraphs": ["P1 text.", "P2 text."]},
        {"section_name": "Method", "paragraphs": ["P3 text."]}],
        "qas": [{"question": "What?", "question_id": "q1", "answers": [
            {"answer": {"unanswerable": False, "extractive_spans": ["x"], "yes_no": None,
                        "free_form_answer": "", "evidence": ["P1 text.", "FLOAT SELECTED: Table 1: results", "Method"]}},
            {"answer": {"unanswerable": True, "extractive_spans": [], "yes_no": None,
                        "free_form_answer": "", "evidence": []}}]}]}  # fmt: skip
    path = tmp_path / "qasper.json"
    path.write_text(json.dumps({"p1": paper}))
    q = load_qasper(path)[0]
    annotations = [(a.kind == "unanswerable", a.evidence) for a in q.answers]
    chosen = [q.document.paragraphs[0]]  # "P1 text."
    # by hand: 1 of 3 gold strings -> P 1, R 1/3, F1 0.5; text-only: 1 of 2 -> F1 2/3
    assert official_evidence_f1(chosen, annotations) == pytest.approx(0.5)
    assert official_evidence_f1(chosen, annotations, text_only=True) == pytest.approx(2 / 3)
    assert evidence_scores({0}, q.gold_evidence())["f1"] == pytest.approx(1.0)
    # choosing nothing matches the unanswerable annotation in every reading
    assert official_evidence_f1([], annotations) == 1.0
    assert official_evidence_f1([], annotations, text_only=True) == 1.0
    # a paragraph that is nobody's evidence scores 0
    assert official_evidence_f1([q.document.paragraphs[2]], annotations) == 0.0
