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


def test_epoch_end_refresh_leaves_dev_to_the_next_validation():
    """With dev_on_validation the next validation retrieves dev anyway, with the encoder trained
    further: refreshing dev at epoch end as well would be work never read."""
    from types import SimpleNamespace

    from cgr.training.callbacks import EvidenceRefresh

    calls = []
    datamodule = SimpleNamespace(
        refresh_evidence=lambda model, trainer, splits=None: calls.append(splits)
    )
    trainer = SimpleNamespace(datamodule=datamodule, max_epochs=3)
    module = SimpleNamespace(query_encoder="encoder", current_epoch=0)
    EvidenceRefresh(1, dev_on_validation=True).on_train_epoch_end(trainer, module)
    EvidenceRefresh(1, dev_on_validation=False).on_train_epoch_end(trainer, module)
    module.current_epoch = 2  # the last epoch: nothing left to train on refreshed evidence
    EvidenceRefresh(1, dev_on_validation=True).on_train_epoch_end(trainer, module)
    assert calls == [["train"], None]
