"""Every model cgr loads goes through here, so cgr decides how it loads, never the model's
folder: safetensors weights only, torch.load restricted to tensors (`weights_only=True`) where
any loader reaches it, no code from the folder (`trust_remote_code=False`), a local folder read
as local files only, and the dtype passed (a config without one, or with "auto", would make
the loader open the weights to infer it). These settings are passed last, so they win over any
a folder's json asks for (sentence-transformers merges its module config under the caller's);
a local folder is first judged file by file (cgr.weights.contents), so such a json is
refused in one line before any weight file is opened, and a load that fails anyway (wrong
shapes, a file changed since it was checked) is one line too, never a traceback.

The settings, not the checks, are what keep code from running: a file swapped after its check
can still only be read as safetensors, with remote code refused."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from cgr.weights.contents import DTYPES, ModelFolderError, check_gguf, check_part

log = logging.getLogger(__name__)


def is_local(path: str | Path) -> bool:
    return Path(path).is_dir()


def settings(path: str | Path, gguf: str | None = None) -> dict[str, Any]:
    """The loader settings for `path` (a local folder or a hub name). A GGUF file is its own
    format (read by the gguf library, never unpickled): safetensors-only does not apply."""
    kwargs: dict[str, Any] = {"trust_remote_code": False}
    if gguf:
        kwargs["gguf_file"] = gguf
    if is_local(path):
        kwargs["local_files_only"] = True
    return kwargs


def model_settings(path: str | Path, dtype=None, gguf: str | None = None) -> dict[str, Any]:
    """settings() plus what a model's weights are read with."""
    import torch

    kwargs = settings(path, gguf)
    kwargs["weights_only"] = True
    if not gguf:
        kwargs["use_safetensors"] = True
    kwargs["dtype"] = dtype if dtype is not None else stored_dtype(path)
    if isinstance(kwargs["dtype"], str):
        kwargs["dtype"] = getattr(torch, kwargs["dtype"])
    return kwargs


def stored_dtype(path: str | Path):
    """The dtype a local folder's config.json says its weights are (float32 when it says none):
    passed explicitly so no loader opens the weights to infer it."""
    import json

    import torch

    config = Path(path) / "config.json"
    try:
        stored = json.loads(config.read_text(encoding="utf-8"))
        name = stored.get("dtype") or stored.get("torch_dtype")
    except (OSError, ValueError, AttributeError):
        name = None
    return getattr(torch, name) if name in DTYPES else torch.float32


def checked(path: str | Path, what: str, gguf: str | None = None, check: bool = True) -> str:
    """`path` as a loader takes it; a local folder judged file by file first (with `gguf`, the
    one GGUF file the loader reads from it: packaged ones lie in a Python package's folder).
    `check=False`: a folder cgr itself wrote into its cache (a CTranslate2 conversion)."""
    if check and is_local(path):
        if gguf:
            check_gguf(Path(path) / gguf, what)
        else:
            check_part(Path(path), what)
    return str(path)


def load_failed(path: str | Path, what: str, error: BaseException) -> ModelFolderError:
    detail = (str(error).strip().splitlines() or [""])[0][:200]
    if "ignore_mismatched_sizes" in detail:  # transformers points to a report it logged above
        detail = "a tensor's shape does not match the model's config.json"
    return ModelFolderError(
        f"{path}: {what} did not load ({type(error).__name__}{': ' + detail if detail else ''})"
    )


def from_pretrained(loader, path: str | Path, what: str, dtype=None, gguf: str | None = None,
                    **kwargs):  # fmt: skip
    """`loader.from_pretrained(path)` (an AutoModel* class) with cgr's settings."""
    path = checked(path, what, gguf)
    try:
        return loader.from_pretrained(path, **kwargs, **model_settings(path, dtype, gguf))
    except ModelFolderError:
        raise
    except Exception as e:  # noqa: BLE001 - whatever a folder makes a loader raise is one line
        raise load_failed(path, what, e) from None


def from_config(loader, config, dtype=None):
    """`loader.from_config(config)`: a model built from a config object, never from code."""
    return loader.from_config(config, dtype=dtype, trust_remote_code=False)


def auto_config(path: str | Path, what: str, gguf: str | None = None, check: bool = True):
    from transformers import AutoConfig

    return _load_plain(AutoConfig, path, what, gguf, check)


def auto_tokenizer(path: str | Path, what: str, gguf: str | None = None, check: bool = True):
    from transformers import AutoTokenizer

    return _load_plain(AutoTokenizer, path, what, gguf, check)


def _load_plain(loader, path, what: str, gguf: str | None, check: bool = True, **kwargs):
    path = checked(path, what, gguf, check)
    try:
        return loader.from_pretrained(path, **kwargs, **settings(path, gguf))
    except Exception as e:  # noqa: BLE001 - whatever a folder makes a loader raise is one line
        raise load_failed(path, what, e) from None


def sentence_transformer(path: str | Path, what: str, device: str = "cpu"):
    """A sentence-transformers model with cgr's settings for each of its parts (the model, its
    tokenizer, its config): passed by the caller, they win over the folder's module config."""
    from sentence_transformers import SentenceTransformer

    path = checked(path, what)
    model_kwargs = model_settings(path)
    plain = settings(path)
    try:
        return SentenceTransformer(
            path,
            device=device,
            trust_remote_code=False,
            local_files_only=is_local(path),
            model_kwargs=model_kwargs,
            config_kwargs=plain,
            processor_kwargs=plain,
        )
    except Exception as e:  # noqa: BLE001 - whatever a folder makes a loader raise is one line
        raise load_failed(path, what, e) from None
