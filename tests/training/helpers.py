"""Tiny training configs on data/sample, written into a test's tmp folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytorch_lightning as pl
import yaml

from cgr.training.config import resolved_config
from tests.conftest import ROOT, SAMPLE


def tiny_config(tmp_path, model_class: str = "cgr.training.module.ReaderModule", model_args=None,
                trainer_args=None, data_args=None, **retrieval) -> Path:  # fmt: skip
    config = resolved_config(ROOT / "configs" / "default.yaml")
    config["trainer"].update(max_epochs=1, limit_train_batches=3, default_root_dir=str(tmp_path / "logs"),
                             enable_progress_bar=False, log_every_n_steps=1,
                             precision="32-true")  # the reference numerics, whatever the quickstart uses  # fmt: skip
    config["trainer"]["logger"] = [{"class_path": "pytorch_lightning.loggers.CSVLogger",
                                    "init_args": {"save_dir": str(tmp_path / "logs"), "name": "run"}}]  # fmt: skip
    for callback in config["trainer"]["callbacks"]:
        if "dirpath" in callback.get("init_args", {}):
            callback["init_args"]["dirpath"] = str(tmp_path / "ckpt")
        if callback["class_path"].endswith("ThroughputMonitor"):
            callback["init_args"]["window_size"] = 2  # a rate from the third batch on
    config["trainer"].update(trainer_args or {})
    init = config["model"]["init_args"]
    keep = {"reader_model", "max_length", "lr", "weight_decay", "warmup_ratio"}
    if model_class.endswith("ReaderModule"):
        init = {k: v for k, v in init.items() if k in keep}
    else:  # a refresh after every epoch, as the tests' two-epoch runs expect
        init["refresh_evidence_every_n_epochs"] = 1
    init["max_length"] = 64
    init.update(model_args or {})
    config["model"] = {"class_path": model_class, "init_args": init}
    data = config["data"]
    data.update(train_file=str(SAMPLE / "train.jsonl"), dev_file=str(SAMPLE / "dev.jsonl"),
                pool_cache_dir=str(tmp_path / "pools"), max_evidence=4)  # fmt: skip
    data["retrieval"].update(corpus=[str(SAMPLE / "facts.txt")], open_book=str(SAMPLE / "openbook.txt"),
                             cache_dir=str(tmp_path / "emb"), beam_size=2, open_book_k=2, **retrieval)  # fmt: skip
    data["chains"]["amr"]["cache"] = str(tmp_path / "amr.sqlite")
    data.update(data_args or {})
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


class EvidenceProbe(pl.Callback):
    """A callback (named by class path in a test's config) that writes, at each training epoch's
    start and each validation, which query encoder the data module's evidence came from and the
    fingerprint of the module's evidence snapshot: what the reader actually read."""

    def __init__(self, path: str):
        self.path = path

    def _write(self, trainer, pl_module, when: str) -> None:
        from cgr.evidence.pipeline import EvidencePipeline

        snapshot = pl_module.refresh_snapshot_encoder()  # the last refresh's: what is read now
        row = {"when": when, "epoch": pl_module.current_epoch,
               "evidence_from": dict(trainer.datamodule.evidence_from),
               "snapshot": snapshot and EvidencePipeline.fingerprint_of(snapshot)}  # fmt: skip
        with open(self.path, "a") as f:
            f.write(json.dumps(row) + "\n")

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self._write(trainer, pl_module, "train")

    def on_validation_start(self, trainer, pl_module) -> None:
        if not trainer.sanity_checking:
            self._write(trainer, pl_module, "validation")


class StopAtStep(pl.Callback):
    """Ends the run (as a kill would) when it is about to train global step `step`."""

    def __init__(self, step: int):
        self.step = step

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if trainer.global_step == self.step:
            raise SystemExit(9)


def checkpoint_every_two_steps(config: Path, stop_at: int | None = None) -> Path:
    """The config with last.ckpt written every 2 steps instead of every 10 minutes, and
    optionally a StopAtStep: a kill at a known step."""
    data = yaml.safe_load(config.read_text())
    callbacks = data["trainer"]["callbacks"]
    for cb in callbacks:
        if cb.get("init_args", {}).get("train_time_interval"):
            cb["init_args"].update(train_time_interval=None, every_n_train_steps=2)
    if stop_at is not None:
        callbacks.append({"class_path": "tests.training.helpers.StopAtStep",
                          "init_args": {"step": stop_at}})  # fmt: skip
    config.write_text(yaml.safe_dump(data))
    return config
