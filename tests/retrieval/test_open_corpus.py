"""Open retrieval over a corpus file or folder: the formats read, the BM25 index built once
beside the corpus and memory-mapped afterwards, rebuilt when the corpus changes, and a bad
line named by file and line."""

from __future__ import annotations

import bz2
import json

import pytest

from cgr.errors import DataFormatError
from cgr.retrieval.open_corpus import BM25CorpusRetriever, read_paragraphs

ROWS = [
    {"id": "1", "title": "Tamberg", "text": "Tamberg is a city. The Sella river flows through it."},
    {
        "id": "2",
        "title": "Arto Venn",
        "paragraph_text": "Arto Venn was a novelist who died in Tamberg.",
    },
    {"id": "3", "title": "Glass Orchard", "text": "Glass Orchard is an electronic duo."},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_jsonl_and_a_folder_of_bz2_abstracts_are_read(tmp_path):
    assert [p.title for p in read_paragraphs(write_jsonl(tmp_path / "c.jsonl", ROWS))] == [
        "Tamberg", "Arto Venn", "Glass Orchard"]  # fmt: skip
    folder = tmp_path / "enwiki" / "AA"
    folder.mkdir(parents=True)
    line = {"id": "9", "title": "Sella", "text": ["The <a href=\"Sella\">Sella</a> is a river.",
                                                  " It flows north."]}  # fmt: skip
    with bz2.open(folder / "wiki_00.bz2", "wt") as f:
        f.write(json.dumps(line) + "\n")
    (paragraph,) = read_paragraphs(tmp_path / "enwiki")
    assert paragraph.title == "Sella" and paragraph.text == "The Sella is a river. It flows north."


def test_a_bad_line_is_named_by_file_and_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(ROWS[0]) + "\n{not json\n")
    with pytest.raises(DataFormatError, match=r"c\.jsonl:2: field '<json>'"):
        read_paragraphs(path)
    path.write_text(json.dumps({"title": "x"}) + "\n")
    with pytest.raises(DataFormatError, match=r"c\.jsonl:1: field 'text': missing"):
        read_paragraphs(path)


def test_bm25_index_is_built_once_beside_the_corpus_then_memory_mapped(tmp_path, caplog):
    path = write_jsonl(tmp_path / "c.jsonl", ROWS)
    caplog.set_level("INFO", logger="cgr.retrieval.open_corpus")
    first = BM25CorpusRetriever(path)
    assert (tmp_path / "c.jsonl.bm25s" / "cgr_corpus.json").is_file()
    assert "building the BM25 index" in caplog.text
    caplog.clear()
    second = BM25CorpusRetriever(path)
    assert "memory-mapped" in caplog.text and "building" not in caplog.text
    query = ["Which river flows through Tamberg?"]
    assert [p.title for p in second.retrieve(query, 2)[0]] == [
        p.title for p in first.retrieve(query, 2)[0]]  # fmt: skip
    assert second.retrieve(query, 1)[0][0].title == "Tamberg"
    # a changed corpus is indexed again
    write_jsonl(path, [*ROWS, {"title": "Sella", "text": "The Sella river rises in the Alps."}])
    caplog.clear()
    third = BM25CorpusRetriever(path)
    assert "building the BM25 index of 4 paragraphs" in caplog.text
    assert {p.title for p in third.retrieve(["Sella river Alps"], 1)[0]} == {"Sella"}
    assert not list(tmp_path.glob(".bm25s-*"))  # no build left half-written
