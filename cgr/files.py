"""Output files: one atomic write helper, opening without following symbolic links, and checks
that an output path is writable before long work starts (so a typo in --out costs a second, not
an evaluation). Every file cgr writes into a run folder, cache or output folder is opened with
O_NOFOLLOW: a link planted where cgr writes (`ln -s ~/notes.txt run/.cgr-train.lock`) is
refused in one line, never truncated or written through."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from cgr.errors import ConfigError


def _no_follow_opener(path: str, flags: int) -> int:
    # O_NONBLOCK: a FIFO planted there is refused below instead of hanging the open
    return os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)


def open_no_follow(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> IO:
    """`open(path, mode)` for writing, refusing a symbolic link at `path` (ConfigError naming
    it) and anything that is not a regular file (a FIFO, a device)."""
    try:
        f = open(  # noqa: SIM115 - returned open
            path, mode, encoding=None if "b" in mode else encoding, opener=_no_follow_opener
        )
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ConfigError(f"{path}: a symbolic link; cgr does not write through links "
                              "(remove it)") from None  # fmt: skip
        raise ConfigError(f"{path}: cannot write ({e.strerror})") from None
    if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
        f.close()
        raise ConfigError(f"{path}: not a regular file; cgr writes only plain files")
    return f


def atomic_replace(path: str | Path, write_to: Callable[[Path], None]) -> Path:
    """`write_to(tmp)` fills a temporary file beside `path` (named for this process), which is
    then renamed over it: readers, and DDP ranks writing the same file, see the old or the new
    file, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    if tmp.is_symlink():  # a link left where the temporary file goes is never written through
        tmp.unlink()
    try:
        write_to(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def atomic_write(path: str | Path, write: Callable[[IO], None], binary: bool = False) -> Path:
    """`write(f)` into an open file, flushed to disk, then put in place by `atomic_replace`."""

    def write_to(tmp: Path) -> None:
        with open_no_follow(tmp, "wb" if binary else "w") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())

    return atomic_replace(path, write_to)


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write(path, lambda f: f.write(text))


def missing_folders(folder: Path) -> list[Path]:
    """`folder` and its parents that do not exist yet, deepest first: what a mkdir would make."""
    return [p for p in (folder, *folder.parents) if not p.exists()]


def remove_empty(folders: list[Path]) -> None:
    """Removes folders (deepest first) while they are empty: the ones a check made and left
    unused; a folder something else filled meanwhile stays, and so do its parents."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            break


def _cannot_write(folder: Path) -> str | None:
    """None if a file can be written in `folder`, else the reason. Folders it creates to find
    out are removed again: a run refused later leaves no empty folder behind."""
    created = missing_folders(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".cgr-write-test"):
            pass
    except OSError as e:
        return e.strerror or str(e)
    finally:
        remove_empty(created)
    return None


def require_writable_dir(path: str | Path, what: str) -> Path:
    """Proves a file can be written in the folder (creating it to find out, then removing what
    it created)."""
    folder = Path(path)
    if reason := _cannot_write(folder):
        raise ConfigError(f"{what} {folder}: cannot write there ({reason})")
    return folder


def require_writable_file(path: str | Path, what: str) -> Path:
    """The file's folder is writable and the path is not a folder."""
    file = Path(path)
    if file.is_dir():
        raise ConfigError(f"{what} {file}: is a folder, not a file")
    if reason := _cannot_write(file.parent):
        raise ConfigError(f"{what} {file}: cannot write there ({file.parent}: {reason})")
    if file.exists() and not os.access(file, os.W_OK):
        raise ConfigError(f"{what} {file}: the file is not writable")
    return file


def inside(path: Path, folders: Sequence[Path]) -> bool:
    real = Path(os.path.realpath(path))  # symlinks followed: a link out of a root is outside
    return any(real.is_relative_to(os.path.realpath(f)) for f in folders)
