"""`cgr eval`: load a checkpoint (reader + the data settings it was trained with), retrieve
evidence for a question file, score every choice and write one JSON line per question."""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytorch_lightning as pl

from cgr.amr.parsers import AMRConfig
from cgr.chains.builder import ChainConfig
from cgr.errors import ConfigError
from cgr.evidence.selection import EvidenceConfig
from cgr.retrieval.factory import RetrievalConfig
from cgr.training.checkpoints import read_checkpoint
from cgr.training.datamodule import QADataModule
from cgr.training.module import ReaderModule


def _datamodule_from_checkpoint(
    checkpoint: dict, data_file: str | None, **overrides
) -> QADataModule:
    hparams = {
        k: v
        for k, v in (checkpoint.get("datamodule_hyper_parameters") or {}).items()
        if not k.startswith("_")  # LightningCLI's own bookkeeping (_instantiator, _class_path)
    }
    if not hparams:
        raise ConfigError("checkpoint has no data settings (was it written by `cgr train`?)")
    retrieval = RetrievalConfig(**hparams.pop("retrieval"))
    chain_settings = dict(hparams.pop("chains", None) or {"enabled": False})
    chain_settings["amr"] = AMRConfig(**chain_settings.get("amr", {}))
    chains = ChainConfig(**chain_settings)
    if overrides.pop("no_chains", False):
        chains.enabled = False
    # checkpoints written before data.evidence existed read the pool in retrieval order
    evidence = EvidenceConfig(**(hparams.pop("evidence", None) or {"order": "retrieval"}))
    hparams.update({k: v for k, v in overrides.items() if v is not None})
    hparams["predict_file"] = data_file or hparams.get("dev_file")
    return QADataModule(retrieval=retrieval, chains=chains, evidence=evidence, **hparams)


def module_class(checkpoint: dict):
    """ReaderModule or CGRModule, from the class LightningCLI recorded (or the weights)."""
    from cgr.training.cgr_module import CGRModule

    path = (checkpoint.get("hyper_parameters") or {}).get("_class_path", "")
    if path.endswith("CGRModule") or any(
        k.startswith("query_encoder.") for k in checkpoint["state_dict"]
    ):
        return CGRModule
    return ReaderModule


def prediction_record(example, scores: list[float]) -> dict:
    predicted = max(range(len(scores)), key=scores.__getitem__)
    return {
        "id": example.question_id,
        "question": example.question,
        "predicted": example.labels[predicted],
        "answer": None if example.answer_index is None else example.labels[example.answer_index],
        "correct": None if example.answer_index is None else predicted == example.answer_index,
        "choices": [
            {
                "label": label,
                "text": text,
                "score": score,
                "hypothesis": hyp,
                "facts": [f.to_dict() for f in facts],
                "chains": chains,
            }
            for label, text, score, hyp, facts, chains in zip(
                example.labels,
                example.choices,
                scores,
                example.hypotheses,
                example.facts,
                example.chains or [[] for _ in example.choices],
                strict=True,
            )
        ],
    }


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

    A reader that collapsed to one position (the ARC-Challenge symptom of issue 15) shows here
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
    checkpoint_path: str,
    data_file: str | None = None,
    out_path: str | None = None,
    batch_size: int | None = None,
    export_dir: str | None = None,
    no_chains: bool = False,
) -> EvalResult:
    checkpoint = read_checkpoint(checkpoint_path)
    datamodule = _datamodule_from_checkpoint(
        checkpoint, data_file, eval_batch_size=batch_size, no_chains=no_chains
    )
    model = module_class(checkpoint).load_from_checkpoint(
        checkpoint_path, map_location="cpu", weights_only=True
    )
    if hasattr(model, "query_encoder"):  # CGR: retrieve with the trained query encoder
        datamodule.use_query_encoder(model.query_encoder.eval())
    trainer = pl.Trainer(accelerator="auto", devices=1, logger=False, enable_checkpointing=False)
    batches = trainer.predict(model, datamodule=datamodule)
    source = datamodule.hparams.predict_file
    out = (
        Path(out_path)
        if out_path
        else Path(checkpoint_path).parent / f"predictions-{Path(source).stem}.jsonl"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    correct = labelled = 0
    records = [prediction_record(ex, scores) for batch in batches for ex, scores in batch]
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    with tmp.open("w", encoding="utf-8") as f:
        for record in records:
            if record["correct"] is not None:
                labelled += 1
                correct += int(record["correct"])
            f.write(json.dumps(record) + "\n")
    os.replace(tmp, out)
    if export_dir:
        from cgr.chains.export import write_exports

        write_exports(records, Path(export_dir))
    return EvalResult(
        correct / labelled if labelled else math.nan, out, position_distribution(records)
    )
