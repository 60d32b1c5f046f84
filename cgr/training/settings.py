"""`cgr train`'s settings that can be checked with no model library loaded: the run name and
checkpoint folders, the `data.*` numbers and files. LightningCLI runs these on the parsed config
(cgr.training.config) and cgr.training.precheck on the command line before torch imports."""

from __future__ import annotations

from pathlib import Path

from cgr.data.root import data_path, missing_hint, use_data_root
from cgr.errors import ConfigError, DataFormatError
from cgr.files import missing_folders, open_no_follow, remove_empty, require_writable_dir
from cgr.validation import at_least

CHECKPOINT = "pytorch_lightning.callbacks.ModelCheckpoint"
# logger class -> (the init arg naming the run, its value when the config leaves it unset)
RUN_NAME_ARGS = {
    "pytorch_lightning.loggers.CSVLogger": ("name", "lightning_logs"),
    "pytorch_lightning.loggers.TensorBoardLogger": ("name", "lightning_logs"),
    "pytorch_lightning.loggers.WandbLogger": ("name", None),
}

DATA_MINIMUMS = {"batch_size": 1, "eval_batch_size": 1, "num_workers": 0, "max_evidence": 1,
                 "retrieval_batch_size": 1}  # fmt: skip


def check_data_numbers(**values) -> None:
    """`data.*` numbers against DATA_MINIMUMS (None: not given)."""
    for key, value in values.items():
        if value is not None:
            at_least(f"data.{key}", value, DATA_MINIMUMS[key])


def name_run(config) -> None:
    """Fill an unset ModelCheckpoint dirpath with checkpoints/NAME and an unset logger run name
    with NAME (`config` is the parsed jsonargparse namespace, changed in place)."""
    files = config.get("config") or []
    name = config.get("name") or (Path(str(files[0])).stem if files else "cgr")
    config.name = name
    trainer = config.trainer
    for callback in _as_list(trainer.get("callbacks")):
        if callback.class_path == CHECKPOINT and callback.init_args.get("dirpath") is None:
            callback.init_args.dirpath = f"checkpoints/{name}"
    for logger in _as_list(trainer.get("logger")):
        arg, unset = RUN_NAME_ARGS.get(getattr(logger, "class_path", ""), (None, None))
        if arg and logger.init_args.get(arg) == unset:
            logger.init_args[arg] = name


def check_output_folders(config) -> None:
    """The run name is one folder name (not a path that writes outside checkpoints/), and every
    checkpoint folder can be written (not under a file)."""
    name = str(config.get("name") or "")
    if not name or name in {".", ".."} or any(c in name for c in "/\\") or name.startswith("-"):
        raise ConfigError(
            f"--name {name!r}: a run name is one folder name (checkpoints/NAME), not a path"
        )
    for callback in _as_list(config.trainer.get("callbacks")):
        folder = callback.init_args.get("dirpath") if callback.class_path == CHECKPOINT else None
        if folder:
            require_writable_dir(folder, "checkpoint folder (ModelCheckpoint dirpath)")


# Trainer numbers Lightning reads as "no limit" at -1 and refuses below it only after the model
# has loaded; None: unset
TRAINER_MINIMUMS = {"max_epochs": -1, "min_epochs": 0, "max_steps": -1, "min_steps": 0}


def check_trainer_numbers(trainer) -> None:
    """`trainer.*` counts in range (a whole number, -1 for no limit where Lightning allows it)
    before any model loads."""
    if trainer is None:
        return
    for key, least in TRAINER_MINIMUMS.items():
        value = trainer.get(key)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigError(f"trainer.{key} must be a whole number, not {value!r}")
        at_least(f"trainer.{key}", value, least)


def check_data_settings(data) -> None:
    """QADataModule's own checks on plain values, and its files found, before any model loads
    (LightningCLI builds the model before the data module)."""
    if data is None:
        return
    check_data_numbers(**{key: data.get(key) for key in DATA_MINIMUMS})
    train = data.get("train_file")
    files = [("data.train_file", f) for f in (train if isinstance(train, list) else [train])]
    files += [
        ("data.dev_file", data.get("dev_file")),
        ("data.predict_file", data.get("predict_file")),
    ]
    files += [("data.gold_facts_files", f) for f in data.get("gold_facts_files") or []]
    retrieval = data.get("retrieval")
    if retrieval is not None and retrieval.get("method") not in {"none", "gold"}:
        files += [("data.retrieval.corpus", f) for f in retrieval.get("corpus") or []]
        files.append(("data.retrieval.open_book", retrieval.get("open_book")))
        chains = data.get("chains")
        files += [("data.chains.book", f) for f in (chains and chains.get("book")) or []]
    if isinstance(data.get("data_root"), str):
        use_data_root(data["data_root"])
    for what, path in files:
        found = data_path(str(path)) if path else None
        if found is not None and not found.exists():  # a corpus may be a folder of tsv tables
            raise DataFormatError(str(found), None, what, missing_hint(found))


def _as_list(value) -> list:
    if value is None or isinstance(value, bool):
        return []
    return list(value) if isinstance(value, list) else [value]


def checkpoint_folder(config) -> str | None:
    """The run's checkpoint folder (ModelCheckpoint's dirpath, filled by name_run)."""
    for callback in _as_list(config.trainer.get("callbacks")):
        if callback.class_path == CHECKPOINT and callback.init_args.get("dirpath"):
            return callback.init_args.dirpath
    return None


def lock_run_folder(folder: str | Path):
    """An exclusive lock on a run's checkpoint folder for this process's life (the open lock
    file; None on DDP ranks other than the first, whose launcher holds it): a second `cgr
    train` with the same name is refused instead of interleaving its checkpoints."""
    import fcntl
    import os

    if os.environ.get("LOCAL_RANK", "0") != "0" or os.environ.get("NODE_RANK", "0") != "0":
        return None
    path = Path(folder).absolute() / ".cgr-train.lock"
    for handle, _ in _HELD:  # this process holds it already (a second parse in one process)
        if Path(handle.name) == path:
            return handle
    created = missing_folders(path.parent)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:  # a link planted as the lock is refused, never truncated (open_no_follow)
        handle = open_no_follow(path, "a+")
    except ConfigError as e:
        remove_empty(created)
        raise ConfigError(f"checkpoint folder {folder}: the run lock {e}") from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise ConfigError(
            f"checkpoint folder {folder}: another `cgr train` is using it ({holder}); wait for "
            "it to end or give this run another --name"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    from cgr.training.checkpoints import remove_partial_saves

    remove_partial_saves(
        path.parent
    )  # a killed run's half-written checkpoints (the lock: none live)
    if not _HELD:  # a process that ends without release_run_locks (a parse alone) cleans up
        import atexit

        atexit.register(release_run_locks)
    _HELD.append((handle, created))
    return handle


_HELD: list = []  # (lock file, folders made for it) this process holds


def release_run_locks() -> None:
    """Frees the run folders this process locked; a folder that holds nothing but the lock
    (a run refused after the lock, e.g. by a model that does not load) is removed with it."""
    while _HELD:
        handle, created = _HELD.pop()
        path = Path(handle.name)
        handle.close()
        try:
            alone = [p.name for p in path.parent.iterdir()] == [path.name]
        except OSError:  # the folder went away meanwhile (a test's temporary folder)
            continue
        if alone:
            path.unlink(missing_ok=True)
            remove_empty(created)  # only the folders the lock made
