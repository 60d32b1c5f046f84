"""Every option of every `cgr` sub-command says what it does in `--help` (a type and a default
alone is no description)."""

import re
import subprocess
import sys

import pytest

from cgr.cli import COMMANDS
from tests.conftest import ROOT

OPTION = re.compile(r"^  (-[-\w.]+)(?:[ ,][^ ].*?)?(?:\s{2,}(.*))?$")


def bare_options(text: str) -> list[str]:
    lines, bare = text.splitlines(), []
    for i, line in enumerate(lines):
        match = OPTION.match(line)
        if not match or not line.startswith("  -"):
            continue
        description = match.group(2) or ""
        if not description and i + 1 < len(lines) and lines[i + 1].startswith(" " * 10):
            description = lines[i + 1].strip()
        if not description or description.startswith(("(type:", "(required, type")):
            bare.append(match.group(1))
    return bare


@pytest.mark.parametrize("command", sorted(set(COMMANDS) - {"train"}))  # train: LightningCLI's own
def test_every_option_is_described(command):
    done = subprocess.run([sys.executable, "-m", "cgr.cli", command, "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-500:]
    assert bare_options(done.stdout) == []


def test_the_check_sees_a_bare_option():
    assert bare_options("options:\n  --limit LIMIT         (type: int, default: 0)\n") == [
        "--limit"
    ]
