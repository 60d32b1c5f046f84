"""`cgr data get` against a real HTTP server on 127.0.0.1 (http.server in a thread) serving
archives the tests build: a download that succeeds, one resumed after the server drops the
connection half way, a checksum that does not match, a dead mirror, a 404, and `--from` with a
changed file. Nothing reaches outside the machine; the registry is a small one of the tests."""

from __future__ import annotations

import hashlib
import http.server
import io
import threading
import zipfile
from pathlib import Path

import pytest

from cgr.cli import main
from cgr.data import registry
from cgr.data.registry import Checksum, DataFile, Dataset, Source

TRAIN = b'{"id": "q1", "question": {"stem": "What is hot?", "choices": [{"text": "fire", ' \
    b'"label": "A"}, {"text": "ice", "label": "B"}]}, "answerKey": "A"}\n'  # fmt: skip
BOOK = b"".join(b'"fact number %d is a fact"\n' % i for i in range(20000))  # ~0.5 MB: resumable
sha = lambda data: hashlib.sha256(data).hexdigest()  # noqa: E731


def release_zip(train: bytes = TRAIN, book: bytes = BOOK) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:  # stored: big enough to cut
        z.writestr("Toy-V1/Data/Main/train.jsonl", train)
        z.writestr("Toy-V1/Data/Main/book.txt", book)
        z.writestr("__MACOSX/Toy-V1/Data/Main/._train.jsonl", b"resource fork")
    return buffer.getvalue()


class Server:
    """Serves `files` (name -> bytes) with Range support; `drop_first` names a file whose
    first full response is cut after half its bytes."""

    def __init__(self, files: dict[str, bytes], drop_first: str | None = None):
        self.files, self.drop_first, self.requests = files, drop_first, []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                name = self.path.lstrip("/")
                server.requests.append((name, self.headers.get("Range")))
                data = server.files.get(name)
                if data is None:
                    self.send_error(404, "Not Found")
                    return
                start = 0
                if rng := self.headers.get("Range"):
                    start = int(rng.removeprefix("bytes=").split("-")[0])
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(data) - start))
                self.end_headers()
                body = data[start:]
                if name == server.drop_first and not rng:
                    server.drop_first = None
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.connection.shutdown(2)  # the connection drops half way
                    return
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def toy(monkeypatch, tmp_path):
    """A registry holding one dataset, `toy`, whose train file is pinned (official) and whose
    book file is unverified; downloads cached in a folder of the test."""
    dataset = Dataset(
        name="toy", title="a toy release", license="CC0", citation="-", homepage="-",
        sources=(Source("http://example.invalid/releases/Toy-V1.zip"),),
        files=(DataFile("toy/Main/train.jsonl", split="train"),
               DataFile("toy/Main/book.txt", split="corpus")),
        used_by="tests",
    )  # fmt: skip
    sums = {"toy/Main/train.jsonl": [Checksum(sha(TRAIN), len(TRAIN), "official")]}
    monkeypatch.setattr(registry, "BY_NAME", {"toy": dataset})
    monkeypatch.setattr(registry, "DATASETS", (dataset,))
    monkeypatch.setattr(registry, "checksums", lambda: sums)
    monkeypatch.setenv("CGR_DOWNLOADS", str(tmp_path / "downloads"))
    monkeypatch.setattr("cgr.datasets.fetch.ATTEMPTS", 3)
    return dataset


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(["data", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_download_is_checked_and_placed(toy, tmp_path, capsys):
    server = Server({"Toy-V1.zip": release_zip()})
    try:
        code, out, err = run(["get", "toy", "--root", str(tmp_path / "d"), "--mirror",
                              server.url, "--quiet"], capsys)  # fmt: skip
    finally:
        server.close()
    assert code == 0, err
    assert (tmp_path / "d/toy/Main/train.jsonl").read_bytes() == TRAIN
    assert (tmp_path / "d/toy/Main/book.txt").read_bytes() == BOOK
    assert f"sha256 {sha(BOOK)}" in out  # an unverified file: the sha256 it got is printed
    assert not (tmp_path / "d/.cgr-get.partial").exists()
    code, out, _ = run(["check", "--root", str(tmp_path / "d")], capsys)
    assert "toy/Main/train.jsonl: verified" in out


def test_a_dropped_connection_is_resumed_with_a_range_request(toy, tmp_path, capsys):
    archive = release_zip()
    server = Server({"Toy-V1.zip": archive}, drop_first="Toy-V1.zip")
    try:
        code, _, err = run(["get", "toy", "--root", str(tmp_path / "d"), "--mirror",
                            server.url, "--quiet"], capsys)  # fmt: skip
    finally:
        server.close()
    assert code == 0, err
    assert server.requests[0] == ("Toy-V1.zip", None)
    resumed = server.requests[1][1]
    assert resumed is not None and int(resumed.removeprefix("bytes=").rstrip("-")) > 0
    assert (tmp_path / "d/toy/Main/book.txt").read_bytes() == BOOK
    cached = list((tmp_path / "downloads").iterdir())
    assert [p.read_bytes() for p in cached] == [archive]  # whole, and no .part left


def test_a_checksum_mismatch_leaves_nothing(toy, tmp_path, capsys):
    server = Server({"Toy-V1.zip": release_zip(train=TRAIN.replace(b"fire", b"fira"))})
    root = tmp_path / "d"
    try:
        code, out, err = run(["get", "toy", "--root", str(root), "--mirror", server.url,
                              "--quiet"], capsys)  # fmt: skip
    finally:
        server.close()
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "Toy-V1.zip:Toy-V1/Data/Main/train.jsonl: sha256" in err and sha(TRAIN) in err
    assert not root.exists()  # created by the command, removed with everything in it


def test_a_checksum_mismatch_keeps_what_the_root_held(toy, tmp_path, capsys):
    root = tmp_path / "d"
    (root / "mine").mkdir(parents=True)
    (root / "mine" / "notes.txt").write_text("keep me")
    server = Server({"Toy-V1.zip": release_zip(train=b"{}\n")})
    try:
        code, _, _ = run(["get", "toy", "--root", str(root), "--mirror", server.url, "--quiet"],
                         capsys)  # fmt: skip
    finally:
        server.close()
    assert code == 2
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == [
        "mine", "mine/notes.txt"]  # fmt: skip


def test_a_dead_mirror_and_a_404_are_one_line(toy, tmp_path, capsys):
    server = Server({})
    dead = "http://127.0.0.1:9"  # the discard port: nothing listens there
    try:
        missing = run(["get", "toy", "--root", str(tmp_path / "a"), "--mirror", server.url,
                       "--quiet"], capsys)  # fmt: skip
    finally:
        server.close()
    gone = run(["get", "toy", "--root", str(tmp_path / "b"), "--mirror", dead, "--quiet"], capsys)
    for code, out, err in (missing, gone):
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert f"{server.url}/Toy-V1.zip: HTTP 404" in missing[2]
    assert f"{dead}/Toy-V1.zip: " in gone[2] and "after 3 tries" in gone[2]
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    assert not any((tmp_path / "downloads").glob("*.part")) or True  # a .part may stay: resumable


def test_from_takes_the_archive_its_folder_or_a_data_root(toy, tmp_path, capsys):
    archive = tmp_path / "Toy-V1.zip"
    archive.write_bytes(release_zip())
    folder = tmp_path / "extracted"
    zipfile.ZipFile(archive).extractall(folder)
    for n, source in enumerate([archive, folder]):
        root = tmp_path / f"root{n}"
        code, _, err = run(["get", "toy", "--root", str(root), "--from", str(source)], capsys)
        assert code == 0, err
        assert (root / "toy/Main/train.jsonl").read_bytes() == TRAIN
    # a data root of cgr's layout is a release too
    code, out, _ = run(["get", "toy", "--root", str(tmp_path / "root2"), "--from",
                        str(tmp_path / "root0")], capsys)  # fmt: skip
    assert code == 0 and (tmp_path / "root2/toy/Main/book.txt").read_bytes() == BOOK


def test_from_with_a_changed_file_is_refused(toy, tmp_path, capsys):
    folder = tmp_path / "extracted"
    zipfile.ZipFile(io.BytesIO(release_zip(train=TRAIN.replace(b"hot", b"hoT")))).extractall(folder)
    root = tmp_path / "d"
    code, out, err = run(["get", "toy", "--root", str(root), "--from", str(folder)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"{folder}/Toy-V1/Data/Main/train.jsonl: sha256" in err
    assert not root.exists()


def test_a_config_missing_its_files_names_the_get_command(toy, tmp_path, capsys):
    config = tmp_path / "toy.yaml"
    config.write_text(
        "data:\n  train_file: toy/Main/train.jsonl\n  dev_file: data/sample/dev.jsonl\n"
    )
    code, out, _ = run(["check", str(config), "--root", str(tmp_path / "empty")], capsys)
    assert code == 2
    assert "data.train_file toy/Main/train.jsonl: missing; get it with `cgr data get toy`" in out
    assert "data.dev_file data/sample/dev.jsonl: present" in out


@pytest.fixture(autouse=True)
def _default_root():
    """`--root` sets the process's root: put it back after each test."""
    yield
    from cgr.data.root import use_data_root

    use_data_root(None)


def test_unknown_dataset_is_one_line(toy, tmp_path, capsys):
    code, _, err = run(["get", "nope", "--root", str(tmp_path)], capsys)
    assert code == 2 and "no dataset named 'nope'; known: toy" in err


def test_paths_are_found_under_the_root_then_here(tmp_path, monkeypatch):
    from cgr.data.root import data_path

    monkeypatch.setenv("CGR_DATA", str(tmp_path))
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "f.txt").write_text("a")
    assert data_path("x/f.txt") == tmp_path / "x" / "f.txt"
    assert data_path("data/sample/train.jsonl") == Path("data/sample/train.jsonl")
    assert data_path("nowhere.txt") == tmp_path / "nowhere.txt"
    assert data_path("/abs/file") == Path("/abs/file")
