"""The data root: one folder that holds the public datasets (`cgr data get` writes there), so a
config names `openbookqa/Main/train.jsonl` and runs on any machine. `CGR_DATA` (or the
`data.data_root` setting) moves it; by default it is `data/` of the working folder (the
repository's top-level folder, where the quickstart's own small sets also live).

A relative path is looked for under the root first, then from the working folder (a user's
own files, the quickstart's `data/quickstart/...`); a path that is in neither is named under
the root, with the `cgr data get` command that brings it when a dataset holds it."""

from __future__ import annotations

import os
from pathlib import Path

ENV = "CGR_DATA"
DEFAULT = "data"
_chosen: Path | None = None  # data.data_root of the running command, when it set one


def use_data_root(folder: str | Path | None) -> None:
    """Set the root for this process (a config's `data.data_root`); None: back to CGR_DATA /
    the default."""
    global _chosen
    _chosen = None if folder in (None, "") else Path(folder).expanduser()


def data_root() -> Path:
    if _chosen is not None:
        return _chosen
    return Path(os.environ.get(ENV) or DEFAULT).expanduser()


def root_origin() -> str:
    """How the root was chosen, for messages."""
    if _chosen is not None:
        return "data.data_root"
    return ENV if os.environ.get(ENV) else f"the default; {ENV} moves it"


def data_path(path: str | Path) -> Path:
    """Where `path` is: absolute as given; relative under the root when there, else from the
    working folder when there; a missing relative path is named under the root."""
    p = Path(path).expanduser()
    if p.is_absolute():
        return p
    under = data_root() / p
    if under.exists() or under.is_symlink():
        return under
    if p.exists() or p.is_symlink():
        return p
    return under


def missing_hint(path: str | Path) -> str:
    """What to say of a missing file: the root, and the command that gets it when a dataset
    in the registry holds it."""
    from cgr.data.registry import dataset_of

    p = Path(path)
    root = data_root()
    relative = p.relative_to(root) if p.is_relative_to(root) else None
    if relative is None:
        return "file not found"
    name = dataset_of(relative.as_posix())
    where = f"file not found under the data root {root} ({root_origin()})"
    if name is None:
        return where
    return f"{where}; get it with `cgr data get {name}` (cgr data list shows every dataset)"
