"""cgr decides how a model folder loads, never the folder (cgr.weights.loaders and
cgr.weights.contents): crafted copies of the packaged MiniLM, loaded as each part loads
(reader, support reader, query encoder, chain ranker, tokenizer). Each crafted file would make
transformers or torch.load run code or read a pickle if its json's settings were honoured."""

import ast
import json
import os
import pickle
import shutil
import zipfile
from pathlib import Path

import pytest

from cgr.errors import ConfigError
from cgr.models import resolve_model
from tests.conftest import ROOT


class Planted:
    """A pickle whose unpickling writes the marker file its test then looks for."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.fixture
def folder(tmp_path):
    """A copy of the packaged MiniLM (weights hard-linked: each case replaces files, never
    edits them), with the marker path its pickles would write."""
    target = tmp_path / "model"

    def copy(src: str, dst: str) -> None:
        os.link(src, dst) if src.endswith(".safetensors") else shutil.copy2(src, dst)

    shutil.copytree(resolve_model("minilm"), target, copy_function=copy)
    return target


def edit(path: Path, **fields) -> None:
    data = json.loads(path.read_text())
    for key, value in fields.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path.write_text(json.dumps(data))


def pickle_bytes(marker: Path) -> bytes:
    return pickle.dumps(Planted(marker), protocol=2)


def the_attack(folder: Path, marker: Path) -> None:
    """The four steps: loader settings in the module config, no dtype in config.json, a
    pickle shard index, and the pickle under a name no suffix check knows."""
    edit(folder / "sentence_bert_config.json",
         model_kwargs={"use_safetensors": False, "weights_only": False, "dtype": "auto"})  # fmt: skip
    edit(folder / "config.json", dtype=None, torch_dtype=None)
    weight_map = {"embeddings.word_embeddings.weight": "weights-00001-of-00001"}
    (folder / "pytorch_model.bin.index.json").write_text(json.dumps({"weight_map": weight_map}))
    (folder / "weights-00001-of-00001").write_bytes(pickle_bytes(marker))


def load_reader(path):
    from cgr.reader.model import MultipleChoiceReader

    return MultipleChoiceReader(str(path), 64)


def load_encoder(path):  # the query encoder, a chain ranker, the evidence encoder
    from cgr.retrieval.encoders import load_sentence_encoder

    return load_sentence_encoder(str(path))


def load_plain_encoder(path):  # inference: a plain layout without sentence-transformers
    from cgr.retrieval.encoders import load_sentence_encoder

    return load_sentence_encoder(str(path), plain=True)


def load_tokenizer(path):
    from cgr.weights.loaders import auto_tokenizer

    return auto_tokenizer(path, "a tokenizer")


LOADS = [load_reader, load_encoder, load_plain_encoder, load_tokenizer]


@pytest.mark.slow
@pytest.mark.parametrize("load", LOADS, ids=lambda f: f.__name__)
def test_the_untouched_copy_loads(folder, load):
    assert load(folder) is not None


@pytest.mark.parametrize("load", LOADS, ids=lambda f: f.__name__)
def test_the_four_step_attack_is_refused_before_any_weight_is_read(folder, tmp_path, load):
    marker = tmp_path / "MARKER"
    the_attack(folder, marker)
    with pytest.raises(ConfigError, match="model_kwargs|shard index|pickle"):
        load(folder)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("file", "fields", "named"),
    [
        ("sentence_bert_config.json", {"model_kwargs": {"trust_remote_code": True}}, "field model_kwargs"),
        ("sentence_bert_config.json", {"config_kwargs": {"trust_remote_code": True}}, "field config_kwargs"),
        ("sentence_bert_config.json", {"tokenizer_args": {"use_fast": False}}, "field tokenizer_args"),
        ("sentence_bert_config.json", {"processor_kwargs": {"revision": "x"}}, "field processor_kwargs"),
        ("config.json", {"auto_map": {"AutoModel": "evil.Model"}}, "field auto_map"),
        ("config.json", {"text_config": {"auto_map": {"AutoModel": "evil.M"}}}, "field text_config.auto_map"),
        ("config.json", {"dtype": "auto"}, "field dtype"),
        ("config.json", {"torch_dtype": "auto"}, "field torch_dtype"),
        ("config.json", {"quantization_config": {"quant_method": "bitsandbytes"}}, "field quantization_config"),
        ("config.json", {"trust_remote_code": True}, "field trust_remote_code"),
        ("tokenizer_config.json", {"auto_map": {"AutoTokenizer": ["evil.T", None]}}, "field auto_map"),
        ("config_sentence_transformers.json", {"model_kwargs": {"weights_only": False}}, "field model_kwargs"),
        ("1_Pooling/config.json", {"use_safetensors": False}, "field use_safetensors"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("load", LOADS, ids=lambda f: f.__name__)
def test_loader_settings_in_a_folders_json_are_refused(folder, file, fields, named, load):
    edit(folder / file, **fields)
    with pytest.raises(ConfigError, match=f"{file}: {named}"):
        load(folder)


def zip_with_pickle(marker: Path) -> bytes:
    """torch.save's format: a zip whose data.pkl unpickles."""
    import io

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("archive/data.pkl", pickle_bytes(marker))
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("name", "content", "named"),
    [
        ("model.safetensors", "pickle", "a pickle"),
        ("vocab.txt", "pickle", "a pickle"),
        ("tokenizer.json", "zip", "a zip archive"),
        ("weights-00001-of-00001", "pickle", "a pickle"),
        ("model.safetensors", "zip", "a zip archive"),
        ("spiece.model", b"\x7fELF\x02\x01\x01", "an executable"),
        ("run.sh", b"#!/bin/sh\necho hi\n", "a script"),
        ("notes.xyz", b"some notes\n", "a file cgr does not load"),
        ("vocab.txt", b"\xff\xfe[PAD]\n", "not UTF-8 text"),
        ("tokenizer.model", b"plainly not a SentencePiece model", "not a SentencePiece model"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("load", [load_reader, load_encoder], ids=lambda f: f.__name__)
def test_files_are_judged_by_content_whatever_their_name(folder, tmp_path, name, content, named, load):  # fmt: skip
    marker = tmp_path / "MARKER"
    data = {"pickle": pickle_bytes(marker), "zip": zip_with_pickle(marker)}.get(content, content)
    (folder / name).unlink(missing_ok=True)
    (folder / name).write_bytes(data)
    with pytest.raises(ConfigError, match=f"{name}: {named}"):
        load(folder)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("index_name", "shard", "named"),
    [
        ("model.safetensors.index.json", "weights.bin", "not a safetensors file in this folder"),
        ("model.safetensors.index.json", "../model.safetensors", "not a safetensors file in this folder"),
        ("model.safetensors.index.json", "/etc/hostname.safetensors", "not a safetensors file in this folder"),
        ("model.safetensors.index.json", "missing.safetensors", "not a safetensors file in this folder"),
        ("pytorch_model.bin.index.json", "model.safetensors", "a shard index of weights cgr does not load"),
    ],
)  # fmt: skip
def test_a_shard_index_names_only_safetensors_files_inside_the_folder(
    folder, index_name, shard, named
):
    (folder / index_name).write_text(json.dumps({"weight_map": {"w": shard}}))
    with pytest.raises(ConfigError, match=named):
        load_reader(folder)


@pytest.mark.slow
def test_weights_that_fail_to_load_are_one_line(folder):
    """A valid safetensors file of the wrong shapes passes the header check, then fails inside
    transformers: one ConfigError line naming the folder, not a traceback."""
    import torch
    from safetensors.torch import save_file

    (folder / "model.safetensors").unlink()
    save_file({"embeddings.word_embeddings.weight": torch.zeros(7, 3)},
              str(folder / "model.safetensors"))  # fmt: skip
    with pytest.raises(ConfigError, match="did not load") as error:
        load_reader(folder)
    assert "\n" not in str(error.value)


def test_a_support_reader_folder_is_judged_the_same(folder, tmp_path):
    from cgr.pretrained.support_reader import check_support_reader
    from cgr.reader.support_reader import SUPPORT_FILE

    (folder / SUPPORT_FILE).write_text(json.dumps({"max_length": 64}))
    check_support_reader(folder)
    the_attack(folder, tmp_path / "MARKER")
    with pytest.raises(ConfigError, match="model_kwargs|shard index"):
        check_support_reader(folder)


def test_the_settings_cgr_passes_win():
    """What every model load is given, whatever a folder says (passed after its kwargs)."""
    import torch

    from cgr.weights.loaders import model_settings

    local = model_settings(resolve_model("minilm"))
    assert local == {"trust_remote_code": False, "local_files_only": True, "weights_only": True,
                     "use_safetensors": True, "dtype": torch.float32}  # fmt: skip
    hub = model_settings("sentence-transformers/all-MiniLM-L6-v2")
    assert hub["use_safetensors"] and hub["weights_only"] and "local_files_only" not in hub
    gguf = model_settings("some/hub-model", gguf="m.gguf")
    assert gguf["gguf_file"] == "m.gguf" and "use_safetensors" not in gguf


def test_every_model_load_goes_through_the_loaders_module():
    """No from_pretrained / from_config / SentenceTransformer call anywhere in cgr but
    cgr/weights/loaders.py, which owns the settings (cgr's own Predictor aside)."""
    loaders = {"from_pretrained", "from_config", "SentenceTransformer"}
    owner = ROOT / "cgr" / "weights" / "loaders.py"
    elsewhere = []
    for path in sorted((ROOT / "cgr").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or path == owner:
                continue
            func = node.func
            name = getattr(func, "attr", None) or getattr(func, "id", None)
            via_loaders = isinstance(func, ast.Attribute) and getattr(func.value, "id", "") in {
                "loaders", "Predictor", "cls"}  # fmt: skip
            if name in loaders and not via_loaders:
                elsewhere.append(f"{Path(path).relative_to(ROOT)}:{node.lineno}")
    assert elsewhere == []


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ((10 * 2**30).to_bytes(8, "little") + b"{}", "header length"),  # a 10 GB header claimed
        (b"\x10\x00\x00\x00\x00\x00\x00\x00" + b"[" * 16, "header"),
        ((50_000).to_bytes(8, "little") + b"[" * 50_000, "header"),  # nested past recursion
        (b"\x00" * 4, "header length"),
    ],
)
def test_a_lying_or_bombed_safetensors_header_is_one_line(folder, content, named):
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").write_bytes(content)
    with pytest.raises(ConfigError, match=f"not a readable safetensors file \\({named}"):
        load_reader(folder)


def test_a_json_bomb_is_refused_before_it_is_parsed(folder):
    """Nesting past the recursion limit, and a file past the size bound (read no further)."""
    (folder / "config_sentence_transformers.json").write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(ConfigError, match="not a readable JSON file"):
        load_encoder(folder)
    with (folder / "config_sentence_transformers.json").open("wb") as f:
        f.truncate(60_000_000)  # sparse: no disk used
    with pytest.raises(ConfigError, match="60,000,000 bytes"):
        load_encoder(folder)


@pytest.mark.parametrize("kind", ["fifo", "link-out", "hard-link"])
def test_a_fifo_or_a_link_in_a_part_is_never_read_through(folder, tmp_path, kind):
    """A FIFO would block the check (opened non-blocking, refused as not a plain file); a
    symbolic or hard link is judged by the content it opens (here a pickle, refused)."""
    target = folder / "vocab.txt"
    target.unlink()
    outside = tmp_path / "outside.txt"
    outside.write_bytes(pickle_bytes(tmp_path / "MARKER"))
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "link-out":
        target.symlink_to(outside)
    else:
        os.link(outside, target)
    named = {"fifo": "not a plain file", "link-out": "a pickle", "hard-link": "a pickle"}
    with pytest.raises(ConfigError, match=named[kind]):
        load_reader(folder)
    assert not (tmp_path / "MARKER").exists()
