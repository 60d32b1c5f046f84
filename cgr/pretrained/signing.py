"""Which stored settings this user's cgr wrote: an HMAC over them with a key only this user can
read. A checkpoint or model folder signed here names its files as its author chose them (the
user); an unsigned one is data from someone else, and its paths are held to the roots rule
(cgr.pretrained.paths)."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
from pathlib import Path

log = logging.getLogger(__name__)
KEY_BYTES = 32


def key_file() -> Path:
    """$CGR_SIGNING_KEY, else ~/.config/cgr/signing.key (XDG_CONFIG_HOME when set)."""
    if env := os.environ.get("CGR_SIGNING_KEY"):
        return Path(env)
    config = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(config) / "cgr" / "signing.key"


def _key(create: bool) -> bytes | None:
    path = key_file()
    try:
        data = path.read_bytes()
        if len(data) == KEY_BYTES:
            return data
        log.warning(
            "%s is not a cgr signing key (%d bytes); nothing is trusted by it", path, len(data)
        )
        return None
    except FileNotFoundError:
        if not create:
            return None
    except OSError as e:
        log.warning("cannot read the signing key %s (%s)", path, e.strerror)
        return None
    try:  # created readable by this user only; O_EXCL: two processes never write two keys
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(KEY_BYTES))
    except FileExistsError:
        pass
    except OSError as e:
        log.warning("cannot write a signing key at %s (%s): this model will not be trusted "
                    "by name; open it with --data-root", path, e.strerror)  # fmt: skip
        return None
    return _key(create=False)


def canonical(settings: object) -> bytes:
    return json.dumps(settings, sort_keys=True, default=repr, ensure_ascii=True).encode()


def sign(settings: object) -> str | None:
    """The signature of `settings` (None when no key can be kept)."""
    key = _key(create=True)
    return key and hmac.new(key, canonical(settings), hashlib.sha256).hexdigest()


def signed_here(settings: object, signature: object) -> bool:
    """Whether `signature` is this user's signature of `settings`."""
    if not isinstance(signature, str) or (key := _key(create=False)) is None:
        return False
    expected = hmac.new(key, canonical(settings), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, signature)


SIGNATURE = "cgr_signature"  # checkpoint key (and cgr_config.json field) of the signature


def checkpoint_settings(checkpoint: dict) -> dict:
    """What a checkpoint's signature covers: the model's and the data's stored settings."""
    return {"model": checkpoint.get("hyper_parameters"),
            "data": checkpoint.get("datamodule_hyper_parameters")}  # fmt: skip


def checkpoint_signed_here(checkpoint: dict) -> bool:
    return signed_here(checkpoint_settings(checkpoint), checkpoint.get(SIGNATURE))
