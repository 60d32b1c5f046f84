"""Headless Chromium for the page tests (installed by scripts/setup_browser.sh)."""

import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = (
    shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
)


def run_chromium(
    target: Path | str, tmp_path: Path, budget_ms: int = 3000
) -> tuple[str, list[str]]:
    """The DOM after `budget_ms` of virtual time, and the console errors, of a file or URL."""
    if CHROMIUM is None:
        pytest.fail(
            "Chromium is not installed: scripts/test.sh installs it (scripts/setup_browser.sh)"
        )
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
             f"--virtual-time-budget={budget_ms}", "--dump-dom",
             target.as_uri() if isinstance(target, Path) else target]  # fmt: skip
    proc = subprocess.run([CHROMIUM, *flags], capture_output=True, text=True, timeout=120)
    console_errors = [line for line in proc.stderr.splitlines() if "CONSOLE" in line]
    return proc.stdout, console_errors
