"""A chain ranker: the base sentence encoder fine-tuned on a training file's gold facts, so that
the chain shown first runs through the fact that answers the question.

Why: chains are ranked by their facts' relevance to "question choice" (`chain_order:
open_book | relevance`), and the base encoder's relevance has reached what it can: no
re-ranking of the same chains by its cosine, by BM25 or by contrast with the other choices put
the gold fact first more often (OBQA dev, docs/chains.md). A ranker trained on the training
questions' gold facts ranks them by what the field's data says answers a question.

`cgr ranker` fits it with Lightning over ("question choice", gold fact) pairs of the right
answers, the other pairs of a batch as negatives (sentence-transformers'
MultipleNegativesRankingLoss; a batch never holds one fact twice, so no gold fact is its own
negative), and saves a sentence-transformers folder; `data.chains.rank_encoder` names it. It
ranks the chains only: the pools, the facts the reader reads and Ê stay the evidence encoder's.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
from dataclasses import asdict, dataclass
from pathlib import Path

import pytorch_lightning as pl
import torch

from cgr.data.records import Question
from cgr.errors import ConfigError, DataFormatError
from cgr.fitting import fit_one
from cgr.retrieval.encoders import TextEncoder
from cgr.validation import at_least, positive

log = logging.getLogger(__name__)

RANKER_FILE = "ranker.json"  # what a ranker folder was trained on, beside the model's files


@dataclass
class RankerConfig:
    # 3: the similar_links chain shown first held the gold fact for 55.4 against 54.4 % of OBQA
    # dev questions after 1 (+1.0 [-0.9, +2.9] paired; ARC dev 52.8 against 53.4, -0.6 [-2.4,
    # +1.2]; benchmarks/chain_quality.py): neither shows a difference; the loss still fell
    epochs: int = 3
    batch_size: int = 32
    lr: float = 2e-5
    scale: float = 20.0  # the loss's cosine scale (sentence-transformers' default)
    max_length: int = 128
    seed: int = 0
    # per pair, the book facts the base encoder ranks highest for the query that are none of
    # its question's gold facts, read as more negatives (DPR's hard negatives). 0, in-batch
    # only: with 1 (one epoch) the similar_links chain shown first held the gold fact for 53.0
    # against 54.4 % of OBQA dev questions (benchmarks/chain_quality.py --rank-encoder)
    hard_negatives: int = 0

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "max_length"):
            at_least(f"ranker {name}", getattr(self, name), 1)
        at_least("ranker hard_negatives", self.hard_negatives, 0)
        positive("ranker lr", self.lr)
        positive("ranker scale", self.scale)


def ranker_pairs(questions: list[Question]) -> list[tuple[str, str]]:
    """("question choice", gold fact) for each right answer and each of its gold facts: the
    query the chain order asks (`evidence.order: question_choice`) and what should rank first."""
    pairs = []
    for q in questions:
        if q.answer_index is None:
            continue
        query = f"{q.stem} {q.choices[q.answer_index].text}"  # as relevance_queries asks
        pairs += [(query, fact) for fact in dict.fromkeys(q.gold_facts)]
    return pairs


def batches(rows: list[tuple[str, ...]], size: int, seed: int) -> list[list[tuple[str, ...]]]:
    """Shuffled batches of (query, gold fact, negatives...) in which no fact and no query
    appears twice: a query's gold fact read again as another row's negative, or a second gold
    fact of the same query (WorldTree lists several), would be scored as its negative; a row
    that fits no open batch starts a new one."""
    order = list(rows)
    random.Random(seed).shuffle(order)
    out: list[list[tuple[str, ...]]] = []
    facts: list[set[tuple[str, str]]] = []
    for row in order:
        mine = {("query", row[0])} | {("fact", f) for f in row[1:]}
        for batch, seen in zip(out, facts, strict=True):
            if len(batch) < size and not mine & seen:
                batch.append(row)
                seen |= mine
                break
        else:
            out.append([row])
            facts.append(mine)
    return out


def with_hard_negatives(
    questions: list[Question], book: list[str], encode, count: int
) -> list[tuple[str, ...]]:
    """(query, gold fact, `count` hard negatives) per pair: the book facts `encode` (the base
    encoder, texts -> unit vectors) ranks highest for the query, none of its question's gold."""
    import numpy as np

    from cgr.data.records import text_key

    asked = [(q, pairs) for q in questions if (pairs := ranker_pairs([q]))]
    if count == 0 or not book:
        return [pair for _, pairs in asked for pair in pairs]
    scores = np.asarray(encode([pairs[0][0] for _, pairs in asked])) @ np.asarray(encode(book)).T
    rows = []
    for (q, pairs), row in zip(asked, scores, strict=True):
        gold = {text_key(f) for f in q.gold_facts}
        top = np.argsort(-row)[: count + len(gold)]
        negatives = [book[i] for i in top if text_key(book[i]) not in gold][:count]
        rows += [(query, fact, *negatives) for query, fact in pairs]
    return rows


class RankerModule(pl.LightningModule):
    """The encoder and its loss; one step encodes a batch's queries and facts."""

    def __init__(self, encoder: str, cfg: RankerConfig):
        super().__init__()
        from sentence_transformers.sentence_transformer.losses import (
            MultipleNegativesRankingLoss,
        )

        from cgr.retrieval.encoders import load_sentence_encoder

        self.cfg = cfg
        self.model = load_sentence_encoder(encoder)
        self.model.max_seq_length = cfg.max_length
        self.model.train()  # a loaded model may come in eval mode: fine-tune with its dropout
        self.loss = MultipleNegativesRankingLoss(
            self.model, scale=cfg.scale, gather_across_devices=torch.distributed.is_initialized()
        )

    def _features(self, texts: list[str]) -> dict[str, torch.Tensor]:
        features = self.model.preprocess(list(texts))
        return {k: v.to(self.device) if torch.is_tensor(v) else v for k, v in features.items()}

    def training_step(self, batch: list[tuple[str, ...]], batch_idx: int) -> torch.Tensor:
        columns = zip(*batch, strict=True)  # queries, gold facts, hard negatives
        loss = self.loss([self._features(column) for column in columns], None)
        self.log("ranker_loss", loss, prog_bar=True, batch_size=len(batch))
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.model.parameters(), lr=self.cfg.lr)


def train_ranker(
    pairs: list[tuple[str, ...]], encoder: str, out: Path, cfg: RankerConfig, **trainer
) -> dict:
    """Fits the ranker on `pairs` ((query, gold fact, hard negatives...)) and saves it to `out` (a sentence-transformers folder with
    RANKER_FILE); `trainer`: pl.Trainer arguments (devices, accelerator)."""
    pl.seed_everything(cfg.seed, workers=True, verbose=False)
    module = RankerModule(encoder, cfg)
    loader = torch.utils.data.DataLoader(
        batches(pairs, cfg.batch_size, cfg.seed), batch_size=None, shuffle=False
    )
    fit, loss = fit_one(module, loader, cfg.epochs, "ranker_loss", **trainer)
    info = {"base_encoder": encoder, "pairs": len(pairs), **asdict(cfg), "last_loss": loss}
    if fit.is_global_zero:
        out.mkdir(parents=True, exist_ok=True)
        module.model.save(str(out))
        (out / RANKER_FILE).write_text(json.dumps(info, indent=2) + "\n")
    return info


def fingerprint(name: str) -> str:
    """A ranker's name with a hash of its weights where it is a local folder (chain cache keys:
    a ranker retrained into the same folder ranks anew)."""
    import hashlib

    folder = Path(name)
    if not folder.is_dir():
        return name
    h = hashlib.sha256()
    for path in sorted(folder.glob("*.safetensors")) + sorted(folder.glob("*.bin")):
        with path.open("rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    return f"{name}@{h.hexdigest()[:12]}"


def book_texts(config: dict) -> list[str]:
    """The facts hard negatives come from: the chains' book (`data.chains.book`, WorldTree's
    tablestore for ARC), else the open book: the facts `chain_order: open_book` ranks first."""
    from cgr.data.corpus import Corpus

    data = config["data"]
    from cgr.chains.builder import ChainConfig

    book = ChainConfig(chain_order="open_book", book=(data.get("chains") or {}).get("book"))
    files = book.book_files(data["retrieval"].get("open_book"))  # the chain order's own rule
    return Corpus.from_files(files).texts if files else []


def training_questions(config: dict) -> list[Question]:
    """The config's training questions with their gold facts (OBQA's fact1 inline, WorldTree's
    explanations through data.gold_facts_files), checked before any model loads."""
    from cgr.data.gold import attach_gold_facts
    from cgr.data.loaders import load_multiple_choice

    data = config["data"]
    files = data["train_file"] if isinstance(data["train_file"], list) else [data["train_file"]]
    questions = [q for path in files for q in load_multiple_choice(path)]
    if data.get("gold_facts_files"):
        attach_gold_facts(questions, list(data["gold_facts_files"]))
    if not ranker_pairs(questions):
        raise DataFormatError(
            ", ".join(files), None, "fact1/gold_facts",
            "no question with an answer key and a gold fact to train a ranker on",
        )  # fmt: skip
    return questions


def main(argv: list[str], resolve) -> int:
    """`cgr ranker --config CFG --out DIR`: trains a chain ranker on the config's train file."""
    parser = argparse.ArgumentParser(prog="cgr ranker", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True, help="a training config (its train file)")
    parser.add_argument("--out", required=True, type=Path, help="the ranker's folder")
    parser.add_argument("--encoder", help="the encoder to fine-tune (default: the config's)")
    parser.add_argument(
        "--epochs",
        type=int,
        default=RankerConfig.epochs,
        help="passes over the (hypothesis, gold fact) pairs (default: %(default)s)",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=RankerConfig.batch_size,
        help="pairs per step, the in-batch negatives (default: %(default)s)",
    )
    parser.add_argument(
        "--lr",
        type=float,
        default=RankerConfig.lr,
        help="AdamW learning rate (default: %(default)s)",
    )
    parser.add_argument(
        "--seed", type=int, default=RankerConfig.seed, help="the run's seed (default: %(default)s)"
    )
    parser.add_argument("--accelerator", default="auto", help="pl.Trainer's (cpu, gpu, auto)")
    parser.add_argument("--hard-negatives", type=int, default=RankerConfig.hard_negatives,
                        help="per pair, this many of the book's facts the base encoder ranks "
                             "highest that are not gold (0: in-batch negatives only)")  # fmt: skip
    args = parser.parse_args(argv)
    cfg = RankerConfig(args.epochs, args.batch_size, args.lr, seed=args.seed,
                       hard_negatives=args.hard_negatives)  # fmt: skip
    if args.out.exists() and any(args.out.iterdir()) and not (args.out / RANKER_FILE).exists():
        raise ConfigError(f"{args.out}: a folder that is not a ranker's; give an empty or new one")
    config = resolve(args.config)
    questions = training_questions(config)
    encoder = args.encoder or config["data"]["retrieval"]["encoder"]
    rows = with_hard_negatives(questions, book_texts(config), TextEncoder(encoder).encode,
                               cfg.hard_negatives)  # fmt: skip
    info = train_ranker(rows, encoder, args.out, cfg, accelerator=args.accelerator, devices=1)
    log.info("ranker trained on %d pairs, last loss %.3f: %s", len(rows), info["last_loss"],
             args.out)  # fmt: skip
    print(args.out)
    return 0
