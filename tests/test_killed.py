"""`kill -9` in the middle of `cgr eval`, `cgr export` and `cgr encode`, then the same command
again: a killed run leaves no half-written output where a finished one goes (an earlier run's
output stays whole), and the re-run resumes or rewrites it cleanly."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ROOT, SAMPLE

pytestmark = pytest.mark.slow  # real cgr processes on a trained checkpoint


def cgr(*args: str) -> list[str]:
    return [sys.executable, "-m", "cgr.cli", *args]


def finished(cmd: list[str]) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def killed_when(cmd: list[str], ready: Callable[[], bool]) -> None:
    """Start `cmd`, SIGKILL its process group once `ready()` holds (it must, before it ends)."""
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.time() + 600
        while not ready():
            assert proc.poll() is None, f"it ended before the kill: {proc.stderr.read()[-2000:]}"
            assert time.time() < deadline, "not ready before the deadline"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_eval_killed_mid_file_keeps_the_last_whole_predictions(tiny_run, tmp_path):
    records = [json.loads(line) for line in (SAMPLE / "dev.jsonl").read_text().splitlines()]
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps({**r, "id": f"{r['id']}-{n}"}) + "\n"
                                 for n in range(4) for r in records))  # fmt: skip
    out, pages = tmp_path / "predictions.jsonl", tmp_path / "chains"
    cmd = cgr("eval", "--checkpoint", str(tiny_run / "ckpt" / "best.ckpt"), "--data",
              str(questions), "--out", str(out), "--batch-size", "1", "--export-dir", str(pages))  # fmt: skip
    finished(cmd)
    whole = {p.name: p.read_bytes() for p in [out, *pages.iterdir()]}
    assert lines(out) == 4 * len(records)

    partial = out.with_name(out.name + ".partial")
    killed_when(cmd, lambda: lines(partial) >= 2)  # two questions written, the rest not
    assert {p.name: p.read_bytes() for p in [out, *pages.iterdir()]} == whole

    finished(cmd)  # the same command rewrites it: the same predictions, nothing left over
    assert {p.name: p.read_bytes() for p in [out, *pages.iterdir()]} == whole
    assert not partial.exists() and sorted(p.name for p in tmp_path.iterdir()) == [
        "chains", "predictions.jsonl", "questions.jsonl"]  # fmt: skip


def test_export_killed_while_writing_leaves_no_model_folder(tiny_run, tmp_path):
    out = tmp_path / "model"
    work = tmp_path / ".model.partial"
    cmd = cgr("export", "--checkpoint", str(tiny_run / "ckpt" / "best.ckpt"), "--out", str(out))
    killed_when(cmd, lambda: (work / "reader").is_dir())
    assert not out.exists()  # only the work folder, which no loader reads

    finished(cmd)
    assert not work.exists()
    ask = ["--question", "Which is renewable?", "--choices", "solar power", "coal",
           "--out-dir", str(tmp_path / "explain")]  # fmt: skip
    assert "(A) solar power" in finished(cgr("explain", "--model", str(out), *ask)).stdout


def test_encode_killed_mid_corpus_resumes_with_the_missing_chunks(tmp_path):
    corpus = tmp_path / "facts.txt"
    corpus.write_text(
        "".join(f"fact {i} says a plant in pot {i % 97} needs light\n" for i in range(4 * 2048))
    )
    cache = tmp_path / "cache"
    cmd = cgr("encode", "--config", "configs/default.yaml", f"data.retrieval.cache_dir={cache}",
              f"data.retrieval.corpus=[{corpus}]", "data.retrieval.open_book=null")  # fmt: skip

    def written() -> list[Path]:
        return sorted(cache.rglob("chunk-*.npy"))

    killed_when(cmd, lambda: len(written()) >= 1)
    kept = {p.name: p.read_bytes() for p in written()}
    assert 1 <= len(kept) < 4
    again = finished(cmd)
    assert f"encoding {4 - len(kept)} chunks" in again.stderr
    assert {p.name: p.read_bytes() for p in written()}.items() >= kept.items()
    assert len(written()) == 4 and list(cache.rglob("index-flat-*.faiss"))
    # a chunk the kill cut mid-write stays a temporary file that no run reads as a chunk
    left = [p.name for p in cache.rglob("*") if ".tmp" in p.name]
    assert all(re.fullmatch(r"chunk-\d{5}\.npy\.tmp\d+", name) for name in left), left
