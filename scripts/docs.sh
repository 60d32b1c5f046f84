#!/usr/bin/env bash
# Build the documentation site (MkDocs Material, docs/) and serve it on http://127.0.0.1:8001/.
#   scripts/docs.sh            serve with live reload
#   scripts/docs.sh build      the static site in site/ (strict: a broken link fails)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/setup_env.sh dev
export NO_MKDOCS_2_WARNING=1
if [ "${1:-}" = "build" ]; then
  exec .venv/bin/mkdocs build --strict
fi
exec .venv/bin/mkdocs serve --dev-addr 127.0.0.1:8001
