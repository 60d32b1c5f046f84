"""`cgr data check` and `cgr data list`: what the data root holds, judged by sha256."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from cgr.config_files import load_configs
from cgr.data import registry
from cgr.data.registry import Dataset, dataset_of, known, official
from cgr.data.root import data_path, data_root
from cgr.datasets.get import sha256_file

DATA_SUFFIXES = (".jsonl", ".json", ".txt", ".tsv")


def file_state(path: str) -> str:
    """present / missing, and for a registry file what its sha256 says."""
    p = data_root() / path
    if not p.is_file():
        return "missing"
    sha = sha256_file(p)
    pin = official(path)
    statuses = {c.sha256: c.status for c in known(path)}
    if pin is not None:
        if sha == pin.sha256:
            return "verified"
        if statuses.get(sha) == "variant":
            return "present (a known variant of the official file)"
        return f"DIFFERS from the official file (sha256 {sha[:12]}…, expected {pin.sha256[:12]}…)"
    if sha in statuses:
        return "present (unverified; equals the copy cgr is tested on)"
    return "present (unverified)"


def dataset_rows(dataset: Dataset) -> tuple[int, int, int]:
    """(files, present, bad) under the root."""
    present = bad = 0
    for f in dataset.files:
        state = file_state(f.path)
        present += state != "missing"
        bad += state.startswith("DIFFERS")
    return len(dataset.files), present, bad


def list_lines(verbose: bool = False) -> list[str]:
    root = data_root()
    lines = [f"data root: {root}"]
    for d in registry.DATASETS:
        total, present, bad = dataset_rows(d)
        pinned = sum(official(f.path) is not None for f in d.files)
        size = sum(c.size for f in d.files for c in known(f.path)[:1])
        state = "present" if present == total else f"{present}/{total} present"
        if bad:
            state += f", {bad} differ from the official files"
        lines.append(f"{d.name}: {d.title}")
        known_size = f"{size / 1e6:.1f} MB" if size else "sizes not recorded"
        lines.append(f"  files: {total}, {known_size} ({pinned} pinned by the publisher's "
                     f"sha256); under the root: {state}")  # fmt: skip
        lines.append(f"  license: {d.license}")
        lines.append(f"  cite: {d.citation}")
        lines.append(f"  source: {', '.join(s.url for s in d.sources)}"
                     + "".join(f" ({s.note})" for s in d.sources if s.note))  # fmt: skip
        lines.append(f"  used by: {d.used_by}")
        if verbose:
            lines += [f"    {f.path}: {file_state(f.path)}" for f in d.files]
    return lines


def config_paths(value, key: str = "data") -> Iterator[tuple[str, str]]:
    """(setting, path) for every string in a config's data section that names a data file:
    a registry file, or a name with a data file's suffix."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from config_paths(v, f"{key}.{k}")
    elif isinstance(value, list):
        for v in value:
            yield from config_paths(v, key)
    elif isinstance(value, str) and (dataset_of(value) or value.endswith(DATA_SUFFIXES)):
        yield key, value


def check_config(config: Path) -> tuple[list[str], bool]:
    """One line per data file the config reads; False when any is missing or differs."""
    data = load_configs([config]).get("data") or {}
    ok = True
    lines = []
    for setting, value in config_paths(data):
        name = dataset_of(value)
        path = data_path(value)
        if name is not None:
            state = file_state(value)
        else:
            state = "present" if path.exists() else "missing"
        bad = state == "missing" or state.startswith("DIFFERS")
        ok &= not bad
        fix = f"; get it with `cgr data get {name}`" if bad and name else ""
        lines.append(f"{config}: {setting} {value}: {state}{fix}")
    return lines, ok


def known_names() -> str:
    return ", ".join(registry.BY_NAME)
