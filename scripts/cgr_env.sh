# Sourced by train.sh and eval.sh: which cgr to run.
# An active virtualenv or conda env in which cgr imports is used as it is (nothing is installed:
# a researcher's own environment, with their CUDA torch, stays theirs). Otherwise CGR_VENV, or
# the repository's .venv, set up by scripts/setup_env.sh (idempotent; `gpu` for a CUDA torch).
cgr_command() {
  local env="${VIRTUAL_ENV:-${CONDA_PREFIX:-}}"
  # -I: the working folder is not on sys.path, so a checkout's cgr/ folder alone does not count
  if [ -z "${CGR_VENV:-}" ] && [ -n "$env" ] && [ -x "$env/bin/python" ] \
      && "$env/bin/python" -I -c "import cgr.cli, torch" 2>/dev/null; then
    echo "[cgr] using the active environment $env (nothing installed)" >&2
    CGR=("$env/bin/python" -m cgr.cli)
  else
    "$root/scripts/setup_env.sh"
    CGR=("${CGR_VENV:-$root/.venv}/bin/cgr")
  fi
}
