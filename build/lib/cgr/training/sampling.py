"""The training order: a shuffle decided by the seed and the epoch, which a killed run resumes
where it stopped instead of drawing a new one (an mpnet epoch over OBQA takes hours on a CPU, so
rows span several sittings, and each resume must train on the questions the run had left)."""

from __future__ import annotations

from collections.abc import Iterator, Sized

from torch.utils.data import DataLoader, DistributedSampler


class ResumableSampler(DistributedSampler):
    """`DistributedSampler`'s order (seed + epoch, the same on every rank and in every run; one
    replica when not distributed) that can begin an epoch part-way through: `resume` names the
    epoch and how many of this rank's samples were already trained on."""

    def __init__(self, dataset: Sized, num_replicas: int = 1, rank: int = 0,
                 shuffle: bool = True, seed: int = 0):  # fmt: skip
        super().__init__(dataset, num_replicas=num_replicas, rank=rank, shuffle=shuffle, seed=seed)
        self.skip = 0

    def resume(self, epoch: int, samples_done: int) -> None:
        self.epoch, self.skip = epoch, samples_done

    def set_epoch(self, epoch: int) -> None:
        if epoch != self.epoch:  # Lightning sets the resumed epoch again: keep its skip then
            self.skip = 0
        super().set_epoch(epoch)

    def __iter__(self) -> Iterator[int]:
        order = list(super().__iter__())
        skip, self.skip = self.skip, 0  # a part-way start is for the resumed epoch alone
        # __len__ stays the whole epoch's: Lightning counts a resumed epoch's batches from where
        # it stopped, so the epoch ends when this shorter iterator does
        return iter(order[skip:])


class ResumableLoader(DataLoader):
    """The training DataLoader, stateful in Lightning's sense (`state_dict`/`load_state_dict`),
    so `last.ckpt` records where in which epoch the run stood. The position is the fit loop's
    count of finished batches: counting in the loader would include the batches its workers
    and Lightning's fetcher had read ahead."""

    sampler: ResumableSampler

    def __init__(self, *args, trainer=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.trainer = trainer
        if not isinstance(self.sampler, ResumableSampler):
            raise TypeError("ResumableLoader needs a ResumableSampler")

    def state_dict(self) -> dict:
        trainer = self.trainer
        epoch = trainer.current_epoch  # counts finished epochs: the one under way
        done = trainer.fit_loop.epoch_loop.batch_progress.current.processed
        if done >= trainer.num_training_batches:  # saved at the epoch's end: the next starts whole
            epoch, done = epoch + 1, 0
        return {"epoch": epoch, "samples_done": done * (self.batch_size or 1)}

    def load_state_dict(self, state: dict) -> None:
        self.sampler.resume(int(state["epoch"]), int(state["samples_done"]))
