"""The registry against our offline mirror of the public releases (../shared/data, the one place
the tests may read it): its checksums, `cgr data get --from` into a fresh root, the configs'
files checked there, and the derived files' producers against the mirror's copies."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cgr.cli import main
from cgr.data.registry import BY_NAME, DATASETS, checksums, dataset_of
from cgr.datasets.derived import PRODUCERS, worldtree_explanations
from tests.conftest import ROOT, SAMPLE

MIRROR = ROOT.parent / "shared" / "data"
needs_mirror = pytest.mark.skipif(not MIRROR.is_dir(), reason="no offline mirror on this machine")
SCIENCE = ("openbookqa", "arc", "worldtree", "entailmentbank")


@pytest.fixture(autouse=True)
def _default_root():
    yield
    from cgr.data.root import use_data_root

    use_data_root(None)


def test_every_checksum_names_a_registry_file_and_the_list_names_the_datasets(capsys):
    assert {p for p in checksums()} <= {f.path for d in DATASETS for f in d.files}
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    for name in ("openbookqa", "arc", "worldtree", "entailmentbank", "hotpotqa", "qasper"):
        assert f"\n{name}: " in out
    assert "license: " in out and "source: https://" in out


def test_shipped_configs_read_registry_files_or_files_of_the_repository():
    from cgr.config_files import load_configs
    from cgr.datasets.check import config_paths

    for config in sorted((ROOT / "configs").glob("*.yaml")):
        data = load_configs([config]).get("data") or {}
        for setting, value in config_paths(data):
            assert dataset_of(value) or (ROOT / value).exists(), (config.name, setting, value)


def test_no_shipped_file_names_the_mirror():
    """configs, scripts, the package, README and docs name no folder of our machines."""
    found = subprocess.run(["grep", "-rn", "--", "../shared", "configs", "scripts", "cgr",
                            "README.md", "docs"], cwd=ROOT, capture_output=True, text=True)  # fmt: skip
    assert found.stdout == ""


@needs_mirror
def test_pins_agree_with_the_mirror_where_it_holds_the_same_file():
    """Each checksum line of the registry equals the mirror's SHA256SUMS for the same path,
    except the one official checksum the mirror's README gives for a file it holds a variant
    of (crowdsourced-facts.txt)."""
    mirror = {}
    for line in (MIRROR / "SHA256SUMS").read_text().splitlines():
        sha, path = line.split()
        mirror[path.removeprefix("./")] = sha
    for path, sums in checksums().items():
        if path in mirror:
            assert mirror[path] in {c.sha256 for c in sums}, path
            for c in sums:
                if c.sha256 != mirror[path]:
                    assert (path, c.status) == ("openbookqa/Additional/crowdsourced-facts.txt",
                                                "official")  # fmt: skip


@needs_mirror
@pytest.mark.slow
def test_get_from_the_mirror_then_check_the_configs(tmp_path, capsys, monkeypatch):
    root = tmp_path / "d"
    assert main(["data", "get", *SCIENCE, "--from", str(MIRROR), "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert "crowdsourced-facts.txt: a known variant" in out
    from cgr.data.root import use_data_root

    use_data_root(None)
    monkeypatch.setenv("CGR_DATA", str(root))
    assert main(["data", "check", "configs/obqa.yaml", "configs/arc_challenge.yaml"]) == 0
    out = capsys.readouterr().out
    assert "openbookqa/Main/openbook.txt: verified" in out and "missing" not in out
    assert not (root / ".cgr-get.partial").exists()


@needs_mirror
def test_a_changed_byte_in_a_pinned_file_is_refused_and_nothing_is_written(tmp_path, capsys):
    source = tmp_path / "mirror"
    shutil.copytree(MIRROR / "openbookqa", source / "openbookqa")
    dev = source / "openbookqa/Main/dev.jsonl"
    data = bytearray(dev.read_bytes())
    data[100] ^= 1
    dev.write_bytes(bytes(data))
    root = tmp_path / "root"
    root.mkdir()
    assert main(["data", "get", "openbookqa", "--from", str(source), "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert f"{dev}: sha256 " in err and "a08f720be757a0f0" in err
    assert list(root.iterdir()) == []


def _inputs(base: Path):
    return lambda name: (base / name) if (base / name).is_file() else None


@needs_mirror
def test_worldtree_facts_producer_writes_the_mirrors_file():
    f = next(f for f in BY_NAME["worldtree"].files if f.derived == "worldtree_facts")
    out = PRODUCERS["worldtree_facts"](f, _inputs(MIRROR))
    assert (
        hashlib.sha256(out).hexdigest()
        == hashlib.sha256((MIRROR / f.path).read_bytes()).hexdigest()
    )


@needs_mirror
def test_arc_ir_sentences_producer_matches_the_mirror_on_the_splits_it_holds():
    """The mirror's corpus was built with the held-out ARC-Challenge test split too, so the
    producer run here (without it) can only write a subset; 99 % of its lines are the mirror's."""
    f = next(f for f in BY_NAME["arc"].files if f.derived == "arc_ir_sentences")
    ours = PRODUCERS["arc_ir_sentences"](f, _inputs(MIRROR)).decode().splitlines()
    reference = set((MIRROR / f.path).read_text(encoding="utf-8").splitlines())
    assert ours == sorted(set(ours)) and len(ours) > 40_000
    assert sum(s in reference for s in ours) / len(ours) > 0.99


def test_explanations_keep_ids_keys_and_explanations_not_question_texts(tmp_path):
    questions = tmp_path / "questions" / "questions.dev.tsv"
    questions.parent.mkdir()
    questions.write_text("\ufeffQuestionID\tquestion\tAnswerKey\tschoolGrade\ttopic\texplanation\t"
                         "arcset\nQ1\tWhat melts ice?\tA\t4\tMAT\tab12|CENTRAL\tEasy\n")  # fmt: skip
    f = next(f for f in BY_NAME["worldtree"].files if f.path.endswith("explanations.dev.tsv"))
    out = worldtree_explanations(f, _inputs(tmp_path)).decode()
    assert out == ("QuestionID\tAnswerKey\tarcset\tschoolGrade\ttopic\texplanation\n"
                   "Q1\tA\tEasy\t4\tMAT\tab12|CENTRAL\n")  # fmt: skip
    assert "melts" not in out


def test_arc_ir_split_keeps_one_sets_records_without_their_prefix(tmp_path):
    folder = tmp_path / "ARC-OBQA-RegLivEnv-IR10V2"
    folder.mkdir()
    (folder / "dev.jsonl").write_text(
        '{"id": "ARCCH_Mercury_1", "question": {"stem": "s", "choices": []}}\n'
        '{"id": "OBQA_7-1", "question": {"stem": "t", "choices": []}}\n'
        '{"id": "ARCEZ_MCAS_2", "question": {"stem": "u", "choices": []}}\n'
    )
    f = next(
        f for f in BY_NAME["arc"].files if f.path.endswith("arc_challenge_dev_with_ir_para.jsonl")
    )
    out = PRODUCERS["arc_ir_split"](f, _inputs(tmp_path)).decode().splitlines()
    assert [re.search(r'"id": "([^"]+)"', line).group(1) for line in out] == ["Mercury_1"]


@needs_mirror
def test_openbookqa_from_an_archive_of_the_official_layout_over_http(tmp_path, capsys, monkeypatch):
    """The publisher's archive layout (OpenBookQA-V1-Sep2018/Data/Main/...), served on 127.0.0.1
    as the mirror: each file is found by its tail and verified against the pins."""
    import io
    import zipfile

    from tests.datasets.test_get import Server

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for path in sorted((MIRROR / "openbookqa").rglob("*")):
            if path.is_file():
                name = path.relative_to(MIRROR / "openbookqa").as_posix()
                z.write(path, f"OpenBookQA-V1-Sep2018/Data/{name}")
        for name in ("Main/test.jsonl", "Additional/test_complete.jsonl"):  # held out: our own
            z.writestr(f"OpenBookQA-V1-Sep2018/Data/{name}", (SAMPLE / "dev.jsonl").read_text())
    monkeypatch.setenv("CGR_DOWNLOADS", str(tmp_path / "downloads"))
    server = Server({"OpenBookQA-V1-Sep2018.zip": buffer.getvalue()})
    try:
        code = main(["data", "get", "openbookqa", "--root", str(tmp_path / "d"), "--mirror",
                     server.url, "--quiet"])  # fmt: skip
    finally:
        server.close()
    out, err = capsys.readouterr()
    assert code == 0, err
    assert main(["data", "list", "--files", "--root", str(tmp_path / "d")]) == 0
    listing = capsys.readouterr().out
    assert "openbookqa/Main/dev.jsonl: verified" in listing
    assert "openbookqa/Additional/train_complete.jsonl: verified" in listing
    assert "openbookqa/Main/test.jsonl: present (unverified)" in listing
