"""What the generator backends, batching and the demonstration-prefix cache gain in IRCoT
generation on a CPU.

The prompts are those of IRCoT's first reasoning step on HotpotQA dev questions (demonstrations,
the question's K BM25 paragraphs, "A:"); each setting generates the first CoT sentence of every
prompt. Outputs are compared with transformers' plain one-by-one float32 run ("agree"). Prompt
tokens/s comes from a first pass that generates one token per prompt (the prompt's encoding);
generated tokens/s from the rest of the full pass's time. Both passes run after a warm-up pass
over the same prompts, so the demonstrations are already cached, as in every IRCoT step after
the first, and no pass pays for first-seen input shapes.

    .venv/bin/python benchmarks/ircot_generation.py [--n 8] [--backends transformers ctranslate2 llamacpp]
    .venv/bin/python benchmarks/ircot_generation.py --n 8 --table     # the saved result
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import ROOT, load_config, load_result, machine, print_table, save_result  # noqa: E402
from cgr.data.loaders import load_lenient  # noqa: E402
from cgr.data.root import data_path  # noqa: E402
from cgr.generation.config import GeneratorConfig, build_generator  # noqa: E402
from cgr.generation.generator import Generator  # noqa: E402
from cgr.ircot.demos import PromptBuilder, load_demonstrations  # noqa: E402
from cgr.retrieval.paragraphs import BM25ParagraphRetriever, as_paragraph, paragraph_corpus  # noqa: E402

DATA = "hotpotqa/ircot_processed_dev_subsampled.jsonl"  # under the data root
# (backend, batch size, reuse prefix cache, weights)
SETTINGS = [("transformers", 1, False, "float32"), ("transformers", 8, False, "float32"),
            ("transformers", 1, True, "float32"), ("transformers", 8, True, "float32"),
            ("transformers", 8, True, "bfloat16"), ("transformers", 1, True, "int8"), ("ctranslate2", 1, True, "int8"),
            ("llamacpp", 1, True, "GGUF Q4_1")]  # fmt: skip


def first_step_prompts(n: int, cfg: dict, count_tokens) -> tuple[list[str], str]:
    questions = load_lenient(str(data_path(DATA)), Counter())[:n]
    retriever = BM25ParagraphRetriever(paragraph_corpus(questions))
    demos = cfg["demos"]
    builder = PromptBuilder(load_demonstrations(ROOT / demos["file"]), count_tokens, "cot",
                            demos["distractors"], demos["token_budget"], demos["paragraph_words"])  # fmt: skip
    found = retriever.retrieve([q.question for q in questions], cfg["loop"]["k"])
    prompts = [
        builder.build(q.question, [as_paragraph(p) for p in f])
        for q, f in zip(questions, found, strict=True)
    ]
    return prompts, builder.prefix


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--backends", nargs="+", default=["transformers", "ctranslate2", "llamacpp"],
                        choices=["transformers", "ctranslate2", "llamacpp"])  # fmt: skip
    parser.add_argument("--table", action="store_true", help="only print the saved result")
    args = parser.parse_args()
    if args.table:
        if (saved := load_result(f"ircot_generation-hotpotqa-{args.n}")) is None:
            raise SystemExit(f"no saved result for --n {args.n}: run the benchmark first")
        print_result(saved)
        return
    cfg = load_config("configs/ircot_hotpotqa.yaml")
    max_new = cfg["generator"]["max_new_tokens"]
    reference = Generator(max_new_tokens=max_new, batch_size=1, reuse_prefix_cache=False)
    prompts, prefix = first_step_prompts(args.n, cfg, reference.count_tokens)
    prompt_tokens = sum(reference.count_tokens(p) for p in prompts) / len(prompts)
    rows, baseline, expected = [], None, None
    for backend, batch_size, reuse, weights in SETTINGS:
        if backend not in args.backends:
            continue
        # transformers' weights column is its dtype, or int8 (float32 with int8 linear layers)
        dtype, quantize = ("float32", "int8") if weights == "int8" else (weights, "none")
        if backend != "transformers":
            dtype, quantize = "float32", "none"
        # history_cache 0: every prompt here is a first step, so none may start from the cache
        # of an earlier pass over the same prompts (IRCoT's later steps do; not measured here)
        gen = build_generator(GeneratorConfig(backend=backend, max_new_tokens=max_new, batch_size=batch_size,
                                              reuse_prefix_cache=reuse, dtype=dtype, quantize=quantize,
                                              history_cache=0))  # fmt: skip
        shared = prefix if reuse else None
        # warm-up over every prompt: on some CPUs (oneDNN) the first forward of each new input
        # shape is several times slower, which would count against the prompt pass alone
        gen.generate(prompts, stop="none", max_new_tokens=1, prefix=shared)
        start = time.perf_counter()
        gen.generate(prompts, stop="none", max_new_tokens=1, prefix=shared)
        encode = time.perf_counter() - start
        start = time.perf_counter()
        outputs = gen.generate(prompts, stop="sentence", prefix=shared)
        seconds = time.perf_counter() - start
        getattr(gen, "close", lambda: None)()
        texts = [o.text for o in outputs]
        baseline = baseline or seconds
        if expected is None:  # transformers, one by one, float32, no cache: the reference
            expected = (
                texts
                if backend == "transformers"
                else [o.text for o in reference.generate(prompts)]
            )
        same = sum(a == b for a, b in zip(texts, expected, strict=True))
        tokens = sum(o.new_tokens for o in outputs)
        # the decoding rate is the full pass minus the prompt pass: when the prompt pass takes
        # nearly all of it (batched, no cache), the difference is noise, not a rate
        decoding = seconds - encode
        rate = tokens / decoding if decoding > 0.1 * seconds else "–"
        rows.append([backend, batch_size, "yes" if reuse else "no", weights, seconds / len(prompts), baseline / seconds,
                     prompt_tokens * len(prompts) / encode, rate,
                     tokens / len(outputs), f"{same}/{len(prompts)}"])  # fmt: skip
    result = {"n": len(prompts), "prompt_tokens": prompt_tokens, "prefix_tokens": reference.count_tokens(prefix),
              "rows": rows, "machine": machine()}  # fmt: skip
    save_result(f"ircot_generation-hotpotqa-{len(prompts)}", result)
    print_result(result)


def print_result(result: dict) -> None:
    print(f"IRCoT first-step generation, SmolLM2-135M-Instruct, {result['n']} HotpotQA dev prompts of "
          f"{result['prompt_tokens']:.0f} tokens on average ({result['prefix_tokens']} of them "
          f"demonstrations); {result['machine']}")  # fmt: skip
    print_table(["backend", "batch", "prefix cache", "weights", "s/prompt", "speed-up", "prompt tokens/s",
                 "generated tokens/s", "generated tokens/prompt", "agree with transformers fp32"],
                result["rows"])  # fmt: skip


if __name__ == "__main__":
    main()
