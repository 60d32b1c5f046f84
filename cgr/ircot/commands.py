"""`cgr ircot`: run IRCoT (or the OneR / NoR baselines) on a HotpotQA-style file."""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass
from typing import Literal

from cgr.config_help import describe
from cgr.data.loaders import load_lenient
from cgr.errors import DataFormatError
from cgr.files import atomic_write_text, require_writable_dir
from cgr.generation.config import GeneratorConfig, build_generator
from cgr.ircot.config import METHODS, LoopConfig
from cgr.retrieval.open_corpus import add_corpus_argument
from cgr.runs import partial_results, run_in_chunks
from cgr.validation import at_least, parsed

log = logging.getLogger(__name__)


@dataclass
class DemoConfig:
    file: str = "data/ircot/demos.json"  # demonstrations in IRCoT's annotation format (json)
    distractors: int = 1  # M
    token_budget: int = 1200  # tokens the demonstrations may take in a prompt
    paragraph_words: int = 350  # a demonstration paragraph cut to this many words

    def __post_init__(self) -> None:
        at_least("demos.distractors", self.distractors, 0)
        at_least("demos.token_budget", self.token_budget, 1)
        at_least("demos.paragraph_words", self.paragraph_words, 1)


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
    parser.add_argument(
        "--out",
        type=str,
        required=True,
        help="the run folder: predictions.jsonl, metrics.json, partial results",
    )
    parser.add_argument("--limit", type=int, default=0, help="the first N questions (0: all)")
    add_corpus_argument(parser)
    # Literal types: jsonargparse prints them in --help (str + choices printed a lambda)
    parser.add_argument(
        "--method",
        type=Literal[tuple(METHODS)],
        default="ircot",
        help="ircot (interleaved CoT and retrieval), oner (one retrieval), nor (no "
        "retrieval), beam / chains (CGR's paths over the paragraphs, no LM while "
        "retrieving)",
    )
    parser.add_argument(
        "--retriever",
        type=Literal["bm25", "dense", "elasticsearch"],
        default="bm25",
        help="bm25 (bm25s), dense (--dense_encoder with FAISS) or elasticsearch (BM25 from an "
        "existing Elasticsearch / OpenSearch index: --es_url, --es_index)",
    )
    parser.add_argument(
        "--es_url", type=str | None, default=None,
        help="--retriever elasticsearch: the server, e.g. http://localhost:9200",
    )  # fmt: skip
    parser.add_argument(
        "--es_index", type=str | None, default=None,
        help="--retriever elasticsearch: the index of paragraphs (title, paragraph_text)",
    )  # fmt: skip
    parser.add_argument(
        "--es_api_key_env", type=str, default="ES_API_KEY",
        help="--retriever elasticsearch: the environment variable holding an API key, if any",
    )  # fmt: skip
    parser.add_argument(
        "--es_title_too", type=bool, default=False,
        help="--retriever elasticsearch: match the query against titles as well as texts",
    )  # fmt: skip
    parser.add_argument(
        "--dense_encoder",
        type=str,
        default="minilm",
        help="the dense retriever's encoder: packaged name, hub name or folder",
    )
    parser.add_dataclass_arguments(LoopConfig, "loop")
    describe(parser, "loop", LoopConfig)
    parser.add_dataclass_arguments(GeneratorConfig, "generator")
    describe(parser, "generator", GeneratorConfig)
    parser.add_dataclass_arguments(DemoConfig, "demos")
    describe(parser, "demos", DemoConfig)
    return parser


def chain_prediction(record: dict, corpus: list) -> dict:
    """An open-QA prediction as the chains page draws a multiple-choice one: the answer is the
    one choice, its chains run question -> paragraph -> paragraph -> answer."""
    texts = {p.title: p.text for p in corpus}
    chains = [c for step in record["steps"] for c in step.get("chains", [])]
    answer = record["prediction"] or ""
    drawn = [{"facts": c["paragraphs"], "texts": [f"{t}: {texts.get(t, '')}" for t in c["paragraphs"]],
              "links": [*(c["links"] or [""] * len(c["paragraphs"])), ""]} for c in chains]  # fmt: skip
    read = [{"fact_id": t, "text": f"{t}: {texts.get(t, '')}", "step": 1, "source": "corpus"}
            for t in record["paragraphs"]]  # fmt: skip
    correct = bool(record["em"]) if record["gold_answers"] else None
    choice = {"label": "A", "text": answer, "score": record["f1"], "hypothesis": record["question"],
              "chains": drawn, "facts": read}  # fmt: skip
    return {"id": record["id"], "question": record["question"], "predicted": "A",
            "answer": "A" if correct else None, "correct": correct, "choices": [choice]}  # fmt: skip


def _elasticsearch(args, loop):
    """The Elasticsearch retriever, its settings checked before any model loads."""
    from cgr.errors import ConfigError
    from cgr.retrieval.elasticsearch import ElasticsearchRetriever

    if not args.es_url or not args.es_index:
        raise ConfigError("--retriever elasticsearch needs --es_url and --es_index")
    if loop.method not in {"ircot", "oner"} or loop.query != "cot" or args.corpus:
        raise ConfigError("--retriever elasticsearch runs --method ircot or oner with "
                          "--loop.query cot and no --corpus (the index holds the corpus)")  # fmt: skip
    retriever = ElasticsearchRetriever(args.es_url, args.es_index, args.es_api_key_env,
                                       args.es_title_too)  # fmt: skip
    log.info("elasticsearch: %d paragraphs in %s/%s", retriever.check(), args.es_url,
             args.es_index)  # fmt: skip
    return retriever


def main(argv: list[str]) -> int:
    from cgr.ircot.demos import PromptBuilder, load_demonstrations
    from cgr.retrieval.paragraphs import (
        BeamParagraphRetriever,
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
    es = args.retriever == "elasticsearch" and loop.method != "nor"
    if es:
        es_retriever = _elasticsearch(args, loop)
    if args.corpus:  # the open setting: the whole corpus, not the questions' own contexts
        from cgr.retrieval.open_corpus import read_paragraphs

        corpus = read_paragraphs(args.corpus)
    else:
        corpus = paragraph_corpus(questions)
    retriever = None
    if loop.method != "nor" and not corpus and not es:
        raise DataFormatError(
            args.data,
            None,
            "context",
            f"no paragraph text in any of its {len(questions)} questions",
        )
    from cgr.ircot.loop import IRCoTRunner  # torch and transformers: once settings and file passed

    if loop.method == "beam":  # dense by nature: --retriever does not apply
        retriever = BeamParagraphRetriever(
            corpus, args.dense_encoder, loop.beam_size, loop.beam_steps
        )
    elif loop.method == "chains":
        from cgr.chains.hops import ChainHopRetriever

        retriever = ChainHopRetriever(corpus, args.dense_encoder, loop.beam_size)
    elif loop.method != "nor":
        if es:  # the paragraphs live in the index; the question's own are not searched
            retriever = es_retriever
        elif args.retriever == "dense":
            retriever = DenseParagraphRetriever(corpus, args.dense_encoder)
        elif args.corpus:  # its index saved beside the corpus, memory-mapped on later runs
            from cgr.retrieval.open_corpus import BM25CorpusRetriever

            retriever = BM25CorpusRetriever(args.corpus, corpus)
        else:
            retriever = BM25ParagraphRetriever(corpus)
    generator = build_generator(gen_cfg)
    demos = load_demonstrations(demo_cfg.file)
    with_context = loop.method != "nor"

    def prompts(reader: str) -> PromptBuilder:
        return PromptBuilder(demos, generator.count_tokens, reader, demo_cfg.distractors, demo_cfg.token_budget,
                             demo_cfg.paragraph_words, with_context)  # fmt: skip

    direct = (
        prompts("direct") if loop.reader == "cot" and loop.answer_fallback == "direct" else None
    )
    frontier = None
    if loop.method == "ircot" and loop.query != "cot":
        from cgr.chains.hops import FrontierFinder

        frontier = FrontierFinder(corpus=corpus)
    runner = IRCoTRunner(retriever, generator, prompts("cot"), prompts(loop.reader), loop, direct,
                         frontier)  # fmt: skip
    partial = partial_results(out, argv)
    # llama.cpp keeps one prompt cache: a question's steps run back to back there, so each step
    # reuses the previous prompt (demonstrations and paragraphs), not only the demonstrations. A
    # server gets `generator.concurrency` questions at a time, so each in-flight question keeps
    # a slot whose cache holds its own previous prompt (8 interleaved questions on one llama.cpp
    # slot re-encoded every prompt: 35.6 s a question against 15.1 one at a time, 10 questions)
    if gen_cfg.backend == "llamacpp":
        chunk = 1
    elif gen_cfg.backend == "openai":
        chunk = gen_cfg.concurrency
    else:
        chunk = max(8, gen_cfg.batch_size)
    records = run_in_chunks(runner, questions, partial, chunk)
    atomic_write_text(out / "predictions.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    if loop.method in {"beam", "chains"}:
        from cgr.chains.export import write_exports

        _, page = write_exports([chain_prediction(r, corpus) for r in records], out / "chains")
        print(f"chains: {page} (open it in a browser)")
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
