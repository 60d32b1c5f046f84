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
