"""A release's files as the user or the publisher holds them: a folder (the official archive
extracted, or cgr's own layout under a data root), an archive (zip, tar, tar.gz, tgz,
tar.bz2) or one file. A registry file is found by its path in cgr's layout, else by the tail
of its name in the release (`Main/dev.jsonl` matches `OpenBookQA-V1-Sep2018/Data/Main/dev.jsonl`),
so any top folder the publisher chose is fine. Members are only read, never extracted by name,
so a member called `../x` writes nothing anywhere."""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path
from typing import IO

from cgr.data.registry import DataFile
from cgr.errors import CGRError


class DataGetError(CGRError):
    """`cgr data` refuses in one line (exit 2)."""


def _skipped(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return name.startswith(("__MACOSX/", ".cgr-get.partial/")) or base.startswith("._")


class Release:
    def __init__(self, path: Path, single: bool = False):
        self.path = path
        self._zip: zipfile.ZipFile | None = None
        self._tar: tarfile.TarFile | None = None
        if path.is_dir():
            names = [p.relative_to(path).as_posix() for p in sorted(path.rglob("*"))
                     if p.is_file()]  # fmt: skip
        elif single or not path.is_file():
            if not path.is_file():
                raise DataGetError(f"--from {path}: not found")
            names = [path.name]
        elif zipfile.is_zipfile(path):
            self._zip = zipfile.ZipFile(path)
            names = [i.filename for i in self._zip.infolist() if not i.is_dir()]
        elif _is_tar(path):
            self._tar = tarfile.open(path)
            names = [m.name for m in self._tar.getmembers() if m.isfile()]
        else:
            raise DataGetError(f"{path}: not a folder, a zip or a tar archive")
        self.names = [n for n in names if not _skipped(n)]
        self.single = single

    def __repr__(self) -> str:
        return str(self.path)

    def find(self, f: DataFile) -> str | None:
        """The member that holds `f`: its exact cgr path, else the shortest name ending with
        its tail (never its bare file name: `train.jsonl` is in many releases)."""
        if self.single:
            return self.names[0]
        if f.path in self.names:
            return f.path
        return self.find_name(f.tail)

    def find_name(self, tail: str) -> str | None:
        hits = [n for n in self.names if n == tail or n.endswith("/" + tail)]
        return min(hits, key=lambda n: (len(n), n)) if hits else None

    def open(self, name: str) -> IO[bytes]:
        if self._zip is not None:
            return self._zip.open(name)
        if self._tar is not None:
            handle = self._tar.extractfile(name)
            assert handle is not None  # members are regular files (see __init__)
            return handle
        return (self.path if self.single else self.path / name).open("rb")

    def where(self, name: str) -> str:
        if self.single:
            return str(self.path)
        return f"{self.path}/{name}" if self.path.is_dir() else f"{self.path}:{name}"

    def close(self) -> None:
        for handle in (self._zip, self._tar):
            if handle is not None:
                handle.close()


def _is_tar(path: Path) -> bool:
    try:
        return tarfile.is_tarfile(path)
    except OSError:
        return False
