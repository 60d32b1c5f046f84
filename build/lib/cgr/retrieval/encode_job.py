"""`cgr encode`: the corpus embeddings as a Lightning `predict` job, spread over every device and
node the trainer is given (`trainer.devices=N trainer.num_nodes=M trainer.strategy=ddp`).

Each item is one chunk of the embedding cache; the rank that predicts it writes it (atomically)
and nothing is gathered, so memory stays flat and a killed job resumes with the missing chunks.
Rank zero then joins the chunks and builds the FAISS index next to them, so the next
`cgr train` loads both instead of encoding."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from cgr.data.corpus import Corpus
from cgr.errors import CGRError
from cgr.retrieval.embedding_cache import EmbeddingCache, cache_folder
from cgr.retrieval.encoders import load_sentence_encoder
from cgr.retrieval.factory import RetrievalConfig
from cgr.retrieval.index import FaissIndex

log = logging.getLogger(__name__)


class EncodeStopped(CGRError):
    exit_code = 143  # 128 + SIGTERM, as a shell reports a process the signal ended


class CorpusEncodingModule(pl.LightningModule):
    """The frozen evidence encoder; `predict_step` encodes one chunk and writes it."""

    def __init__(
        self, encoder: str, caches: list[EmbeddingCache], batch_size: int, max_length: int
    ):
        super().__init__()
        self.encoder = load_sentence_encoder(encoder)
        self.encoder.max_seq_length = max_length
        self.caches, self.batch_size = caches, batch_size

    @torch.no_grad()
    def predict_step(self, batch: list[tuple[int, int]], batch_idx: int) -> int:
        if self._trainer is not None and self.trainer.received_sigterm:
            # Lightning only notes SIGTERM during predict; stop at a chunk boundary instead of
            # running to the end: the chunks written are complete and kept for the next run
            raise EncodeStopped(
                f"stopped by SIGTERM after {batch_idx} chunk(s) of this run; the chunks written "
                "are kept, and running the same command again encodes the rest"
            )
        written = 0
        for cache_no, chunk in batch:
            cache = self.caches[cache_no]
            texts = cache.chunk_texts(chunk)
            vectors = self.encoder.encode(
                texts, batch_size=self.batch_size, device=str(self.device), convert_to_numpy=True,
                normalize_embeddings=True, show_progress_bar=False,
            )  # fmt: skip
            cache.write_chunk(chunk, vectors.astype("float32", copy=False))
            written += len(texts)
        return written


def encode_corpora(cfg: RetrievalConfig, trainer: pl.Trainer) -> list[EmbeddingCache]:
    """Encodes the missing chunks of the configured corpus (and open book) on `trainer`'s
    devices; returns the caches (complete on every rank after the job). Chunks have the size
    `cgr train` reads (EmbeddingCache's default)."""
    corpora = [Corpus.from_files(cfg.corpus)]
    if cfg.open_book:
        corpora.append(Corpus.from_files([cfg.open_book]))
    caches = [EmbeddingCache(cache_folder(cfg.cache_dir, cfg.encoder, c), cfg.encoder, c)
              for c in corpora]  # fmt: skip
    chunk_size = caches[0].chunk_size
    for cache in caches:
        cache.prepare()  # a cache for another corpus is refused before any work
    items = [(i, n) for i, cache in enumerate(caches) for n in cache.todo()]
    done = sum(c.num_chunks for c in caches) - len(items)
    log.info("encoding %d chunks of %d facts (%d already cached)", len(items), chunk_size, done)
    if items:
        # Lightning's predict sampler needs an item on every rank: with fewer chunks to write than
        # ranks (a small corpus, or a resumed job), some chunks are encoded twice; both ranks
        # write the same bytes, each through its own temporary file
        items = [items[i % len(items)] for i in range(max(len(items), trainer.world_size))]
        module = CorpusEncodingModule(
            cfg.encoder, caches, cfg.encode_batch_size, cfg.max_query_length
        )
        loader = DataLoader(items, batch_size=1, collate_fn=list)
        trainer.predict(module, loader, return_predictions=False)
        trainer.strategy.barrier()  # every rank's chunks written before anyone reads them
    return caches


def _overrides(args: list[str]) -> list[str]:
    """`trainer.devices=2` or `--trainer.devices=2` / `--trainer.devices 2`, as `cgr train`."""
    out = []
    for a in args:
        out.append(a if a.startswith("--") else f"--{a}")
    return out


def main(argv: list[str], resolve_config: Callable[..., dict]) -> int:
    """`resolve_config(path, *overrides)`: the training config as `cgr train` reads it (the CLI
    passes the training config resolver in, so retrieval imports nothing from training)."""
    parser = argparse.ArgumentParser(
        prog="cgr encode",
        description="Encode the retrieval corpus of a training config on every device given, "
        "then build its FAISS index (both cached for `cgr train`).",
        allow_abbrev=False,
    )
    parser.add_argument("--config", required=True, help="a training config (configs/*.yaml)")
    args, rest = parser.parse_known_args(argv)
    config = resolve_config(args.config, *_overrides(rest))
    retrieval = RetrievalConfig(**config["data"]["retrieval"])
    if retrieval.method not in {"dense", "beam"}:
        print(f"{args.config}: retrieval.method {retrieval.method} uses no corpus embeddings")
        return 0
    settings = config["trainer"]
    trainer = pl.Trainer(
        accelerator=settings.get("accelerator") or "auto",
        devices=settings.get("devices") or "auto",
        num_nodes=settings.get("num_nodes") or 1,
        strategy=settings.get("strategy") or "auto",
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
    )
    caches = encode_corpora(retrieval, trainer)
    if trainer.global_rank != 0:
        return 0
    spec = retrieval.index_spec()
    for cache in caches:
        FaissIndex.load_or_build(cache.folder, cache.load, spec, use_gpu=False)
        print(f"{cache.folder}: {len(cache.corpus)} vectors and the {retrieval.index} index")
    return 0
