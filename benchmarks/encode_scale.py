"""Corpus encoding throughput of `cgr encode` by process count: the same N facts of
the science corpus encoded into an empty cache by 1 process and by 2 DDP processes (gloo), each
process with one thread, so the second process brings one more core and nothing else; plus one
process with two threads (what `cgr train` does in-process on this machine) for reference.

Facts/s is N over the whole command's wall time (model loading, process start-up and the index
build included, as a user sees it), so the speed-up of 2 processes is a lower bound.

    .venv/bin/python benchmarks/encode_scale.py [--facts 16384]

Run alone: the timings are the machine's. Rows are saved as benchmarks/results/encode_scale-*.json.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import ROOT, load_result, machine, print_table, save_result  # noqa: E402
from cgr.data.root import data_root

CORPUS = data_root() / "corpus/arc_ir_sentences.txt"  # cgr data get arc
# (row, devices, threads per process)
SETTINGS = [("1 process, 1 thread", 1, 1), ("2 processes (DDP), 1 thread each", 2, 1),
            ("1 process, 2 threads", 1, 2)]  # fmt: skip


def run(facts: int, devices: int, threads: int) -> dict:
    with tempfile.TemporaryDirectory(dir=ROOT / ".cache") as tmp:
        corpus = Path(tmp) / "facts.txt"
        lines = CORPUS.read_text(encoding="utf-8").splitlines()[:facts]
        corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
        cmd = [sys.executable, "-m", "cgr.cli", "encode", "--config", "configs/obqa.yaml",
               f"--data.retrieval.corpus=[{corpus}]", "--data.retrieval.open_book=null",
               f"--data.retrieval.cache_dir={tmp}/cache", f"--trainer.devices={devices}"]  # fmt: skip
        if devices > 1:
            cmd.append("--trainer.strategy=ddp")
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1"}
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"cgr encode failed:\n{proc.stderr[-3000:]}")
        chunks = len(list((Path(tmp) / "cache").rglob("chunk-*.npy")))
    return {"facts": len(lines), "devices": devices, "threads": threads, "seconds": seconds,
            "facts_per_s": len(lines) / seconds, "chunks": chunks, "machine": machine()}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=16_384, help="8 chunks of 2,048 by default")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    (ROOT / ".cache").mkdir(exist_ok=True)
    rows = []
    for label, devices, threads in SETTINGS:
        name = f"encode_scale-{args.facts}-d{devices}-t{threads}"
        row = None if args.force else load_result(name)
        if row is None:
            row = {"row": label, **run(args.facts, devices, threads)}
            save_result(name, row)
            print(f"{label}: {row['facts_per_s']:.0f} facts/s", flush=True)
        rows.append(row)
    base = rows[0]["facts_per_s"]
    print(f"cgr encode, {args.facts} facts of the science corpus, MiniLM; {machine()}")
    print_table(["setting", "wall s", "facts/s (wall)", "speed-up over 1 process, 1 thread"],
                [[r["row"], f"{r['seconds']:.1f}", f"{r['facts_per_s']:.0f}",
                  f"{r['facts_per_s'] / base:.2f}"] for r in rows])  # fmt: skip


if __name__ == "__main__":
    main()
