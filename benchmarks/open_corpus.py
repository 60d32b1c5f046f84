"""BM25 over a corpus of its own (`cgr ircot|riches --corpus`) by corpus size: reading the jsonl,
building the index (once), its size on disk, the memory of the build and of a later run that
memory-maps it, and queries/s (k = 10, one query at a time as the IRCoT loop asks).

    .venv/bin/python benchmarks/open_corpus.py --sizes 100000 1000000 [--table]

The corpus is synthetic (said so in the table): paragraphs of 40-80 words drawn from a Zipfian
vocabulary of 100k words, titled, as HotpotQA's abstracts are in length; its retrieval quality
means nothing, its costs are those of any corpus of that size and length. Each size runs in a
fresh process (its peak memory its own) and is saved when it finishes
(benchmarks/results/open_corpus-N.json). Dense retrieval over such a corpus is the FAISS index
of benchmarks/index_scale.py over its vectors, with encoding as in benchmarks/encode_scale.py.
Run alone: the timings are the machine's."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import load_result, machine, peak_rss_mb, print_table, save_result  # noqa: E402

HOTPOT_ABSTRACTS = 5_200_000  # about as many abstracts as HotpotQA's full-wiki setting reads
QUERIES = 300


def synthetic_corpus(path: Path, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    words = [f"w{i:05d}" for i in range(100_000)]
    ranks = np.arange(1, len(words) + 1)
    p = 1 / ranks**1.07
    p /= p.sum()
    with path.open("w") as f:
        for start in range(0, n, 50_000):
            m = min(50_000, n - start)
            lengths = rng.integers(40, 81, m)
            drawn = rng.choice(len(words), int(lengths.sum()), p=p)
            at = 0
            for i, length in enumerate(lengths):
                text = " ".join(words[j] for j in drawn[at : at + length]) + "."
                at += length
                f.write(
                    json.dumps({"id": str(start + i), "title": f"Doc {start + i}", "text": text})
                    + "\n"
                )


def run_size(n: int) -> dict:
    from cgr.retrieval.open_corpus import BM25CorpusRetriever, read_paragraphs

    with tempfile.TemporaryDirectory(dir=".") as work:
        path = Path(work) / "corpus.jsonl"
        start = time.perf_counter()
        synthetic_corpus(path, n)
        written = time.perf_counter() - start
        start = time.perf_counter()
        corpus = read_paragraphs(path)
        read = time.perf_counter() - start
        start = time.perf_counter()
        retriever = BM25CorpusRetriever(path, corpus)
        build = time.perf_counter() - start
        build_rss = peak_rss_mb()
        index_mb = sum(f.stat().st_size for f in retriever.folder.rglob("*") if f.is_file()) / 2**20
        start = time.perf_counter()
        again = BM25CorpusRetriever(path, corpus)
        load = time.perf_counter() - start
        rng = np.random.default_rng(1)
        queries = [" ".join(corpus[int(i)].text.split()[:8]) for i in rng.integers(0, n, QUERIES)]
        start = time.perf_counter()
        for q in queries:
            again.retrieve([q], 10)
        qps = QUERIES / (time.perf_counter() - start)
        return {"paragraphs": n, "corpus_mb": path.stat().st_size / 2**20, "write_s": written,
                "read_s": read, "build_s": build, "index_mb": index_mb, "load_s": load,
                "peak_rss_mb": build_rss, "queries_per_s": qps, "machine": machine(),
                "date": time.strftime("%Y-%m-%d")}  # fmt: skip


def table() -> None:
    rows = [r for p in sorted(Path("benchmarks/results").glob("open_corpus-*.json"))
            if (r := json.loads(p.read_text()))]  # fmt: skip
    rows.sort(key=lambda r: r["paragraphs"])
    print(
        f"BM25 (bm25s) over a synthetic corpus of 40-80-word paragraphs; {rows[0]['machine'] if rows else machine()}"
    )
    print()
    print_table(["paragraphs", "corpus MB", "read s", "index build s", "index MB on disk",
                 "peak RSS MB (build)", "load (mmap) s", "queries/s, k=10"],
                [[f"{r['paragraphs']:,}", round(r["corpus_mb"]), round(r["read_s"], 1),
                  round(r["build_s"], 1), round(r["index_mb"]), round(r["peak_rss_mb"]),
                  round(r["load_s"], 2), round(r["queries_per_s"], 1)] for r in rows])  # fmt: skip
    if rows:
        big = rows[-1]
        scale = HOTPOT_ABSTRACTS / big["paragraphs"]
        print()
        print(f"Extrapolated linearly to HotpotQA's ~{HOTPOT_ABSTRACTS / 1e6:.1f}M abstracts (x{scale:.1f}): "
              f"index build about {big['build_s'] * scale / 60:.0f} min, {big['index_mb'] * scale / 1024:.1f} GB "
              f"on disk, {big['peak_rss_mb'] * scale / 1024:.0f} GB peak memory while building; "
              "queries/s fall with the posting lists' length.")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="*", default=[100_000, 1_000_000])
    parser.add_argument("--table", action="store_true")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a size, in this process
    args = parser.parse_args()
    if args.one:
        save_result(f"open_corpus-{args.one}", run_size(args.one))
        return
    if not args.table:
        for n in args.sizes:
            if load_result(f"open_corpus-{n}") is None:
                subprocess.run([sys.executable, __file__, "--one", str(n)], check=True)
    table()


if __name__ == "__main__":
    main()
