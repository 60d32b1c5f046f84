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

from dataclasses import dataclass
from pathlib import Path

from cgr.data import jsonio
from cgr.files import inside
from cgr.weights.contents import ModelFolderError, check_part

CONFIG = "cgr_config.json"
FORMAT = "cgr-model"
FORMAT_VERSION = 1
MAX_CONFIG_BYTES = 1_000_000
PICKLE_SUFFIXES = {".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".joblib", ".npy"}
CODE_SUFFIXES = {".py", ".pyc", ".pyw", ".so", ".pyd"}
# the configs transformers reads auto_map from (model, tokenizer, processor, feature extractor)
AUTO_MAP_FILES = {"config.json", "tokenizer_config.json", "processor_config.json",
                  "preprocessor_config.json", "config_sentence_transformers.json"}  # fmt: skip


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


def check_no_code(folder: Path, home: Path) -> None:
    """Nothing in `folder` runs or leads out of `home`: no Python file, no `auto_map` in a JSON
    config, no link to a file or folder outside `home` (realpath)."""
    if not inside(folder, [home]):
        raise ModelFolderError(f"{folder}: leads outside the model folder {home} (a link)")
    for path in folder.rglob("*"):
        if path.is_symlink() and not inside(path, [home]):
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
        config = jsonio.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as e:
        raise ModelFolderError(f"{path}: not a JSON config ({type(e).__name__})") from None
    return isinstance(config, dict) and "auto_map" in config


MAX_TOKENIZER_BYTES = 50_000_000  # large multilingual tokenizer.json files are ~20 MB
MAX_CONFIG_INT = 2**31  # no model setting (vocabulary, width, layers, positions) is larger
MAX_EMBEDDING = 2**32  # vocab_size x hidden_size: 4G parameters in one matrix


def _read_json(path: Path, limit: int, what: str) -> object:
    if path.stat().st_size > limit:
        raise ModelFolderError(
            f"{path}: {path.stat().st_size:,} bytes (at most {limit:,} for {what})"
        )
    try:
        return jsonio.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise ModelFolderError(f"{path}: not a readable {what} ({type(e).__name__})") from None


def _check_model_config(path: Path) -> None:
    """Numbers the model is built from before any weight is read: a vocabulary of 10^10 would
    allocate until memory runs out."""
    config = _read_json(path, MAX_CONFIG_BYTES, "model config")
    if not isinstance(config, dict):
        raise ModelFolderError(f"{path}: not a model config (a JSON object)")
    for key, value in config.items():
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_CONFIG_INT:
            raise ModelFolderError(f"{path}: field {key} {value} is out of range")
    vocab, width = config.get("vocab_size"), config.get("hidden_size")
    if isinstance(vocab, int) and isinstance(width, int) and vocab * width > MAX_EMBEDDING:
        raise ModelFolderError(f"{path}: fields vocab_size x hidden_size ({vocab} x {width}) "
                               "are out of range")  # fmt: skip


def _check_tokenizer(path: Path) -> None:
    if path.exists() and not isinstance(_read_json(path, MAX_TOKENIZER_BYTES, "tokenizer"), dict):
        raise ModelFolderError(f"{path}: not a tokenizer (a JSON object)")


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
    _check_model_config(folder / "config.json")
    _check_tokenizer(folder / "tokenizer.json")
    if not any(folder.glob("*.safetensors")):
        raise ModelFolderError(f"{folder}: no *.safetensors weights ({what})")
    check_part(folder, what)  # every file by its content, every json for loader settings


def _check_modules(folder: Path) -> None:
    """sentence-transformers names the classes it builds in modules.json: only its own."""
    path = folder / "modules.json"
    try:
        modules = jsonio.loads(path.read_text(encoding="utf-8"))
        if not isinstance(modules, list) or not all(isinstance(m, dict) and "type" in m
                                                    for m in modules):  # fmt: skip
            raise ValueError("a list of modules, each with a type")
    except (OSError, ValueError, TypeError, KeyError) as e:
        raise ModelFolderError(f"{path}: not a sentence-transformers module list ({e})") from None
    for i, module in enumerate(modules):
        kind = module["type"]
        if not (isinstance(kind, str) and _is_sentence_transformers_class(kind)):
            raise ModelFolderError(
                f"{path}: module {i} type {kind!r} is not a sentence-transformers class"
            )
        where = module.get("path", "")
        if not isinstance(where, str) or Path(where).is_absolute() or ".." in Path(where).parts:
            raise ModelFolderError(f"{path}: module {i} path {where!r} leaves the folder")


def _is_sentence_transformers_class(kind: str) -> bool:
    """`kind` names a torch module class that sentence-transformers itself defines (its own,
    already installed code: importing it runs nothing from the folder). The classes of the
    plain layout are known by name, so opening such a folder does not import it (2 s)."""
    import importlib
    import re

    from cgr.retrieval.plain_encoder import KNOWN_MODULES

    if kind in KNOWN_MODULES:
        return True
    if not re.fullmatch(r"sentence_transformers(\.[A-Za-z_]\w*)+", kind):
        return False
    module_name, _, name = kind.rpartition(".")
    try:
        import torch

        cls = getattr(importlib.import_module(module_name), name, None)
    except ImportError:
        return False
    return isinstance(cls, type) and issubclass(cls, torch.nn.Module)


def read_config(folder: Path) -> dict:
    path = folder / CONFIG
    if not path.is_file():
        raise ModelFolderError(f"{path}: missing (not a model folder `cgr export` wrote)")
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise ModelFolderError(
            f"{path}: {path.stat().st_size:,} bytes (at most {MAX_CONFIG_BYTES:,})"
        )
    try:
        config = jsonio.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise ModelFolderError(f"{path}: not JSON ({str(e)[:120]})") from None
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
    if not 32 <= reader["max_length"] <= 100_000:  # question, choice and one fact must fit
        raise ModelFolderError(
            f"{path}: field reader.max_length must be in 32..100000, not {reader['max_length']}"
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
