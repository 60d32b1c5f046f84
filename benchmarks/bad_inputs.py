"""Bad input and faults, as a user meets them: every case runs the real `cgr` command
in a fresh process and prints one line: the exit code and the message the user sees (or the
counter that records a skip). A traceback anywhere is a failure of the script (exit 1).

    .venv/bin/python benchmarks/bad_inputs.py            # ~5 min on 2 CPU cores

A tiny checkpoint is trained first on data/sample (the quickstart's data, one epoch, 2 steps)."""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cgr.training.config import resolved_config  # noqa: E402

SAMPLE = ROOT / "data" / "sample"
QUESTION = {"id": "q1", "question": {"stem": "Which is renewable?", "choices": [
    {"label": "A", "text": "coal"}, {"label": "B", "text": "solar power"}]}, "answerKey": "B"}  # fmt: skip
HOTPOT = {"_id": "h1", "question": "Who wrote it?", "answer": "Ann",
          "context": [["Book", ["Ann wrote the book."]]], "supporting_facts": [["Book", 0]]}  # fmt: skip


class Crafted:
    """A pickle that would run a shell command when unpickled by a trusting loader."""

    def __reduce__(self):
        return (os.system, ("echo crafted checkpoint ran code > /tmp/cgr-crafted-ran",))


def tiny_config(work: Path) -> Path:
    config = resolved_config(ROOT / "configs" / "default.yaml")
    config["trainer"].update(max_epochs=1, limit_train_batches=2, limit_val_batches=1,
                             enable_progress_bar=False, default_root_dir=str(work / "logs"),
                             logger=False)  # fmt: skip
    for callback in config["trainer"]["callbacks"]:
        if "dirpath" in callback.get("init_args", {}):
            callback["init_args"]["dirpath"] = str(work / "ckpt")
    config["model"] = {"class_path": "cgr.training.module.ReaderModule",
                       "init_args": {"reader_model": "minilm", "max_length": 64}}  # fmt: skip
    data = config["data"]
    data.update(pool_cache_dir=str(work / "pools"), max_evidence=2)
    data["chains"]["enabled"] = False
    data["retrieval"].update(method="bm25", cache_dir=str(work / "emb"))
    path = work / "tiny.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def write(path: Path, content: str | bytes) -> Path:
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def cases(work: Path, config: Path, ckpt: Path) -> list[tuple[str, list[str], set[int]]]:
    """(case, cgr arguments, accepted exit codes)."""
    crafted = work / "crafted.ckpt"
    import torch

    torch.save(
        {"state_dict": {}, "payload": Crafted()}, crafted, pickle_protocol=pickle.HIGHEST_PROTOCOL
    )
    truncated = write(work / "truncated.ckpt", ckpt.read_bytes()[: ckpt.stat().st_size // 2])
    empty = write(work / "empty.ckpt", b"")
    text_file = write(work / "notes.ckpt", "these are notes, not a checkpoint\n")
    q = json.dumps(QUESTION)
    bad_byte = write(
        work / "bad-byte.jsonl",
        q.encode() + b"\n" + q.replace("q1", "q2").encode()[:30] + b"\xff\xfe" + b"\n",
    )
    huge = write(
        work / "huge.jsonl",
        json.dumps({**QUESTION, "question": {**QUESTION["question"], "stem": "why " * 250_000}})
        + "\n",
    )
    dup = write(work / "dup.jsonl", q + "\n" + q + "\n")
    empty_choice = write(
        work / "empty-choice.jsonl", q.replace('"text": "coal"', '"text": " "') + "\n"
    )
    many = dict(QUESTION, question={"stem": "Which?", "choices": [
        {"label": str(i), "text": f"choice {i}"} for i in range(12)]}, answerKey="1")  # fmt: skip
    many_choices = write(work / "many-choices.jsonl", json.dumps(many) + "\n")
    bad_corpus = write(work / "bad-corpus.txt", b"solar power is renewable\ncoal is \xff not\n")
    hp_bad_byte = write(
        work / "hp-bad-byte.json", b"[" + json.dumps(HOTPOT).encode()[:-2] + b'\xff"}]'
    )
    hp_empty = write(
        work / "hp-empty.json",
        json.dumps([{**HOTPOT, "context": []}, {**HOTPOT, "_id": "h2", "context": []}]),
    )
    hp_truncated = write(
        work / "hp-truncated.json", "[" + json.dumps(HOTPOT) + ", " + json.dumps(HOTPOT)[:40]
    )
    hp_one_empty = write(
        work / "hp-one-empty.json", json.dumps([HOTPOT, {**HOTPOT, "_id": "h2", "context": []}])
    )
    hp_dup = write(work / "hp-dup.json", json.dumps([HOTPOT, HOTPOT]))
    qasper_empty = write(work / "qasper-empty.json", json.dumps(
        {"p1": {"title": "T", "full_text": [], "qas": [{"question": "What?", "answers": []}]}}))  # fmt: skip
    paper = {"title": "T", "full_text": [{"section_name": "S", "paragraphs": ["Bread rises."]}]}
    answer = {"unanswerable": False, "yes_no": None, "extractive_spans": [], "free_form_answer": "",
              "evidence": []}  # fmt: skip
    qasper_yes_no = write(work / "qasper-yes-no.json", json.dumps({"p1": {**paper, "qas": [
        {"question": "Does it rise?", "answers": [{"answer": {**answer, "yes_no": "no"}}]}]}}))  # fmt: skip
    qasper_spans = write(work / "qasper-spans.json", json.dumps({"p1": {**paper, "qas": [
        {"question": "What rises?", "answers": [{"answer": {**answer, "extractive_spans": [1, 2]}}]}]}}))  # fmt: skip
    qasper_blank = write(work / "qasper-blank.json", json.dumps({"p1": {**paper, "qas": [
        {"question": "\u200b", "answers": [{"answer": {**answer, "free_form_answer": "x"}}]}]}}))  # fmt: skip
    hp_types = write(
        work / "hp-types.json",
        json.dumps([HOTPOT, {**HOTPOT, "_id": "h2", "supporting_facts": [["Bob"]]}]),
    )
    blocker = write(work / "a-file", "not a folder")
    long_fact = write(
        work / "long-fact.txt", "solar power is renewable\n" + "word " * 1_000_000 + "\n"
    )
    anchors = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]'] + [
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]  # fmt: skip
    bomb = write(work / "bomb.yaml", "\n".join(anchors) + "\n")
    big_config = write(work / "big.yaml", "trainer:\n  max_epochs: 1\n# " + "x" * 50_000_000 + "\n")
    itself = write(work / "itself.yaml", "trainer:\n  callbacks: itself.yaml\n")
    crafted_corpus = work / "downloads" / "crafted-corpus.ckpt"
    crafted_corpus.parent.mkdir(exist_ok=True)
    stored = torch.load(ckpt, map_location="cpu", weights_only=True)
    stored["datamodule_hyper_parameters"]["retrieval"]["corpus"] = ["/etc/hostname"]
    torch.save(stored, crafted_corpus)
    train = ["train", "--config", str(config)]
    ev = ["eval", "--checkpoint", str(ckpt)]
    ircot = ["ircot", "--out", str(work / "ircot"), "--method", "oner"]
    return [
        ("crafted checkpoint (pickle that runs code)", ["eval", "--checkpoint", str(crafted)], {2}),
        ("truncated checkpoint", ["eval", "--checkpoint", str(truncated)], {2}),
        ("checkpoint naming /etc/hostname as its corpus", ["explain", "--checkpoint", str(crafted_corpus),
                                                           "--question", "What?", "--choices", "a", "b"], {2}),
        ("1 KB YAML alias bomb as config", ["train", "--config", str(bomb)], {2}),
        ("50 MB config", ["train", "--config", str(big_config)], {2}),
        ("config that includes itself", ["train", "--config", str(itself)], {2}),
        ("YAML alias bomb as ircot config", [*ircot, "--config", str(bomb)], {2}),
        ("empty checkpoint file", ["eval", "--checkpoint", str(empty)], {2}),
        ("text file as checkpoint", ["eval", "--checkpoint", str(text_file)], {2}),
        ("non-UTF-8 byte in a question file", [*ev, "--data", str(bad_byte)], {2}),
        ("1M-character question stem", [*ev, "--data", str(huge)], {2}),
        ("duplicate question ids", [*ev, "--data", str(dup)], {2}),
        ("empty choice text in a question file", [*ev, "--data", str(empty_choice)], {2}),
        ("12 choices in a question file", [*ev, "--data", str(many_choices)], {2}),
        ("empty choice text (train)", [*train, f"--data.train_file={empty_choice}"], {2}),
        ("non-UTF-8 byte in a corpus", [*train, f"--data.retrieval.corpus=[{bad_corpus}]"], {2}),
        ("non-UTF-8 byte in a HotpotQA file", [*ircot, "--data", str(hp_bad_byte)], {2}),
        ("all-empty HotpotQA contexts", [*ircot, "--data", str(hp_empty)], {2}),
        ("truncated HotpotQA JSON array", [*ircot, "--data", str(hp_truncated)], {2}),
        ("unwritable eval --out", [*ev, "--out", str(blocker / "p.jsonl")], {2}),
        ("unwritable eval --export-dir", [*ev, "--export-dir", str(blocker / "x")], {2}),
        ("unwritable ircot --out", ["ircot", "--out", str(blocker / "x"), "--data", str(hp_one_empty)], {2}),
        ("abbreviated key trainer.max_epoch", [*train, "--trainer.max_epoch=1"], {2}),
        ("abbreviated key data.max_evid", [*train, "--data.max_evid=3"], {2}),
        ("data.max_evidence=0", [*train, "--data.max_evidence=0"], {2}),
        ("data.retrieval.use_gpu=maybe", [*train, "--data.retrieval.use_gpu=maybe"], {2}),
        ("data.retrieval.method=bm2", [*train, "--data.retrieval.method=bm2"], {2}),
        ("data.retrieval.beam_size=-1", [*train, "--data.retrieval.beam_size=-1"], {2}),
        ("data.retrieval.steps=0", [*train, "--data.retrieval.steps=0"], {2}),
        ("data.batch_size=0", [*train, "--data.batch_size=0"], {2}),
        ("trainer.max_epochs=-5", [*train, "--trainer.max_epochs=-5"], {2}),
        ("trainer.max_epochs=abc", [*train, "--trainer.max_epochs=abc"], {2}),
        ("model.init_args.lr=.nan", [*train, "--model.init_args.lr=.nan"], {2}),
        ("model.init_args.lr=.inf", [*train, "--model.init_args.lr=.inf"], {2}),
        ("data.chains.time_budget_s=.nan", [*train, "--data.chains.time_budget_s=.nan"], {2}),
        ("data.chains.max_link_share=.inf", [*train, "--data.chains.max_link_share=.inf"], {2}),
        ("data.retrieval.steps=1000000", [*train, "--data.retrieval.steps=1000000"], {2}),
        ("data.retrieval.beam_size=100000", [*train, "--data.retrieval.beam_size=100000"], {2}),
        ("5 MB line in a corpus file", [*train, f"--data.retrieval.corpus=[{long_fact}]"], {2}),
        ("loop.reader=cott", [*ircot, "--data", str(hp_one_empty), "--loop.reader=cott"], {2}),
        ("generator.dtype=float33", [*ircot, "--data", str(hp_one_empty), "--generator.dtype=float33"], {2}),
        ("ircot generator.batch_size=0", [*ircot, "--data", str(hp_one_empty), "--generator.batch_size=0",
                                          "--generator.history_cache=0"], {2}),
        ("ircot --limit -1", [*ircot, "--data", str(hp_one_empty), "--limit", "-1"], {2}),
        ("riches --limit -1", ["riches", "--out", str(work / "riches"), "--data", str(hp_one_empty),
                               "--limit", "-1"], {2}),
        ("QASPER paper without paragraph text", ["longdoc", "--out", str(work / "longdoc"), "--data",
                                                 str(qasper_empty)], {2}),
        ("QASPER yes_no given as the string 'no'", ["longdoc", "--out", str(work / "longdoc"), "--data",
                                                    str(qasper_yes_no)], {2}),
        ("QASPER extractive_spans of numbers", ["longdoc", "--out", str(work / "longdoc"), "--data",
                                                str(qasper_spans)], {2}),
        ("QASPER question of a zero-width space", ["longdoc", "--out", str(work / "longdoc"), "--data",
                                                   str(qasper_blank)], {2}),
        ("HotpotQA supporting_facts [['Bob']] (counted skip)", [*ircot, "--data", str(hp_types), "--method", "nor",
                                                                "--generator.max_new_tokens=4"], {0}),
        ("longdoc --limit -1", ["longdoc", "--out", str(work / "longdoc"), "--data", str(hp_one_empty),
                                "--limit", "-1"], {2}),
        ("HotpotQA record with empty context (counted)", [*ircot, "--data", str(hp_one_empty), "--limit", "0",
                                                          "--method", "nor", "--generator.max_new_tokens=4"], {0}),
        ("duplicate HotpotQA ids (counted skip)", [*ircot, "--data", str(hp_dup), "--method", "nor",
                                                   "--generator.max_new_tokens=4"], {0}),
    ]  # fmt: skip


def run(args: list[str], timeout: int = 900) -> tuple[int, str, str]:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "WANDB_MODE": "offline",
    }
    proc = subprocess.run([sys.executable, "-m", "cgr.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip
    return proc.returncode, proc.stdout, proc.stderr


def message(code: int, out: str, err: str) -> str:
    """The line a user reads: the `error:` line, else the last line that says what happened."""
    for line in err.splitlines():
        if line.startswith("error:") or "error:" in line and line.startswith("cgr "):
            return line.strip()
    interesting = [l for l in (out + err).splitlines()  # noqa: E741
                   if any(k in l for k in ("skipped", "questions_without_context", "duplicate_ids", "damaged", "resuming", "scratch"))]  # fmt: skip
    return (
        " | ".join(interesting[-3:])
        if interesting
        else (err or out).strip().splitlines()[-1:][0][:200]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    args = parser.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="cgr-bad-inputs-") as tmp:
        work = Path(tmp)
        config = tiny_config(work)
        code, out, err = run(["train", "--config", str(config)])
        if code != 0:
            sys.stderr.write(err[-3000:])
            return 1
        ckpt = work / "ckpt" / "best.ckpt"
        all_cases = cases(work, config, ckpt)
        # a damaged last.ckpt (a run killed while writing) must not block the next `cgr train`
        resume_case = "truncated last.ckpt, then cgr train again"
        all_cases.append((resume_case, ["train", "--config", str(config)], {0}))
        last = work / "ckpt" / "last.ckpt"
        good_last = last.read_bytes()
        print(f"{'case':<48} exit  seconds  message")
        for name, argv, expected in all_cases:
            if args.only and args.only not in name:
                continue
            if (
                name == resume_case
            ):  # damaged right before its case (earlier train cases resume too)
                write(last, good_last[:1000])
            start = time.perf_counter()
            code, out, err = run(argv)
            seconds = time.perf_counter() - start  # the whole process: start-up and imports too
            traceback = "Traceback (most recent call last)" in err
            line = message(code, out, err)
            ok = code in expected and not traceback
            failures += not ok
            print(
                f"{name:<48} {code:>4}  {seconds:7.1f}  {line}{'' if ok else '   <-- FAIL' + (' (traceback)' if traceback else '')}",
                flush=True,
            )
        if Path("/tmp/cgr-crafted-ran").exists():
            print("the crafted checkpoint ran code!  <-- FAIL")
            failures += 1
        damaged = sorted(p.name for p in (work / "ckpt").glob("last.ckpt.damaged-*"))
        print(f"damaged last.ckpt kept as: {', '.join(damaged) or 'nothing'}")
    print(f"{failures} case(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
