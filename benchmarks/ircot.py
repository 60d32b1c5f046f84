"""IRCoT table: recall, EM and F1 of NoR, OneR and IRCoT with the default generator, with
seconds and generated tokens per question, on HotpotQA and 2WikiMultihopQA dev samples.

    .venv/bin/python benchmarks/ircot.py [--n 100] [--datasets hotpotqa 2wiki] [--methods nor oner ircot]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import RESULTS, ROOT, load_result, machine, print_table, save_result  # noqa: E402

DATASETS = {
    "hotpotqa": "../shared/data/hotpotqa/ircot_processed_dev_subsampled.jsonl",
    "2wiki": "../shared/data/2wikimultihopqa/dev_sample500.json",
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--methods", nargs="*", default=["nor", "oner", "ircot"])
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    for dataset in args.datasets:
        for method in args.methods:
            name = f"ircot-{dataset}-{method}-{args.n}"
            if load_result(name) and not args.force:
                continue
            out = RESULTS / "ircot_runs" / name
            cmd = [sys.executable, "-m", "cgr.cli", "ircot", "--config", "configs/ircot_hotpotqa.yaml",
                   "--data", DATASETS[dataset], "--limit", str(args.n), "--out", str(out), "--method", method]  # fmt: skip
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
            if proc.returncode != 0:
                raise SystemExit(proc.stderr[-3000:])
            last = proc.stdout.strip().splitlines()[-1].split()
            metrics = json.loads((out / "metrics.json").read_text())
            save_result(name, {"dataset": dataset, "method": method, "n": metrics["questions"],
                               "recall": float(last[1]), "em": float(last[3]), "f1": float(last[5]),
                               "seconds_per_question": metrics["seconds_per_question"],
                               "tokens_per_question": metrics["generated_tokens_per_question"], "machine": machine()})  # fmt: skip
    rows = []
    for dataset in args.datasets:
        for method in args.methods:
            r = load_result(f"ircot-{dataset}-{method}-{args.n}")
            if r:
                rows.append(
                    [
                        dataset,
                        method,
                        r["n"],
                        r["recall"],
                        r["em"],
                        r["f1"],
                        r["seconds_per_question"],
                        r["tokens_per_question"],
                    ]
                )
    print(
        f"IRCoT, generator SmolLM2-135M-Instruct (GGUF Q4_1), BM25 over the pooled contexts; {machine()}"
    )
    print_table(
        ["dataset", "method", "n", "recall", "EM", "F1", "s/question", "generated tokens/question"],
        rows,
    )


if __name__ == "__main__":
    main()
