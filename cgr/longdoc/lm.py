"""The generator as the long-document methods call it: an instruction in the model's chat
format, and an account of every call (the paper's "tokens processed" and "API calls").

Any backend of `cgr ircot` (transformers, ctranslate2, llama.cpp) works: they share
`generate(prompts, stop, max_new_tokens)`, `count_tokens` and `tokenizer`."""

from __future__ import annotations

from collections import Counter


class CountingLM:
    def __init__(self, generator, name: str, chat: bool = True):
        self.generator, self.name = generator, name
        tokenizer = getattr(generator, "tokenizer", None)
        self.chat = chat and bool(getattr(tokenizer, "chat_template", None))
        self.max_input_tokens = int(getattr(generator, "max_input_tokens", 2048))

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
        outputs = self.generator.generate(prompts, stop=stop, max_new_tokens=max_new_tokens)
        if usage is not None:
            usage[f"{stage}_calls"] += len(prompts)
            usage[f"{stage}_prompt_tokens"] += sum(self.count(p) for p in prompts)
            usage[f"{stage}_generated_tokens"] += sum(o.new_tokens for o in outputs)
        return [o.text for o in outputs]
