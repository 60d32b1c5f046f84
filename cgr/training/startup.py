"""What a training run says before its first step: the batch per device and in all (the
paper's batch is the global one), precision, the models it loads and how chain search shares
the cores, so a multi-GPU run can be checked against the paper's setting before it spends
hours."""

from __future__ import annotations

from cgr.chains.builder import default_workers
from cgr.errors import ConfigError


def apply_global_batch(trainer, datamodule) -> None:
    """`data.global_batch_size` split over devices x nodes x accumulated batches: the per-device
    batch it leaves (a paper's batch of 4 on 2 GPUs: 2 each)."""
    wanted = datamodule.hparams.get("global_batch_size")
    if wanted is None:
        return
    share = trainer.num_devices * trainer.num_nodes * trainer.accumulate_grad_batches
    if wanted % share:
        raise ConfigError(
            f"data.global_batch_size {wanted} is not a multiple of {share} (devices x nodes x "
            "trainer.accumulate_grad_batches): use fewer devices, or set data.global_batch_size "
            "to a multiple of them (it then differs from the config's batch)"
        )
    datamodule.hparams.batch_size = wanted // share


def startup_lines(trainer, model, datamodule) -> list[str]:
    devices, nodes = trainer.num_devices, trainer.num_nodes
    accumulate = trainer.accumulate_grad_batches
    per_device = datamodule.hparams.batch_size
    total = per_device * devices * nodes * accumulate
    hp = model.hparams
    reader = hp.get("reader_model", "?")
    retriever = hp.get("retriever_model")
    encoder = datamodule.pipeline.retrieval.encoder
    chains = datamodule.pipeline.chains
    cores = default_workers()
    workers = chains.workers if chains.workers is not None else max(1, cores // devices)
    how = "data.chains.workers" if chains.workers is not None else (
        f"{cores} cores / {devices} local rank(s)")  # fmt: skip
    return [
        f"batch: {per_device} per device x {devices} device(s) x {nodes} node(s) x {accumulate} "
        f"accumulated = {total} questions per optimizer step (the global batch"
        + ("; data.global_batch_size)" if datamodule.hparams.get("global_batch_size") else ")"),
        f"precision: {trainer.precision}; accelerator: {type(trainer.accelerator).__name__}",
        f"reader: {reader}; "
        + (f"query encoder (trained): {retriever}; " if retriever else "no trained retriever; ")
        + f"evidence encoder (frozen): {encoder}",
        f"chain search: {workers} worker process(es) per rank ({how})"
        if chains.enabled
        else "chain search: off",
    ]
