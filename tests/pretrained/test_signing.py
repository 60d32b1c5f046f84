"""The signature that tells this user's checkpoints from anyone else's, and the roots rule."""

import os

import pytest

from cgr.errors import ConfigError
from cgr.pretrained.paths import PathRule
from cgr.signing import key_file, sign, signed_here


@pytest.fixture
def key(tmp_path, monkeypatch):
    monkeypatch.setenv("CGR_SIGNING_KEY", str(tmp_path / "cfg" / "signing.key"))
    return tmp_path / "cfg" / "signing.key"


def test_a_signature_holds_for_the_same_settings_only(key):
    settings = {"retrieval": {"corpus": ["data/facts.txt"], "beam_size": 10}}
    signature = sign(settings)
    assert key_file() == key and key.stat().st_mode & 0o777 == 0o600
    assert signed_here(settings, signature)
    assert signed_here({"retrieval": {"beam_size": 10, "corpus": ["data/facts.txt"]}}, signature)
    assert not signed_here({"retrieval": {"corpus": ["/etc/passwd"], "beam_size": 10}}, signature)
    assert not signed_here(settings, None) and not signed_here(settings, "0" * 64)


def test_another_users_key_trusts_nothing_of_ours(key, tmp_path, monkeypatch):
    signature = sign({"a": 1})
    monkeypatch.setenv("CGR_SIGNING_KEY", str(tmp_path / "other.key"))
    sign({"b": 2})  # the other user's key exists now
    assert not signed_here({"a": 1}, signature)


def test_paths_outside_home_and_roots_are_refused(tmp_path):
    home, root, outside = tmp_path / "home", tmp_path / "root", tmp_path / "elsewhere"
    for folder in (home, root, outside):
        folder.mkdir()
        (folder / "f.txt").write_text("x\n")
    rule = PathRule(tmp_path / "m.ckpt", home, roots=[root])
    assert rule.check("data.x", str(home / "f.txt"), exists=True) == home / "f.txt"
    assert rule.check("data.x", str(root / "f.txt")) == root / "f.txt"
    with pytest.raises(
        ConfigError, match=r"data.x names .*elsewhere/f.txt', outside .*--data-root"
    ):
        rule.check("data.x", str(outside / "f.txt"))
    with pytest.raises(ConfigError, match="outside"):
        rule.check("data.x", str(home / ".." / "elsewhere" / "f.txt"))
    os.symlink(outside / "f.txt", home / "link.txt")
    with pytest.raises(ConfigError, match="outside"):
        rule.check("data.x", str(home / "link.txt"))
    assert PathRule(tmp_path / "m.ckpt", home, trusted=True).check("data.x", str(outside / "f.txt"))
    with pytest.raises(ConfigError, match="not a folder"):
        PathRule(tmp_path / "m.ckpt", home, roots=[tmp_path / "nope"])


def test_caches_of_an_unsigned_model_are_the_package_defaults(tmp_path):
    data = {"retrieval": {"corpus": [], "cache_dir": "/home/victim/.ssh"}, "pool_cache_dir": "/tmp/x",
            "chains": {"amr": {"cache": "/etc/amr.sqlite"}}}  # fmt: skip
    checked = PathRule(tmp_path / "m.ckpt", tmp_path).data_settings(data)
    assert checked["retrieval"]["cache_dir"] == ".cache/cgr/embeddings"
    assert checked["pool_cache_dir"] == ".cache/cgr/pools"
    assert checked["chains"]["amr"]["cache"] == ".cache/cgr/amr.sqlite"
    trusted = PathRule(tmp_path / "m.ckpt", tmp_path, trusted=True).data_settings(data)
    assert trusted["pool_cache_dir"] == "/tmp/x"


def test_a_signed_model_holds_files_inside_its_folder_to_the_folder(tmp_path):
    """Trust covers the absolute paths the user's settings name, never a link inside home."""
    home, outside = tmp_path / "home", tmp_path / "private"
    home.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("swordfish\n")
    (home / "corpus").mkdir()
    (home / "corpus" / "facts.txt").symlink_to(outside / "secret.txt")
    rule = PathRule(home / "cgr_config.json", home, trusted=True, relative_to=home)
    with pytest.raises(ConfigError, match="corpus/facts.txt', outside"):
        rule.check("data.retrieval.corpus[0]", "corpus/facts.txt")
    assert rule.check("data.x", str(outside / "secret.txt")) == outside / "secret.txt"


def _path_like(data: dict, prefix: tuple = ()) -> list[tuple]:
    words = ("file", "dir", "corpus", "book", "cache", "encoder", "model", "path")
    found = []
    for key, value in data.items():
        if isinstance(value, dict):
            found += _path_like(value, (*prefix, key))
        elif isinstance(value, (bool, int, float)):  # switches and sizes name no file
            continue
        elif any(w in key for w in words) or (isinstance(value, str) and "/" in value):
            found.append((*prefix, key))
    return found


def test_every_stored_path_setting_is_in_one_list():
    """A new data setting that names a file must be added to one of the lists in
    cgr.pretrained.paths (checked, a cache, a model name, or never read at prediction)."""
    from benchmarks.common import train_config
    from cgr.pretrained import paths

    listed = [*paths.READ_PATHS, *paths.CACHE_PATHS, *paths.MODEL_NAMES, paths.DEV_FILE,
              *paths.NOT_READ]  # fmt: skip
    assert len(listed) == len(set(listed))
    for config in ("configs/obqa_cgr_cpu.yaml", "configs/arc_challenge.yaml"):
        found = _path_like(train_config(config)["data"])
        assert ("chains", "book") in found and ("gold_facts_files",) in found
        assert [f for f in found if f not in listed] == []


@pytest.mark.parametrize("keys", [("chains", "book"), ("gold_facts_files",)])
def test_book_and_gold_files_are_held_to_the_roots(keys, tmp_path):
    data = {"retrieval": {}, "chains": {}}
    place = data
    for key in keys[:-1]:
        place = place[key]
    place[keys[-1]] = ["/etc/hostname"]
    with pytest.raises(ConfigError, match=rf"data.{'.'.join(keys)}\[0\] names '/etc/hostname'"):
        PathRule(tmp_path / "m.ckpt", tmp_path).data_settings(data)


def test_a_stored_path_of_the_wrong_type_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match="data.retrieval.corpus must be a path or a list"):
        PathRule(tmp_path / "m.ckpt", tmp_path).data_settings({"retrieval": {"corpus": 5}})


def test_a_local_encoder_folder_is_held_to_the_model_folder_rules(tmp_path):
    encoder = tmp_path / "enc"
    encoder.mkdir()
    (encoder / "config.json").write_text("{}")
    (encoder / "pytorch_model.bin").write_bytes(b"\x80\x04K\x01.")
    data = {"retrieval": {"encoder": "enc"}}
    rule = PathRule(tmp_path / "cgr_config.json", tmp_path, relative_to=tmp_path)
    with pytest.raises(ConfigError, match="pytorch_model.bin: a pickle file"):
        rule.data_settings(data)
    (encoder / "pytorch_model.bin").unlink()
    (encoder / "evil.py").write_text("import os\n")
    with pytest.raises(ConfigError, match="evil.py: a code file"):
        rule.data_settings(data)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda k: (k.write_bytes(b"k" * 32), k.chmod(0o644)), "permissions 0644 are too open"),
        (lambda k: (k.with_name("real").write_bytes(b"k" * 32), k.with_name("real").chmod(0o600),
                    k.symlink_to(k.with_name("real"))), "a symbolic link"),
        (lambda k: k.symlink_to("/dev/zero"), "a symbolic link"),
        (lambda k: os.mkfifo(k, 0o600), "not a regular file"),
        (lambda k: (k.write_bytes(b"k" * 5000), k.chmod(0o600)), "not a cgr signing key"),
    ],
)  # fmt: skip
def test_an_unsafe_signing_key_is_refused_in_one_line(key, make, message):
    key.parent.mkdir(parents=True, exist_ok=True)
    make(key)
    with pytest.raises(ConfigError, match=message):
        signed_here({"a": 1}, "0" * 64)
    with pytest.raises(ConfigError, match=message):
        sign({"a": 1})


def test_a_signature_of_other_characters_is_no_signature(key):
    sign({"a": 1})
    assert not signed_here({"a": 1}, "é" * 64) and not signed_here({"a": 1}, "٣" * 64)
