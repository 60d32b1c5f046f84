"""Worker processes for the CPU-bound stages (AMR parsing, chain search).

They are spawned, never forked: the parent may hold CUDA or OpenMP threads, which a fork copies
in a broken state. A spawned process normally re-runs the parent's main script to find its
functions, so a user's script without an `if __name__ == "__main__":` guard would start its
own work again in every worker (and fail). Every function a worker runs lives in `cgr`, so the
workers start with the main module hidden: a script runs as written, guarded or not.
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager

_MISSING = object()


@contextmanager
def _main_module_hidden() -> Iterator[None]:
    """While processes start, `__main__` names no file or module for spawn to re-run."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved = {k: main.__dict__.get(k, _MISSING) for k in ("__file__", "__spec__")}
    main.__dict__.pop("__file__", None)
    main.__dict__["__spec__"] = None
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is _MISSING:
                main.__dict__.pop(key, None)
            else:
                main.__dict__[key] = value


@contextmanager
def process_pool(workers: int, initializer=None, initargs=()) -> Iterator[ProcessPoolExecutor]:
    """A spawned ProcessPoolExecutor whose workers never re-run the main script; processes start
    inside the `with` body (at the first task), so the main module stays hidden through it."""
    context = multiprocessing.get_context("spawn")
    with (
        _main_module_hidden(),
        ProcessPoolExecutor(workers, context, initializer=initializer, initargs=initargs) as pool,
    ):
        yield pool
