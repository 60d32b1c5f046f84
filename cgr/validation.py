"""Config values checked when a config is read, so a typo is one clear line (exit 2) before
any model loads, not a traceback an hour later. The dataclasses' Literal types let
jsonargparse refuse a wrong choice at parse time; these checks cover Python callers and ranges."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cgr.errors import ConfigError


def one_of(name: str, value: Any, options: Iterable[Any]) -> None:
    options = tuple(options)
    if value not in options:
        raise ConfigError(f"{name} must be one of {', '.join(map(repr, options))}, not {value!r}")


def at_least(name: str, value: int | float, minimum: int | float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum:
        raise ConfigError(f"{name} must be a number >= {minimum}, not {value!r}")


def positive(name: str, value: int | float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"{name} must be > 0, not {value!r}")
