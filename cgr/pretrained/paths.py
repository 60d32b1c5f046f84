"""The file paths a checkpoint or model folder stores (corpus, open book, AMR model, dev file,
caches, local model folders) are data from whoever wrote it. A file is read only inside the
model's own folder, inside a root the user names (`--data-root`, `data_roots=`), or when this
user's cgr signed the settings (cgr.signing): otherwise one line says which setting
names which path and how to allow it, before any model loads. Cache folders of a model signed
elsewhere are not written to: the package's default caches are used instead.

A signature covers the stored path *names*, not what they point to: it extends trust to the
absolute paths the user's own settings name (their files, read as they are now), never to a
file inside the model's folder, which is held to that folder by its real path (links followed)
whether the model is signed or not. Every path-like data setting is in exactly one of the lists
below (tests/pretrained/test_signing.py fails on a new one that is not)."""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Sequence
from pathlib import Path

from cgr.data.root import data_path, data_root
from cgr.errors import ConfigError
from cgr.files import inside
from cgr.models import is_packaged

log = logging.getLogger(__name__)

# data-setting fields that name files read at prediction time (a list field: every item)
READ_PATHS = (
    ("retrieval", "corpus"),
    ("retrieval", "open_book"),
    ("chains", "amr", "model_dir"),
    ("chains", "book"),
    ("gold_facts_files",),
)
DEV_FILE = ("dev_file",)  # read when prediction is given no --data
# stored but never read at prediction time (training's inputs; prediction takes --data)
NOT_READ = (("train_file",), ("predict_file",))
# cache folders (written too): a model signed elsewhere gets the package defaults
CACHE_PATHS = {
    ("retrieval", "cache_dir"): ".cache/cgr/embeddings",
    ("pool_cache_dir",): ".cache/cgr/pools",
    ("chains", "amr", "cache"): ".cache/cgr/amr.sqlite",
}
MODEL_NAMES = (  # a packaged name, a hub name or a local folder
    ("retrieval", "encoder"),
    ("chains", "rank_encoder"),  # a chain ranker (cgr ranker)
)


class StoredPathError(ConfigError):
    pass


def _get(settings: dict, keys: tuple[str, ...]):
    for key in keys:
        if not isinstance(settings, dict) or key not in settings:
            return None
        settings = settings[key]
    return settings


def _set(settings: dict, keys: tuple[str, ...], value) -> None:
    for key in keys[:-1]:
        settings = settings[key]
    settings[keys[-1]] = value


class PathRule:
    """Where the files a model names may be. `home`: the model's folder (a checkpoint's
    folder, or the model folder); `relative_to`: what relative paths are relative to (a model
    folder: itself; a checkpoint: the working folder, as when it was trained)."""

    def __init__(self, source: Path, home: Path, roots: Sequence[str | Path] = (),
                 trusted: bool = False, relative_to: Path | None = None):  # fmt: skip
        self.source, self.home, self.trusted = source, home, trusted
        self.roots = [Path(r).expanduser() for r in roots]
        self.relative_to = relative_to
        for root in self.roots:
            if not root.is_dir():
                raise ConfigError(f"--data-root {root}: not a folder")
        if data_root().is_dir():  # the user's own datasets (`cgr data get`) may always be read
            self.roots.append(data_root())

    def _resolve(self, value: str) -> Path:
        """A model folder's relative paths are inside it; a checkpoint's are as training read
        them: under the data root first, then from the working folder (cgr.data.root)."""
        path = Path(value).expanduser()
        if path.is_absolute():
            return path
        return data_path(path) if self.relative_to is None else self.relative_to / path

    def check(self, field: str, value: str, exists: bool = False) -> Path:
        """The path `value` stored in `field`, resolved; refused outside home and the roots
        (and, with `exists`, when it is missing). A signature trusts the absolute paths it
        names outside home; a path inside home is held to home by its real path even then."""
        path = self._resolve(value)
        if (self.trusted and not self._in_home(path)) or inside(path, [self.home, *self.roots]):
            if exists and not path.exists():
                raise StoredPathError(f"{self.source}: {field} names {value!r}, which is missing")
            return path
        raise StoredPathError(
            f"{self.source}: {field} names {value!r}, outside {self.home} and the allowed roots; "
            "a model written elsewhere chooses no file outside its folder: pass --data-root "
            "FOLDER (Python: data_roots=[FOLDER]) to allow reading it"
        )

    def _in_home(self, path: Path) -> bool:
        """Whether `path` names a place inside home (by name: links are judged by `inside`)."""
        return Path(os.path.abspath(path)).is_relative_to(os.path.abspath(self.home))

    def check_model_name(self, field: str, name: str) -> str:
        """A local model folder is held to the rule and, unless it is a folder this user's
        signed settings name outside home, to a model folder's rules (safetensors only, no
        code, no link out); packaged and hub names pass."""
        if is_packaged(name) or not self._resolve(name).exists():
            return name
        path = self.check(field, name)
        in_home = self._in_home(path)
        if not self.trusted or in_home:
            from cgr.pretrained.folder import check_no_code, check_weights_folder

            if not path.is_dir():
                raise StoredPathError(f"{self.source}: {field} names {name!r}, not a model folder")
            check_no_code(path, self.home if in_home else path)
            check_weights_folder(path, field, ("config.json",))
        return str(path)

    def data_settings(self, data: dict, dev_file: bool = False) -> dict:
        """A copy of the data settings with every stored path checked (and resolved where
        relative to a model folder); `dev_file`: the dev file is read too (no --data given)."""
        data = copy.deepcopy(data)
        for keys in READ_PATHS:
            value = _get(data, keys)
            field = "data." + ".".join(keys)
            listed = isinstance(value, list) and all(isinstance(v, str) for v in value)
            if value is not None and not (listed or isinstance(value, str)):
                raise StoredPathError(f"{self.source}: {field} must be a path or a list of "
                                      f"paths, not {type(value).__name__}")  # fmt: skip
            if isinstance(value, list):
                _set(data, keys, [str(self.check(f"{field}[{i}]", v, exists=True))
                                  for i, v in enumerate(value)])  # fmt: skip
            elif isinstance(value, str):
                _set(data, keys, str(self.check(field, value, exists=True)))
        for keys in MODEL_NAMES:
            if (value := _get(data, keys)) is not None and not isinstance(value, str):
                raise StoredPathError(f"{self.source}: data.{'.'.join(keys)} must be a model "
                                      f"name or folder, not {type(value).__name__}")  # fmt: skip
            if isinstance(value, str):
                _set(data, keys, self.check_model_name("data." + ".".join(keys), value))
        if dev_file and isinstance(data.get("dev_file"), str):
            data["dev_file"] = str(self.check("data.dev_file", data["dev_file"], exists=True))
        if not self.trusted:
            for keys, default in CACHE_PATHS.items():
                if _get(data, keys) not in (None, default):
                    log.info("%s: data.%s replaced by %s (a model written elsewhere chooses no "
                             "folder cgr writes to)", self.source, ".".join(keys), default)  # fmt: skip
                    _set(data, keys, default)
        return data
