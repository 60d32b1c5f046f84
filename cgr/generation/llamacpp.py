"""Greedy generation with llama.cpp (the `xllamacpp` wheel), reading the GGUF file directly:
no de-quantising to float32, so SmolLM2 loads in under a second and decodes several times faster
than transformers on a CPU (benchmarks/ircot_generation.py measures it).

The engine keeps each slot's key-value cache between requests (`cache_prompt`) and re-encodes a
prompt only from its first token that differs from the previous one, so the demonstrations that
every IRCoT prompt starts with are encoded once, as `reuse_prefix_cache` does for transformers.
xllamacpp's Server also opens an HTTP listener: it is bound to 127.0.0.1 on a free port and the
engine is shut down on `close()` or at exit.

Stops are strings here, not our regular expressions: "sentence" stops at ".", "!" or "?" before
a space or a newline (llama.cpp drops the stop string, so the sentence gets a "." back: a "!" or
"?" ending reads as "."), "answer" at a blank line; the text is then cut as the transformers
backend cuts it (a newline also ends a sentence there).
"""

from __future__ import annotations

import atexit
import logging
from pathlib import Path

import torch

from cgr.errors import ConfigError
from cgr.generation.generator import Generation, check_stop, cut, resolve_generator

log = logging.getLogger(__name__)
STOP_STRINGS = {
    "sentence": [". ", "! ", "? ", ".\n", "!\n", "?\n"],
    "answer": ["\n\n"],
    "none": [],
}


class LlamaCppGenerator:
    """The Generator interface (`generate`, `count_tokens`, `max_input_tokens`) on llama.cpp."""

    def __init__(self, model: str = "smollm2", gguf_file: str | None = None, max_new_tokens: int = 48,
                 context_tokens: int = 8192, threads: int | None = None,
                 slots: int = 1):  # fmt: skip
        path, gguf = resolve_generator(model, gguf_file)
        file = Path(path) / gguf if gguf else Path(path)
        if file.suffix != ".gguf" or not file.is_file():
            raise ConfigError(
                f"generator.backend llamacpp reads a GGUF file, not {file} "
                "(set generator.gguf_file, or use generator.backend transformers)"
            )
        try:
            import xllamacpp
        except ImportError as e:
            raise ConfigError(
                "generator.backend llamacpp needs the ircot extra: pip install 'cgr[ircot]'"
            ) from e
        from cgr.weights import loaders

        params = xllamacpp.CommonParams()
        params.model.path = str(file)
        params.n_ctx = context_tokens
        # one slot: its cache holds the shared demonstrations; more only when the engine serves
        # concurrent HTTP clients (benchmarks/ircot_server.py), each slot n_ctx / slots long
        params.n_parallel = slots
        params.cpuparams.n_threads = threads or torch.get_num_threads()
        params.cpuparams_batch.n_threads = threads or torch.get_num_threads()
        params.hostnames = ["127.0.0.1"]  # the listener the engine opens stays on loopback
        params.port = 0  # a free port
        params.verbosity = -1
        self._server = xllamacpp.Server(params)
        atexit.register(self.close)
        # the GGUF's own vocabulary, for the prompt builder's token budget
        self.tokenizer = loaders.auto_tokenizer(path, "the generator's tokenizer", gguf)
        self.max_new_tokens = max_new_tokens
        self.max_input_tokens = max(64, context_tokens - max_new_tokens)

    @property
    def listening_address(self) -> str:
        return self._server.listening_address if self._server is not None else ""

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False).input_ids)

    def generate(self, prompts: list[str], stop: str = "sentence", max_new_tokens: int | None = None,
                 prefix: str | None = None) -> list[Generation]:  # fmt: skip
        """Greedy continuations, cut as Generator.generate cuts them (`prefix` is not needed:
        the engine reuses any shared start of consecutive prompts by itself)."""
        check_stop(stop)
        if self._server is None:
            raise RuntimeError("this llama.cpp generator is closed")
        limit = max_new_tokens or self.max_new_tokens
        out = []
        for prompt in prompts:
            request = {"prompt": prompt, "n_predict": limit, "temperature": 0.0, "top_k": 1,
                       "cache_prompt": True, "stop": STOP_STRINGS[stop]}  # fmt: skip
            response = self._server.handle_completions(request)
            if "choices" not in response:
                raise RuntimeError(f"llama.cpp refused a prompt: {response}")
            choice = response["choices"][0]
            text, tokens = choice["text"], response["usage"]["completion_tokens"]
            if stop == "sentence" and choice["finish_reason"] == "stop" and text.strip():
                text += "."  # the stop string's punctuation, which llama.cpp drops
            out.append(Generation(cut(text, stop), tokens))
        return out

    def close(self) -> None:
        """Stops the engine and its listener (also run at exit)."""
        if getattr(self, "_server", None) is not None:
            server, self._server = self._server, None
            del server
