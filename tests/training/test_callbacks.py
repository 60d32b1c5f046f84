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
