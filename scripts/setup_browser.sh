#!/usr/bin/env bash
# Installs Debian's Chromium (headless) for the chain-report test (tests/chains/test_export.py),
# if it is missing. Idempotent; called by scripts/test.sh. Needs root or sudo for apt-get.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "[setup] installing Debian's chromium for the browser test" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
