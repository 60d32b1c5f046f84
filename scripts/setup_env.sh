#!/usr/bin/env bash
# Creates (or reuses) the project's virtual environment in .venv and installs cgr into it.
# Idempotent: a stamp file records the hash of pyproject.toml, so a second run costs a second.
# Usage: scripts/setup_env.sh [dev]     CGR_FAISS=gpu scripts/setup_env.sh  (faiss-gpu instead of faiss-cpu)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${CGR_VENV:-$root/.venv}"
extras="${CGR_FAISS:-cpu}"
[ "${1:-}" = "dev" ] && extras="$extras,dev"
stamp="$venv/.cgr-installed"
want="$(cat "$root/pyproject.toml" "$0" | sha256sum | cut -c1-16) $extras"

if [ -f "$stamp" ] && grep -qxF "$want" "$stamp"; then
  exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "[setup] creating virtual environment in $venv" >&2
  python3 -m venv "$venv"
fi
py="$venv/bin/python"
echo "[setup] installing torch==2.13.0 (CPU wheel) and cgr[$extras]" >&2
"$py" -m pip install --quiet --disable-pip-version-check "torch==2.13.0"
"$py" -m pip install --quiet --disable-pip-version-check -e "$root[$extras]"
echo "$want" >> "$stamp"
echo "[setup] environment ready: $venv" >&2
