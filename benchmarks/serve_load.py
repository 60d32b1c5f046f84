"""`cgr serve` under load: bounded bursts of concurrent requests on loopback; per burst size,
p50 / p99 latency, answered, refused (503: queue full), other errors and questions/s.

    .venv/bin/python benchmarks/serve_load.py                      # a tiny checkpoint, trained first
    .venv/bin/python benchmarks/serve_load.py --checkpoint checkpoints/default/best.ckpt

Each request asks one of the data/sample dev questions, so the answers need real retrieval,
chains (when the checkpoint has them on) and reading. Saved as benchmarks/results/serve_load.json."""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bad_inputs import run, tiny_config  # noqa: E402
from benchmarks.common import machine, print_table, save_result  # noqa: E402
from cgr.data.loaders import load_multiple_choice  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ask(url: str, body: dict) -> tuple[int, float]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as e:
        status = e.code
    except OSError:
        status = -1  # connection refused or reset
    return status, time.perf_counter() - start


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return (
        ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default=None, help="default: train a tiny one first")
    parser.add_argument("--bursts", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--max-waiting", type=int, default=64)
    parser.add_argument("--max-batch", type=int, default=8)
    args = parser.parse_args()
    questions = load_multiple_choice(ROOT / "data" / "sample" / "dev.jsonl")
    bodies = [{"question": q.stem, "choices": [c.text for c in q.choices]} for q in questions]
    with tempfile.TemporaryDirectory(prefix="cgr-serve-load-") as tmp:
        checkpoint = args.checkpoint
        if checkpoint is None:
            code, _, err = run(["train", "--config", str(tiny_config(Path(tmp)))])
            if code != 0:
                sys.stderr.write(err[-3000:])
                return 1
            checkpoint = str(Path(tmp) / "ckpt" / "best.ckpt")
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "cgr.cli", "serve", "--checkpoint", checkpoint, "--port", str(port),
             "--max-waiting", str(args.max_waiting), "--max-batch", str(args.max_batch)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.time() + 300
            while time.time() < deadline:
                try:
                    urllib.request.urlopen(base + "/api/health", timeout=2).read()
                    break
                except OSError:
                    time.sleep(0.5)
            ask(base + "/api/predict", bodies[0])  # warm-up: parser, caches
            rows, saved = [], []
            for burst in args.bursts:
                with ThreadPoolExecutor(max_workers=burst) as pool:
                    start = time.perf_counter()
                    results = list(
                        pool.map(
                            lambda i: ask(base + "/api/predict", bodies[i % len(bodies)]),
                            range(burst),
                        )
                    )
                    wall = time.perf_counter() - start  # fmt: skip
                ok = [t for s, t in results if s == 200]
                refused = sum(s == 503 for s, _ in results)
                errors = sum(s not in {200, 503} for s, _ in results)
                row = {"burst": burst, "answered": len(ok), "refused_503": refused, "errors": errors,
                       "p50_s": statistics.median(ok) if ok else float("nan"),
                       "p99_s": percentile(ok, 0.99), "questions_per_s": len(ok) / wall}  # fmt: skip
                saved.append(row)
                rows.append([burst, len(ok), refused, errors, f"{row['p50_s']:.2f}", f"{row['p99_s']:.2f}",
                             f"{row['questions_per_s']:.2f}"])  # fmt: skip
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(f"cgr serve, loopback, --max-waiting {args.max_waiting} --max-batch {args.max_batch}; "
          f"checkpoint {'tiny (data/sample)' if args.checkpoint is None else args.checkpoint}; {machine()}")  # fmt: skip
    print_table(
        ["burst", "answered", "refused (503)", "errors", "p50 s", "p99 s", "questions/s"], rows
    )
    save_result("serve_load", {"machine": machine(), "max_waiting": args.max_waiting,
                               "max_batch": args.max_batch, "checkpoint": args.checkpoint or "tiny", "rows": saved})  # fmt: skip
    return 0 if all(r["errors"] == 0 for r in saved) else 1


if __name__ == "__main__":
    sys.exit(main())
