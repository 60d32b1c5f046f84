"""Lightning fits outside the Trainer `cgr train` builds: the progress line of a fit whose output
goes to a file (a cluster job, `nohup`, the benchmarks; `cgr train` names it in its callbacks),
and the plain fit the chain ranker and the support reader run."""

from __future__ import annotations

import logging
import sys
import time

import pytorch_lightning as pl
import torch

log = logging.getLogger(__name__)


class ProgressLog(pl.Callback):
    """One log line every `every_s` seconds of training (epoch, batch of the epoch, rate, time
    left in the epoch, loss) when no progress bar is drawn on a terminal: a run whose output goes
    to a file (a cluster job, `nohup`, the benchmarks) otherwise shows nothing for hours."""

    def __init__(self, every_s: float = 60.0):
        self.every_s = every_s
        self._start: tuple[float, int] | None = None
        self._last = 0.0

    def _quiet(self, trainer: pl.Trainer) -> bool:
        return trainer.progress_bar_callback is not None and sys.stderr.isatty()

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._start, self._last = None, time.monotonic()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx: int) -> None:
        now = time.monotonic()
        if self._start is None:  # timed from the first batch done: a resumed epoch starts mid-way
            self._start = (now, batch_idx)
        if self._quiet(trainer) or not trainer.is_global_zero or now - self._last < self.every_s:
            return
        self._last = now
        total = trainer.num_training_batches
        done = batch_idx - self._start[1]
        rate = done / (now - self._start[0]) if done > 0 else 0.0
        left = (
            f", {(total - batch_idx - 1) / rate / 60:.0f} min left in the epoch"
            if rate and total != float("inf")
            else ""
        )
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        shown = f", loss {float(loss):.4f}" if isinstance(loss, torch.Tensor) else ""
        log.info("epoch %d: batch %d/%s, %.2f batches/s%s%s", trainer.current_epoch,
                 batch_idx + 1, total, rate, left, shown)  # fmt: skip


def fit_one(module: pl.LightningModule, loader, epochs: int, metric: str, **trainer):
    """(the Trainer, the last logged `metric`) of a plain fit: no logger, no checkpoints (the
    caller saves the model it trained). The ranker's fit and the support reader's, with a progress
    line a minute where no bar is drawn on a terminal (these fits run for an hour on a CPU)."""
    fit = pl.Trainer(
        max_epochs=epochs, logger=False, enable_checkpointing=False,
        enable_model_summary=False, callbacks=[ProgressLog()], **trainer,
    )  # fmt: skip
    fit.fit(module, loader)
    return fit, float(fit.callback_metrics.get(metric, float("nan")))
