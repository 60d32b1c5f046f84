"""Builds a tiny T5 parse model in amrlib's model-dir format and overfits it on a few sentences,
so that amrlib's real load-and-parse path (load_stog_model -> parse_xfm Inference) runs in CI."""

from __future__ import annotations

import json
from pathlib import Path

import torch

GRAPHS = {
    "the boy wants to go .": "(w / want-01 :ARG0 (b / boy) :ARG1 (g / go-02 :ARG0 b))",
    "the girl sees a cat .": "(s / see-01 :ARG0 (g / girl) :ARG1 (c / cat))",
    "a whale is a mammal .": "(m / mammal :domain (w / whale))",
}


def build(model_dir: Path, steps: int = 200) -> Path:
    from amrlib.models.parse_xfm.penman_serializer import PenmanSerializer
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    targets = {s: PenmanSerializer(g).get_graph_string() for s, g in GRAPHS.items()}
    words = sorted({w for text in [*targets, *targets.values()] for w in text.split()})
    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2, **{w: i + 3 for i, w in enumerate(words)}}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    core.post_processor = processors.TemplateProcessing(
        single="$A </s>", special_tokens=[("</s>", 1)]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", eos_token="</s>", unk_token="<unk>"
    )
    config = T5Config(
        vocab_size=len(vocab), d_model=64, d_ff=128, d_kv=16, num_layers=2, num_decoder_layers=2,
        num_heads=4, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0,
        task_specific_params={"parse_amr": {"model_name_or_path": str(model_dir), "tok_name_or_path": str(model_dir),
                                            "max_in_len": 32, "max_out_len": 48}},
    )  # fmt: skip
    model = T5ForConditionalGeneration(config)
    inputs = tokenizer(list(targets), padding=True, return_tensors="pt")
    labels = tokenizer(list(targets.values()), padding=True, return_tensors="pt").input_ids
    labels[labels == 0] = -100
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        loss = model(**inputs, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    meta = {"model_type": "stog", "version": "0.1.0", "inference_module": ".parse_xfm.inference",
            "inference_class": "Inference", "model_fn": "model.safetensors", "kwargs": {"num_beams": 1}}  # fmt: skip
    (model_dir / "amrlib_meta.json").write_text(json.dumps(meta))
    return model_dir
