"""Opening a support reader folder (`cgr support-reader`, cgr.reader.support_reader): checked
against the model-folder rules before torch loads, then loaded as a MultipleChoiceReader."""

from __future__ import annotations

import json
from pathlib import Path

from cgr.errors import ConfigError
from cgr.pretrained.folder import check_no_code, check_weights_folder
from cgr.reader.support_reader import SUPPORT_FILE, SupportReaderConfig
from cgr.validation import at_least


def check_support_reader(folder: str | Path) -> dict:
    """What a support reader folder says of itself (SUPPORT_FILE), the folder held to the
    model-folder rules (safetensors weights, no code): checked before any model loads."""
    folder = Path(folder)
    info_path = folder / SUPPORT_FILE
    if not info_path.is_file():
        raise ConfigError(f"{folder}: no {SUPPORT_FILE}; not a folder `cgr support-reader` wrote")
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
        length = int(info.get("max_length", SupportReaderConfig.max_length))
    except (OSError, ValueError, TypeError, AttributeError) as e:
        raise ConfigError(f"{info_path}: not a support reader's description ({e})") from None
    at_least(f"{info_path}: field max_length", length, 1)
    check_weights_folder(folder, "a support reader", ("config.json",))
    check_no_code(folder, folder)
    return {**info, "max_length": length}


def load_support_reader(folder: str | Path):
    """The saved support reader as a MultipleChoiceReader in eval mode, at its max_length."""
    from cgr.reader.model import MultipleChoiceReader

    info = check_support_reader(folder)
    return MultipleChoiceReader(str(folder), info["max_length"]).eval()
