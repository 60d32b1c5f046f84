"""`cgr serve` under load: bounded bursts of concurrent requests on loopback; per burst size,
p50 / p99 latency, answered, refused (503: queue full), other errors and questions/s; the
server's RSS before and after; and a slow client (its body sent one byte a second) beside a
normal request, which must be answered as fast as alone (the model thread is not held).
`--sustained N` then keeps N clients asking for `--seconds` (each waits its Retry-After when
turned away) beside slowloris connections sending a request's header a byte every 2 s: p50 / p95
of the answered, whether /api/health kept answering, and that no error reply holds a path or a
stack trace.

    .venv/bin/python benchmarks/serve_load.py                      # a tiny checkpoint, trained first
    .venv/bin/python benchmarks/serve_load.py --checkpoint checkpoints/default/best.ckpt

Each request asks one of the data/sample dev questions, so the answers need real retrieval,
chains (when the checkpoint has them on) and reading. Saved as benchmarks/results/serve_load.json."""

from __future__ import annotations

import argparse
import json
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bad_inputs import run, tiny_config  # noqa: E402
from benchmarks.common import machine, print_table, save_result  # noqa: E402
from cgr.data.loaders import load_multiple_choice  # noqa: E402
from cgr.serving.connections import IDLE_S  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


LEAK = re.compile(r"Traceback|File \"|/home/|/tmp/|/work/|site-packages")


def ask(url: str, body: dict, replies: list | None = None) -> tuple[int, float]:
    """(status, seconds) of one request; the text of an error reply goes to `replies`."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as e:
        status = e.code
        if replies is not None:
            replies.append(e.read().decode(errors="replace"))
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


def header_dribble(port: int, for_s: float) -> float | None:
    """A slowloris connection: a request's header a byte every 2 s for at most `for_s`
    seconds; the seconds until the server closed it, or None if it never did."""
    header = b"POST /api/predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\nX: "
    header += b"y" * 200
    start = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
        for i in range(len(header)):
            if time.perf_counter() - start > for_s:
                return None
            try:
                sock.sendall(header[i : i + 1])
                if sock.recv(1) == b"":
                    return time.perf_counter() - start
            except TimeoutError:
                continue
            except OSError:
                return time.perf_counter() - start
    return None


def sustained(base: str, port: int, bodies: list[dict], clients: int, slow: int,
              seconds: float) -> dict:  # fmt: skip
    """`clients` threads asking back to back for `seconds`, `slow` slowloris connections and a
    health probe a second beside them."""
    until = time.perf_counter() + seconds
    latency, statuses, replies, health = [], [], [], []

    def client(n: int) -> None:
        while time.perf_counter() < until:
            status, took = ask(base + "/api/predict", bodies[n % len(bodies)], replies)
            n += 1
            statuses.append(status)
            if status == 200:
                latency.append(took)
            else:
                time.sleep(1.0)  # the Retry-After the server sends with 503

    def probe() -> None:
        while time.perf_counter() < until:
            try:
                with urllib.request.urlopen(base + "/api/health", timeout=10) as r:
                    health.append(r.status == 200)
            except OSError:
                health.append(False)
            time.sleep(1.0)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    threads.append(threading.Thread(target=probe))
    with ThreadPoolExecutor(max_workers=max(1, slow)) as pool:
        # held past the server's idle bound (IDLE_S), to see whether it closes them
        dribbles = [
            pool.submit(header_dribble, port, max(seconds, IDLE_S) + 15) for _ in range(slow)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        closed = [t for d in dribbles if (t := d.result()) is not None]
    return {"clients": clients, "seconds": seconds, "answered": len(latency),
            "refused_503": statuses.count(503),
            "errors": sum(s not in (200, 503) for s in statuses),
            "p50_s": statistics.median(latency) if latency else float("nan"),
            "p95_s": percentile(latency, 0.95), "questions_per_s": len(latency) / seconds,
            "health_answered": sum(health) / max(1, len(health)),
            "slowloris_closed": len(closed), "slowloris": slow,
            "slowloris_closed_after_s": max(closed) if closed else None,
            "leaks": sum(bool(LEAK.search(r)) for r in replies)}  # fmt: skip


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
    parser.add_argument("--sustained", type=int, default=200, metavar="N",
                        help="clients asking back to back after the bursts (0: none)")  # fmt: skip
    parser.add_argument("--seconds", type=float, default=30, help="how long they ask")
    parser.add_argument("--slowloris", type=int, default=20, help="header-dribbling connections")
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
            load = None
            if args.sustained:
                load = sustained(base, port, bodies, args.sustained, args.slowloris, args.seconds)
                ask(base + "/api/predict", bodies[0])  # still answering after the load
        finally:
            server.terminate()
            log = server.communicate(timeout=30)[0]
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
    if load is not None:
        print(f"{load['clients']} clients asking back to back for {load['seconds']:g} s beside "
              f"{load['slowloris']} slowloris connections:")  # fmt: skip
        print_table(["answered", "refused (503)", "errors", "p50 s", "p95 s", "questions/s",
                     "health answered", "slowloris closed (after s)", "replies with a path or trace"],
                    [[load["answered"], load["refused_503"], load["errors"], f"{load['p50_s']:.2f}",
                      f"{load['p95_s']:.2f}", f"{load['questions_per_s']:.2f}",
                      f"{load['health_answered']:.0%}",
                      f"{load['slowloris_closed']}/{load['slowloris']} "
                      f"({load['slowloris_closed_after_s'] or float('nan'):.0f})", load["leaks"]]])  # fmt: skip
    traced = "Traceback" in log
    print(f"server log: {'a traceback' if traced else 'no traceback'}")
    save_result("serve_load", {"sustained": load, "server_traceback": traced,"machine": machine(), "max_waiting": args.max_waiting,
                               "max_batch": args.max_batch, "checkpoint": args.checkpoint or "tiny", "rows": saved,
                               "rss_mb_before": rss_before, "rss_mb_after": rss_after, "alone_s": alone,
                               "beside_slow_client_s": beside, "slow_client_status": slow_status})  # fmt: skip
    held = status != 200 or beside > alone + args.slow_seconds / 2
    kept = load is None or (load["errors"] == 0 and load["leaks"] == 0 and load["answered"]
                            and load["health_answered"] == 1.0
                            and load["slowloris_closed"] == load["slowloris"])  # fmt: skip
    ok = all(r["errors"] == 0 for r in saved) and not held and kept and not traced
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
