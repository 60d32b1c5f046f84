"""Loading the modules of a trained checkpoint (after cgr.pretrained.source opened and checked
it): which LightningModule class, its weights read with weights_only=True, and which query
encoder its evidence is retrieved with. Below evaluation, which uses it; training does not."""

from __future__ import annotations

from pathlib import Path

from cgr.errors import ConfigError

QUERY_ENCODERS = ("auto", "trained", "base")  # which encoder a CGR checkpoint retrieves with


def check_query_encoder(query_encoder: str) -> None:
    """One of QUERY_ENCODERS, checked before any model loads."""
    if query_encoder not in QUERY_ENCODERS:
        raise ConfigError(
            f"query_encoder must be one of {', '.join(QUERY_ENCODERS)}, not {query_encoder!r}"
        )


def retrieval_encoder(module, checkpoint: dict, query_encoder: str = "auto"):
    """The query encoder a CGR checkpoint retrieves its evidence with; None: the base encoder
    the data settings name (and any reader-only checkpoint). "auto": the evidence snapshot the
    reader's last training epoch read (saved with the checkpoint; none before the first refresh,
    so the base encoder), which is also what its val/acc was measured on; "trained": the query
    encoder as training left it; "base": the one it started from. Checkpoints written before
    snapshots were saved read "auto" as the trained encoder once a refresh had run."""
    from cgr.training.callbacks import training_evidence_refreshed

    check_query_encoder(query_encoder)
    if not hasattr(module, "query_encoder") or query_encoder == "base":
        return None
    if query_encoder == "trained":
        return module.query_encoder.eval()
    snapshot = module.evidence_snapshot_encoder()
    if snapshot is not None:
        return snapshot
    # no snapshot: the base encoder, unless the checkpoint predates snapshots and a refresh ran
    every_n = (checkpoint.get("hyper_parameters") or {}).get("refresh_evidence_every_n_epochs", 1)
    if training_evidence_refreshed(int(checkpoint.get("epoch", 0)), int(every_n or 0)):
        return module.query_encoder.eval()
    return None


def module_class(checkpoint: dict):
    """ReaderModule or CGRModule, from the class LightningCLI recorded (or the weights)."""
    from cgr.training.cgr_module import CGRModule
    from cgr.training.module import ReaderModule

    path = (checkpoint.get("hyper_parameters") or {}).get("_class_path", "")
    if path.endswith("CGRModule") or any(
        k.startswith("query_encoder.") for k in checkpoint["state_dict"]
    ):
        return CGRModule
    return ReaderModule


def load_module(path: str | Path, checkpoint: dict, device: str = "cpu"):
    """The trained module of a checkpoint read with `read_checkpoint` (weights_only=True).
    transformers' load report is silenced: it lists the new multiple-choice head as missing
    before the checkpoint's trained head replaces it."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        return module_class(checkpoint).load_from_checkpoint(
            str(path), map_location=device, weights_only=True
        )
    finally:
        hf_logging.set_verbosity(level)
