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


def test_paths_and_hub_names_pass_unchanged(tmp_path):
    assert resolve_model(str(tmp_path)) == str(tmp_path)
    assert resolve_model("roberta-large") == "roberta-large"
