"""`cgr eval`: load a checkpoint (reader + the data settings it was trained with), retrieve
evidence for a question file, score every choice and write one JSON line per question."""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytorch_lightning as pl

from cgr.errors import ConfigError
from cgr.evidence.pipeline import EvidencePipeline
from cgr.files import open_no_follow, require_writable_dir, require_writable_file
from cgr.pretrained.loading import (  # noqa: F401 - the public names they had here
    check_query_encoder,
    load_module,
    module_class,
    retrieval_encoder,
)
from cgr.training.datamodule import QADataModule

if TYPE_CHECKING:
    from cgr.pretrained.source import OpenedModel


def _datamodule_for(
    data: dict, data_file: str | None, no_chains: bool = False, **overrides
) -> QADataModule:
    """The DataModule a model was trained with (`data`: its stored data settings, paths
    checked), its evidence pipeline read back with EvidencePipeline.from_settings (one reading
    of the settings for eval and the Python API)."""
    pipeline = EvidencePipeline.from_settings(data)
    if no_chains:
        pipeline.chains.enabled = False
    rest = {k: v for k, v in data.items() if k not in pipeline.settings()}
    rest.update({k: v for k, v in overrides.items() if v is not None})
    rest["predict_file"] = data_file or rest.get("dev_file")
    return QADataModule(
        retrieval=pipeline.retrieval,
        chains=pipeline.chains,
        evidence=pipeline.evidence,
        max_evidence=pipeline.max_evidence,
        retrieval_batch_size=pipeline.retrieval_batch_size,
        **rest,
    )


# chains per choice scored for support in `cgr eval` (5: the shown ones and a few to rank)
SUPPORT_CANDIDATES = 5


class PredictionWriter(pl.Callback):
    """Writes each batch's predictions as it is scored, to OUT.partial, renamed to OUT when
    all are written: a full disk (or a size limit) mid-eval stops with one line naming the
    file and keeps every question written before it in OUT.partial."""

    def __init__(
        self, out: Path, judge=None, order: str | None = None, chain_margin: float | None = None
    ):
        self.out, self.partial = out, out.with_name(out.name + ".partial")
        self.judge = judge  # a support reader, or None: the module's reader judges support
        self.order = order  # how the chains are shown (None: DEFAULT_ORDER)
        self.chain_margin = chain_margin  # a supporting chain's margin (None: the default)
        self.records: list[dict] = []
        self._file, self._written = None, 0

    def __enter__(self) -> PredictionWriter:
        self.partial.parent.mkdir(parents=True, exist_ok=True)
        self._file = open_no_follow(self.partial, "w")
        return self

    def on_predict_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        rows = prediction_records(pl_module, outputs, self.judge, self.order, self.chain_margin)
        try:
            self._file.writelines(json.dumps(r) + "\n" for r in rows)
            self._file.flush()
        except OSError as e:
            with contextlib.suppress(OSError):  # closed first: its buffer's flush cannot follow
                self._file.close()
            with contextlib.suppress(OSError):  # whole lines only: the batch that failed goes
                os.truncate(self.partial, self._written)
            raise OutputError(
                f"{self.partial}: could not write ({e.strerror}); the {len(self.records)} "
                f"questions scored before it are kept there: free space or choose --out elsewhere"
            ) from None
        self.records += rows
        self._written = self._file.tell()

    def __exit__(self, kind, error, trace) -> None:
        try:
            self._file.close()
        except OSError:
            pass
        if kind is None:
            os.replace(self.partial, self.out)


class OutputError(ConfigError):
    pass


def prediction_records(module, outputs: list, judge=None, order: str | None = None,
                       chain_margin: float | None = None) -> list[dict]:  # fmt: skip
    """predict_step's (example, scores) pairs as records, chains scored for support (by
    `judge`, a support reader, else the module's reader) and ranked by `order`
    (cgr.evaluation.support.ORDERS; None: DEFAULT_ORDER)."""
    from cgr.evaluation.prediction import predictions
    from cgr.evaluation.support import DEFAULT_ORDER

    records = predictions(
        module, outputs, order or DEFAULT_ORDER, SUPPORT_CANDIDATES, judge, chain_margin
    )
    return [p.to_dict() for p in records]


@dataclass
class EvalResult:
    accuracy: float  # nan for a file without answer keys
    predictions: Path
    positions: dict[str, float]  # share of predictions per answer position

    def report(self) -> list[str]:
        """The lines `cgr eval` and `cgr train` print; `accuracy:` is the last."""
        return [
            f"predictions: {self.predictions}",
            *describe_distribution(self.positions),
            f"accuracy: {self.accuracy:.4f}",
        ]


def position_distribution(records: list[dict]) -> dict[str, float]:
    """Share of predictions at each answer position, named by its usual label ("A" or "1").

    A reader that collapsed to one position (seen on ARC-Challenge) shows here
    at once; accuracy alone hides it when the position happens to be a frequent answer."""
    counts: Counter[int] = Counter()
    names: dict[int, Counter[str]] = {}
    for r in records:
        labels = [c["label"] for c in r["choices"]]
        pos = labels.index(r["predicted"])
        counts[pos] += 1
        names.setdefault(pos, Counter())[labels[pos]] += 1
    total = sum(counts.values()) or 1
    return {names[p].most_common(1)[0][0]: counts[p] / total for p in sorted(counts)}


def describe_distribution(shares: dict[str, float]) -> list[str]:
    """Printed lines: the distribution, and a warning when one position takes over half."""
    lines = ["predicted positions: " + ", ".join(f"{k} {100 * v:.1f} %" for k, v in shares.items())]
    top, share = max(shares.items(), key=lambda kv: kv[1], default=("", 0.0))
    if share > 0.5:
        lines.append(
            f"warning: {100 * share:.1f} % of predictions are position {top}: the reader may "
            "have collapsed to one answer position (README: Answer positions)"
        )
    return lines


def evaluate(
    model: str | Path | OpenedModel,
    data_file: str | None = None,
    out_path: str | None = None,
    batch_size: int | None = None,
    export_dir: str | None = None,
    no_chains: bool = False,
    query_encoder: str = "auto",
    data_roots: Sequence[str | Path] = (),
) -> EvalResult:
    """`model`: a checkpoint, a model folder (`cgr export`), or either already opened and
    checked (`cgr.pretrained.source.open_model`). `query_encoder`: which encoder a CGR
    checkpoint retrieves with ("auto", "trained" or "base"; see `retrieval_encoder` and
    README). `data_roots`: folders a model written elsewhere may read files from."""
    from cgr.pretrained.source import OpenedModel, open_model

    opened = model if isinstance(model, OpenedModel) else open_model(
        model, query_encoder, data_roots, dev_file=data_file is None
    )  # fmt: skip
    datamodule = _datamodule_for(
        opened.data, data_file, eval_batch_size=batch_size, no_chains=no_chains
    )
    source = datamodule.hparams.predict_file
    out = (
        Path(out_path) if out_path else opened.output_dir / f"predictions-{Path(source).stem}.jsonl"
    )
    require_writable_file(out, "--out")  # before the work, not after it
    if export_dir:
        require_writable_dir(export_dir, "--export-dir")
    import torch

    # on the GPU before the DataModule retrieves: a CGR query encoder encodes there
    device = "cuda" if torch.cuda.is_available() else "cpu"
    module, encoder = opened.load(device)
    if encoder is not None:  # CGR
        datamodule.use_query_encoder(encoder)
    writer = PredictionWriter(out, opened.load_support_reader(device), opened.chain_order,
                              opened.chain_margin)  # fmt: skip
    trainer = pl.Trainer(accelerator="auto", devices=1, logger=False, enable_checkpointing=False,
                         callbacks=[writer])  # fmt: skip
    with writer:
        trainer.predict(module, datamodule=datamodule, return_predictions=False)
    records = writer.records
    labelled = [r["correct"] for r in records if r["correct"] is not None]
    correct = sum(labelled)
    if export_dir:
        from cgr.chains.export import write_exports

        try:
            write_exports(records, Path(export_dir))
        except OSError as e:
            raise OutputError(f"--export-dir {export_dir}: could not write ({e.strerror}); the "
                              f"predictions are in {out}") from None  # fmt: skip
    return EvalResult(
        correct / len(labelled) if labelled else math.nan, out, position_distribution(records)
    )
