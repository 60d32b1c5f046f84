"""Which stored settings this user's cgr wrote: an HMAC over them with a key only this user can
read. A checkpoint or model folder signed here names its files as its author chose them (the
user); an unsigned one is data from someone else, and its paths are held to the roots rule
(cgr.pretrained.paths)."""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import stat
from pathlib import Path

from cgr.errors import ConfigError

log = logging.getLogger(__name__)
KEY_BYTES = 32
_HEX64 = re.compile(r"[0-9a-f]{64}")


def key_file() -> Path:
    """$CGR_SIGNING_KEY, else ~/.config/cgr/signing.key (XDG_CONFIG_HOME when set)."""
    if env := os.environ.get("CGR_SIGNING_KEY"):
        return Path(env)
    config = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(config) / "cgr" / "signing.key"


class SigningKeyError(ConfigError):
    pass


def check_key_file() -> None:
    """Refuses an unsafe signing key in one line (before any model loads); a missing key is
    fine (one is made at the first signature)."""
    _key(create=False)


def _read_key(path: Path) -> bytes | None:
    """The key's bytes, None when missing. Refused, as ssh refuses a private key: a link, not a
    regular file (a FIFO, /dev/zero), another user's, readable or writable by others; read
    with a size bound."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as e:
        why = "a symbolic link" if e.errno == errno.ELOOP else e.strerror
        raise SigningKeyError(f"signing key {path}: {why}; cgr uses only a plain file of its "
                              "own (remove it: a new key is made)") from None  # fmt: skip
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise SigningKeyError(f"signing key {path}: not a regular file")
        if info.st_uid != os.geteuid():
            raise SigningKeyError(f"signing key {path}: owned by another user (uid {info.st_uid})")
        if info.st_mode & 0o077:
            raise SigningKeyError(
                f"signing key {path}: permissions {stat.S_IMODE(info.st_mode):04o} are too open "
                f"(others could forge trust): chmod 600 {path}"
            )
        return f.read(KEY_BYTES + 1)


def _key(create: bool) -> bytes | None:
    path = key_file()
    data = _read_key(path)
    if data is not None:
        if len(data) == KEY_BYTES:
            return data
        raise SigningKeyError(f"signing key {path}: not a cgr signing key ({KEY_BYTES} bytes "
                              "expected; remove it: a new key is made)")  # fmt: skip
    if not create:
        return None
    try:  # created readable by this user only; O_EXCL: two processes never write two keys
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
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
    """Whether `signature` is this user's signature of `settings` (a signature that is not
    64 hex digits is no signature)."""
    if not isinstance(signature, str) or not _HEX64.fullmatch(signature):
        return False
    if (key := _key(create=False)) is None:
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
