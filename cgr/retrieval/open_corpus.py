"""Open retrieval over a corpus of its own (`cgr ircot|riches --corpus FILE|DIR`), as IRCoT
retrieves from all of its dataset's paragraphs rather than each question's own contexts.

A corpus is jsonl with a title and a text (`{"id", "title", "text"}`; IRCoT's processed corpora
write `paragraph_text`; HotpotQA's Wikipedia abstracts write `text` as a list of sentences with
links), as one file or a folder of them, plain or .gz / .bz2 compressed (the abstracts come as
bz2 files). The BM25 index (bm25s) is built once, with a progress bar, and saved beside the
corpus (`CORPUS.bm25s/`, or the cache when that folder cannot be written) with the corpus's
fingerprint; later runs memory-map it."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from cgr.data.loaders import require_file
from cgr.data.root import data_path
from cgr.errors import DataFormatError
from cgr.retrieval.paragraphs import CorpusParagraph

log = logging.getLogger(__name__)
SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.bz2", ".bz2")
TAG = re.compile(r"<[^>]+>")  # the abstracts' <a href="...">links</a>
INDEX_VERSION = 1


def add_corpus_argument(parser) -> None:
    """`--corpus`, as `cgr ircot` and `cgr riches` take it."""
    parser.add_argument(
        "--corpus",
        type=str | None,
        default=None,
        help="retrieve from this corpus (jsonl of title/text, a folder of them, .gz/.bz2: IRCoT's "
        "corpora, HotpotQA's abstracts) instead of each question's own paragraphs",
    )


def corpus_files(path: str | Path) -> list[Path]:
    p = data_path(path)
    if p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.is_file() and f.name.endswith(SUFFIXES))
        if not files:
            raise DataFormatError(
                str(p), None, "--corpus", f"no {', '.join(SUFFIXES)} file in folder"
            )
        return files
    return [require_file(p, "--corpus")]


def _lines(path: Path) -> Iterator[str]:
    opener = bz2.open if path.suffix == ".bz2" else gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        yield from f


def _text(value, path: Path, number: int) -> str:
    if isinstance(value, list):  # HotpotQA's abstracts: sentences, with links
        value = "".join(s for s in value if isinstance(s, str))
    if not isinstance(value, str):
        raise DataFormatError(str(path), number, "text", "expected a string or a list of sentences")
    return TAG.sub("", value).strip()


def read_paragraphs(path: str | Path) -> list[CorpusParagraph]:
    """Every paragraph with text, in file and line order."""
    found: list[CorpusParagraph] = []
    for file in corpus_files(path):
        for number, line in enumerate(_lines(file), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataFormatError(
                    str(file), number, "<json>", f"invalid JSON ({e.msg})"
                ) from None
            if not isinstance(record, dict):
                raise DataFormatError(str(file), number, "<record>", "expected a JSON object")
            raw = record.get("text", record.get("paragraph_text", record.get("contents")))
            if raw is None:
                raise DataFormatError(str(file), number, "text", "missing (text, paragraph_text)")
            text = _text(raw, file, number)
            title = record.get("title", "")
            if not isinstance(title, str):
                raise DataFormatError(str(file), number, "title", "expected a string")
            if text:
                found.append(CorpusParagraph(TAG.sub("", title).strip(), text))
    if not found:
        raise DataFormatError(str(path), None, "--corpus", "no paragraph with text")
    return found


def fingerprint(files: list[Path]) -> str:
    h = hashlib.sha256(f"v{INDEX_VERSION}".encode())
    for f in files:
        st = f.stat()
        h.update(f"{f.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def index_folder(path: str | Path, key: str) -> Path:
    """Beside the corpus where its folder is writable, else the user's cache."""
    p = data_path(path)
    beside = p.parent / f"{p.name}.bm25s"
    if os.access(p.parent, os.W_OK):
        return beside
    return Path(".cache/cgr/bm25") / key


class BM25CorpusRetriever:
    """bm25s over a corpus file, its index built once and memory-mapped afterwards."""

    def __init__(self, path: str | Path, corpus: list[CorpusParagraph] | None = None):
        from cgr.retrieval.sparse import import_bm25s

        bm25s = import_bm25s()

        self._bm25s = bm25s
        files = corpus_files(path)
        key = fingerprint(files)
        self.folder = index_folder(path, key)
        self.corpus = corpus if corpus is not None else read_paragraphs(path)
        stamp = self.folder / "cgr_corpus.json"
        if stamp.is_file() and json.loads(stamp.read_text()).get("fingerprint") == key:
            self.model = bm25s.BM25.load(str(self.folder), mmap=True, show_progress=False)
            log.info("corpus: BM25 index of %d paragraphs memory-mapped from %s", len(self.corpus),
                     self.folder)  # fmt: skip
        else:
            self.model = self._build(key)

    def _build(self, key: str):
        bm25s = self._bm25s
        log.info("corpus: building the BM25 index of %d paragraphs (once) into %s",
                 len(self.corpus), self.folder)  # fmt: skip
        tokens = bm25s.tokenize([p.searchable for p in self.corpus], stopwords="en",
                                show_progress=True)  # fmt: skip
        model = bm25s.BM25()
        model.index(tokens, show_progress=True)
        self.folder.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".bm25s-", dir=self.folder.parent))
        try:  # written aside, renamed into place: a killed build leaves no half index
            model.save(str(work), show_progress=False)
            (work / "cgr_corpus.json").write_text(
                json.dumps({"fingerprint": key, "paragraphs": len(self.corpus)})
            )
            shutil.rmtree(self.folder, ignore_errors=True)
            os.replace(work, self.folder)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        return bm25s.BM25.load(str(self.folder), mmap=True, show_progress=False)

    def retrieve(self, queries: list[str], k: int = 10) -> list[list[CorpusParagraph]]:
        if not queries:
            return []
        tokens = self._bm25s.tokenize(queries, stopwords="en", show_progress=False)
        k = min(k, len(self.corpus))
        positions, scores = self.model.retrieve(tokens, k=k, show_progress=False, n_threads=1)
        return [[self.corpus[int(i)] for i, s in zip(row, srow, strict=True) if s > 0]
                for row, srow in zip(positions, scores, strict=True)]  # fmt: skip
