import json
import re

import pytest

from cgr.data.corpus import Corpus
from cgr.data.loaders import load_multiple_choice, load_open_questions
from cgr.data.records import fact_id
from cgr.errors import DataFormatError
from tests.conftest import SAMPLE


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def mc(qid, n=4, labels="ABCDE", key="A", **extra):
    choices = [{"text": f"choice {i}", "label": labels[i]} for i in range(n)]
    return {
        "id": qid,
        "question": {"stem": "Which one?", "choices": choices},
        "answerKey": key,
        **extra,
    }


def test_sample_set_loads_with_gold_facts():
    train = load_multiple_choice(SAMPLE / "train.jsonl")
    dev = load_multiple_choice(SAMPLE / "dev.jsonl")
    assert len(train) + len(dev) == 42
    assert all(len(q.choices) == 4 and q.answer_index is not None for q in train + dev)
    assert sum(len(q.gold_facts) >= 2 for q in train + dev) >= 10


def test_arc_numeric_labels_and_five_choices_are_kept(tmp_path):
    path = write_jsonl(tmp_path / "arc.jsonl", [mc("q1", 5, "ABCDE", "E"), mc("q2", 3, "123", "2")])
    q1, q2 = load_multiple_choice(path)
    assert [c.label for c in q1.choices] == list("ABCDE") and q1.answer_index == 4
    assert [c.label for c in q2.choices] == ["1", "2", "3"] and q2.answer_label == "2"


def test_obqa_additional_fact1_becomes_gold_fact(tmp_path):
    path = write_jsonl(tmp_path / "add.jsonl", [mc("q1", fact1="the sun is a star")])
    assert load_multiple_choice(path)[0].gold_facts == ["the sun is a star"]


def test_test_file_without_answer_key(tmp_path):
    row = mc("q1")
    del row["answerKey"]
    assert load_multiple_choice(write_jsonl(tmp_path / "t.jsonl", [row]))[0].answer_index is None


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"id": "x", "question": {"choices": []}}, "question.stem"),
        (mc("x", key="F"), "answerKey"),
        (
            {
                "id": "x",
                "question": {"stem": "s", "choices": [{"label": "A"}, {"text": "b", "label": "B"}]},
            },
            "question.choices[0].text",
        ),
        ({"question": {"stem": "s", "choices": []}}, "id"),
    ],
)
def test_bad_record_names_file_line_and_field(tmp_path, bad, field):
    path = write_jsonl(tmp_path / "bad.jsonl", [mc("ok"), bad])
    with pytest.raises(DataFormatError) as err:
        load_multiple_choice(path)
    assert err.value.line == 2 and err.value.field == field
    assert f"bad.jsonl:2: field '{field}'" in str(err.value)


def test_broken_json_line_is_named(tmp_path):
    path = write_jsonl(tmp_path / "b.jsonl", [mc("ok"), "{not json"])
    with pytest.raises(DataFormatError, match=r"b.jsonl:2: field '<json>'"):
        load_multiple_choice(path)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(DataFormatError, match="file not found"):
        load_multiple_choice(tmp_path / "nope.jsonl")


def test_hotpotqa_official_and_ircot_formats(tmp_path):
    official = [
        {
            "_id": "a1",
            "question": "Who?",
            "answer": "Ann",
            "supporting_facts": [["T1", 0]],
            "context": [["T1", ["Ann was born.", " She sang."]], ["T2", ["Other."]]],
        }
    ]
    (tmp_path / "o.json").write_text(json.dumps(official))
    q = load_open_questions(tmp_path / "o.json")[0]
    assert (
        q.answers == ["Ann"] and q.paragraphs[0].is_supporting and not q.paragraphs[1].is_supporting
    )
    assert q.paragraphs[0].text == "Ann was born. She sang."
    ircot = {
        "question_id": "b2",
        "question_text": "Where?",
        "answers_objects": [{"spans": ["Paris"]}],
        "contexts": [
            {"id": "0", "title": "P", "paragraph_text": "Paris is big.", "is_supporting": True}
        ],
    }
    write_jsonl(tmp_path / "i.jsonl", [ircot])
    q = load_open_questions(tmp_path / "i.jsonl")[0]
    assert (q.id, q.answers, q.paragraphs[0].title) == ("b2", ["Paris"], "P")


OFFICIAL = {"_id": "a1", "question": "Who?", "answer": "Ann", "supporting_facts": [["T1", 0]],
            "context": [["T1", ["Ann was born."]]]}  # fmt: skip
PROCESSED = {"question_id": "b2", "question_text": "Where?", "answers_objects": [{"spans": ["Paris"]}],
             "contexts": [{"title": "P", "paragraph_text": "Paris is big.", "is_supporting": True}]}  # fmt: skip


@pytest.mark.parametrize(
    ("record", "field", "problem"),
    [
        ({**OFFICIAL, "supporting_facts": [["Bob"]]}, "supporting_facts[0]", "expected [title, sentence index]"),
        ({**OFFICIAL, "supporting_facts": "T1"}, "supporting_facts", "expected a list, got str"),
        ({**OFFICIAL, "context": [[["T1"], ["x"]]]}, "context[0]", "expected [title, [sentences]]"),
        ({**OFFICIAL, "context": [["T1", [1, 2]]]}, "context[0]", "expected [title, [sentences]]"),
        ({**PROCESSED, "contexts": [{"title": "P", "paragraph_text": 7}]}, "contexts[0].paragraph_text",
         "expected text, got int"),
        ({**PROCESSED, "contexts": [{"title": ["P"], "paragraph_text": "x"}]}, "contexts[0].title",
         "expected text, got list"),
        ({**PROCESSED, "contexts": ["P"]}, "contexts[0]", "expected an object, got str"),
        ({**PROCESSED, "contexts": [{"title": "P", "paragraph_text": "x", "is_supporting": "yes"}]},
         "contexts[0].is_supporting", "expected true or false"),
        ({**PROCESSED, "answers_objects": ["x"]}, "answers_objects[0]", "expected an object, got str"),
        ({**PROCESSED, "answers_objects": [{"spans": [["x"]]}]}, "answers_objects[0].spans[0]",
         "expected text, got list"),
    ],
)  # fmt: skip
def test_hotpotqa_fields_of_the_wrong_type_are_named(tmp_path, record, field, problem):
    """Each was a raw traceback (or a skip naming no field) before."""
    write_jsonl(tmp_path / "h.jsonl", [record])
    with pytest.raises(
        DataFormatError, match=rf"h.jsonl:1: field '{re.escape(field)}': {re.escape(problem)}"
    ):
        load_open_questions(tmp_path / "h.jsonl")


def test_corpus_ids_are_content_hashes_independent_of_order(tmp_path):
    (tmp_path / "a.txt").write_text('"a star is hot"\nwater is wet\n\nwater   is wet\n')
    (tmp_path / "b.txt").write_text("water is wet\na star is hot\n")
    a, b = Corpus.from_files([tmp_path / "a.txt"]), Corpus.from_files([tmp_path / "b.txt"])
    assert len(a) == 2  # quotes stripped, duplicates (up to white space) merged
    assert [f.id for f in a.facts] == [f.id for f in b.facts] and a.content_hash == b.content_hash
    assert a.facts[a.position(fact_id("water is wet"))].text == "water is wet"


def test_corpus_formats_jsonl_dict_and_worldtree_tables(tmp_path):
    write_jsonl(tmp_path / "f.jsonl", [{"id": "1", "text": "ice is cold"}])
    (tmp_path / "d.json").write_text(json.dumps({"s0": "DUMMY", "s1": "a cat is a mammal"}))
    tables = tmp_path / "tables"
    tables.mkdir()
    (tables / "KINDOF.tsv").write_text(
        "X\t[FILL]\tY\t[SKIP] UID\ncat\tis a kind of\tanimal\tuid-1\n"
    )
    corpus = Corpus.from_files([tmp_path / "f.jsonl", tmp_path / "d.json", tables])
    assert sorted(corpus.texts) == ["a cat is a mammal", "cat is a kind of animal", "ice is cold"]


def test_bad_jsonl_fact_and_empty_corpus(tmp_path):
    write_jsonl(tmp_path / "f.jsonl", [{"id": "1", "text": "ok"}, {"id": "2"}])
    with pytest.raises(DataFormatError, match=r"f.jsonl:2: field 'text'"):
        Corpus.from_files([tmp_path / "f.jsonl"])
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(DataFormatError, match="empty corpus"):
        Corpus.from_files([tmp_path / "empty.txt"])


def test_a_byte_that_is_not_utf8_is_named_by_line_and_column(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_bytes(json.dumps(mc("q1")).encode() + b"\n" + b'{"id": "q\xff2"}\n')
    with pytest.raises(
        DataFormatError, match=r"q.jsonl:2: field '<encoding>': byte 0xff at column 10"
    ):
        load_multiple_choice(path)
    corpus = tmp_path / "facts.txt"
    corpus.write_bytes(b"a fact\nanother \xfe fact\n")
    with pytest.raises(DataFormatError, match=r"facts.txt:2: field '<encoding>'"):
        Corpus.from_files([str(corpus)])


def test_u2028_inside_a_json_string_does_not_split_the_line(tmp_path):
    row = mc("q1")
    row["question"]["stem"] = "Which one\u2028is it?"
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    assert load_multiple_choice(path)[0].stem == "Which one\u2028is it?"


def test_a_huge_stem_and_a_repeated_id_are_refused(tmp_path):
    row = mc("q1")
    row["question"]["stem"] = "why " * 10_000
    with pytest.raises(
        DataFormatError, match=r"question.stem': has 40,000 characters \(at most 20,000\)"
    ):
        load_multiple_choice(write_jsonl(tmp_path / "a.jsonl", [row]))
    with pytest.raises(DataFormatError, match=r"b.jsonl:2: field 'id': 'q1' repeats line 1"):
        load_multiple_choice(write_jsonl(tmp_path / "b.jsonl", [mc("q1"), mc("q1")]))


def test_a_truncated_hotpotqa_array_names_its_file(tmp_path):
    path = tmp_path / "hp.json"
    path.write_text('[{"_id": "a", "question": "Who?", "answer": "x", "context": [')
    with pytest.raises(DataFormatError, match=r"hp.json:1: field '<json>': invalid JSON"):
        load_open_questions(path)


def test_open_questions_keep_the_dataset_question_type(tmp_path):
    """2Wiki/HotpotQA `type` and MuSiQue's hop count (from its ids) split the multi-hop tables."""
    from collections import Counter

    from cgr.data.loaders import load_lenient

    context = [["Tamberg", ["Tamberg lies on the Sella."]]]
    records = [
        {
            "_id": "a",
            "type": "bridge_comparison",
            "question": "q?",
            "answer": "x",
            "context": context,
        },
        {"id": "3hop1__12_34", "question": "q?", "answer": "x", "paragraphs": []},
        {"id": "plain", "question": "q?", "answer": "x", "paragraphs": []},
    ]
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(records))
    assert [q.kind for q in load_lenient(str(path), Counter())] == ["bridge_comparison", "3hop", ""]


def test_a_byte_order_mark_is_dropped_from_corpus_and_question_files_alike(tmp_path):
    from cgr.data.corpus import Corpus
    from cgr.data.loaders import load_multiple_choice

    corpus = tmp_path / "facts.txt"
    corpus.write_bytes("\ufeffthe sun is a star\nwater is wet\n".encode())
    assert [f.text for f in Corpus.from_files([corpus]).facts][0] == "the sun is a star"
    questions = tmp_path / "q.jsonl"
    record = '{"id": "q1", "question": {"stem": "Is the sun a star?", "choices": [{"label": "A", "text": "yes"}, {"label": "B", "text": "no"}]}, "answerKey": "A"}'
    questions.write_bytes(("\ufeff" + record + "\n").encode())
    assert load_multiple_choice(questions)[0].id == "q1"


def test_a_corpus_line_longer_than_a_fact_is_refused_naming_file_and_line(tmp_path):
    from cgr.data.corpus import Corpus
    from cgr.errors import DataFormatError

    corpus = tmp_path / "facts.txt"
    corpus.write_text("the sun is a star\n" + "x " * 50_000 + "\n")
    with pytest.raises(DataFormatError, match=r"facts.txt:2: .*99,999 characters \(at most 20,000"):
        Corpus.from_files([corpus])


def test_a_hotpotqa_answer_given_as_a_list_is_refused_and_named(tmp_path, capsys):
    from collections import Counter

    from cgr.data.loaders import load_lenient

    good = {"_id": "h1", "question": "Who?", "answer": "Ann", "context": [["T", ["Ann."]]]}
    bad = {**good, "_id": "h2", "answer": ["Bob", "Rob"]}
    path = tmp_path / "hp.json"
    path.write_text(json.dumps([good, bad]))
    counters = Counter()
    assert [q.id for q in load_lenient(str(path), counters)] == ["h1"]
    out = capsys.readouterr().out
    assert f"skipped: {path} [1] (record 'h2'): field 'answer': expected text, got list" in out
    path.write_text(json.dumps([bad, {**bad, "_id": "h3"}]))
    with pytest.raises(DataFormatError, match="no well-formed record \\(of 2; 2 malformed"):
        load_lenient(str(path), Counter())


def test_a_fifo_device_or_folder_is_named_not_opened(tmp_path):
    import os

    from cgr.data.loaders import require_file

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path, problem in ((fifo, "not a plain file"), (tmp_path, "a folder"),
                          (tmp_path / "nope", "file not found")):  # fmt: skip
        with pytest.raises(DataFormatError, match=problem):
            require_file(path)


def test_deeply_nested_json_is_one_line(tmp_path):
    from cgr.data.loaders import load_multiple_choice

    path = tmp_path / "q.jsonl"
    path.write_text("[" * 100_000 + "\n")
    with pytest.raises(
        DataFormatError, match=":1: field '<json>': invalid JSON \\(nested too deeply"
    ):
        load_multiple_choice(path)


def _choices(n: int) -> dict:
    return {"id": "x", "question": {"stem": "Which?", "choices": [
        {"label": str(i), "text": f"choice {i}"} for i in range(n)]}, "answerKey": "0"}  # fmt: skip


@pytest.mark.parametrize(
    ("line", "field", "says"),
    [
        (json.dumps(_choices(0)), "question.choices", "has 0 choices (from 2 to 8)"),
        (json.dumps(_choices(1)), "question.choices", "has 1 choice (from 2 to 8)"),
        (json.dumps(_choices(50)), "question.choices", "has 50 choices (from 2 to 8)"),
        (json.dumps(mc("x")).replace('"Which one?"', "NaN"), "question.stem", "expected str, got float"),
        (json.dumps(mc("x")).replace('"Which one?"', "-Infinity"), "question.stem", "expected str"),
        (json.dumps(mc("x"))[:-1] + ', "answerKey": NaN}', "answerKey", "'nan' is not one of"),
    ],
)  # fmt: skip
def test_0_1_or_50_choices_and_nan_are_one_line(tmp_path, line, field, says):
    """Malformed question files as an attacker shapes them: each one line naming file, line
    and field."""
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(mc("ok")) + "\n" + line + "\n")
    with pytest.raises(DataFormatError) as err:
        load_multiple_choice(path)
    assert err.value.line == 2 and err.value.field == field and says in str(err.value)
