import random

import numpy as np
import torch

from cgr.training.callbacks import RNGStateCheckpoint


def draws():
    return random.random(), float(np.random.rand()), float(torch.rand(1))


def test_rng_states_round_trip_through_a_weights_only_checkpoint(tmp_path):
    callback = RNGStateCheckpoint()
    torch.save({"rng": callback.state_dict()}, tmp_path / "c.pt")
    expected = draws()
    callback.load_state_dict(torch.load(tmp_path / "c.pt", weights_only=True)["rng"])
    assert draws() == expected


def test_epoch_end_refresh_takes_a_snapshot_and_refreshes_train_and_dev_together():
    """The authors' schedule: after each epoch but the last, the snapshot is taken and train and
    dev are re-retrieved with it; with dev_on_validation (a switch) dev waits for validation."""
    from types import SimpleNamespace

    from cgr.training.callbacks import EvidenceRefresh

    calls = []
    datamodule = SimpleNamespace(
        refresh_evidence=lambda model, trainer, splits=None: calls.append(splits)
    )
    trainer = SimpleNamespace(datamodule=datamodule, max_epochs=3)
    module = SimpleNamespace(query_encoder="encoder", current_epoch=0, snapshots=0)
    module.take_evidence_snapshot = lambda: setattr(module, "snapshots", module.snapshots + 1)
    EvidenceRefresh(1).on_train_epoch_end(trainer, module)
    EvidenceRefresh(1, dev_on_validation=True).on_train_epoch_end(trainer, module)
    module.current_epoch = 2  # the last epoch: nothing left to train on refreshed evidence
    EvidenceRefresh(1).on_train_epoch_end(trainer, module)
    assert calls == [["train", "dev"], ["train"]] and module.snapshots == 2


def test_a_resumed_run_re_retrieves_with_the_checkpoint_snapshot():
    """Resumed after a refresh, the setup's pools are the base encoder's: before training on,
    train and dev are re-retrieved with the snapshot the checkpoint holds (and not again when
    they already come from it)."""
    from types import SimpleNamespace

    from cgr.training.callbacks import EvidenceRefresh

    calls = []
    datamodule = SimpleNamespace(
        refresh_evidence=lambda model, trainer, splits=None: calls.append((model, splits)),
        pipeline=SimpleNamespace(fingerprint_of=lambda model: f"hash-of-{model}"),
        evidence_from={"train": "base", "dev": "base"},
    )
    trainer = SimpleNamespace(datamodule=datamodule)
    resumed = SimpleNamespace(refresh_snapshot_encoder=lambda: "snapshot")
    EvidenceRefresh(1).on_train_start(trainer, resumed)
    assert calls == [("snapshot", ["train", "dev"])]
    datamodule.evidence_from = {"train": "hash-of-snapshot", "dev": "hash-of-snapshot"}
    EvidenceRefresh(1).on_train_start(trainer, resumed)
    fresh = SimpleNamespace(refresh_snapshot_encoder=lambda: None)
    EvidenceRefresh(1).on_train_start(trainer, fresh)
    assert len(calls) == 1


def test_progress_log_writes_a_line_when_no_bar_is_drawn(tmp_path, caplog, monkeypatch):
    """A real (tiny) Lightning fit with the bar off, as the benchmarks and a job writing to a
    file run: the callback says where the epoch stands; with a bar on a terminal it is quiet."""
    import logging

    import pytorch_lightning as pl
    from pytorch_lightning.demos.boring_classes import BoringModel

    from cgr.training.callbacks import ProgressLog

    def fit(progress_bar: bool) -> list[str]:
        caplog.clear()
        trainer = pl.Trainer(max_epochs=1, limit_train_batches=4, limit_val_batches=0,
                             enable_progress_bar=progress_bar, enable_checkpointing=False,
                             logger=False, enable_model_summary=False, accelerator="cpu",
                             callbacks=[ProgressLog(every_s=0)], default_root_dir=tmp_path)  # fmt: skip
        with caplog.at_level(logging.INFO, logger="cgr.training.callbacks"):
            trainer.fit(BoringModel())
        return [r.getMessage() for r in caplog.records if r.name == "cgr.training.callbacks"]

    lines = fit(progress_bar=False)
    assert lines[-1].startswith("epoch 0: batch 4/4,") and "loss" in lines[-1], lines
    assert len(lines) == 4
    assert len(fit(progress_bar=True)) == 4  # the bar goes to a file here (pytest captures it)
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert fit(progress_bar=True) == []  # the bar is drawn on a terminal: no second report
