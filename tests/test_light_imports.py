"""The commands that check a command line before any model loads must not import torch to do
it: importing torch and transformers takes 3-5 s here, and a refused setting should come back
in well under that (benchmarks/bad_inputs.py times every refusal)."""

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module", ["cgr.ircot.commands", "cgr.riches.commands", "cgr.longdoc.commands"]
)
def test_command_module_imports_no_torch(module):
    code = f"import sys, {module}; print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", f"{module} imports {out.stdout.strip()} at import time"


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["ircot", "--data", "x.jsonl", "--out", "o", "--loop.reader=cott"],
            "loop.reader must be one of",
        ),
        (["riches", "--data", "x.jsonl", "--out", "o", "--decode.beam_size=0"], "decode.beam_size"),
        (["longdoc", "--data", "x.json", "--out", "o", "--limit=-1"], "--limit must be"),
        (["ircot", "--data", "bad.json", "--out", "o"], "invalid JSON"),
        (["riches", "--data", "bad.json", "--out", "o"], "invalid JSON"),
    ],
)
def test_bad_setting_refused_before_torch(argv, message, tmp_path):
    """The refusal itself, in a fresh process, leaves torch unimported."""
    (tmp_path / "bad.json").write_text('[{"_id": "q1", "question": "Who', encoding="utf-8")
    code = (
        "import sys\nfrom cgr.cli import main\n"
        f"try:\n    code = main({argv!r})\nexcept SystemExit as e:\n    code = e.code\n"
        "print('TORCH', 'torch' in sys.modules, 'CODE', code)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert message in out.stderr + out.stdout
    assert "TORCH False CODE 2" in out.stdout, out.stdout + out.stderr[-2000:]
