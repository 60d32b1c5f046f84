"""`generator.*`: which LM backend generates, with what weights and settings; one builder for every
mode that generates (IRCoT, long documents, RICHES)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cgr.errors import ConfigError
from cgr.validation import at_least, one_of


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
        from cgr.generation.llamacpp import LlamaCppGenerator

        return LlamaCppGenerator(cfg.model, cfg.gguf_file, cfg.max_new_tokens)
    if cfg.backend == "ctranslate2":
        from cgr.generation.ct2 import CTranslate2Generator

        return CTranslate2Generator(cfg.model, cfg.gguf_file, cfg.max_new_tokens, cfg.batch_size)
    from cgr.generation.generator import Generator

    return Generator(cfg.model, cfg.gguf_file, cfg.max_new_tokens, cfg.batch_size,
                     reuse_prefix_cache=cfg.reuse_prefix_cache, dtype=cfg.dtype,
                     history_cache=cfg.history_cache, quantize=cfg.quantize)  # fmt: skip
