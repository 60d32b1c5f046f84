"""QASPER loading: sections flattened with their heading paths, paragraphs numbered across the
document, gold evidence as paragraph ids, every answer type; bad records named by paper id."""

import json

import pytest

from cgr.errors import DataFormatError
from cgr.longdoc.document import load_qasper
from tests.conftest import ROOT

PAPERS = ROOT / "data" / "longdoc" / "papers.json"


def test_sections_are_flattened_in_reading_order_with_their_paths():
    questions = load_qasper(PAPERS)
    assert [q.id for q in questions][:2] == ["birds-q1", "birds-q2"]
    doc = questions[0].document
    # "Data" has no text of its own: its subsections carry its name in their path
    assert [s.name for s in doc.sections] == ["Introduction", "Data > Recording Sites", "Data > Annotation",
                                              "Model", "Results", "Conclusion"]  # fmt: skip
    ids = [i for s in doc.sections for i in s.paragraphs]
    assert ids == list(range(len(doc.paragraphs)))
    assert doc.paragraphs[doc.sections[1].paragraphs[0]].startswith("We placed forty sensors")


def test_answers_of_every_type_and_evidence_as_paragraph_ids():
    by_id = {q.id: q for q in load_qasper(PAPERS)}
    assert [a.kind for a in by_id["birds-q2"].answers] == ["abstractive", "extractive"]
    assert by_id["birds-q3"].answers[0].text == "Yes"
    assert by_id["birds-q4"].answers[0].text == "Unanswerable"
    assert by_id["birds-q4"].gold_evidence() == [set()]
    doc = by_id["birds-q2"].document
    model = doc.sections[3].paragraphs
    assert by_id["birds-q2"].gold_evidence() == [{model[0]}, {model[0], model[1]}]


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda p: p.pop("full_text"), "['cgr-bread'].full_text"),
        (
            lambda p: p.update(full_text=[]),
            "['cgr-bread'].full_text",
        ),  # no text: F1 1.0 for nothing
        (
            lambda p: p["full_text"][1].update(paragraphs="text"),
            "['cgr-bread'].full_text[1].paragraphs",
        ),
        (lambda p: p["qas"][0].pop("question"), "['cgr-bread'].qas[0].question"),
        (lambda p: p["qas"][1].update(question_id="bread-q1"), "['cgr-bread'].qas[1].question_id"),
        (
            lambda p: p["qas"][0]["answers"][0].pop("answer"),
            "['cgr-bread'].qas[0].answers[].answer",
        ),
        (lambda p: p["qas"][0].update(question=" \u200b"), "['cgr-bread'].qas[0].question"),
        (
            lambda p: p["qas"][0]["answers"][0]["answer"].update(extractive_spans=[1, 2]),
            "['cgr-bread'].qas[0].answers[].answer.extractive_spans",
        ),
        (
            lambda p: p["qas"][0]["answers"][0]["answer"].update(yes_no="no"),
            "['cgr-bread'].qas[0].answers[].answer.yes_no",
        ),
    ],
)
def test_a_bad_record_names_the_paper_and_field(tmp_path, edit, field):
    data = json.loads(PAPERS.read_text())
    edit(data["cgr-bread"])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DataFormatError) as err:
        load_qasper(path)
    assert f"field '{field}'" in str(err.value) and str(path) in str(err.value)


def test_truncated_json_is_named_by_line(tmp_path):
    path = tmp_path / "cut.json"
    path.write_text(PAPERS.read_text()[:500])
    with pytest.raises(DataFormatError, match=r"cut\.json:\d+: field '<json>'"):
        load_qasper(path)
