"""Fact corpora: one fact per line, jsonl, WorldTree tables, the EntailmentBank sentence dict.

Facts are identified by a content hash and kept sorted by id, so the same facts in another file
order give the same corpus, the same corpus hash and the same embedding cache.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from cgr.data import jsonio
from cgr.data.loaders import iter_jsonl, read_utf8, require_file, text_lines
from cgr.data.records import Fact, fact_id, normalize_fact_text, text_key
from cgr.data.root import data_path
from cgr.errors import DataFormatError


def _clean_line(line: str) -> str:
    text = line.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':  # OpenBookQA's openbook.txt quotes each fact
        text = text[1:-1]
    return normalize_fact_text(text)


# a fact is a sentence or two; a longer line is a file that is not a fact list (one line per
# fact), and would stop the AMR parse after the models load (spaCy refuses texts this long)
MAX_FACT_CHARS = 20_000


def _iter_text(path: Path) -> Iterator[str]:
    for lineno, line in text_lines(path, "corpus file"):
        text = _clean_line(line)
        if len(text) > MAX_FACT_CHARS:
            raise DataFormatError(str(path), lineno, "<fact>",
                                  f"{len(text):,} characters (at most {MAX_FACT_CHARS:,} a fact)")  # fmt: skip
        if text:
            yield text


def _iter_jsonl_facts(path: Path) -> Iterator[str]:
    for lineno, obj in iter_jsonl(path):
        text = obj.get("text")
        if not isinstance(text, str) or not text.strip():
            raise DataFormatError(str(path), lineno, "text", "missing or empty")
        yield normalize_fact_text(text)


def _iter_sentence_dict(path: Path) -> Iterator[str]:
    try:
        data = jsonio.loads(read_utf8(path, "corpus file"))
    except json.JSONDecodeError as e:
        raise DataFormatError(str(path), e.lineno, "<json>", f"invalid JSON ({e.msg})") from None
    if not isinstance(data, dict):
        raise DataFormatError(str(path), None, "<root>", "expected a dict of id -> sentence")
    for key, text in data.items():
        if not isinstance(text, str):
            raise DataFormatError(str(path), None, key, "expected a string")
        if text.strip() and text.strip() != "DUMMY":
            yield normalize_fact_text(text)


def _iter_worldtree_tables(folder: Path) -> Iterator[str]:
    """WorldTree tablestore: a row's text is its non-[SKIP] cells joined by spaces."""
    for table in sorted(folder.glob("*.tsv")):
        lines = (line for _, line in text_lines(table, "corpus table"))
        rows = csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(rows, None)
        if header is None:
            continue
        keep = [i for i, h in enumerate(header) if not h.startswith("[SKIP]")]
        for row in rows:
            text = " ".join(row[i].strip() for i in keep if i < len(row) and row[i].strip())
            if text:
                yield normalize_fact_text(text)


def iter_fact_texts(path: str | Path) -> Iterator[str]:
    p = data_path(path)
    if p.is_dir():
        if not any(p.glob("*.tsv")):
            raise DataFormatError(str(p), None, "<folder>", "no WorldTree *.tsv tables in folder")
        yield from _iter_worldtree_tables(p)
        return
    require_file(p, "corpus file")
    if p.suffix == ".jsonl":
        yield from _iter_jsonl_facts(p)
    elif p.suffix == ".json":
        yield from _iter_sentence_dict(p)
    else:
        yield from _iter_text(p)


class Corpus:
    """An ordered, de-duplicated set of facts with a content hash."""

    def __init__(self, texts: Iterable[str]):
        by_id: dict[str, str] = {}
        for text in texts:
            by_id.setdefault(fact_id(text), text)
        self.facts: list[Fact] = [Fact(i, by_id[i]) for i in sorted(by_id)]
        self._position = {f.id: n for n, f in enumerate(self.facts)}

    @classmethod
    def from_files(cls, paths: Iterable[str | Path]) -> Corpus:
        paths = list(paths)
        corpus = cls(t for p in paths for t in iter_fact_texts(p))
        if not corpus.facts:
            raise DataFormatError(
                ", ".join(map(str, paths)) or "<none>", None, "<facts>", "empty corpus"
            )
        return corpus

    def __len__(self) -> int:
        return len(self.facts)

    def __getitem__(self, index: int) -> Fact:
        return self.facts[index]

    def __contains__(self, fid: str) -> bool:
        return fid in self._position

    def position(self, fid: str) -> int:
        return self._position[fid]

    @property
    def texts(self) -> list[str]:
        return [f.text for f in self.facts]

    @property
    def content_hash(self) -> str:
        h = hashlib.sha256()
        for f in self.facts:
            h.update(f.id.encode())
        return h.hexdigest()[:16]


def text_keys(paths: list[str]) -> frozenset[str]:
    """The facts of these files as `text_key`s (the open book, matched by text across corpora)."""
    return frozenset(text_key(f.text) for f in Corpus.from_files(paths).facts)


# corpora up to this size are read once more before a model loads, so a bad line is named
# before the load (the usual science corpus: 0.6 s); larger ones when they are first read
CORPUS_READ_LIMIT = 100 * 2**20


def memory_bytes() -> int:
    import os

    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 2**40  # unknown: no bound from memory


def check_corpus_files(paths: list[str]) -> None:
    """Corpus files checked before any model loads: each a plain file (a FIFO, a device such as
    /dev/zero or /dev/stdin is refused) or a folder of tables; together at most a quarter of
    this machine's memory (a corpus is read whole); read through when small enough."""
    files = []
    for path in map(data_path, paths):
        if path.is_dir():
            files += [p for p in path.rglob("*") if p.is_file()]
            continue
        require_file(path, "corpus file")
        files.append(path)
    total = sum(p.stat().st_size for p in files)
    if total > (limit := memory_bytes() // 4):
        biggest = max(files, key=lambda p: p.stat().st_size)
        raise DataFormatError(str(biggest), None, "corpus file",
                              f"corpus of {total / 2**30:.1f} GiB (this machine reads at most "
                              f"{limit / 2**30:.1f} GiB, a quarter of its memory)")  # fmt: skip
    if total <= CORPUS_READ_LIMIT:
        for path in map(Path, paths):
            Corpus.from_files([path])
