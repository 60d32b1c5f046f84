"""IRCoT on a model server against the same model in process: `cgr ircot` on the first N
HotpotQA dev questions with the packaged SmolLM2 GGUF, run by llama.cpp in process
(`generator.backend llamacpp`) and behind llama.cpp's own HTTP server on 127.0.0.1
(`generator.backend openai`, xllamacpp's Server with one slot per request in flight) at
`generator.concurrency` 1 and 4. No response cache, so every request is sent. Reported: wall
seconds per question (the command's whole run, model load included for the in-process row), the
loop's own seconds per question, F1 and EM, and how many answers equal the in-process run's.

    .venv/bin/python benchmarks/ircot_server.py [--n 10] [--concurrency 1 4]
    .venv/bin/python benchmarks/ircot_server.py --table
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import RESULTS, ROOT, load_result, machine, print_table, save_result  # noqa: E402
from benchmarks.ircot import DATASETS  # noqa: E402
from cgr.data.root import data_path  # noqa: E402

CONTEXT = 4096  # tokens per slot: a step's prompt (demonstrations and paragraphs) fits


def run(name: str, generator: list[str], n: int) -> dict:
    out = RESULTS / "ircot_runs" / name
    args = [sys.executable, "-m", "cgr.cli", "ircot", "--config", "configs/ircot_hotpotqa.yaml",
            "--data", str(data_path(DATASETS["hotpotqa"])), "--limit", str(n), "--out", str(out),
            *generator]  # fmt: skip
    log = ROOT / "logs" / "bench" / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with log.open("w") as sink:
        proc = subprocess.run(args, cwd=ROOT, stdout=sink, stderr=sink)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed:\n{log.read_text()[-3000:]}")
    records = [json.loads(line) for line in (out / "predictions.jsonl").open(encoding="utf-8")]
    metrics = json.loads((out / "metrics.json").read_text())
    return {"wall_per_question": wall / len(records),
            "loop_per_question": metrics["seconds_per_question"],
            "f1": sum(r["f1"] for r in records) / len(records),
            "em": sum(r["em"] for r in records) / len(records),
            "answers": {r["id"]: r["prediction"] for r in records}}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--table", action="store_true", help="print the saved result")
    args = parser.parse_args()
    name = f"ircot_server-hotpotqa-{args.n}"
    if args.table:
        if (saved := load_result(name)) is None:
            raise SystemExit(f"no saved result for --n {args.n}: run the benchmark first")
        print_result(saved)
        return
    rows = [{"backend": "llamacpp (in process)", "concurrency": 1,
             **run(f"{name}-llamacpp", ["--generator.backend", "llamacpp"], args.n)}]  # fmt: skip
    from cgr.generation.llamacpp import LlamaCppGenerator

    for concurrency in args.concurrency:
        server = LlamaCppGenerator(context_tokens=CONTEXT * concurrency, slots=concurrency)
        address = server.listening_address
        url = (address if address.startswith("http") else f"http://{address}") + "/v1"
        try:
            row = run(f"{name}-openai-c{concurrency}",
                      ["--generator.backend", "openai", "--generator.base_url", url,
                       "--generator.model", "smollm2", "--generator.concurrency", str(concurrency),
                       "--generator.response_cache", ""], args.n)  # fmt: skip
        finally:
            server.close()
        rows.append({"backend": "openai → llama.cpp server", "concurrency": concurrency, **row})
    reference = rows[0]["answers"]
    for row in rows:
        row["same_answers"] = sum(row["answers"][q] == a for q, a in reference.items())
    result = {"n": args.n, "rows": rows, "machine": machine(),
              "date": time.strftime("%Y-%m-%d"), "commit": _commit()}  # fmt: skip
    save_result(name, result)
    print_result(result)


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True)  # fmt: skip
    return done.stdout.strip()


def print_result(result: dict) -> None:
    print(f"IRCoT on the first {result['n']} HotpotQA dev questions, SmolLM2-135M-Instruct (the "
          f"packaged GGUF), in process and behind llama.cpp's HTTP server; {result['machine']}, "
          f"{result['date']}, {result['commit']}\n")  # fmt: skip
    rows = [[r["backend"], r["concurrency"], f"{r['wall_per_question']:.2f}",
             f"{r['loop_per_question']:.2f}", f"{r['f1']:.3f}", f"{r['em']:.3f}",
             f"{r['same_answers']}/{result['n']}"] for r in result["rows"]]  # fmt: skip
    print_table(["backend", "concurrency", "wall s/question", "loop s/question", "F1", "EM",
                 "answers equal to in-process"], rows)  # fmt: skip


if __name__ == "__main__":
    main()
