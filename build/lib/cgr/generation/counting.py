"""A generator with an account of every call (D3's "tokens processed" and "API calls") and the
generation cache; instructions in the model's chat format. The long-document methods call it.

Any backend of cgr.generation (transformers, ctranslate2, llama.cpp) works: they share
`generate(prompts, stop, max_new_tokens)`, `count_tokens` and `tokenizer`.

With a `cache` (sqlite, the AMR parse cache's table), every generation is stored under a hash of
the generator's settings, the prompt, the stop rule and the token limit, with the seconds it
took. Decoding is greedy, so a stored output is what the LM would write again: methods that
share calls (MAP-REDUCE's first stage is CHUNK; D3's variants ask for the same sections) and
re-runs read them instead of decoding again. A cached call still counts as processed (its calls
and tokens, and its first-measured seconds under `cache_seconds`), so the accounting of a method
does not depend on what ran before it."""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from pathlib import Path

import torch

from cgr.errors import ConfigError


class CountingLM:
    def __init__(self, generator, name: str, chat: bool = True, cache: str | Path | None = None,
                 signature: str = ""):  # fmt: skip
        """`signature`: everything about the generator that changes its outputs (backend,
        weights, dtype...), so a cache shared by several configurations never mixes them."""
        self.generator, self.name = generator, name
        tokenizer = getattr(generator, "tokenizer", None)
        self.chat = chat and bool(getattr(tokenizer, "chat_template", None))
        self.max_input_tokens = int(getattr(generator, "max_input_tokens", 2048))
        self.namespace = "generation:" + hashlib.sha256(f"{name}\n{signature}".encode()).hexdigest()[:24]  # fmt: skip
        self._cache = None
        if cache:
            from cgr.amr.cache import ParseCache

            self._cache = ParseCache(cache)

    def prompt(self, instruction: str) -> str:
        """The instruction as the model expects a user turn (its chat template, if it has one)."""
        if not self.chat:
            return instruction + "\n"
        return self.generator.tokenizer.apply_chat_template(
            [{"role": "user", "content": instruction}], tokenize=False, add_generation_prompt=True
        )

    def count(self, text: str) -> int:
        return self.generator.count_tokens(text)

    def truncate(self, text: str, tokens: int) -> str:
        """`text` cut to its first `tokens` tokens (whole words)."""
        if self.count(text) <= tokens:
            return text
        words = text.split()
        low, high = 0, len(words)
        while low < high:  # the most words that fit
            mid = (low + high + 1) // 2
            if self.count(" ".join(words[:mid])) <= tokens:
                low = mid
            else:
                high = mid - 1
        return " ".join(words[:low])

    def ask(self, instructions: list[str], max_new_tokens: int, stage: str,
            usage: Counter | None = None, stop: str = "answer") -> list[str]:  # fmt: skip
        """One call per instruction; `usage` (per question) counts calls, prompt tokens and
        generated tokens under `stage`."""
        if not instructions:
            return []
        prompts = [self.prompt(i) for i in instructions]
        outputs = self._generate(prompts, stop, max_new_tokens, usage)
        if usage is not None:
            usage[f"{stage}_calls"] += len(prompts)
            usage[f"{stage}_prompt_tokens"] += sum(self.count(p) for p in prompts)
            usage[f"{stage}_generated_tokens"] += sum(o["new_tokens"] for o in outputs)
        return [o["text"] for o in outputs]

    def _generate(self, prompts: list[str], stop: str, max_new_tokens: int,
                  usage: Counter | None) -> list[dict]:  # fmt: skip
        """text, new_tokens and seconds per prompt: from the cache when it holds them (their
        seconds are added to `usage["cache_seconds"]`), else decoded now (and stored)."""

        def decode(batch: list[str]) -> list[dict]:
            start = time.perf_counter()
            out = self.generator.generate(batch, stop=stop, max_new_tokens=max_new_tokens)
            each = (time.perf_counter() - start) / len(batch)
            return [{"text": o.text, "new_tokens": o.new_tokens, "seconds": each} for o in out]

        if self._cache is None:
            return decode(prompts)
        keys = [
            hashlib.sha256(json.dumps([p, stop, max_new_tokens]).encode()).hexdigest()
            for p in prompts
        ]
        stored = self._cache.get_many(self.namespace, keys)
        if usage is not None:
            for key in keys:
                if key in stored:
                    usage["cache_hits"] += 1
                    usage["cache_seconds"] += json.loads(stored[key])["seconds"]
        by_key = dict(zip(keys, prompts, strict=True))
        found = self._cache.parse(
            self.namespace, keys, lambda todo: [json.dumps(o) for o in decode([by_key[k] for k in todo])],
            batch_size=len(keys), progress=False, known=stored,
        )  # fmt: skip
        return [json.loads(o) for o in found]

    @torch.no_grad()
    def option_scores(self, instruction: str, options: list[str], stage: str,
                      usage: Counter | None = None) -> list[float]:  # fmt: skip
        """Mean log-probability of each option as the start of the LM's answer: the prompt is
        encoded once, then every option's tokens in one batch from a copy of its cache. For
        small LMs that rank the right names but do not write them (transformers backend)."""
        model = getattr(self.generator, "model", None)
        if model is None or getattr(self.generator, "seq2seq", False):
            raise ConfigError("scoring options needs a decoder-only LM on the transformers backend")
        tokenizer = self.generator.tokenizer
        prompt = tokenizer(self.prompt(instruction), add_special_tokens=False, return_tensors="pt")
        ids = prompt.input_ids[:, -self.max_input_tokens :].to(model.device)
        out = model(input_ids=ids, use_cache=True)
        first = out.logits[0, -1].float().log_softmax(-1)
        tokens = [
            tokenizer(o, add_special_tokens=False).input_ids or [tokenizer.eos_token_id]
            for o in options
        ]
        length = max(len(t) for t in tokens)
        batch = torch.full((len(tokens), length), tokenizer.pad_token_id or 0, device=model.device)
        mask = torch.zeros((len(tokens), length), dtype=torch.long, device=model.device)
        for row, t in enumerate(tokens):
            batch[row, : len(t)] = torch.tensor(t)
            mask[row, : len(t)] = 1
        cache = out.past_key_values
        cache.batch_repeat_interleave(len(tokens))
        attention = torch.cat(
            [torch.ones((len(tokens), ids.shape[1]), dtype=torch.long, device=model.device), mask],
            1,
        )
        logits = model(
            input_ids=batch, past_key_values=cache, attention_mask=attention
        ).logits.float()
        logprobs = logits.log_softmax(-1)
        scores = []
        for row, t in enumerate(tokens):
            total = first[t[0]] + sum(logprobs[row, i - 1, t[i]] for i in range(1, len(t)))
            scores.append(float(total) / len(t))
        if usage is not None:
            usage[f"{stage}_calls"] += 1
            usage[f"{stage}_prompt_tokens"] += ids.shape[1] + sum(len(t) for t in tokens)
        return scores
