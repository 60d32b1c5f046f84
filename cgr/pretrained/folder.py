"""A model folder as `cgr export` writes it, checked before any model loads:

    DIR/cgr_config.json      every setting prediction needs (cgr.pretrained.export)
    DIR/reader/              transformers AutoModelForMultipleChoice + tokenizer (safetensors)
    DIR/query_encoder/       CGR's query encoder, a sentence-transformers folder (safetensors)
    DIR/corpus/              the corpus and open book, when copied in
    DIR/README.md            the model card

Weights are read from safetensors only: a pickle (`*.bin`, `*.pt`, ...) in a weights folder is
refused, never opened. No code from a folder runs: a Python file anywhere in it, or an
`auto_map` (transformers' pointer to custom code) in a config, is refused, and every loader is
called with trust_remote_code=False. Every file and folder of a model folder is held to it:
a symbolic link that leads out of the folder is refused, signed or not."""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from cgr.errors import ConfigError

CONFIG = "cgr_config.json"
FORMAT = "cgr-model"
FORMAT_VERSION = 1
MAX_CONFIG_BYTES = 1_000_000
PICKLE_SUFFIXES = {".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".joblib", ".npy"}
MAX_SAFETENSORS_HEADER = 100_000_000  # the format's own limit on its JSON header
CODE_SUFFIXES = {".py", ".pyc", ".pyw", ".so", ".pyd"}
# the configs transformers reads auto_map from (model, tokenizer, processor, feature extractor)
AUTO_MAP_FILES = {"config.json", "tokenizer_config.json", "processor_config.json",
                  "preprocessor_config.json", "config_sentence_transformers.json"}  # fmt: skip


class ModelFolderError(ConfigError):
    pass


@dataclass
class ModelFolder:
    path: Path
    config: dict

    @property
    def reader(self) -> Path:
        return self.path / self.config["reader"]["folder"]

    @property
    def query_encoder(self) -> Path | None:
        spec = self.config.get("query_encoder")
        return self.path / spec["folder"] if spec else None


def _check_safetensors(path: Path) -> None:
    """A safetensors file's header reads (8-byte length, then JSON): a cut or foreign file is
    named here, not in a traceback from the loader."""
    try:
        with path.open("rb") as f:
            head = f.read(8)
            size = struct.unpack("<Q", head)[0] if len(head) == 8 else -1
            ok = 0 < size <= MAX_SAFETENSORS_HEADER and size + 8 <= path.stat().st_size
            ok = ok and isinstance(json.loads(f.read(size)), dict)
    except (OSError, ValueError, UnicodeDecodeError):
        ok = False
    if not ok:
        raise ModelFolderError(f"{path}: not a readable safetensors file")


def _inside(path: Path, folder: Path) -> bool:
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder))


def check_no_code(folder: Path, home: Path) -> None:
    """Nothing in `folder` runs or leads out of `home`: no Python file, no `auto_map` in a JSON
    config, no link to a file or folder outside `home` (realpath)."""
    if not _inside(folder, home):
        raise ModelFolderError(f"{folder}: leads outside the model folder {home} (a link)")
    for path in folder.rglob("*"):
        if path.is_symlink() and not _inside(path, home):
            raise ModelFolderError(f"{path}: a link leading outside the model folder {home}")
        if path.suffix.lower() in CODE_SUFFIXES:
            raise ModelFolderError(
                f"{path}: a code file in a model folder; cgr runs no code from a model folder "
                "(trust_remote_code is never set; remove it)"
            )
        if path.suffix == ".json" and path.name in AUTO_MAP_FILES and _has_auto_map(path):
            raise ModelFolderError(
                f"{path}: field auto_map points to custom code; cgr runs no code from a model "
                "folder (trust_remote_code is never set)"
            )


def _has_auto_map(path: Path) -> bool:
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise ModelFolderError(f"{path}: {path.stat().st_size:,} bytes (at most "
                                   f"{MAX_CONFIG_BYTES:,})")  # fmt: skip
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as e:
        raise ModelFolderError(f"{path}: not a JSON config ({type(e).__name__})") from None
    return isinstance(config, dict) and "auto_map" in config


def check_weights_folder(folder: Path, what: str, needs: tuple[str, ...]) -> None:
    if not folder.is_dir():
        raise ModelFolderError(
            f"{folder}: missing ({what}; was the folder written by `cgr export`?)"
        )
    for name in needs:
        if not (folder / name).is_file():
            raise ModelFolderError(f"{folder / name}: missing ({what})")
    for path in folder.rglob("*"):
        if path.suffix.lower() in PICKLE_SUFFIXES:
            raise ModelFolderError(
                f"{path}: a pickle file where safetensors weights belong; cgr reads model "
                "folders from safetensors only (remove it, or export the model again)"
            )
    weights = sorted(folder.glob("*.safetensors"))
    if not weights:
        raise ModelFolderError(f"{folder}: no *.safetensors weights ({what})")
    for path in weights:
        _check_safetensors(path)


def _check_modules(folder: Path) -> None:
    """sentence-transformers names the classes it builds in modules.json: only its own."""
    path = folder / "modules.json"
    try:
        modules = json.loads(path.read_text(encoding="utf-8"))
        types = [m["type"] for m in modules]
    except (OSError, ValueError, TypeError, KeyError) as e:
        raise ModelFolderError(f"{path}: not a sentence-transformers module list ({e})") from None
    for i, kind in enumerate(types):
        if not (isinstance(kind, str) and kind.startswith("sentence_transformers.")):
            raise ModelFolderError(
                f"{path}: module {i} type {kind!r} is not a sentence-transformers class"
            )


def read_config(folder: Path) -> dict:
    path = folder / CONFIG
    if not path.is_file():
        raise ModelFolderError(f"{path}: missing (not a model folder `cgr export` wrote)")
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise ModelFolderError(
            f"{path}: {path.stat().st_size:,} bytes (at most {MAX_CONFIG_BYTES:,})"
        )
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise ModelFolderError(f"{path}: not JSON ({e})") from None
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise ModelFolderError(f"{path}: field format must be {FORMAT!r}")
    if config.get("format_version") != FORMAT_VERSION:
        raise ModelFolderError(f"{path}: field format_version {config.get('format_version')!r} "
                               f"is not one this cgr reads ({FORMAT_VERSION})")  # fmt: skip
    for field, kind in (("reader", dict), ("data", dict)):
        if not isinstance(config.get(field), kind):
            raise ModelFolderError(f"{path}: field {field} must be an object")
    reader = config["reader"]
    if not isinstance(reader.get("folder"), str) or not isinstance(reader.get("max_length"), int):
        raise ModelFolderError(
            f"{path}: field reader needs folder (text) and max_length (a number)"
        )
    encoder = config.get("query_encoder")
    if encoder is not None and not (
        isinstance(encoder, dict) and isinstance(encoder.get("folder"), str)
    ):
        raise ModelFolderError(f"{path}: field query_encoder must be null or an object with folder")
    for field in ("reader", "query_encoder"):
        name = (config.get(field) or {}).get("folder")
        if name is not None and (Path(name).is_absolute() or ".." in Path(name).parts):
            raise ModelFolderError(
                f"{path}: field {field}.folder must be a folder inside the model folder"
            )
    return config


def read_model_folder(path: str | Path) -> ModelFolder:
    """The folder checked (config fields, weights in safetensors, no pickles, the query
    encoder's module classes); its data paths are checked by cgr.pretrained.paths."""
    folder = Path(path)
    if not folder.is_dir():
        raise ModelFolderError(
            f"{folder}: not a folder (--model takes the folder `cgr export` wrote)"
        )
    model = ModelFolder(folder, read_config(folder))
    check_no_code(folder, folder)
    check_weights_folder(model.reader, "the reader", ("config.json", "tokenizer_config.json"))
    if model.query_encoder is not None:
        check_weights_folder(
            model.query_encoder, "the query encoder", ("modules.json", "config.json")
        )
        _check_modules(model.query_encoder)
    return model
