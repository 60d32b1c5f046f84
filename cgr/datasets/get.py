"""`cgr data get`: a dataset's files into the data root, each checked against its pinned sha256
before anything is placed. Everything is written to a staging folder inside the root first and
moved into place only when every dataset asked for has passed; a failure removes the staging
folder (and the root, when this command created it), so a refused `get` leaves nothing."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cgr.data import registry
from cgr.data.registry import DataFile, Dataset, known, max_file_bytes, official
from cgr.datasets.derived import PRODUCERS, MissingInput
from cgr.datasets.fetch import download
from cgr.datasets.release import DataGetError, Release

STAGING = ".cgr-get.partial"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def judge(path: str, sha: str, where: str) -> str:
    """'' when the file is the official one; else what to say of it. Raises when an official
    checksum is known and neither it nor a known variant matches."""
    pin = official(path)
    seen = {c.sha256: c.status for c in known(path)}
    if pin is not None and sha == pin.sha256:
        return ""
    if seen.get(sha) == "variant":
        return "a known variant, not byte-identical to the official file"
    if pin is not None:
        raise DataGetError(f"{where}: sha256 {sha}, expected {pin.sha256} (the official {path}); "
                           "nothing was written")  # fmt: skip
    if sha in seen:
        return "unverified (no official checksum is known); equals the copy cgr is tested on"
    return f"unverified (no official checksum is known); sha256 {sha}"


@dataclass
class Outcome:
    dataset: str
    placed: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # not in --from
    notes: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        same = [p for p, n in self.notes.items() if n.endswith("the copy cgr is tested on")]
        out = [f"{self.dataset}: {len(self.placed)} file(s) written, {len(self.present)} already "
               f"present and checked"]  # fmt: skip
        out += [f"  {p}: {n}" for p, n in self.notes.items() if p not in same]
        if same:
            out.append(f"  {len(same)} file(s) unverified (no official checksum is known), each "
                       "equal to the copy cgr is tested on")  # fmt: skip
        if self.missing:
            out.append(f"  not in --from ({len(self.missing)}): {', '.join(self.missing)}; "
                       f"`cgr data get {self.dataset}` downloads them")  # fmt: skip
        return out


class Staging:
    def __init__(self, root: Path):
        self.root = root
        self.folder = root / STAGING
        self.created_root = not root.exists()
        shutil.rmtree(self.folder, ignore_errors=True)  # left by a killed run
        self.folder.mkdir(parents=True)
        self.files: list[str] = []

    def write(self, path: str, chunks, where: str = "") -> str:
        """Stages `path` from `chunks`; more bytes than the registry knows the file to have
        (max_file_bytes: a decompression bomb, a padded member) stops it in one line."""
        target = self.folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        h, limit, written = hashlib.sha256(), max_file_bytes(path), 0
        with open(target, "wb") as out:
            for chunk in chunks:
                written += len(chunk)
                if written > limit:
                    raise DataGetError(f"{where or path}: more than {limit:,} bytes for {path}, "
                                       "the most its release holds; refused, nothing placed")  # fmt: skip
                h.update(chunk)
                out.write(chunk)
        self.files.append(path)
        return h.hexdigest()

    def staged(self, path: str) -> Path | None:
        p = self.folder / path
        return p if p.is_file() else None

    def commit(self) -> None:
        for path in self.files:
            target = self.root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.folder / path, target)
        shutil.rmtree(self.folder, ignore_errors=True)

    def abort(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        if self.created_root:
            shutil.rmtree(self.root, ignore_errors=True)


def _chunks(handle, size: int = 1 << 20):
    with handle:
        yield from iter(lambda: handle.read(size), b"")


def releases(dataset: Dataset, source_from: Path | None, mirror: str | None,
             quiet: bool) -> list[Release]:  # fmt: skip
    """One Release per source: the --from folder or archive for all of them, else each
    source downloaded (from the mirror when given)."""
    if source_from is not None:
        if not source_from.exists():
            raise DataGetError(f"--from {source_from}: not found")
        release = Release(source_from)
        return [release] * len(dataset.sources)
    found = []
    for source in dataset.sources:
        url = f"{mirror.rstrip('/')}/{source.name}" if mirror else source.url
        path = download(url, source.name, quiet, source.max_bytes)
        try:
            found.append(Release(path, single=not source.archive))
        except DataGetError:
            raise DataGetError(f"{url}: what arrived ({path}) is not a zip or tar archive; "
                               f"{source.note or 'get the release by hand and pass --from'}") from None  # fmt: skip
    return found


def get_dataset(dataset: Dataset, staging: Staging, source_from: Path | None,
                mirror: str | None, quiet: bool) -> Outcome:  # fmt: skip
    outcome = Outcome(dataset.name)
    rels = releases(dataset, source_from, mirror, quiet)
    inputs_dir = staging.folder / ".inputs"

    def inputs(name: str) -> Path | None:
        for candidate in (staging.staged(name), staging.root / name):
            if candidate is not None and candidate.is_file():
                return candidate
        for release in dict.fromkeys(rels):
            member = release.find_name(name)
            if member is not None:
                inputs_dir.mkdir(parents=True, exist_ok=True)
                copy = inputs_dir / hashlib.sha256(release.where(member).encode()).hexdigest()
                with release.open(member) as src, open(copy, "wb") as out:
                    shutil.copyfileobj(src, out)
                return copy
        return None

    try:
        for f in sorted(dataset.files, key=lambda f: bool(f.derived)):
            _get_file(f, rels, staging, outcome, source_from, inputs)
    finally:
        for release in dict.fromkeys(rels):
            release.close()
        shutil.rmtree(inputs_dir, ignore_errors=True)
    if source_from is not None and not outcome.placed and not outcome.present:
        raise DataGetError(f"--from {source_from}: holds no file of {dataset.name} "
                           f"(looked for {dataset.files[0].path} and its release name "
                           f"{dataset.files[0].tail})")  # fmt: skip
    return outcome


def _get_file(f: DataFile, rels: list[Release], staging: Staging, outcome: Outcome,
              source_from: Path | None, inputs: Callable[[str], Path | None]) -> None:  # fmt: skip
    existing = staging.root / f.path
    if existing.is_file():
        note = judge(f.path, sha256_file(existing), str(existing))
        outcome.present.append(f.path)
        if note:
            outcome.notes[f.path] = note
        return
    release = rels[f.source]
    member = release.find(f)
    if member is not None and (not f.derived or source_from is not None):
        where = release.where(member)
        sha = staging.write(f.path, _chunks(release.open(member)), where)
    elif f.derived:
        try:
            data = PRODUCERS[f.derived](f, inputs)
        except MissingInput:
            if source_from is None:
                raise
            data = b""
        if not data:
            outcome.missing.append(f.path)
            return
        where = f"{f.path} (derived by cgr)"
        sha = staging.write(f.path, [data])
    elif source_from is not None:
        outcome.missing.append(f.path)
        return
    else:
        raise DataGetError(f"{release}: holds no file named {f.tail} (for {f.path})")
    note = judge(f.path, sha, where)
    outcome.placed.append(f.path)
    if note:
        outcome.notes[f.path] = note


def get(names: list[str], root: Path, source_from: Path | None = None, mirror: str | None = None,
        quiet: bool = False) -> list[Outcome]:  # fmt: skip
    unknown = [n for n in names if n not in registry.BY_NAME]
    if unknown:
        raise DataGetError(f"no dataset named {unknown[0]!r}; known: {', '.join(registry.BY_NAME)}")
    if root.exists() and not root.is_dir():
        raise DataGetError(f"--root {root}: not a folder")
    staging = Staging(root)
    try:
        outcomes = [
            get_dataset(registry.BY_NAME[n], staging, source_from, mirror, quiet) for n in names
        ]
        staging.commit()
    except BaseException:
        staging.abort()
        raise
    return outcomes
