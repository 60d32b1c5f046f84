"""Helpers shared by the benchmark scripts: result files and markdown tables."""

from __future__ import annotations

import csv
import json
import math
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import torch
import yaml

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]


def machine() -> str:
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return f"{platform.machine()}, {torch.get_num_threads()} torch threads, {gpu}"


def machines(rows: list[dict]) -> str:
    """Where saved rows were measured (they may come from several runs), else this machine."""
    seen = sorted({r["machine"] for r in rows if r and r.get("machine")})
    return " / ".join(seen) if seen else machine()


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def save_result(name: str, row: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(row, indent=1) + "\n")
    return path


def load_result(name: str) -> dict | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def print_table(columns: list[str], rows: list[list]) -> None:
    """A markdown table (what benchmarks/report.py writes into the docs): a `|` inside a cell
    is escaped."""

    def cell(v) -> str:
        return (f"{v:.4g}" if isinstance(v, float) else str(v)).replace("|", "\\|")

    print("| " + " | ".join(cell(c) for c in columns) + " |")
    print("|" + "|".join("---" for _ in columns) + "|")
    for row in rows:
        print("| " + " | ".join(cell(v) for v in row) + " |")


def answer_read(record: dict, gold: set[str]) -> bool:
    """Whether the answer choice's facts as read hold a gold fact (`text_key`-normalised)."""
    from cgr.evidence.selection import text_key

    answer = next(c for c in record["choices"] if c["label"] == record["answer"])
    return any(text_key(f["text"]) in gold for f in answer["facts"])


def accuracy_split(predictions: Path, dev_gold: dict[str, set[str]]) -> dict:
    """Dev accuracy split by whether the answer choice's facts as read include a gold fact,
    and the share of the most frequent predicted position."""
    rows = [json.loads(line) for line in predictions.read_text().splitlines()]
    split = {True: [], False: []}
    positions = Counter()
    for r in rows:
        positions[[c["label"] for c in r["choices"]].index(r["predicted"])] += 1
        if (gold := dev_gold.get(r["id"])) and r["answer"] is not None:
            split[answer_read(r, gold)].append(bool(r["correct"]))
    acc = lambda xs: 100 * statistics.mean(xs) if xs else float("nan")  # noqa: E731
    return {"acc_gold_read": acc(split[True]), "n_gold_read": len(split[True]),
            "acc_gold_not_read": acc(split[False]), "n_gold_not_read": len(split[False]),
            "top_position_share": 100 * max(positions.values()) / len(rows)}  # fmt: skip


def dev_questions(data: dict) -> list:
    """A data config's dev questions with their gold facts (OBQA's `fact1`, or
    `gold_facts_files`: ARC's WorldTree explanations live beside its records)."""
    from cgr.data.gold import attach_gold_facts
    from cgr.data.loaders import load_multiple_choice

    questions = load_multiple_choice(ROOT / data["dev_file"])
    if files := data.get("gold_facts_files"):
        attach_gold_facts(questions, [str(ROOT / f) for f in files])
    return questions


def cached_examples(checkpoint: Path, data: str | None = None, query_encoder: str = "auto",
                    chains: dict | None = None, evidence: dict | None = None,
                    ids: set[str] | None = None):  # fmt: skip
    """The checkpoint's module and evidence pipeline, the questions of `data` (default: its dev
    file, gold facts attached) and their examples as `cgr eval` builds them: pools and chains
    read from the disk caches training and eval write (a dev file's OBQA pools take 10
    minutes on 2 cores to retrieve). The model loads once. `chains` / `evidence`: data.chains /
    data.evidence settings in place of the checkpoint's (the chain search and the reading order
    are re-run; the pools are not). `ids`: only these questions get chains and evidence (the
    pools of the whole file still come from its cache): a chain search over a sample of a
    training file, where its settings are not the checkpoint's, takes minutes, not hours."""
    from cgr.evaluation.predict import _datamodule_for
    from cgr.pretrained.source import open_model

    opened = open_model(checkpoint, query_encoder, dev_file=data is None)
    settings = opened.data
    for section, values in (("chains", chains), ("evidence", evidence)):
        if values:
            settings = {**settings, section: {**(settings.get(section) or {}), **values}}
    datamodule = _datamodule_for(settings, data)
    module, encoder = opened.load("cpu")
    module.eval()  # scored outside a Trainer: dropout off, as in `cgr eval` and the API
    if encoder is not None:  # a CGR checkpoint's query encoder retrieves (cached by its hash)
        datamodule.use_query_encoder(encoder)
    if ids is None:
        datamodule.setup("predict")
        return module, datamodule.pipeline, datamodule._questions["predict"], datamodule.splits["predict"]  # fmt: skip
    pools = datamodule.load_pools("predict", datamodule.hparams.predict_file)
    keep = [i for i, q in enumerate(datamodule._questions["predict"]) if q.id in ids]
    questions = [datamodule._questions["predict"][i] for i in keep]
    return module, datamodule.pipeline, questions, datamodule.select([pools[i] for i in keep])


def dev_gold(config: dict) -> dict[str, set[str]]:
    """The dev file's gold facts by question id."""
    from cgr.evidence.selection import text_key

    questions = dev_questions(config["data"])
    return {q.id: {text_key(g) for g in q.gold_facts} for q in questions if q.gold_facts}


def predictions_of(name: str) -> Path | None:
    """The dev predictions a finished `run_training` run wrote, where they are on this machine."""
    return next((ROOT / "checkpoints" / "bench" / name).glob("predictions-*.jsonl"), None)


def gold_split(config: dict, name: str) -> dict:
    """`accuracy_split` of a finished `run_training` run; {} where dev has no gold facts."""
    gold, preds = dev_gold(config), predictions_of(name)
    return accuracy_split(preds, gold) if gold and preds else {}


def dev_answers(config: dict, name: str) -> dict[str, list] | None:
    """A finished run's dev answers by question id: [right, whether the answer choice's facts as
    read hold a gold fact (None where dev names none)]. Counted from its predictions where they
    are on this machine (checkpoints/bench/NAME), else the copy `keep_answers` saved beside its
    result, so runs made on different machines can still be paired; None where neither is."""
    if preds := predictions_of(name):
        gold, answers = dev_gold(config), {}
        for line in preds.read_text().splitlines():
            r = json.loads(line)
            known = r["id"] in gold and r["answer"] is not None
            answers[r["id"]] = [
                bool(r["correct"]),
                answer_read(r, gold[r["id"]]) if known else None,
            ]
        return answers
    saved = load_result(f"answers-{name}")
    return saved["answers"] if saved else None


def keep_answers(config: dict, name: str) -> None:
    """Save a finished run's dev answers (ids and booleans, no question text) with the results:
    its predictions stay under checkpoints/, which a fresh machine does not have."""
    if (answers := dev_answers(config, name)) is not None:
        save_result(f"answers-{name}", {"run": name, "answers": answers})


def paired_counts(config: dict, name_a: str, name_b: str) -> dict | None:
    """Two finished runs' dev answers compared question by question: `a_only` / `b_only`
    (right in one run, wrong in the other) of the `questions` both answered, the exact
    two-sided McNemar `p`, and `by_gold`:
    for (a read the gold fact, b read it), [questions, right in a, right in b]. Seeds of one row
    spread by several points, so a paired count says more than the means; None where a run's
    answers are neither here nor saved."""
    runs = [dev_answers(config, n) for n in (name_a, name_b)]
    if None in runs:
        return None
    by_gold, a_only, b_only = {}, 0, 0
    shared = runs[0].keys() & runs[1].keys()
    for q in shared:
        (a, a_read), (b, b_read) = runs[0][q], runs[1][q]
        a_only, b_only = a_only + (a and not b), b_only + (b and not a)
        if a_read is not None and b_read is not None:
            key = (a_read, b_read)
            by_gold[key] = [
                sum(x) for x in zip(by_gold.get(key, [0, 0, 0]), (1, a, b), strict=True)
            ]
    return {"a_only": a_only, "b_only": b_only, "p": mcnemar_p(a_only, b_only),
            "by_gold": by_gold, "questions": len(shared)}  # fmt: skip


def paired_hits(a: dict, b: dict) -> tuple[int, int, int]:
    """Two runs' per-question hits (question -> bool) on the questions both scored: (right in
    a only, right in b only, questions), what paired_interval and mcnemar_p take."""
    common = a.keys() & b.keys()
    a_only = sum(bool(a[q]) and not b[q] for q in common)
    b_only = sum(bool(b[q]) and not a[q] for q in common)
    return a_only, b_only, len(common)


def mcnemar_p(a_only: int, b_only: int) -> float:
    """Exact two-sided McNemar p: a binomial(n, 1/2) test on the n questions only one run got
    right (1.0 where there are none)."""
    from math import comb

    n = a_only + b_only
    tail = sum(comb(n, k) for k in range(min(a_only, b_only) + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired_interval(a_only: int, b_only: int, questions: int) -> tuple[float, float, float]:
    """b − a in points on paired questions (each right in one run only counts), with its 95 %
    interval (the normal interval of a paired difference of proportions)."""
    n = questions
    diff = (b_only - a_only) / n
    se = math.sqrt(max(a_only + b_only - n * diff * diff, 0.0)) / n
    return 100 * diff, 100 * (diff - 1.96 * se), 100 * (diff + 1.96 * se)


def seed_differences(
    a: dict[int, float], b: dict[int, float], target: float | None = None
) -> str | None:
    """`b - a` in points for each seed both rows have, with the mean (± std over seeds): the
    number the paper's claim is about. Same-seed runs share their initialisation and batch
    order, not their dropout draws, so this is not a paired measurement: its spread understates
    the noise of one pair. Accuracies are fractions; None where no seed has both. With a
    `target` (points) below the mean, also what one more seed's difference must be for the mean
    to reach it."""
    seeds = sorted(a.keys() & b.keys())
    if not seeds:
        return None
    diffs = [100 * (b[s] - a[s]) for s in seeds]
    spread = f" ± {statistics.stdev(diffs):.1f}" if len(diffs) > 1 else ""
    each = ", ".join(f"seed {s} {d:+.1f}" for s, d in zip(seeds, diffs, strict=True))
    mean = statistics.mean(diffs)
    text = f"{each}; mean {mean:+.1f}{spread}"
    if target is not None and mean < target:
        needed = (len(diffs) + 1) * target - sum(diffs)
        text += f"; for a mean of {target:+.1f} one more seed needs {needed:+.1f}"
    return text


def edit_json(path: Path, changes: dict, sep: str = ".") -> None:
    """Set nested fields of a JSON file ("a.b": value), e.g. a model folder's cgr_config.json."""
    stored = json.loads(path.read_text())
    for keys, value in changes.items():
        place = stored
        *parents, last = keys.split(sep)
        for key in parents:
            place = place[key]
        place[last] = value
    path.write_text(json.dumps(stored))


def load_config(path: str | Path) -> dict:
    return yaml.safe_load((ROOT / path).read_text())


def train_config(path: str | Path) -> dict:
    """A `cgr train` config as the command reads it (groups inlined), ready to edit."""
    from cgr.training.config import resolved_config

    return resolved_config(ROOT / path)


def run_training(config: dict, name: str) -> dict:
    """One real `cgr train` run of `config` (checkpoints in checkpoints/bench/NAME, CSV log in
    logs/bench/NAME): dev accuracy, minutes and the logged training questions/s. A run killed
    part-way (a session's end) resumes from its last.ckpt when started again with the same
    config; any other leftover is cleared first. `minutes` then sums the parts."""
    ckpt_dir, log_dir = ROOT / "checkpoints" / "bench" / name, ROOT / "logs" / "bench" / name
    trainer = config["trainer"]
    trainer.update(enable_progress_bar=False, val_check_interval=1.0)
    trainer["logger"] = [{"class_path": "pytorch_lightning.loggers.CSVLogger",
                          "init_args": {"save_dir": str(log_dir), "name": "run"}}]  # fmt: skip
    for callback in trainer["callbacks"]:
        if "dirpath" in callback.get("init_args", {}):
            callback["init_args"]["dirpath"] = str(ckpt_dir)
    text = yaml.safe_dump(config)
    stamp, spent = ckpt_dir / "bench-config.yaml", ckpt_dir / "bench-minutes.txt"
    resuming = stamp.exists() and stamp.read_text() == text and (ckpt_dir / "last.ckpt").exists()
    if not resuming:
        for folder in (ckpt_dir, log_dir):
            shutil.rmtree(folder, ignore_errors=True)
        ckpt_dir.mkdir(parents=True)
        stamp.write_text(text)
    before = float(spent.read_text()) if resuming and spent.exists() else 0.0
    config_file = ckpt_dir / "bench-run.yaml"
    config_file.write_text(text)
    start = time.perf_counter()
    out_file, err_file = ckpt_dir / "bench-stdout.log", ckpt_dir / "bench-stderr.log"
    print(f"{name}: training, progress in {err_file.relative_to(ROOT)}", flush=True)
    with out_file.open("a") as out, err_file.open("a") as err, subprocess.Popen(
        [sys.executable, "-m", "cgr.cli", "train", "--config", str(config_file)], cwd=ROOT, stdout=out, stderr=err
    ) as proc:  # fmt: skip
        while True:  # the minutes so far stay on disk, for a resumed run's total
            try:
                proc.wait(timeout=60)
                break
            except subprocess.TimeoutExpired:
                spent.write_text(str(before + (time.perf_counter() - start) / 60))
    minutes = before + (time.perf_counter() - start) / 60
    stdout = out_file.read_text()
    lines = stdout.strip().splitlines()
    if proc.returncode != 0 or not lines or not lines[-1].startswith("accuracy:"):
        sys.stderr.write(stdout[-3000:] + err_file.read_text()[-5000:])
        raise SystemExit(f"{name} failed (exit {proc.returncode})")
    return {"accuracy": float(lines[-1].split()[1]), "minutes": minutes,
            "questions_per_s": training_speed(log_dir), "val_acc_by_epoch": accuracy_by_epoch(log_dir),
            "train_acc_by_epoch": accuracy_by_epoch(log_dir, "train/acc_epoch"), "machine": machine()}  # fmt: skip


def accuracy_by_epoch(log_dir: Path, key: str = "val/acc") -> list[float]:
    """Per epoch, the last `key` logged in it, from the CSV log. Dev accuracy ("val/acc") shows
    whether more epochs help without a separate run per epoch count; training accuracy
    ("train/acc_epoch") tells a reader that did not learn from one that learned what does not
    carry to dev."""
    by_epoch = {int(r["epoch"]): float(r[key]) for path in sorted(log_dir.rglob("metrics.csv"))
                for r in csv.DictReader(path.open()) if r.get(key)}  # fmt: skip
    return [by_epoch[e] for e in sorted(by_epoch)]


def training_speed(log_dir: Path) -> float | None:
    """Training questions/s of a run (this rank), from ThroughputMonitor's running totals: the
    questions trained on over the training time (validation excluded)."""
    totals = [(float(r["train/samples"]), float(r["train/time"])) for path in log_dir.rglob("metrics.csv")
              for r in csv.DictReader(path.open()) if r.get("train/samples")]  # fmt: skip
    if not totals:
        return None
    questions, seconds = max(totals)
    return questions / seconds if seconds else None


def run_cli(name: str, args: list[str]) -> None:
    """One `cgr` command in a fresh process (a benchmark row); its output goes to
    logs/bench/NAME.log (progress to follow with `tail -f`), its last lines on failure."""
    log = ROOT / "logs" / "bench" / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    print(f"{name}: running, progress in {log.relative_to(ROOT)}", flush=True)
    with log.open("a") as out:
        proc = subprocess.run(
            [sys.executable, "-m", "cgr.cli", *args], cwd=ROOT, stdout=out, stderr=out
        )
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed:\n{log.read_text()[-3000:]}")


def interval(row: dict, key: str, percent: bool = False) -> str:
    """`value [low, high]` of a row holding `key` and its bootstrap interval `key_ci95`."""
    scale, digits = (100, 1) if percent else (1, 3)
    low, high = row[f"{key}_ci95"]
    return f"{scale * row[key]:.{digits}f} [{scale * low:.{digits}f}, {scale * high:.{digits}f}]"
