"""The README and the docs site cannot drift from the code: the site builds strictly and renders,
every `cgr` subcommand a command block names answers `--help`, the quickstart's last line is the
format `cgr train` prints, and no work-period or issue labels remain."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.chromium import run_chromium
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()
DOCS = sorted((ROOT / "docs").glob("*.md"))


def command_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def test_readme_is_short_and_names_no_work_periods_or_issues():
    assert len(README.splitlines()) <= 250
    for path in [ROOT / "README.md", *DOCS]:
        labels = re.findall(r"(?i)ses{2}ion [0-9]|issue [0-9]", path.read_text())
        assert not labels, (path.name, labels)


def test_every_subcommand_in_a_command_block_answers_help(capsys):
    from cgr.cli import COMMANDS, main

    named = set()
    for text in [README, *(p.read_text() for p in DOCS)]:
        for block in command_blocks(text):
            named |= set(re.findall(r"\bcgr (\w+)", block)) & set(COMMANDS)
    assert {"train", "eval", "explain", "serve", "encode", "ircot", "riches", "longdoc"} <= named
    for command in sorted(named):
        with pytest.raises(SystemExit) as done:
            main([command, "--help"])
        assert done.value.code == 0, command
        assert "usage" in capsys.readouterr().out.lower(), command


def test_quickstart_last_line_is_what_cgr_train_prints(tmp_path):
    from cgr.evaluation.predict import EvalResult
    from cgr.pretrained.export import ExportReport

    quoted = re.search(r"ends with:\n\n```\n(.*?)\n```", README, flags=re.S).group(1).splitlines()
    printed = EvalResult(0.807, tmp_path / "p.jsonl", {"A": 1.0}).report()[-1]
    exported = ExportReport(Path("checkpoints/default/model"), 183_000_000, 274_000_000).lines()
    assert [re.sub(r"\d", "0", x) for x in (quoted[0], quoted[1], quoted[-1])] == [
        re.sub(r"\d", "0", x) for x in (*exported, printed)
    ]


def test_readme_scripts_exist():
    for block in command_blocks(README):
        for script in re.findall(r"\b(scripts/[\w.]+\.sh)", block):
            assert (ROOT / script).is_file(), script
        for config in re.findall(r"\b(configs/[\w./]+\.yaml)", block):
            assert (ROOT / config).is_file(), config


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:
        pytest.fail("mkdocs is not installed: scripts/setup_env.sh dev installs it")
    out = tmp_path_factory.mktemp("site")
    subprocess.run([mkdocs, "build", "--strict", "--quiet", "-d", str(out)], cwd=ROOT,
                   check=True, env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"})  # fmt: skip
    return out


@pytest.fixture(scope="module")
def served(site):
    """The site over HTTP, as `scripts/docs.sh` serves it (search does not run from file://)."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):  # noqa: ARG002 - keep the test output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=site))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_site_renders_navigation_and_a_benchmark_table(served, tmp_path):
    index, errors = run_chromium(f"{served}/", tmp_path)
    assert not errors, errors
    for page in ("Getting started", "Reasoning chains", "API reference", "Benchmarks"):
        assert page in index, page
    benchmarks, errors = run_chromium(f"{served}/benchmarks/", tmp_path)
    assert not errors, errors
    assert benchmarks.count("<table") >= 5
    assert "Training speed" in benchmarks


def test_benchmark_tables_are_what_the_saved_results_give():
    """docs/benchmarks.md's generated tables equal what the benchmark scripts print from
    benchmarks/results (`benchmarks/report.py --check`), and a hand edit of one is caught."""
    done = subprocess.run([sys.executable, "benchmarks/report.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    sys.path.insert(0, str(ROOT))
    from benchmarks.report import BLOCK, rendered

    page = (ROOT / "docs" / "benchmarks.md").read_text()
    assert len(BLOCK.findall(page)) >= 3
    cell = re.search(r"\| default \| [0-9.]+ \|", page).group(0)  # a generated row's cell
    edited = page.replace(cell, "| default | 99.99 |", 1)
    assert edited != page and rendered(edited, {}) == page


def test_pages_speak_to_users_not_of_our_machines():
    """No lab-notebook notes of how our cores were shared, and no "not available offline": a
    page says what the default uses and the switch for the paper's model."""
    for path in [ROOT / "README.md", *DOCS]:
        found = re.findall(r"(?i)cores (partly )?shared|niced|busy machine|package mirror|available offline",
                           path.read_text())  # fmt: skip
        assert not found, (path.name, found)
