"""Every file cgr writes is opened without following a link planted at its path."""

import os

import pytest

from cgr.errors import ConfigError
from cgr.files import atomic_write_text, open_no_follow


def test_a_link_is_refused_and_its_target_kept(tmp_path):
    target = tmp_path / "important.txt"
    target.write_text("precious")
    link = tmp_path / "out.jsonl"
    link.symlink_to(target)
    for mode in ("w", "a", "a+", "wb"):
        with pytest.raises(ConfigError, match="a symbolic link"):
            open_no_follow(link, mode)
    assert target.read_text() == "precious"


def test_a_fifo_is_refused_without_hanging(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="pipe"):
        open_no_follow(fifo, "w")


def test_a_plain_file_is_written_and_keeps_its_name(tmp_path):
    with open_no_follow(tmp_path / "a.txt", "a+") as f:
        f.write("x")
        assert f.name == str(tmp_path / "a.txt")
    assert (tmp_path / "a.txt").read_text() == "x"


def test_atomic_write_replaces_a_planted_temporary_link(tmp_path):
    target = tmp_path / "important.txt"
    target.write_text("precious")
    out = tmp_path / "page.html"
    (tmp_path / f"page.html.tmp{os.getpid()}").symlink_to(target)
    atomic_write_text(out, "new")
    assert out.read_text() == "new" and target.read_text() == "precious"
