"""Reader training speed: questions/s and peak memory for forward + backward + AdamW steps.

.venv/bin/python benchmarks/reader_speed.py [--steps 10] [--batch-size 8] [--lengths 128 256]
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 256])
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    rows = []
    for length in args.lengths:
        reader = MultipleChoiceReader(args.model, max_length=length).to(device)
        optimizer = torch.optim.AdamW(reader.parameters(), lr=1e-5)
        examples = batch(args.batch_size)
        labels = torch.zeros(args.batch_size, dtype=torch.long, device=device)
        for step in range(args.steps + 1):
            if step == 1:  # the first step warms up allocations and is not timed
                start = time.perf_counter()
            loss = torch.nn.functional.cross_entropy(
                reader(reader.encode(examples, device)), labels
            )
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        seconds = time.perf_counter() - start
        gpu_mb = torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else float("nan")
        rows.append([args.model, length, args.batch_size, seconds / args.steps,
                     args.batch_size * args.steps / seconds, peak_rss_mb(), gpu_mb])  # fmt: skip
    save_result("reader_speed", {"machine": machine(), "rows": rows})
    print(f"reader training (fwd + bwd + AdamW), 4 choices; {machine()}")
    print_table(
        ["model", "max length", "batch", "s/step", "questions/s", "peak RSS MB", "peak GPU MB"],
        rows,
    )


if __name__ == "__main__":
    main()
