"""The signature that tells this user's checkpoints from anyone else's, and the roots rule."""

import os

import pytest

from cgr.errors import ConfigError
from cgr.pretrained.paths import PathRule
from cgr.pretrained.signing import key_file, sign, signed_here


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
