"""Reader training speed: questions/s and peak memory for forward + backward + AdamW steps.

`--processes N` runs N copies at once, each pinned to one core with one torch thread, and sums
their questions/s: whether two training runs side by side on a small CPU finish sooner than the
same two one after the other with every core each.

.venv/bin/python benchmarks/reader_speed.py [--steps 10] [--batch-size 8] [--lengths 128 256]
.venv/bin/python benchmarks/reader_speed.py --lengths 128 --processes 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import machine, peak_rss_mb, print_table, save_result  # noqa: E402
from cgr.reader.examples import ReaderExample  # noqa: E402
from cgr.reader.model import MultipleChoiceReader  # noqa: E402
from cgr.retrieval.base import RetrievedFact  # noqa: E402


def batch(size: int, choices: int = 4) -> list[ReaderExample]:
    facts = [
        RetrievedFact(
            str(i), f"fact {i}: the sun heats the ocean and water evaporates into the air", 1.0
        )
        for i in range(15)
    ]
    return [ReaderExample(str(q), "Which of these would help a polar bear stay warm in winter?", list("ABCD"),
                          ["thick fur", "long claws", "a black nose", "small ears"], [""] * choices, [facts] * choices, 0)
            for q in range(size)]  # fmt: skip


def timed_steps(model: str, length: int, size: int, steps: int, device: str) -> float:
    """Seconds per training step, the first (warm-up) step not timed."""
    reader = MultipleChoiceReader(model, max_length=length).to(device)
    optimizer = torch.optim.AdamW(reader.parameters(), lr=1e-5)
    examples = batch(size)
    labels = torch.zeros(size, dtype=torch.long, device=device)
    for step in range(steps + 1):
        if step == 1:
            start = time.perf_counter()
        loss = torch.nn.functional.cross_entropy(reader(reader.encode(examples, device)), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return (time.perf_counter() - start) / steps


def side_by_side(args: argparse.Namespace, length: int) -> list[float]:
    """s/step of each of `--processes` copies started together, one core and thread each."""
    cores = sorted(os.sched_getaffinity(0))
    if args.processes > len(cores):
        raise SystemExit(f"--processes {args.processes}: only {len(cores)} cores available")
    command = [sys.executable, __file__, "--model", args.model, "--steps", str(args.steps),
               "--batch-size", str(args.batch_size), "--lengths", str(length)]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([*command, "--pinned-core", str(core)], env=env,
                              stdout=subprocess.PIPE, text=True)
             for core in cores[: args.processes]]  # fmt: skip
    return [json.loads(p.communicate()[0].strip().splitlines()[-1])["s_per_step"] for p in procs]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 256])
    parser.add_argument("--processes", type=int, default=1,
                        help="copies run at once, one core and one torch thread each")  # fmt: skip
    parser.add_argument("--pinned-core", type=int, help=argparse.SUPPRESS)  # one copy's worker
    args = parser.parse_args()
    if args.pinned_core is not None:
        os.sched_setaffinity(0, {args.pinned_core})
        torch.set_num_threads(1)
        seconds = timed_steps(args.model, args.lengths[0], args.batch_size, args.steps, "cpu")
        print(json.dumps({"s_per_step": seconds}))
        return
    if args.processes > 1:
        rows = []
        for length in args.lengths:
            per_copy = side_by_side(args, length)
            together = sum(args.batch_size / s for s in per_copy)
            rows.append([args.model, length, args.batch_size,
                         f"{args.processes} x 1 thread", max(per_copy), together])  # fmt: skip
        save_result(f"reader_speed-processes{args.processes}", {"machine": machine(), "rows": rows})
        print(f"reader training (fwd + bwd + AdamW), 4 choices, copies side by side; {machine()}")
        print_table(["model", "max length", "batch", "copies", "s/step (slowest copy)",
                     "questions/s (all copies)"], rows)  # fmt: skip
        return
    device = "cuda" if torch.cuda.is_available() else "cpu"
    rows = []
    for length in args.lengths:
        per_step = timed_steps(args.model, length, args.batch_size, args.steps, device)
        gpu_mb = torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else float("nan")
        rows.append([args.model, length, args.batch_size, per_step,
                     args.batch_size / per_step, peak_rss_mb(), gpu_mb])  # fmt: skip
    save_result("reader_speed", {"machine": machine(), "rows": rows})
    print(f"reader training (fwd + bwd + AdamW), 4 choices; {machine()}")
    print_table(
        ["model", "max length", "batch", "s/step", "questions/s", "peak RSS MB", "peak GPU MB"],
        rows,
    )


if __name__ == "__main__":
    main()
