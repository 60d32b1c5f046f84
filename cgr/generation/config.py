"""`generator.*`: which LM backend generates, with what weights and settings; one builder for every
mode that generates (IRCoT, long documents, RICHES)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cgr.errors import ConfigError
from cgr.validation import at_least, one_of

BACKENDS = ("transformers", "ctranslate2", "llamacpp", "openai")


@dataclass
class GeneratorConfig:
    # transformers (any HF model; GGUF de-quantised) | ctranslate2 (converted once to int8) |
    # llamacpp (reads the GGUF as is); the two engines are several times faster on a CPU
    # openai: any OpenAI-compatible server (vLLM, SGLang, TGI, llama.cpp's server, a hosted API)
    backend: Literal["transformers", "ctranslate2", "llamacpp", "openai"] = "transformers"
    model: str = "smollm2"  # packaged SmolLM2-135M-Instruct (GGUF), a hub name or a local folder
    # the GGUF file inside a hub repository or folder (packaged models name theirs)
    gguf_file: str | None = None
    max_new_tokens: int = 48  # tokens generated at most per call (a step, a list, an answer)
    batch_size: int = 8  # prompts decoded together (transformers, ctranslate2)
    reuse_prefix_cache: bool = True  # encode the demonstrations once, not once per prompt
    # bfloat16 is faster on CPUs with AVX512-BF16 / AMX, and on GPUs
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    # transformers: keep the caches of the last N prompts, so a question's next step encodes only
    # what its previous prompt did not hold; prompts then go one at a time (0: batches)
    history_cache: int = 8
    # transformers on a CPU: int8 weights for the linear layers (PyTorch dynamic quantisation);
    # decoding reads a quarter of the bytes per token; greedy outputs may differ from float32
    quantize: Literal["none", "int8"] = "none"
    # transformers: "auto" spreads a model larger than one GPU over the GPUs present (accelerate)
    device_map: str | None = None
    # openai: the server's /v1 URL, e.g. http://127.0.0.1:8000/v1 (model: the name it serves)
    base_url: str = ""
    # openai: completions (base models, the raw few-shot prompt) | chat (the server applies the
    # model's chat template to the prompt sent as one user message)
    api: Literal["completions", "chat"] = "completions"
    # openai: the environment variable holding the API key (read at call time, never stored)
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 4  # openai: questions in flight at once (one question's steps in order)
    timeout: float = 120.0  # openai: seconds per request before the client retries
    # openai: retries with backoff (0.5, 1, 2 s) on 429, 5xx and dropped connections
    max_retries: int = 3
    # openai: answers kept by endpoint, model, prompt and settings ("": none); a re-run after a
    # kill sends only the requests not yet answered
    response_cache: str = ".cache/cgr/openai.sqlite"
    # openai: the tokenizer that counts the prompt budget where the server has no /tokenize
    # (hub name or folder; default: generator.model)
    tokenizer: str | None = None

    def __post_init__(self) -> None:
        one_of("generator.backend", self.backend, BACKENDS)
        one_of("generator.api", self.api, ("completions", "chat"))
        at_least("generator.concurrency", self.concurrency, 1)
        at_least("generator.max_retries", self.max_retries, 0)
        if self.backend == "openai" and not self.base_url:
            raise ConfigError("generator.backend openai needs generator.base_url (the server's "
                              "/v1 URL, e.g. http://127.0.0.1:8000/v1)")  # fmt: skip
        if self.device_map is not None and self.backend != "transformers":
            raise ConfigError("generator.device_map is for the transformers backend "
                              f"(got backend {self.backend})")  # fmt: skip
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
    if cfg.backend == "openai":
        from cgr.generation.openai_api import OpenAIGenerator

        return OpenAIGenerator(cfg.base_url, cfg.model, cfg.api, cfg.api_key_env,
                               cfg.max_new_tokens, cfg.concurrency, cfg.timeout, cfg.max_retries,
                               cache=cfg.response_cache, tokenizer=cfg.tokenizer)  # fmt: skip
    if cfg.backend == "llamacpp":
        from cgr.generation.llamacpp import LlamaCppGenerator

        return LlamaCppGenerator(cfg.model, cfg.gguf_file, cfg.max_new_tokens)
    if cfg.backend == "ctranslate2":
        from cgr.generation.ct2 import CTranslate2Generator

        return CTranslate2Generator(cfg.model, cfg.gguf_file, cfg.max_new_tokens, cfg.batch_size)
    from cgr.generation.generator import Generator

    return Generator(cfg.model, cfg.gguf_file, cfg.max_new_tokens, cfg.batch_size,
                     reuse_prefix_cache=cfg.reuse_prefix_cache, dtype=cfg.dtype,
                     history_cache=cfg.history_cache, quantize=cfg.quantize,
                     device_map=cfg.device_map)  # fmt: skip
