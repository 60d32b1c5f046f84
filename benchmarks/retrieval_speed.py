"""Retrieval speed: corpus encoding sentences/s, and hypotheses/s of the beam iterative retriever
against the raw FAISS searches it issues (their ratio is the retriever's overhead: query encoding,
beam bookkeeping, pool merging).

    .venv/bin/python benchmarks/retrieval_speed.py [--config configs/obqa.yaml] [--questions 100]
    .venv/bin/python benchmarks/retrieval_speed.py --table     # the saved result
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import ROOT, load_result, machine, print_table, save_result, train_config  # noqa: E402
from cgr.data.corpus import Corpus  # noqa: E402
from cgr.data.hypothesis import HypothesisGenerator  # noqa: E402
from cgr.data.loaders import load_multiple_choice  # noqa: E402
from cgr.retrieval.encoders import TextEncoder  # noqa: E402
from cgr.retrieval.factory import RetrievalConfig, build_retriever  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="configs/obqa.yaml")
    parser.add_argument(
        "--questions", type=int, default=100, help="dev questions (x choices = hypotheses)"
    )
    parser.add_argument(
        "--encode-sample", type=int, default=2000, help="facts encoded for sentences/s"
    )
    parser.add_argument("--table", action="store_true", help="only print the saved result")
    args = parser.parse_args()
    if args.table:
        if (saved := load_result("retrieval_speed")) is None:
            raise SystemExit("no saved retrieval_speed result: run the benchmark first")
        print_result(saved)
        return
    config = train_config(args.config)
    cfg = RetrievalConfig(**config["data"]["retrieval"])

    corpus = Corpus.from_files(cfg.corpus)
    encoder = TextEncoder(cfg.encoder, cfg.encode_batch_size, cfg.max_query_length)
    sample = corpus.texts[: args.encode_sample]
    start = time.perf_counter()
    encoder.encode(sample)
    encode_rate = len(sample) / (time.perf_counter() - start)

    retriever = build_retriever(cfg)  # builds or loads the embedding cache
    questions = load_multiple_choice(ROOT / config["data"]["dev_file"])[: args.questions]
    hyps = [
        h
        for q_h in HypothesisGenerator().generate_many(
            [(q.stem, [c.text for c in q.choices]) for q in questions]
        )
        for h in q_h
    ]
    rows = []
    for name, steps in [("dense, T=1", 1), (f"beam, K={cfg.beam_size}, T={cfg.steps}", cfg.steps)]:
        retriever = build_retriever(replace(cfg, method="beam", steps=steps))
        start = time.perf_counter()
        for i in range(0, len(hyps), 64):
            retriever.retrieve(hyps[i : i + 64])
        total = time.perf_counter() - start
        rows.append([name, len(hyps), len(hyps) / total, retriever.search_calls,
                     len(hyps) / retriever.search_seconds, total / retriever.search_seconds])  # fmt: skip
    result = {"machine": machine(), "corpus_facts": len(corpus), "encode_sentences_per_s": encode_rate,
              "open_book": bool(cfg.open_book), "encoder": cfg.encoder,
              "encode_sample": len(sample), "encode_batch_size": cfg.encode_batch_size, "rows": rows}  # fmt: skip
    save_result("retrieval_speed", result)
    print_result(result)


def print_result(result: dict) -> None:
    encoder = f"; encoder {result['encoder']}" if "encoder" in result else ""
    print(f"corpus: {result['corpus_facts']} facts{encoder}; open book: {result['open_book']}; "
          f"{result['machine']}; corpus encoding: {result['encode_sentences_per_s']:.0f} sentences/s")  # fmt: skip
    print_table(["retriever", "hypotheses", "hypotheses/s", "FAISS calls",
                 "hypotheses/s of raw FAISS", "overhead ratio"], result["rows"])  # fmt: skip


if __name__ == "__main__":
    main()
