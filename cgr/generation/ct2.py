"""Greedy generation with CTranslate2 (int8 on CPU): several times faster than transformers at
what IRCoT spends its time on, encoding long few-shot prompts (benchmarks/ircot_generation.py).

No CTranslate2 model ships for SmolLM2, so the first use converts one and caches it under
.cache/cgr/ct2/, keyed by a hash of the source model's files: the GGUF is loaded with
transformers, its weights copied into a model built from its config (a GGUF-loaded model refuses
`save_pretrained`), saved, and converted with CTranslate2's converter. The conversion runs in a
temporary folder that is renamed into place only when complete, so a killed conversion leaves
no half model behind.

The demonstrations every prompt starts with are CTranslate2's `static_prompt`: encoded once and
cached by the engine. Stops are our regular expressions, checked on each new token (callback).
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import shutil
import tempfile
from pathlib import Path

import torch

from cgr.errors import ConfigError
from cgr.generation.generator import Generation, _finished, check_stop, cut, resolve_generator

log = logging.getLogger(__name__)
CACHE = Path(".cache/cgr/ct2")


def source_hash(path: str, gguf: str | None) -> str:
    """A short hash of the source model's weights and configuration files."""
    folder = Path(path)
    files = [folder / gguf] if gguf else sorted(p for p in folder.iterdir() if p.is_file())
    h = hashlib.sha256()
    for file in files:
        h.update(file.name.encode())
        with file.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def converted_model(model: str, gguf_file: str | None, quantization: str = "int8",
                    cache: Path = CACHE) -> Path:  # fmt: skip
    """The CTranslate2 folder for `model`, converted on first use (then read from the cache)."""
    path, gguf = resolve_generator(model, gguf_file)
    if not Path(path).is_dir():
        raise ConfigError(
            f"generator.backend ctranslate2 converts a local model folder, not {path!r}"
        )
    target = cache / f"{Path(gguf or path).stem}-{quantization}-{source_hash(path, gguf)}"
    if (target / "model.bin").is_file() and (target / "source" / "config.json").is_file():
        return target
    import ctranslate2.converters
    from transformers import AutoModelForCausalLM

    from cgr.weights import loaders

    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix=".converting-") as tmp:
        log.info(
            "converting %s to CTranslate2 %s (once; cached in %s)",
            gguf or path,
            quantization,
            target,
        )
        log.info("conversion 1/3: loading %s with transformers", gguf or path)
        loaded = loaders.from_pretrained(AutoModelForCausalLM, path, "the generator",
                                         torch.float32, gguf)  # fmt: skip
        config = loaders.auto_config(path, "the generator's config", gguf)
        plain = loaders.from_config(AutoModelForCausalLM, config, torch.float32)
        plain.load_state_dict(loaded.state_dict())
        hf = Path(tmp) / "hf"
        plain.save_pretrained(hf)
        tokenizer = loaders.auto_tokenizer(path, "the generator's tokenizer", gguf)
        tokenizer.save_pretrained(hf)
        del loaded, plain
        log.info("conversion 2/3: converting to CTranslate2 (%s)", quantization)
        out = Path(tmp) / "ct2"
        ctranslate2.converters.TransformersConverter(str(hf)).convert(
            str(out), quantization=quantization
        )
        tokenizer.save_pretrained(out)
        config.save_pretrained(out / "source")  # the context length, for the prompt budget
        log.info("conversion 3/3: done")
        if target.exists():  # a half folder of an older layout: replaced
            shutil.rmtree(target)
        out.rename(target)  # atomic on one file system: complete or absent
    return target


class CTranslate2Generator:
    """The Generator interface (`generate`, `count_tokens`, `max_input_tokens`) on CTranslate2."""

    def __init__(self, model: str = "smollm2", gguf_file: str | None = None, max_new_tokens: int = 48,
                 batch_size: int = 8, quantization: str = "int8", threads: int | None = None,
                 device: str | None = None):  # fmt: skip
        try:
            import ctranslate2
        except ImportError as e:
            raise ConfigError(
                "generator.backend ctranslate2 needs `pip install ctranslate2` (scripts/setup_env.sh)"
            ) from e
        from cgr.weights import loaders

        folder = converted_model(model, gguf_file, quantization)
        self.device = device or ("cuda" if ctranslate2.get_cuda_device_count() else "cpu")
        compute = quantization if self.device == "cpu" else f"{quantization}_float16"
        self.engine = ctranslate2.Generator(str(folder), device=self.device, compute_type=compute,
                                            intra_threads=threads or torch.get_num_threads())  # fmt: skip
        # released before the interpreter tears down: the engine's threads then join cleanly
        # (left to the garbage collector at exit, the process aborts with a deadlock error)
        atexit.register(self.close)
        # cgr's own conversion in its cache (CTranslate2's model.bin is no model-part file)
        self.tokenizer = loaders.auto_tokenizer(folder, "the converted tokenizer", check=False)
        config = loaders.auto_config(folder / "source", "the converted config", check=False)
        limit = getattr(config, "max_position_embeddings", None) or 2048
        # on a CPU one prompt at a time: in a batch CTranslate2 forwards prompts at once only up to
        # the shortest one and feeds the rest of each token by token (IRCoT prompts differ a lot)
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size if self.device == "cuda" else 1
        self.max_input_tokens = max(64, min(int(limit), 8192) - max_new_tokens)

    def close(self) -> None:
        """Releases the engine (also run at exit)."""
        engine, self.engine = getattr(self, "engine", None), None
        del engine

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False).input_ids)

    def _tokens(self, text: str) -> list[str]:
        ids = self.tokenizer(text).input_ids[-self.max_input_tokens :]  # keep the question end
        return self.tokenizer.convert_ids_to_tokens(ids)

    def generate(self, prompts: list[str], stop: str = "sentence", max_new_tokens: int | None = None,
                 prefix: str | None = None) -> list[Generation]:  # fmt: skip
        """Greedy continuations, cut as Generator.generate cuts them; `prefix`, when every prompt
        starts with it, is encoded once (CTranslate2's static prompt)."""
        check_stop(stop)
        limit = max_new_tokens or self.max_new_tokens
        out: list[Generation] = []
        for start in range(0, len(prompts), self.batch_size):
            chunk = prompts[start : start + self.batch_size]
            static, rests = self._split(prefix, chunk)
            new_ids: dict[int, list[int]] = {i: [] for i in range(len(chunk))}

            def finished(step, new_ids=new_ids) -> bool:
                new_ids[step.batch_id].append(step.token_id)
                text = self.tokenizer.decode(new_ids[step.batch_id], skip_special_tokens=True)
                return stop != "none" and _finished(text, stop)

            self.engine.generate_batch(
                rests, max_length=limit, sampling_topk=1, include_prompt_in_result=False,
                static_prompt=static, callback=finished,
            )  # fmt: skip
            for i in range(len(chunk)):
                ids = [t for t in new_ids[i] if t != self.tokenizer.eos_token_id]
                out.append(
                    Generation(
                        cut(self.tokenizer.decode(ids, skip_special_tokens=True), stop), len(ids)
                    )
                )
        return out

    def _split(
        self, prefix: str | None, chunk: list[str]
    ) -> tuple[list[str] | None, list[list[str]]]:
        """(static prompt tokens, the rest of each prompt) when every prompt starts with `prefix`
        and its tokens are a prefix of each prompt's tokens; else (None, whole prompts)."""
        whole = [self._tokens(p) for p in chunk]
        if not prefix or not all(p.startswith(prefix) for p in chunk):
            return None, whole
        static = self._tokens(prefix)
        n = len(static)
        if n == 0 or any(len(w) <= n or w[:n] != static for w in whole):
            return None, whole
        return static, [w[n:] for w in whole]
