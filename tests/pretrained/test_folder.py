"""A model folder's pre-checks that need no trained model: no code runs from it, nothing in it
leads outside it (crafted folders; the real exported folder: tests/pretrained/test_export.py)."""

import json

import pytest

from cgr.errors import ConfigError
from cgr.pretrained.folder import check_no_code


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "reader").mkdir()
    (tmp_path / "reader" / "config.json").write_text(json.dumps({"model_type": "bert"}))
    return tmp_path


def test_a_plain_folder_passes(folder):
    check_no_code(folder, folder)


@pytest.mark.parametrize(
    ("plant", "message"),
    [
        (lambda f: (f / "reader" / "evil.py").write_text("import os\n"), "evil.py: a code file"),
        (lambda f: (f / "reader" / "config.json").write_text(json.dumps(
            {"auto_map": {"AutoModelForMultipleChoice": "evil.Model"}})), "field auto_map"),
        (lambda f: (f / "reader" / "tokenizer_config.json").write_text(json.dumps(
            {"auto_map": {"AutoTokenizer": ["evil.Tok", None]}})), "field auto_map"),
        (lambda f: (f / "reader" / "config.json").write_text("[" * 100_000), "not a JSON config"),
    ],
)  # fmt: skip
def test_code_in_a_model_folder_is_refused(folder, plant, message):
    plant(folder)
    with pytest.raises(ConfigError, match=message):
        check_no_code(folder, folder)


def test_a_link_out_of_the_folder_is_refused(folder, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere")
    (folder / "query_encoder").symlink_to(outside)
    with pytest.raises(ConfigError, match="query_encoder: a link leading outside"):
        check_no_code(folder, folder)


def _safetensors(path, tensors=None):
    import torch
    from safetensors.torch import save_file

    save_file(tensors or {"w": torch.zeros(4, 4)}, str(path))
    return path


def test_a_cut_or_lying_safetensors_file_is_named(tmp_path):
    from cgr.weights.contents import check_file

    good = _safetensors(tmp_path / "good.safetensors")
    check_file(good, tmp_path, "the reader")
    data = good.read_bytes()
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(data[:-20])  # the header intact, the data short
    with pytest.raises(ConfigError, match="offsets .* do not fit the data"):
        check_file(cut, tmp_path, "the reader")
    lying = tmp_path / "lying.safetensors"
    lying.write_bytes(data.replace(b'"data_offsets":[0,64]', b'"data_offsets":[0,99]'))
    with pytest.raises(ConfigError, match="not a readable safetensors file"):
        check_file(lying, tmp_path, "the reader")


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("config.json", json.dumps({"model_type": "bert", "vocab_size": 10**10}), "vocab_size 10000000000 is out of range"),
        ("config.json", "[" * 100_000 + "]" * 100_000, "not a readable model config"),
        ("tokenizer.json", "{not json", "not a readable tokenizer"),
    ],
)  # fmt: skip
def test_model_numbers_and_tokenizers_are_checked_before_loading(tmp_path, name, content, message):
    from cgr.pretrained.folder import check_weights_folder

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    _safetensors(tmp_path / "model.safetensors")
    check_weights_folder(tmp_path, "the reader", ("config.json",))
    (tmp_path / name).write_text(content)
    with pytest.raises(ConfigError, match=message):
        check_weights_folder(tmp_path, "the reader", ("config.json",))


def test_a_module_list_names_only_sentence_transformers_classes(tmp_path):
    from cgr.pretrained.folder import _check_modules

    for kind, message in (("sentence_transformers.evil", "is not a sentence-transformers class"),
                          ("sentence_transformers.util.cos_sim", "is not a sentence-transformers class"),
                          ("sentence_transformers....os", "is not a sentence-transformers class")):  # fmt: skip
        (tmp_path / "modules.json").write_text(json.dumps([{"type": kind, "path": ""}]))
        with pytest.raises(ConfigError, match=message):
            _check_modules(tmp_path)
    (tmp_path / "modules.json").write_text(
        json.dumps([{"type": "sentence_transformers.models.Pooling", "path": "../../etc"}])
    )
    with pytest.raises(ConfigError, match="leaves the folder"):
        _check_modules(tmp_path)


@pytest.mark.parametrize(
    "name",
    ["../elsewhere", "/etc", "reader/../../x", "~/models/reader", "$HOME/reader", "${HOME}",
     "\u2024\u2024/x", "\uff0e\uff0e/x", "..\\x"],
)  # fmt: skip
def test_a_folder_field_never_leads_out_of_the_model_folder(tmp_path, name):
    """`..`, absolute paths, `~`, environment variables and look-alike dots in
    cgr_config.json's folder fields: refused, or read as a name inside the folder (never
    expanded), which is then missing."""
    from cgr.pretrained.folder import read_model_folder

    config = {"format": "cgr-model", "format_version": 1, "data": {},
              "reader": {"folder": name, "max_length": 64}}  # fmt: skip
    (tmp_path / "cgr_config.json").write_text(json.dumps(config))
    with pytest.raises(ConfigError) as refused:
        read_model_folder(tmp_path)
    message = str(refused.value)
    assert "must be a folder inside the model folder" in message or (
        f"{tmp_path / name}: missing" in message
    )
