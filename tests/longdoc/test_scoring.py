"""QASPER's measures, the readers of the LM's lists and the extractive summaries."""

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
