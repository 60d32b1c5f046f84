"""`cgr riches`: answer HotpotQA-style questions by one constrained decode each, retrieving the
corpus text the decode quotes (the pooled contexts of the file are the corpus)."""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from dataclasses import asdict
from typing import TYPE_CHECKING

from cgr.config_help import describe
from cgr.data.loaders import load_lenient
from cgr.errors import ConfigError, DataFormatError
from cgr.evaluation.qa_metrics import exact_match, f1_score, normalize_answer, paragraph_recall
from cgr.files import atomic_write_text, require_writable_dir
from cgr.generation.config import GeneratorConfig
from cgr.retrieval.open_corpus import add_corpus_argument
from cgr.retrieval.paragraphs import paragraph_corpus
from cgr.riches.config import DecodeConfig, RichesConfig
from cgr.riches.index import FMKeyIndex, TrieKeyIndex
from cgr.riches.keys import build_keys
from cgr.riches.prompts import RichesPrompt, parse_decode
from cgr.runs import partial_results, run_in_chunks
from cgr.validation import at_least, parsed

if TYPE_CHECKING:  # torch: imported once the command line has been checked
    from cgr.riches.decode import ConstrainedDecoder

log = logging.getLogger(__name__)


class RichesRunner:
    """Questions -> decodes -> records (the `runner.run` that `run_in_chunks` resumes)."""

    def __init__(
        self, decoder: ConstrainedDecoder, prompt: RichesPrompt, corpus, counters: Counter
    ):
        self.decoder, self.prompt, self.corpus, self.counters = decoder, prompt, corpus, counters

    def run(self, questions) -> list[dict]:
        return [self._one(q) for q in questions]

    def _one(self, q) -> dict:
        start = time.perf_counter()
        beam = self.decoder.decode(self.prompt.build(q.question))
        cfg = self.decoder.cfg
        texts, answer = parse_decode(beam.text, cfg.open_marker, cfg.close_marker)
        keys = []
        for text in texts:
            ids = self.decoder.index.paragraphs(text)
            keys.append(
                {"text": text, "paragraphs": ids, "titles": [self.corpus[i].title for i in ids]}
            )
        if not answer:
            self.counters["decodes_without_answer"] += 1
        titles = [t for k in keys for t in k["titles"]]
        gold_titles = {p.title for p in q.paragraphs if p.is_supporting}
        quoted = normalize_answer(" ".join(texts)).split()
        attributed = bool(answer) and all(tok in quoted for tok in normalize_answer(answer).split())
        return {
            "id": q.id, "question": q.question, "gold_answers": q.answers, "prediction": answer,
            "em": exact_match(answer, q.answers), "f1": f1_score(answer, q.answers),
            "hits": paragraph_recall(titles, gold_titles), "attributed_proxy": attributed,
            "decode": beam.text, "keys": keys, "generated_tokens": len(beam.ids),
            "seconds": time.perf_counter() - start,
        }  # fmt: skip


def build_parser():
    from jsonargparse import ActionConfigFile, ArgumentParser

    parser = ArgumentParser(prog="cgr riches", description="RICHES: retrieval by constrained decoding.",
                            allow_abbrev=False, exit_on_error=False)  # fmt: skip
    parser.add_argument("--config", action=ActionConfigFile)
    parser.add_argument("--data", type=str, required=True, help="HotpotQA/2Wiki/MuSiQue file")
    parser.add_argument(
        "--out", type=str, required=True, help="the run folder: predictions.jsonl, metrics.json"
    )
    parser.add_argument("--limit", type=int, default=0, help="the first N questions (0: all)")
    add_corpus_argument(parser)
    parser.add_dataclass_arguments(RichesConfig, "riches")
    describe(parser, "riches", RichesConfig)
    parser.add_dataclass_arguments(DecodeConfig, "decode")
    describe(parser, "decode", DecodeConfig)
    parser.add_dataclass_arguments(GeneratorConfig, "generator")
    describe(parser, "generator", GeneratorConfig)
    return parser


def build_index(cfg: RichesConfig, corpus, tokenizer, counters: Counter):
    keys = build_keys(corpus, cfg.key_kind)
    kept = [
        k
        for k in keys
        if len(tokenizer(k.text, add_special_tokens=False).input_ids) <= cfg.max_key_tokens
    ]
    counters["keys"] = len(kept)
    counters["keys_too_long"] = len(keys) - len(kept)
    if not kept:
        raise DataFormatError(
            "<corpus>",
            None,
            "keys",
            f"no {cfg.key_kind} key of at most {cfg.max_key_tokens} tokens",
        )
    return FMKeyIndex(kept, cfg.substrings) if cfg.index == "fm" else TrieKeyIndex(kept)


def main(argv: list[str]) -> int:
    args = parsed(lambda: build_parser().parse_args(argv), "cgr riches")
    # every setting checked before any file is read or model loads
    at_least("--limit", args.limit, 0)  # a negative one would drop questions from the end
    riches = parsed(lambda: RichesConfig(**vars(args.riches)), "cgr riches")
    gen = parsed(lambda: GeneratorConfig(**vars(args.generator)), "cgr riches")
    decode_cfg = parsed(lambda: DecodeConfig(**vars(args.decode)), "cgr riches")
    out = require_writable_dir(args.out, "--out")
    counters: Counter[str] = Counter()
    questions = load_lenient(args.data, counters)
    if args.limit:
        questions = questions[: args.limit]
    if args.corpus:  # the keys come from the whole corpus, not the questions' own contexts
        from cgr.retrieval.open_corpus import read_paragraphs

        corpus = read_paragraphs(args.corpus)
    else:
        corpus = paragraph_corpus(questions)
    if not corpus:
        raise DataFormatError(
            args.data,
            None,
            "context",
            f"no paragraph text in any of its {len(questions)} questions",
        )
    # torch and transformers: once settings and file passed
    from cgr.generation.generator import _load, resolve_generator
    from cgr.riches.decode import ConstrainedDecoder

    device = "cuda" if __import__("torch").cuda.is_available() else "cpu"
    tokenizer, model, seq2seq, _ = _load(
        *resolve_generator(gen.model, gen.gguf_file), device, gen.dtype, gen.quantize
    )
    if seq2seq:
        raise ConfigError(
            "cgr riches decodes with a causal LM (generator.model), not a seq2seq one"
        )
    index = build_index(riches, corpus, tokenizer, counters)
    decoder = ConstrainedDecoder(model, tokenizer, index, decode_cfg)
    prompt = RichesPrompt.from_file(riches.demos, riches.hops, riches.keywords)
    runner = RichesRunner(decoder, prompt, corpus, counters)
    partial = partial_results(out, argv)
    records = run_in_chunks(runner, questions, partial, 4, desc="riches")
    atomic_write_text(out / "predictions.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    partial.unlink(missing_ok=True)
    n = max(1, len(records))
    hits = [r["hits"] for r in records if r["hits"] is not None]
    summary = {"questions": len(records), "corpus_paragraphs": len(corpus),
               "seconds_per_question": sum(r["seconds"] for r in records) / n,
               "keys_per_question": sum(len(r["keys"]) for r in records) / n,
               "attributed_proxy": sum(r["attributed_proxy"] for r in records) / n,
               "settings": {"riches": asdict(riches), "decode": asdict(decode_cfg)}, **dict(counters)}  # fmt: skip
    atomic_write_text(out / "metrics.json", json.dumps(summary, indent=1) + "\n")
    for key, value in summary.items():
        if key != "settings":
            print(f"{key}: {value}")
    em, f1 = sum(r["em"] for r in records) / n, sum(r["f1"] for r in records) / n
    print(f"em: {em:.4f} f1: {f1:.4f} hits: {sum(hits) / len(hits) if hits else float('nan'):.4f}")
    return 0
