"""ResumableSampler/ResumableLoader: a run killed part-way through an epoch and resumed from its
last.ckpt trains on exactly the questions, in exactly the order, of a run never killed; and
DropoutSeed changes a run's random draws without changing that order."""

from __future__ import annotations

import pytest
import pytorch_lightning as pl
import torch

from cgr.chains.builder import ChainConfig
from cgr.retrieval.factory import RetrievalConfig
from cgr.training.callbacks import DropoutSeed, RNGStateCheckpoint
from cgr.training.datamodule import QADataModule
from cgr.training.sampling import ResumableSampler
from tests.conftest import SAMPLE


class Killed(RuntimeError):
    pass


class OrderRecorder(pl.LightningModule):
    """Records the question ids of every training batch and one draw from torch's RNG (what
    dropout draws from); raises after `kill_after` batches."""

    def __init__(self, kill_after: int | None = None):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.kill_after, self.seen, self.draws = kill_after, [], []

    def training_step(self, batch, batch_idx):
        if self.kill_after is not None and len(self.seen) == self.kill_after:
            raise Killed
        self.seen.append([ex.question_id for ex in batch])
        self.draws.append(torch.rand(1).item())
        return (self.weight - 1.0).pow(2).sum()

    def configure_optimizers(self):
        # as cgr's modules do for their warm-up schedule: this builds the train loader before
        # the checkpoint's loops are restored (Lightning then never loads a loader's state)
        assert self.trainer.estimated_stepping_batches > 0
        return torch.optim.SGD(self.parameters(), lr=0.1)


def _fit(tmp_path, module: OrderRecorder, ckpt_path=None, callbacks=()) -> None:
    pl.seed_everything(7)
    dm = QADataModule(
        train_file=str(SAMPLE / "train.jsonl"), dev_file=str(SAMPLE / "dev.jsonl"),
        retrieval=RetrievalConfig(method="none"), chains=ChainConfig(enabled=False),
        batch_size=3, pool_cache_dir=str(tmp_path / "pools"),
    )  # fmt: skip
    every_two = pl.callbacks.ModelCheckpoint(dirpath=tmp_path / "ckpt", save_last=True,
                                             every_n_train_steps=2, save_top_k=0)  # fmt: skip
    trainer = pl.Trainer(max_epochs=3, limit_val_batches=0, callbacks=[every_two, *callbacks],
                         logger=False, enable_progress_bar=False, enable_model_summary=False,
                         accelerator="cpu")  # fmt: skip
    trainer.fit(module, datamodule=dm, ckpt_path=ckpt_path)


@pytest.mark.parametrize("kill_after", [3, 9])  # in the first epoch; in the second
def test_a_resumed_run_trains_on_what_the_killed_run_had_left(tmp_path, kill_after):
    whole = OrderRecorder()
    _fit(tmp_path / "whole", whole)
    per_epoch = len(whole.seen) // 3
    assert per_epoch >= 4 and len({tuple(b) for b in whole.seen}) > per_epoch  # epochs reshuffle

    killed = OrderRecorder(kill_after=kill_after)
    with pytest.raises(Killed):
        _fit(tmp_path / "parts", killed)
    saved = torch.load(tmp_path / "parts" / "ckpt" / "last.ckpt", weights_only=False)
    done = saved["global_step"]  # last.ckpt is every 2 steps: the batches after it run again
    assert 0 < done <= kill_after
    resumed = OrderRecorder()
    _fit(tmp_path / "parts", resumed, ckpt_path=tmp_path / "parts" / "ckpt" / "last.ckpt")
    assert killed.seen[:done] + resumed.seen == whole.seen


def test_a_dropout_seed_changes_the_draws_and_keeps_the_order(tmp_path):
    plain, other, again = OrderRecorder(), OrderRecorder(), OrderRecorder()
    _fit(tmp_path / "plain", plain)
    _fit(tmp_path / "other", other, callbacks=[DropoutSeed(5)])
    _fit(tmp_path / "again", again, callbacks=[DropoutSeed(5)])
    assert other.seen == plain.seen
    assert other.draws != plain.draws
    assert again.draws == other.draws


@pytest.mark.parametrize("dropout_seed", [None, 5])
def test_a_run_resumed_mid_epoch_draws_what_the_unbroken_run_drew(tmp_path, dropout_seed):
    # a new loader iterator must not draw from the RNG dropout draws from (it did: the resumed
    # run's draws ran one iterator creation ahead)
    callbacks = [RNGStateCheckpoint()] + ([DropoutSeed(dropout_seed)] if dropout_seed else [])
    whole = OrderRecorder()
    _fit(tmp_path / "whole", whole, callbacks=callbacks)
    killed = OrderRecorder(kill_after=7)
    with pytest.raises(Killed):
        _fit(tmp_path / "parts", killed, callbacks=callbacks)
    done = torch.load(tmp_path / "parts" / "ckpt" / "last.ckpt", weights_only=False)["global_step"]
    resumed = OrderRecorder()
    _fit(tmp_path / "parts", resumed, tmp_path / "parts" / "ckpt" / "last.ckpt", callbacks)
    assert killed.seen[:done] + resumed.seen == whole.seen
    assert killed.draws[:done] + resumed.draws == whole.draws


def test_set_epoch_keeps_the_resumed_epochs_skip_and_drops_it_for_the_next():
    sampler = ResumableSampler(list(range(10)), shuffle=True, seed=3)
    sampler.set_epoch(1)
    epoch_one = list(sampler)
    sampler.resume(1, 4)
    sampler.set_epoch(1)  # Lightning repeats the resumed epoch's number
    assert list(sampler) == epoch_one[4:]
    assert list(sampler) == epoch_one  # the skip is spent
    sampler.resume(1, 4)
    sampler.set_epoch(2)
    assert len(list(sampler)) == 10 and len(sampler) == 10
