"""Reading checkpoints safely: tensors and plain types only (`weights_only=True`), so a crafted
file cannot run code, and a damaged one is named in a one-line error instead of a traceback."""

from __future__ import annotations

import logging
import pickle
import re
import zipfile
from pathlib import Path

from cgr.errors import CGRError
from cgr.files import open_no_follow

log = logging.getLogger(__name__)


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
    import torch  # after the cheap checks: a damaged file is refused without torch's import

    try:
        # memory-mapped: the settings are read at once, tensors only when used
        checkpoint = torch.load(p, map_location="cpu", weights_only=True, mmap=True)
    except pickle.UnpicklingError as e:
        found = re.search(r"GLOBAL ([\w.]+)", str(e))
        what = f" such as {found.group(1)}" if found else ""
        raise CheckpointError(
            f"{p}: refused to load: it holds objects other than tensors and plain types{what} "
            "(loaded with weights_only=True; cgr only loads checkpoints it wrote)"
        ) from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, OSError, ValueError) as e:
        raise CheckpointError(f"{p}: not a readable checkpoint ({type(e).__name__}: "
                              f"{str(e).strip().splitlines()[0][:160] if str(e).strip() else 'empty'})") from None  # fmt: skip
    if not isinstance(checkpoint, dict) or "state_dict" not in checkpoint:
        raise CheckpointError(f"{p}: not a cgr checkpoint (no state_dict)")
    return checkpoint


def resume_checkpoint(folder: str | Path) -> Path | None:
    """What `cgr train` resumes from: last.ckpt when it reads; a damaged last.ckpt (a run killed
    while writing it) is set aside as last.ckpt.damaged-N, never deleted, and the run resumes
    from best.ckpt if that reads and holds the training state (a damaged best.ckpt is set aside
    the same way), else starts from scratch. Each step is logged."""
    folder = Path(folder)
    last, best = folder / "last.ckpt", folder / "best.ckpt"
    if not last.exists():
        return None
    if _readable_or_set_aside(last):
        return last
    if best.exists() and _readable_or_set_aside(best) and _full_state(best):
        log.warning("resuming from %s instead", best)
        return best
    log.warning("no readable checkpoint with the training state in %s: training starts from "
                "scratch (best.ckpt holds weights only)", folder)  # fmt: skip
    return None


def _full_state(path: Path) -> bool:
    """Whether a checkpoint holds the optimiser state a fit resumes from (best.ckpt is saved
    weights-only by configs/callbacks/default.yaml; older ones hold the full state)."""
    return "optimizer_states" in read_checkpoint(path)


def _readable_or_set_aside(path: Path) -> bool:
    """Whether `path` reads; a damaged file is renamed NAME.damaged-N (never deleted, never
    overwritten by the run that follows)."""
    try:
        read_checkpoint(path)
        return True
    except CheckpointError as e:
        n = 1
        while (aside := path.with_name(f"{path.name}.damaged-{n}")).exists():
            n += 1
        path.rename(aside)
        log.warning("%s; set aside as %s", e, aside.name)
        return False


PARTIAL = ".partial-"  # a checkpoint being written: .NAME.partial-PID in the run folder


def partial_path(path: Path) -> Path:
    import os

    return path.with_name(f".{path.name}{PARTIAL}{os.getpid()}")


def remove_partial_saves(folder: str | Path) -> list[Path]:
    """Checkpoints a killed run was writing (left in its run folder, never in $TMPDIR): removed
    when the next run locks the folder, each named in a warning."""
    removed = []
    for path in sorted(Path(folder).glob(f".*{PARTIAL}*")):
        if path.is_file():
            path.unlink()
            removed.append(path)
            log.warning("removed %s: a checkpoint a killed run was writing", path)
    return removed


def run_folder_checkpoint_io():
    """Lightning's CheckpointIO, writing each checkpoint beside its final name and renaming it
    (Lightning's own writes through fsspec into a temporary file in $TMPDIR, which `kill -9`
    leaves there, up to a checkpoint's size, and holds a second copy in memory)."""
    import os

    import torch
    from lightning_fabric.plugins.io.torch_io import TorchCheckpointIO

    class RunFolderCheckpointIO(TorchCheckpointIO):
        def save_checkpoint(self, checkpoint, path, storage_options=None) -> None:
            if storage_options is not None or "://" in str(path):
                return super().save_checkpoint(checkpoint, path, storage_options)
            final = Path(path)
            final.parent.mkdir(parents=True, exist_ok=True)
            partial = partial_path(final)
            try:
                with open_no_follow(partial, "wb") as f:
                    torch.save(checkpoint, f)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(partial, final)
            except BaseException:
                partial.unlink(missing_ok=True)
                raise

    return RunFolderCheckpointIO()
