"""What batching and the demonstration-prefix key-value cache gain in IRCoT generation on a CPU.

The prompts are those of IRCoT's first reasoning step on HotpotQA dev questions (demonstrations,
the question's K BM25 paragraphs, "A:"); each setting generates the first CoT sentence of every
prompt with the default generator. Outputs are compared with the plain one-by-one run.

    .venv/bin/python benchmarks/ircot_generation.py [--n 16]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import ROOT, load_config, machine, print_table, save_result  # noqa: E402
from cgr.ircot.commands import load_lenient  # noqa: E402
from cgr.ircot.demos import PromptBuilder, load_demonstrations  # noqa: E402
from cgr.ircot.generator import Generator  # noqa: E402
from cgr.ircot.retrievers import BM25ParagraphRetriever, as_paragraph, paragraph_corpus  # noqa: E402

DATA = "../shared/data/hotpotqa/ircot_processed_dev_subsampled.jsonl"
# (batch size, reuse prefix cache, dtype)
SETTINGS = [(1, False, "float32"), (8, False, "float32"), (1, True, "float32"), (8, True, "float32"),
            (8, True, "bfloat16")]  # fmt: skip


def first_step_prompts(n: int, cfg: dict, count_tokens) -> tuple[list[str], str]:
    questions = load_lenient(str(ROOT / DATA), Counter())[:n]
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
    parser.add_argument("--n", type=int, default=16)
    args = parser.parse_args()
    cfg = load_config("configs/ircot_hotpotqa.yaml")
    max_new = cfg["generator"]["max_new_tokens"]
    reference = Generator(max_new_tokens=max_new, batch_size=1, reuse_prefix_cache=False)
    prompts, prefix = first_step_prompts(args.n, cfg, reference.count_tokens)
    prompt_tokens = sum(reference.count_tokens(p) for p in prompts) / len(prompts)
    rows, baseline, expected = [], None, None
    for batch_size, reuse, dtype in SETTINGS:
        gen = Generator(
            max_new_tokens=max_new, batch_size=batch_size, reuse_prefix_cache=reuse, dtype=dtype
        )
        start = time.perf_counter()
        outputs = gen.generate(prompts, stop="sentence", prefix=prefix)
        seconds = time.perf_counter() - start
        texts = [o.text for o in outputs]
        baseline, expected = baseline or seconds, expected or texts
        same = sum(a == b for a, b in zip(texts, expected, strict=True))
        tokens = sum(o.new_tokens for o in outputs) / len(outputs)
        rows.append([batch_size, "yes" if reuse else "no", dtype, seconds / len(prompts), baseline / seconds,
                     tokens, f"{same}/{len(prompts)}"])  # fmt: skip
    result = {"n": len(prompts), "prompt_tokens": prompt_tokens, "prefix_tokens": reference.count_tokens(prefix),
              "rows": rows, "machine": machine()}  # fmt: skip
    save_result(f"ircot_generation-hotpotqa-{len(prompts)}", result)
    print(f"IRCoT first-step generation, SmolLM2-135M-Instruct, {len(prompts)} HotpotQA dev prompts of "
          f"{prompt_tokens:.0f} tokens on average ({result['prefix_tokens']} of them demonstrations); {machine()}")  # fmt: skip
    print_table(["batch", "prefix cache", "dtype", "s/prompt", "speed-up", "generated tokens/prompt",
                 "same output as batch 1 plain"], rows)  # fmt: skip


if __name__ == "__main__":
    main()
