"""Encoding without sentence-transformers gives its vectors, and only for the layouts it knows."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from cgr.models import resolve_model
from cgr.retrieval.encoders import load_sentence_encoder
from cgr.retrieval.plain_encoder import PlainSentenceEncoder, plain_layout

TEXTS = ["What is a thermometer used for? to measure temperature", "x",
         "a thermometer is used to measure temperature", "plants need water " * 60]  # fmt: skip


@pytest.fixture(scope="module")
def minilm():
    return resolve_model("minilm")


def test_the_packaged_encoder_is_the_plain_layout(minilm):
    assert plain_layout(Path(minilm)) == ("mean", True, 256, False)


@pytest.mark.slow
def test_vectors_equal_sentence_transformers(minilm):
    from sentence_transformers import SentenceTransformer

    plain = PlainSentenceEncoder.from_folder(minilm)
    reference = SentenceTransformer(minilm, device="cpu")
    for model in (plain, reference):
        model.max_seq_length = 64  # the long text is truncated alike
    ours = plain.encode(TEXTS, batch_size=2, normalize_embeddings=True)
    theirs = reference.encode(TEXTS, batch_size=2, normalize_embeddings=True, convert_to_numpy=True)
    assert ours.dtype == np.float32 and ours.shape == (4, 384)
    np.testing.assert_allclose(ours, theirs, atol=1e-6)
    assert plain.get_embedding_dimension() == reference.get_embedding_dimension()
    assert [p.shape for p in plain.parameters()] == [p.shape for p in reference.parameters()]


@pytest.mark.parametrize(
    "change",
    [
        lambda d: (d / "config_sentence_transformers.json").write_text(
            json.dumps({"prompts": {"query": "query: "}, "default_prompt_name": "query"})
        ),
        lambda d: (d / "modules.json").write_text(
            json.dumps(
                [
                    *json.loads((d / "modules.json").read_text()),
                    {
                        "idx": 3,
                        "name": "3",
                        "path": "3_Dense",
                        "type": "sentence_transformers.models.Dense",
                    },
                ]
            )
        ),
        lambda d: (d / "1_Pooling" / "config.json").write_text(
            json.dumps({"pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": True})
        ),
        lambda d: (d / "sentence_bert_config.json").write_text(
            json.dumps({"max_seq_length": "long"})
        ),
    ],
    ids=["prompt", "dense", "two-poolings", "bad-length"],
)
def test_other_layouts_are_left_to_sentence_transformers(minilm, tmp_path, change):
    folder = tmp_path / "model"
    shutil.copytree(minilm, folder)
    change(folder)
    assert plain_layout(folder) is None
    assert PlainSentenceEncoder.from_folder(folder) is None


def test_hub_names_are_left_to_sentence_transformers(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert PlainSentenceEncoder.from_folder("someone/some-encoder") is None


@pytest.mark.slow
def test_plain_loading_is_opt_in(minilm):
    """Training builds on sentence-transformers' modules; only encoding takes the plain path."""
    assert type(load_sentence_encoder("minilm", plain=True)).__name__ == "PlainSentenceEncoder"
    assert type(load_sentence_encoder("minilm")).__name__ == "SentenceTransformer"
