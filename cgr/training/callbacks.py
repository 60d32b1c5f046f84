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
        return {
            "python": random.getstate(),
            "numpy": np.random.get_state(),
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        }

    def load_state_dict(self, state: dict) -> None:
        random.setstate(state["python"])
        np.random.set_state(state["numpy"])
        torch.set_rng_state(state["torch"])
        if state.get("cuda") and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda"])
