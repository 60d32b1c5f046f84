"""`cgr longdoc`: evidence and answers for questions about long documents (QASPER), by D3 or
a baseline, with the paper's accounting: tokens the LM processed and LM calls per question."""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from dataclasses import asdict

from cgr.config_help import describe
from cgr.errors import ConfigError, DataFormatError
from cgr.files import atomic_write_text, require_writable_dir
from cgr.generation.config import GeneratorConfig, build_generator
from cgr.longdoc.config import LM_EVIDENCE, LongDocConfig, SummaryConfig
from cgr.longdoc.document import load_qasper
from cgr.runs import partial_results, run_in_chunks
from cgr.validation import at_least, parsed


def build_parser():
    from jsonargparse import ActionConfigFile, ArgumentParser

    parser = ArgumentParser(prog="cgr longdoc", description="Long-document QA: D3 and baselines.",
                            allow_abbrev=False, exit_on_error=False)  # fmt: skip
    parser.add_argument("--config", action=ActionConfigFile)
    parser.add_argument("--data", type=str, required=True, help="QASPER-format json file")
    parser.add_argument(
        "--out", type=str, required=True, help="the run folder: predictions.jsonl, metrics.json"
    )
    parser.add_argument("--limit", type=int, default=0, help="the first N questions (0: all)")
    parser.add_argument("--method", type=str, default=None, help="shorthand for --longdoc.method")
    parser.add_dataclass_arguments(LongDocConfig, "longdoc")
    describe(parser, "longdoc", LongDocConfig)
    parser.add_dataclass_arguments(SummaryConfig, "summaries")
    describe(parser, "summaries", SummaryConfig)
    parser.add_dataclass_arguments(GeneratorConfig, "generator")
    describe(parser, "generator", GeneratorConfig)
    return parser


def summarise(records: list[dict], summary_usage: Counter, documents: int) -> dict:
    n, nan = max(1, len(records)), float("nan")
    mean = lambda key: sum(r[key] for r in records) / n  # noqa: E731
    by_type: dict[str, list[float]] = defaultdict(list)
    for r in records:
        if r["answer_f1"] is not None and r["answer_type"]:
            by_type[r["answer_type"]].append(r["answer_f1"])
    answered = [r["answer_f1"] for r in records if r["answer_f1"] is not None]
    return {
        "questions": len(records), "documents": documents,
        "evidence_precision": mean("evidence_precision"), "evidence_recall": mean("evidence_recall"),
        "evidence_f1": mean("evidence_f1"),
        # nan when a resumed run holds records written before these were scored
        "evidence_f1_official": sum(r.get("evidence_f1_official", nan) for r in records) / n,
        "evidence_f1_official_text_only": sum(
            r.get("evidence_f1_official_text_only", nan) for r in records
        ) / n,
        "answer_f1": statistics.mean(answered) if answered else float("nan"),
        "answer_f1_by_type": {k: statistics.mean(v) for k, v in sorted(by_type.items())},
        "tokens_per_question": mean("tokens"), "calls_per_question": mean("calls"),
        "evidence_tokens_per_question": mean("evidence_tokens"),
        "evidence_calls_per_question": mean("evidence_calls"),
        "paragraphs_per_question": sum(len(r["paragraphs"]) for r in records) / n,
        "seconds_per_question": mean("seconds"),  # calls read from the cache at their first time
        "cache_hits_per_question": sum(r["usage"].get("cache_hits", 0) for r in records) / n,
        # LM summaries are written once per document (cached after): not in the per-question counts
        "summary_usage_this_run": dict(summary_usage),
    }  # fmt: skip


def main(argv: list[str]) -> int:
    args = parsed(lambda: build_parser().parse_args(argv), "cgr longdoc")
    at_least("--limit", args.limit, 0)  # a negative one would drop questions from the end
    out = require_writable_dir(args.out, "--out")
    settings = vars(args.longdoc)
    if args.method:
        settings = {**settings, "method": args.method}
    cfg = parsed(lambda: LongDocConfig(**settings), "cgr longdoc")
    summary_cfg = parsed(lambda: SummaryConfig(**vars(args.summaries)), "cgr longdoc")
    gen_cfg = parsed(lambda: GeneratorConfig(**vars(args.generator)), "cgr longdoc")
    if (
        cfg.select == "likelihood"
        and cfg.method.startswith("d3")
        and gen_cfg.backend != "transformers"
    ):
        raise ConfigError("longdoc.select likelihood scores names with the LM's logits: it needs "
                          f"generator.backend transformers, not {gen_cfg.backend!r}")  # fmt: skip
    questions = load_qasper(args.data)
    if args.limit:
        questions = questions[: args.limit]
    if not questions:
        raise DataFormatError(args.data, None, "qas", "no questions")
    # torch (the LM, the encoder): once the settings and the file passed
    from cgr.longdoc.methods import LongDocQA
    from cgr.longdoc.summaries import Summarizer

    needs_lm = cfg.method in LM_EVIDENCE or cfg.answer or summary_cfg.method == "lm"
    lm = None
    if needs_lm:
        from cgr.generation.counting import CountingLM

        gen_cfg.history_cache = 0  # prompts here share no start but the chat header
        signature = json.dumps(asdict(gen_cfg), sort_keys=True)
        lm = CountingLM(build_generator(gen_cfg), gen_cfg.model, cache=cfg.lm_cache or None,
                        signature=signature)  # fmt: skip
    summarizer = Summarizer(summary_cfg, lm)
    qa = LongDocQA(cfg, lm, summarizer)
    partial = partial_results(out, argv)
    records = run_in_chunks(qa, questions, partial, 4, desc=f"longdoc {cfg.method}")
    atomic_write_text(out / "predictions.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    partial.unlink(missing_ok=True)
    documents = len({r["paper"] for r in records})
    summary = summarise(records, summarizer.usage, documents)
    summary.update(qa.counters)
    summary["settings"] = {"longdoc": asdict(cfg), "summaries": asdict(summary_cfg),
                           "generator": asdict(gen_cfg) if needs_lm else None}  # fmt: skip
    atomic_write_text(out / "metrics.json", json.dumps(summary, indent=1) + "\n")
    for key, value in summary.items():
        if key != "settings":
            print(f"{key}: {value}")
    print(f"evidence_f1: {summary['evidence_f1']:.4f} answer_f1: {summary['answer_f1']:.4f} "
          f"tokens_per_question: {summary['tokens_per_question']:.1f}")  # fmt: skip
    return 0
