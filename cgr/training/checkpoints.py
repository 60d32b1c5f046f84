"""Reading checkpoints safely: tensors and plain types only (`weights_only=True`), so a crafted
file cannot run code, and a damaged one is named in a one-line error instead of a traceback."""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path

import torch

from cgr.errors import CGRError


class CheckpointError(CGRError):
    pass


def read_checkpoint(path: str | Path) -> dict:
    p = Path(path)
    if not p.is_file():
        raise CheckpointError(f"{p}: checkpoint not found")
    if not zipfile.is_zipfile(p):  # torch.save writes a zip archive; empty or cut files are not
        raise CheckpointError(
            f"{p}: not a readable checkpoint (empty, truncated or another format)"
        )
    try:
        checkpoint = torch.load(p, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CheckpointError(
            f"{p}: refused to load: it holds objects other than tensors and plain types "
            f"({first[:160]}); cgr only loads checkpoints it wrote"
        ) from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, OSError, ValueError) as e:
        raise CheckpointError(f"{p}: not a readable checkpoint ({type(e).__name__}: "
                              f"{str(e).strip().splitlines()[0][:160] if str(e).strip() else 'empty'})") from None  # fmt: skip
    if not isinstance(checkpoint, dict) or "state_dict" not in checkpoint:
        raise CheckpointError(f"{p}: not a cgr checkpoint (no state_dict)")
    return checkpoint
