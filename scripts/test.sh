#!/usr/bin/env bash
# Install the dev dependencies into .venv and Chromium for the browser test (both idempotent),
# then run the test suite.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/setup_env.sh dev
scripts/setup_browser.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 WANDB_MODE=offline
exec "${CGR_VENV:-$root/.venv}/bin/python" -m pytest "$@"
