"""`cgr data get` against a real HTTP server on 127.0.0.1 (http.server in a thread) serving
archives the tests build: a download that succeeds, one resumed after the server drops the
connection half way, a checksum that does not match, a dead mirror, a 404, and `--from` with a
changed file. Nothing reaches outside the machine; the registry is a small one of the tests."""

from __future__ import annotations

import hashlib
import http.server
import io
import zipfile
from pathlib import Path

import pytest

from cgr.cli import main
from cgr.data import registry
from cgr.data.registry import Checksum, DataFile, Dataset, Source
from tests.loopback import Loopback

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


class Server(Loopback):
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

        self.serve(Handler)


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


# --- hostile releases: members named outside the root, links, bombs, endless mirrors ---


def write_zip(path: Path, members: dict[str, bytes], compression=zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w", compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def test_members_named_outside_the_root_write_nothing_there(toy, tmp_path, capsys):
    """A member is only ever read, never extracted by its name: `../` and absolute members
    write nothing outside the data root (or anywhere); the release's own files arrive."""
    archive = write_zip(tmp_path / "evil.zip", {
        "../../escaped.txt": b"x", "/tmp/cgr-absolute-escape.txt": b"x",
        "Toy-V1/Data/Main/train.jsonl": TRAIN, "Toy-V1/Data/Main/book.txt": BOOK})  # fmt: skip
    root = tmp_path / "deep" / "root"
    code, out, err = run(["get", "toy", "--from", str(archive), "--root", str(root)], capsys)
    assert code == 0, err
    assert (root / "toy" / "Main" / "train.jsonl").read_bytes() == TRAIN
    assert not list(tmp_path.rglob("escaped.txt"))
    assert not Path("/tmp/cgr-absolute-escape.txt").exists()


def test_link_members_of_a_tar_are_not_files(toy, tmp_path, capsys):
    """A symbolic or hard link member named like a release file is not read through: the
    file counts as missing, and nothing it points to arrives in the root."""
    import tarfile

    archive = tmp_path / "links.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, data in {"Toy-V1/Data/Main/train.jsonl": TRAIN}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("Toy-V1/Data/Main/book.txt")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
        hard = tarfile.TarInfo("Toy-V1/Data/Other/book.txt")
        hard.type, hard.linkname = tarfile.LNKTYPE, "Toy-V1/Data/Main/train.jsonl"
        tar.addfile(hard)
    root = tmp_path / "root"
    code, out, err = run(["get", "toy", "--from", str(archive), "--root", str(root)], capsys)
    assert code == 0, err
    assert not (root / "toy" / "Main" / "book.txt").exists()
    assert "not in --from (1): toy/Main/book.txt" in out


def test_a_decompression_bomb_is_cut_at_the_size_the_registry_knows(toy, tmp_path, capsys,
                                                                     monkeypatch):  # fmt: skip
    """A pinned file's member inflating past the file's known size, and an unverified one past
    MAX_FILE, stop in one line; nothing is placed."""
    bomb = b"\0" * (8 << 20)  # 8 MiB of zeros, a few KB deflated
    archive = write_zip(tmp_path / "bomb.zip", {"Toy-V1/Data/Main/train.jsonl": bomb,
                                                "Toy-V1/Data/Main/book.txt": BOOK},
                        zipfile.ZIP_DEFLATED)  # fmt: skip
    assert archive.stat().st_size < 100_000
    root = tmp_path / "root"
    code, out, err = run(["get", "toy", "--from", str(archive), "--root", str(root)], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert f"more than {len(TRAIN):,} bytes for toy/Main/train.jsonl" in lines[0]
    assert not root.exists()
    monkeypatch.setattr(registry, "MAX_FILE", 1 << 20)
    archive = write_zip(tmp_path / "bomb2.zip", {"Toy-V1/Data/Main/train.jsonl": TRAIN,
                                                 "Toy-V1/Data/Main/book.txt": bomb},
                        zipfile.ZIP_DEFLATED)  # fmt: skip
    code, out, err = run(["get", "toy", "--from", str(archive), "--root", str(root)], capsys)
    assert code == 2 and "more than 1,048,576 bytes for toy/Main/book.txt" in err
    assert not root.exists()


class EndlessServer(Loopback):
    """Sends bytes forever (no Content-Length), or announces a length it never sends."""

    def __init__(self, announce: int | None = None):
        server = self
        self.announce = announce

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self.send_response(200)
                if server.announce is not None:
                    self.send_header("Content-Length", str(server.announce))
                self.end_headers()
                try:
                    while True:
                        self.wfile.write(b"\0" * 65536)
                except (BrokenPipeError, ConnectionResetError):
                    return

        self.serve(Handler)


@pytest.mark.parametrize("announce", [None, 10 << 30])
def test_a_mirror_that_sends_forever_is_cut_at_the_releases_size(toy, tmp_path, capsys,
                                                                 monkeypatch, announce):  # fmt: skip
    """The registry's note says how large the release is ("about 1 KB"): a mirror sending
    past 1.5x that and 16 MiB, or announcing more, is cut off in one line; no .part is kept."""
    import dataclasses

    small = dataclasses.replace(toy, sources=(Source(toy.sources[0].url, "about 1 KB"),))
    monkeypatch.setattr(registry, "BY_NAME", {"toy": small})
    monkeypatch.setattr(registry, "DATASETS", (small,))
    server = EndlessServer(announce)
    try:
        code, out, err = run(["get", "toy", "--mirror", server.url, "--root",
                              str(tmp_path / "root")], capsys)  # fmt: skip
    finally:
        server.close()
    lines = [x for x in err.strip().splitlines() if x.startswith("error")]
    assert code == 2 and len(lines) == 1, err
    assert ("announces 10,737,418,240 bytes" if announce else "sent more than") in lines[0]
    assert not list((tmp_path / "downloads").glob("*.part")) and not (tmp_path / "root").exists()
