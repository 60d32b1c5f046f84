"""Callbacks that make a killed run resumable exactly."""

from __future__ import annotations

import random

import numpy as np
import pytorch_lightning as pl
import torch


class RNGStateCheckpoint(pl.Callback):
    """Saves the Python, NumPy and torch RNG states in every checkpoint and restores them on
    resume, so a run killed and restarted draws the same random numbers (shuffles, dropout)."""

    def state_dict(self) -> dict:
        kind, keys, pos, has_gauss, cached = np.random.get_state()
        return {  # plain types and tensors only: checkpoints load with weights_only=True
            "python": random.getstate(),
            "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, cached],
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        }

    def load_state_dict(self, state: dict) -> None:
        python = state["python"]
        random.setstate((python[0], tuple(python[1]), python[2]))
        kind, keys, pos, has_gauss, cached = state["numpy"]
        np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
        torch.set_rng_state(state["torch"])
        if state.get("cuda") and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda"])
