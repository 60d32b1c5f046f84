"""`cgr serve` under load: bounded bursts of concurrent requests on loopback; per burst size,
p50 / p99 latency, answered, refused (503: queue full), other errors and questions/s; the
server's RSS before and after; and a slow client (its body sent one byte a second) beside a
normal request, which must be answered as fast as alone (the model thread is not held).

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


def rss_mb(pid: int) -> float:
    """Resident memory of a process (Linux /proc), MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def slow_client(port: int, body: bytes, seconds: int) -> int:
    """Sends the request line and headers, then the body one byte a second for `seconds`
    seconds (then the rest at once); the status it gets."""
    with socket.create_connection(("127.0.0.1", port), timeout=600) as sock:
        head = (f"POST /api/predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")  # fmt: skip
        sock.sendall(head.encode())
        for i in range(min(seconds, len(body) - 1)):
            sock.sendall(body[i : i + 1])
            time.sleep(1.0)
        sock.sendall(body[min(seconds, len(body) - 1) :])
        reply = sock.recv(64).decode(errors="replace")
    return int(reply.split()[1]) if reply.startswith("HTTP/") else -1


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return (
        ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default=None, help="default: train a tiny one first")
    parser.add_argument("--bursts", type=int, nargs="+", default=[1, 10, 50, 120])
    parser.add_argument("--slow-seconds", type=int, default=10, help="the slow client's dribble")
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
            rss_before = rss_mb(server.pid)
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
            rss_after = rss_mb(server.pid)
            _, alone = ask(base + "/api/predict", bodies[1])
            with ThreadPoolExecutor(max_workers=1) as pool:
                slow = pool.submit(
                    slow_client, port, json.dumps(bodies[2]).encode(), args.slow_seconds
                )
                time.sleep(2)  # the slow client is mid-body
                status, beside = ask(base + "/api/predict", bodies[1])
                slow_status = slow.result()
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(f"cgr serve, loopback, --max-waiting {args.max_waiting} --max-batch {args.max_batch}; "
          f"checkpoint {'tiny (data/sample)' if args.checkpoint is None else args.checkpoint}; {machine()}")  # fmt: skip
    print_table(
        ["burst", "answered", "refused (503)", "errors", "p50 s", "p99 s", "questions/s"], rows
    )
    print(f"server RSS: {rss_before:.0f} MB after the warm-up, {rss_after:.0f} MB after the bursts")
    print(
        f"a request alone: {alone:.2f} s; beside a client sending its body one byte a second "
        f"({args.slow_seconds} s): {beside:.2f} s (status {status}); the slow client got {slow_status}"
    )
    save_result("serve_load", {"machine": machine(), "max_waiting": args.max_waiting,
                               "max_batch": args.max_batch, "checkpoint": args.checkpoint or "tiny", "rows": saved,
                               "rss_mb_before": rss_before, "rss_mb_after": rss_after, "alone_s": alone,
                               "beside_slow_client_s": beside, "slow_client_status": slow_status})  # fmt: skip
    held = status != 200 or beside > alone + args.slow_seconds / 2
    return 0 if all(r["errors"] == 0 for r in saved) and not held else 1


if __name__ == "__main__":
    sys.exit(main())
