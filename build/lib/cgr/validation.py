"""Config values checked when a config is read, so a typo is one clear line (exit 2) before
any model loads, not a traceback an hour later. The dataclasses' Literal types let
jsonargparse refuse a wrong choice at parse time; these checks cover Python callers and ranges."""

from __future__ import annotations

import math
import re
from argparse import ArgumentError
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from cgr.errors import ConfigError

T = TypeVar("T")


def one_of(name: str, value: Any, options: Iterable[Any]) -> None:
    options = tuple(options)
    if value not in options:
        raise ConfigError(f"{name} must be one of {', '.join(map(repr, options))}, not {value!r}")


def _finite_number(value: Any) -> bool:
    """An int or a finite float (NaN and infinity compare false or true to every bound)."""
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


def at_least(name: str, value: int | float, minimum: int | float) -> None:
    if not _finite_number(value) or value < minimum:
        raise ConfigError(f"{name} must be a number >= {minimum}, not {value!r}")


def at_most(name: str, value: int | float, maximum: int | float) -> None:
    if _finite_number(value) and value > maximum:
        raise ConfigError(f"{name} must be <= {maximum}, not {value!r}")


def positive(name: str, value: int | float) -> None:
    if not _finite_number(value) or value <= 0:
        raise ConfigError(f"{name} must be > 0, not {value!r}")


_LITERAL = re.compile(r"Expected a typing\.Literal\[(.*)\]\. Got value: (.*)")
_TYPE = re.compile(r"Expected a <class '(\w+)'>\. Got value: (.*)")


def one_line(report: str) -> str:
    """jsonargparse's nested report ("Parser key ... Errors: - ...") as one line that names the
    setting: `data.retrieval.method must be one of 'none', 'bm25', ..., not 'bm2'`."""
    name = ".".join(re.findall(r'Parser key "([^"]+)"', report))
    if m := _LITERAL.search(report):
        return f"{name} must be one of {m.group(1)}, not {m.group(2)!r}"
    for m in _TYPE.finditer(report):
        if m.group(1) != "NoneType":
            return f"{name} must be {m.group(1)}, not {m.group(2)!r}"
    lines = [ln.strip() for ln in report.splitlines() if ln.strip()]
    bullets = [ln[2:] for ln in lines if ln.startswith("- ") and "NoneType" not in ln]
    return bullets[0] if bullets else (lines[0] if lines else report)


def parsed(parse: Callable[[], T], prog: str) -> T:
    """`parse()` (a jsonargparse parse or LightningCLI set-up with exit_on_error off), a bad
    setting turned into one ConfigError line; jsonargparse wraps our own checks in ValueError."""
    try:
        return parse()
    except ArgumentError as e:
        raise ConfigError(f"{one_line(str(e))} ({prog} --help lists the settings)") from None
    except ValueError as e:
        if "Does not validate against" not in str(e):
            raise
        raise ConfigError(one_line(str(e))) from None
