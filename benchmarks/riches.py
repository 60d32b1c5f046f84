"""RICHES tables: RICHES against OneR and IRCoT on the same questions and LM, beam
1/5/10 (paper Table 5), keywords and the adaptive beam on/off (Table 6), key kinds (Table 3),
seconds per question; and the key indexes' build time, memory and next-token query latency by
corpus size (FM-index against the marisa trie, 10k to 1M keys).

    .venv/bin/python benchmarks/riches.py [--n 100] [--rows riches beam1 ...] [--datasets hotpotqa]
    .venv/bin/python benchmarks/riches.py --scale 10000 100000 1000000   # index rows only
    .venv/bin/python benchmarks/riches.py --table                        # saved rows only

Each row is one `cgr riches` run (its predictions in benchmarks/results/riches_runs/NAME), saved
as benchmarks/results/riches-*.json when it finishes; a killed row resumes inside `cgr riches`
from its partial file, so the table fills over sessions. OneR and IRCoT come from
benchmarks/ircot.py's saved cells for the same questions and LM (`--backend transformers`).
Index rows build each index in a fresh process, so the memory column is that process's growth."""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (  # noqa: E402
    RESULTS,
    ROOT,
    interval,
    load_result,
    machine,
    machines,
    print_table,
    run_cli,
    save_result,
)
from benchmarks.ircot import DATASETS, bootstrap_interval, cell_name  # noqa: E402

# row -> (label, `cgr riches` overrides); the default config is sentence keys, FM-index, beam 5,
# adaptive beam, keyword thoughts, multi-hop demonstrations
ROWS = {
    "riches": ("RICHES (sentence keys, beam 5, adaptive, keywords)", []),
    "beam1": ("beam 1", ["--decode.beam_size", "1"]),
    "beam10": ("beam 10", ["--decode.beam_size", "10"]),
    "no_keywords": ("without keyword thoughts", ["--riches.keywords", "false"]),
    "no_adaptive": ("without the adaptive beam", ["--decode.adaptive", "false"]),
    "paragraph_keys": ("paragraph keys", ["--riches.key_kind", "paragraph"]),
    "title_keys": ("title keys", ["--riches.key_kind", "title"]),
    "trie": ("marisa trie instead of the FM-index", ["--riches.index", "trie"]),
}


def row_name(dataset: str, row: str, n: int, quantize: str = "none") -> str:
    return f"riches-{dataset}-{row}-{n}" + ("" if quantize == "none" else f"-{quantize}")


def summarise(out: Path) -> dict:
    records = [json.loads(line) for line in (out / "predictions.jsonl").open(encoding="utf-8")]
    metrics = json.loads((out / "metrics.json").read_text())
    row: dict = {"n": len(records), "seconds_per_question": metrics["seconds_per_question"],
                 "keys_per_question": metrics["keys_per_question"],
                 "decodes_without_answer": metrics.get("decodes_without_answer", 0)}  # fmt: skip
    for key in ("em", "f1", "hits", "attributed_proxy"):
        values = [float(r[key]) for r in records if r[key] is not None]
        row[key] = sum(values) / len(values) if values else float("nan")
        row[f"{key}_ci95"] = bootstrap_interval(values)
    row["machine"] = machine()
    return row


def run_row(dataset: str, row: str, n: int, force: bool, quantize: str = "none") -> None:
    name = row_name(dataset, row, n, quantize)
    if load_result(name) and not force:
        return
    out = RESULTS / "riches_runs" / name
    run_cli(name, ["riches", "--config", "configs/riches_hotpotqa.yaml", "--data", DATASETS[dataset],
                   "--limit", str(n), "--out", str(out), "--generator.quantize", quantize, *ROWS[row][1]])  # fmt: skip
    result = {
        "dataset": dataset,
        "row": row,
        "overrides": ROWS[row][1],
        "quantize": quantize,
        **summarise(out),
    }
    save_result(name, result)
    print(f"{name}: f1 {result['f1']:.3f} hits {result['hits']:.3f} in "
          f"{result['seconds_per_question']:.1f} s/question", flush=True)  # fmt: skip


def quality_table(datasets: list[str], rows: list[str], n: int, quantize: str = "none") -> None:
    table, saved = [], []
    for dataset in datasets:
        for method in ("oner", "ircot"):  # benchmarks/ircot.py's cells, same LM and questions
            r = load_result(cell_name(dataset, method, n, "transformers", "smollm2", quantize))
            saved.append(r)
            label = {"oner": "OneR (BM25, K=4)", "ircot": "IRCoT (BM25, K=4)"}[method]
            if r is None:
                table.append([dataset, label, "not run (benchmarks/ircot.py --backend transformers)",
                              "", "", "", "", "", "", ""])  # fmt: skip
            else:
                table.append([dataset, label, r["n"], interval(r, "em"), interval(r, "f1"),
                              interval(r, "recall"), "–", "–", "–", f"{r['seconds_per_question']:.1f}"])  # fmt: skip
        for row in rows:
            r = load_result(row_name(dataset, row, n, quantize))
            saved.append(r)
            if r is None:
                table.append([dataset, ROWS[row][0], "not run", "", "", "", "", "", "", ""])
                continue
            table.append([dataset, ROWS[row][0], r["n"], interval(r, "em"), interval(r, "f1"),
                          interval(r, "hits"), f"{r['attributed_proxy']:.2f}", f"{r['keys_per_question']:.2f}",
                          r.get("decodes_without_answer", "–"), f"{r['seconds_per_question']:.1f}"])  # fmt: skip
    weights = "float32" if quantize == "none" else f"{quantize} linear layers"
    print(f"RICHES vs OneR / IRCoT, SmolLM2-135M-Instruct (transformers, {weights}); "
          f"95 % bootstrap intervals over questions; {machines(saved)}")  # fmt: skip
    print(
        "(hits: gold supporting paragraphs among the quoted keys' paragraphs; OneR/IRCoT: "
        "gold-paragraph recall of their retrieved paragraphs)"
    )
    print_table(["dataset", "system", "n", "EM", "F1", "hits / recall", "attributed (proxy)",
                 "keys/question", "no answer", "s/question"], table)  # fmt: skip


# ---------------------------------------------------------------- index scaling (item 1)

WORDS = 20_000


def synthetic_keys(n: int, seed: int = 0) -> list[str]:
    """Sentences of 6-24 words over a 20k-word vocabulary with Zipf-like frequencies (like
    corpus sentences: shared frequent words, so prefixes branch late), each made unique."""
    rng = random.Random(seed)
    vocab = [f"w{i:x}" for i in range(WORDS)]
    weights = [1 / (r + 1) for r in range(WORDS)]
    out = []
    for i in range(n):
        words = rng.choices(vocab, weights, k=rng.randint(6, 24))
        out.append(" ".join(words).capitalize() + f" {i:x}.")
    return out


def index_child(kind: str, size: int, queries: int) -> None:
    """Run in a fresh process: build one index over `size` keys, print one JSON line."""
    import resource
    import time

    from cgr.riches.index import FMKeyIndex, TrieKeyIndex
    from cgr.riches.keys import Key

    texts = synthetic_keys(size)
    keys = [Key(t, i) for i, t in enumerate(texts)]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    index = FMKeyIndex(keys) if kind == "fm" else TrieKeyIndex(keys)
    build = time.perf_counter() - start
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    rng = random.Random(1)
    # a decoded key prefix: the start of a random key, cut at a random character
    prefixes = []
    for _ in range(queries):
        t = texts[rng.randrange(size)]
        prefixes.append(t[: rng.randint(3, len(t))])
    start = time.perf_counter()
    allowed = sum(index.allows(p) for p in prefixes)
    allows_us = (time.perf_counter() - start) / queries * 1e6
    start = time.perf_counter()
    for p in prefixes:
        index.continuations(p, 64)
    continuations_us = (time.perf_counter() - start) / queries * 1e6
    assert allowed == queries, "every key prefix must be allowed"
    print(json.dumps({"index": kind, "keys": size, "build_s": build, "memory_mb": grown,
                      "allows_us": allows_us, "continuations_us": continuations_us,
                      "queries": queries, "machine": machine()}))  # fmt: skip


def run_scale(sizes: list[int], force: bool) -> None:
    for size in sizes:
        for kind in ("fm", "trie"):
            name = f"riches_index-{kind}-{size}"
            if load_result(name) and not force:
                continue
            cmd = [sys.executable, __file__, "--index-child", kind, str(size)]
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
            if proc.returncode != 0:
                raise SystemExit(f"{name} failed:\n{proc.stderr[-3000:]}")
            save_result(name, json.loads(proc.stdout.strip().splitlines()[-1]))
            print(f"{name}: done", flush=True)


def scale_table(sizes: list[int]) -> None:
    rows = []
    for size in sizes:
        for kind, label in (("fm", "FM-index (fm-index)"), ("trie", "trie (marisa-trie)")):
            r = load_result(f"riches_index-{kind}-{size}")
            if r:
                rows.append([f"{size:,}", label, f"{r['build_s']:.2f}", f"{r['memory_mb']:.0f}",
                             f"{r['allows_us']:.1f}", f"{r['continuations_us']:.1f}"])  # fmt: skip
    if rows:
        print("\nKey indexes by corpus size (synthetic sentences; 2,000 key-prefix queries)")
        print_table(["keys", "index", "build s", "peak memory growth MB", "allows µs/query",
                     "64 continuations µs/query"], rows)  # fmt: skip


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--index-child":
        index_child(sys.argv[2], int(sys.argv[3]), 2000)
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--datasets", nargs="*", default=["hotpotqa"], choices=list(DATASETS))
    parser.add_argument("--rows", nargs="*", default=list(ROWS), choices=list(ROWS))
    parser.add_argument("--scale", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--quantize", default="none", choices=["none", "int8"],
                        help="generator.quantize of these rows and of the IRCoT cells compared")  # fmt: skip
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--table", action="store_true", help="print saved rows only")
    args = parser.parse_args()
    if not args.table:
        run_scale(args.scale, args.force)
        for dataset in args.datasets:
            for row in args.rows:
                run_row(dataset, row, args.n, args.force, args.quantize)
    if args.datasets:  # `--datasets` with none: only the index table (and `--scale`: only quality)
        quality_table(args.datasets, args.rows, args.n, args.quantize)
    if args.scale:
        scale_table(args.scale)


if __name__ == "__main__":
    main()
