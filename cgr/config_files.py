"""Config files read safely before any parser sees them: a size cap and a bound on what YAML
aliases expand to (a 1 KB "billion laughs" file otherwise grows to gigabytes in group resolution
and in jsonargparse), and group files that include themselves named as such."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from cgr.errors import ConfigError

MAX_CONFIG_BYTES = 1_000_000  # the shipped configs are under 5 KB
MAX_CONFIG_VALUES = 100_000  # scalars, lists and mappings after YAML aliases are expanded


def expanded_size(node: yaml.Node, memo: dict[int, int | None] | None = None) -> int:
    """How many values `node` holds with every alias expanded, counted without expanding (an
    alias is a shared node: its count is reused). A node that contains itself counts as
    unbounded."""
    memo = {} if memo is None else memo
    key = id(node)
    if key in memo:
        if memo[key] is None:  # met again while being counted: a recursive structure
            return MAX_CONFIG_VALUES + 1
        return memo[key]
    memo[key] = None
    if isinstance(node, yaml.SequenceNode):
        children = node.value
    elif isinstance(node, yaml.MappingNode):
        children = [n for pair in node.value for n in pair]
    else:
        children = []
    total = 1
    for child in children:
        total += expanded_size(child, memo)
        if total > MAX_CONFIG_VALUES:
            break
    memo[key] = total
    return total


def check_config_file(path: str | Path) -> str:
    """The file's text, refused in one line when it is too large or its aliases expand too far."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError:
        return ""  # a missing file: the parser names it
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{path}: {size:,} bytes; a config file is at most {MAX_CONFIG_BYTES:,} bytes"
        )
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return text  # not YAML: the parser says where
    if node is not None and expanded_size(node) > MAX_CONFIG_VALUES:
        raise ConfigError(f"{path}: its YAML aliases expand to more than {MAX_CONFIG_VALUES:,} "
                          "values (an alias bomb?); refused")  # fmt: skip
    return text


def load_config_file(path: Path, including: Sequence[Path] = ()) -> Any:
    """A config file's YAML, checked first; `including`: the group files that led here (a
    file met again is a config that includes itself)."""
    real = path.resolve()
    if real in including:
        chain = " -> ".join(str(p) for p in [*including, real])
        raise ConfigError(f"{path}: a config that includes itself ({chain})")
    return yaml.safe_load(check_config_file(path))


def config_files_in(argv: Sequence[str]) -> list[str]:
    """The files `--config FILE` / `--config=FILE` name on a command line."""
    found = []
    for i, arg in enumerate(argv):
        if arg == "--config" and i + 1 < len(argv):
            found.append(argv[i + 1])
        elif arg.startswith("--config="):
            found.append(arg.partition("=")[2])
    return found


def check_config_files(argv: Sequence[str]) -> None:
    """Every --config file of a command line, before its parser reads it. A missing file under
    configs/ is named with where the shipped configs live: an installed wheel carries the
    package, not the repository's configs/ folder."""
    for path in config_files_in(argv):
        if not Path(path).exists() and Path(path).parts[:1] == ("configs",):
            raise ConfigError(
                f"--config {path}: not found here ({Path.cwd()}); the config groups (configs/) "
                "ship with the source repository, not the installed package: run from a checkout "
                "of cgr, or pass a config file of your own (docs/configuration.md)"
            )
        check_config_file(path)


def load_configs(files: list[Path]) -> dict:
    config: dict = {}
    for path in files:
        merge(config, resolve_groups(load_config_file(path) or {}, path.parent, (path.resolve(),)))
    return config


def resolve_groups(value: Any, folder: Path, including: tuple[Path, ...] = ()) -> Any:
    """Inline `key: group/file.yaml` (relative to the file that names it), recursively;
    `including`: the files that led here (a cycle is refused, not recursed into)."""
    if isinstance(value, str) and value.endswith((".yaml", ".yml")) and (folder / value).is_file():
        path = folder / value
        loaded = load_config_file(path, including)
        return resolve_groups(loaded, path.parent, (*including, path.resolve()))
    if isinstance(value, dict):
        return {k: resolve_groups(v, folder, including) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_groups(v, folder, including) for v in value]
    return value


def merge(into: dict, update: dict) -> None:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            merge(into[key], value)
        else:
            into[key] = value
