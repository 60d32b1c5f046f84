"""`cgr train`'s command line checked before torch and Lightning import (4-6 s on two cores), so
a mistyped key, a bad value or a missing file is refused in well under a second.

It reads the config files as LightningCLI does (config groups named by a path relative to the
file that names them, later files and `--key=value` overrides win), then runs the same checks with
the same messages as the full parse: unknown `trainer.*` / `data.*` / `model.init_args.*` keys,
`data.retrieval` and `data.chains` values, `data.*` numbers and files, the run name and checkpoint
folders. Whatever it cannot read with certainty (an option it does not know, `key+=value`, a
class it cannot see) it leaves alone: LightningCLI checks everything again after parsing."""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import typing
from pathlib import Path
from typing import Any, Literal

import yaml

from cgr.config_files import load_config_file, load_configs, resolve_groups
from cgr.errors import ConfigError, DataFormatError

HELP = "(cgr train --help lists the settings)"
# options that end with their value; anything else not `--key=value` / `--key value`: leave it
STOP = {"-h", "--help", "--print_config", "--print-config"}
SECTIONS = {  # top-level key -> (module, class) whose __init__ names its keys
    "trainer": ("pytorch_lightning.trainer.trainer", "Trainer"),
    "data": ("cgr.training.datamodule", "QADataModule"),
}


class Unreadable(Exception):
    """The command line holds something this check does not model: leave it to LightningCLI."""


def precheck(argv: list[str]) -> None:
    """Raise ConfigError / DataFormatError for what the command line gets wrong; else return."""
    from cgr.signing import check_key_file

    check_key_file()  # checkpoints are signed with it: an unsafe key is refused now, not at save
    try:
        files, name, overrides = split_args(argv)
        config = load_configs(files)
        for raw, key, value in overrides:
            if known_key(config, key) is False:
                raise ConfigError(f"unrecognized arguments: {raw} {HELP}")
            set_key(config, key, value)
        check_values(config, name, files)
    except (ConfigError, DataFormatError):
        raise
    except Exception:  # noqa: BLE001 - never refuse what the full parse would accept
        return


def split_args(argv: list[str]) -> tuple[list[Path], str | None, list[tuple[str, str, Any]]]:
    files: list[Path] = []
    name: str | None = None
    overrides: list[tuple[str, str, Any]] = []
    args = iter(argv)
    for arg in args:
        if arg in STOP or not arg.startswith("--"):
            raise Unreadable(arg)
        key, eq, text = arg[2:].partition("=")
        if not eq:
            text = next(args, None)
            if text is None or text.startswith("--"):
                raise Unreadable(arg)
        raw = arg if eq else f"{arg} {text}"  # as jsonargparse echoes it
        if key == "config":
            files.append(Path(text))
        elif key == "name":
            name = text
        elif key.endswith("+") or not key:
            raise Unreadable(arg)
        else:
            overrides.append((raw, key, yaml.safe_load(text)))
    if not files:
        raise Unreadable("no --config")
    return files, name, overrides


def set_key(config: dict, key: str, value: Any) -> None:
    *parents, last = key.split(".")
    node = config
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    if isinstance(value, str) and value.endswith((".yaml", ".yml")) and Path(value).is_file():
        value = resolve_groups(
            load_config_file(Path(value)), Path(value).parent, (Path(value).resolve(),)
        )
    node[last] = value


def known_key(config: dict, key: str) -> bool | None:
    """True / False when the key's class is readable here, None when it is not."""
    parts = key.split(".")
    if parts[0] == "data" and len(parts) > 2 and parts[1] in NESTED:
        return parts[2] in dataclass_fields(NESTED[parts[1]]) if len(parts) == 3 else None
    if parts[0] in SECTIONS and len(parts) == 2:
        names = init_parameters(*SECTIONS[parts[0]])
        return None if names is None else parts[1] in names
    if parts[:2] == ["model", "init_args"] and len(parts) == 3:
        class_path = (config.get("model") or {}).get("class_path")
        if isinstance(class_path, str) and "." in class_path:
            names = init_parameters(*class_path.rsplit(".", 1))
            return None if names is None else parts[2] in names
    return None


def init_parameters(module: str, name: str) -> set[str] | None:
    """The keyword names of `module.name.__init__`, read from its source without importing it
    (importing Lightning is what this check exists to avoid); None when that is not certain:
    no source, a **kwargs, or an __init__ inherited from a class not in the same file."""
    top, *rest = module.split(".")
    spec = importlib.util.find_spec(top)  # the top package only: a submodule would import it
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations)), *rest).with_suffix(".py")
    if not path.is_file():
        return None
    classes = {
        node.name: node
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.ClassDef)
    }
    node = classes.get(name)
    while node is not None:
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                args = item.args
                if args.kwarg is not None:
                    return None
                return {a.arg for a in [*args.args, *args.kwonlyargs]} - {"self"}
        bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
        node = classes.get(bases[0]) if len(bases) == 1 else None
    return None


def _nested() -> dict[str, type]:
    from cgr.chains.builder import ChainConfig
    from cgr.evidence.selection import EvidenceConfig
    from cgr.retrieval.config import RetrievalConfig

    return {"retrieval": RetrievalConfig, "chains": ChainConfig, "evidence": EvidenceConfig}


NESTED = _nested()


def dataclass_fields(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def check_types(cls: type, values: dict, prefix: str) -> None:
    """Literal choices and plain scalar types, as jsonargparse refuses them."""
    hints = typing.get_type_hints(cls)
    for key, value in values.items():
        hint = hints.get(key)
        if typing.get_origin(hint) is Literal:
            if value not in typing.get_args(hint):
                options = ", ".join(map(repr, typing.get_args(hint)))
                raise ConfigError(f"{prefix}.{key} must be one of {options}, not {value!r} {HELP}")
        elif hint in (bool, int, float, str) and value is not None:
            ok = isinstance(value, hint) and not (hint is int and isinstance(value, bool))
            if hint is float:
                ok = isinstance(value, int | float) and not isinstance(value, bool)
            if not ok:
                raise ConfigError(f"{prefix}.{key} must be {hint.__name__}, not {value!r} {HELP}")


def check_values(config: dict, name: str | None, files: list[Path]) -> None:
    from jsonargparse import dict_to_namespace

    from cgr.training.settings import (
        DATA_MINIMUMS,
        check_data_settings,
        check_output_folders,
        check_trainer_numbers,
        name_run,
    )

    check_trainer_numbers(config.get("trainer") or {})
    check_model_numbers(config.get("model"))
    data = config.get("data") or {}
    for key in DATA_MINIMUMS:  # QADataModule's int settings
        value = data.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise ConfigError(f"data.{key} must be int, not {value!r} {HELP}")
    for group, cls in NESTED.items():
        values = data.get(group)
        if not isinstance(values, dict) or not set(values) <= dataclass_fields(cls):
            continue
        check_types(cls, values, f"data.{group}")
        cls(**values)  # the ranges its __post_init__ checks
    namespace = dict_to_namespace({**config, "config": [str(f) for f in files], "name": name})
    name_run(namespace)
    check_output_folders(namespace)
    check_data_settings(namespace.get("data"))
    check_data_files(data)


def check_model_numbers(model) -> None:
    """The module's rates and scales, as its __init__ checks them, before it loads a model
    (a NaN learning rate would otherwise train to NaN)."""
    from cgr.validation import at_least, positive

    init = (model.get("init_args") if isinstance(model, dict) else None) or {}

    def number(key: str) -> float | None:  # YAML reads 1e-4 as a string; the parse makes a float
        value = init.get(key)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                return None  # not a number at all: the full parse names it
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None

    for key in ("lr", "retriever_lr", "similarity_scale"):
        if (value := number(key)) is not None:
            positive(f"model.{key}", value)
    if (value := number("weight_decay")) is not None:
        at_least("model.weight_decay", value, 0)


def check_data_files(data: dict) -> None:
    """Question files read as training reads them (OBQA's 4,957: 0.06 s); corpora too when
    small enough that reading them twice costs little (the usual science corpus: 0.6 s)."""
    from cgr.data.corpus import check_corpus_files
    from cgr.data.loaders import load_multiple_choice

    train = data.get("train_file")
    for path in [*(train if isinstance(train, list) else [train]), data.get("dev_file"),
                 data.get("predict_file")]:  # fmt: skip
        if path:
            load_multiple_choice(path)
    retrieval = data.get("retrieval") or {}
    if retrieval.get("method") in {"none", "gold"}:
        return
    check_corpus_files([*(retrieval.get("corpus") or []),
                        *filter(None, [retrieval.get("open_book")])])  # fmt: skip
