"""`cgr ircot`: run IRCoT (or the OneR / NoR baselines) on a HotpotQA-style file."""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cgr.data.loaders import parse_open_question, read_utf8, require_file
from cgr.data.records import OpenQuestion
from cgr.errors import ConfigError, DataFormatError
from cgr.files import atomic_write_text, require_writable_dir
from cgr.ircot.loop import METHODS, IRCoTRunner, LoopConfig
from cgr.validation import at_least, one_of, parsed

log = logging.getLogger(__name__)


@dataclass
class GeneratorConfig:
    # transformers (any HF model; GGUF de-quantised) | ctranslate2 (converted once to int8) |
    # llamacpp (reads the GGUF as is); the two engines are several times faster on a CPU
    backend: Literal["transformers", "ctranslate2", "llamacpp"] = "transformers"
    model: str = "smollm2"  # packaged SmolLM2-135M-Instruct (GGUF), a hub name or a local folder
    gguf_file: str | None = None
    max_new_tokens: int = 48
    batch_size: int = 8
    reuse_prefix_cache: bool = True  # encode the demonstrations once, not once per prompt
    # bfloat16 is faster on CPUs with AVX512-BF16 / AMX, and on GPUs
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    # transformers: keep the caches of the last N prompts, so a question's next step encodes only
    # what its previous prompt did not hold; prompts then go one at a time (0: batches)
    history_cache: int = 8
    # transformers on a CPU: int8 weights for the linear layers (PyTorch dynamic quantisation);
    # decoding reads a quarter of the bytes per token; greedy outputs may differ from float32
    quantize: Literal["none", "int8"] = "none"

    def __post_init__(self) -> None:
        one_of("generator.backend", self.backend, ("transformers", "ctranslate2", "llamacpp"))
        one_of("generator.dtype", self.dtype, ("float32", "bfloat16", "float16"))
        at_least("generator.max_new_tokens", self.max_new_tokens, 1)
        at_least("generator.batch_size", self.batch_size, 1)
        at_least("generator.history_cache", self.history_cache, 0)
        one_of("generator.quantize", self.quantize, ("none", "int8"))
        if self.quantize != "none" and (self.backend != "transformers" or self.dtype != "float32"):
            raise ConfigError("generator.quantize int8 is for the transformers backend in float32 "
                              f"(got backend {self.backend}, dtype {self.dtype})")  # fmt: skip


def build_generator(cfg: GeneratorConfig):
    """The configured backend behind the one interface the loop uses (`generate`, `count_tokens`)."""
    if cfg.backend == "llamacpp":
        from cgr.ircot.llamacpp import LlamaCppGenerator

        return LlamaCppGenerator(cfg.model, cfg.gguf_file, cfg.max_new_tokens)
    if cfg.backend == "ctranslate2":
        from cgr.ircot.ct2 import CTranslate2Generator

        return CTranslate2Generator(cfg.model, cfg.gguf_file, cfg.max_new_tokens, cfg.batch_size)
    from cgr.ircot.generator import Generator

    return Generator(cfg.model, cfg.gguf_file, cfg.max_new_tokens, cfg.batch_size,
                     reuse_prefix_cache=cfg.reuse_prefix_cache, dtype=cfg.dtype,
                     history_cache=cfg.history_cache, quantize=cfg.quantize)  # fmt: skip


@dataclass
class DemoConfig:
    file: str = "data/ircot/demos.json"
    distractors: int = 1  # M
    token_budget: int = 1200
    paragraph_words: int = 350

    def __post_init__(self) -> None:
        at_least("demos.distractors", self.distractors, 0)
        at_least("demos.token_budget", self.token_budget, 1)
        at_least("demos.paragraph_words", self.paragraph_words, 1)


def load_lenient(path: str, counters: Counter) -> list[OpenQuestion]:
    """Every well-formed record; a malformed one is reported, counted and skipped."""
    p = require_file(path)
    text = read_utf8(p).lstrip()
    out: list[OpenQuestion] = []
    if text.startswith("["):
        try:
            records = json.loads(text)
        except json.JSONDecodeError as e:  # a truncated array cannot be read in part
            raise DataFormatError(str(p), e.lineno, "<json>", f"invalid JSON ({e.msg})") from None
        items = [(None, r) for r in records]
    else:
        items = []
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                items.append((lineno, json.loads(line)))
            except json.JSONDecodeError as e:
                counters["malformed_records"] += 1
                print(f"skipped: {p}:{lineno}: invalid JSON ({e.msg})")
    seen: set[str] = set()
    for n, (lineno, record) in enumerate(items):
        where = f"{p}:{lineno}" if lineno is not None else f"{p} [{n}]"
        try:
            if not isinstance(record, dict):
                raise DataFormatError(where, None, "<record>", "expected a JSON object")
            question = parse_open_question(record, str(p), lineno)
        except (DataFormatError, AttributeError, TypeError) as e:
            counters["malformed_records"] += 1
            print(f"skipped: {e}")
            continue
        if question.id in seen:
            counters["duplicate_ids"] += 1
            print(f"skipped: {where}: field 'id': {question.id!r} repeats an earlier record")
            continue
        seen.add(question.id)
        if not any(para.text.strip() for para in question.paragraphs):
            counters["questions_without_context"] += 1  # kept: NoR needs none; recall counts 0
        out.append(question)
    return out


def build_parser():
    from jsonargparse import ActionConfigFile, ArgumentParser

    parser = ArgumentParser(
        prog="cgr ircot",
        description="IRCoT / OneR / NoR few-shot QA.",
        allow_abbrev=False,
        exit_on_error=False,
    )
    parser.add_argument("--config", action=ActionConfigFile)
    parser.add_argument(
        "--data",
        type=str,
        required=True,
        help="HotpotQA/2Wiki/MuSiQue file (official or IRCoT jsonl)",
    )
    parser.add_argument("--out", type=str, required=True)
    parser.add_argument("--limit", type=int, default=0)
    # Literal types: jsonargparse prints them in --help (str + choices printed a lambda)
    parser.add_argument("--method", type=Literal[tuple(METHODS)], default="ircot")
    parser.add_argument("--retriever", type=Literal["bm25", "dense"], default="bm25")
    parser.add_argument("--dense_encoder", type=str, default="minilm")
    parser.add_dataclass_arguments(LoopConfig, "loop")
    parser.add_dataclass_arguments(GeneratorConfig, "generator")
    parser.add_dataclass_arguments(DemoConfig, "demos")
    return parser


def partial_results(out: Path, argv: list[str]) -> Path:
    """Where a run's finished questions go (OUT/.partial-KEY.jsonl, KEY a hash of the command
    line): the same command resumes them, any other starts anew."""
    return out / f".partial-{hashlib.sha256(chr(0).join(argv).encode()).hexdigest()[:12]}.jsonl"


def run_in_chunks(
    runner, questions: list, partial: Path, chunk: int, desc: str = "ircot"
) -> list[dict]:
    """Runs `chunk` questions at a time with a progress bar (questions done, s/question, ETA).
    Each finished chunk is appended to `partial`, so a killed run started again with the same
    command skips the questions it has; `main` removes it once predictions.jsonl is written."""
    from tqdm.auto import tqdm

    done: dict[str, dict] = {}
    cut_short = False  # the file ends inside a line (a kill during a write)
    if partial.exists():
        text = partial.read_text(encoding="utf-8")
        cut_short = bool(text) and not text.endswith("\n")
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:  # the line a kill cut short
                continue
            done[record["id"]] = record
        log.info(
            "resuming: %d of %d questions already answered (%s)", len(done), len(questions), partial
        )
    todo = [q for q in questions if q.id not in done]
    with tqdm(total=len(questions), initial=len(questions) - len(todo), unit="q", desc=desc) as bar, \
            partial.open("a", encoding="utf-8") as f:  # fmt: skip
        if cut_short:
            f.write("\n")  # start a fresh line after the one cut short
        for start in range(0, len(todo), chunk):
            for record in runner.run(todo[start : start + chunk]):
                done[record["id"]] = record
                f.write(json.dumps(record) + "\n")
            f.flush()
            bar.update(min(chunk, len(todo) - start))
    return [done[q.id] for q in questions]


def main(argv: list[str]) -> int:
    from cgr.ircot.demos import PromptBuilder, load_demonstrations
    from cgr.ircot.retrievers import (
        BM25ParagraphRetriever,
        DenseParagraphRetriever,
        paragraph_corpus,
    )

    args = parsed(lambda: build_parser().parse_args(argv), "cgr ircot")
    # every setting checked (the dataclasses' own rules) before any file is read or model loads
    at_least("--limit", args.limit, 0)
    loop = LoopConfig(**{**vars(args.loop), "method": args.method})
    gen_cfg = GeneratorConfig(**vars(args.generator))
    demo_cfg = DemoConfig(**vars(args.demos))
    out = require_writable_dir(args.out, "--out")  # before the models load, not after the run
    counters: Counter[str] = Counter()
    questions = load_lenient(args.data, counters)
    if args.limit:
        questions = questions[: args.limit]
    corpus = paragraph_corpus(questions)
    retriever = None
    if loop.method != "nor" and not corpus:
        raise DataFormatError(
            args.data,
            None,
            "context",
            f"no paragraph text in any of its {len(questions)} questions",
        )
    if loop.method != "nor":
        retriever = (
            BM25ParagraphRetriever(corpus)
            if args.retriever == "bm25"
            else DenseParagraphRetriever(corpus, args.dense_encoder)
        )
    generator = build_generator(gen_cfg)
    demos = load_demonstrations(demo_cfg.file)
    with_context = loop.method != "nor"

    def prompts(reader: str) -> PromptBuilder:
        return PromptBuilder(demos, generator.count_tokens, reader, demo_cfg.distractors, demo_cfg.token_budget,
                             demo_cfg.paragraph_words, with_context)  # fmt: skip

    direct = (
        prompts("direct") if loop.reader == "cot" and loop.answer_fallback == "direct" else None
    )
    runner = IRCoTRunner(retriever, generator, prompts("cot"), prompts(loop.reader), loop, direct)
    partial = partial_results(out, argv)
    # llama.cpp keeps one prompt cache: a question's steps run back to back there, so each step
    # reuses the previous prompt (demonstrations and paragraphs), not only the demonstrations
    chunk = 1 if gen_cfg.backend == "llamacpp" else max(8, gen_cfg.batch_size)
    records = run_in_chunks(runner, questions, partial, chunk)
    atomic_write_text(out / "predictions.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    partial.unlink(missing_ok=True)
    counters.update(runner.counters)
    n = max(1, len(records))
    recalls = [r["recall"] for r in records if r["recall"] is not None]
    summary = {
        "questions": len(records), "method": loop.method,
        "seconds_per_question": sum(r["seconds"] for r in records) / n,
        "generated_tokens_per_question": sum(r["generated_tokens"] for r in records) / n,
        # prompt tokens the model ran (what the caches did not hold); transformers backend
        "encoded_prompt_tokens_per_question": getattr(generator, "encoded_tokens", 0) / n,
        **dict(counters),
    }  # fmt: skip
    atomic_write_text(out / "metrics.json", json.dumps(summary, indent=1) + "\n")
    for key, value in summary.items():
        print(f"{key}: {value}")
    recall = sum(recalls) / len(recalls) if recalls else float("nan")
    em = sum(r["em"] for r in records) / n
    f1 = sum(r["f1"] for r in records) / n
    print(f"recall: {recall:.4f} em: {em:.4f} f1: {f1:.4f}")
    return 0
