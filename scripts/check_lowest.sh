#!/usr/bin/env bash
# The lowest versions pyproject.toml declares (requirements/lowest.txt, exactly) in a fresh venv,
# then the quickstart-sized checks: train one epoch on data/sample, export, eval --model and
# explain --model. Run before a release (docs/development.md); it downloads torch 2.11 from PyPI
# (a CUDA build: about 3 GB, once) and prints its time at the end.
#   scripts/check_lowest.sh            venv in ${CGR_LOWEST_VENV:-/tmp/cgr-lowest}
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${CGR_LOWEST_VENV:-/tmp/cgr-lowest}"
work="$(mktemp -d)"
start=$SECONDS
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py="$venv/bin/python"
"$py" -m pip install --quiet --disable-pip-version-check -c "$root/requirements/lowest.txt" "$root[cpu]"
"$py" - <<'PY'
from importlib.metadata import version
print("[lowest] installed:", ", ".join(f"{n} {version(n)}" for n in
      ["torch", "transformers", "sentence-transformers", "pytorch-lightning", "numpy"]))
PY
installed=$SECONDS
cd "$work"  # the installed cgr, not the checkout's sources; data and configs from the checkout
ln -s "$root/data" data
ln -s "$root/configs" configs
export HF_HUB_OFFLINE=1 WANDB_MODE=offline
"$venv/bin/cgr" train --config configs/default.yaml --name lowest --trainer.max_epochs=1 --export-model
"$venv/bin/cgr" eval --model checkpoints/lowest/model --data data/sample/dev.jsonl --out predictions.jsonl
"$venv/bin/cgr" explain --model checkpoints/lowest/model --question "Which energy source is renewable?" \
    --choices coal "a solar panel" oil --out-dir explain
echo "[lowest] passed: install $((installed - start)) s, checks $((SECONDS - installed)) s (venv $venv)"
