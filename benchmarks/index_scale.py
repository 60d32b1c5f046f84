"""FAISS indexes by corpus size: build time, disk, RAM, queries/s at batch 64 and recall@10
against exact search, on 384-d vectors (synthetic, clustered like sentence embeddings) and on the
real 64k-fact corpus (with beam-iterative retrieval hypotheses/s per index).

    .venv/bin/python benchmarks/index_scale.py --sizes 100000 1000000 [5000000] [--real]

Each (size, index) row is saved when it finishes (benchmarks/results/index_scale-*.json) and
skipped on a re-run, so a table can fill over several sessions; `--table` prints saved rows.
Two recalls: `R@10 overlap` is the share of the exact top 10 found in the top 10 (10-recall@10);
`NN in top 10` is the share of queries whose exact nearest neighbour is in the top 10 (FAISS's
1-recall@10). Run alone: the timings are the machine's, both cores."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import load_result, machine, print_table, save_result  # noqa: E402

DIM = 384
QUERIES = 1000
BATCH = 64


def rss_mb(kind: str = "VmRSS") -> float:
    """Resident memory: all of it (VmRSS), the process's own (RssAnon) or mapped file pages
    (RssFile: the kernel's page cache of memory-mapped files, shared and evictable)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(kind + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(kind)


def clustered(
    n: int, queries: int, seed: int = 0, chunk: int = 262_144
) -> tuple[np.ndarray, np.ndarray]:
    """(n corpus vectors, held-out query vectors): unit vectors built from nested topics (sqrt(n)
    topics, groups of 64 and of 8 inside them, then noise), so that neighbours come graded like
    sentence embeddings' (MiniLM on the 64k corpus: cosine to the nearest fact 0.78, to the 10th
    0.65, to a random one 0.08; here 0.86 / 0.72 / 0.0). Built chunk by chunk: 5M vectors
    need their own 7.7 GB and little more."""
    rng = np.random.default_rng(seed)
    total = n + queries
    topics = rng.standard_normal((max(64, int(np.sqrt(n))), DIM), dtype=np.float32) / np.sqrt(DIM)
    held_out = np.zeros(total, dtype=bool)
    held_out[rng.choice(total, queries, replace=False)] = True
    out = np.empty((n, DIM), dtype=np.float32)
    q_out, written, q_written = np.empty((queries, DIM), dtype=np.float32), 0, 0
    for start in range(0, total, chunk):
        m = min(chunk, total - start)
        local = np.arange(m)
        groups64 = rng.standard_normal(((m + 63) // 64, DIM), dtype=np.float32) * (
            0.8 / np.sqrt(DIM)
        )
        groups8 = rng.standard_normal(((m + 7) // 8, DIM), dtype=np.float32) * (0.6 / np.sqrt(DIM))
        topic_of = rng.integers(0, len(topics), len(groups64))
        x = topics[topic_of[local // 64]] + groups64[local // 64] + groups8[local // 8]
        x += rng.standard_normal((m, DIM), dtype=np.float32) * (0.6 / np.sqrt(DIM))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        mask = held_out[start : start + m]
        kept, asked = x[~mask], x[mask]
        out[written : written + len(kept)] = kept
        q_out[q_written : q_written + len(asked)] = asked
        written, q_written = written + len(kept), q_written + len(asked)
    return out, q_out


def specs_for(n: int) -> dict[str, dict]:
    """Index settings by size: IVF cells ~ 2 sqrt(n) (FAISS's rule of thumb is 4-16 sqrt(n); fewer
    cells keep k-means training within minutes on two cores), PQ 48 or 96 x 8 bits (56 or 104
    bytes/vector with its id), PQ48 with its 100 best candidates re-scored exactly from the float
    vectors on disk (memory-mapped); HNSW at FAISS's default search depth and at 128, up to 1M
    (its build beyond is hours here). Above 1M only the compressed indexes: flat and IVF-Flat
    would hold the floats in RAM (7.7 GB at 5M), beside the benchmark's own copy."""
    nlist = int(2 ** round(np.log2(2 * np.sqrt(n))))
    ivf = {"nlist": nlist, "nprobe": 32}
    specs = {
        "flat": {"kind": "flat"},
        "ivf": {"kind": "ivf", **ivf},
        "ivfpq": {"kind": "ivfpq", **ivf, "pq_m": 48},
        "ivfpq_rerank": {"kind": "ivfpq", **ivf, "pq_m": 48, "rerank": 100},
        "ivfpq96": {"kind": "ivfpq", **ivf, "pq_m": 96},
    }
    if n <= 1_000_000:
        specs["hnsw"] = {"kind": "hnsw", "hnsw_m": 32}
        specs["hnsw_ef128"] = {"kind": "hnsw", "hnsw_m": 32, "ef_search": 128}
    else:  # half the cells visited: the speed a 5M index needs, recall restored by re-ranking
        specs = {k: v for k, v in specs.items() if k.startswith("ivfpq")}
        specs["ivfpq_rerank_nprobe16"] = {**specs["ivfpq_rerank"], "nprobe": 16}
    # the floats not in the page cache: each query reads its candidates from disk
    specs["ivfpq_rerank_cold"] = {**specs["ivfpq_rerank"], "cold": True}
    return specs


def measure(index, queries: np.ndarray, exact: np.ndarray) -> dict:
    start = time.perf_counter()
    found = np.concatenate(
        [index.search(queries[i : i + BATCH], 10)[1] for i in range(0, len(queries), BATCH)]
    )
    seconds = time.perf_counter() - start
    overlap = np.mean([len(set(f) & set(e)) / 10 for f, e in zip(found, exact, strict=True)])
    nn = np.mean([e[0] in f for f, e in zip(found, exact, strict=True)])
    return {
        "queries_per_s": len(queries) / seconds,
        "recall10_overlap": float(overlap),
        "nn_in_top10": float(nn),
    }


def run_row(
    name: str, folder: Path, vectors: np.ndarray, queries: np.ndarray, exact: np.ndarray, spec: dict
) -> dict:
    """Builds and saves the index in `folder` (or finds it there: rows that differ only in
    search settings share one file, and only the first one's build time is reported), then loads
    and searches it in a fresh process, whose resident memory is the index's (an allocator
    reusing freed memory hides it in this one) plus, when re-ranking, the pages of the float
    vectors that the searches touched."""
    import faiss

    from cgr.retrieval.index import FaissIndex, IndexSpec

    settings = {k: v for k, v in spec.items() if k != "cold"}
    index_spec = IndexSpec(**settings)
    path = folder / f"index-{index_spec.kind}-{index_spec.key()}.faiss"
    built = not path.exists()
    start = time.perf_counter()
    build_spec = IndexSpec(**{**settings, "rerank": 0})
    FaissIndex.load_or_build(folder, lambda: vectors, build_spec, use_gpu=False)
    build_s = time.perf_counter() - start if built else None
    if index_spec.rerank and not (folder / "vectors.npy").exists():
        np.save(folder / "vectors.npy", vectors)
    for file, array in (("queries.npy", queries), ("exact.npy", exact)):
        if not (folder / file).exists():  # one size's rows share them
            np.save(folder / file, array)
    probe = subprocess.run([sys.executable, __file__, "--probe", str(folder), json.dumps(spec)],
                           capture_output=True, text=True, check=True)  # fmt: skip
    row = json.loads(probe.stdout.strip().splitlines()[-1])
    row.update(name=name, spec=spec, build_s=build_s, disk_mb=path.stat().st_size / 2**20,
               threads=faiss.omp_get_max_threads(), machine=machine())  # fmt: skip
    return row


def drop_from_page_cache(path: Path) -> None:
    """The file's pages out of the kernel's cache (written back first), so re-ranking reads
    its candidates from disk, as for float vectors larger than RAM: a 'cold' row."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def read_into_page_cache(path: Path, block: int = 64 * 2**20) -> None:
    """Reads the file once, so re-ranking finds every float vector in the page cache (a 'warm'
    row: the machine has RAM to spare for the file, though not in the process)."""
    with open(path, "rb", buffering=0) as f:
        while f.read(block):
            pass


def probe(folder: str, spec_json: str) -> None:
    """In a fresh process: load the saved index, search, print load time, speed, recall and the
    resident memory the index added (after the searches touched what they needed)."""
    from cgr.retrieval.index import ExactVectors, FaissIndex, IndexSpec

    queries, exact = np.load(Path(folder) / "queries.npy"), np.load(Path(folder) / "exact.npy")
    spec = json.loads(spec_json)
    if spec.get("rerank"):  # the page cache state decides the speed: set it, not inherited
        cold = spec.pop("cold", False)
        (drop_from_page_cache if cold else read_into_page_cache)(Path(folder) / "vectors.npy")
    base = {kind: rss_mb(kind) for kind in ("VmRSS", "RssAnon", "RssFile")}
    start = time.perf_counter()
    index = FaissIndex.load_or_build(
        folder,
        lambda: None,
        IndexSpec(**spec),
        use_gpu=False,
        exact=lambda: ExactVectors([np.load(Path(folder) / "vectors.npy", mmap_mode="r")]),
    )
    row = {"load_s": time.perf_counter() - start, **measure(index, queries, exact)}
    row["ram_mb"] = rss_mb() - base["VmRSS"]
    row["ram_anon_mb"] = rss_mb("RssAnon") - base["RssAnon"]
    row["ram_file_mb"] = rss_mb("RssFile") - base["RssFile"]
    print(json.dumps(row))


def exact_top10(vectors: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Brute force without copying the vectors into an index (5M floats are 7.7 GB)."""
    import faiss

    return faiss.knn(queries, vectors, 10, faiss.METRIC_INNER_PRODUCT)[1]


def synthetic_rows(sizes: list[int], force: bool) -> None:
    """Per size, the vectors, queries, exact answers and built indexes stay in
    .cache/index_scale-N until every row of that size is saved, so a run stopped part-way (or a
    row added later) does not regenerate and rebuild them (at 5M: ~2 and ~10 minutes)."""
    for n in sizes:
        todo = [k for k in specs_for(n) if force or not load_result(f"index_scale-{n}-{k}")]
        if not todo:
            continue
        folder = Path(".cache") / f"index_scale-{n}"
        folder.mkdir(parents=True, exist_ok=True)
        if all((folder / f).exists() for f in ("vectors.npy", "queries.npy", "exact.npy")):
            vectors = np.load(folder / "vectors.npy", mmap_mode="r")
            queries, exact = np.load(folder / "queries.npy"), np.load(folder / "exact.npy")
        else:
            start = time.perf_counter()
            vectors, queries = clustered(n, QUERIES)
            exact = exact_top10(vectors, queries)
            print(f"{n} vectors and the exact top 10 in {time.perf_counter() - start:.0f} s", flush=True)  # fmt: skip
            np.save(folder / "queries.npy", queries)
            np.save(folder / "exact.npy", exact)
        for kind in todo:
            row = run_row(f"{n}", folder, vectors, queries, exact, specs_for(n)[kind])
            save_result(f"index_scale-{n}-{kind}", {**row, "size": n, "index": kind})
            print(f"{n} {kind}: {row['queries_per_s']:.0f} q/s, overlap {row['recall10_overlap']:.3f}, "
                  f"RAM {row['ram_mb']:.0f} MB (own {row['ram_anon_mb']:.0f})", flush=True)  # fmt: skip
        del vectors
        shutil.rmtree(folder)


def real_rows(force: bool) -> None:
    """The 64k-fact corpus of configs/obqa.yaml, with OBQA dev hypotheses through the beam."""
    from cgr.data.corpus import Corpus
    from cgr.data.hypothesis import HypothesisGenerator
    from cgr.data.loaders import load_multiple_choice
    from cgr.retrieval.dense import BeamIterativeRetriever, SearchSource
    from cgr.retrieval.embedding_cache import EmbeddingCache, cache_folder
    from cgr.retrieval.encoders import TextEncoder
    from cgr.retrieval.factory import RetrievalConfig
    from cgr.retrieval.index import ExactVectors, FaissIndex
    from cgr.training.config import resolved_config

    cfg = RetrievalConfig(**resolved_config("configs/obqa.yaml")["data"]["retrieval"])
    corpus = Corpus.from_files(cfg.corpus)
    encoder = TextEncoder(cfg.encoder, cfg.encode_batch_size, cfg.max_query_length)
    vectors = EmbeddingCache(
        cache_folder(cfg.cache_dir, cfg.encoder, corpus), cfg.encoder, corpus
    ).load_or_build(encoder)
    questions = load_multiple_choice(Path(cfg.open_book).parents[1] / "Main" / "dev.jsonl")[:64]
    hyps = [
        h
        for hs in HypothesisGenerator().generate_many(
            [(q.stem, [c.text for c in q.choices]) for q in questions]
        )
        for h in hs
    ]
    queries = encoder.encode(hyps[:QUERIES])
    exact = exact_top10(vectors, queries)
    n = len(vectors)
    folder = Path(tempfile.mkdtemp(dir=".cache"))
    for kind, spec in specs_for(n).items():
        name = f"index_scale-real{n}-{kind}"
        if spec.get("cold") or (load_result(name) and not force):
            continue  # the real corpus fits in RAM: no cold-cache row
        row = run_row(f"real {n}", folder, vectors, queries, exact, spec)
        index = FaissIndex(vectors, use_gpu=False, exact=ExactVectors([vectors]), **spec)
        retriever = BeamIterativeRetriever(
            encoder, SearchSource("corpus", corpus, index), cfg.beam_size, cfg.steps
        )
        start = time.perf_counter()
        retriever.retrieve(hyps)
        row["hypotheses_per_s"] = len(hyps) / (time.perf_counter() - start)
        save_result(name, {**row, "size": n, "index": kind})
        print(f"real {n} {kind}: {row['hypotheses_per_s']:.1f} hypotheses/s", flush=True)
    shutil.rmtree(folder)


def table(sizes: list[int]) -> None:
    rows = []
    names = [f"index_scale-{n}-{k}" for n in sizes for k in specs_for(n)]
    names += [
        p.stem for p in sorted((Path(__file__).parent / "results").glob("index_scale-real*.json"))
    ]
    for name in names:
        r = load_result(name)
        if r:
            spec = r["spec"]
            setting = ", ".join(f"{k}={v}" for k, v in spec.items() if k != "kind")
            build = "(same file)" if r["build_s"] is None else r["build_s"]
            rows.append([r["name"], r["index"], setting, build, r["load_s"], r["disk_mb"], r["ram_mb"],
                         r.get("ram_anon_mb", "–"), r.get("ram_file_mb", "–"), r["queries_per_s"],
                         r["recall10_overlap"], r["nn_in_top10"], r.get("hypotheses_per_s", "")])  # fmt: skip
    print(f"FAISS {DIM}-d inner product, {QUERIES} queries at batch {BATCH}; {machine()}; "
          "RAM = resident memory the loaded, searched index added: its own (anonymous) and "
          "mapped file pages (page cache of the index file or the re-ranking vectors; evictable)")  # fmt: skip
    print_table(["vectors", "index", "settings", "build s", "load s", "disk MB", "RAM MB", "own MB",
                 "file pages MB", "queries/s", "R@10 overlap", "NN in top 10", "beam hypotheses/s"], rows)  # fmt: skip


def main() -> None:
    if sys.argv[1:2] == ["--probe"]:
        return probe(*sys.argv[2:4])
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", nargs="*", type=int, default=[100_000, 1_000_000])
    parser.add_argument("--real", action="store_true", help="also the 64k-fact corpus")
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--table", action="store_true", help="print saved rows only")
    args = parser.parse_args()
    Path(".cache").mkdir(exist_ok=True)
    if not args.table:
        synthetic_rows(args.sizes, args.force)
        if args.real:
            real_rows(args.force)
    table(args.sizes)


if __name__ == "__main__":
    main()
