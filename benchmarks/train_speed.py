"""Training speed on the current device: reader-only and CGR side by side.

For each row it runs one real training epoch of `cgr train`'s own objects (LightningCLI over the
config, the config's model class or the reader alone) and reports
- training questions/s over the epoch's steps, each from the previous step's end (loading and
  collating the batch included; the first `--warmup` steps excluded);
- phase wall times: setup retrieval (pools), chain search (parse + chains + evidence
  selection), the epoch, and the dev refresh a CGR validation runs;
- the step split from a second, shorter pass with timers around the step's parts (the GPU
  synchronised at each boundary, so the split adds a little to the step): reader tokenising,
  reader forward, query encoder forward, fact vectors, loss packing (chain inputs, index
  tensors, loss terms), and backward + optimizer (the rest of the step);
- `--profile`: the top rows of torch.profiler over a few CGR steps (self CPU time).

Rows are saved to benchmarks/results/train_speed-<device>-<tag>.json with the device name;
`--table` prints every saved row (CPU and GPU).

    .venv/bin/python benchmarks/train_speed.py                      # quickstart config, CPU rows
    .venv/bin/python benchmarks/train_speed.py --table
    .venv/bin/python benchmarks/train_speed.py --config configs/obqa_cgr_cpu.yaml \
        --train-questions 4957 --precision bf16-mixed --batch-size 32   # a GPU row
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pytorch_lightning as pl
import torch
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import RESULTS, machine, print_table, train_config  # noqa: E402
from cgr.training.config import native_precision  # noqa: E402

READER = "cgr.training.module.ReaderModule"
READER_ARGS = ("reader_model", "max_length", "lr", "weight_decay", "warmup_ratio")
# (label, module method wrapped); the split also times the step and training_step
STEP_PARTS = (
    ("reader tokenise", "reader.encode"),
    ("reader forward", "reader.forward"),
    ("query encoder", "encode_queries"),
    ("fact vectors", "encode_facts"),
    ("fact vectors", "fact_vectors"),
    ("loss packing", "_chain_rows_log_prob"),
    ("loss packing", "_global_loss"),
    ("loss packing", "chain_inputs"),
)


def now(cuda: bool) -> float:
    """The time, once the GPU's queued work is done (when timing on CUDA)."""
    if cuda:
        torch.cuda.synchronize()
    return time.perf_counter()


class NestedTimer:
    """Self time per label (time inside nested timed calls goes to their own label); on CUDA
    it synchronises at each boundary so the device's work is counted where it is queued."""

    def __init__(self, cuda: bool):
        self.cuda = cuda
        self.seconds: dict[str, float] = defaultdict(float)
        self._stack: list[list] = []

    def _now(self) -> float:
        return now(self.cuda)

    def wrap(self, label: str, fn):
        def timed(*args, **kwargs):
            start = self._now()
            self._stack.append([label, 0.0])
            try:
                return fn(*args, **kwargs)
            finally:
                _, nested = self._stack.pop()
                spent = self._now() - start
                self.seconds[label] += spent - nested
                if self._stack:
                    self._stack[-1][1] += spent

        return timed


def _wrap_method(obj, dotted: str, timer: NestedTimer, label: str) -> bool:
    *path, name = dotted.split(".")
    for part in path:
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    fn = getattr(obj, name, None)
    if fn is None or not callable(fn):
        return False
    object.__setattr__(obj, name, timer.wrap(label, fn))
    return True


class GpuSampler:
    """nvidia-smi's utilisation every 200 ms while the epoch runs (mean and share busy)."""

    def __init__(self):
        import shutil
        import subprocess

        self.proc = None
        if torch.cuda.is_available() and shutil.which("nvidia-smi"):
            self.proc = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                 "-lms", "200", "-i", "0"], stdout=subprocess.PIPE, text=True,
            )  # fmt: skip

    def stop(self) -> dict:
        if self.proc is None:
            return {}
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=10)
        values = [float(v) for v in out.split() if v.strip().replace(".", "").isdigit()]
        if not values:
            return {}
        return {"gpu_util_mean": sum(values) / len(values),
                "gpu_busy_share": sum(v > 0 for v in values) / len(values)}  # fmt: skip


class StepClock(pl.Callback):
    """Wall time of each training step (batch start to batch end, backward and optimizer
    included), of the epoch, and of each validation (the dev refresh runs inside it)."""

    def __init__(self, cuda: bool, stop_after: int | None = None):
        self.cuda, self.stop_after = cuda, stop_after
        self.steps: list[tuple[float, int]] = []
        self.validation: list[float] = []
        self.epoch = 0.0

    def _now(self) -> float:
        return now(self.cuda)

    def on_train_epoch_start(self, trainer, pl_module):
        self.gpu = GpuSampler()
        self._epoch_start = self._now()
        self._last_end = None

    def on_train_epoch_end(self, trainer, pl_module):
        self.epoch = self._now() - self._epoch_start
        self.gpu_use = self.gpu.stop()

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self._start = self._now()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        # from the previous step's end: the batch's loading and collating (the reader's packing
        # and tokenising, in the loop's process when data.num_workers is 0) count too
        now = self._now()
        self.steps.append((now - (self._last_end or self._start), len(batch)))
        self._last_end = now
        if self.stop_after is not None and len(self.steps) >= self.stop_after:
            trainer.should_stop = True

    def on_validation_start(self, trainer, pl_module):
        self._val_start = self._now()

    def on_validation_end(self, trainer, pl_module):
        if not trainer.sanity_checking:
            self.validation.append(self._now() - self._val_start)


def build_cli(config: dict):
    """`cgr train`'s LightningCLI objects (not run) for an edited config."""
    from cgr.training.config import train_cli

    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump(config, f)
    try:
        return train_cli(["--config", f.name])
    finally:
        os.unlink(f.name)


def row_config(base: dict, row: str, args: argparse.Namespace) -> dict:
    config = copy.deepcopy(base)
    trainer = config["trainer"]
    trainer.update(max_epochs=1, logger=False, enable_checkpointing=False, callbacks=[],
                   enable_progress_bar=False, val_check_interval=1.0, num_sanity_val_steps=0,
                   enable_model_summary=False)  # fmt: skip
    trainer.pop("default_root_dir", None)
    trainer["accelerator"] = args.accelerator
    # what `cgr train` would run: emulated bf16 on a CPU without it is not a training speed
    precision = args.precision or trainer.get("precision", "32-true")
    trainer["precision"] = native_precision(precision, args.accelerator)
    data = config["data"]
    if args.train_questions:
        data["max_train_questions"] = args.train_questions
    if args.dev_file:
        data["dev_file"] = args.dev_file
    if args.batch_size:
        data["batch_size"] = args.batch_size
    if args.num_workers is not None:
        data["num_workers"] = args.num_workers
    if args.cold:  # pools and chains retrieved and searched again (corpus vectors stay cached)
        data["pool_cache_dir"] = tempfile.mkdtemp(prefix="cgr-pools-")
    if row == "reader":
        init = config["model"]["init_args"]
        config["model"] = {"class_path": READER,
                           "init_args": {k: init[k] for k in READER_ARGS if k in init}}  # fmt: skip
    return config


def _phase_timers(datamodule, phases: dict[str, float], counts: dict[str, int]) -> None:
    """Times the evidence pipeline's stages as the DataModule calls them (setup and refresh)."""
    pipeline = datamodule.pipeline
    pools, select = pipeline.pools, pipeline.select

    def timed_pools(questions, desc="retrieving evidence"):
        start = time.perf_counter()
        out = pools(questions, desc)
        key = "setup retrieval" if "refresh" not in desc else "refresh retrieval"
        phases[key] += time.perf_counter() - start
        counts[key] += sum(len(q.choices) for q in questions)
        return out

    def timed_select(examples, *a, **k):
        start = time.perf_counter()
        out = select(examples, *a, **k)
        phases["chain search"] += time.perf_counter() - start
        counts["chain search"] += len(examples)
        return out

    pipeline.pools, pipeline.select = timed_pools, timed_select


def run_row(base: dict, row: str, args: argparse.Namespace) -> dict:
    config = row_config(base, row, args)
    cuda = args.accelerator in {"gpu", "cuda"} or (
        args.accelerator == "auto" and torch.cuda.is_available()
    )
    cli = build_cli(config)
    model, datamodule = cli.model, cli.datamodule
    phases: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    _phase_timers(datamodule, phases, counts)
    start = time.perf_counter()
    datamodule.setup("fit")
    setup_s = time.perf_counter() - start
    clock = StepClock(cuda)
    trainer = pl.Trainer(**_trainer_kwargs(config), callbacks=[clock])
    trainer.fit(model, datamodule=datamodule)
    if hasattr(model, "query_encoder"):  # what a CGR validation adds once a refresh ran
        start = time.perf_counter()
        datamodule.refresh_evidence(model.query_encoder, trainer, splits=["dev"])
        phases["dev refresh"] = time.perf_counter() - start
    steps = clock.steps[args.warmup :]
    step_s = sum(s for s, _ in steps)
    questions = sum(n for _, n in steps)
    result = {
        "row": row,
        "config": args.config,
        "device": _device_name(cuda),
        "machine": machine(),
        "precision": str(config["trainer"].get("precision")),
        "batch_size": config["data"]["batch_size"],
        "num_workers": config["data"].get("num_workers", 0),
        "train_questions": len(datamodule.splits["train"]),
        "questions_per_s": questions / step_s if step_s else float("nan"),
        "step_ms": 1000 * step_s / max(1, len(steps)),
        "epoch_s": clock.epoch,
        "setup_s": setup_s,
        "validation_s": sum(clock.validation),
        **getattr(clock, "gpu_use", {}),
        "phases_s": dict(phases),
        "phase_counts": dict(counts),
        "date": time.strftime("%Y-%m-%d"),
    }
    if args.split_steps:
        save(dict(result, tag=args.tag_used), args.tag_used)  # kept if the split is cut short
        result["split_ms"] = step_split(config, datamodule, cuda, args)
    return result


def _trainer_kwargs(config: dict) -> dict:
    t = dict(config["trainer"])
    t.pop("callbacks", None)
    return t


def step_split(config: dict, datamodule, cuda: bool, args: argparse.Namespace) -> dict:
    """Per-step milliseconds of each part, over `--split-steps` steps after `--warmup`."""
    model = build_cli(config).model
    timer = NestedTimer(cuda)
    for label, dotted in STEP_PARTS:
        _wrap_method(model, dotted, timer, label)
    _wrap_method(model, "training_step", timer, "other (logging, labels)")
    clock = StepClock(cuda, stop_after=args.warmup + args.split_steps)
    kwargs = _trainer_kwargs(config)
    kwargs.update(limit_val_batches=0)
    trainer = pl.Trainer(**kwargs, callbacks=[clock])
    # the warm-up steps are timed too, then subtracted: reset after them
    warm = _Reset(timer, clock, args.warmup)
    trainer.callbacks.append(warm)
    trainer.fit(model, datamodule=datamodule)
    n = max(1, len(clock.steps) - args.warmup)
    step_total = sum(s for s, _ in clock.steps[args.warmup :])
    parts = {k: 1000 * v / n for k, v in timer.seconds.items()}
    parts["backward + optimizer"] = 1000 * step_total / n - sum(parts.values())
    parts["step"] = 1000 * step_total / n
    return parts


class _Reset(pl.Callback):
    def __init__(self, timer: NestedTimer, clock: StepClock, after: int):
        self.timer, self.clock, self.after = timer, clock, after

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if len(self.clock.steps) == self.after:
            self.timer.seconds.clear()


def profile(base: dict, args: argparse.Namespace) -> list[list]:
    """torch.profiler over a few CGR steps: the top rows by self CPU time (and device time)."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    config = row_config(base, "cgr", args)
    cli = build_cli(config)
    cuda = torch.cuda.is_available() and args.accelerator != "cpu"
    clock = StepClock(cuda, stop_after=args.warmup + args.profile)
    kwargs = _trainer_kwargs(config)
    kwargs.update(limit_val_batches=0)
    trainer = pl.Trainer(**kwargs, callbacks=[clock])
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with torch_profile(activities=activities) as prof:
        trainer.fit(cli.model, datamodule=cli.datamodule)
    sort = "self_cuda_time_total" if cuda else "self_cpu_time_total"
    table = prof.key_averages().table(sort_by=sort, row_limit=args.profile_rows)
    print(table)
    return table.splitlines()


def _device_name(cuda: bool) -> str:
    if cuda:
        return torch.cuda.get_device_name(0)
    return f"CPU ({os.cpu_count()} cores, {torch.get_num_threads()} torch threads)"


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text).strip("-").lower()[:40]


def save(result: dict, tag: str) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"train_speed-{_slug(result['device'])}-{tag}-{result['row']}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    return path


def table(paths: list[Path] | None = None, tags: list[str] | None = None) -> None:
    """The saved rows (all, or those of `tags`; the exact-search timings only with all)."""
    paths = paths or sorted(RESULTS.glob("train_speed-*.json"))
    searches = [json.loads(p.read_text()) for p in paths if p.stem.endswith("-search") and not tags]
    rows = [json.loads(p.read_text()) for p in paths if not p.stem.endswith("-search")]
    if tags:  # in the order asked, so a page can put the reference rows first
        rows = sorted((r for r in rows if r.get("tag") in tags), key=lambda r: tags.index(r["tag"]))
    for saved in searches:
        print("Exact search over the corpus (one batch of queries)")
        print_table(saved["columns"], saved["rows"])
        print()
    if not rows:
        print("no saved train_speed rows")
        return
    print("Training speed (questions/s over the epoch's steps, warm-up excluded)")
    cols = ["device", "config", "tag", "row", "precision", "batch", "train q", "questions/s",
            "ms/step", "setup retrieval s (hyp/s)", "chain search s (q/s)", "epoch s",
            "validation s", "dev refresh s", "GPU util % (busy %)", "date"]  # fmt: skip
    out = []
    for r in rows:
        ph, n = r.get("phases_s", {}), r.get("phase_counts", {})

        def rate(key: str, ph=ph, n=n) -> str:
            s = ph.get(key)
            if s is None:
                return "cached"
            return f"{s:.1f} ({n.get(key, 0) / s:.0f})" if s > 0 else "0"

        out.append([r["device"], Path(r["config"]).stem, r.get("tag", ""), r["row"],
                    r["precision"], r["batch_size"], r["train_questions"],
                    round(r["questions_per_s"], 2), round(r["step_ms"], 1),
                    rate("setup retrieval"), rate("chain search"), round(r["epoch_s"], 1),
                    round(r["validation_s"], 1), round(ph.get("dev refresh", 0.0), 1), _gpu(r), r["date"]])  # fmt: skip
    print_table(cols, out)
    split_rows = [r for r in rows if r.get("split_ms")]
    if split_rows:
        labels = []
        for r in split_rows:
            labels += [k for k in r["split_ms"] if k not in labels]
        print("\nStep split (ms per step; timers synchronise the GPU at each boundary)")
        print_table(
            ["device", "tag", "row", *labels],
            [[r["device"], r.get("tag", ""), r["row"],
              *[round(r["split_ms"].get(k, 0.0), 1) for k in labels]] for r in split_rows],
        )  # fmt: skip
    pairs = defaultdict(dict)
    for r in rows:
        pairs[(r["device"], r["config"], r.get("tag", ""))][r["row"]] = r["questions_per_s"]
    ratios = [
        f"{tag or f'{dev}, {Path(cfg).stem}'} {p['cgr'] / p['reader']:.2f}"
        for (dev, cfg, tag), p in pairs.items()
        if "cgr" in p and "reader" in p
    ]
    if ratios:  # one line: the tags name the device and config of the rows above
        print("\nCGR / reader-only training speed: " + "; ".join(ratios))


def _gpu(row: dict) -> str:
    if "gpu_util_mean" not in row:
        return "-"
    return f"{row['gpu_util_mean']:.0f} ({100 * row['gpu_busy_share']:.0f})"


def search_backends(config_path: str, queries: int = 640, k: int = 12) -> list[list]:
    """Exact search of `queries` corpus vectors (as queries) over the config's corpus: FAISS on
    the CPU against one matmul + top-k on the GPU (DeviceFlatIndex), and FAISS's GPU build when
    installed: what `search_backend` picks is measured here."""
    import numpy as np

    from cgr.data.corpus import Corpus
    from cgr.retrieval.factory import RetrievalConfig, cached_vectors
    from cgr.retrieval.index import DeviceFlatIndex, FaissIndex, gpu_available

    cfg = RetrievalConfig(**train_config(config_path)["data"]["retrieval"])
    vectors = cached_vectors(cfg, Corpus.from_files(cfg.corpus))
    if vectors is None:
        raise SystemExit("run `cgr encode` for this config first (no cached corpus vectors)")
    data = vectors.take(np.arange(len(vectors)))
    q = data[np.random.default_rng(0).choice(len(data), queries, replace=False)]
    backends = [("faiss-cpu", lambda: FaissIndex(data, use_gpu=False))]
    if torch.cuda.is_available():
        backends.append(("torch (cuda)", lambda: DeviceFlatIndex(data, "cuda")))
    if gpu_available():
        backends.append(("faiss-gpu", lambda: FaissIndex(data, use_gpu=True)))
    rows = []
    for name, build in backends:
        index = build()
        index.search(q[:8], k)  # warm-up
        start = time.perf_counter()
        for _ in range(5):
            index.search(q, k)
        seconds = (time.perf_counter() - start) / 5
        rows.append([_device_name(torch.cuda.is_available()), name, len(data), queries,
                     round(1000 * seconds, 1), round(queries / seconds)])  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/default.yaml")
    parser.add_argument("--rows", nargs="+", default=["reader", "cgr"], choices=["reader", "cgr"])
    parser.add_argument("--tag", default="", help="a label kept with the rows (e.g. 'before')")
    parser.add_argument("--accelerator", default="auto")
    parser.add_argument("--precision", default=None, help="default: the config's")
    parser.add_argument("--train-questions", type=int, default=None)
    parser.add_argument("--dev-file", default=None)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--num-workers", type=int, default=None)
    parser.add_argument("--cold", action="store_true", help="pools and chains not from cache")
    parser.add_argument("--warmup", type=int, default=3, help="steps left out of the timing")
    parser.add_argument("--split-steps", type=int, default=20, help="0: no step split")
    parser.add_argument("--profile", type=int, default=0, help="N: torch.profiler over N steps")
    parser.add_argument("--profile-rows", type=int, default=12)
    parser.add_argument("--search", action="store_true", help="time the search backends too")
    parser.add_argument("--table", action="store_true", help="print the saved rows only")
    parser.add_argument("--tags", nargs="+", help="--table: only the rows saved with these tags")
    args = parser.parse_args()
    if args.table:
        table(tags=args.tags)
        return
    if args.search:
        rows = search_backends(args.config)
        cols = ["device", "search", "facts", "queries", "ms per batch", "queries/s"]
        print_table(cols, rows)
        slug = _slug(_device_name(torch.cuda.is_available()))
        (RESULTS / f"train_speed-{slug}-search.json").write_text(
            json.dumps({"columns": cols, "rows": rows, "date": time.strftime("%Y-%m-%d")}) + "\n"
        )
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("WANDB_MODE", "offline")
    pl.seed_everything(33, verbose=False)
    base = train_config(args.config)
    tag = args.tag or _slug(f"{Path(args.config).stem}-b{args.batch_size or ''}")
    args.tag_used = tag
    saved = []
    for row in args.rows:
        result = run_row(base, row, args)
        result["tag"] = tag
        saved.append(save(result, tag))
        print(f"{row}: {result['questions_per_s']:.2f} questions/s", flush=True)
    if args.profile:
        lines = profile(base, args)
        path = (
            RESULTS
            / f"train_speed-{_slug(_device_name(torch.cuda.is_available()))}-{tag}-profile.txt"
        )
        path.write_text("\n".join(lines) + "\n")
    table(saved)


if __name__ == "__main__":
    main()
