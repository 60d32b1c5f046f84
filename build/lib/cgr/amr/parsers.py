"""Choosing a backend and parsing through the shared cache."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cgr.amr.cache import ParseCache
from cgr.errors import ConfigError


class AMRParser(Protocol):
    name: str

    def parse(self, sentences: list[str]) -> list[str | None]:
        """PENMAN strings (with a `# ::snt` line), None where a sentence could not be parsed."""
        ...


@dataclass
class AMRConfig:
    """`data.chains.amr`: which parser and where its cache lives."""

    backend: str = "embedded"  # embedded | amrlib
    model_dir: str | None = None  # amrlib model folder (amrlib_meta.json inside)
    batch_size: int = 256
    cache: str = ".cache/cgr/amr.sqlite"


def build_parser(
    backend: str = "embedded", model_dir: str | None = None, batch_size: int = 256
) -> AMRParser:
    if backend == "embedded":
        from cgr.amr.embedded import EmbeddedParser

        return EmbeddedParser(batch_size)
    if backend == "amrlib":
        if not model_dir:
            raise ConfigError(
                "the amrlib backend needs a model folder (--model-dir / amr.model_dir)"
            )
        from cgr.amr.amrlib_backend import AmrlibParser

        return AmrlibParser(model_dir, batch_size=min(batch_size, 32))
    raise ConfigError(f"AMR backend must be 'embedded' or 'amrlib', not {backend!r}")


class CachedParser:
    """A parser behind the persistent cache: what every step (chains, CLI, benchmarks) uses.
    `workers` > 1: the embedded parser runs in that many processes (spaCy on every core); a
    sentence's graph does not depend on the batch it is parsed in."""

    def __init__(self, cfg: AMRConfig, progress: bool = True, workers: int = 1):
        self.cfg = cfg
        self.parser = build_parser(cfg.backend, cfg.model_dir, cfg.batch_size)
        self.cache = ParseCache(Path(cfg.cache))
        self.progress = progress
        self.workers = workers if cfg.backend == "embedded" else 1  # amrlib: one GPU model

    def parse(self, sentences: list[str]) -> list[str | None]:
        if self.workers <= 1:
            return self.cache.parse(
                self.parser.name, sentences, self.parser.parse, self.cfg.batch_size, self.progress
            )
        from cgr.workers import process_pool

        # processes start at the first uncached batch: a fully cached parse starts none
        with process_pool(self.workers, _start_worker, (self.cfg.batch_size,)) as pool:
            size = self.cfg.batch_size

            def parse_batch(chunk: list[str]) -> list[str | None]:
                parts = [chunk[i : i + size] for i in range(0, len(chunk), size)]
                return [g for part in pool.map(_parse_in_worker, parts) for g in part]

            return self.cache.parse(
                self.parser.name, sentences, parse_batch, size * self.workers, self.progress
            )


_WORKER_PARSER = None


def _start_worker(batch_size: int) -> None:
    global _WORKER_PARSER
    from cgr.amr.embedded import EmbeddedParser

    _WORKER_PARSER = EmbeddedParser(batch_size)


def _parse_in_worker(sentences: list[str]) -> list[str | None]:
    return _WORKER_PARSER.parse(sentences)
