import json

import pytest

from cgr.data.gold import attach_gold_facts, load_worldtree_explanations
from cgr.data.records import Choice, Question
from cgr.errors import DataFormatError


@pytest.fixture
def worldtree(tmp_path):
    facts = [{"uid": "u1", "text": "a magnet attracts iron"}, {"uid": "u2", "text": "a nail is made of  iron"},
             {"uid": "u3", "text": "attract means pull"}]  # fmt: skip
    (tmp_path / "worldtree_v2.1_facts.jsonl").write_text(
        "".join(json.dumps(f) + "\n" for f in facts)
    )
    tsv = tmp_path / "explanations.dev.tsv"
    tsv.write_text(
        "QuestionID\tAnswerKey\texplanation\nQ1\tA\tu3|LEXGLUE u2|GROUNDING u1|CENTRAL\n"
    )
    return tsv


def test_worldtree_explanations_central_facts_first(worldtree):
    assert load_worldtree_explanations(worldtree) == {
        "Q1": ["a magnet attracts iron", "a nail is made of iron", "attract means pull"]
    }


def test_gold_facts_join_questions_by_id(worldtree):
    questions = [Question("Q1", "What pulls a nail?", [Choice("A", "a magnet")], 0),
                 Question("Q2", "Other?", [Choice("A", "x")], 0)]  # fmt: skip
    assert attach_gold_facts(questions, [str(worldtree)]) == 1
    assert questions[0].gold_facts[0] == "a magnet attracts iron" and questions[1].gold_facts == []


def test_unknown_fact_uid_names_file_and_line(worldtree):
    worldtree.write_text("QuestionID\tAnswerKey\texplanation\nQ1\tA\tu9|CENTRAL\n")
    with pytest.raises(DataFormatError, match=r"explanations.dev.tsv.*2.*unknown fact uid u9"):
        load_worldtree_explanations(worldtree)
